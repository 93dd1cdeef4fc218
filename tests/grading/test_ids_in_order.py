"""Test ids that stand on several rows, paired by occurrence (``repeated_ids: in_order``)."""

from __future__ import annotations

import pandas as pd
import pytest

from mleaudit.grading.errors import InvalidSubmission
from mleaudit.grading.grade import score_frames
from mleaudit.grading.validation import check_ids_in_order

ANSWER_IDS = pd.Series(["b", "a", "b", "c", "b"], dtype=str)


def test_the_kth_row_of_an_id_pairs_with_the_kth_test_row() -> None:
    submission = pd.Series(["c", "b", "a", "b", "b"], dtype=str)
    order = check_ids_in_order(submission, ANSWER_IDS)
    # test rows b1 a b2 c b3 <- submission rows 1 (b1), 2 (a), 3 (b2), 0 (c), 4 (b3)
    assert order.tolist() == [1, 2, 3, 0, 4]
    assert submission[order].tolist() == ANSWER_IDS.tolist()


def test_rows_already_in_test_order_are_kept() -> None:
    assert check_ids_in_order(ANSWER_IDS.copy(), ANSWER_IDS).tolist() == [0, 1, 2, 3, 4]


def test_composite_ids_are_paired_the_same_way() -> None:
    answers = pd.DataFrame({"user": ["u", "u", "v"], "day": ["1", "1", "2"]})
    submission = pd.DataFrame({"user": ["v", "u", "u"], "day": ["2", "1", "1"]})
    assert check_ids_in_order(submission, answers).tolist() == [1, 2, 0]


@pytest.mark.parametrize(
    ("submission", "message"),
    [
        (["b", "a", "b", "c"], "Submission has id 'b' on 2 rows, the test set on 3 (its first test row is row 1); "
                               "each id must stand on as many rows as in the test set (5 rows in all; the submission "
                               "has 4), paired in file order."),
        (["b", "a", "b", "c", "b", "a"], "Submission has id 'a' on 2 rows, the test set on 1 (its first test row is "
                                         "row 2)"),
        (["b", "a", "b", "x", "b"], "Submission has id 'x' at row 4, which is not a test id (1 of its 5 rows"),
        (["b", "a", None, "c", "b"], "Submission has an empty id at row 3."),
        ([], "Submission has no rows with test ids; expected 5 (one per test row)."),
    ],
)
def test_counts_unknown_and_empty_ids_are_named(submission: list, message: str) -> None:
    with pytest.raises(InvalidSubmission) as caught:
        check_ids_in_order(pd.Series(submission, dtype=object), ANSWER_IDS)
    assert str(caught.value).startswith(message)


def test_unknown_ids_are_dropped_when_asked() -> None:
    submission = pd.Series(["x", "b", "a", "b", "c", "b"], dtype=str)
    order = check_ids_in_order(submission, ANSWER_IDS, extra_ids="ignore")
    assert submission[order].tolist() == ANSWER_IDS.tolist()


def test_scoring_pairs_repeated_ids_by_occurrence() -> None:
    answers = pd.DataFrame({"Comment": ["hi", "you", "hi", "ok"], "Insult": [0, 1, 0, 1]})
    submission = pd.DataFrame({"Comment": ["ok", "hi", "you", "hi"], "Insult": [0.9, 0.2, 0.8, 0.1]})
    params = {"repeated_ids": "in_order"}
    score = score_frames(submission, answers, metric="auc-roc", id_column="Comment", target_columns=["Insult"],
                         params=params)
    assert score == 1.0
    with pytest.raises(InvalidSubmission, match="repeats id 'hi'"):
        score_frames(submission, answers, metric="auc-roc", id_column="Comment", target_columns=["Insult"])
    with pytest.raises(Exception, match="'repeated_ids' must be 'error' or 'in_order'"):
        score_frames(submission, answers, metric="auc-roc", id_column="Comment", target_columns=["Insult"],
                     params={"repeated_ids": "sorted"})
