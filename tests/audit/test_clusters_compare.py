"""The batch's run — run comparison: only the pairs an edge can use are reported, and the files are
compared in groups in worker processes; the edges, and the flagged pairs in their order, are those
of one comparison of every file with every other."""

from __future__ import annotations

from dataclasses import replace

import pytest

from .test_batch_clusters import _SOLUTION

#: Pieces of solutions the generated runs are made of (each run copies some, renamed or not).
_PIECES = [
    _SOLUTION,
    """import pandas as pd
from sklearn.model_selection import train_test_split
from sklearn.ensemble import RandomForestClassifier
from sklearn.metrics import roc_auc_score

train = pd.read_csv("./input/train.csv")
X, y = train.drop(columns=["target"]), train["target"]
X_train, X_valid, y_train, y_valid = train_test_split(X, y, test_size=0.2, random_state=42)
model = RandomForestClassifier(n_estimators=300, random_state=42)
model.fit(X_train, y_train)
print(roc_auc_score(y_valid, model.predict_proba(X_valid)[:, 1]))
""",
    """def smooth_counts(values, alpha=3.5, floor=0.0625):
    total = sum(values) + alpha * len(values)
    shares = [(v + alpha) / total for v in values]
    return [max(s, floor) for s in shares]

def rebalance(frame, column, target_share=0.41):
    counts = frame[column].value_counts().sort_index().tolist()
    shares = smooth_counts(counts)
    return {k: target_share / s for k, s in zip(sorted(frame[column].unique()), shares)}
""",
    "import os\nprint(os.listdir('./input'))\n",
    "print('hello')\n",
]


def _generated_runs(seed: int) -> list:
    import random

    from mleaudit.audit.clusters import RunCode
    from mleaudit.audit.model import Span
    from mleaudit.audit.units import CodeUnit

    rng = random.Random(seed)
    runs = []
    for r in range(6):
        texts = []
        for piece in rng.sample(_PIECES, rng.randint(1, 4)):
            if rng.random() < 0.7:  # renamed: a copy, not the same text
                piece = piece.replace("train", rng.choice(["data", "frame", "table", "rows", "train"]))
            if rng.random() < 0.5:  # another text, the same tokens
                piece += f"# run {r}\n"
            texts.append(piece)
        units, offset = [], 0
        for n, text in enumerate(texts):  # a journal's nodes share its path
            span = Span(path="journal.json", start_byte=offset, end_byte=offset + len(text), start_line=n * 20 + 1,
                        start_col=1, end_line=n * 20 + text.count("\n"), end_col=1)
            units.append(CodeUnit(path="journal.json", language="python", text=text, source="log", origin=span))
            offset += len(text) + 10
        if rng.random() < 0.5:
            units.append(CodeUnit(path="code/solution.py", language="python", text=rng.choice(texts)))
        runs.append(RunCode(run_id=f"run-{r}", units=tuple(units)))
    return runs


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_run_pairs_are_those_of_one_uncapped_comparison(seed, monkeypatch):
    from mleaudit.audit import clusters
    from mleaudit.audit.similarity import SimilarityOptions, compare

    runs = _generated_runs(seed)
    capped = clusters._run_pairs(runs, 0.63)
    assert clusters._run_pairs(runs, 0.63, jobs=2) == capped  # groups of files in worker processes
    reports = []

    def uncapped(score_threshold):  # the options before the caps: every visible pair reported
        return SimilarityOptions(score_threshold=score_threshold, display_threshold=1.0)

    def one_call(units, starter, options, owner, jobs):  # every pair measured, each run's own too
        report = compare(units, units, options, boilerplate=starter)
        reports.append(report)
        return [pair for pair in report.pairs if pair.flagged]

    monkeypatch.setattr(clusters, "_comparison_options", uncapped)
    monkeypatch.setattr(clusters, "_compared", one_call)
    assert clusters._run_pairs(runs, 0.63) == capped
    assert capped[0] and any(pair.flagged for pair in reports[0].pairs)


def _compared_units(runs):
    from mleaudit.audit import clusters

    starter = clusters._starter(runs)
    owned = clusters._distinct_python(runs, {unit.text for unit in starter})
    return [replace(unit, path=f"{run_id}/{unit.path}") for run_id, unit in owned], starter


@pytest.mark.parametrize("seed", range(3, 9))
def test_files_compared_in_groups_give_the_best_pairs_of_one_call_in_its_order(seed):
    from mleaudit.audit import clusters
    from mleaudit.audit.similarity import compare

    units, starter = _compared_units(_generated_runs(seed))
    owner = {unit.path: unit.path.split("/")[0] for unit in units}
    options = clusters._comparison_options(0.63)
    assert len(clusters._groups(units)) > 1
    one = clusters._compared(units, starter, options, owner, 1)
    assert one and clusters._compared(units, starter, options, owner, 2) == one
    assert clusters._compared(units, starter, options, owner, 3) == one
    assert one == sorted(one, key=lambda pair: pair.sort_key())
    # each pair of runs with a flagged pair between them gets its best ones, and nothing else
    every = [pair for pair in compare(units, units, options, boilerplate=starter).pairs
             if pair.flagged and owner[pair.agent_path] != owner[pair.reference_path]]
    best: dict = {}
    for pair in every:
        runs = frozenset((owner[pair.agent_path], owner[pair.reference_path]))
        best[runs] = max(best.get(runs, 0.0), pair.score)
    found: dict = {}
    for pair in one:
        runs = frozenset((owner[pair.agent_path], owner[pair.reference_path]))
        assert pair.flagged and len(runs) == 2 and pair.score == best[runs]
        found[runs] = pair.score
    assert found == best


def test_pairs_of_one_owner_are_not_measured():
    from mleaudit.audit import clusters
    from mleaudit.audit.similarity import compare

    units, starter = _compared_units(_generated_runs(4))
    owner = {unit.path: unit.path.split("/")[0] for unit in units}
    options = replace(clusters._comparison_options(0.63),
                      max_pairs=None, max_pairs_per_agent=None, display_threshold=0.0)
    every = compare(units, units, options, boilerplate=starter).pairs
    apart = compare(units, units, options, boilerplate=starter, owners=owner).pairs
    assert any(owner[p.agent_path] == owner[p.reference_path] for p in every)
    assert list(apart) == [p for p in every if owner[p.agent_path] != owner[p.reference_path]]


def test_groups_keep_each_file_and_each_text_together():
    from mleaudit.audit import clusters

    for seed in range(20):
        units, _ = _compared_units(_generated_runs(seed))
        groups = clusters._groups(units)
        assert sorted(i for group in groups for i in group) == list(range(len(units)))
        assert all(group == sorted(group) for group in groups)
        where = {i: n for n, group in enumerate(groups) for i in group}
        for key in ("path", "text"):
            first: dict[str, int] = {}
            for i, unit in enumerate(units):
                assert where[first.setdefault(getattr(unit, key), i)] == where[i]


_EDGE_ORDER = """
import json
from mleaudit.audit.clusters import copy_clusters
runs = ["run035-gemini-pro__spaceship-titanic__0", "run036-gemini-pro__spaceship-titanic__1",
        "run037-gemini-pro__spaceship-titanic__2", "run080-gemini-pro__spaceship-titanic__0",
        "run081-gemini-pro__spaceship-titanic__1", "run082-gemini-pro__spaceship-titanic__2", "a", "zz"]
reports = {run: {"similarity": {"pairs": [{"flagged": True, "reference_path": path, "agent_path": "x.py", "score": 0.9}
                                          for path in ("nb.ipynb", f"nb{i % 3}.ipynb")]}} for i, run in enumerate(runs)}
print(json.dumps(copy_clusters(reports, score_threshold=0.5)))
"""


def test_the_edges_of_a_cluster_come_in_one_order_whatever_the_string_hashing():
    import os
    import subprocess
    import sys

    outputs = {subprocess.run([sys.executable, "-c", _EDGE_ORDER], capture_output=True, text=True, check=True,
                              env={**os.environ, "PYTHONHASHSEED": str(seed)}).stdout for seed in range(8)}
    assert len(outputs) == 1
    import json

    (cluster,) = json.loads(outputs.pop())["clusters"]
    assert [(e["left"], e["right"]) for e in cluster["edges"]] == sorted((e["left"], e["right"]) for e in cluster["edges"])
