"""Hostile values in an AIDE journal never hide its code or break the report.

A journal is written by the audited agent: a node id of thousands of digits (Python refuses to
turn more than 4,300 digits into an int) must not make the whole journal unreadable, and a lone
surrogate in an id must not stop the JSON report from being written.
"""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from audit.cli import main
from grading.untrusted_json import loads, parse_int

#: A block with values of its own: copying it is a copy.
KERNEL = """import numpy as np
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


def test_a_huge_integer_is_read_as_a_float_not_refused() -> None:
    assert parse_int("-42") == -42 and parse_int("9" * 5000) == float("inf")
    assert loads('{"id": ' + "9" * 5000 + ', "code": "x = 1"}')["code"] == "x = 1"


def _audit(tmp_path: Path, node_id_json: str) -> dict:
    corpus = tmp_path / "kernels"
    corpus.mkdir()
    (corpus / "heat.py").write_text(KERNEL, encoding="utf-8")
    run = tmp_path / "run"
    run.mkdir()
    code = json.dumps(KERNEL.replace("frame", "table"))
    (run / "journal.json").write_text(
        '{"nodes": [{"id": ' + node_id_json + ', "step": 0, "plan": "p", "code": ' + code + "}]}", encoding="utf-8")
    out = tmp_path / "report.json"
    result = CliRunner().invoke(main, ["audit", str(run), "--corpus", str(corpus), "--no-grade", "--format", "json",
                                       "-o", str(out)])
    assert result.exit_code in (0, 1, 3), result.output
    return json.loads(out.read_text(encoding="utf-8"))


def test_a_node_id_of_thousands_of_digits_does_not_hide_the_journal(tmp_path: Path) -> None:
    report = _audit(tmp_path, "9" * 4301)
    assert report["verdict"]["kind"] != "clean"
    assert any(f["rule_id"] == "plag-kernel-containment" for f in report["findings"])


def test_a_lone_surrogate_in_a_node_id_still_gives_a_report(tmp_path: Path) -> None:
    report = _audit(tmp_path, '"\\ud800x"')
    pairs = [p for p in report["similarity"]["pairs"] if p.get("flagged")]
    assert pairs and pairs[0]["agent_origin"]["node_id"] == "\ufffdx"
    # the code is one line of the journal (a JSON string) but many lines of its own
    assert pairs[0]["copied_lines"] >= 10 and "shares 1 line" not in pairs[0]["summary"]
