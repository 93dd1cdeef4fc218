"""The submission JSONL reader shared by ``mleaudit grade`` and ``mleaudit audit batch``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mleaudit.audit.batch import BatchSourceError, discover_runs
from mleaudit.grading.batch import SubmissionListError, read_submission_list
from mleaudit.grading.submission_list import listed_path, read_listed_records, resolve_listed_path


def _write(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_comments_and_blank_lines_are_skipped_and_line_numbers_kept(tmp_path: Path) -> None:
    jsonl = _write(tmp_path / "s.jsonl", [
        "# made by make_submission.py",
        "",
        json.dumps({"competition_id": "spaceship-titanic", "submission_path": "a.csv"}),
        "// another comment",
        json.dumps({"competition_id": "leaf-classification", "submission_path": None}),
    ])
    records, problems = read_listed_records(jsonl)
    assert problems == []
    assert [(r.competition_id, r.line) for r in records] == [("spaceship-titanic", 3), ("leaf-classification", 5)]
    assert records[0].listed_at == f"{jsonl}:3"


def test_every_malformed_line_is_named_in_file_order(tmp_path: Path) -> None:
    jsonl = _write(tmp_path / "s.jsonl", [
        json.dumps({"competition_id": "x", "submission_path": 7}),
        "{not json",
        json.dumps(["a list"]),
        json.dumps({"submission_path": "a.csv"}),
    ])
    with pytest.raises(SubmissionListError) as grading_error:
        read_submission_list(jsonl)
    lines = str(grading_error.value).splitlines()
    assert [line.split(":")[1] for line in lines] == ["1", "2", "3", "4"]
    assert "'submission_path' must be a path string or null" in lines[0]
    assert "not JSON" in lines[1] and "expected a JSON object" in lines[2] and "'competition_id'" in lines[3]
    with pytest.raises(BatchSourceError) as audit_error:
        discover_runs(jsonl)
    parts = str(audit_error.value).split("; ")
    assert [part.split(":")[1] for part in parts] == ["1", "2", "3", "4"]


def test_relative_paths_prefer_the_jsonl_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "group").mkdir()
    (tmp_path / "group" / "a.csv").write_text("id\n", encoding="utf-8")
    (tmp_path / "b.csv").write_text("id\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    base = tmp_path / "group"
    assert resolve_listed_path("a.csv", base) == base / "a.csv"
    assert resolve_listed_path("b.csv", base) == Path("b.csv")  # only beside the current directory
    assert resolve_listed_path("missing.csv", base) == base / "missing.csv"
    assert resolve_listed_path(str(tmp_path / "b.csv"), base) == tmp_path / "b.csv"
    jsonl = _write(base / "s.jsonl", [json.dumps({"competition_id": "c", "submission_path": None})])
    (record,), _ = read_listed_records(jsonl)
    assert listed_path(record, "submission_path", base) == (None, None)
    assert listed_path(record, "logs_path", base) == (None, None)


@pytest.mark.parametrize("listed", ["../outside/submission.csv", "/etc/passwd", "link/submission.csv"])
def test_graded_submission_paths_stay_beside_the_list(tmp_path, listed):
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "submission.csv").write_text("id,y\n1,0\n")
    folder = tmp_path / "lists"
    folder.mkdir()
    (folder / "link").symlink_to(tmp_path / "outside")
    jsonl = folder / "runs.jsonl"
    jsonl.write_text(json.dumps({"competition_id": "c", "submission_path": listed}) + "\n")
    with pytest.raises(SubmissionListError, match="resolves outside the folder of the submission list"):
        read_submission_list(jsonl)
