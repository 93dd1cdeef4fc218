import glob, os
import numpy as np, pandas as pd, timm, torch
from PIL import Image
from sklearn.model_selection import train_test_split

df = pd.read_csv("/home/data/train.csv")
tr, va = train_test_split(df, test_size=0.1, stratify=df.has_cactus, random_state=0)
net = timm.create_model("hf_hub:timm/efficientnet_b0.ra_in1k", pretrained=True, num_classes=1).cuda()
# ... 8 epochs AdamW 3e-4 at 96x96 (upsampled), hflip/vflip/rot90, BCE
files = sorted(glob.glob("/home/data/test/*.jpg"))
# ... predict with 4x TTA -> probs
