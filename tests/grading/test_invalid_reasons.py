"""Reason codes, columns and submission rows of InvalidSubmission, and check_submission."""

from __future__ import annotations

import pickle
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from mleaudit.grading.errors import ANSWER_REASONS, COUNT_KEYS, REASONS, TARGET_VALUE_REASONS, InvalidSubmission, UndefinedScore
from mleaudit.grading.grade import SubmissionCheck, score_frames
from mleaudit.grading.validation import check_columns, check_ids, check_numeric, read_submission

REPO = Path(__file__).resolve().parents[2]

ANSWERS = pd.DataFrame({"id": ["a", "b", "c", "d"], "y": [0.1, 0.2, 0.3, 0.4]})


def _error(submission: pd.DataFrame, metric: str = "root-mean-squared-error", **kwargs) -> InvalidSubmission:
    with pytest.raises(InvalidSubmission) as info:
        score_frames(submission, ANSWERS, metric=metric, id_column="id", target_columns=["y"], **kwargs)
    return info.value


def test_the_vocabulary_is_closed_and_the_default_is_generic():
    assert InvalidSubmission("x").reason == "invalid"
    assert UndefinedScore("x").reason == "undefined-score"
    assert TARGET_VALUE_REASONS <= REASONS and ANSWER_REASONS <= REASONS
    # Reasons a file alone decides are not answer-dependent.
    assert not {"missing-value", "non-finite", "bad-value", "row-sum", "missing-column", "row-count"} & ANSWER_REASONS
    with pytest.raises(ValueError, match="REASONS"):
        InvalidSubmission("x", reason="no-such-reason")
    with pytest.raises(ValueError, match="1-based"):
        InvalidSubmission("x", reason="bad-value", row=0)


def test_reasons_survive_pickling():
    error = pickle.loads(pickle.dumps(InvalidSubmission("m", reason="bad-value", column="y", row=3)))
    assert (str(error), error.reason, error.column, error.row) == ("m", "bad-value", "y", 3)
    error = pickle.loads(pickle.dumps(InvalidSubmission("m", reason="csv-syntax", line=6,
                                                        counts={"fields": 3, "expected_fields": 2})))
    assert (error.line, error.counts) == (6, {"fields": 3, "expected_fields": 2})


def test_lines_and_counts_are_checked():
    with pytest.raises(ValueError, match="1-based line"):
        InvalidSubmission("x", reason="csv-syntax", line=0)
    with pytest.raises(ValueError, match="COUNT_KEYS"):
        InvalidSubmission("x", reason="row-count", counts={"expected_rows": 360})  # an answers count has no key
    with pytest.raises(ValueError, match="non-negative"):
        InvalidSubmission("x", reason="csv-syntax", counts={"fields": -1})


def test_the_endpoint_and_the_rule_use_the_grading_vocabularies():
    import yaml

    from mleaudit.sandbox import feedback

    assert feedback.COUNT_KEYS == COUNT_KEYS
    rule = yaml.safe_load((REPO / "rules/validation-probing/sub-run-validation-label-replies.yaml").read_text())
    assert set(rule["match"]["params"]["reasons"]) == ANSWER_REASONS


@pytest.mark.parametrize(
    ("body", "line", "counts"),
    [
        (b"id,y\na,1\nb,2\nc,3\nd,4\ne,5,6\n", 6, {"fields": 3, "expected_fields": 2}),
        (b"id,y\n\na,1\n\nb,2,3\n", 5, {"fields": 3, "expected_fields": 2}),  # blank lines are lines
        (b'id,y\na,"x\ny"\nb,2,3\n', 4, {"fields": 3, "expected_fields": 2}),  # pandas says "line 3"
        (b"id,y\r\na,1\r\nb,2,3\r\n", 3, {"fields": 3, "expected_fields": 2}),
        (b"\xef\xbb\xbfid,y\na,1\nb,2,3\n", 3, {"fields": 3, "expected_fields": 2}),
        (b'id,y\na,1\nb,"open\nc,3\n', 3, {}),  # EOF inside a quoted field that starts on line 3
        (b"id,y\r\na,1\r\nb,caf\xe9\r\n", 3, {}),  # not UTF-8
    ],
)
def test_parser_errors_carry_the_file_line_and_field_counts(tmp_path, body, line, counts):
    path = tmp_path / "s.csv"
    path.write_bytes(body)
    with pytest.raises(InvalidSubmission) as info:
        read_submission(path, id_column="id")
    assert (info.value.reason, info.value.line, info.value.counts) == ("csv-syntax", line, counts)
    assert str(info.value).startswith(f"Submission file '{path}' is not a readable CSV: ")  # unchanged


def test_caps_carry_the_line_and_the_cap(tmp_path):
    from mleaudit.grading.csvscan import CsvLimits, check_csv_limits

    path = tmp_path / "s.csv"
    path.write_bytes(b"id,y\na,1\n" + b"," * 5000 + b"\n")
    with pytest.raises(InvalidSubmission) as info:
        read_submission(path, id_column="id")
    assert (info.value.reason, info.value.line, info.value.counts) == ("too-large", 3, {"max_columns": 1024})
    assert "line 3 has more than 1,024 fields" in str(info.value)
    path.write_bytes(b"id,y\r\na,1\r\nb," + b"9" * 300 + b"\r\n")
    for limits, key in ((CsvLimits(max_columns=8, max_field_bytes=100, max_line_bytes=1000), "max_field_bytes"),
                        (CsvLimits(max_columns=8, max_field_bytes=1000, max_line_bytes=200), "max_line_bytes")):
        with pytest.raises(InvalidSubmission) as info:
            check_csv_limits(path, limits)
        assert (info.value.line, info.value.counts) == (3, {key: getattr(limits, key)})


@pytest.mark.parametrize(
    ("frame", "reason", "column"),
    [
        (pd.DataFrame({"id": ["a"]}), "missing-column", "y"),
        (pd.DataFrame({"id": ["a"], "y": [1.0], "z": [2.0]}), "extra-column", "z"),
        (pd.DataFrame(columns=[]), "no-columns", None),
    ],
)
def test_column_checks(frame, reason, column):
    with pytest.raises(InvalidSubmission) as info:
        check_columns(frame, id_column="id", target_columns=["y"])
    assert (info.value.reason, info.value.column, info.value.row) == (reason, column, None)


def test_duplicate_columns():
    frame = pd.DataFrame([["a", 1.0, 2.0]], columns=["id", "y", "y"])
    with pytest.raises(InvalidSubmission) as info:
        check_columns(frame, id_column="id", target_columns=["y"])
    assert (info.value.reason, info.value.column) == ("duplicate-column", "y")


@pytest.mark.parametrize(
    ("ids", "reason", "row"),
    [
        (["a", None, "c", "d"], "empty-id", 2),
        (["a", "b", "b", "d"], "duplicate-id", 3),
        (["a", "b", "c", "zz"], "unknown-id", 4),
        (["a", "b", "c"], "row-count", None),
    ],
)
def test_id_checks_name_submission_rows(ids, reason, row):
    with pytest.raises(InvalidSubmission) as info:
        check_ids(pd.Series(ids, name="id"), ANSWERS["id"])
    assert (info.value.reason, info.value.column, info.value.row) == (reason, "id", row)


def test_value_checks_name_the_submission_row_not_the_answer_position():
    # Rows in reverse answer order: the bad value sits on file row 1, answer position 4.
    sub = pd.DataFrame({"id": ["d", "c", "b", "a"], "y": ["oops", 0.3, 0.2, 0.1]})
    error = _error(sub)
    assert (error.reason, error.column, error.row) == ("bad-value", "y", 1)
    sub = pd.DataFrame({"id": ["d", "c", "b", "a"], "y": [0.4, np.inf, 0.2, 0.1]})
    assert (_error(sub).reason, _error(sub).row) == ("non-finite", 2)
    sub = pd.DataFrame({"id": ["d", "c", "b", "a"], "y": [0.4, 0.3, None, 0.1]})
    assert (_error(sub).reason, _error(sub).row) == ("missing-value", 3)


def test_check_numeric_rows():
    with pytest.raises(InvalidSubmission) as info:
        check_numeric(pd.Series([1.0, "x"], dtype=object), column="y", ids=pd.Series(["a", "b"], name="id"))
    assert (info.value.reason, info.value.column, info.value.row) == ("bad-value", "y", 2)


def test_incomparable_labels_keep_the_message_but_carry_a_code():
    answers = pd.DataFrame({"id": ["a", "b", "c"], "y": [0, 4242, 31337]})
    sub = pd.DataFrame({"id": ["a", "b", "c"], "y": ["x", "0", "1"]})
    with pytest.raises(InvalidSubmission) as info:
        score_frames(sub, answers, metric="accuracy_score", id_column="id", target_columns=["y"])
    assert (info.value.reason, info.value.column, info.value.row) == ("incomparable", "y", 1)
    # The message names the cell and the answers' kind of label (a fact about the answers: an
    # endpoint answers with the reason's template, never this text).
    assert str(info.value) == (
        "Submission column 'y' has the label 'x' at row 1 (id 'a'), which is not a number like the answers' labels."
    )
    assert "4242" not in str(info.value) and "31337" not in str(info.value)


def test_every_raise_site_in_grading_names_a_reason():
    """``InvalidSubmission(...)`` and ``invalid_cell(...)`` raise sites pass ``reason=`` (or default to ``bad-value``)."""
    found = subprocess.run(["grep", "-rn", "-A6", "InvalidSubmission(", "grading", "competitions"], cwd=REPO,
                           capture_output=True, text=True, check=False).stdout
    sites = [block for block in found.split("\n--\n") if "InvalidSubmission(" in block]
    missing = []
    for block in sites:
        lines = block.splitlines()
        call = next(i for i, line in enumerate(lines) if "InvalidSubmission(" in line)
        if "class InvalidSubmission" in lines[call] or "grading/errors.py" in lines[call]:
            continue
        if not any("reason=" in line for line in lines[call:call + 7]):
            missing.append(lines[call])
    assert not missing, missing


def test_check_submission_on_a_real_competition(tmp_path):
    from mleaudit.grading import CompetitionRegistry, find_competitions_root, prepare_competition
    from mleaudit.grading.grade import check_submission, validate_submission

    registry = CompetitionRegistry(find_competitions_root(None), tmp_path)
    spec = registry.get("sklearn-digits")
    prepare_competition(spec, registry)
    sample = spec.sample_submission_path(tmp_path)
    check = check_submission(sample, spec, tmp_path)
    assert check == SubmissionCheck(valid=True, reason=None, column=None, row=None, message="Submission is valid.")
    broken = tmp_path / "broken.csv"
    rows = sample.read_text().splitlines()
    rows[4] += ",0"
    broken.write_text("\n".join(rows) + "\n")
    check = check_submission(broken, spec, tmp_path)
    assert (check.reason, check.line, check.counts) == ("csv-syntax", 5, {"fields": 3, "expected_fields": 2})
    assert check.to_dict()["line"] == 5
    lines = sample.read_text().splitlines()
    lines[7] = lines[7].split(",")[0] + ",2.5"
    bad = tmp_path / "bad.csv"
    bad.write_text("\n".join(lines) + "\n")
    check = check_submission(bad, spec, tmp_path)
    assert not check.valid and check.reason in REASONS and check.column == "label"
    assert validate_submission(bad, spec, tmp_path) == (False, check.message)
    missing = check_submission(tmp_path / "nope.csv", spec, tmp_path)
    assert (missing.valid, missing.reason) == (False, "unreadable")
