"""Submission validation: every failure has a precise message, asserted exactly."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from mleaudit.grading.errors import ConfigError, InvalidSubmission
from mleaudit.grading.metrics import METRICS, TargetKind
from mleaudit.grading.validation import (
    check_frames,
    check_ids,
    check_submission,
    ids_by_number,
    read_answers,
    read_submission,
    scoring_options,
)

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
        "Submission has id '9999_01' at row 3, which is not a test id (1 of its 4 rows has an id outside the 4 test ids)."
    )


def test_ids_are_compared_as_text(tmp_path: Path, answers: pd.DataFrame) -> None:
    # "1_01" is not "0001_01": leading zeros are part of the id.
    text = "PassengerId,Transported\n1_01,True\n0002_01,False\n0003_01,True\n0004_01,False\n"
    with pytest.raises(InvalidSubmission) as excinfo:
        check(tmp_path, text, answers)
    assert message(excinfo) == (
        "Submission has id '1_01' at row 1, which is not a test id (1 of its 4 rows has an id outside the 4 test ids)."
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
        "Submission has id '0005_01' at row 5, which is not a test id (1 of its 5 rows has an id outside the 4 test ids)."
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


def test_bool_column_in_numeric_target_is_ones_and_zeros(tmp_path: Path, numeric_answers: pd.DataFrame) -> None:
    text = "id,target\n1,True\n2,False\n3,TRUE\n"
    _, y_pred = check(tmp_path, text, numeric_answers, id_column="id", target_columns=["target"], target_kind=TargetKind.NUMERIC)
    assert y_pred.tolist() == [1.0, 0.0, 1.0]


def test_bool_among_numbers_in_numeric_target(tmp_path: Path, numeric_answers: pd.DataFrame) -> None:
    submission = pd.DataFrame({"id": ["1", "2", "3"], "target": pd.Series([0.5, True, 1.0], dtype=object)})
    with pytest.raises(InvalidSubmission) as excinfo:
        check_submission(submission, numeric_answers, id_column="id", target_columns=["target"], target_kind=TargetKind.NUMERIC)
    assert message(excinfo) == "Submission column 'target' has a non-numeric value 'True' at row 2 (id '2'); expected a number."


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


def test_text_columns_keep_their_exact_spelling(tmp_path: Path) -> None:
    path = write(tmp_path, "id,labels\n007,01 1.50 NA_\n8,\n")
    frame = read_submission(path, id_column="id", text_columns=["labels"])
    assert frame["id"].tolist() == ["007", "8"]
    assert frame["labels"].iloc[0] == "01 1.50 NA_" and pd.isna(frame["labels"].iloc[1])


def test_answer_files_with_one_row_per_box(tmp_path: Path) -> None:
    path = write(tmp_path, "image_id,class_id\na,1\na,2\nb,14\n", "answers.csv")
    with pytest.raises(ConfigError, match="repeated id 'a'"):
        read_answers(path, id_column="image_id", target_columns=["class_id"])
    frame = read_answers(path, id_column="image_id", target_columns=["class_id"], unique_ids=False)
    assert len(frame) == 3


def test_composite_answer_ids_must_be_unique(tmp_path: Path) -> None:
    path = write(tmp_path, "trip,ms,lat\nt,1,0.5\nt,2,0.5\nt,1,0.7\n", "answers.csv")
    with pytest.raises(ConfigError) as excinfo:
        read_answers(path, id_column=["trip", "ms"], target_columns=["lat"])
    assert str(excinfo.value) == f"answers file {path}: repeated id ('t', '1')"


def test_check_ids_orders_rows_by_answer_and_keeps_the_usual_order_cheap() -> None:
    answers = pd.Series(["x", "y", "z"])
    assert check_ids(pd.Series(["x", "y", "z"]), answers).tolist() == [0, 1, 2]
    assert check_ids(pd.Series(["z", "x", "y"]), answers).tolist() == [1, 2, 0]
    # Answer files with one row per box are matched per distinct id, in order of first appearance.
    assert check_ids(pd.Series(["z", "x"]), pd.Series(["x", "x", "z"])).tolist() == [1, 0]


def test_check_frames_keeps_each_rows_file_position(answers: pd.DataFrame) -> None:
    submission = pd.DataFrame({"Transported": [False, True, True, True], "PassengerId": ["0004_01", "0001_01", "0003_01", "0002_01"]})
    metric = METRICS["accuracy"]
    options, _ = scoring_options(metric, id_column="PassengerId", target_columns=["Transported"])
    aligned_answers, aligned = check_frames(submission, answers, metric=metric, options=options)
    assert aligned["PassengerId"].tolist() == aligned_answers["PassengerId"].tolist()
    assert aligned.index.tolist() == [1, 3, 2, 0]  # 0-based rows of the file, in answer order
    assert aligned.attrs["id_columns"] == ["PassengerId"]
    assert list(aligned.columns) == ["PassengerId", "Transported"]


def test_repeated_answer_ids_are_a_config_error_when_the_metric_needs_one_row_per_id() -> None:
    answers = pd.DataFrame({"id": ["a", "b", "a"], "y": [1.0, 2.0, 3.0]})
    submission = pd.DataFrame({"id": ["b", "a"], "y": [1.0, 2.0]})
    metric = METRICS["rmse_error"]
    options, _ = scoring_options(metric, id_column="id", target_columns=["y"])
    with pytest.raises(ConfigError, match="^the answers repeat an id at row 3$"):
        check_frames(submission, answers, metric=metric, options=options)


def test_scoring_options_merge_label_defaults_with_config_params() -> None:
    options, own = scoring_options(METRICS["MAP@12"], id_column="customer_id", target_columns=["prediction"], params={"k": 3})
    assert own == {"k": 3}
    assert options.extra_ids == "ignore" and options.id_columns == ("customer_id",)
    options, own = scoring_options(
        METRICS["dice-coefficient"], id_column="id", target_columns=["predicted"], params={"extra_ids": "error"}
    )
    assert own == {"height": "height_pixels", "width": "width_pixels"}
    assert options.answer_columns == {"predicted": "encoding"} and options.answer_target_columns == ("encoding",)


def _text(values: list[str]) -> pd.Series:
    return pd.Series(values, dtype="str", name="id")


@pytest.mark.parametrize(
    ("submission", "answers", "expected"),
    [
        (["2", "10"], ["00010", "00002"], ["00002", "00010"]),
        (["2.0", "1e1"], ["10", "2"], ["2", "10"]),
        # A number that is no test id keeps its spelling, for the id checks to name it.
        (["2", "3"], ["2", "02.5"], ["2", "3"]),
        (["-0", "7"], ["0", "7"], ["0", "7"]),
        # Ids that are no number (or no finite one) are kept too.
        (["2", "x"], ["2", "3"], ["2", "x"]),
        (["2", "inf"], ["2", "3"], ["2", "inf"]),
        (["2", ""], ["2", "3"], ["2", ""]),
        (["2", "1" + "0" * 20], ["2", "3"], ["2", "1" + "0" * 20]),
    ],
)
def test_ids_by_number_spell_each_number_as_the_test_ids_do(submission: list[str], answers: list[str], expected: list[str]) -> None:
    spelled = ids_by_number(_text(submission), _text(answers))
    assert spelled.tolist() == expected and spelled.name == "id"


@pytest.mark.parametrize(
    ("submission", "answers"),
    [
        (["2", "3"], ["2", "b"]),  # a test id that is not a number
        (["2", "3"], ["2", "inf"]),
        (["2", "3"], ["2", "02"]),  # two test ids, one number
        (["2", "3"], ["2", "1" + "0" * 20]),  # beyond 64 bits pandas reads the column as text
    ],
)
def test_ids_by_number_declines_test_ids_that_are_not_all_numbers(submission: list[str], answers: list[str]) -> None:
    assert ids_by_number(_text(submission), _text(answers)) is None


def test_ids_by_number_compares_as_floats_once_a_column_is() -> None:
    # 2**53 + 1 has no float of its own: as floats it equals 2**53, as NumPy compares them.
    big = 2**53
    assert ids_by_number(_text([f"{big + 1}.0"]), _text([str(big)])).tolist() == [str(big)]
    assert ids_by_number(_text([str(big + 1)]), _text([str(big)])).tolist() == [str(big + 1)]


def test_id_match_parameter_is_checked() -> None:
    from mleaudit.grading.metrics import METRICS

    with pytest.raises(ConfigError, match=r"'id_match' must be 'exact' or 'number', not 'value'"):
        scoring_options(METRICS["accuracy"], id_column="id", target_columns=["label"], params={"id_match": "value"})


def test_missing_values_parameter_is_checked() -> None:
    from mleaudit.grading.metrics import METRICS

    with pytest.raises(ConfigError, match=r"'missing_values' must be one of 'error', 'nan_text', 'empty_text', 'error_if_all', not 'keep'"):
        scoring_options(METRICS["accuracy"], id_column="id", target_columns=["label"], params={"missing_values": "keep"})
    with pytest.raises(ConfigError, match=r"'missing_values: nan_text' applies to label and text targets only"):
        scoring_options(METRICS["root-mean-squared-error"], id_column="id", target_columns=["y"], params={"missing_values": "nan_text"})
    with pytest.raises(ConfigError, match=r"'missing_values: error_if_all' applies to text targets that may be empty only"):
        scoring_options(METRICS["accuracy"], id_column="id", target_columns=["label"], params={"missing_values": "error_if_all"})
