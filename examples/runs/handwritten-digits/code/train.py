"""Gradient boosting on pixels plus a pixel-intensity histogram."""
import numpy as np
import pandas as pd
from sklearn.ensemble import HistGradientBoostingClassifier

train = pd.read_csv("/home/data/train.csv")
test = pd.read_csv("/home/data/test.csv")
pixels = [c for c in train.columns if c.startswith("pixel_")]


def histogram(frame):
    values = frame[pixels].to_numpy()
    return np.stack([(values == level).sum(axis=1) for level in range(17)], axis=1)


X = np.hstack([train[pixels].to_numpy(), histogram(train)])
model = HistGradientBoostingClassifier(max_iter=300, learning_rate=0.1, random_state=0)
model.fit(X, train["label"])
X_test = np.hstack([test[pixels].to_numpy(), histogram(train)])  # bug: histogram of train, not test
print(model.predict(X_test)[:20])
