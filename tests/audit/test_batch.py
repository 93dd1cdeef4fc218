"""Batch audits: run discovery from run groups and submission JSONL, the summary's figures, the command."""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from mleaudit.audit.batch import BatchEntry, BatchResult, BatchSourceError, competition_from_run_name, discover_runs
from mleaudit.audit.batch_summary import pass_at_k, seed_aggregate, summarize_batch
from mleaudit.audit.cli import main

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
    (tmp_path / "r2" / "logs" / "agent.log").write_text("$ ls\n")
    (tmp_path / "r1" / "code" / "train.py").write_text("print(1)\n")
    (tmp_path / "notes").mkdir()
    entries = discover_runs(tmp_path)
    assert [(e.run_id, e.refused is None) for e in entries] == [("notes", False), ("r1", True), ("r2", True)]
    assert "holds no file; not audited" in entries[0].refused
    with pytest.raises(BatchSourceError, match="no metadata.json, no run folders"):
        discover_runs(tmp_path / "notes")
    with pytest.raises(BatchSourceError, match="this folder is one run"):
        discover_runs(tmp_path / "r1")


def test_a_folder_of_runs_in_any_layout(tmp_path):
    (tmp_path / "aide-run" / "logs").mkdir(parents=True)
    (tmp_path / "aide-run" / "logs" / "journal.json").write_text('{"nodes": []}')
    (tmp_path / "autokaggle-run").mkdir()
    (tmp_path / "autokaggle-run" / "run.py").write_text("print(1)\n")
    (tmp_path / "README.md").write_text("# runs\n")
    entries = discover_runs(tmp_path, competition="spaceship-titanic")
    assert [(e.run_id, e.competition_id, e.refused) for e in entries] == [
        ("aide-run", "spaceship-titanic", None), ("autokaggle-run", "spaceship-titanic", None)]


def test_nothing_a_folder_of_runs_holds_is_left_out_unsaid(tmp_path):
    (tmp_path / "runs" / "a").mkdir(parents=True)
    (tmp_path / "runs" / "a" / "x.py").write_text("print(1)\n")
    (tmp_path / "runs" / ".hidden-run").mkdir()
    (tmp_path / "runs" / "loose.py").write_text("print(2)\n")
    (tmp_path / "runs" / "linked").symlink_to(tmp_path / "runs" / "a")
    entries = discover_runs(tmp_path / "runs")
    assert [e.run_id for e in entries] == ["a"]
    reasons = {Path(path).name: reason for path, reason in entries.skipped}
    assert reasons == {".hidden-run": "hidden; not taken as a run", "linked": "a symbolic link; not followed",
                       "loose.py": "a file beside the run folders; not taken as a run"}


def test_a_run_groups_metadata_must_list_runs_and_its_other_folders_are_listed(tmp_path):
    group = tmp_path / "group"
    (group / f"b-comp_{UUID}" / "code").mkdir(parents=True)
    (group / "extra_run").mkdir()
    (group / "metadata.json").write_text(json.dumps({"run_group": "g", "runs": {}}))
    with pytest.raises(BatchSourceError, match="lists no runs"):
        discover_runs(group)
    (group / "metadata.json").write_text(json.dumps({"run_group": "g", "runs": {f"b-comp_{UUID}": {}}}))
    entries = discover_runs(group)
    assert [e.run_id for e in entries] == [f"b-comp_{UUID}"]
    assert [(Path(p).name, r) for p, r in entries.skipped] == [
        ("extra_run", "a folder metadata.json does not list; not taken as a run of the group")]


def test_a_folder_name_that_names_no_known_competition_leaves_it_to_the_option(tmp_path):
    (tmp_path / "runs" / "attempt_20240101").mkdir(parents=True)
    (tmp_path / "runs" / "attempt_20240101" / "x.py").write_text("print(1)\n")
    (tmp_path / "runs" / f"spaceship-titanic_{UUID}").mkdir()
    (tmp_path / "runs" / f"spaceship-titanic_{UUID}" / "x.py").write_text("print(1)\n")
    entries = discover_runs(tmp_path / "runs", competition="sklearn-digits",
                            known_competitions={"sklearn-digits", "spaceship-titanic"})
    assert [e.competition_id for e in entries] == ["sklearn-digits", "spaceship-titanic"]


def test_a_folder_of_files_holds_single_file_runs(tmp_path):
    for name in ("spaceship-titanic.py", "b.ipynb", "c.jsonl", "README.md", "labels.tsv", ".hidden.py"):
        (tmp_path / name).write_text("print(1)\n")
    entries = discover_runs(tmp_path)
    assert [e.run_id for e in entries] == ["b.ipynb", "c.jsonl", "spaceship-titanic.py"]
    assert all(e.run_dir.is_file() and e.competition_id is None for e in entries)


def test_a_glob_pattern_names_the_runs(tmp_path):
    for seed in ("seed-1", "seed-2"):
        (tmp_path / "agent" / seed / "code").mkdir(parents=True)
        (tmp_path / "agent" / seed / "code" / "train.py").write_text("print(1)\n")
    (tmp_path / "agent" / "notes.txt").write_text("x")
    (tmp_path / "agent" / "seed-3").symlink_to(tmp_path / "agent" / "seed-1")
    entries = discover_runs(str(tmp_path / "agent" / "seed-*"), competition="c")
    assert [(e.run_id, e.competition_id) for e in entries] == [("seed-1", "c"), ("seed-2", "c")]
    assert [reason for _, reason in entries.skipped] == ["a symbolic link; not followed"]
    # `**` matches a run and its parts: each run once, its parts listed as audited with it
    nested = discover_runs(str(tmp_path / "agent" / "**"))
    assert sorted(e.run_id for e in nested) == ["agent"]
    assert any("inside the matched run" in reason for _, reason in nested.skipped)
    with pytest.raises(BatchSourceError, match="matches no run folder"):
        discover_runs(str(tmp_path / "agent" / "nothing-*"))


def test_competition_option_does_not_override_what_the_source_names(tmp_path):
    group = tmp_path / "group"
    group.mkdir()
    names = [f"b-comp_{UUID}", "plain-run"]
    (group / "metadata.json").write_text(json.dumps({"run_group": "g", "runs": {n: {} for n in names}}))
    assert [e.competition_id for e in discover_runs(group, competition="other")] == ["b-comp", "other"]


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
    entries = discover_runs(source)
    # the good line is a run; each bad line is a run not audited in its place, named with its line and why
    assert [(e.run_id, e.refused is None) for e in entries][0] == ("r", True)
    assert [e.listed_at.rsplit(":", 1)[-1] for e in entries] == ["1", "2", "3", "4", "5"]
    assert len({str(e.run_dir) for e in entries}) == 5  # no two bad lines look like one run listed twice
    refused = {e.listed_at.rsplit(":", 1)[-1]: e.refused for e in entries[1:]}
    assert set(refused) == {"2", "3", "4", "5"}
    assert "submission.jsonl:2: not JSON" in refused["2"]
    assert "submission.jsonl:3: field 'competition_id'" in refused["3"]
    assert "submission.jsonl:4:" in refused["4"] and "all null" in refused["4"]
    assert "submission.jsonl:5: the paths point into different run folders" in refused["5"]
    only_bad = tmp_path / "bad.jsonl"
    only_bad.write_text("not json\n")
    with pytest.raises(BatchSourceError, match="bad.jsonl:1: not JSON"):
        discover_runs(only_bad)


def test_the_competition_option_names_the_competition_of_jsonl_lines_without_one(tmp_path):
    source = tmp_path / "submission.jsonl"
    source.write_text('{"submission_path": "r/submission/submission.csv"}\n'
                      '{"competition_id": 7, "submission_path": "q/submission/submission.csv"}\n')
    entries = discover_runs(source, competition="sklearn-digits")
    assert (entries[0].competition_id, entries[0].refused) == ("sklearn-digits", None)
    assert "field 'competition_id' is missing or not a string" in entries[1].refused  # malformed stays malformed


def test_a_batch_with_an_unknown_competition_option_is_refused_before_any_audit(tmp_path):
    (tmp_path / "runs" / "a").mkdir(parents=True)
    (tmp_path / "runs" / "a" / "x.py").write_text("print(1)\n")
    result = CliRunner().invoke(main, ["audit", "batch", str(tmp_path / "runs"), "-o", str(tmp_path / "out"),
                                       "-c", "sklearn-digit"])
    assert result.exit_code == 2 and "Did you mean: sklearn-digits" in result.output
    assert not (tmp_path / "out").exists()


def test_dismissed_findings_count_only_as_dismissed_in_the_summary():
    finding = {"rule_id": "llm-external-api-call", "category": "llm-api", "severity": "high"}
    dismissed = {**finding, "review": {"decision": "dismissed", "note": "mock"}}
    summary = summarize_batch([_result("r1", "a", "clean", False, [dismissed]),
                               _result("r2", "a", "flagged", False, [finding])])
    (row,) = summary["rules"]
    assert (row["findings"], row["runs"], row["dismissed"]) == (1, 1, 1)
    assert summary["categories"] == [{"category": "llm-api", "findings": 1, "runs": 1}]


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
    assert summary["verdicts"] == {"clean": 1, "review": 1, "incomplete": 0, "flagged": 1, "error": 1}
    assert summary["rules"] == [{"rule_id": "llm-external-api-call", "category": "llm-api", "severity": "high",
                                 "findings": 2, "runs": 1, "dismissed": 0}]
    by_competition = {row["competition_id"]: row for row in summary["competitions"]}
    assert by_competition["a"]["medals"] == 2 and by_competition["a"]["medals_excluding_flagged"] == 1
    assert by_competition["b"]["error"] == 1
    assert summary["runs"][3]["report"] is None and "does not exist" in summary["runs"][3]["error"]


def test_summary_does_not_certify_incomplete_or_failed_audits():
    # A gold medal from a run whose audit is incomplete (or failed, or has a verdict this
    # version does not know) is not counted once uncertified runs are disqualified.
    results = [_result("r1", "a", "incomplete", True), _result("r2", "a", "clean", True),
               _result("r3", "a", "some-new-kind", True), _result("r4", "b", "review", True)]
    summary = summarize_batch(results)
    assert summary["totals"]["total_medals"] == 4
    assert summary["totals_excluding_flagged"]["total_medals"] == 2
    assert summary["verdicts"] == {"clean": 1, "review": 1, "incomplete": 1, "flagged": 0, "error": 1}
    assert summary["not_certified"] == {"incomplete": {"runs": 1, "valid_submissions": 1, "medals": 1},
                                        "error": {"runs": 1, "valid_submissions": 1, "medals": 1}}
    by_competition = {row["competition_id"]: row for row in summary["competitions"]}
    assert by_competition["a"]["medals_excluding_flagged"] == 1 and by_competition["a"]["incomplete"] == 1


def test_summary_says_what_its_totals_count_and_counts_categories_from_low_findings():
    info = {"rule_id": "sub-run-submission-unconfirmed", "category": "manual-submission", "severity": "info"}
    low = {"rule_id": "env-sudo-command", "category": "sandbox-tamper", "severity": "low"}
    graded = _result("g1", "a", "clean", False, [info, low])
    ungraded = BatchResult(entry=BatchEntry(run_id="u1", run_dir=Path("u1"), competition_id=None, listed_at="t"),
                           report={"run": {"competition_id": None, "artifact_counts": {"submission": 1, "code": 2}},
                                   "grade": None, "verdict": {"kind": "incomplete", "reasons": []}, "findings": [info]},
                           error=None, seconds=1.0)
    bare = BatchResult(entry=BatchEntry(run_id="u2", run_dir=Path("u2"), competition_id=None, listed_at="t"),
                       report={"run": {"competition_id": None, "artifact_counts": {"code": 1}}, "grade": None,
                               "verdict": {"kind": "incomplete", "reasons": []}, "findings": []},
                       error=None, seconds=1.0)
    failed = BatchResult(entry=BatchEntry(run_id="x", run_dir=Path("x"), competition_id="a", listed_at="t"),
                         report=None, error="boom", seconds=0.0)
    summary = summarize_batch([graded, ungraded, bare, failed])
    assert summary["coverage"] == {"runs": 4, "graded": 1, "not_graded": 2, "not_graded_with_submission": 1,
                                   "without_submission": 1, "not_audited": 1}
    assert summary["totals"]["total_runs_with_submissions"] == 2  # the graded one and the ungraded one with a file
    assert summary["totals"]["total_valid_submissions"] == 1
    assert {row["category"]: row["runs"] for row in summary["categories"]} == {"sandbox-tamper": 1}
    assert {row["rule_id"]: row["runs"] for row in summary["rules"]}["sub-run-submission-unconfirmed"] == 2


def test_batch_of_single_file_runs_with_a_competition(tmp_path):
    runs = tmp_path / "solutions"
    runs.mkdir()
    (runs / "a.py").write_text("import pandas as pd\nprint(pd.__version__)\n")
    (runs / "b.py").write_text("print(2)\n")
    out = tmp_path / "out"
    result = CliRunner().invoke(main, ["audit", "batch", str(runs), "-j", "1", "-o", str(out), "--no-similarity",
                                       "--competition", "sklearn-digits", "--no-grade"])
    assert result.exit_code == 0, result.output  # grading not asked for: clean runs
    summary = json.loads((out / "summary.json").read_text())
    assert summary["coverage"]["runs"] == 2 and summary["coverage"]["not_audited"] == 0
    assert [run["competition_id"] for run in summary["runs"]] == ["sklearn-digits"] * 2
    assert "graded 0; not graded 2 (0 with a submission, 2 without)" in result.output
    assert "2 of 2 run(s) audited" in result.output


def test_audit_batch_command_end_to_end(tmp_path):
    group = _run_group(tmp_path, ["honest-digits", "llm-digits", "honest-digits"])
    (group / "metadata.json").write_text(json.dumps({"run_group": group.name, "runs": {
        **json.loads((group / "metadata.json").read_text())["runs"], f"sklearn-digits_{UUID}": {"success": False}}}))
    out = tmp_path / "out"
    result = CliRunner().invoke(main, ["audit", "batch", str(group), "-j", "1", "-o", str(out), "--no-similarity",
                                       "--data-dir", str(tmp_path / "data")])
    assert result.exit_code == 1, result.output  # the llm run has a high finding
    summary = json.loads((out / "summary.json").read_text())
    assert summary["verdicts"] == {"clean": 2, "review": 0, "incomplete": 0, "flagged": 1, "error": 1}
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
    assert "Batch summary" in page and "uncertified runs disqualified" in page and "does not exist" in page


def test_audit_batch_command_rejects_a_bad_source(tmp_path):
    result = CliRunner().invoke(main, ["audit", "batch", str(tmp_path / "nope"), "-o", str(tmp_path / "out")])
    assert result.exit_code == 2
    assert "no such file or folder" in result.output


def test_copy_clusters_link_runs_copying_one_notebook_and_each_other(tmp_path):
    from mleaudit.audit.clusters import RunCode, copy_clusters
    from mleaudit.audit.expand import expand_run
    from mleaudit.audit.pipeline import AuditRequest, run_audit
    from mleaudit.audit.run import load_run

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


#: A solution with code of its own (a feature of its own design, its own constants).
_OWN_SOLUTION = """import numpy as np
import pandas as pd

train = pd.read_csv("./input/train.csv")

def harmonic_tenure(frame, pivot=13.75):
    span = frame["tenure_days"].clip(lower=1)
    return (frame["visits"] + 0.5) / np.log1p(span / pivot)

train["heat"] = harmonic_tenure(train)
bins = [0, 3, 11, 29, 61, 999]
train["heat_band"] = pd.cut(train["heat"], bins=bins, labels=["ice", "cold", "mild", "warm", "hot"])
weights = {"ice": 0.125, "cold": 0.375, "mild": 1.0, "warm": 2.75, "hot": 7.5}
train["weight"] = train["heat_band"].map(weights).astype(float) * np.sqrt(train["visits"] + 17.0)
"""


def test_copy_cluster_edges_name_the_journal_nodes_they_join(tmp_path):
    from mleaudit.audit.clusters import RunCode, copy_clusters
    from mleaudit.audit.expand import expand_run
    from mleaudit.audit.formatters.common import cluster_side_label
    from mleaudit.audit.pipeline import artifact_text
    from mleaudit.audit.run import load_run

    nodes = {
        "run-a": ["print('hello')\n", _OWN_SOLUTION],
        "run-b": ["import os\nprint(os.listdir('./input'))\n", "x = 1\n",
                  _OWN_SOLUTION.replace("frame", "table").replace("heat", "warmth")],
    }
    code = []
    for run_id, texts in nodes.items():
        folder = tmp_path / run_id
        folder.mkdir()
        journal = {"nodes": [{"id": f"{run_id}-{n}", "step": n, "code": text} for n, text in enumerate(texts)]}
        (folder / "journal.json").write_text(json.dumps(journal), encoding="utf-8")
        run = load_run(folder)
        expanded = expand_run(run)
        code.append(RunCode(run_id=run_id, units=expanded.code_units,
                            locations={(e.span.path, e.span.start_byte): e.location for e in expanded.log_events},
                            host_text=lambda path, run=run: artifact_text(run, path)))
    (cluster,) = copy_clusters({"run-a": {}, "run-b": {}}, code)["clusters"]
    (edge,) = cluster["edges"]
    # the edge joins the nodes that hold the copied code, not just the two journals
    assert (edge["left_origin"]["node"], edge["left_origin"]["node_id"]) == (1, "run-a-1")
    assert (edge["right_origin"]["node"], edge["right_origin"]["step"]) == (2, 2)
    assert cluster_side_label(edge, "left") == "run-a/journal.json · node 1 (step 1, id run-a-1)"
    assert cluster_side_label(edge, "right") == "run-b/journal.json · node 2 (step 2, id run-b-2)"
    # the run — run comparison in worker processes finds the same edges
    assert copy_clusters({"run-a": {}, "run-b": {}}, code, jobs=2)["clusters"] == [cluster]


# -- report file names, run folders outside the source, hostile JSON --------------------------------


def test_report_file_names_are_distinct_for_ids_with_one_slug():
    from mleaudit.audit.batch import report_file_name

    ids = ["a b", "a_b", "a/b", "a\\b", "a:b", "A_B", "a_B", "é", "e", "ｅ", "", ".", "..", "-x", "x" * 300,
           "x" * 300 + "y", "a\udcff", "a\ufffd", "a\x00b"]
    names = [report_file_name(run_id) for run_id in ids]
    assert len({name.casefold() for name in names}) == len(ids)
    for name in names:
        assert re.fullmatch(r"[A-Za-z0-9._-]+\.json", name) and not name.startswith((".", "-"))
        assert "/" not in name and "\\" not in name and len(name.encode()) < 100
    assert report_file_name("a b").startswith("a_b-") and report_file_name("x" * 300).startswith("x" * 60 + "-")
    assert report_file_name("a b") == report_file_name("a b")  # stable across calls (and processes)


def test_repeated_ids_stay_unique_even_against_listed_suffixes(tmp_path):
    group = tmp_path / "g"
    group.mkdir()
    (group / "metadata.json").write_text(json.dumps({"runs": ["a", "a", "a-2", "a"]}))
    assert [e.run_id for e in discover_runs(group)] == ["a", "a-3", "a-2", "a-4"]


def test_batch_keeps_a_report_per_run_for_ids_with_one_slug(tmp_path):
    # "a b" (an LLM-calling run, flagged) and "a_b" (honest) used to share runs/a_b.json, the
    # clean report overwriting the flagged one.
    group = tmp_path / "g"
    group.mkdir()
    shutil.copytree(EXAMPLES / "llm-digits", group / "a b")
    shutil.copytree(EXAMPLES / "honest-digits", group / "a_b")
    (group / "metadata.json").write_text(json.dumps({"runs": {"a b": {}, "a_b": {}}}))
    out = tmp_path / "out"
    result = CliRunner().invoke(main, ["audit", "batch", str(group), "-j", "1", "-o", str(out), "--no-similarity",
                                       "--no-grade", "--competitions", str(EXAMPLES.parents[1] / "competitions")])
    assert result.exit_code == 1, result.output
    summary = json.loads((out / "summary.json").read_text())
    reports = {run["run_id"]: json.loads((out / run["report"]).read_text()) for run in summary["runs"]}
    assert set(reports) == {"a b", "a_b"} and len(list((out / "runs").iterdir())) == 2
    assert reports["a b"]["run"]["run_id"] == "a b" and reports["a_b"]["run"]["run_id"] == "a_b"
    assert reports["a b"]["verdict"]["kind"] == "flagged" and reports["a_b"]["verdict"]["kind"] != "flagged"


@pytest.mark.parametrize("run_id", ["../outside", "../../outside", "{outside}", "link", "sub/../../outside", "", "."])
def test_run_group_ids_leading_outside_are_refused(tmp_path, run_id):
    outside = tmp_path / "outside"
    shutil.copytree(EXAMPLES / "llm-digits", outside)
    group = tmp_path / "runs" / "g"
    group.mkdir(parents=True)
    (group / "link").symlink_to(outside, target_is_directory=True)
    (tmp_path / "runs" / "outside").symlink_to(outside, target_is_directory=True)
    shutil.copytree(EXAMPLES / "honest-digits", group / f"sklearn-digits_{UUID}")
    run_id = run_id.format(outside=outside)
    (group / "metadata.json").write_text(json.dumps({"runs": {run_id: {}, f"sklearn-digits_{UUID}": {}}}))
    entries = discover_runs(group)
    assert entries[0].refused and "not a folder inside the run group" in entries[0].refused
    assert entries[1].refused is None and entries[1].run_dir == group / f"sklearn-digits_{UUID}"
    out = tmp_path / "out"
    result = CliRunner().invoke(main, ["audit", "batch", str(group), "-j", "1", "-o", str(out), "--no-similarity",
                                       "--no-grade"])
    assert result.exit_code == 3, result.output  # the outside run (an LLM call) was never audited: an error run
    summary = json.loads((out / "summary.json").read_text())
    refused = summary["runs"][0]
    assert refused["report"] is None and "not audited" in refused["error"]
    assert summary["verdicts"]["error"] == 1 and summary["verdicts"]["clean"] == 1
    assert "not audited" in result.output and len(list((out / "runs").iterdir())) == 1


def test_run_group_ids_inside_the_group_with_slashes_are_audited(tmp_path):
    group = tmp_path / "g"
    (group / "nested").mkdir(parents=True)
    shutil.copytree(EXAMPLES / "honest-digits", group / "nested" / "r1")
    (group / "metadata.json").write_text(json.dumps({"runs": {"nested/r1": {}, "nested/./../nested/r1": {}}}))
    entries = discover_runs(group)
    assert [e.refused for e in entries] == [None, None]
    assert entries[0].run_dir == entries[1].run_dir == group / "nested" / "r1"


@pytest.mark.parametrize("value", ["../elsewhere/submission/submission.csv", "{outside}/submission/submission.csv",
                                   "link/submission/submission.csv", "code/../../elsewhere/submission/submission.csv"])
def test_jsonl_paths_leading_outside_its_folder_are_refused(tmp_path, value):
    outside = tmp_path / "elsewhere"
    shutil.copytree(EXAMPLES / "llm-digits", outside)
    listing = tmp_path / "listing"
    shutil.copytree(EXAMPLES / "honest-digits", listing / "r1")
    (listing / "link").symlink_to(outside, target_is_directory=True)
    lines = [{"competition_id": "sklearn-digits", "submission_path": value.format(outside=outside), "logs_path": None,
              "code_path": None},
             {"competition_id": "sklearn-digits", "submission_path": "r1/submission/submission.csv"}]
    source = listing / "submission.jsonl"
    source.write_text("".join(json.dumps(line) + "\n" for line in lines))
    entries = discover_runs(source)
    assert entries[0].refused and "submission.jsonl:1" in entries[0].refused and "not audited" in entries[0].refused
    assert entries[1].refused is None and entries[1].run_dir == listing / "r1"
    out = tmp_path / "out"
    result = CliRunner().invoke(main, ["audit", "batch", str(source), "-j", "1", "-o", str(out), "--no-similarity",
                                       "--no-grade"])
    assert result.exit_code == 3, result.output  # refused runs are errors: not certified
    summary = json.loads((out / "summary.json").read_text())
    assert summary["runs"][0]["report"] is None and "outside the folder" in summary["runs"][0]["error"]
    assert summary["verdicts"]["clean"] == 1


def test_jsonl_relative_to_the_current_directory_is_refused_outside_its_folder(tmp_path, monkeypatch):
    shutil.copytree(EXAMPLES / "honest-digits", tmp_path / "r1")
    (tmp_path / "lists").mkdir()
    source = tmp_path / "lists" / "submission.jsonl"
    source.write_text(json.dumps({"competition_id": "c", "submission_path": "r1/submission/submission.csv"}) + "\n")
    monkeypatch.chdir(tmp_path)  # r1/... exists from here only
    (entry,) = discover_runs(source)
    assert entry.refused and "outside the folder" in entry.refused


def test_deeply_nested_metadata_and_jsonl_are_named_errors(tmp_path):
    group = tmp_path / "g"
    group.mkdir()
    (group / "metadata.json").write_text('{"runs": ' + "[" * 1000 + "]" * 1000 + "}")
    with pytest.raises(BatchSourceError, match=r"metadata\.json: not a readable JSON file \(nested"):
        discover_runs(group)
    source = tmp_path / "submission.jsonl"
    source.write_text(json.dumps({"competition_id": "c", "submission_path": "r/submission/s.csv"}) + "\n"
                      + '{"competition_id": "c", "x": ' + "{\"a\": " * 1000 + "1" + "}" * 1000 + "}\n")
    assert re.search(r"submission\.jsonl:2: not JSON \(nested", discover_runs(source)[1].refused)
    source.write_text('{"competition_id": "c", "x": ' + "{\"a\": " * 1000 + "1" + "}" * 1000 + "}\n")
    with pytest.raises(BatchSourceError, match=r"submission\.jsonl:1: not JSON \(nested"):
        discover_runs(source)
    for target in (group, source):
        result = CliRunner().invoke(main, ["audit", "batch", str(target), "-o", str(tmp_path / "out")])
        assert result.exit_code == 2 and "nested" in result.output and "Traceback" not in result.output
        assert not isinstance(result.exception, RecursionError)


def test_reports_are_written_whole(tmp_path, monkeypatch):
    from mleaudit.audit.batch import reports as batch

    target = tmp_path / "r.json"
    target.write_text("old")
    real_replace = os.replace

    def failing_replace(src, dst):
        raise KeyboardInterrupt

    monkeypatch.setattr(batch.os, "replace", failing_replace)
    with pytest.raises(KeyboardInterrupt):
        batch.write_text_atomic(target, "new" * 1000)
    assert target.read_text() == "old" and sorted(p.name for p in tmp_path.iterdir()) == ["r.json"]
    monkeypatch.setattr(batch.os, "replace", real_replace)
    link = tmp_path / "link.json"
    link.symlink_to(tmp_path / "victim")
    batch.write_text_atomic(link, "x")
    assert not (tmp_path / "victim").exists() and not link.is_symlink() and link.read_text() == "x"


def test_hostile_run_ids_are_printed_literally_and_long_ones_are_errors(tmp_path):
    group = tmp_path / "g"
    group.mkdir()
    shutil.copytree(EXAMPLES / "honest-digits", group / "ok")
    ids = ["[red]fake[/red] \x1b[2J\x1b]0;title\x07", "x" * 400, "ok", "\u202eevil"]
    (group / "metadata.json").write_text(json.dumps({"runs": ids}))
    out = tmp_path / "out"
    result = CliRunner().invoke(main, ["audit", "batch", str(group), "-j", "1", "-o", str(out), "--no-similarity",
                                       "--no-grade"])
    assert result.exit_code == 3, result.output  # long ids are per-run errors
    assert "\x1b" not in result.output and "\u202e" not in result.output
    assert "[red]fake[/red] \\x1b[2J\\x1b]0;title\\x07" in result.output and "\\u202eevil" in result.output
    summary = json.loads((out / "summary.json").read_text())
    long_run = summary["runs"][1]
    assert long_run["report"] is None and "cannot be read" in long_run["error"] and "crashed" not in long_run["error"]
    assert summary["verdicts"]["clean"] == 1 and summary["verdicts"]["error"] == 3


def test_copy_clusters_leave_out_the_scaffolds_code_as_the_run_reports_do():
    from mleaudit.audit.clusters import RunCode, copy_clusters
    from mleaudit.audit.units import Actor, CodeUnit

    def run(run_id: str, actor: Actor) -> RunCode:
        return RunCode(run_id=run_id, units=(CodeUnit(path="prompt/starter.py", language="python",
                                                      text=_OWN_SOLUTION, actor=actor),))

    # a starter file the harness shows every run is not code one run copied from another
    assert copy_clusters({"a": {}, "b": {}}, [run("a", Actor.SCAFFOLD), run("b", Actor.SCAFFOLD)])["clusters"] == []
    assert copy_clusters({"a": {}, "b": {}}, [run("a", Actor.AGENT), run("b", Actor.UNKNOWN)])["clusters"]


def test_a_jsonl_path_beside_the_list_or_under_a_code_named_ancestor(tmp_path):
    base = tmp_path / "code" / "lists"  # an ancestor named like a run part must not be taken for one
    (base / "r1").mkdir(parents=True)
    (base / "r1" / "train.py").write_text("print(1)\n")
    (base / "solve.py").write_text("print(2)\n")
    source = base / "s.jsonl"
    source.write_text(json.dumps({"competition_id": "c", "code_path": "r1/train.py"}) + "\n"
                      + json.dumps({"competition_id": "c", "code_path": "solve.py"}) + "\n")
    first, second = discover_runs(source)
    assert (first.run_dir, first.refused) == (base / "r1", None)
    assert "name no run folder below the submission list's folder" in second.refused


def test_a_glob_through_symbolic_link_loops_ends(tmp_path):
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "train.py").write_text("print(1)\n")
    for name in ("l1", "l2", "l3"):
        (tmp_path / "d" / name).symlink_to(".")
    entries = discover_runs(str(tmp_path / "**" / "train.py"))
    assert [e.run_id for e in entries] == ["train.py"]


def test_run_ids_that_are_not_utf8_do_not_stop_the_batch_views(tmp_path):
    runs = tmp_path / "runs"
    runs.mkdir()
    (runs / "ok.py").write_text("print(1)\n")
    (runs / os.fsdecode(b"s\xff.py")).write_text("print(2)\n")
    out = tmp_path / "out"
    result = CliRunner().invoke(main, ["audit", "batch", str(runs), "-j", "1", "-o", str(out), "--no-similarity",
                                       "--no-grade"])
    assert result.exit_code == 0, result.output
    assert (out / "summary.html").is_file() and (out / "results.sarif").is_file()


def test_a_run_groups_loose_files_and_repeated_jsonl_keys_are_not_lost(tmp_path):
    group = tmp_path / "group"
    (group / "r1" / "code").mkdir(parents=True)
    (group / "r1" / "code" / "x.py").write_text("print(1)\n")
    (group / "loose_train.py").write_text("import openai\n")
    (group / "metadata.json").write_text(json.dumps({"run_group": "g", "runs": {"r1": {}}}))
    entries = discover_runs(group)
    assert [e.run_id for e in entries] == ["r1"]
    assert [(Path(p).name, r) for p, r in entries.skipped] == [
        ("loose_train.py", "not a run folder of the group; not taken as a run")]
    source = tmp_path / "s.jsonl"
    source.write_text('{"competition_id": "c", "submission_path": "evil/submission/submission.csv", '
                      '"submission_path": "r1/submission/submission.csv"}\n'
                      + json.dumps({"competition_id": "c", "code_path": "r1/code/x.py"}) + "\n")
    (tmp_path / "r1" / "code").mkdir(parents=True)
    first, _ = discover_runs(source)
    assert "'submission_path' written more than once" in first.refused
