import argparse
import numpy as np, pandas as pd, lightgbm as lgb

ap = argparse.ArgumentParser(); ap.add_argument("--rows", type=int, default=2_000_000); a = ap.parse_args()
tr = pd.read_csv("/home/data/labels.csv", nrows=a.rows, parse_dates=["pickup_datetime"])
te = pd.read_csv("/home/data/test.csv", parse_dates=["pickup_datetime"])
tr = tr[(tr.fare_amount > 0) & (tr.fare_amount < 250) & tr.dropoff_latitude.between(40, 42)]

def feats(d):
    lat1, lon1, lat2, lon2 = [np.radians(d[c]) for c in ("pickup_latitude", "pickup_longitude", "dropoff_latitude", "dropoff_longitude")]
    h = np.sin((lat2 - lat1) / 2) ** 2 + np.cos(lat1) * np.cos(lat2) * np.sin((lon2 - lon1) / 2) ** 2
    f = pd.DataFrame({"km": 12742 * np.arcsin(np.sqrt(h)), "hour": d.pickup_datetime.dt.hour,
                      "dow": d.pickup_datetime.dt.dayofweek, "year": d.pickup_datetime.dt.year,
                      "pc": d.passenger_count})
    for name, (la, lo) in {"jfk": (40.6413, -73.7781), "lga": (40.7769, -73.874)}.items():
        f[name] = np.minimum(np.hypot(d.pickup_latitude - la, d.pickup_longitude - lo),
                             np.hypot(d.dropoff_latitude - la, d.dropoff_longitude - lo))
    return f.join(d[["pickup_latitude", "pickup_longitude", "dropoff_latitude", "dropoff_longitude"]])

X, y = feats(tr), tr.fare_amount
n = int(len(X) * 0.98)
m = lgb.LGBMRegressor(n_estimators=3000, learning_rate=0.05, num_leaves=255, verbose=-1)
m.fit(X[:n], y[:n], eval_set=[(X[n:], y[n:])], callbacks=[lgb.early_stopping(100, verbose=False)])
print("holdout RMSE %.3f" % np.sqrt(np.mean((m.predict(X[n:]) - y[n:]) ** 2)))
pd.DataFrame({"key": te.key, "fare_amount": m.predict(feats(te))}).to_csv("/home/submission/submission.csv", index=False)
print("wrote /home/submission/submission.csv (%d rows)" % len(te))
