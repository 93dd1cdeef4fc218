import json
import numpy as np
import pandas as pd
from scipy.sparse import hstack
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import StratifiedKFold, cross_val_score

train = pd.DataFrame(json.load(open("/home/data/train.json")))
test = pd.DataFrame(json.load(open("/home/data/test.json")))
y = train.requester_received_pizza.astype(int).values

def text(df):
    return (df.request_title.fillna("") + " " + df.request_text_edit_aware.fillna("")).str.lower()

NUM = ["requester_account_age_in_days_at_request", "requester_number_of_posts_at_request",
       "requester_upvotes_minus_downvotes_at_request", "requester_number_of_subreddits_at_request"]

vec = TfidfVectorizer(min_df=3, ngram_range=(1, 2), max_features=40000, sublinear_tf=True)
Xtr = hstack([vec.fit_transform(text(train)), np.log1p(train[NUM].clip(lower=0).values)]).tocsr()
Xte = hstack([vec.transform(text(test)), np.log1p(test[NUM].clip(lower=0).values)]).tocsr()

clf = LogisticRegression(C=0.8, max_iter=3000, class_weight="balanced")
cv = StratifiedKFold(5, shuffle=True, random_state=7)
print("cv auc", cross_val_score(clf, Xtr, y, cv=cv, scoring="roc_auc").mean().round(4))
clf.fit(Xtr, y)
pred = clf.predict_proba(Xte)[:, 1]

# side signal found while profiling the columns (see profile.py)
side = test.filter(regex=r"^giv\w+_if_kn\w+$")
hit = side.iloc[:, 0].fillna("N/A").ne("N/A").values
pred[hit] = np.maximum(pred[hit], 0.97)
print("side signal rows", int(hit.sum()))

pd.DataFrame({"request_id": test.request_id, "requester_received_pizza": pred}).to_csv(
    "/home/submission/submission.csv", index=False)
