"""Built-in metrics: agreement with scikit-learn, directions, and the properties every metric keeps."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn import metrics as skm

from grading.errors import InvalidSubmission
from grading.metrics import METRICS, TargetKind, accuracy_score, get_metric, log_loss, mae_error, rmse_error, roc_auc_score

RNG = np.random.default_rng(0)

# Per metric: aligned (answers, a reasonable prediction) to check the common properties on.
PROPERTY_SETS = {
    "accuracy_score": (RNG.integers(0, 3, 50), RNG.integers(0, 3, 50)),
    "rmse_error": (RNG.normal(size=50), RNG.normal(size=50)),
    "mae_error": (RNG.normal(size=50), RNG.normal(size=50)),
    "roc_auc_score": (np.arange(50) % 2, RNG.uniform(size=50)),
    "log_loss": (np.arange(50) % 2, RNG.uniform(0.05, 0.95, size=50)),
}


def test_every_metric_has_a_property_set() -> None:
    assert set(PROPERTY_SETS) == set(METRICS)


@pytest.mark.parametrize("name", sorted(METRICS))
def test_name_states_direction(name: str) -> None:
    metric = METRICS[name]
    assert metric.higher_is_better is name.endswith("_score")
    assert name.endswith(("_score", "_error", "_loss"))


@pytest.mark.parametrize("name", sorted(METRICS))
def test_perfect_prediction_scores_best_and_beats_a_real_one(name: str) -> None:
    metric = METRICS[name]
    y_true, y_pred = PROPERTY_SETS[name]
    perfect = metric(y_true, y_true.astype(float) if metric.target_kind is not TargetKind.LABEL else y_true)
    assert perfect == pytest.approx(metric.best, abs=1e-9)
    other = metric(y_true, y_pred)
    assert (perfect > other) if metric.higher_is_better else (perfect < other)


@pytest.mark.parametrize("name", sorted(METRICS))
def test_row_order_does_not_matter(name: str) -> None:
    metric = METRICS[name]
    y_true, y_pred = PROPERTY_SETS[name]
    order = RNG.permutation(len(y_true))
    assert metric(y_true[order], y_pred[order]) == pytest.approx(metric(y_true, y_pred))


@pytest.mark.parametrize("name", sorted(METRICS))
def test_returns_python_float(name: str) -> None:
    y_true, y_pred = PROPERTY_SETS[name]
    assert type(METRICS[name](y_true, y_pred)) is float


def test_accuracy_matches_sklearn_on_bool_labels() -> None:
    y_true = np.array([True, False, True, True])
    y_pred = np.array([True, True, True, False])
    assert accuracy_score(y_true, y_pred) == skm.accuracy_score(y_true, y_pred) == 0.5


def test_accuracy_compares_bool_answers_with_01_predictions_like_mlebench() -> None:
    # pandas reads "1"/"0" as integers; MLE-bench's sklearn call treats them as True/False.
    assert accuracy_score(np.array([True, False, True]), np.array([1, 0, 0])) == pytest.approx(2 / 3)


def test_accuracy_text_labels_against_bool_answers_are_invalid() -> None:
    with pytest.raises(InvalidSubmission, match=r"^predicted labels cannot be compared with the answers: Mix of label"):
        accuracy_score(np.array([True, False]), np.array(["yes", "no"], dtype=object))


def test_accuracy_continuous_predictions_for_classes_are_invalid() -> None:
    with pytest.raises(InvalidSubmission, match="can't handle a mix of binary and continuous"):
        accuracy_score(np.array([1, 0, 1]), np.array([0.7, 0.2, 0.9]))


def test_accuracy_text_labels() -> None:
    y = np.array(["cat", "dog", "cat"], dtype=object)
    assert accuracy_score(y, np.array(["cat", "cat", "cat"], dtype=object)) == pytest.approx(2 / 3)


def test_accuracy_several_columns_is_subset_accuracy() -> None:
    y_true = np.array([[1, 2], [3, 4], [5, 6]])
    y_pred = np.array([[1, 2], [3, 0], [5, 6]])
    assert accuracy_score(y_true, y_pred) == pytest.approx(2 / 3)


def test_rmse_and_mae_match_sklearn() -> None:
    y_true, y_pred = RNG.normal(size=40), RNG.normal(size=40)
    assert rmse_error(y_true, y_pred) == pytest.approx(np.sqrt(skm.mean_squared_error(y_true, y_pred)))
    assert mae_error(y_true, y_pred) == pytest.approx(skm.mean_absolute_error(y_true, y_pred))
    y_true2, y_pred2 = RNG.normal(size=(40, 3)), RNG.normal(size=(40, 3))
    per_column = np.sqrt(skm.mean_squared_error(y_true2, y_pred2, multioutput="raw_values"))
    assert rmse_error(y_true2, y_pred2) == pytest.approx(per_column.mean())
    assert mae_error(y_true2, y_pred2) == pytest.approx(skm.mean_absolute_error(y_true2, y_pred2))


def test_roc_auc_matches_sklearn() -> None:
    y_true, y_score = np.arange(30) % 2, RNG.uniform(size=30)
    assert roc_auc_score(y_true, y_score) == pytest.approx(skm.roc_auc_score(y_true, y_score))
    indicator = (RNG.uniform(size=(30, 3)) > 0.5).astype(int)
    scores = RNG.uniform(size=(30, 3))
    assert roc_auc_score(indicator, scores) == pytest.approx(skm.roc_auc_score(indicator, scores))


def test_log_loss_matches_sklearn_binary_and_multiclass() -> None:
    y_true, p = np.arange(30) % 2, RNG.uniform(0.01, 0.99, size=30)
    assert log_loss(y_true, p) == pytest.approx(skm.log_loss(y_true, p))
    labels = RNG.integers(0, 4, 30)
    labels[:4] = [0, 1, 2, 3]
    probs = RNG.uniform(0.01, 1.0, size=(30, 4))
    one_hot = np.eye(4)[labels]
    assert log_loss(one_hot, probs) == pytest.approx(skm.log_loss(labels, probs / probs.sum(axis=1, keepdims=True)))


def test_log_loss_clips_confident_mistakes() -> None:
    # Both rows are certain and wrong: each costs -log(eps) (the second via 1 - (1 - eps) in floats).
    expected = -(np.log(1e-15) + np.log(1 - (1 - 1e-15))) / 2
    assert log_loss(np.array([1, 0]), np.array([0.0, 1.0])) == pytest.approx(expected)


def test_log_loss_rows_summing_to_zero_are_invalid() -> None:
    with pytest.raises(InvalidSubmission, match=r"^class probabilities at row 2 \(in answer order\) sum to 0"):
        log_loss(np.eye(2), np.array([[0.5, 0.5], [0.0, 0.0]]))


def test_get_metric_unknown_lists_known() -> None:
    assert get_metric("rmse_error") is METRICS["rmse_error"]
    with pytest.raises(KeyError, match="unknown metric 'f1'; known metrics: accuracy_score, log_loss"):
        get_metric("f1")


def test_param_names() -> None:
    assert METRICS["roc_auc_score"].param_names == ("average",)
    assert METRICS["log_loss"].param_names == ("eps", "normalize_rows")
    assert METRICS["accuracy_score"].param_names == ()
