import pandas as pd, numpy as np, lightgbm as lgb
tr = pd.read_csv('/home/data/labels.csv', nrows=4_000_000, parse_dates=['pickup_datetime'])
te = pd.read_csv('/home/data/test.csv', parse_dates=['pickup_datetime'])
tr = tr[(tr.fare_amount.between(2.5, 250)) & tr.pickup_latitude.between(40.5, 41.0) & tr.dropoff_latitude.between(40.5, 41.0)]
def fe(d):
    o = pd.DataFrame(index=d.index)
    o['dlat'] = (d.dropoff_latitude - d.pickup_latitude).abs(); o['dlon'] = (d.dropoff_longitude - d.pickup_longitude).abs()
    o['dist'] = np.hypot(o.dlat * 111, o.dlon * 85); o['hour'] = d.pickup_datetime.dt.hour
    o['dow'] = d.pickup_datetime.dt.dayofweek; o['year'] = d.pickup_datetime.dt.year; o['pax'] = d.passenger_count
    for n, (la, lo) in {'jfk': (40.6413, -73.7781), 'lga': (40.7769, -73.874)}.items():
        o[n] = np.hypot((d.dropoff_latitude - la) * 111, (d.dropoff_longitude - lo) * 85)
    return o
m = lgb.LGBMRegressor(n_estimators=2500, learning_rate=0.05, num_leaves=255).fit(fe(tr), tr.fare_amount)
pd.DataFrame({'key': te.key, 'fare_amount': m.predict(fe(te)).clip(2.5)}).to_csv('/home/submission/submission.csv', index=False)
print('rows', len(te))
