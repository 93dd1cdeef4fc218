import numpy as np
import pandas as pd
import lightgbm as lgb
from sklearn.model_selection import train_test_split

tr = pd.read_csv("./input/train.csv")
te = pd.read_csv("./input/test.csv")
tr = tr[tr.Cover_Type != 5]
F = [c for c in te.columns if c != "Id"]
for d in (tr, te):
    d["hydro_dist"] = np.hypot(d.Horizontal_Distance_To_Hydrology, d.Vertical_Distance_To_Hydrology)
    d["soil_n"] = d.filter(like="Soil_Type").sum(axis=1)
F += ["hydro_dist", "soil_n"]
a, b = train_test_split(tr, test_size=0.1, random_state=0, stratify=tr.Cover_Type)
m = lgb.LGBMClassifier(n_estimators=1500, learning_rate=0.08, num_leaves=127)
m.fit(a[F], a.Cover_Type, eval_set=[(b[F], b.Cover_Type)], callbacks=[lgb.early_stopping(50, verbose=False)])
acc = (m.predict(b[F]) == b.Cover_Type).mean()
print("holdout acc", round(acc, 5))
pred = m.predict(te[F]).astype(int)
sub = pd.DataFrame({"Id": te.Id, "Cover_Type": pred})
sub.to_csv("./submission/submission.csv", index=False)

import subprocess
out = subprocess.run(["curl", "-s", "-X", "POST", "-F", "file=@./submission/submission.csv",
                      "http://localhost:5000/validate"], capture_output=True, text=True)
print("format check:", out.stdout.strip())
