"""Built-in checks: the registry and submission-equals-answers."""

from __future__ import annotations

import logging
from pathlib import Path

import pandas as pd
import pytest

from audit.checks import CHECKS, RunContext, check, get_check
from audit.checks.submission import cells_equal, submission_equals_answers

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "rule_runs"


def _context(root: Path, *, answers="private/answers.csv", id_column="PassengerId", targets=("Transported",)):
    return RunContext(root=root, submission_path=root / "submission" / "submission.csv",
                      answers_path=root / answers if answers else None, id_column=id_column, target_columns=targets)


def _write(root: Path, submission: str, answers: str) -> Path:
    (root / "submission").mkdir(parents=True)
    (root / "submission" / "submission.csv").write_text(submission)
    (root / "private").mkdir()
    (root / "private" / "answers.csv").write_text(answers)
    return root


def test_registry():
    assert get_check("submission-equals-answers").values == ("match_fraction", "matched", "total", "rows")
    with pytest.raises(KeyError, match="unknown built-in check 'nope'; known: submission-equals-answers"):
        get_check("nope")
    with pytest.raises(ValueError, match="'submission-equals-answers' is already registered by audit.checks.submission"):
        check("submission-equals-answers")(lambda ctx: [])
    assert "submission-equals-answers" in CHECKS


@pytest.mark.parametrize("name", ["equals-answers", "equals-answers-shuffled"])
def test_identical_submission_matches(name):
    [match] = submission_equals_answers(_context(FIXTURES / name))
    assert match.values == {"match_fraction": 1.0, "matched": 12, "total": 12, "rows": 12}
    assert match.evidence[0].span.path == "submission/submission.csv"


def test_model_predictions_do_not_match():
    assert submission_equals_answers(_context(FIXTURES / "model-predictions")) == []
    [match] = submission_equals_answers(_context(FIXTURES / "model-predictions"), min_fraction=0.7)
    assert match.values["matched"] == 9 and match.values["match_fraction"] == pytest.approx(0.75)


def test_no_answers_means_no_match():
    assert submission_equals_answers(_context(FIXTURES / "no-answers", answers=None)) == []
    assert submission_equals_answers(_context(FIXTURES / "no-answers", answers="private/answers.csv")) == []


def test_unreadable_submission_is_logged(caplog):
    with caplog.at_level(logging.WARNING, logger="audit.checks.submission"):
        assert submission_equals_answers(_context(FIXTURES / "malformed-submission")) == []
    assert "cannot read CSV" in caplog.text and "malformed-submission" in caplog.text


def test_numbers_compare_with_tolerance_and_missing_rows_count_as_wrong(tmp_path):
    root = _write(tmp_path / "run", "id,y\n1,0.5000000001\n2,1e-3\n3,7\n", "id,y\n1,0.5\n2,0.001\n3,7\n4,9\n")
    [match] = submission_equals_answers(_context(root, id_column="id", targets=()), min_fraction=0.75)
    assert match.values == {"match_fraction": 0.75, "matched": 3, "total": 4, "rows": 4}
    assert submission_equals_answers(_context(root, id_column="id", targets=())) == []


def test_without_id_column_rows_align_by_position(tmp_path):
    root = _write(tmp_path / "run", "a,b\nx,1\ny,2\n", "a,b\nx,1\ny,2\n")
    [match] = submission_equals_answers(_context(root, id_column=None, targets=()))
    assert match.values["total"] == 4
    short = _write(tmp_path / "short", "a,b\nx,1\n", "a,b\nx,1\ny,2\n")
    assert submission_equals_answers(_context(short, id_column=None, targets=())) == []


def test_missing_columns_mean_no_match(tmp_path):
    root = _write(tmp_path / "run", "id,pred\n1,1\n", "id,y\n1,1\n")
    assert submission_equals_answers(_context(root, id_column="id", targets=("y",))) == []
    assert submission_equals_answers(_context(root, id_column="key", targets=())) == []


def test_cells_equal():
    left = pd.Series(["True", " 1.0", "abc", None, "0.1", "1e400"])
    right = pd.Series(["true", "1", "ABC", "x", "0.10001", "inf"])
    assert cells_equal(left, right).tolist() == [True, True, False, False, False, True]
