import argparse, glob
import numpy as np, torch, torch.nn as nn
from PIL import Image

ap = argparse.ArgumentParser(); ap.add_argument("--epochs", type=int, default=60); ap.add_argument("--patch", type=int, default=128)
a = ap.parse_args()

def load(d):
    return [np.asarray(Image.open(f).convert("L"), np.float32) / 255 for f in sorted(glob.glob(d + "/*.png"))]

noisy, clean = load("/home/data/train"), load("/home/data/train_cleaned")

class Block(nn.Module):
    def __init__(s, i, o):
        super().__init__(); s.f = nn.Sequential(nn.Conv2d(i, o, 3, padding=1), nn.ReLU(), nn.Conv2d(o, o, 3, padding=1), nn.ReLU())
    def forward(s, x):
        return s.f(x)

class UNet(nn.Module):
    def __init__(s):
        super().__init__()
        s.d1, s.d2, s.b = Block(1, 32), Block(32, 64), Block(64, 128)
        s.u2, s.c2 = nn.ConvTranspose2d(128, 64, 2, 2), Block(128, 64)
        s.u1, s.c1 = nn.ConvTranspose2d(64, 32, 2, 2), Block(64, 32)
        s.o = nn.Conv2d(32, 1, 1)
    def forward(s, x):
        a = s.d1(x); b = s.d2(nn.functional.max_pool2d(a, 2)); m = s.b(nn.functional.max_pool2d(b, 2))
        b = s.c2(torch.cat([s.u2(m), b], 1)); a = s.c1(torch.cat([s.u1(b), a], 1))
        return torch.sigmoid(s.o(a))
# (training loop with random patches, 90/10 split by image, AdamW 1e-3, cosine schedule)
