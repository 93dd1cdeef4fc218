import numpy as np
import pandas as pd
from catboost import CatBoostClassifier
from sklearn.model_selection import cross_val_score

tr = pd.read_csv("/home/data/train.csv")
te = pd.read_csv("/home/data/test.csv")
SP = ["RoomService", "FoodCourt", "ShoppingMall", "Spa", "VRDeck"]

def prep(df):
    d = df.copy()
    d[["Deck", "CabNum", "Side"]] = d.Cabin.str.split("/", expand=True)
    d["CabNum"] = pd.to_numeric(d.CabNum, errors="coerce")
    d[SP] = d[SP].fillna(0)
    d["Spend"] = np.log1p(d[SP].sum(axis=1))
    d["Group"] = d.PassengerId.str[:4].astype(int)
    for c in ["HomePlanet", "Destination", "Deck", "Side", "CryoSleep", "VIP"]:
        d[c] = d[c].astype(str)
    return d.drop(columns=["PassengerId", "Name", "Cabin"] + (["Transported"] if "Transported" in d else []))

X, y = prep(tr), tr.Transported.astype(int)
cats = ["HomePlanet", "Destination", "Deck", "Side", "CryoSleep", "VIP"]
model = CatBoostClassifier(iterations=900, depth=6, learning_rate=0.05, verbose=0, cat_features=cats)
print("cv acc", cross_val_score(model, X, y, cv=5).mean().round(4))
model.fit(X, y)
pred = model.predict(prep(te)).astype(bool)
pd.DataFrame({"PassengerId": te.PassengerId, "Transported": pred}).to_csv("/home/submission/submission.csv", index=False)
