"""Tests for ``mleaudit.audit.run.load_run``: layouts, classification, metadata and untrusted-input guards."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

import tracemalloc

from mleaudit.audit.errors import RunLayoutError
from mleaudit.audit.run import Artifact, ArtifactKind, RunLayout, classify_path, decode_text, detect_layout, load_run
from tests.conftest import shared_path

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "runs_loading"


def _by_path(run):
    return {a.path: a for a in run.artifacts}


def test_mlebench_layout():
    run = load_run(FIXTURES / "mlebench_run")
    assert run.run_id == "spaceship-titanic_0001"
    assert run.competition_id == "spaceship-titanic"
    assert run.agent_id == "react-mle"
    assert run.meta["seed"] == 0
    assert run.root == (FIXTURES / "mlebench_run").resolve()
    assert [a.path for a in run.artifacts] == [
        "code/explore.ipynb",
        "code/fetch.sh",
        "code/notes.bin.dat",
        "code/train.py",
        "logs/agent.log",
        "run.json",
        "run.log",
        "submission/submission.csv",
    ]
    arts = _by_path(run)
    assert (arts["code/train.py"].kind, arts["code/train.py"].language) == (ArtifactKind.CODE, "python")
    assert (arts["code/fetch.sh"].kind, arts["code/fetch.sh"].language) == (ArtifactKind.CODE, "bash")
    assert arts["code/explore.ipynb"].kind is ArtifactKind.NOTEBOOK
    assert arts["logs/agent.log"].kind is ArtifactKind.LOG
    assert arts["run.log"].kind is ArtifactKind.LOG
    assert arts["run.json"].kind is ArtifactKind.OTHER
    # No telling name: read by content (text, so a log), and how is noted.
    assert arts["code/notes.bin.dat"].kind is ArtifactKind.LOG
    assert arts["code/notes.bin.dat"].sniffed == "read as a log by content (text)"
    assert run.submission is arts["submission/submission.csv"]
    assert run.submission.kind is ArtifactKind.SUBMISSION
    data = (FIXTURES / "mlebench_run" / "code" / "train.py").read_bytes()
    assert arts["code/train.py"].size == len(data)
    assert arts["code/train.py"].sha256 == hashlib.sha256(data).hexdigest()
    assert arts["code/train.py"].read_text() == data.decode("utf-8")
    assert run.skipped == ()


def test_bare_folder_without_metadata():
    run = load_run(FIXTURES / "bare_folder")
    assert run.run_id == "bare_folder"
    assert run.competition_id is None and run.agent_id is None
    arts = _by_path(run)
    assert run.submission is not None and run.submission.path == "submission.csv"
    assert arts["phase_model/features.csv"].kind is ArtifactKind.DATA
    assert arts["phase_model/review.json"].kind is ArtifactKind.LOG
    assert arts["phase_eda/eda_output.txt"].kind is ArtifactKind.LOG
    assert arts["plan.md"].kind is ArtifactKind.LOG
    assert arts["phase_eda/eda_code.py"].language == "python"
    assert [a.path for a in run.artifacts] == sorted(a.path for a in run.artifacts)


def test_aide_output_dir_submission_in_working():
    run = load_run(FIXTURES / "aide_output")
    assert run.submission is not None and run.submission.path == "working/submission.csv"
    assert _by_path(run)["journal.json"].kind is ArtifactKind.LOG


def test_single_file_is_a_run_of_one_artifact():
    path = FIXTURES / "mlebench_run" / "code" / "train.py"
    run = load_run(path)
    assert run.run_id == "train"
    assert run.root == path.parent.resolve()
    assert [a.path for a in run.artifacts] == ["train.py"]
    assert run.submission is None


def test_missing_path_names_it(tmp_path):
    missing = tmp_path / "no-such-run"
    with pytest.raises(RunLayoutError, match="run path does not exist: .*no-such-run"):
        load_run(missing)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs named pipes")
def test_special_file_is_not_a_run(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(RunLayoutError, match="neither a directory nor a regular file: .*pipe"):
        load_run(fifo)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs named pipes")
def test_special_file_inside_a_run_is_skipped(tmp_path):
    (tmp_path / "logs").mkdir()
    os.mkfifo(tmp_path / "logs" / "agent.log")
    run = load_run(tmp_path)
    assert run.artifacts == ()
    assert [(s.path, s.reason) for s in run.skipped] == [("logs/agent.log", "not a regular file")]


def _write(root: Path, rel: str, text: str = "x = 1\n") -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_symlinks_are_refused_and_listed(tmp_path):
    outside = tmp_path / "outside"
    _write(outside, "secret.py", "ANSWERS = 1\n")
    run_dir = tmp_path / "run"
    _write(run_dir, "code/train.py")
    (run_dir / "code" / "link.py").symlink_to(outside / "secret.py")
    (run_dir / "private").symlink_to(outside, target_is_directory=True)
    run = load_run(run_dir)
    assert [a.path for a in run.artifacts] == ["code/train.py"]
    assert {(s.path, s.reason) for s in run.skipped} == {
        ("code/link.py", "symbolic link (not followed)"),
        ("private", "symbolic link (not followed)"),
    }


def test_cache_dirs_are_listed_not_entered_and_hidden_ones_are_read(tmp_path):
    _write(tmp_path, "code/train.py")
    _write(tmp_path, ".git/config", "[core]\n")
    _write(tmp_path, "code/__pycache__/train.cpython-311.pyc", "binary")
    _write(tmp_path, ".ipynb_checkpoints/nb-checkpoint.ipynb", "{}")
    _write(tmp_path, ".bash_history", "ls\n")
    run = load_run(tmp_path)
    assert [a.path for a in run.artifacts] == [".bash_history", ".ipynb_checkpoints/nb-checkpoint.ipynb", "code/train.py"]
    assert run.skipped == ()
    assert {n.path for n in run.notes} >= {".git", "code/__pycache__"}


def test_size_cap(tmp_path, monkeypatch):
    monkeypatch.setattr(RunLayout, "MAX_FILE_BYTES", 10)
    _write(tmp_path, "small.py", "x = 1\n")
    _write(tmp_path, "big.py", "y = 1234567\n")
    _write(tmp_path, "logs/run.eval", "z" * 11)
    _write(tmp_path, "logs/big.log", "y" * 11)
    run = load_run(tmp_path)
    # Text logs are read up to MAX_LOG_BYTES whatever MAX_FILE_BYTES says; archives are not.
    assert [a.path for a in run.artifacts] == ["logs/big.log", "small.py"]
    assert [(s.path, s.reason) for s in run.skipped] == [
        ("big.py", "12 bytes is over the 10-byte cap"),
        ("logs/run.eval", "11 bytes is over the 10-byte cap"),
    ]


def test_log_over_the_log_cap_is_read_in_part(tmp_path, monkeypatch):
    monkeypatch.setattr(RunLayout, "MAX_LOG_BYTES", 25)
    text = "".join(f"line {n}\n" for n in range(10))  # 7 bytes a line
    _write(tmp_path, "logs/agent.log", text)
    run = load_run(tmp_path)
    (log,) = run.artifacts
    assert (log.size, log.truncated, log.read_size) == (70, True, 21)
    assert log.read_text() == "line 0\nline 1\nline 2\n"
    assert log.sha256 == hashlib.sha256(text[:21].encode()).hexdigest()
    assert [(s.path, s.reason) for s in run.skipped] == [
        ("logs/agent.log", "log of 70 bytes: only the first 21 bytes (3 lines) were read, the 25-byte log cap; "
                           "the rest was not audited"),
    ]


def test_a_1gb_log_is_never_read_whole(tmp_path):
    # A sparse 1 GiB log: real text first, then a hole the file system does not store.
    path = tmp_path / "logs" / "agent.log"
    path.parent.mkdir()
    line = b"2025-01-01 00:00:00,000 - agent - INFO - step done, loss 0.1234\n"
    with path.open("wb") as handle:
        handle.write(line * ((RunLayout.MAX_LOG_BYTES // len(line)) + 1000))
        handle.truncate(1 << 30)
    tracemalloc.start()
    try:
        run = load_run(tmp_path)
        text = run.artifacts[0].read_text()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert run.artifacts[0].size == 1 << 30 and run.artifacts[0].truncated
    assert len(text) <= RunLayout.MAX_LOG_BYTES and text.endswith("\n") and "\x00" not in text
    assert peak < 4 * RunLayout.MAX_LOG_BYTES
    assert run.skipped[0].reason.startswith(f"log of {1 << 30} bytes: only the first ")


def test_submission_missing_is_noted_not_skipped(tmp_path):
    _write(tmp_path, "code/train.py")
    run = load_run(tmp_path)
    assert run.submission is None and run.skipped == ()
    assert [(n.path, n.reason) for n in run.notes] == [
        ("submission/submission.csv", "no submission file (looked for submission/submission.csv, submission.csv, "
                                      "working/submission.csv): submission checks and grading not run"),
    ]
    # A symlinked submission is skipped (never followed), not "missing".
    (tmp_path / "submission").mkdir()
    (tmp_path / "submission" / "submission.csv").symlink_to(tmp_path / "code" / "train.py")
    run = load_run(tmp_path)
    assert run.notes == () and [s.path for s in run.skipped] == ["submission/submission.csv"]


def test_symlink_leaving_the_run_dir_inside_a_subfolder(tmp_path):
    outside = tmp_path / "private"
    _write(outside, "test.csv", "id,label\n1,0\n")
    run_dir = tmp_path / "run"
    _write(run_dir, "logs/agent.log", "$ ls\n")
    (run_dir / "logs" / "answers.csv").symlink_to(outside / "test.csv")
    (run_dir / "logs" / "up").symlink_to(tmp_path, target_is_directory=True)
    run = load_run(run_dir)
    assert [a.path for a in run.artifacts] == ["logs/agent.log"]
    assert {(s.path, s.reason) for s in run.skipped} == {
        ("logs/answers.csv", "symbolic link (not followed)"),
        ("logs/up", "symbolic link (not followed)"),
    }


@pytest.mark.parametrize(
    ("data", "text", "note"),
    [
        (b"plain", "plain", None),
        (b"\xef\xbb\xbf{\"a\": 1}", '{"a": 1}', None),
        ("h\u00e9".encode("utf-16"), "h\u00e9", "UTF-16 text (decoded as such)"),
        ("caf\u00e9 ".encode() + b"\xff\xfe\xfd \xef\xbf\xbd" + " na\u00efve cr\u00e8me \u00e0".encode(),
         "caf\u00e9 \ufffd\ufffd\ufffd \ufffd na\u00efve cr\u00e8me \u00e0",
         "not valid UTF-8: 3 byte(s) replaced with U+FFFD, the first at byte 6"),
        ("caf\u00e9 cr\u00e8me".encode("cp1252"), "caf\u00e9 cr\u00e8me", "not valid UTF-8: decoded as cp1252 (detected)"),
    ],
    ids=["utf8", "utf8-bom", "utf16", "utf8-damaged", "cp1252"],
)
def test_decode_text(data, text, note):
    assert decode_text(data) == (text, note)


def test_layouts():
    assert load_run(FIXTURES / "mlebench_run").layout == "mlebench"
    assert load_run(FIXTURES / "aide_output").layout == "aide"
    assert load_run(FIXTURES / "bare_folder").layout == "folder"
    assert load_run(FIXTURES / "autokaggle_run").layout == "autokaggle"
    assert load_run(FIXTURES / "mlebench_run" / "code" / "train.py").layout == "file"
    assert detect_layout(set()) == "folder"


def test_read_text_refuses_a_file_swapped_for_a_symlink(tmp_path):
    target = _write(tmp_path, "outside.txt", "secret")
    link = tmp_path / "link.py"
    link.symlink_to(target)
    artifact = Artifact(path="link.py", abs_path=link, kind=ArtifactKind.CODE, language="python", size=6, sha256="")
    with pytest.raises(OSError):
        artifact.read_text()


def test_bad_metadata_is_skipped_not_fatal(tmp_path):
    _write(tmp_path, "metadata.json", "{not json")
    _write(tmp_path, "run.json", '["a list"]')
    run = load_run(tmp_path)
    assert run.run_id == tmp_path.name and run.competition_id is None
    reasons = {s.path: s.reason for s in run.skipped}
    assert reasons["metadata.json"].startswith("run metadata not read: Expecting property name")
    assert reasons["run.json"] == "run metadata is a JSON list, not an object"


def test_run_json_wins_over_metadata_json(tmp_path):
    _write(tmp_path, "metadata.json", '{"competition_id": "titanic", "agent_id": "aide"}')
    _write(tmp_path, "run.json", '{"competition_id": "spaceship-titanic", "run_id": "r1"}')
    run = load_run(tmp_path)
    assert (run.run_id, run.competition_id, run.agent_id) == ("r1", "spaceship-titanic", "aide")


@pytest.mark.parametrize(
    ("path", "kind", "language"),
    [
        ("code/a.py", ArtifactKind.CODE, "python"),
        ("a.sh", ArtifactKind.CODE, "bash"),
        ("nb.ipynb", ArtifactKind.NOTEBOOK, None),
        ("logs/x.jsonl", ArtifactKind.LOG, None),
        ("logs/2025-03-14_task.eval", ArtifactKind.LOG, None),
        ("notes.MD", ArtifactKind.LOG, None),
        ("metadata.json", ArtifactKind.OTHER, None),
        ("logs/metadata.json", ArtifactKind.LOG, None),
        ("preds.parquet", ArtifactKind.DATA, None),
        ("image.png", ArtifactKind.OTHER, None),
    ],
)
def test_classify_path(path, kind, language):
    assert classify_path(path) == (kind, language)


def test_real_autokaggle_runs():
    root = shared_path("runs", "autokaggle")
    for run_dir in sorted(p for p in root.iterdir() if p.is_dir()):
        run = load_run(run_dir)
        assert run.submission is not None and run.submission.path == "submission.csv", run_dir
        kinds = {a.kind for a in run.artifacts}
        assert {ArtifactKind.CODE, ArtifactKind.LOG, ArtifactKind.SUBMISSION} <= kinds, run_dir
        assert run.skipped == () and run.notes == (), run_dir
        assert run.layout == "autokaggle", run_dir


def test_real_violation_cases():
    root = shared_path("violations")
    for case in sorted(root.glob("case-*")):
        run = load_run(case)
        assert run.run_id == case.name
        assert any(a.path.startswith("logs/") for a in run.artifacts), case
        assert run.layout == "mlebench", case
        if (case / "submission" / "submission.csv").exists():
            assert run.submission is not None and run.submission.path == "submission/submission.csv"
            assert run.notes == ()
        else:
            assert run.submission is None
            assert [n.path for n in run.notes] == ["submission/submission.csv"]
