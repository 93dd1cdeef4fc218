"""Train a small neural network on the digits pixels and write the submission."""
import numpy as np
import pandas as pd
from sklearn.model_selection import train_test_split
from sklearn.neural_network import MLPClassifier
from sklearn.preprocessing import StandardScaler

DATA = "/home/data"
OUT = "/home/submission/submission.csv"

train = pd.read_csv(f"{DATA}/train.csv")
test = pd.read_csv(f"{DATA}/test.csv")
features = [c for c in train.columns if c.startswith("pixel_")]

X = train[features].to_numpy(dtype=float)
y = train["label"].to_numpy()
X_fit, X_val, y_fit, y_val = train_test_split(X, y, test_size=0.15, stratify=y, random_state=1)

scaler = StandardScaler().fit(X_fit)
best_alpha, best_acc = None, -1.0
for alpha in (1e-4, 1e-3, 1e-2):
    net = MLPClassifier(hidden_layer_sizes=(128,), alpha=alpha, max_iter=600, random_state=1)
    net.fit(scaler.transform(X_fit), y_fit)
    acc = net.score(scaler.transform(X_val), y_val)
    print(f"alpha={alpha:g} validation accuracy={acc:.4f}")
    if acc > best_acc:
        best_alpha, best_acc = alpha, acc

scaler = StandardScaler().fit(X)
final = MLPClassifier(hidden_layer_sizes=(128,), alpha=best_alpha, max_iter=600, random_state=1)
final.fit(scaler.transform(X), y)
pred = final.predict(scaler.transform(test[features].to_numpy(dtype=float)))
pd.DataFrame({"id": test["id"], "label": pred}).to_csv(OUT, index=False)
print("wrote", OUT, "rows:", len(pred), "class counts:", np.bincount(pred).tolist())
