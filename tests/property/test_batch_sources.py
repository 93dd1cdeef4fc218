"""Run-group metadata and submission lists: ``mleaudit.audit.batch.discover_runs``,
``mleaudit.grading.submission_list.read_listed_records`` and ``mleaudit.grading.batch.read_submission_list``.

- ``discover_runs`` raises only ``BatchSourceError`` (an ``AuditError``); every run it does not
  refuse lies inside the run group (or the submission list's folder), whatever the run ids or
  paths say (``..``, absolute paths, NUL bytes, links), and run ids are unique;
- ``read_listed_records`` raises only ``OSError``/``UnicodeDecodeError`` and gives one record or
  one problem per non-blank, non-comment line;
- ``read_submission_list`` raises only ``SubmissionListError`` (a ``GradingError``).
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from mleaudit.audit.batch import BatchSourceError, discover_runs
from mleaudit.audit.errors import AuditError
from mleaudit.grading.batch import SubmissionListError, read_submission_list
from mleaudit.grading.errors import GradingError
from mleaudit.grading.submission_list import read_listed_records
from tests.property import strategies as S
from tests.property.support import budget, call

RUN_IDS = ("sklearn-digits_0a1b2c3d-aaaa-bbbb-cccc-dddddddddddd", "run", "..", ".", "", "/etc", "../outside", "a/../..",
           "a\x00b", "link", "x" * 300, "sub/run", "~", "run", "Run", "a b", "\u202e", "run-2")
run_id = st.one_of(st.sampled_from(RUN_IDS), S.short_text)
LISTED_PATHS = ("r1/submission/submission.csv", "r1/logs/a.log", "r1/code/x.py", "../r1/submission/submission.csv",
                "/etc/passwd", "/tmp", "link/submission/submission.csv", "r1", "", ".", "a\x00b", "r2/code", "~/x",
                "n" * 300, "r1/" + "n" * 300 + "/x.csv", "d/" * 3000)
listed_path = st.one_of(st.sampled_from(LISTED_PATHS), st.sampled_from(LISTED_PATHS), S.short_text, S.json_leaf)

metadata = st.one_of(
    st.builds(lambda runs, extra: {**extra, "runs": runs},
              st.one_of(st.dictionaries(run_id, S.json_value, max_size=4), st.lists(run_id, max_size=4),
                        st.lists(S.json_leaf, max_size=3), S.json_leaf),
              st.dictionaries(S.key, S.json_leaf, max_size=2)),
    S.json_value,
)
#: A line of a submission list: mostly a record with a valid competition id (so that its paths are
#: looked at), else a record with any id, any JSON, a comment or junk.
jsonl_line = st.one_of(
    st.builds(lambda paths: json.dumps({"competition_id": "sklearn-digits", **paths}, ensure_ascii=False),
              st.fixed_dictionaries({}, optional={"submission_path": listed_path, "logs_path": listed_path,
                                                  "code_path": listed_path})),
    st.builds(lambda record: json.dumps(record, ensure_ascii=False),
              S._obj(competition_id=st.one_of(st.sampled_from(["sklearn-digits", "", "x"]), S.json_leaf),
                     submission_path=listed_path, logs_path=listed_path, code_path=listed_path)),
    S.json_text(),
    st.sampled_from(["", "# comment", "// comment", "   ", "\u2028"]),
    S.short_text,
)


def _layout(root: Path, outside: Path) -> None:
    """Run folders inside ``root``, one outside, and a link from inside to outside."""
    for run in ("r1", "run", "sklearn-digits_0a1b2c3d-aaaa-bbbb-cccc-dddddddddddd"):
        for part in ("submission", "logs", "code"):
            (root / run / part).mkdir(parents=True, exist_ok=True)
        (root / run / "submission" / "submission.csv").write_text("id,label\n")
    (outside / "submission").mkdir(parents=True, exist_ok=True)
    (root / "link").symlink_to(outside, target_is_directory=True)


def _inside(path: Path, folder: Path, *, itself: bool = False) -> bool:
    """Whether ``path`` resolves inside ``folder`` (or to ``folder`` itself when ``itself``)."""
    real, base = Path(os.path.realpath(path)), Path(os.path.realpath(folder))
    return (itself or real != base) and real.is_relative_to(base)


@budget(80)
@given(st.one_of(S.json_text(metadata).map(lambda t: t.encode("utf-8", "surrogatepass")), st.binary(max_size=32)))
def test_discover_runs_of_a_run_group(data):
    with tempfile.TemporaryDirectory() as folder:
        group, outside = Path(folder) / "group", Path(folder) / "outside"
        group.mkdir()
        _layout(group, outside)
        (group / "metadata.json").write_bytes(data)
        entries, error = call(discover_runs, group, allowed=(BatchSourceError,), what="discover_runs")
        if error is not None:
            assert isinstance(error, AuditError)
            return
        ids = [entry.run_id for entry in entries]
        assert len(ids) == len(set(ids)), f"run ids repeat: {ids}"
        for entry in entries:
            if entry.refused is None:
                assert _inside(entry.run_dir, group), f"run {entry.run_id!r} at {entry.run_dir} is not inside the group"


@budget(100)
@given(st.lists(jsonl_line, max_size=5), st.sampled_from(["\n", "\r\n"]))
def test_discover_runs_of_a_submission_list(lines, newline):
    with tempfile.TemporaryDirectory() as folder:
        base, outside = Path(folder) / "base", Path(folder) / "outside"
        base.mkdir()
        _layout(base, outside)
        source = base / "runs.jsonl"
        source.write_bytes(newline.join(lines).encode("utf-8", "surrogatepass"))
        entries, error = call(discover_runs, source, allowed=(BatchSourceError,), what="discover_runs")
        if error is not None:
            assert isinstance(error, AuditError)
            return
        ids = [entry.run_id for entry in entries]
        assert len(ids) == len(set(ids)), f"run ids repeat: {ids}"
        for entry in entries:
            if entry.refused is None:
                # The list's own folder may be the run folder (submission/, logs/ beside the list).
                assert _inside(entry.run_dir, base, itself=True), f"run {entry.run_id!r} at {entry.run_dir} is outside {base}"


@budget(100)
@given(st.lists(jsonl_line, max_size=5))
def test_read_listed_records_and_read_submission_list(lines):
    with tempfile.TemporaryDirectory() as folder:
        base, outside = Path(folder) / "base", Path(folder) / "outside"
        base.mkdir()
        _layout(base, outside)
        source = base / "runs.jsonl"
        source.write_bytes("\n".join(lines).encode("utf-8", "surrogatepass"))
        result, error = call(read_listed_records, source, allowed=(OSError, UnicodeDecodeError), what="read_listed_records")
        if error is None:
            records, problems = result
            counted = [line for line in source.read_text(encoding="utf-8").splitlines()
                       if line.strip() and not line.strip().startswith(("#", "//"))]
            assert len(records) + len(problems) == len(counted), "a line was neither read nor reported"
        entries, error = call(read_submission_list, source, allowed=(SubmissionListError,), what="read_submission_list")
        if error is not None:
            assert isinstance(error, GradingError)
            return
        assert entries
