"""Seed figures of a batch summary with uneven runs per competition: what is left out, what is padded."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from mleaudit.audit.batch import BatchEntry, BatchResult, discover_runs
from mleaudit.audit.batch_cli import _print_summary
from mleaudit.audit.batch_summary import describe_seeds, seed_aggregate, summarize_batch
from mleaudit.audit.cli import main
from mleaudit.audit.formatters.html import render_html

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "runs"


def _grade(competition, medal=False, run_id=None, valid=True):
    grade = {"competition_id": competition, "submission_exists": True, "valid_submission": valid,
             "above_median": medal, "gold_medal": medal, "silver_medal": False, "bronze_medal": False}
    if run_id is not None:
        grade["run_id"] = run_id
    return grade


def _result(run_id, competition, medal=False, run_dir=None):
    entry = BatchEntry(run_id=run_id, run_dir=Path(run_dir or f"/runs/{run_id}"), competition_id=competition,
                       listed_at="test")
    report = {"run": {"competition_id": competition}, "grade": _grade(competition, medal),
              "verdict": {"kind": "clean", "reasons": []}, "findings": []}
    return BatchResult(entry=entry, report=report, error=None, seconds=0.1)


def _uneven_results(competitions=22, with_third=4):
    """Two runs of every competition in batch order, then a third run of the first ``with_third``."""
    names = [f"comp-{i:02d}" for i in range(competitions)]
    results = [_result(f"{name}_run{seed}", name, medal=seed == 1) for seed in (1, 2) for name in names]
    results += [_result(f"{name}_run3", name, medal=True) for name in names[:with_third]]
    return results


def test_uneven_seeds_name_every_run_left_out():
    summary = summarize_batch(_uneven_results())
    seeds = summary["seeds"]
    assert seeds["num_seeds_averaged"] == 2 and seeds["num_competitions_per_seed"] == 22
    assert seeds["metrics"]["any_medal_percentage"]["mean"] == pytest.approx(50.0)  # seed 1: all, seed 2: none
    reason = "seed 3 incomplete: 4 of 22 competitions have a 3rd run"
    assert seeds["incomplete_seeds"] == [{"seed": 3, "competitions_with_run": 4, "competitions": 22, "padded": False,
                                          "reason": reason}]
    assert [(r["competition_id"], r["run_id"], r["run_path"], r["seed"], r["reason"]) for r in seeds["left_out"]] == [
        (f"comp-{i:02d}", f"comp-{i:02d}_run3", f"/runs/comp-{i:02d}_run3", 3, reason) for i in range(4)]
    assert seeds["runs_averaged"] == 44 and seeds["padded"] == [] and seeds["padded_entries"] == 0
    assert summary["seeds_excluding_flagged"]["left_out"] == seeds["left_out"]
    lines = describe_seeds(seeds)
    assert lines[0].startswith("seeds: 2 complete seed(s) averaged; 4 run(s) left out")
    assert lines[1] == f"{reason}; left out: " + ", ".join(f"comp-{i:02d}: comp-{i:02d}_run3" for i in range(4))
    json.dumps(summary)  # JSON-ready


def test_padding_counts_missing_runs_as_failed_and_lists_them():
    summary = summarize_batch(_uneven_results(), pad_missing=True)
    seeds = summary["seeds"]
    assert seeds["pad_missing"] is True and seeds["num_seeds_averaged"] == 3
    assert seeds["left_out"] == [] and seeds["runs_averaged"] == 48
    # Seed 3: 4 real runs with medals, 18 padded failures (no submission, not valid, no medal).
    metrics = seeds["metrics"]
    assert metrics["any_medal_percentage"]["mean"] == pytest.approx((100 + 0 + 400 / 22) / 3)
    assert metrics["submission_exists_percentage"]["mean"] == pytest.approx((100 + 100 + 400 / 22) / 3)
    assert metrics["valid_submissions_percentage"]["mean"] == pytest.approx((100 + 100 + 400 / 22) / 3)
    assert seeds["incomplete_seeds"][0]["padded"] is True
    assert seeds["padded"] == [{"competition_id": f"comp-{i:02d}", "runs": 2, "seeds": [3, 3], "entries": 1}
                               for i in range(4, 22)]
    assert seeds["padded_entries"] == 18
    lines = describe_seeds(seeds)
    assert lines[0] == ("seeds padded: 3 seed(s) averaged; 18 missing run(s) counted as failed "
                        "(no submission, no valid submission, no medal)")
    assert "seed 3 incomplete: 4 of 22 competitions have a 3rd run; padded" in lines
    assert "padded as failed: comp-04 (2 run(s)) in seed 3" in lines
    assert lines[-1] == "… and 8 more padded competition(s)"


def test_padding_spans_several_seeds_like_mlebench():
    # a has 3 runs, b has 1: MLE-bench pads b in seeds 2 and 3 and averages 3 seeds.
    grades = [_grade("a", True), _grade("b", True), _grade("a", True), _grade("a", False)]
    seeds = seed_aggregate(grades, pad_missing=True)
    assert seeds["num_seeds_averaged"] == 3
    assert seeds["metrics"]["any_medal_percentage"]["mean"] == pytest.approx((100 + 50 + 0) / 3)
    assert seeds["padded"] == [{"competition_id": "b", "runs": 1, "seeds": [2, 3], "entries": 2}]
    assert "padded as failed: b (1 run(s)) in seeds 2–3" in describe_seeds(seeds)
    unpadded = seed_aggregate(grades)
    assert unpadded["num_seeds_averaged"] == 1
    assert [r["position"] for r in unpadded["left_out"]] == [3, 4]
    assert [r["run_id"] for r in unpadded["left_out"]] == [None, None]
    assert "left out: a: run #3" in describe_seeds(unpadded)[1]


def test_even_seeds_leave_nothing_out():
    results = [_result(f"{c}_{s}", c, medal=(s == 1)) for s in (1, 2, 3) for c in ("a", "b")]
    for pad in (False, True):
        seeds = summarize_batch(results, pad_missing=pad)["seeds"]
        assert seeds["num_seeds_averaged"] == 3 and seeds["runs_averaged"] == 6
        assert seeds["left_out"] == [] and seeds["incomplete_seeds"] == [] and seeds["padded"] == []
        assert seeds["competitions_without_runs"] == []
        assert seeds["metrics"]["any_medal_percentage"]["mean"] == pytest.approx(100 / 3)
        assert describe_seeds(seeds) == []


def test_a_listed_competition_without_runs():
    grades = [_grade("a", True, "r1"), _grade("b", False, "r2"), _grade("a", False, "r3")]
    seeds = seed_aggregate(grades, competitions=["a", "b", "c"])
    assert seeds["num_seeds_averaged"] == 0 and seeds["metrics"] is None
    assert seeds["competitions_without_runs"] == ["c"]
    assert [(r["run_id"], r["reason"]) for r in seeds["left_out"]] == [
        ("r1", "seed 1 incomplete: 2 of 3 competitions have a 1st run"),
        ("r2", "seed 1 incomplete: 2 of 3 competitions have a 1st run"),
        ("r3", "seed 2 incomplete: 1 of 3 competitions have a 2nd run")]
    assert describe_seeds(seeds)[0] == "competitions without any run: c (no seed is complete)"

    padded = seed_aggregate(grades, competitions=["a", "b", "c"], pad_missing=True)
    assert padded["num_seeds_averaged"] == 2 and padded["num_competitions_per_seed"] == 3
    assert padded["padded"] == [{"competition_id": "b", "runs": 1, "seeds": [2, 2], "entries": 1},
                                {"competition_id": "c", "runs": 0, "seeds": [1, 2], "entries": 2}]
    assert padded["metrics"]["any_medal_percentage"]["mean"] == pytest.approx((100 / 3 + 0) / 2)
    assert describe_seeds(padded)[0] == "competitions without any run: c (padded as failed in every seed)"


def test_runs_outside_the_seeds_are_named():
    grades = [_grade("a", True, "r1"), _grade(None, True, "r2"), _grade("z", True, "r3"), _grade("", False, "r4")]
    seeds = seed_aggregate(grades, competitions=["a"])
    assert seeds["num_seeds_averaged"] == 1 and seeds["metrics"]["any_medal_percentage"]["mean"] == 100.0
    assert [(r["run_id"], r["reason"]) for r in seeds["left_out"]] == [
        ("r2", "no competition id: the run cannot be placed in a seed"),
        ("r3", "competition z is not one of the 1 competitions the seeds hold"),
        ("r4", "no competition id: the run cannot be placed in a seed")]
    assert "no competition id: the run cannot be placed in a seed; left out: r2, r4" in describe_seeds(seeds)


def test_no_runs_and_nothing_named():
    assert seed_aggregate([]) is None
    only_unnamed = seed_aggregate([_grade(None, True, "r1")])
    assert only_unnamed["metrics"] is None and only_unnamed["num_competitions_per_seed"] == 0
    assert only_unnamed["left_out"][0]["run_id"] == "r1"
    nothing = seed_aggregate([], competitions=["a"], pad_missing=True)
    assert nothing["metrics"] is None and nothing["competitions_without_runs"] == ["a"]


@pytest.mark.parametrize(("competitions", "message"), [
    ("spaceship-titanic", "not the single string"),
    ([], "competitions is empty"),
    (["a", " "], "empty competition id"),
])
def test_bad_competition_lists_are_refused_clearly(competitions, message):
    with pytest.raises(ValueError, match=message):
        seed_aggregate([_grade("a")], competitions=competitions)


def test_a_repeated_run_counts_once_in_the_seeds():
    # The same run id (and folder) twice: the repeat does not make a second seed.
    results = [_result("r1", "a", True), _result("r2", "b", False), _result("r1", "a", True)]
    seeds = summarize_batch(results)["seeds"]
    assert seeds["num_seeds_averaged"] == 1 and seeds["incomplete_seeds"] == []
    assert seeds["left_out"] == [{"position": 3, "run_id": "r1", "run_path": "/runs/r1", "competition_id": "a",
                                  "seed": None, "reason": "repeat of the run at position 1 (a run counts once in the seeds)"}]
    # Seed figures from raw grades tell repeats apart by run id when there is no path.
    raw = seed_aggregate([_grade("a", True, "x"), _grade("a", True, "x"), _grade("a", True, "y")])
    assert raw["num_seeds_averaged"] == 2 and [r["position"] for r in raw["left_out"]] == [2]


def test_a_jsonl_listing_one_folder_twice_counts_it_once(tmp_path):
    (tmp_path / "runs" / "x_1" / "submission").mkdir(parents=True)
    line = {"competition_id": "comp-a", "submission_path": "runs/x_1/submission/submission.csv",
            "logs_path": None, "code_path": None}
    other = {**line, "competition_id": "comp-b"}
    (tmp_path / "runs" / "y_2" / "submission").mkdir(parents=True)
    other["submission_path"] = "runs/y_2/submission/submission.csv"
    source = tmp_path / "submission.jsonl"
    source.write_text("\n".join(json.dumps(x) for x in (line, other, line)) + "\n")
    entries = discover_runs(source)
    assert [e.run_id for e in entries] == ["x_1", "y_2", "x_1-2"]  # ids made unique, same folder
    results = [BatchResult(entry=e, report=None, error="not audited", seconds=0.0) for e in entries]
    seeds = summarize_batch(results)["seeds"]
    assert seeds["num_seeds_averaged"] == 1
    assert [(r["run_id"], r["reason"]) for r in seeds["left_out"]] == [
        ("x_1-2", "repeat of the run at position 1 (a run counts once in the seeds)")]
    assert str(entries[0].run_dir) in describe_seeds(seeds)[1]  # the path shows that x_1-2 is x_1's folder


def test_a_thousand_competitions():
    names = [f"competition-{i:04d}" for i in range(1000)]
    grades = [_grade(n, medal=(s == 0), run_id=f"{n}/{s}") for s in range(2) for n in names]
    grades += [_grade(n, True, f"{n}/2") for n in names[:500]]
    seeds = seed_aggregate(grades)
    reason = "seed 3 incomplete: 500 of 1000 competitions have a 3rd run"
    assert seeds["num_seeds_averaged"] == 2 and len(seeds["left_out"]) == 500
    assert {r["reason"] for r in seeds["left_out"]} == {reason}
    lines = describe_seeds(seeds)
    assert len(lines) == 2 and lines[1].startswith(f"{reason}; left out: competition-0000: competition-0000/2")
    assert lines[1].endswith("… and 490 more runs")
    padded = seed_aggregate(grades, pad_missing=True)
    assert padded["padded_entries"] == 500 and len(padded["padded"]) == 500
    assert padded["metrics"]["any_medal_percentage"]["mean"] == pytest.approx(50.0)
    assert len(describe_seeds(padded, limit=5)) < 10


def test_many_incomplete_seeds_are_summarised():
    grades = [_grade("a", run_id="a0"), *(_grade("b", run_id=f"b{i}") for i in range(40))]
    lines = describe_seeds(seed_aggregate(grades), limit=3)
    assert lines[-1] == "… and 36 more run(s) left out for 36 more reason(s)"
    padded = describe_seeds(seed_aggregate(grades, pad_missing=True), limit=3)
    assert "… and 36 more padded seed(s)" in padded


def test_terminal_and_html_say_what_was_left_out():
    summary = summarize_batch(_uneven_results(3, 1) + [_result("odd\x1b[31m", None)])
    stream = io.StringIO()
    _print_summary(summary, stream)
    text = stream.getvalue()
    assert "seed 3 incomplete: 1 of 3 competitions have a 3rd run; left out: comp-00: comp-00_run3" in text
    assert "no competition id: the run cannot be placed in a seed; left out: odd\\x1b[31m" in text
    assert "\x1b[31m" not in text
    page = render_html([], title="batch", summary=summary)
    assert "Seeds: runs left out and padded" in page and "left out: comp-00: comp-00_run3" in page

    padded = summarize_batch(_uneven_results(3, 1), pad_missing=True)
    stream = io.StringIO()
    _print_summary(padded, stream)
    assert "(missing runs padded as failed)" in stream.getvalue()
    assert "padded as failed: comp-01 (2 run(s)) in seed 3" in stream.getvalue()

    no_seed = summarize_batch([_result("r1", None)])
    stream = io.StringIO()
    _print_summary(no_seed, stream)
    assert "any medal (all runs): no seed averaged" in stream.getvalue()
    assert "no seed averaged" in render_html([], title="batch", summary=no_seed)


def _run_group(tmp_path: Path, competitions: list[str]) -> Path:
    group = tmp_path / "group"
    group.mkdir()
    run_ids = []
    for i, competition in enumerate(competitions):
        run_id = f"{competition}_{i:08x}-aaaa-bbbb-cccc-dddddddddddd"
        shutil.copytree(EXAMPLES / "honest-digits", group / run_id)
        run_ids.append(run_id)
    (group / "metadata.json").write_text(json.dumps({"run_group": group.name, "runs": {r: {} for r in run_ids}}))
    return group


def test_batch_command_pads_on_request(tmp_path):
    # sklearn-digits has two runs, the second competition one (its audit fails: unknown competition).
    group = _run_group(tmp_path, ["sklearn-digits", "no-such-competition", "sklearn-digits"])
    args = ["audit", "batch", str(group), "-j", "1", "--no-similarity", "--data-dir", str(tmp_path / "data")]
    plain = CliRunner().invoke(main, [*args, "-o", str(tmp_path / "plain")])
    summary = json.loads((tmp_path / "plain" / "summary.json").read_text())
    assert summary["seeds"]["pad_missing"] is False and summary["seeds"]["num_seeds_averaged"] == 1
    assert [r["run_id"] for r in summary["seeds"]["left_out"]] == ["sklearn-digits_00000002-aaaa-bbbb-cccc-dddddddddddd"]
    assert "seed 2 incomplete: 1 of 2 competitions have a 2nd run; left out: sklearn-digits:" in plain.output
    assert "seed 2 incomplete" in (tmp_path / "plain" / "summary.html").read_text()

    padded = CliRunner().invoke(main, [*args, "-o", str(tmp_path / "padded"), "--pad-missing"])
    summary = json.loads((tmp_path / "padded" / "summary.json").read_text())
    assert summary["seeds"]["pad_missing"] is True and summary["seeds"]["num_seeds_averaged"] == 2
    assert summary["seeds"]["padded"] == [{"competition_id": "no-such-competition", "runs": 1, "seeds": [2, 2],
                                           "entries": 1}]
    assert summary["seeds"]["left_out"] == []
    assert "padded as failed: no-such-competition (1 run(s)) in seed 2" in padded.output
