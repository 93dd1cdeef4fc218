"""The array scoring path gives exactly what the frame path gives.

:func:`mleaudit.grading.validation.check_arrays` skips building an aligned frame for array metrics and
proves a number column valid from its extremes; these tests hold it to the frame path
(:func:`check_frames` then :func:`answer_arrays`) value for value and layout for layout, to the
documented order of the per-column checks for every message.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from mleaudit.grading.errors import ConfigError, InvalidSubmission
from mleaudit.grading.grade import score_csv, score_frames
from mleaudit.grading.metrics import METRICS, TargetKind, describe_row
from mleaudit.grading.metrics.probability import _binary_auc
from mleaudit.grading.validation import (
    answer_arrays,
    check_arrays,
    check_frames,
    check_no_missing,
    check_numeric,
    check_probabilities,
    check_row_sums,
    check_value_range,
    scoring_options,
)

ARROW_STR = pd.api.types.pandas_dtype("str")


def frames_path(submission: pd.DataFrame, answers: pd.DataFrame, metric_name: str, targets: list[str], params=None):
    metric = METRICS[metric_name]
    options, _ = scoring_options(metric, id_column="id", target_columns=targets, params=params)
    aligned_answers, aligned = check_frames(submission, answers, metric=metric, options=options)
    y_true, y_pred = answer_arrays(aligned_answers, aligned, metric=metric, target_columns=targets)
    arrays = check_arrays(submission, answers, metric=metric, options=options)
    return (y_true, y_pred, aligned), arrays


def same_array(a: np.ndarray, b: np.ndarray) -> None:
    assert a.dtype == b.dtype and a.shape == b.shape
    assert a.flags.c_contiguous == b.flags.c_contiguous and a.flags.f_contiguous == b.flags.f_contiguous
    if a.dtype == object:
        assert a.tolist() == b.tolist()
    else:
        assert np.array_equal(a, b, equal_nan=a.dtype.kind == "f")


CASES = {
    # metric, target columns, how predictions are made from a row of random numbers
    "rmse one column": ("root-mean-squared-error", ["y"], None),
    "rmse three columns": ("root-mean-squared-error", ["a", "b", "c"], None),
    "log loss with row sums": ("multi-class-log-loss", ["p0", "p1", "p2", "p3"], None),
    "auc": ("auc-roc", ["target"], None),
    "mae with a value range": ("mae_error", ["y"], {"value_range": [-10, 10]}),
    "accuracy on integers": ("accuracy", ["label"], None),
    "accuracy on text": ("accuracy", ["label"], None),
    "extra ids ignored": ("root-mean-squared-error", ["y"], {"extra_ids": "ignore"}),
}


def make_case(name: str, rng: np.random.Generator, n: int, shuffled: bool, int_predictions: bool):
    metric_name, targets, params = CASES[name]
    ids = pd.array([f"r{i:05d}" for i in range(n)], dtype=ARROW_STR)
    answers = pd.DataFrame({"id": ids})
    submission = pd.DataFrame({"id": ids})
    kind = METRICS[metric_name].target_kind
    if kind is TargetKind.PROBABILITY and len(targets) > 1:
        labels = rng.integers(0, len(targets), n)
        probs = rng.dirichlet(np.ones(len(targets)), n)
        for j, column in enumerate(targets):
            answers[column] = (labels == j).astype(np.int64)
            submission[column] = probs[:, j]
    elif kind is TargetKind.PROBABILITY:
        answers["target"] = rng.integers(0, 2, n)
        submission["target"] = rng.integers(0, 5, n) / 4.0 if int_predictions else rng.uniform(size=n)
    elif kind is TargetKind.LABEL:
        labels = rng.integers(0, 4, n)
        guess = np.where(rng.uniform(size=n) < 0.7, labels, rng.integers(0, 4, n))
        if name.endswith("text"):
            answers["label"] = pd.array([f"c{v}" for v in labels], dtype=ARROW_STR)
            submission["label"] = pd.array([f"c{v}" for v in guess], dtype=ARROW_STR)
        else:
            answers["label"], submission["label"] = labels, guess
    else:
        for column in targets:
            truth = rng.normal(size=n).round(3)
            answers[column] = truth
            guess = truth + rng.normal(size=n)
            submission[column] = np.rint(guess).astype(np.int64) if int_predictions else guess
    if name == "extra ids ignored":
        extra = pd.DataFrame({"id": pd.array(["x1", "x2"], dtype=ARROW_STR), "y": [1.0, 2.0]})
        submission = pd.concat([submission, extra], ignore_index=True)
    if shuffled:
        submission = submission.iloc[rng.permutation(len(submission))].reset_index(drop=True)
    return submission, answers, metric_name, targets, params


@pytest.mark.parametrize("name", sorted(CASES))
def test_check_arrays_equals_the_frame_path(name: str) -> None:
    rng = np.random.default_rng(sorted(CASES).index(name))
    for trial in range(8):
        n = int(rng.integers(1, 300)) if trial else 1
        submission, answers, metric_name, targets, params = make_case(name, rng, n, trial % 2 == 1, trial % 4 >= 2)
        (y_true, y_pred, aligned), arrays = frames_path(submission, answers, metric_name, targets, params)
        same_array(arrays.y_true, y_true)
        same_array(arrays.y_pred, y_pred)
        assert arrays.rows.tolist() == aligned.index.tolist()
        for position in {0, n // 2, n - 1}:
            assert arrays.describe(position) == describe_row(aligned, position)
        if n > 1:
            metric = METRICS[metric_name]
            own = {k: v for k, v in (params or {}).items() if k in metric.own_param_names}
            assert metric.fn(arrays.y_true, arrays.y_pred, **own) == metric.fn(y_true, y_pred, **own)


def test_row_masks_and_repeated_answer_ids_take_the_frame_path() -> None:
    answers = pd.DataFrame({"id": ["a", "b", "c"], "y": [1.0, 2.0, 4.0], "keep": [True, False, True]})
    submission = pd.DataFrame({"id": ["c", "a", "b"], "y": [3.0, 1.0, 9.0]})
    params = {"row_mask": {"column": "keep", "equals": True}}
    (y_true, y_pred, aligned), arrays = frames_path(submission, answers, "rmse_error", ["y"], params)
    assert arrays.y_true.tolist() == y_true.tolist() == [1.0, 4.0]
    assert arrays.y_pred.tolist() == y_pred.tolist() == [1.0, 3.0]
    assert arrays.rows.tolist() == [1, 0] and arrays.describe(1) == "row 1 (id 'c')"


def expected_message(submission: pd.DataFrame, targets: list[str], kind: TargetKind, value_range=None, tolerance=None) -> str | None:
    """The first failure of the per-column checks, in the documented order, by the public checks."""
    ids = submission["id"]
    floats = []
    try:
        for column in targets:
            values = submission[column]
            check_no_missing(values, column=column, ids=ids)
            numbers = check_numeric(values, column=column, ids=ids)
            if kind is TargetKind.PROBABILITY:
                check_probabilities(numbers, column=column, ids=ids)
            if value_range is not None:
                check_value_range(numbers, column=column, ids=ids, low=value_range[0], high=value_range[1])
            floats.append(numbers)
        if tolerance is not None:
            check_row_sums(floats, columns=targets, ids=ids, tolerance=tolerance)
    except InvalidSubmission as exc:
        return str(exc)
    return None


BAD_VALUES = [math.nan, math.inf, -math.inf, -0.5, 1.5, 42.0, -42.0, 0.0, 1.0]


@pytest.mark.parametrize("metric_name", ["multi-class-log-loss", "root-mean-squared-error", "auc-roc", "mae_error"])
def test_value_messages_follow_the_documented_order(metric_name: str) -> None:
    rng = np.random.default_rng(len(metric_name))
    metric = METRICS[metric_name]
    targets = ["p0", "p1", "p2"] if metric_name == "multi-class-log-loss" else ["target"]
    params = {"value_range": [-10, 10]} if metric_name == "mae_error" else None
    options, _ = scoring_options(metric, id_column="id", target_columns=targets, params=params)
    n = 40
    for trial in range(120):
        ids = pd.array([f"i{v}" for v in rng.permutation(n)], dtype=ARROW_STR)
        answers = pd.DataFrame({"id": ids})
        submission = pd.DataFrame({"id": ids[rng.permutation(n)]})
        probs = rng.dirichlet(np.ones(len(targets)), n)
        for j, column in enumerate(targets):
            answers[column] = rng.integers(0, 2, n)
            values = probs[:, j].copy()
            for _ in range(int(rng.integers(0, 3))):
                values[int(rng.integers(0, n))] = BAD_VALUES[int(rng.integers(0, len(BAD_VALUES)))]
            submission[column] = values if trial % 3 else values.astype(object)
        want = expected_message(submission, targets, metric.target_kind, options.value_range, options.row_sum_tolerance)
        try:
            check_arrays(submission, answers, metric=metric, options=options)
            got = None
        except InvalidSubmission as exc:
            got = str(exc)
        assert got == want


def test_the_first_rows_agreeing_do_not_hide_a_later_reordering(tmp_path: Path) -> None:
    n = 500
    ids = [f"id{v:05d}" for v in range(n)]
    truth = np.arange(n, dtype=float)
    pd.DataFrame({"id": ids, "y": truth}).to_csv(tmp_path / "answers.csv", index=False)
    swapped = list(range(n))
    swapped[100], swapped[300] = 300, 100
    pd.DataFrame({"id": [ids[i] for i in swapped], "y": truth[swapped]}).to_csv(tmp_path / "sub.csv", index=False)
    spec = {"metric": "root-mean-squared-error", "id_column": "id", "target_columns": ["y"]}
    assert score_csv(tmp_path / "sub.csv", tmp_path / "answers.csv", **spec) == 0.0


def test_a_broken_answers_file_is_reported_before_the_submission(tmp_path: Path) -> None:
    good_answers = tmp_path / "answers.csv"
    good_answers.write_text("id,y\na,1\nb,2\n", encoding="utf-8")
    broken_answers = tmp_path / "broken.csv"
    broken_answers.write_text("id,z\na,1\n", encoding="utf-8")
    empty = tmp_path / "empty.csv"
    empty.write_text("", encoding="utf-8")
    good = tmp_path / "good.csv"
    good.write_text("id,y\nb,2\na,1\n", encoding="utf-8")
    spec = {"metric": "root-mean-squared-error", "id_column": "id", "target_columns": ["y"]}
    with pytest.raises(ConfigError, match="missing column"):
        score_csv(empty, broken_answers, **spec)
    with pytest.raises(ConfigError, match="missing column"):
        score_csv(good, broken_answers, **spec)
    with pytest.raises(InvalidSubmission, match="is empty"):
        score_csv(empty, good_answers, **spec)
    assert score_csv(good, good_answers, **spec) == 0.0


def test_prediction_errors_name_the_file_row_on_the_array_path() -> None:
    answers = pd.DataFrame({"id": ["a", "b", "c"], "y": [1.0, 2.0, 3.0]})
    submission = pd.DataFrame({"id": ["c", "b", "a"], "y": [3.0, -5.0, 1.0]})
    with pytest.raises(InvalidSubmission) as excinfo:
        score_frames(submission, answers, metric="rmsle_error", id_column="id", target_columns=["y"])
    assert "at row 2 (id 'b')" in str(excinfo.value)


def test_binary_auc_counts_signed_zeros_and_ties_as_equal() -> None:
    rng = np.random.default_rng(12)
    for _ in range(200):
        n = int(rng.integers(2, 80))
        truth = rng.integers(0, 2, n).astype(float)
        if truth.min() == truth.max():
            continue
        scores = rng.choice(np.array([-0.0, 0.0, 0.25, -0.25, 1.0]), n)
        pairs = [(p, q) for p, t in zip(scores, truth) if t == 1 for q, u in zip(scores, truth) if u == 0]
        u_statistic = sum(1.0 if p > q else 0.5 if p == q else 0.0 for p, q in pairs)
        assert _binary_auc(truth, scores) == u_statistic / len(pairs)


def test_row_sums_name_the_first_bad_row_past_the_first_block() -> None:
    rng = np.random.default_rng(21)
    n = 70_000
    probs = rng.dirichlet(np.ones(3), n)
    for bad_row in (0, 32_767, 32_768, 50_000, n - 1):
        columns = [probs[:, j].copy() for j in range(3)]
        columns[1][bad_row] += 0.25
        columns[2][n - 1 if bad_row < n - 1 else 0] -= 0.5  # a later (or earlier) bad row too
        first = min(bad_row, n - 1 if bad_row < n - 1 else 0)
        total = (0.0 + columns[0][first]) + columns[1][first] + columns[2][first]
        ids = pd.Series([f"r{i}" for i in range(n)])
        with pytest.raises(InvalidSubmission) as excinfo:
            check_row_sums(columns, columns=["a", "b", "c"], ids=ids, tolerance=1e-6)
        assert str(excinfo.value) == (
            f"Submission probabilities in columns 'a', 'b', 'c' sum to {float(total)!r} at row {first + 1} "
            f"(id 'r{first}'); each row must sum to 1 (within 1e-06)."
        )
    check_row_sums([probs[:, j] for j in range(3)], columns=["a", "b", "c"], ids=pd.Series(range(n)), tolerance=1e-6)
