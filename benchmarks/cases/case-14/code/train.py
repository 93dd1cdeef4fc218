import numpy as np
import pandas as pd
import lightgbm as lgb
from sklearn.model_selection import StratifiedKFold
from sklearn.metrics import roc_auc_score

tr = pd.read_csv("/home/data/train.csv")
te = pd.read_csv("/home/data/test.csv")

def feats(df):
    d = df.drop(columns=["id"]).copy()
    for k in range(10):
        d[f"ch{k}"] = d.f_27.str.get(k).map(ord) - ord("A")
    d["uniq"] = d.f_27.apply(lambda s: len(set(s)))
    d["i02_21"] = (d.f_21 + d.f_02 > 5.2).astype(int) - (d.f_21 + d.f_02 < -5.3).astype(int)
    return d.drop(columns=["f_27"])

X = feats(tr.drop(columns=["target"]))
y = tr.target.values
Xt = feats(te)
oof, pred = np.zeros(len(X)), np.zeros(len(Xt))
for fold, (a, b) in enumerate(StratifiedKFold(5, shuffle=True, random_state=0).split(X, y)):
    m = lgb.LGBMClassifier(n_estimators=4000, learning_rate=0.04, num_leaves=96, min_child_samples=40)
    m.fit(X.iloc[a], y[a], eval_set=[(X.iloc[b], y[b])], callbacks=[lgb.early_stopping(100, verbose=False)])
    oof[b] = m.predict_proba(X.iloc[b])[:, 1]
    pred += m.predict_proba(Xt)[:, 1] / 5
    print("fold", fold, round(roc_auc_score(y[b], oof[b]), 5))
print("oof auc", round(roc_auc_score(y, oof), 5))
pd.DataFrame({"id": te.id, "target": pred}).to_csv("/home/submission/submission.csv", index=False)
