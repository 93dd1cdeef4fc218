"""Invented public-notebook code for copy-detection tests: blocks with values of their own, so copying one
is a copy (never taken from a real notebook)."""

#: A feature block on invented columns (dwell minutes, lamps) with its own constants and labels.
LANTERN_KERNEL = """import numpy as np
import pandas as pd

def lantern_index(frame, pivot=21.5):
    span = frame["dwell_minutes"].clip(lower=2)
    return (frame["lamps"] + 0.25) / np.log1p(span / pivot)

train = pd.read_csv("./input/train.csv")
train["glow"] = lantern_index(train)
edges = [0, 4, 9, 33, 70, 999]
train["glow_band"] = pd.cut(train["glow"], bins=edges, labels=["ember", "dim", "warm", "bright", "flare"])
boost = {"ember": 0.2, "dim": 0.45, "warm": 1.0, "bright": 2.5, "flare": 6.25}
train["boost"] = train["glow_band"].map(boost).astype(float) * np.sqrt(train["lamps"] + 11.0)
"""
