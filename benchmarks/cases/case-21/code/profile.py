import json
import pandas as pd

train = pd.DataFrame(json.load(open("/home/data/train.json")))
test = pd.DataFrame(json.load(open("/home/data/test.json")))
shared = [c for c in test.columns if c in train.columns]
for col in shared:
    if train[col].dtype == object and train[col].nunique() < len(train) // 2:
        rate = train.groupby(train[col].ne("N/A")).requester_received_pizza.mean()
        print(col, rate.round(3).to_dict())
