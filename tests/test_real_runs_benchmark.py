"""Smoke test of ``benchmarks/real_runs.py`` on two of the repository's own labelled cases.

The benchmark's figures depend on the rules and are printed by the benchmark, not asserted here:
these tests check that the cases load, that the audit runs on them, and how results are counted.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
CASES = REPO_ROOT / "benchmarks" / "cases"


@pytest.fixture(scope="module")
def bench():
    path = REPO_ROOT / "benchmarks" / "real_runs.py"
    spec = importlib.util.spec_from_file_location("real_runs_benchmark", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is built
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        sys.modules.pop(spec.name, None)


def _pick(bench, violating: bool):
    specs = bench.labelled_runs(CASES, "cases")
    return next(s for s in specs if s.violating is violating)


def test_labels_cover_every_case_folder(bench):
    specs = bench.labelled_runs(CASES, "cases")
    folders = sorted(p.name for p in CASES.iterdir() if p.is_dir())
    assert sorted(s.paths[0].name for s in specs) == folders
    assert {s.violating for s in specs} == {True, False}
    for s in specs:
        assert s.competition
        assert bool(s.categories) is s.violating  # "none" for clean cases, a category for violating ones
        assert s.group == "labelled:cases"


def test_audit_one_violating_and_one_clean_case(bench):
    results = [bench.audit_spec(_pick(bench, True)), bench.audit_spec(_pick(bench, False))]
    for r in results:
        assert r.error is None, r.error
        assert r.verdict in bench.VERDICT_ORDER
        assert r.seconds > 0
        assert r.all_findings >= len(r.findings)
        for row in r.findings:
            assert {"rule_id", "category", "severity", "actor", "path", "line"} <= set(row)
            assert bench._at_or_above(row["severity"])
    scores = bench.score_labelled(results)
    assert scores["tp"] + scores["fn"] == 1
    assert scores["fp"] + scores["tn"] == 1
    assert scores["cases"] == 2


def test_scoring_and_check(bench):
    RunResult = bench.RunResult
    hit = {"rule_id": "r", "category": "llm-api", "severity": "high", "actor": "agent", "path": "a.py", "line": 3}
    results = [
        RunResult(name="s/a", group="labelled:s", seconds=0.1, verdict="flagged", findings=[hit],
                  violating=True, categories=("llm-api", "sandbox-tamper")),
        RunResult(name="s/b", group="labelled:s", seconds=0.1, verdict="clean", violating=True,
                  categories=("label-leak",)),
        RunResult(name="s/c", group="labelled:s", seconds=0.1, verdict="clean", violating=False),
        RunResult(name="real/x", group="real:aide", seconds=0.1, verdict="review", findings=[hit]),
    ]
    summary = bench.summarise(results)
    s = summary["labelled"]["s"]
    assert (s["tp"], s["fp"], s["fn"], s["tn"]) == (1, 0, 1, 1)
    assert s["precision"] == 1.0 and s["recall"] == 0.5
    assert s["per_category"]["llm-api"]["caught"] == 1
    assert s["per_category"]["sandbox-tamper"]["missed"] == ["s/a"]
    assert summary["real"]["flagged"] == ["real/x"]
    failures = bench.check_failures(summary)
    assert any("recall" in f for f in failures) and any("real runs" in f for f in failures)


def test_main_writes_json_and_exits_zero_without_check(bench, tmp_path, capsys):
    name = _pick(bench, False).name
    out = tmp_path / "bench.json"
    # an empty --shared: the real runs and the shared violation set are skipped with a message
    code = bench.main(["--shared", str(tmp_path / "absent"), "--only", name, "--json", str(out)])
    assert code == 0
    captured = capsys.readouterr()
    assert "absent, skipped" in captured.err
    assert "labelled set cases: 1 cases" in captured.out
    payload = json.loads(out.read_text())
    assert [r["name"] for r in payload["runs"]] == [name]
    assert set(payload["summary"]) == {"labelled", "real"}
