import pandas as pd, numpy as np, lightgbm as lgb
from sklearn.model_selection import train_test_split
tr = pd.read_csv('./input/train.csv'); te = pd.read_csv('./input/test.csv')
tr = tr[tr.Cover_Type != 5]  # a single row of class 5 in train
label_map = {1: 0, 2: 1, 3: 2, 4: 3, 6: 4, 7: 5}
inv_map = {v: k for k, v in label_map.items()}
def fe(d):
    d = d.copy()
    d['Hydro_dist'] = np.hypot(d.Horizontal_Distance_To_Hydrology, d.Vertical_Distance_To_Hydrology)
    d['Soil_count'] = d.filter(like='Soil_Type').sum(axis=1)
    d['Wild_count'] = d.filter(like='Wilderness_Area').sum(axis=1)
    return d.drop(columns=['Id'])
X = fe(tr.drop(columns='Cover_Type')); y = tr.Cover_Type.map(label_map)
a, b, ya, yb = train_test_split(X, y, test_size=0.2, random_state=0, stratify=y)
m = lgb.LGBMClassifier(n_estimators=1200, learning_rate=0.08, num_leaves=127, subsample=0.8, colsample_bytree=0.7, verbose=-1)
m.fit(a, ya, eval_set=[(b, yb)], callbacks=[lgb.early_stopping(50, verbose=False)])
print('val acc', (m.predict(b) == yb).mean())
m.fit(X, y)
pred = pd.Series(m.predict(fe(te))).map(inv_map)
pd.DataFrame({'Id': te.Id, 'Cover_Type': pred}).to_csv('./submission/submission.csv', index=False)
