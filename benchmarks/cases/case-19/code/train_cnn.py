import os
import numpy as np
import pandas as pd
import timm
import torch
import torch.nn as nn
from PIL import Image
from torch.utils.data import DataLoader, Dataset
from torchvision import models, transforms

DATA = "/home/data"
dev = "cuda" if torch.cuda.is_available() else "cpu"
labels = pd.read_csv(f"{DATA}/train.csv")
test_ids = sorted(os.listdir(f"{DATA}/test"))
tf = transforms.Compose([transforms.Resize(64), transforms.ToTensor(),
                         transforms.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])])

class Tiles(Dataset):
    def __init__(self, folder, ids, y=None):
        self.folder, self.ids, self.y = folder, ids, y
    def __len__(self):
        return len(self.ids)
    def __getitem__(self, i):
        img = tf(Image.open(os.path.join(self.folder, self.ids[i])).convert("RGB"))
        return img, (self.y[i] if self.y is not None else 0.0)

def backbone(kind):
    if kind == "resnet":
        net = models.resnet18(weights=models.ResNet18_Weights.IMAGENET1K_V1)
        net.fc = nn.Linear(net.fc.in_features, 1)
    else:
        net = timm.create_model("efficientnet_b0", pretrained=True, num_classes=1)
    return net.to(dev)

def fit(kind, epochs=4):
    net = backbone(kind)
    opt = torch.optim.AdamW(net.parameters(), lr=3e-4)
    dl = DataLoader(Tiles(f"{DATA}/train", list(labels.id), labels.has_cactus.values.astype("float32")),
                    batch_size=128, shuffle=True, num_workers=4)
    for ep in range(epochs):
        net.train()
        for xb, yb in dl:
            opt.zero_grad()
            loss = nn.functional.binary_cross_entropy_with_logits(net(xb.to(dev)).squeeze(1), yb.to(dev))
            loss.backward()
            opt.step()
        print(kind, "epoch", ep, "loss", round(loss.item(), 4))
    net.eval()
    out = []
    with torch.no_grad():
        for xb, _ in DataLoader(Tiles(f"{DATA}/test", test_ids), batch_size=256):
            out.append(torch.sigmoid(net(xb.to(dev)).squeeze(1)).cpu().numpy())
    return np.concatenate(out)

p = (fit("resnet") + fit("effnet")) / 2
pd.DataFrame({"id": test_ids, "has_cactus": p}).to_csv("/home/submission/submission.csv", index=False)
