import argparse, os
import torch, torchvision as tv
from torch.utils.data import DataLoader

ap = argparse.ArgumentParser()
ap.add_argument("--epochs", type=int, default=10); ap.add_argument("--img", type=int, default=224)
ap.add_argument("--workers", type=int, default=4)
a = ap.parse_args()
root = r"C:\work\seedlings\data\train"
tf = tv.transforms.Compose([tv.transforms.Resize((a.img, a.img)), tv.transforms.RandomHorizontalFlip(), tv.transforms.ToTensor()])
ds = tv.datasets.ImageFolder(root, tf)
n = int(0.85 * len(ds)); tr, va = torch.utils.data.random_split(ds, [n, len(ds) - n])
loader = DataLoader(tr, 32, shuffle=True, num_workers=a.workers)
net = tv.models.resnet18(weights="IMAGENET1K_V1"); net.fc = torch.nn.Linear(512, len(ds.classes))
# ... training loop, saves best.pt and writes submission from net predictions
