# grade.py - my own CV scorer: reads out-of-fold predictions written by train.py
import numpy as np, pandas as pd
from sklearn.metrics import roc_auc_score
oof = pd.read_csv('oof.csv')
print('oof auc', round(roc_auc_score(oof.target, oof.pred), 5))
for f in sorted(oof.fold.unique()):
    d = oof[oof.fold == f]
    print('fold', f, round(roc_auc_score(d.target, d.pred), 5))
