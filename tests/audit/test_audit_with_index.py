"""``mleaudit audit --index`` and ``audit batch --index``: a corpus index in place of a folder of kernels.

A lab audits many runs against one large corpus: the index is read, not the corpus re-read and
re-fingerprinted for every run. What the index flags must be what the folder flags.
"""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from mleaudit.audit.cli import main
from mleaudit.audit.similarity.index import build_corpus_index

from .invented_kernels import HEAT_KERNEL, LANTERN_KERNEL, audit_against

UNRELATED = '''import pandas as pd

frame = pd.read_csv("./input/train.csv")
print(frame.describe())
frame.to_csv("submission.csv", index=False)
'''
KERNELS = {"lantern.py": LANTERN_KERNEL, "heat.py": HEAT_KERNEL, "other.py": UNRELATED}
AGENT = "import os\n\n" + LANTERN_KERNEL + "\nprint(train['boost'].mean())\n"


def _flagged(report: dict) -> list[tuple[str, str]]:
    return sorted((p["agent_path"], p["reference_path"]) for p in report["similarity"]["pairs"] if p["flagged"])


def test_the_index_flags_what_the_folder_flags(tmp_path: Path) -> None:
    (tmp_path / "folder").mkdir()
    (tmp_path / "index").mkdir()
    folder = audit_against(tmp_path / "folder", KERNELS, {"code/solution.py": AGENT})
    indexed = audit_against(tmp_path / "index", KERNELS, {"code/solution.py": AGENT}, index=True)
    assert _flagged(folder) == _flagged(indexed) == [("code/solution.py", "lantern.py")]
    assert indexed["similarity"]["index"] is True
    assert indexed["similarity"]["corpus"].endswith("kernels.index")
    assert indexed["similarity"]["reference_count"] == 3
    assert {f["rule_id"] for f in folder["findings"]} == {f["rule_id"] for f in indexed["findings"]}
    assert indexed["verdict"]["kind"] == folder["verdict"]["kind"] != "clean"


def test_a_clean_run_through_the_index_is_clean(tmp_path: Path) -> None:
    report = audit_against(tmp_path, KERNELS, {"code/solution.py": "x = 1\nprint(x + 2)\n"}, index=True)
    assert _flagged(report) == [] and report["verdict"]["kind"] == "clean"


def _run(tmp_path: Path, name: str = "run") -> Path:
    run = tmp_path / name / "code"
    run.mkdir(parents=True)
    (run / "solution.py").write_text(AGENT, encoding="utf-8")
    return run.parent


def test_index_with_corpus_or_without_similarity_is_refused(tmp_path: Path) -> None:
    run = _run(tmp_path)
    (tmp_path / "k").mkdir()
    (tmp_path / "k" / "lantern.py").write_text(LANTERN_KERNEL, encoding="utf-8")
    build_corpus_index([tmp_path / "k"], tmp_path / "k.index")
    both = CliRunner().invoke(main, ["audit", str(run), "--index", str(tmp_path / "k.index"), "--corpus",
                                     str(tmp_path / "k"), "--no-grade"])
    assert both.exit_code == 2 and "not both" in both.output
    off = CliRunner().invoke(main, ["audit", str(run), "--index", str(tmp_path / "k.index"), "--no-similarity",
                                    "--no-grade"])
    assert off.exit_code == 2 and "--no-similarity" in off.output


def test_an_unreadable_index_is_an_error_naming_the_file_never_a_run_without_similarity(tmp_path: Path) -> None:
    run = _run(tmp_path)
    missing = CliRunner().invoke(main, ["audit", str(run), "--index", str(tmp_path / "none.index"), "--no-grade"])
    assert missing.exit_code == 2 and "none.index" in missing.output
    (tmp_path / "fake.index").write_text("not an index", encoding="utf-8")
    fake = CliRunner().invoke(main, ["audit", "batch", str(tmp_path), "--index", str(tmp_path / "fake.index"),
                                     "--no-grade", "-o", str(tmp_path / "out")])
    assert fake.exit_code == 2 and "fake.index" in fake.output and not (tmp_path / "out" / "summary.json").exists()


def test_a_batch_compares_every_run_with_the_index(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    for name in ("a", "b"):
        _run(runs, name)
    (tmp_path / "k").mkdir()
    for name, text in KERNELS.items():
        (tmp_path / "k" / name).write_text(text, encoding="utf-8")
    build_corpus_index([tmp_path / "k"], tmp_path / "k.index")
    out = tmp_path / "out"
    result = CliRunner().invoke(main, ["audit", "batch", str(runs), "-j", "1", "--index", str(tmp_path / "k.index"),
                                       "--no-grade", "-o", str(out)])
    assert result.exit_code in (0, 1), result.output
    reports = [json.loads(p.read_text(encoding="utf-8")) for p in sorted((out / "runs").glob("*.json"))]
    assert len(reports) == 2
    assert all(_flagged(r) == [("code/solution.py", "lantern.py")] and r["similarity"]["index"] for r in reports)


def _index_of(tmp_path: Path, kernels: dict[str, str], name: str = "k", **build) -> Path:
    folder = tmp_path / name
    folder.mkdir()
    for file, text in kernels.items():
        (folder / file).write_text(text, encoding="utf-8")
    build_corpus_index([folder], tmp_path / f"{name}.index", **build)
    return tmp_path / f"{name}.index"


def _damaged(index: Path, sql: str) -> Path:
    import shutil
    import sqlite3

    copy = index.with_name(f"damaged-{index.name}")
    shutil.copy(index, copy)
    with sqlite3.connect(copy) as db:
        db.execute(sql)
    return copy


def test_an_index_that_would_compare_nothing_is_refused_never_a_clean_verdict(tmp_path: Path) -> None:
    run = _run(tmp_path)
    index = _index_of(tmp_path, KERNELS)
    (tmp_path / "empty").mkdir()
    build_corpus_index([tmp_path / "empty"], tmp_path / "empty.index")
    for bad, why in [(tmp_path / "empty.index", "no reference"),
                     (_damaged(index, "DELETE FROM postings"), "no postings")]:
        result = CliRunner().invoke(main, ["audit", str(run), "--index", str(bad), "--no-grade"])
        assert result.exit_code == 2 and why in result.output and str(bad) in result.output, result.output
    no_profiles = _damaged(index, "DELETE FROM profiles")
    result = CliRunner().invoke(main, ["audit", "batch", str(tmp_path), "--index", str(no_profiles), "--no-grade",
                                       "-o", str(tmp_path / "out")])
    assert result.exit_code == 2 and "no detector profiles" in result.output


def test_the_boilerplate_an_index_ignores_is_named_in_the_report(tmp_path: Path) -> None:
    (tmp_path / "starter").mkdir()
    (tmp_path / "starter" / "starter.py").write_text(UNRELATED, encoding="utf-8")
    index = _index_of(tmp_path, KERNELS, boilerplate=[tmp_path / "starter"])
    out = tmp_path / "report.json"
    result = CliRunner().invoke(main, ["audit", str(_run(tmp_path)), "--index", str(index), "--no-grade",
                                       "--format", "json", "-o", str(out)])
    assert result.exit_code in (0, 1), result.output
    assert [Path(p).name for p in json.loads(out.read_text(encoding="utf-8"))["similarity"]["boilerplate"]] == ["starter.py"]
