"""Submission validation: every failure has a precise message, asserted exactly."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from grading.errors import ConfigError, InvalidSubmission
from grading.metrics import TargetKind
from grading.validation import check_submission, read_answers, read_submission

ANSWERS_CSV = "PassengerId,Transported\n0001_01,True\n0002_01,False\n0003_01,True\n0004_01,False\n"
NUMERIC_ANSWERS_CSV = "id,target\n1,0.5\n2,1.5\n3,2.5\n"


def write(tmp_path: Path, text: str, name: str = "submission.csv") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def answers(tmp_path: Path) -> pd.DataFrame:
    path = write(tmp_path, ANSWERS_CSV, "answers.csv")
    return read_answers(path, id_column="PassengerId", target_columns=["Transported"])


@pytest.fixture
def numeric_answers(tmp_path: Path) -> pd.DataFrame:
    path = write(tmp_path, NUMERIC_ANSWERS_CSV, "answers.csv")
    return read_answers(path, id_column="id", target_columns=["target"])


def check(tmp_path: Path, text: str, answers: pd.DataFrame, **kwargs) -> tuple[np.ndarray, np.ndarray]:
    id_column = kwargs.pop("id_column", "PassengerId")
    targets = kwargs.pop("target_columns", ["Transported"])
    submission = read_submission(write(tmp_path, text), id_column=id_column)
    return check_submission(submission, answers, id_column=id_column, target_columns=targets, **kwargs)


def message(excinfo: pytest.ExceptionInfo) -> str:
    return str(excinfo.value)


def test_valid_submission_is_aligned_to_answer_order(tmp_path: Path, answers: pd.DataFrame) -> None:
    text = "Transported,PassengerId\nFalse,0004_01\nTrue,0001_01\nTrue,0003_01\nTrue,0002_01\n"
    y_true, y_pred = check(tmp_path, text, answers)
    assert y_true.tolist() == [True, False, True, False]
    assert y_pred.tolist() == [True, True, True, False]


def test_empty_file(tmp_path: Path, answers: pd.DataFrame) -> None:
    path = write(tmp_path, "")
    with pytest.raises(InvalidSubmission) as excinfo:
        read_submission(path)
    assert message(excinfo) == f"Submission file '{path}' is empty."


def test_whitespace_only_file_is_empty(tmp_path: Path) -> None:
    path = write(tmp_path, "\n  \n")
    with pytest.raises(InvalidSubmission) as excinfo:
        read_submission(path)
    assert message(excinfo) == f"Submission file '{path}' is empty."


def test_not_a_csv(tmp_path: Path) -> None:
    path = write(tmp_path, "a,b\n1,2\n3,4,5\n")
    with pytest.raises(InvalidSubmission) as excinfo:
        read_submission(path)
    assert message(excinfo) == (
        f"Submission file '{path}' is not a readable CSV: Error tokenizing data. C error: Expected 2 fields in line 3, saw 3"
    )


def test_binary_file_is_not_a_csv(tmp_path: Path) -> None:
    path = tmp_path / "submission.csv"
    path.write_bytes(b"PK\x03\x04\x00\xff\xfe\x00\x12")
    with pytest.raises(InvalidSubmission) as excinfo:
        read_submission(path)
    assert message(excinfo) == (
        f"Submission file '{path}' is not a readable CSV: "
        "'utf-8' codec can't decode byte 0xff in position 5: invalid start byte"
    )


def test_missing_column(tmp_path: Path, answers: pd.DataFrame) -> None:
    with pytest.raises(InvalidSubmission) as excinfo:
        check(tmp_path, "PassengerId\n0001_01\n", answers)
    assert message(excinfo) == (
        "Submission is missing column 'Transported' (expected columns: 'PassengerId', 'Transported')."
    )


def test_missing_columns_plural(tmp_path: Path, answers: pd.DataFrame) -> None:
    with pytest.raises(InvalidSubmission) as excinfo:
        check(tmp_path, "id,label\n1,True\n", answers)
    assert message(excinfo) == (
        "Submission is missing columns 'PassengerId', 'Transported' (expected columns: 'PassengerId', 'Transported')."
    )


def test_extra_column(tmp_path: Path, answers: pd.DataFrame) -> None:
    text = ",PassengerId,Transported\n0,0001_01,True\n1,0002_01,False\n2,0003_01,True\n3,0004_01,False\n"
    with pytest.raises(InvalidSubmission) as excinfo:
        check(tmp_path, text, answers)
    assert message(excinfo) == (
        "Submission has unexpected column 'Unnamed: 0' (expected columns: 'PassengerId', 'Transported')."
    )


def test_duplicate_id(tmp_path: Path, answers: pd.DataFrame) -> None:
    text = "PassengerId,Transported\n0001_01,True\n0002_01,False\n0001_01,True\n0004_01,False\n"
    with pytest.raises(InvalidSubmission) as excinfo:
        check(tmp_path, text, answers)
    assert message(excinfo) == "Submission repeats id '0001_01' at rows 1 and 3."


def test_unknown_id_names_id_and_row(tmp_path: Path, answers: pd.DataFrame) -> None:
    text = "PassengerId,Transported\n0001_01,True\n0002_01,False\n9999_01,True\n0004_01,False\n"
    with pytest.raises(InvalidSubmission) as excinfo:
        check(tmp_path, text, answers)
    assert message(excinfo) == (
        "Submission has id '9999_01' at row 3, which is not a test id (1 of its 4 rows have ids outside the 4 test ids)."
    )


def test_ids_are_compared_as_text(tmp_path: Path, answers: pd.DataFrame) -> None:
    # "1_01" is not "0001_01": leading zeros are part of the id.
    text = "PassengerId,Transported\n1_01,True\n0002_01,False\n0003_01,True\n0004_01,False\n"
    with pytest.raises(InvalidSubmission) as excinfo:
        check(tmp_path, text, answers)
    assert message(excinfo) == (
        "Submission has id '1_01' at row 1, which is not a test id (1 of its 4 rows have ids outside the 4 test ids)."
    )


def test_empty_id(tmp_path: Path, answers: pd.DataFrame) -> None:
    text = "PassengerId,Transported\n0001_01,True\n,False\n0003_01,True\n0004_01,False\n"
    with pytest.raises(InvalidSubmission) as excinfo:
        check(tmp_path, text, answers)
    assert message(excinfo) == "Submission has an empty id at row 2."


def test_too_few_rows_names_first_missing_id(tmp_path: Path, answers: pd.DataFrame) -> None:
    text = "PassengerId,Transported\n0001_01,True\n0003_01,True\n0004_01,False\n"
    with pytest.raises(InvalidSubmission) as excinfo:
        check(tmp_path, text, answers)
    assert message(excinfo) == (
        "Submission has 3 rows; expected 4 (one per test id). First missing id: '0002_01' (row 2 of the test set)."
    )


def test_header_only(tmp_path: Path, answers: pd.DataFrame) -> None:
    with pytest.raises(InvalidSubmission) as excinfo:
        check(tmp_path, "PassengerId,Transported\n", answers)
    assert message(excinfo) == (
        "Submission has 0 rows; expected 4 (one per test id). First missing id: '0001_01' (row 1 of the test set)."
    )


def test_too_many_rows_is_a_repeat_or_unknown_id(tmp_path: Path, answers: pd.DataFrame) -> None:
    text = ANSWERS_CSV + "0005_01,True\n"
    with pytest.raises(InvalidSubmission) as excinfo:
        check(tmp_path, text, answers)
    assert message(excinfo) == (
        "Submission has id '0005_01' at row 5, which is not a test id (1 of its 5 rows have ids outside the 4 test ids)."
    )


def test_missing_label(tmp_path: Path, answers: pd.DataFrame) -> None:
    text = "PassengerId,Transported\n0001_01,True\n0002_01,False\n0003_01,\n0004_01,False\n"
    with pytest.raises(InvalidSubmission) as excinfo:
        check(tmp_path, text, answers)
    assert message(excinfo) == "Submission column 'Transported' has a missing value at row 3 (id '0003_01')."


def test_nan_in_numeric_target(tmp_path: Path, numeric_answers: pd.DataFrame) -> None:
    text = "id,target\n1,0.5\n2,NaN\n3,1\n"
    with pytest.raises(InvalidSubmission) as excinfo:
        check(tmp_path, text, numeric_answers, id_column="id", target_columns=["target"], target_kind=TargetKind.NUMERIC)
    assert message(excinfo) == "Submission column 'target' has a missing value at row 2 (id '2')."


def test_inf_in_numeric_target(tmp_path: Path, numeric_answers: pd.DataFrame) -> None:
    text = "id,target\n1,0.5\n2,1.0\n3,-inf\n"
    with pytest.raises(InvalidSubmission) as excinfo:
        check(tmp_path, text, numeric_answers, id_column="id", target_columns=["target"], target_kind=TargetKind.NUMERIC)
    assert message(excinfo) == "Submission column 'target' has a non-finite value -inf at row 3 (id '3')."


def test_text_in_numeric_target(tmp_path: Path, numeric_answers: pd.DataFrame) -> None:
    text = "id,target\n1,0.5\n2,abc\n3,1\n"
    with pytest.raises(InvalidSubmission) as excinfo:
        check(tmp_path, text, numeric_answers, id_column="id", target_columns=["target"], target_kind=TargetKind.NUMERIC)
    assert message(excinfo) == "Submission column 'target' has a non-numeric value 'abc' at row 2 (id '2'); expected a number."


def test_bool_in_numeric_target(tmp_path: Path, numeric_answers: pd.DataFrame) -> None:
    text = "id,target\n1,True\n2,False\n3,True\n"
    with pytest.raises(InvalidSubmission) as excinfo:
        check(tmp_path, text, numeric_answers, id_column="id", target_columns=["target"], target_kind=TargetKind.NUMERIC)
    assert message(excinfo) == "Submission column 'target' has a non-numeric value 'True' at row 1 (id '1'); expected a number."


def test_probability_out_of_range(tmp_path: Path, numeric_answers: pd.DataFrame) -> None:
    text = "id,target\n1,0.5\n2,1.0\n3,1.5\n"
    with pytest.raises(InvalidSubmission) as excinfo:
        check(
            tmp_path, text, numeric_answers, id_column="id", target_columns=["target"], target_kind=TargetKind.PROBABILITY
        )
    assert message(excinfo) == (
        "Submission column 'target' has 1.5 at row 3 (id '3'), outside [0, 1]; expected a probability."
    )


def test_numeric_target_is_float_and_aligned(tmp_path: Path, numeric_answers: pd.DataFrame) -> None:
    text = "id,target\n3,2\n1,0.5\n2,1e0\n"
    y_true, y_pred = check(
        tmp_path, text, numeric_answers, id_column="id", target_columns=["target"], target_kind=TargetKind.NUMERIC
    )
    assert y_true.tolist() == [0.5, 1.5, 2.5]
    assert y_pred.tolist() == [0.5, 1.0, 2.0]
    assert y_pred.dtype == np.float64


def test_several_target_columns_give_2d_arrays(tmp_path: Path) -> None:
    answers = read_answers(write(tmp_path, "id,a,b\nx,1,0\ny,0,1\n", "answers.csv"), id_column="id", target_columns=["a", "b"])
    y_true, y_pred = check(
        tmp_path, "id,b,a\ny,0.9,0.1\nx,0.2,0.8\n", answers, id_column="id", target_columns=["a", "b"],
        target_kind=TargetKind.PROBABILITY,
    )
    assert y_true.shape == y_pred.shape == (2, 2)
    assert y_pred.tolist() == [[0.8, 0.2], [0.1, 0.9]]


def test_messages_never_contain_answer_values(tmp_path: Path, numeric_answers: pd.DataFrame) -> None:
    text = "id,target\n1,0.5\n2,abc\n3,1\n"
    with pytest.raises(InvalidSubmission) as excinfo:
        check(tmp_path, text, numeric_answers, id_column="id", target_columns=["target"], target_kind=TargetKind.NUMERIC)
    assert "1.5" not in message(excinfo) and "2.5" not in message(excinfo)


def test_broken_answers_are_a_config_error(tmp_path: Path) -> None:
    path = write(tmp_path, "id,target\n1,0\n1,1\n", "answers.csv")
    with pytest.raises(ConfigError) as excinfo:
        read_answers(path, id_column="id", target_columns=["target"])
    assert str(excinfo.value) == f"answers file {path}: repeated id '1'"
    path = write(tmp_path, "id,other\n1,0\n", "answers.csv")
    with pytest.raises(ConfigError) as excinfo:
        read_answers(path, id_column="id", target_columns=["target"])
    assert str(excinfo.value) == f"answers file {path}: missing column(s) 'target'"
