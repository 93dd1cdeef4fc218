"""Digits solution: engineered shape features and tree ensembles."""
import os

import numpy as np
import pandas as pd
from sklearn.ensemble import ExtraTreesClassifier, RandomForestClassifier
from sklearn.model_selection import cross_val_score

INPUT_DIR = "/home/data"
SUBMISSION_PATH = "/home/submission/submission.csv"
os.makedirs(os.path.dirname(SUBMISSION_PATH), exist_ok=True)

train_df = pd.read_csv(os.path.join(INPUT_DIR, "train.csv"))
test_df = pd.read_csv(os.path.join(INPUT_DIR, "test.csv"))
pixel_features = train_df.drop(columns=['id', 'label']).columns


def engineer(data):
    imgs = data[pixel_features].to_numpy().reshape(-1, 8, 8)
    result = data.copy()
    for j in range(8):
        result[f'row_{j}'] = imgs[:, j, :].sum(axis=1)
        result[f'col_{j}'] = imgs[:, :, j].sum(axis=1)
    result['ink'] = imgs.sum(axis=(1, 2))
    result['symmetry'] = np.abs(imgs - imgs[:, :, ::-1]).sum(axis=(1, 2))
    return result


train_feats = engineer(train_df)
test_feats = engineer(test_df)
cols = [c for c in train_feats.columns if c not in ('id', 'label')]

candidates = {
    'random_forest': RandomForestClassifier(n_estimators=500, random_state=0, n_jobs=-1),
    'extra_trees': ExtraTreesClassifier(n_estimators=800, max_features=0.3, random_state=0, n_jobs=-1),
}
cv_means = {}
for key, clf in candidates.items():
    folds = cross_val_score(clf, train_feats[cols], train_feats['label'], cv=5, scoring='accuracy')
    cv_means[key] = folds.mean()
    print(f'{key}: {folds.mean():.4f} +/- {folds.std():.4f}')

chosen = max(cv_means, key=cv_means.get)
model = candidates[chosen].fit(train_feats[cols], train_feats['label'])
ranking = pd.Series(model.feature_importances_, index=cols).sort_values(ascending=False)
print(ranking.head(15))

pd.DataFrame({'id': test_df['id'], 'label': model.predict(test_feats[cols])}).to_csv(SUBMISSION_PATH, index=False)
print("saved", SUBMISSION_PATH)
