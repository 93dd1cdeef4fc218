import pandas as pd, numpy as np, lightgbm as lgb
tr = pd.read_csv('/home/data/train.csv'); te = pd.read_csv('/home/data/test.csv')
tr = tr[tr.Cover_Type != 5]
def fe(d):
    # feature set taken from the pulled notebook (tps-dec-21-lgbm-feature-eng)
    d = d.copy()
    d['Aspect'] = d.Aspect % 360
    d['Hillshade_3pm'] = d.Hillshade_3pm.clip(0, 255)
    d['Euclid_Hydro'] = np.hypot(d.Horizontal_Distance_To_Hydrology, d.Vertical_Distance_To_Hydrology)
    d['Manhattan_Fire_Road'] = (d.Horizontal_Distance_To_Fire_Points.abs() + d.Horizontal_Distance_To_Roadways.abs())
    d['Soil_Count'] = d.filter(like='Soil_Type').sum(1); d['Wild_Count'] = d.filter(like='Wilderness').sum(1)
    return d.drop(columns=['Id', 'Soil_Type7', 'Soil_Type15'] + (['Cover_Type'] if 'Cover_Type' in d else []))
m = lgb.LGBMClassifier(n_estimators=2200, learning_rate=0.06, num_leaves=160, colsample_bytree=0.6).fit(fe(tr), tr.Cover_Type)
pd.DataFrame({'Id': te.Id, 'Cover_Type': m.predict(fe(te))}).to_csv('/home/submission/submission.csv', index=False)
print('done')
