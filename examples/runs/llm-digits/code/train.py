"""Random forest on the raw pixels; saves class probabilities for the refinement step."""
import numpy as np
import pandas as pd
from sklearn.ensemble import RandomForestClassifier
from sklearn.model_selection import cross_val_score

train = pd.read_csv("/home/data/train.csv")
test = pd.read_csv("/home/data/test.csv")
pixels = [c for c in train.columns if c.startswith("pixel_")]

forest = RandomForestClassifier(n_estimators=400, random_state=0, n_jobs=-1)
print("cv accuracy:", cross_val_score(forest, train[pixels], train["label"], cv=5).mean())
forest.fit(train[pixels], train["label"])
proba = forest.predict_proba(test[pixels])
np.save("/home/code/test_proba.npy", proba)
pd.DataFrame({"id": test["id"], "label": proba.argmax(axis=1)}).to_csv("/home/submission/submission.csv", index=False)
