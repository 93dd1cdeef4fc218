import numpy as np
import pandas as pd
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import cross_val_predict
from sklearn.metrics import log_loss

from textkit import AUTHORS, style_votes

train = pd.read_csv("/home/data/train.csv")
test = pd.read_csv("/home/data/test.csv")

vec = TfidfVectorizer(ngram_range=(1, 2), min_df=2, sublinear_tf=True)
X = vec.fit_transform(train.text)
Xt = vec.transform(test.text)
y = train.author.map({a: i for i, a in enumerate(AUTHORS)}).values

clf = LogisticRegression(C=4.0, max_iter=2000)
oof = cross_val_predict(clf, X, y, cv=5, method="predict_proba")
print("tfidf-lr cv logloss", round(log_loss(y, oof), 4))
clf.fit(X, y)
base = clf.predict_proba(Xt)

votes = np.array([[v[a] for a in AUTHORS] for v in map(style_votes, test.text)])
print("style_votes: scored", len(votes), "sentences")
blend = 0.65 * base + 0.35 * votes
blend /= blend.sum(axis=1, keepdims=True)

sub = pd.DataFrame(blend, columns=list(AUTHORS))
sub.insert(0, "id", test.id)
sub.to_csv("/home/submission/submission.csv", index=False)
print(sub.head())
