"""Built-in metrics: the registry, agreement with scikit-learn and scipy, and hand-computed values."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import yaml
from scipy import stats
from sklearn import metrics as skm

from mleaudit.grading.errors import ConfigError, InvalidSubmission
from mleaudit.grading.grade import score_frames
from mleaudit.grading.metrics import (
    METRICS,
    MLEBENCH_LABELS,
    SCORING_PARAMS,
    TargetKind,
    accuracy_score,
    box3d_map_score,
    coco_map_score,
    dice_hausdorff_score,
    get_metric,
    grouped_log_mae_error,
    jigsaw_bias_auc_score,
    kl_divergence_loss,
    laplace_log_likelihood_score,
    log_loss,
    lwlrap_score,
    mae_error,
    map_at_k_score,
    mask_iou_precision_score,
    matthews_corrcoef_score,
    mean_angular_error,
    mean_fbeta_mask_score,
    mean_haversine_distance_error,
    micro_f1_score,
    normalized_edit_distance_error,
    pearson_correlation_score,
    probabilistic_f1_score,
    quadratic_weighted_kappa_score,
    rmse_error,
    rmsle_error,
    roc_auc_score,
    spearman_correlation_score,
    weighted_auc_score,
    weighted_multilabel_log_loss,
    word_jaccard_score,
)
from mleaudit.grading.metrics.ranking import _single_label_mean_ap
from tests.conftest import shared_path

RNG = np.random.default_rng(0)


def frames(**columns: list) -> pd.DataFrame:
    frame = pd.DataFrame(columns)
    frame.attrs["id_columns"] = [frame.columns[0]]
    return frame


# --- the registry ---------------------------------------------------------------------------


def test_every_mlebench_grader_label_is_registered() -> None:
    configs = shared_path("mlebench", "competitions")
    labels = {yaml.safe_load(p.read_text())["grader"]["name"] for p in configs.glob("*/config.yaml")}
    assert len(labels) == 45
    assert labels == set(MLEBENCH_LABELS)
    assert labels <= set(METRICS)


@pytest.mark.parametrize("name", sorted(n for n, m in METRICS.items() if m.alias_of is None))
def test_function_names_state_direction(name: str) -> None:
    metric = METRICS[name]
    assert name == metric.fn.__name__
    assert name.endswith(("_score", "_error", "_loss"))
    assert metric.higher_is_better is name.endswith("_score")
    assert metric.fn.__doc__ and "Returns" in metric.fn.__doc__


@pytest.mark.parametrize("label", sorted(MLEBENCH_LABELS))
def test_labels_are_aliases_of_their_function(label: str) -> None:
    alias = METRICS[label]
    target = METRICS[alias.alias_of]
    assert alias.fn is target.fn
    assert (alias.higher_is_better, alias.best, alias.frame) == (target.higher_is_better, target.best, target.frame)
    assert set(alias.defaults) <= set(target.param_names)


def test_param_names_are_the_function_parameters_then_the_scoring_ones() -> None:
    assert METRICS["roc_auc_score"].param_names == ("average", "ignore_label", *SCORING_PARAMS)
    assert METRICS["log_loss"].own_param_names == ("eps", "normalize_rows")
    assert METRICS["accuracy_score"].own_param_names == ("as_text",)
    assert METRICS["map_at_k_score"].own_param_names == ("k",)


def test_calling_an_alias_applies_its_own_defaults_only() -> None:
    # MAP@12's extra_ids default acts in the scoring path, not in the function.
    answers = frames(Image=["a"], Id=["x"])
    sub = frames(Image=["a"], Id=[" ".join(f"w{i}" for i in range(11)) + " x"])
    assert METRICS["MAP@12"](answers, sub, id_columns=["Image"], target_columns=["Id"]) == pytest.approx(1 / 12)
    assert METRICS["MAP@5"](answers, sub, id_columns=["Image"], target_columns=["Id"]) == 0.0


def test_get_metric_unknown_lists_known() -> None:
    assert get_metric("rmse_error") is METRICS["rmse_error"]
    with pytest.raises(KeyError, match=r"unknown metric 'f1'; known metrics: KL-divergence, MAP@12, MAP@5, accuracy, "):
        get_metric("f1")


# --- classification -------------------------------------------------------------------------


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


def test_accuracy_text_labels_and_as_text() -> None:
    y = np.array(["cat", "dog", "cat"], dtype=object)
    assert accuracy_score(y, np.array(["cat", "cat", "cat"], dtype=object)) == pytest.approx(2 / 3)
    # Text normalisation answers: "2" in one file and 2 in the other are the same token.
    assert accuracy_score(np.array(["2", "two"], dtype=object), np.array([2, "two"], dtype=object), as_text=True) == 1.0


def test_accuracy_several_columns_is_subset_accuracy() -> None:
    y_true = np.array([[1, 2], [3, 4], [5, 6]])
    y_pred = np.array([[1, 2], [3, 0], [5, 6]])
    assert accuracy_score(y_true, y_pred) == pytest.approx(2 / 3)


def test_micro_f1_ignores_labels_no_answer_has() -> None:
    answers = frames(id=["a", "b", "c"], tags=["x y", "z", None])
    sub = frames(id=["a", "b", "c"], tags=["x q", "z z", "q"])
    # true pairs {a:x, a:y, b:z}; predicted, known labels only, {a:x, b:z}: 2 TP, 3 + 2 pairs.
    assert micro_f1_score(answers, sub, id_columns=["id"], target_columns=["tags"]) == pytest.approx(4 / 5)


def test_micro_f1_single_labels_is_sklearn_micro_f1() -> None:
    truth = RNG.choice(["a b", "c", "d e"], 40)
    pred = RNG.choice(["a b", "c", "d e"], 40)
    answers, sub = frames(id=range(40), y=truth), frames(id=range(40), y=pred)
    expected = skm.f1_score(truth, pred, average="micro")
    assert micro_f1_score(answers, sub, id_columns=["id"], target_columns=["y"], multilabel=False) == pytest.approx(expected)


def test_macro_f1_matches_sklearn_and_reads_integer_ids() -> None:
    truth, pred = RNG.integers(0, 6, 50), RNG.integers(0, 7, 50)
    answers, sub = frames(Id=range(50), Predicted=truth), frames(Id=range(50), Predicted=[f"{p}.0" for p in pred])
    expected = skm.f1_score(truth, pred, average="macro")
    assert score_frames(sub, answers, metric="macro-f1-score", id_column="Id", target_columns=["Predicted"]) == pytest.approx(
        expected
    )


def test_top1_error_reads_the_first_class() -> None:
    answers = frames(id=["a", "b", "c", "d"], predicted=[3, 5, 7, 9])
    sub = frames(id=["a", "b", "c", "d"], predicted=["3 1 2", "4 5", "7", "9 9"])
    assert score_frames(sub, answers, metric="top-1-classification-error", id_column="id", target_columns=["predicted"]) == 0.25


def test_kappa_and_mcc_match_sklearn() -> None:
    truth, pred = RNG.integers(0, 5, 60), RNG.integers(0, 5, 60)
    assert quadratic_weighted_kappa_score(truth, pred) == pytest.approx(skm.cohen_kappa_score(truth, pred, weights="quadratic"))
    binary_truth, binary_pred = truth % 2, pred % 2
    assert matthews_corrcoef_score(binary_truth, binary_pred) == pytest.approx(skm.matthews_corrcoef(binary_truth, binary_pred))


def test_probabilistic_f1_by_hand() -> None:
    # ctp = 0.9 + 0.6, cfp = 0.2 + 0.1 (1.2 clipped to 1 counts 1): precision 1.5/1.8, recall 1.5/2.
    assert probabilistic_f1_score(np.array([1, 0, 1, 0]), np.array([0.9, 0.2, 0.6, 0.1])) == pytest.approx(
        2 * (1.5 / 1.8) * 0.75 / (1.5 / 1.8 + 0.75)
    )
    assert probabilistic_f1_score(np.array([1, 0]), np.array([1.2, -0.5])) == 1.0
    # Nothing predicted positive: precision is 0 / 0, NaN in MLE-bench's NumPy sums, and the score 0.
    assert probabilistic_f1_score(np.array([1, 0]), np.array([0.0, -0.5])) == 0.0
    # A positive predicted on negatives only: precision 0, so F 0.
    assert probabilistic_f1_score(np.array([1, 0]), np.array([0.0, 0.4])) == 0.0
    with pytest.raises(ConfigError, match="no positive answer"):
        probabilistic_f1_score(np.array([0, 0]), np.array([0.5, 0.5]))


# --- probabilities and scores -----------------------------------------------------------------


def test_roc_auc_matches_sklearn_with_ties_and_columns() -> None:
    for decimals in (0, 1, 3):
        y_true, y_score = np.arange(300) % 2, RNG.uniform(size=300).round(decimals)
        assert roc_auc_score(y_true, y_score) == pytest.approx(skm.roc_auc_score(y_true, y_score), abs=1e-15)
    indicator = (RNG.uniform(size=(30, 3)) > 0.5).astype(int)
    scores = RNG.uniform(size=(30, 3))
    assert roc_auc_score(indicator, scores) == pytest.approx(skm.roc_auc_score(indicator, scores))


def test_roc_auc_ignores_rows_marked_minus_one() -> None:
    y_true = np.array([[1, 0], [0, 1], [-1, -1], [1, 1], [0, 0]])
    y_pred = np.array([[0.9, 0.1], [0.2, 0.8], [0.0, 1.0], [0.7, 0.6], [0.4, 0.3]])
    expected = skm.roc_auc_score(y_true[[0, 1, 3, 4]], y_pred[[0, 1, 3, 4]])
    assert roc_auc_score(y_true, y_pred, ignore_label=-1) == pytest.approx(expected) == 1.0


def test_roc_auc_on_one_class_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match=r"^roc_auc_score is undefined on these answers: the answers hold a single class$"):
        roc_auc_score(np.array([1, 1, 1]), np.array([0.2, 0.5, 0.9]))


def test_weighted_auc_by_hand() -> None:
    assert weighted_auc_score(np.array([0, 0, 1, 1]), np.array([0.1, 0.2, 0.8, 0.9])) == 1.0
    assert weighted_auc_score(np.array([0, 0, 1, 1]), np.array([0.9, 0.8, 0.2, 0.1])) == 0.0
    # One positive ranked first, one last: the ROC curve is (0,0) (0,.5) (1,.5) (1,1). Band [0, .4]
    # is filled from FPR 0 (area .4, weight 2); band [.4, 1] holds only the vertical edges at
    # FPR 0 and 1: area 0.1 * 1 (from .4 to .5 at FPR 0, closed to FPR 1). Total (0.8 + 0.1) / 1.4.
    assert weighted_auc_score(np.array([1, 0, 0, 1]), np.array([0.9, 0.5, 0.4, 0.1])) == pytest.approx(0.9 / 1.4)


def test_log_loss_matches_sklearn_binary_and_multiclass() -> None:
    y_true, p = np.arange(30) % 2, RNG.uniform(0.01, 0.99, size=30)
    assert log_loss(y_true, p) == pytest.approx(skm.log_loss(y_true, p))
    labels = RNG.integers(0, 4, 30)
    labels[:4] = [0, 1, 2, 3]
    probs = RNG.dirichlet(np.ones(4), 30)
    assert log_loss(np.eye(4)[labels], probs) == pytest.approx(skm.log_loss(labels, probs))


def test_log_loss_clips_confident_mistakes_like_sklearn() -> None:
    eps = np.finfo(np.float64).eps
    assert log_loss(np.array([1, 0]), np.array([0.0, 1.0])) == pytest.approx(-np.log(eps))
    assert log_loss(np.array([1, 0]), np.array([0.0, 1.0]), eps=1e-15) == pytest.approx(-np.log(1e-15), rel=1e-6)


def test_log_loss_rows_summing_to_zero_are_invalid_when_normalised() -> None:
    with pytest.raises(InvalidSubmission, match=r"^class probabilities at row 2 \(in answer order\) sum to 0"):
        log_loss(np.eye(2), np.array([[0.5, 0.5], [0.0, 0.0]]), normalize_rows=True)


def test_kl_divergence_by_hand() -> None:
    votes = np.array([[0, 3, 1], [2, 0, 0]])
    pred = np.array([[0.1, 0.6, 0.3], [0.5, 0.25, 0.25]])
    expected = (0.75 * np.log(0.75 / 0.6) + 0.25 * np.log(0.25 / 0.3) + np.log(1 / 0.5)) / 2
    assert kl_divergence_loss(votes, pred) == pytest.approx(expected)


def test_lwlrap_weights_rows_by_their_labels_like_sklearn() -> None:
    truth = (RNG.uniform(size=(40, 6)) < 0.3).astype(int)
    truth[0] = 0
    scores = RNG.uniform(size=(40, 6))
    rows = truth.sum(axis=1) > 0
    expected = skm.label_ranking_average_precision_score(truth[rows], scores[rows], sample_weight=truth.sum(axis=1)[rows])
    assert lwlrap_score(truth, scores) == pytest.approx(expected)


def test_weighted_multilabel_log_loss_by_hand() -> None:
    variables = ["patient_overall", *(f"C{i}" for i in range(1, 8))]
    answers = frames(row_id=[f"1.2.3_{v}" for v in variables], fractured=[1] + [0] * 7)
    sub = frames(row_id=answers["row_id"], fractured=[0.5] * 8)
    # Every variable costs ln 2 whatever its weight.
    assert weighted_multilabel_log_loss(answers, sub, id_columns=["row_id"], target_columns=["fractured"]) == pytest.approx(
        np.log(2)
    )
    sub = frames(row_id=answers["row_id"], fractured=[1.0] + [0.5] * 7)
    # Study loss: (14 * 0 + 7 * 1 * ln 2) / (14 + 7).
    assert weighted_multilabel_log_loss(answers, sub, id_columns=["row_id"], target_columns=["fractured"]) == pytest.approx(
        7 * np.log(2) / 21, abs=1e-12
    )


def test_jigsaw_bias_auc_against_sklearn_subsets() -> None:
    n = 60
    tox = RNG.uniform(size=n)
    ident = np.where(RNG.uniform(size=n) < 0.5, RNG.uniform(size=n), np.nan)
    pred = np.clip(tox + RNG.normal(0, 0.3, n), 0, 1)
    answers = frames(id=range(n), toxicity=tox, group=ident)
    sub = frames(id=range(n), toxicity=pred)
    y, member = tox >= 0.5, np.nan_to_num(ident) >= 0.5
    parts = [skm.roc_auc_score(y[s], pred[s]) for s in (member, (~y & member) | (y & ~member), (y & member) | (~y & ~member))]
    expected = 0.25 * skm.roc_auc_score(y, pred) + 0.25 * sum(parts)  # one identity: each generalized mean is the AUC
    value = jigsaw_bias_auc_score(
        answers, sub, id_columns=["id"], target_columns=["toxicity"], identity_columns=["group"], binarize_predictions=False
    )
    assert value == pytest.approx(expected)


# --- numbers ----------------------------------------------------------------------------------


def test_rmse_mae_rmsle_match_sklearn() -> None:
    y_true, y_pred = RNG.uniform(0, 5, 40), RNG.uniform(0, 5, 40)
    assert rmse_error(y_true, y_pred) == pytest.approx(skm.root_mean_squared_error(y_true, y_pred))
    assert mae_error(y_true, y_pred) == pytest.approx(skm.mean_absolute_error(y_true, y_pred))
    assert rmsle_error(y_true, y_pred) == pytest.approx(skm.root_mean_squared_log_error(y_true, y_pred))
    y_true2, y_pred2 = RNG.uniform(0, 5, (40, 3)), RNG.uniform(0, 5, (40, 3))
    assert rmse_error(y_true2, y_pred2) == pytest.approx(skm.root_mean_squared_error(y_true2, y_pred2))
    assert mae_error(y_true2, y_pred2) == pytest.approx(skm.mean_absolute_error(y_true2, y_pred2))
    per_column = [skm.root_mean_squared_log_error(y_true2[:, j], y_pred2[:, j]) for j in range(3)]
    assert rmsle_error(y_true2, y_pred2) == pytest.approx(np.mean(per_column))


def test_mae_rounds_like_the_volcano_grader() -> None:
    assert mae_error(np.array([0.0, 0.0]), np.array([1.0, 2.2]), decimals=0) == 2.0
    assert mae_error(np.array([0.0]), np.array([2.5]), decimals=0) == 2.0  # round half to even, as Python


def test_correlations_match_scipy() -> None:
    a, b = RNG.normal(size=(50, 2)), RNG.normal(size=(50, 2))
    assert pearson_correlation_score(a[:, 0], b[:, 0]) == pytest.approx(stats.pearsonr(a[:, 0], b[:, 0])[0])
    expected = np.mean([stats.spearmanr(b[:, j], a[:, j]).statistic for j in range(2)])
    assert spearman_correlation_score(a, b) == pytest.approx(expected)


def test_grouped_log_mae_by_hand() -> None:
    answers = frames(id=["a", "b", "c", "d"], y=[1.0, 2.0, 3.0, 4.0], type=["p", "p", "q", "r"])
    sub = frames(id=["a", "b", "c", "d"], y=[2.0, 2.0, 3.5, 4.0])
    # p: MAE 0.5; q: 0.5; r: 0, floored at 1e-9.
    expected = (2 * np.log(0.5) + np.log(1e-9)) / 3
    assert grouped_log_mae_error(answers, sub, id_columns=["id"], target_columns=["y"]) == pytest.approx(expected)


def test_haversine_percentiles_per_trip_by_hand() -> None:
    metres_per_millidegree = 6_371_000 * np.deg2rad(0.001)
    answers = frames(tripId=["t", "t", "t", "u"], LatitudeDegrees=[0.0] * 4, LongitudeDegrees=[0.0, 1.0, 2.0, 3.0])
    sub = answers.assign(LatitudeDegrees=[0.0, 0.001, 0.002, 0.0])
    # Trip t: errors 0, 1, 2 (millidegrees): p50 1, p95 1.9; trip u: 0.
    expected = (1.0 + 1.9) / 2 * metres_per_millidegree / 2
    value = mean_haversine_distance_error(answers, sub, id_columns=["tripId"], target_columns=["LatitudeDegrees", "LongitudeDegrees"])
    assert value == pytest.approx(expected)


def test_mean_angular_error_by_hand() -> None:
    answers = frames(event_id=[1, 2], azimuth=[0.0, 1.0], zenith=[np.pi / 2, 0.0])
    sub = frames(event_id=[1, 2], azimuth=[np.pi / 2, 2.5], zenith=[np.pi / 2, np.pi])
    assert mean_angular_error(answers, sub, id_columns=["event_id"], target_columns=["azimuth", "zenith"]) == pytest.approx(
        (np.pi / 2 + np.pi) / 2
    )


def test_laplace_log_likelihood_scores_each_patients_last_weeks() -> None:
    answers = frames(
        Patient_Week=["p_-2", "p_4", "p_10", "p_17", "p_25"], FVC=[3000.0, 2900.0, 2800.0, np.nan, 2700.0], Patient=["p"] * 5
    )
    sub = frames(Patient_Week=answers["Patient_Week"], FVC=[0.0, 2900.0, 2700.0, 1.0, 4000.0], Confidence=[1, 50, 100, 1, 200])
    # Scored: weeks 4, 10, 25 (the last three with a value).
    sigma, delta = np.array([70.0, 100.0, 200.0]), np.array([0.0, 100.0, 1000.0])
    expected = np.mean(-np.sqrt(2) * delta / sigma - np.log(np.sqrt(2) * sigma))
    value = laplace_log_likelihood_score(answers, sub, id_columns=["Patient_Week"], target_columns=["FVC", "Confidence"])
    assert value == pytest.approx(expected)


# --- rankings and text ------------------------------------------------------------------------


def test_map_at_k_by_hand() -> None:
    answers = frames(c=["a", "b", "c"], p=["x y", "z", "q"])
    sub = frames(c=["a", "b", "c"], p=["y w x", "w z z", ""])
    # a: hits at 1 and 3: (1/1 + 2/3) / 2; b: hit at 2: 1/2; c: nothing.
    expected = ((1 + 2 / 3) / 2 + 1 / 2 + 0) / 3
    assert map_at_k_score(answers, sub, id_columns=["c"], target_columns=["p"], k=5) == pytest.approx(expected)
    # With k = 2 the third label of row a no longer counts: (1/1) / min(2, 2).
    assert map_at_k_score(answers, sub, id_columns=["c"], target_columns=["p"], k=2) == pytest.approx((0.5 + 0.5) / 3)


def test_map_at_k_single_label_path_agrees_with_the_general_one() -> None:
    labels = ["w_1", "w_12", "a", "b", "new_whale"]
    truth = pd.Series(RNG.choice(labels, 400))
    cells = [" ".join(RNG.choice(labels + ["", "w_1w", "1"], RNG.integers(0, 8))) for _ in range(400)]
    pred = pd.Series(cells, dtype=object)
    pred[::17] = None
    fast = _single_label_mean_ap(truth, pred, 5)
    assert fast is not None
    # One more row whose answer holds two labels (and is missed: AP 0) sends the same data
    # through the general path.
    two = pd.concat([truth, pd.Series(["zzz yyy"])], ignore_index=True)
    more = pd.concat([pred, pd.Series(["q"], dtype=object)], ignore_index=True)
    answers, sub = frames(i=range(401), p=two), frames(i=range(401), p=more)
    general = map_at_k_score(answers, sub, id_columns=["i"], target_columns=["p"], k=5)
    assert general == pytest.approx(fast * 400 / 401)


def test_kendall_tau_is_pooled_over_rows() -> None:
    answers = frames(id=["n1", "n2"], cell_order=["a b c d", "x y"])
    sub = frames(id=["n1", "n2"], cell_order=["d c b a", "x y"])
    # 6 swaps of 4*3 + 2*1 = 14 ordered pairs.
    assert METRICS["kendall-tau"](answers, sub, id_columns=["id"], target_columns=["cell_order"]) == pytest.approx(1 - 24 / 14)


def test_edit_distances_by_hand() -> None:
    answers = frames(id=[1, 2], s=["kitten", "flaw"])
    sub = frames(id=[1, 2], s=["sitting", "lawn"])
    assert METRICS["levenshtein-distance"](answers, sub, id_columns=["id"], target_columns=["s"]) == 2.5
    answers = frames(Id=[1, 2], Sequence=["1 2 3 4", "5"])
    sub = frames(Id=[1, 2], Sequence=["1 3 4", "5 5 06"])
    # 1 deletion + 2 insertions over 5 true gestures (tokens compared as integers).
    assert normalized_edit_distance_error(answers, sub, id_columns=["Id"], target_columns=["Sequence"]) == pytest.approx(3 / 5)


def test_word_jaccard_by_hand_and_empty_rows() -> None:
    answers = frames(id=[1, 2, 3], t=["The cat sat", "dog", ""])
    sub = frames(id=[1, 2, 3], t=["the CAT ran", "", ""])
    # Row 1: {the, cat} of {the, cat, sat, ran}: 0.5; row 2: 0; row 3: both empty.
    assert word_jaccard_score(answers, sub, id_columns=["id"], target_columns=["t"]) == pytest.approx(0.5 / 3)
    assert word_jaccard_score(answers, sub, id_columns=["id"], target_columns=["t"], empty_score=1.0) == pytest.approx(1.5 / 3)


def test_answer_spans_by_hand() -> None:
    answers = frames(example_id=["1_long", "1_short", "2_long", "2_short"], PredictionString=["3:9", "YES 4:5", "", "7:8"])
    sub = frames(example_id=answers["example_id"], PredictionString=["3:9", "4:5", "1:2", ""])
    assert METRICS["answer_span_accuracy_score"](
        answers, sub, id_columns=["example_id"], target_columns=["PredictionString"]
    ) == pytest.approx(0.5)


# --- masks and boxes --------------------------------------------------------------------------


def test_dice_f_beta_and_global_dice_by_hand() -> None:
    answers = frames(id=["a", "b"], m=["1 4", "2 2"], height=[4, 4], width=[4, 4])
    sub = frames(id=["a", "b"], m=["3 4", None])
    # a: 2 shared of 4 + 4; b: 0 of 2 + 0.
    assert METRICS["mean_dice_score"](answers, sub, id_columns=["id"], target_columns=["m"]) == pytest.approx(0.25)
    assert METRICS["global_dice_score"](answers, sub, id_columns=["id"], target_columns=["m"]) == pytest.approx(4 / 10)
    # F0.5 of a: 1.25 * 2 / (0.25 * 4 + 4) = 0.5; b: nothing predicted = 0.
    assert mean_fbeta_mask_score(answers, sub, id_columns=["id"], target_columns=["m"]) == pytest.approx(0.25)


def test_tgs_iou_precision_and_the_empty_prediction_quirk() -> None:
    answers = frames(id=["a", "b", "c"], rle_mask=["1 6", "1 6", ""])
    sub = frames(id=["a", "b", "c"], rle_mask=["1 5", "", "3 1"])
    # a: IoU 5/6 beats 7 of the 10 thresholds (0.5 .. 0.8); b: an empty prediction counts as the
    # whole 10-pixel image, IoU 0.6 beats 0.5 and 0.55; c: salt predicted where there is none.
    value = mask_iou_precision_score(answers, sub, id_columns=["id"], target_columns=["rle_mask"], height=2, width=5)
    assert value == pytest.approx((0.7 + 0.2 + 0.0) / 3)


def test_dice_hausdorff_by_hand() -> None:
    answers = frames(id=["case1_day1_slice_0001"], cls=["stomach"], m=["1 1"], image_height=[2], image_width=[1])
    answers.attrs["id_columns"] = ["id", "cls"]
    sub = frames(id=["case1_day1_slice_0001"], cls=["stomach"], m=["2 1"])
    sub.attrs["id_columns"] = ["id", "cls"]
    # Dice 0; the pixels (0, 0) and (1, 0) of a 2 x 1 slice are 0.5 apart in unit-cube coordinates.
    expected = 0.6 * (1 - 0.5 / np.sqrt(3))
    assert dice_hausdorff_score(answers, sub, id_columns=["id", "cls"], target_columns=["m"]) == pytest.approx(expected)


def test_coco_map_keeps_pycocotools_annotation_id_zero_quirk() -> None:
    answers = pd.DataFrame(
        {"image_id": ["im", "im"], "class_id": [3, 3], "x_min": [0, 500], "y_min": [0, 500], "x_max": [100, 600], "y_max": [100, 600]}
    )
    sub = frames(image_id=["im"], PredictionString=["3 0.9 0 0 100 100 3 0.8 500 500 600 600"])
    # The first true box has annotation id 0, which COCO reads as "no match": its perfect
    # prediction is a false positive. Precision 0.5 up to recall 0.5: 51 of 101 recall points.
    value = coco_map_score(answers, sub, id_columns=["image_id"], target_columns=["PredictionString"])
    assert value == pytest.approx(0.5 * 51 / 101)


def test_box3d_map_by_hand() -> None:
    box = "1.0 10 20 0 2 2 2 {yaw} car"
    answers = frames(Id=["s"], PredictionString=[box.format(yaw=0)])

    def score(pred: str) -> float:
        sub = frames(Id=["s"], PredictionString=[pred])
        return box3d_map_score(answers, sub, id_columns=["Id"], target_columns=["PredictionString"])

    assert score(box.format(yaw=0)) == 1.0
    assert score(box.format(yaw=np.pi / 2)) == pytest.approx(1.0)  # a square footprint turned a quarter
    # Shifted half a metre: IoU 6/10 passes the thresholds 0.5 and 0.55 only.
    assert score("0.9 10.5 20 0 2 2 2 0 car") == pytest.approx(0.2)
    # Turned 45 degrees: the footprints share an octagon of 8 (sqrt 2 - 1); IoU = 0.7071.
    octagon = 8 * (np.sqrt(2) - 1)
    iou = octagon / (8 - octagon)
    assert iou == pytest.approx(np.sqrt(2) / 2)
    assert score(box.format(yaw=np.pi / 4)) == pytest.approx(np.mean(np.array([0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95]) < iou))
    assert score("0.9 10 20 0 2 2 2 0 bus") == 0.0


def test_text_metrics_are_frame_metrics() -> None:
    # Parsing a cell can fail, and only a frame metric can name the submission row at fault.
    text = [name for name, metric in METRICS.items() if metric.target_kind is TargetKind.TEXT]
    assert text and all(METRICS[name].frame for name in text)
    assert math.isclose(METRICS["laplace_log_likelihood_score"].best, -math.log(math.sqrt(2) * 70))


def test_real_insult_comments_are_matched_by_date_and_comment(tmp_path) -> None:
    # Kaggle's insult test set: comments repeat, some have no date, cells hold quotes and newlines.
    from mleaudit.grading.grade import score_csv

    answers_path = shared_path("kaggle-raw", "detecting-insults-in-social-commentary", "test_with_solutions.csv")
    answers = pd.read_csv(answers_path, dtype={"Date": str, "Comment": str})
    assert answers["Comment"].duplicated().any() and answers["Date"].isna().any()
    scores = np.clip(answers["Insult"] * 0.4 + RNG.uniform(size=len(answers)) * 0.6, 0, 1).round(4)
    submission = answers.assign(Insult=scores).sample(frac=1.0, random_state=3)
    submission.to_csv(tmp_path / "submission.csv", index=False)
    value = score_csv(
        tmp_path / "submission.csv",
        answers_path,
        metric="auc-roc",
        id_column="Comment",
        target_columns=["Insult"],
        params={"id_columns": ["Date", "Comment"]},
    )
    assert value == pytest.approx(skm.roc_auc_score(answers["Insult"], scores))
