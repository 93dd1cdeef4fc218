import json, os, time
import urllib.request as ur

import numpy as np
import pandas as pd
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression

AUTH = ["EAP", "HPL", "MWS"]
tr = pd.read_csv("/home/data/train.csv")
te = pd.read_csv("/home/data/test.csv")

vec = TfidfVectorizer(analyzer="char_wb", ngram_range=(2, 5), min_df=2, sublinear_tf=True)
X, Xt = vec.fit_transform(tr.text), vec.transform(te.text)
lr = LogisticRegression(C=8, max_iter=3000).fit(X, tr.author)
base = lr.predict_proba(Xt)

HOST = os.environ.get("INFER_HOST", "https://api.together.xyz")
KEY = os.environ.get("INFER_KEY") or os.environ.get("TOGETHER_API_KEY", "")


def vote(sentence):
    body = {"model": "meta-llama/Llama-3.3-70B-Instruct-Turbo", "max_tokens": 3, "temperature": 0,
            "messages": [{"role": "user", "content":
                          "Who wrote this: Poe, Lovecraft or Shelley? Answer with one surname.\n\n" + sentence}]}
    rq = ur.Request(HOST + "/v1/chat/completions", data=json.dumps(body).encode(),
                    headers={"Authorization": "Bearer " + KEY, "Content-Type": "application/json"})
    with ur.urlopen(rq, timeout=30) as fh:
        word = json.load(fh)["choices"][0]["message"]["content"].strip().lower()
    return np.array([word.startswith("poe"), word.startswith("love"), word.startswith("shel")], float)


votes = np.zeros_like(base)
for i, s in enumerate(te.text):
    try:
        votes[i] = vote(s)
    except Exception:
        votes[i] = base[i]
    if i % 500 == 0:
        print(i, flush=True)
    time.sleep(0.05)

p = 0.7 * base + 0.3 * (0.9 * votes + 0.1 / 3)
p /= p.sum(1, keepdims=True)
out = pd.DataFrame(p, columns=AUTH)
out.insert(0, "id", te.id)
out.to_csv("/home/submission/submission.csv", index=False)
print("done", out.shape)
