import argparse
import numpy as np, pandas as pd, xgboost as xgb
from sklearn.model_selection import StratifiedKFold
from sklearn.metrics import roc_auc_score

ap = argparse.ArgumentParser(); ap.add_argument("--seed", type=int, default=0); s = ap.parse_args().seed
tr = pd.read_csv("/home/data/train.csv"); te = pd.read_csv("/home/data/test.csv")
drop = ["id", "EC1", "EC2", "EC3", "EC4", "EC5", "EC6"]
F = [c for c in tr.columns if c not in drop]
out = pd.DataFrame({"id": te.id}); aucs = []
for t in ["EC1", "EC2"]:
    oof = np.zeros(len(tr)); pr = np.zeros(len(te))
    for a, b in StratifiedKFold(5, shuffle=True, random_state=s).split(tr, tr[t]):
        m = xgb.XGBClassifier(n_estimators=600, learning_rate=0.02, max_depth=4, subsample=0.8, colsample_bytree=0.6, n_jobs=8)
        m.fit(tr.loc[a, F], tr.loc[a, t])
        oof[b] = m.predict_proba(tr.loc[b, F])[:, 1]; pr += m.predict_proba(te[F])[:, 1] / 5
    aucs.append(roc_auc_score(tr[t], oof)); print(t, "auc %.4f" % aucs[-1]); out[t] = pr
print("mean %.4f" % np.mean(aucs))
out.to_csv("/home/submission/submission.csv", index=False); print("wrote /home/submission/submission.csv")
