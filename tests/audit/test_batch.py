"""Batch audits: run discovery from run groups and submission JSONL, the summary's figures, the command."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from audit.batch import BatchEntry, BatchResult, BatchSourceError, competition_from_run_name, discover_runs
from audit.batch_summary import pass_at_k, seed_aggregate, summarize_batch
from audit.cli import main

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "runs"
UUID = "0a1b2c3d-aaaa-bbbb-cccc-dddddddddddd"


def _run_group(tmp_path: Path, examples: list[str]) -> Path:
    group = tmp_path / "2026-01-01T00-00-00-GMT_run-group_example"
    group.mkdir()
    run_ids = []
    for i, example in enumerate(examples):
        run_id = f"sklearn-digits_{i:08x}-aaaa-bbbb-cccc-dddddddddddd"
        shutil.copytree(EXAMPLES / example, group / run_id)
        run_ids.append(run_id)
    (group / "metadata.json").write_text(json.dumps({"run_group": group.name, "runs": {r: {"success": True} for r in run_ids}}))
    return group


def test_competition_id_comes_from_the_run_folder_name():
    assert competition_from_run_name(f"spaceship-titanic_{UUID}") == "spaceship-titanic"
    assert competition_from_run_name("spaceship-titanic_bfa0c73d") == "spaceship-titanic"
    assert competition_from_run_name("my_run") is None
    assert competition_from_run_name(f"_{UUID}") is None


def test_run_group_order_follows_metadata(tmp_path):
    group = tmp_path / "group"
    group.mkdir()
    names = [f"b-comp_{UUID}", f"a-comp_{UUID[:-1]}e"]
    (group / "metadata.json").write_text(json.dumps({"run_group": "g", "runs": {n: {} for n in names}}))
    entries = discover_runs(group)
    assert [e.run_id for e in entries] == names
    assert [e.competition_id for e in entries] == ["b-comp", "a-comp"]
    assert entries[0].listed_at.endswith("metadata.json runs[0]")


def test_folder_without_metadata_lists_run_like_subfolders(tmp_path):
    (tmp_path / "r2" / "logs").mkdir(parents=True)
    (tmp_path / "r1" / "code").mkdir(parents=True)
    (tmp_path / "notes").mkdir()
    assert [e.run_id for e in discover_runs(tmp_path)] == ["r1", "r2"]
    with pytest.raises(BatchSourceError, match="no metadata.json and no run folders"):
        discover_runs(tmp_path / "notes")


def test_submission_jsonl_finds_each_run_folder(tmp_path):
    for name in ("x_1", "y_2"):
        (tmp_path / "runs" / name / "submission").mkdir(parents=True)
        (tmp_path / "runs" / name / "logs").mkdir()
    lines = [
        {"competition_id": "comp-a", "submission_path": "runs/x_1/submission/submission.csv",
         "logs_path": "runs/x_1/logs/agent.log", "code_path": None},
        {"competition_id": "comp-b", "submission_path": None, "logs_path": str(tmp_path / "runs/y_2/logs/agent.log"),
         "code_path": None},
    ]
    source = tmp_path / "submission.jsonl"
    source.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    entries = discover_runs(source)
    assert [(e.run_id, e.competition_id) for e in entries] == [("x_1", "comp-a"), ("y_2", "comp-b")]
    assert entries[0].run_dir == tmp_path / "runs" / "x_1"


def test_bad_jsonl_lines_are_named(tmp_path):
    source = tmp_path / "submission.jsonl"
    source.write_text('{"competition_id": "a", "submission_path": "r/submission/submission.csv"}\n'
                      "not json\n"
                      '{"submission_path": "q/submission/submission.csv"}\n'
                      '{"competition_id": "c", "submission_path": null, "logs_path": null, "code_path": null}\n'
                      '{"competition_id": "d", "submission_path": "r1/submission/s.csv", "code_path": "r2/code/x.py"}\n')
    with pytest.raises(BatchSourceError) as info:
        discover_runs(source)
    message = str(info.value)
    assert "submission.jsonl:2: not JSON" in message
    assert "submission.jsonl:3: field 'competition_id'" in message
    assert "submission.jsonl:4:" in message and "all null" in message
    assert "submission.jsonl:5: the paths point into different run folders" in message


def test_missing_source_is_a_clear_error(tmp_path):
    with pytest.raises(BatchSourceError, match="no such file or folder"):
        discover_runs(tmp_path / "absent")


def _grade(competition, medal=False, valid=True):
    return {"competition_id": competition, "submission_exists": True, "valid_submission": valid,
            "above_median": medal, "gold_medal": medal, "silver_medal": False, "bronze_medal": False}


def test_pass_at_k_is_the_unbiased_estimator():
    grades = [_grade("a", m) for m in (True, True, False, False, False)] + [_grade("b", False)] * 2
    rows = {row["k"]: row for row in pass_at_k(grades)}
    # a: n=5, c=2 -> pass@2 = 1 - C(3,2)/C(5,2) = 0.7; b: n=2, c=0 -> 0
    assert rows[1]["percentage"] == pytest.approx(100 * (0.4 + 0.0) / 2)
    assert rows[2]["percentage"] == pytest.approx(100 * (0.7 + 0.0) / 2)
    assert rows[3] == {"k": 3, "percentage": pytest.approx(100 * (1 - 1 / 10)), "competitions": 1}
    assert max(rows) == 5


def test_seed_aggregate_keeps_complete_seeds_like_mlebench():
    # seed i = i-th run of each competition; competition b has only 2 runs -> 2 complete seeds
    grades = [_grade("a", True), _grade("b", False), _grade("a", False), _grade("b", True), _grade("a", True)]
    seeds = seed_aggregate(grades)
    assert seeds["num_seeds_averaged"] == 2 and seeds["num_competitions_per_seed"] == 2
    medal = seeds["metrics"]["any_medal_percentage"]
    assert medal["mean"] == pytest.approx(50.0)  # seed 1: a only (50 %), seed 2: b only (50 %)
    assert medal["standard_error"] == pytest.approx(0.0)
    gold = seeds["metrics"]["gold_medal_percentage"]
    assert gold == medal


def _result(run_id, competition, verdict, medal, findings=()):
    entry = BatchEntry(run_id=run_id, run_dir=Path(run_id), competition_id=competition, listed_at="test")
    report = {"run": {"competition_id": competition}, "grade": {**_grade(competition, medal), "score": 0.9},
              "verdict": {"kind": verdict, "reasons": []}, "findings": list(findings)}
    return BatchResult(entry=entry, report=report, error=None, seconds=1.0)


def test_summary_disqualifies_flagged_runs():
    finding = {"rule_id": "llm-external-api-call", "category": "llm-api", "severity": "high"}
    results = [
        _result("r1", "a", "flagged", True, [finding, finding]),
        _result("r2", "a", "clean", True),
        _result("r3", "b", "review", False),
        BatchResult(entry=BatchEntry(run_id="r4", run_dir=Path("r4"), competition_id="b", listed_at="t"),
                    report=None, error="run folder r4 does not exist", seconds=0.0),
    ]
    summary = summarize_batch(results)
    assert summary["totals"]["total_runs"] == 4
    assert summary["totals"]["total_medals"] == 2
    assert summary["totals_excluding_flagged"]["total_medals"] == 1
    assert summary["totals_excluding_flagged"]["total_runs"] == 4
    assert summary["verdicts"] == {"clean": 1, "review": 1, "flagged": 1, "error": 1}
    assert summary["rules"] == [{"rule_id": "llm-external-api-call", "category": "llm-api", "severity": "high",
                                 "findings": 2, "runs": 1}]
    by_competition = {row["competition_id"]: row for row in summary["competitions"]}
    assert by_competition["a"]["medals"] == 2 and by_competition["a"]["medals_excluding_flagged"] == 1
    assert by_competition["b"]["error"] == 1
    assert summary["runs"][3]["report"] is None and "does not exist" in summary["runs"][3]["error"]


def test_audit_batch_command_end_to_end(tmp_path):
    group = _run_group(tmp_path, ["honest-digits", "llm-digits", "honest-digits"])
    (group / "metadata.json").write_text(json.dumps({"run_group": group.name, "runs": {
        **json.loads((group / "metadata.json").read_text())["runs"], f"sklearn-digits_{UUID}": {"success": False}}}))
    out = tmp_path / "out"
    result = CliRunner().invoke(main, ["audit", "batch", str(group), "-j", "1", "-o", str(out), "--no-similarity",
                                       "--data-dir", str(tmp_path / "data")])
    assert result.exit_code == 1, result.output  # the llm run has a high finding
    summary = json.loads((out / "summary.json").read_text())
    assert summary["verdicts"] == {"clean": 2, "review": 0, "flagged": 1, "error": 1}
    assert summary["totals"]["total_runs"] == 4
    assert summary["totals"]["total_medals"] == 3
    assert summary["totals_excluding_flagged"]["total_medals"] == 2
    assert len(list((out / "runs").glob("*.json"))) == 3
    missing = next(run for run in summary["runs"] if run["error"])
    assert "does not exist" in missing["error"]
    assert "MLE-bench totals" in result.output
    sarif = json.loads((out / "results.sarif").read_text())
    assert sarif["version"] == "2.1.0" and len(sarif["runs"]) == 3
    page = (out / "summary.html").read_text()
    assert "Batch summary" in page and "flagged runs disqualified" in page and "does not exist" in page


def test_audit_batch_command_rejects_a_bad_source(tmp_path):
    result = CliRunner().invoke(main, ["audit", "batch", str(tmp_path / "nope"), "-o", str(tmp_path / "out")])
    assert result.exit_code == 2
    assert "no such file or folder" in result.output


def test_copy_clusters_link_runs_copying_one_notebook_and_each_other(tmp_path):
    from audit.clusters import RunCode, copy_clusters
    from audit.expand import expand_run
    from audit.pipeline import AuditRequest, run_audit
    from audit.run import load_run

    group = _run_group(tmp_path, ["copied-digits", "copied-digits", "honest-digits"])
    reports, code = {}, []
    for run_dir in sorted(p for p in group.iterdir() if p.is_dir()):
        reports[run_dir.name] = run_audit(AuditRequest(run_dir=run_dir, grade=False, data_dir=tmp_path / "data")).to_dict()
        code.append(RunCode(run_id=run_dir.name, units=expand_run(load_run(run_dir)).code_units))
    result = copy_clusters(reports, code)
    (cluster,) = result["clusters"]
    copied = sorted(reports)[:2]
    assert cluster["runs"] == copied
    assert cluster["notebooks"] == ["digits-tree-ensembles-shape-features.ipynb"]
    kinds = sorted(edge["kind"] for edge in cluster["edges"])
    assert kinds == ["run-notebook", "run-notebook", "run-run"]
    run_edge = next(edge for edge in cluster["edges"] if edge["kind"] == "run-run")
    assert run_edge["left_file"].startswith(copied[0] + "/") and run_edge["right_file"].startswith(copied[1] + "/")
    assert result["run_pairs_skipped"] is None
