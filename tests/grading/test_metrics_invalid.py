"""Bad submissions for every kind of metric: the exact message names the column, row and id.

Rows are counted in the submission file's order (1-based, header excluded), whatever order the
answers are in; the submissions below list their rows in another order than the answers to
check that.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from mleaudit.grading.errors import ConfigError, InvalidSubmission, UndefinedScore
from mleaudit.grading.grade import score_frames


def score(submission: dict, answers: dict, metric: str, id_column: str | list, targets: list, **params) -> float:
    return score_frames(
        pd.DataFrame(submission), pd.DataFrame(answers), metric=metric, id_column=id_column, target_columns=targets, params=params
    )


def invalid(*args, **kwargs) -> str:
    with pytest.raises(InvalidSubmission) as excinfo:
        score(*args, **kwargs)
    return str(excinfo.value)


BINARY = {"id": ["a", "b", "c", "d"], "y": [0, 1, 1, 0]}


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ([0.2, 0.9, np.nan, 0.3], "Submission column 'y' has a missing value at row 3 (id 'b')."),
        ([0.2, 0.9, np.inf, 0.3], "Submission column 'y' has a non-finite value inf at row 3 (id 'b')."),
        ([0.2, "high", 0.4, 0.3], "Submission column 'y' has a non-numeric value 'high' at row 2 (id 'c'); expected a number."),
        ([0.2, 0.9, 1.5, 0.3], "Submission column 'y' has 1.5 at row 3 (id 'b'), outside [0, 1]; expected a probability."),
        ([-0.1, 0.9, 0.5, 0.3], "Submission column 'y' has -0.1 at row 1 (id 'd'), outside [0, 1]; expected a probability."),
    ],
)
@pytest.mark.parametrize("metric", ["auc-roc", "log-loss"])
def test_probability_values(metric: str, values: list, message: str) -> None:
    submission = {"id": ["d", "c", "b", "a"], "y": values}
    assert invalid(submission, BINARY, metric, "id", ["y"]) == message


def test_numeric_metrics_accept_any_finite_number_but_not_text() -> None:
    submission = {"id": ["d", "c", "b", "a"], "y": [-3.0, 12.5, 7, 0]}
    assert np.isfinite(score(submission, BINARY, "weighted-auroc", "id", ["y"]))
    # A column of booleans is ones and zeros; a word among numbers is not a number.
    submission["y"] = [True, False, True, False]
    assert score(submission, BINARY, "rmse_error", "id", ["y"]) == score(
        {**submission, "y": [1.0, 0.0, 1.0, 0.0]}, BINARY, "rmse_error", "id", ["y"]
    )
    submission["y"] = [0.5, "high", 1.0, 0.0]
    assert invalid(submission, BINARY, "rmse_error", "id", ["y"]) == (
        "Submission column 'y' has a non-numeric value 'high' at row 2 (id 'c'); expected a number."
    )


def test_value_range_parameter() -> None:
    answers = {"Id": ["p1", "p2"], "Pawpularity": [40, 90]}
    submission = {"Id": ["p2", "p1"], "Pawpularity": [100.5, 30]}
    assert invalid(submission, answers, "root-mean-squared-error", "Id", ["Pawpularity"], value_range=[1, 100]) == (
        "Submission column 'Pawpularity' has 100.5 at row 1 (id 'p2'), outside [1, 100]."
    )


def test_probability_rows_must_sum_to_one() -> None:
    answers = {"id": ["a", "b"], "x": [1, 0], "z": [0, 1]}
    submission = {"id": ["b", "a"], "x": [0.3, 0.9], "z": [0.6, 0.1]}
    assert invalid(submission, answers, "multi-class-log-loss", "id", ["x", "z"]) == (
        "Submission probabilities in columns 'x', 'z' sum to 0.8999999999999999 at row 1 (id 'b'); "
        "each row must sum to 1 (within 1.1e-05)."
    )
    submission["z"] = [0.7, 0.1]
    assert score(submission, answers, "multi-class-log-loss", "id", ["x", "z"]) > 0


def test_non_integer_class_ids() -> None:
    answers = {"Id": ["1", "2", "3"], "Predicted": [4, 7, 4]}
    submission = {"Id": ["3", "1", "2"], "Predicted": ["4", "7", "seven"]}
    assert invalid(submission, answers, "macro-f1-score", "Id", ["Predicted"]) == (
        "Submission column 'Predicted' has the label 'seven' at row 3 (id '2'), which is not a number like the answers' labels."
    )
    submission = {"Id": ["3", "1", "2"], "Predicted": ["4", "7", "7.5"]}
    assert invalid(submission, answers, "macro-f1-score", "Id", ["Predicted"]) == (
        "Submission column 'Predicted' has the label '7.5' at row 3 (id '2'), which is not a whole number like the answers' labels."
    )
    submission = {"Id": ["3", "1", "2"], "Predicted": ["4", "inf", "7"]}
    assert invalid(submission, answers, "accuracy", "Id", ["Predicted"]) == (
        "Submission column 'Predicted' has the label 'inf' at row 2 (id '1'), which is not a finite number like the answers' labels."
    )
    # A whole float is its class.
    submission = {"Id": ["3", "1", "2"], "Predicted": [4.0, 7.0, 4.0]}
    assert score(submission, answers, "accuracy", "Id", ["Predicted"]) == pytest.approx(1 / 3)
    submission = {"Id": ["3", "1", "2"], "Predicted": ["4 1", "7.5 2", "4"]}
    assert invalid(submission, answers, "top-1-classification-error", "Id", ["Predicted"]) == (
        "Submission column 'Predicted' has '7.5', which is not an integer class id at row 2 (id '1')."
    )


def test_labels_that_cannot_be_compared() -> None:
    answers = {"PassengerId": ["1", "2"], "Transported": [True, False]}
    submission = {"PassengerId": ["1", "2"], "Transported": ["yes", "no"]}
    assert invalid(submission, answers, "accuracy", "PassengerId", ["Transported"]) == (
        "Submission column 'Transported' has the label 'yes' at row 1 (id '1'), which is not True or False like the answers' labels."
    )
    # "True" and "False" written among other words are still booleans' spellings: the first other word is named.
    submission = {"PassengerId": ["1", "2"], "Transported": ["True", "maybe"]}
    assert invalid(submission, answers, "accuracy", "PassengerId", ["Transported"]) == (
        "Submission column 'Transported' has the label 'maybe' at row 2 (id '2'), which is not True or False like the answers' labels."
    )


MASKS = {"id": ["m1", "m2"], "rle": ["1 3", "5 2"], "height": [3, 3], "width": [3, 3]}


@pytest.mark.parametrize(
    ("cell", "problem"),
    [
        ("1 3 7", "a run-length mask with an odd number of values (3)"),
        ("1 x", "a run-length mask with the value 'x', which is not an integer"),
        ("4 2 1 1", "a run-length mask whose starts are not in increasing order (4 then 1)"),
        ("1 3 2 2", "a run-length mask with overlapping runs (starting at 1 and 2)"),
        ("0 2", "a run-length mask with a start or length below 1"),
        ("8 3", "a run-length mask that runs past the image's 9 pixels (to pixel 10)"),
    ],
)
@pytest.mark.parametrize("metric", ["mean_dice_score", "global-dice", "f0.5-score", "mask_iou_precision_score"])
def test_malformed_run_length_masks(metric: str, cell: str, problem: str) -> None:
    submission = {"id": ["m2", "m1"], "rle": ["", cell]}
    params = {"height": "height", "width": "width"}
    assert invalid(submission, MASKS, metric, "id", ["rle"], **params) == f"Submission column 'rle' has {problem} at row 2 (id 'm1')."


def test_empty_masks_are_valid_in_every_spelling_their_grader_reads() -> None:
    submission = {"id": ["m1", "m2"], "rle": [np.nan, ""]}
    assert score(submission, MASKS, "mean_dice_score", "id", ["rle"], height="height", width="width") == 0.0
    # "-" is the empty mask only where MLE-bench's grader maps it to one (contrails' global Dice);
    # the other mask graders read every token as an integer and fail on it.
    submission = {"id": ["m1", "m2"], "rle": ["1 3", "-"]}
    assert score(submission, MASKS, "global_dice_score", "id", ["rle"], height="height", width="width") == pytest.approx(6 / 8)
    with pytest.raises(InvalidSubmission, match=r"^Submission column 'rle' has a run-length mask with the value '-', which is not an integer at row 2 \(id 'm2'\)\.$"):
        score(submission, MASKS, "mean_dice_score", "id", ["rle"], height="height", width="width")


def test_malformed_answer_masks_are_a_config_error() -> None:
    answers = dict(MASKS, rle=["1 3", "9 9"])
    with pytest.raises(ConfigError, match=r"^mean_dice_score: answers row 2, column 'rle': a run-length mask that runs past"):
        score({"id": ["m1", "m2"], "rle": ["1 1", ""]}, answers, "mean_dice_score", "id", ["rle"], height="height", width="width")


@pytest.mark.parametrize(
    ("metric", "answer", "cell"),
    [
        ("f1-score", "U+3042 0 0 10 10", " U+3042 5 5"),
        ("f1-score", "U+3042 0 0 10 10", "U+3042 5 5 "),
        ("f1-score", "U+3042 0 0 10 10", "U+3042  5 5"),
        ("box3d_map_score", "1 0 0 0 2 2 2 0 car", "0.5 0 0 0 2 2 2 0 car "),
    ],
)
def test_prediction_strings_split_on_single_spaces(metric: str, answer: str, cell: str) -> None:
    # MLE-bench's graders for these split on " ": an extra space is an empty token they refuse.
    message = invalid({"id": ["a"], "p": [cell]}, {"id": ["a"], "p": [answer]}, metric, "id", ["p"])
    assert message == (
        "Submission column 'p' has a prediction string with a leading, trailing or repeated space "
        "(tokens are separated by single spaces) at row 1 (id 'a')."
    )
    # The same tokens single-spaced are read.
    assert score({"id": ["a"], "p": [" ".join(cell.split())]}, {"id": ["a"], "p": [answer]}, metric, "id", ["p"]) >= 0


@pytest.mark.parametrize(
    ("metric", "answer", "cell", "problem"),
    [
        ("mean-average-precision", "opacity 1 0 0 10 10", "opacity 0.5 0 0 10", "a prediction string of 5 tokens, not a multiple of 6 per object"),
        ("mean-average-precision", "opacity 1 0 0 10 10", "opacity high 0 0 10 10", "a prediction string with 'high' where a number is expected"),
        ("f1-score", "U+3042 0 0 10 10", "U+3042 5", "a prediction string of 2 tokens, not a multiple of 3 per object"),
        ("f1-score", "U+3042 0 0 10 10", "U+3042 5 nan", "a prediction string with the non-finite number 'nan'"),
        ("box3d_map_score", "1 0 0 0 2 2 2 0 car", "0.5 0 0 0 2 2 2 car", "a prediction string of 8 tokens, not a multiple of 9 per object"),
        ("box3d_map_score", "1 0 0 0 2 2 2 0 car", "0.5 0 0 0 2 0 2 0 car", "a box whose width, length or height is not positive"),
    ],
)
def test_malformed_prediction_strings(metric: str, answer: str, cell: str, problem: str) -> None:
    answers = {"id": ["i1", "i2"], "PredictionString": [answer, answer]}
    submission = {"id": ["i2", "i1"], "PredictionString": [answer.replace(" 1 ", " 0.9 ", 1), cell]}
    assert invalid(submission, answers, metric, "id", ["PredictionString"]) == (
        f"Submission column 'PredictionString' has {problem} at row 2 (id 'i1')."
    )


def test_coco_prediction_strings_are_checked_too() -> None:
    answers = {"image_id": ["x", "x", "y"], "class_id": [1, 2, 14], "x_min": [0, 5, 0], "y_min": [0, 5, 0], "x_max": [4, 9, 1], "y_max": [4, 9, 1]}
    submission = {"image_id": ["y", "x"], "PredictionString": ["14 1 0 0 1 1", "1 0.9 0 0 4"]}
    assert invalid(submission, answers, "mAP-at-IoU>0.4", "image_id", ["PredictionString"]) == (
        "Submission column 'PredictionString' has a prediction string of 5 tokens, not a multiple of 6 per object "
        "at row 2 (id 'x')."
    )


def test_label_lists_that_are_not_orderings_or_integers() -> None:
    answers = {"id": ["n1", "n2"], "cell_order": ["a b c", "d e"]}
    submission = {"id": ["n2", "n1"], "cell_order": ["e d", "a b b"]}
    assert invalid(submission, answers, "kendall-tau", "id", ["cell_order"]) == (
        "Submission column 'cell_order' has an ordering of 3 items that is not a permutation of the row's 3 items "
        "at row 2 (id 'n1')."
    )
    answers = {"Id": ["1", "2"], "Sequence": ["1 2", "3"]}
    submission = {"Id": ["2", "1"], "Sequence": ["3", "1 two"]}
    assert invalid(submission, answers, "levenhstein-distance", "Id", ["Sequence"]) == (
        "Submission column 'Sequence' has the token 'two', which is not an integer, in its sequence at row 2 (id '1')."
    )


def test_answer_span_format() -> None:
    answers = {"example_id": ["1_long", "1_short"], "PredictionString": ["3:9", ""]}
    submission = {"example_id": ["1_short", "1_long"], "PredictionString": ["MAYBE", "3:9"]}
    assert invalid(submission, answers, "answer_span_accuracy_score", "example_id", ["PredictionString"]) == (
        "Submission column 'PredictionString' has 'MAYBE', which is not 'start:end', 'YES', 'NO' or empty at row 1 "
        "(id '1_short')."
    )


def test_array_metric_errors_name_the_submission_row() -> None:
    answers = {"id": ["a", "b", "c"], "y": [1.0, 2.0, 3.0]}
    submission = {"id": ["c", "a", "b"], "y": [3.0, 1.0, -1.0]}
    assert invalid(submission, answers, "mean-column-wise-rmsle", "id", ["y"]) == (
        "Submission column 'y' has -1.0, which is not greater than -1 (log(1 + x) is undefined) at row 3 (id 'b')."
    )


def test_an_undefined_score_is_its_own_error() -> None:
    answers = {"id": ["a", "b", "c"], "y": [1.0, 2.0, 3.0]}
    submission = {"id": ["a", "b", "c"], "y": [5.0, 5.0, 5.0]}
    with pytest.raises(UndefinedScore, match=r"^the metric is undefined for this submission \(it returned nan, e\.g\. a correlation"):
        score(submission, answers, "pearson-correlation-coefficient", "id", ["y"])


def test_composite_ids() -> None:
    answers = {
        "tripId": ["t1", "t1", "t2"],
        "UnixTimeMillis": ["1000", "2000", "1000"],
        "LatitudeDegrees": [37.0, 37.1, 37.2],
        "LongitudeDegrees": [-122.0, -122.1, -122.2],
    }
    good = {k: list(reversed(v)) for k, v in answers.items()}
    assert score(good, answers, "average-haversine-distance", "tripId", ["LatitudeDegrees", "LongitudeDegrees"]) == 0.0
    repeated = {k: v + [v[0]] for k, v in good.items()}
    assert invalid(repeated, answers, "average-haversine-distance", "tripId", ["LatitudeDegrees", "LongitudeDegrees"]) == (
        "Submission repeats id ('t2', '1000') at rows 1 and 4."
    )
    unknown = dict(good, UnixTimeMillis=["1000", "2000", "3000"])
    assert invalid(unknown, answers, "average-haversine-distance", "tripId", ["LatitudeDegrees", "LongitudeDegrees"]) == (
        "Submission has id ('t1', '3000') at row 3, which is not a test id (1 of its 3 rows has an id outside the 3 test ids)."
    )
    missing = {"tripId": ["t1"], "UnixTimeMillis": ["1000"], "LatitudeDegrees": [37.0], "LongitudeDegrees": [-122.0]}
    assert invalid(missing, answers, "average-haversine-distance", "tripId", ["LatitudeDegrees", "LongitudeDegrees"]) == (
        "Submission has 1 row; expected 3 (one per test id). First missing id: ('t1', '2000') (row 2 of the test set)."
    )
    nan_value = dict(good, LatitudeDegrees=[37.2, np.nan, 37.0])
    assert invalid(nan_value, answers, "average-haversine-distance", "tripId", ["LatitudeDegrees", "LongitudeDegrees"]) == (
        "Submission column 'LatitudeDegrees' has a missing value at row 2 (id ('t1', '2000'))."
    )


def test_extra_ids_can_be_ignored() -> None:
    answers = {"customer_id": ["c1", "c2"], "prediction": ["a b", "c"]}
    submission = {"customer_id": ["c9", "c2", "c1"], "prediction": ["x", "c", "a b"]}
    assert score(submission, answers, "MAP@12", "customer_id", ["prediction"]) == 1.0
    assert invalid(submission, answers, "map_at_k_score", "customer_id", ["prediction"]) == (
        "Submission has id 'c9' at row 1, which is not a test id (1 of its 3 rows has an id outside the 2 test ids)."
    )
    short = {"customer_id": ["c9", "c2"], "prediction": ["x", "c"]}
    assert invalid(short, answers, "MAP@12", "customer_id", ["prediction"]) == (
        "Submission has no row for id 'c1' (row 1 of the test set); 1 of the 2 test ids are missing."
    )


def test_long_ids_are_cut_in_messages() -> None:
    # A whole comment can be the id (Detecting Insults): messages quote its first 80 characters.
    comment = "you are " + "very " * 600 + "wrong"
    answers = {"Comment": ["short", comment], "Insult": [0, 1]}
    unknown = comment.replace("wrong", "right")
    assert invalid({"Comment": ["short", unknown], "Insult": [0.1, 0.9]}, answers, "auc-roc", "Comment", ["Insult"]) == (
        f"Submission has id {unknown[:80]!r}... ({len(unknown)} characters) at row 2, which is not a test id "
        "(1 of its 2 rows has an id outside the 2 test ids)."
    )
    assert invalid({"Comment": ["short", comment], "Insult": [0.1, 2.0]}, answers, "auc-roc", "Comment", ["Insult"]) == (
        f"Submission column 'Insult' has 2.0 at row 2 (id {comment[:80]!r}... ({len(comment)} characters)), "
        "outside [0, 1]; expected a probability."
    )


def test_extra_columns_can_be_ignored() -> None:
    answers = {"id": ["a", "b"], "y": [1.0, 2.0]}
    submission = {"Date": ["x", "y"], "id": ["b", "a"], "y": [2.0, 1.0], "note": ["", ""]}
    assert score(submission, answers, "rmse_error", "id", ["y"], extra_columns="ignore") == 0.0
    assert invalid(submission, answers, "rmse_error", "id", ["y"]) == (
        "Submission has unexpected columns 'Date', 'note' (expected columns: 'id', 'y')."
    )
    # Ignoring other columns never excuses a missing scored one.
    assert invalid({"id": ["b", "a"], "note": ["", ""]}, answers, "rmse_error", "id", ["y"], extra_columns="ignore") == (
        "Submission is missing column 'y' (expected columns: 'id', 'y')."
    )


def test_row_mask_and_unscored_columns() -> None:
    answers = {"id_seqpos": ["s_0", "s_1", "s_2"], "reactivity": [1.0, 2.0, 9.0], "keep": [True, True, False]}
    submission = {"id_seqpos": ["s_2", "s_1", "s_0"], "reactivity": [0.0, 2.0, 1.0], "deg_50C": [0.0, 0.0, 0.0]}
    params = {"row_mask": {"column": "keep", "equals": True}, "unscored_columns": ["deg_50C"]}
    assert score(submission, answers, "rmse_error", "id_seqpos", ["reactivity"], **params) == 0.0
    no_unscored = {k: v for k, v in submission.items() if k != "deg_50C"}
    assert invalid(no_unscored, answers, "rmse_error", "id_seqpos", ["reactivity"], **params) == (
        "Submission is missing column 'deg_50C' (expected columns: 'id_seqpos', 'reactivity', 'deg_50C')."
    )


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"row_mask": {"column": "keep"}}, "metric 'rmse_error': metric parameter 'row_mask' must be {column: <answers column>, equals: <value>} "
                                           "or {column: <answers column>, not_equals: <value>}"),
        ({"row_mask": {"column": "keep", "equals": 1, "not_equals": 2}}, "metric 'rmse_error': metric parameter 'row_mask' must be "
                                           "{column: <answers column>, equals: <value>} or {column: <answers column>, not_equals: <value>}"),
        ({"value_range": [5, 1]}, "metric 'rmse_error': metric parameter 'value_range' must be [low, high] with low <= high"),
        ({"extra_ids": "drop"}, "metric 'rmse_error': metric parameter 'extra_ids' must be 'error' or 'ignore', not 'drop'"),
        ({"extra_columns": "keep"}, "metric 'rmse_error': metric parameter 'extra_columns' must be 'error' or 'ignore', not 'keep'"),
        ({"id_columns": "id"}, "metric 'rmse_error': metric parameter 'id_columns' must be a list of column names"),
        ({"row_mask": {"column": "absent", "equals": 1}}, "row_mask: the answers have no column 'absent'"),
        ({"answer_columns": {"y": "absent"}}, "the answers have no column 'absent' (mapped to target 'y' by answer_columns)"),
        ({"squared": True}, "metric 'rmse_error': unknown parameter(s) 'squared' (it takes: answer_columns, column_aliases, column_order, extra_columns, "
                            "extra_ids, id_columns, id_match, missing_values, repeated_ids, row_mask, row_sum_tolerance, unscored_columns, value_range)"),
    ],
)
def test_malformed_scoring_parameters_are_config_errors(params: dict, message: str) -> None:
    answers = {"id": ["a", "b"], "y": [1.0, 2.0]}
    with pytest.raises(ConfigError) as excinfo:
        score({"id": ["a", "b"], "y": [1.0, 2.0]}, answers, "rmse_error", "id", ["y"], **params)
    assert str(excinfo.value) == message


def test_messages_never_contain_answer_values() -> None:
    answers = {"id": ["a", "b"], "rle": ["1 3", "4 2"], "height": [3, 3], "width": [3, 3]}
    text = invalid({"id": ["a", "b"], "rle": ["1 3", "9 9"]}, answers, "mean_dice_score", "id", ["rle"])
    assert "4 2" not in text
    secret = {"id": ["a", "b"], "y": [0.123456, 0.654321]}
    text = invalid({"id": ["a", "b"], "y": ["x", 0.5]}, secret, "rmse_error", "id", ["y"])
    assert "0.123456" not in text and "0.654321" not in text


def test_answers_without_a_target_column_are_a_config_error() -> None:
    with pytest.raises(ConfigError, match=r"^the answers have no column\(s\) 'tags'$"):
        score({"id": ["a"], "tags": ["x"]}, {"id": ["a"], "other": ["x"]}, "micro-f1-score", "id", ["tags"])
    # A confidence has no true value: the Laplace likelihood reads only the answers' FVC.
    answers = {"Patient_Week": ["p_1"], "FVC": [2000.0], "Patient": ["p"]}
    submission = {"Patient_Week": ["p_1"], "FVC": [2000.0], "Confidence": [70.0]}
    assert score(submission, answers, "modified-laplace-log-likelihood", "Patient_Week", ["FVC", "Confidence"]) == pytest.approx(
        -np.log(np.sqrt(2) * 70)
    )


def test_a_composite_id_may_have_an_empty_part() -> None:
    # Kaggle's insult comments are told apart by (Date, Comment); some comments have no date.
    answers = {"Date": ["20120618192155Z", None, None], "Comment": ["you idiot", "nice", "you idiot"], "Insult": [1, 0, 1]}
    submission = {"Insult": [0.2, 0.9, 0.8], "Date": [None, None, "20120618192155Z"], "Comment": ["nice", "you idiot", "you idiot"]}
    assert score(submission, answers, "auc-roc", "Comment", ["Insult"], id_columns=["Date", "Comment"]) == 1.0
    submission["Date"][0] = "20990101000000Z"
    assert invalid(submission, answers, "auc-roc", "Comment", ["Insult"], id_columns=["Date", "Comment"]) == (
        "Submission has id ('20990101000000Z', 'nice') at row 1, which is not a test id "
        "(1 of its 3 rows has an id outside the 3 test ids)."
    )
    submission["Date"][0], submission["Comment"][0] = None, None
    assert invalid(submission, answers, "auc-roc", "Comment", ["Insult"], id_columns=["Date", "Comment"]) == (
        "Submission has an empty id at row 1."
    )
