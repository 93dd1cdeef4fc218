import os, torch, torch.nn as nn, pandas as pd
from torchvision import models, transforms, datasets
from torch.utils.data import DataLoader
dev = 'cuda'
tf = transforms.Compose([transforms.Resize((224, 224)), transforms.ToTensor(),
                         transforms.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])])
net = models.convnext_tiny(weights=models.ConvNeXt_Tiny_Weights.IMAGENET1K_V1)
net.classifier[2] = nn.Linear(net.classifier[2].in_features, 1); net = net.to(dev)
dl = DataLoader(datasets.ImageFolder('/home/code/split/train', tf), batch_size=64, shuffle=True, num_workers=8)
opt = torch.optim.AdamW(net.parameters(), lr=1e-4)
for ep in range(12):
    for x, y in dl:
        opt.zero_grad(); loss = nn.functional.binary_cross_entropy_with_logits(net(x.to(dev)).squeeze(1), y.float().to(dev)); loss.backward(); opt.step()
    print('epoch', ep, round(loss.item(), 4), flush=True)
torch.save(net.state_dict(), '/home/code/convnext.pt')
