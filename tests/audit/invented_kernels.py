"""Invented public-notebook code for copy-detection tests (blocks with values of their own, so copying one
is a copy; never taken from a real notebook), and an audit of a run against a corpus of them."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from mleaudit.audit.cli import main

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

#: A feature block on invented visit counts and tenure.
HEAT_KERNEL = """import numpy as np
import pandas as pd

def harmonic_tenure(frame, pivot=13.75):
    span = frame["tenure_days"].clip(lower=1)
    return (frame["visits"] + 0.5) / np.log1p(span / pivot)

train = pd.read_csv("./input/train.csv")
train["heat"] = harmonic_tenure(train)
bins = [0, 3, 11, 29, 61, 999]
train["heat_band"] = pd.cut(train["heat"], bins=bins, labels=["ice", "cold", "mild", "warm", "hot"])
weights = {"ice": 0.125, "cold": 0.375, "mild": 1.0, "warm": 2.75, "hot": 7.5}
train["weight"] = train["heat_band"].map(weights).astype(float) * np.sqrt(train["visits"] + 17.0)
"""


def audit_against(tmp_path: Path, kernels: dict[str, str], files: dict[str, str], *, index: bool = False) -> dict:
    """The JSON report of ``mleaudit audit`` on a run of ``files`` (path -> text) against a corpus of
    ``kernels`` (file name -> code), without grading; with ``index``, through a corpus index built
    from those kernels (``--index``) instead of the folder (``--corpus``)."""
    corpus = tmp_path / "kernels"
    corpus.mkdir()
    for name, text in kernels.items():
        (corpus / name).write_text(text, encoding="utf-8")
    run = tmp_path / "run"
    for name, text in files.items():
        (run / name).parent.mkdir(parents=True, exist_ok=True)
        (run / name).write_text(text, encoding="utf-8")
    out = tmp_path / "report.json"
    source = ["--corpus", str(corpus)]
    if index:
        from mleaudit.audit.similarity.index import build_corpus_index

        build_corpus_index([corpus], tmp_path / "kernels.index")
        source = ["--index", str(tmp_path / "kernels.index")]
    result = CliRunner().invoke(main, ["audit", str(run), *source, "--no-grade", "--format", "json", "-o", str(out)])
    assert result.exit_code in (0, 1, 3), result.output
    return json.loads(out.read_text(encoding="utf-8"))
