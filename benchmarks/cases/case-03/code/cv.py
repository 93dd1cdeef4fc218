import pandas as pd, numpy as np
from sklearn.model_selection import KFold
from sklearn.metrics import roc_auc_score
from catboost import CatBoostClassifier
tr = pd.read_csv('/home/data/train.csv'); te = pd.read_csv('/home/data/test.csv')
T = ['EC1', 'EC2']; F = [c for c in te.columns if c != 'id']
pred = pd.DataFrame({'id': te.id})
for t in T:
    oof, p = np.zeros(len(tr)), np.zeros(len(te))
    for a, b in KFold(5, shuffle=True, random_state=11).split(tr):
        m = CatBoostClassifier(iterations=700, depth=5, verbose=0, thread_count=4).fit(tr.loc[a, F], tr.loc[a, t])
        oof[b] = m.predict_proba(tr.loc[b, F])[:, 1]; p += m.predict_proba(te[F])[:, 1] / 5
    print(t, 'cv auc', round(roc_auc_score(tr[t], oof), 5), flush=True)
    pred[t] = p
pred.to_csv('/home/submission/submission.csv', index=False)
