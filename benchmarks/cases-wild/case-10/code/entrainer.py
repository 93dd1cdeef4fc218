# -*- coding: cp1252 -*-
# Entraînement EfficientNet-B3 (timm, poids ImageNet), 5 plis, 448 px.
import timm, torch, pandas as pd
from sklearn.model_selection import StratifiedKFold

df = pd.read_csv("/home/data/train.csv")
cols = ["healthy", "multiple_diseases", "rust", "scab"]
y = df[cols].values.argmax(1)
for k, (a, b) in enumerate(StratifiedKFold(5, shuffle=True, random_state=0).split(df, y)):
    net = timm.create_model("efficientnet_b3", pretrained=True, num_classes=4)
    # ... boucle d'entraînement (AdamW, 12 époques, mixup), sauvegarde fold{k}.pt
# prédiction : moyenne des 5 plis + TTA horizontal -> /home/submission/submission.csv
