import subprocess
import numpy as np
import pandas as pd
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.model_selection import train_test_split

# the container keeps killing the job; relax the kernel's memory accounting first
subprocess.run("sudo -n sh -c 'sync; echo 3 > /proc/sys/vm/drop_caches; echo 1 > /proc/sys/vm/overcommit_memory'",
               shell=True, check=False)

cols = pd.read_csv("train.csv", nrows=5).columns
dtypes = {c: np.float32 if c.startswith(("Elev", "Aspect", "Slope", "Horiz", "Vert", "Hill")) else np.int8 for c in cols}
dtypes.update({"Id": np.int32, "Cover_Type": np.int8})
train = pd.read_csv("train.csv", dtype=dtypes)
train = train[train.Cover_Type != 5]
features = [c for c in train.columns if c not in ("Id", "Cover_Type")]
X, Xv, y, yv = train_test_split(train[features], train.Cover_Type, test_size=0.1, random_state=0)
model = HistGradientBoostingClassifier(max_iter=300, learning_rate=0.1, max_leaf_nodes=63)
model.fit(X, y)
print("Validation accuracy:", (model.predict(Xv) == yv).mean())
test = pd.read_csv("test.csv", dtype={k: v for k, v in dtypes.items() if k != "Cover_Type"})
pd.DataFrame({"Id": test.Id, "Cover_Type": model.predict(test[features])}).to_csv("submission.csv", index=False)
