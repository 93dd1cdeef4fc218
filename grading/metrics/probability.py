"""Metrics on predicted probabilities and scores: ROC AUC variants, log losses, KL divergence, LRAP.

Answers are binary labels (or one-hot class columns, or vote counts); predictions are scores or
probabilities already checked by validation (finite, and in [0, 1] for probability metrics).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd
from sklearn import metrics as _skm

from mleaudit.grading.errors import ConfigError, InvalidSubmission
from mleaudit.grading.metrics.base import as_matrix, undefined_metric

__all__ = [
    "roc_auc_score",
    "weighted_auc_score",
    "log_loss",
    "weighted_multilabel_log_loss",
    "kl_divergence_loss",
    "lwlrap_score",
]

#: scikit-learn's default clip for log losses: the machine epsilon of float64.
FLOAT_EPS = float(np.finfo(np.float64).eps)


def roc_auc_score(
    y_true: np.ndarray, y_pred: np.ndarray, average: str = "macro", ignore_label: float | None = None
) -> float:
    """Area under the ROC curve of predicted scores against binary answers.

    Parameters
    ----------
    y_true : numpy.ndarray
        Binary answers (0/1 or bool), shape ``(n_rows,)``, or a label-indicator matrix
        ``(n_rows, n_targets)``.
    y_pred : numpy.ndarray of float
        Predicted probabilities of the positive class, same shape.
    average : {"macro", "micro", "weighted", "samples"}
        How per-column AUCs are combined for 2-D input (scikit-learn's meaning; ``"macro"``
        is the mean of the column-wise AUCs, Kaggle's "mean column-wise ROC AUC").
    ignore_label : float, optional
        Answer rows holding this value in any target column are not scored (Kaggle's Jigsaw
        test labels use -1 for rows left out of scoring).

    Returns
    -------
    float
        In [0, 1], higher is better; 0.5 is chance.

    Raises
    ------
    ConfigError
        If a scored answer column holds a single class, so AUC is undefined.

    Examples
    --------
    >>> import numpy as np
    >>> roc_auc_score(np.array([0, 0, 1, 1]), np.array([0.1, 0.4, 0.35, 0.8]))
    0.75
    """
    truth = np.asarray(y_true, dtype=float)
    pred = np.asarray(y_pred, dtype=float)
    if ignore_label is not None:
        keep = ~(as_matrix(truth) == float(ignore_label)).any(axis=1)
        truth, pred = truth[keep], pred[keep]
    if truth.ndim == 1:
        return _binary_auc(truth, pred)
    try:
        return float(_skm.roc_auc_score(truth, pred, average=average))
    except ValueError as exc:
        raise undefined_metric("roc_auc_score", str(exc)) from None


def _binary_auc(truth: np.ndarray, scores: np.ndarray) -> float:
    """ROC AUC of one column as the Mann-Whitney statistic ``U / (n_pos n_neg)`` (:func:`auc_pair_counts`).

    With tied scores sharing their mean rank this is exactly the trapezoidal area scikit-learn
    computes; the counts are integers, so ``U`` is exact.
    """
    above, ties, n_pos, n_neg = auc_pair_counts(truth, scores)
    return (float(above) + 0.5 * float(ties)) / (n_pos * n_neg)


def auc_pair_counts(truth: np.ndarray, scores: np.ndarray) -> tuple[int, int, int, int]:
    """ROC AUC's pair counts: over (positive, negative) pairs, those ranked right and those tied.

    Parameters
    ----------
    truth : numpy.ndarray of float, shape (n_rows,)
        Two-class answers: rows at the column's highest value are positives, those at its
        lowest negatives.
    scores : numpy.ndarray of float, shape (n_rows,)
        Scores, higher meaning positive (NaN-free; ``-0.0`` and ``0.0`` are one score).

    Returns
    -------
    (above, ties, n_pos, n_neg) : tuple of int
        Pairs whose positive scores strictly higher than their negative, pairs with equal
        scores, and the two class sizes. The Mann-Whitney ``U`` is ``above + ties / 2`` and the
        AUC ``U / (n_pos * n_neg)``.

    Raises
    ------
    ConfigError
        If ``truth`` does not hold exactly two values (one class, more classes, or a NaN).

    Notes
    -----
    Both classes' scores are sorted, then merged by a stable sort of the two runs (Timsort
    merges two sorted runs in one linear pass), positives first, so each positive's place in
    the merge, less the positives before it, counts the negatives strictly below it. Ties need
    a binary search, only for the positives whose score some negative has. H. B. Mann and
    D. R. Whitney (1947), "On a test of whether one of two random variables is stochastically
    larger than the other", Ann. Math. Statist. 18(1).

    Examples
    --------
    >>> auc_pair_counts(np.array([0.0, 0.0, 1.0, 1.0]), np.array([0.1, 0.4, 0.4, 0.8]))
    (3, 1, 2, 2)
    """
    truth = np.asarray(truth, dtype=float)
    scores = np.asarray(scores, dtype=float)
    low, high = truth.min(initial=np.inf), truth.max(initial=-np.inf)
    if not (low < high and ((truth == low) | (truth == high)).all()):
        labels = np.unique(truth)
        why = "the answers hold a single class" if labels.size < 2 else f"the answers hold {labels.size} classes, not 2"
        raise undefined_metric("roc_auc_score", why)
    positive = truth == high
    # np.compress copies the selected scores without the general boolean-indexing machinery.
    positives, negatives = np.sort(np.compress(positive, scores)), np.sort(np.compress(~positive, scores))
    n_pos, n_neg = positives.size, negatives.size
    merged = np.argsort(np.concatenate([positives, negatives]), kind="stable")
    below = np.flatnonzero(merged < n_pos) - np.arange(n_pos)
    level = np.flatnonzero(negatives[np.minimum(below, n_neg - 1)] == positives)
    tied = np.searchsorted(negatives, positives[level], side="right") - below[level]
    return int(below.sum()), int(tied.sum()), int(n_pos), int(n_neg)


def _insert_tpr_points(fpr: np.ndarray, tpr: np.ndarray, points: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
    """Add ROC points at the given true-positive rates, interpolating the false-positive rate."""
    fpr_list, tpr_list = fpr.tolist(), tpr.tolist()
    for point in points:
        if point in tpr_list:
            continue
        i = int(np.searchsorted(np.asarray(tpr_list), point, side="right"))
        if i == 0 or i >= len(tpr_list):
            continue
        x0, x1, y0, y1 = fpr_list[i - 1], fpr_list[i], tpr_list[i - 1], tpr_list[i]
        fpr_list.insert(i, x0 + (x1 - x0) * (point - y0) / (y1 - y0))
        tpr_list.insert(i, point)
    return np.asarray(fpr_list), np.asarray(tpr_list)


def weighted_auc_score(
    y_true: np.ndarray,
    y_pred: np.ndarray,
    tpr_thresholds: Sequence[float] = (0.0, 0.4, 1.0),
    weights: Sequence[float] = (2.0, 1.0),
) -> float:
    """ROC AUC with horizontal bands of the ROC curve weighted differently (ALASKA2).

    The area between consecutive true-positive-rate thresholds is computed band by band (the
    part of the ROC curve inside the band, closed by a horizontal line to FPR = 1) and the bands
    are combined with the given weights, normalised so a perfect ranking scores 1. Points at the
    thresholds are added to the curve by linear interpolation first, as MLE-bench's grader does.

    Parameters
    ----------
    y_true : numpy.ndarray
        Binary answers, shape ``(n_rows,)``.
    y_pred : numpy.ndarray of float
        Scores (any real numbers; higher means positive).
    tpr_thresholds : sequence of float
        Band edges on the TPR axis, from 0 to 1.
    weights : sequence of float
        One weight per band.

    Returns
    -------
    float
        In [0, 1], higher is better.

    Raises
    ------
    ConfigError
        If the answers hold a single class.

    References
    ----------
    Kaggle ALASKA2 Image Steganalysis, evaluation page; "Weighted AUC metric (updated)",
    https://www.kaggle.com/code/anokas/weighted-auc-metric-updated

    Examples
    --------
    >>> import numpy as np
    >>> weighted_auc_score(np.array([0, 0, 1, 1]), np.array([0.1, 0.2, 0.8, 0.9]))
    1.0
    """
    truth = np.asarray(y_true, dtype=float)
    if np.unique(truth).size < 2:
        raise undefined_metric("weighted_auc_score", "the answers hold a single class")
    fpr, tpr, _ = _skm.roc_curve(truth, np.asarray(y_pred, dtype=float), pos_label=1)
    fpr, tpr = _insert_tpr_points(fpr, tpr, tpr_thresholds)
    edges = np.asarray(tpr_thresholds, dtype=float)
    total = 0.0
    for idx, weight in enumerate(weights):
        low, high = edges[idx], edges[idx + 1]
        mask = (low <= tpr) & (tpr <= high)
        if not mask.any():
            continue
        xs = np.concatenate([fpr[mask], [1.0]])
        ys = np.concatenate([tpr[mask], [high]]) - low
        total += _skm.auc(xs, ys) * weight
    return float(total / np.dot(edges[1:] - edges[:-1], np.asarray(weights, dtype=float)))


def log_loss(
    y_true: np.ndarray, y_pred: np.ndarray, eps: float | None = None, normalize_rows: bool = False
) -> float:
    """Logarithmic loss (cross-entropy) as scikit-learn computes it.

    Parameters
    ----------
    y_true : numpy.ndarray
        Shape ``(n_rows,)``: binary answers (0/1 or bool); or ``(n_rows, n_classes)``: one-hot
        answers, one column per class.
    y_pred : numpy.ndarray of float
        Predicted probabilities of the positive class, or one column per class.
    eps : float, optional
        Probabilities are clipped to ``[eps, 1 - eps]`` so a confident mistake costs a large but
        finite amount. Default: the machine epsilon of float64, as scikit-learn (and so
        MLE-bench) clips; Kaggle's older metric used ``1e-15``.
    normalize_rows : bool
        For class columns, divide each row by its sum before scoring (Kaggle's older metric).
        MLE-bench requires rows that already sum to 1 instead (``row_sum_tolerance``).

    Returns
    -------
    float
        Mean negative log-likelihood, >= 0, lower is better.

    Raises
    ------
    InvalidSubmission
        If ``normalize_rows`` and a row of class probabilities sums to zero.

    Examples
    --------
    >>> import numpy as np
    >>> round(log_loss(np.array([1, 0]), np.array([0.8, 0.2])), 6)
    0.223144
    """
    eps = FLOAT_EPS if eps is None else float(eps)
    truth = np.asarray(y_true, dtype=float)
    pred = np.asarray(y_pred, dtype=float)
    if pred.ndim == 1:
        p = np.clip(pred, eps, 1 - eps)
        q = np.clip(1 - pred, eps, 1 - eps)
        losses = -(truth * np.log(p) + (1 - truth) * np.log(q))
        return float(np.mean(losses))
    if normalize_rows:
        sums = pred.sum(axis=1)
        zero = np.flatnonzero(sums <= 0)
        if zero.size:
            raise InvalidSubmission(
                f"class probabilities at row {int(zero[0]) + 1} (in answer order) sum to 0; they cannot be rescaled",
                reason="row-sum",  # a row in answer order: no submission row to name
            )
        pred = pred / sums[:, None]
    # Only cells with a non-zero answer contribute (x log y with 0 log y = 0, as scipy's xlogy);
    # with one-hot answers that is one logarithm per row instead of one per cell. Column by
    # column, each row's terms are added in class order, as a row-major sum adds them.
    per_row = np.zeros(truth.shape[0])
    for j in range(truth.shape[1]):
        column = truth[:, j]
        # Comparing first is several times faster than nonzero on floats (same rows, NaN included).
        rows = np.flatnonzero(column != 0)
        if rows.size:
            # One column, then its rows: cheaper than indexing rows and column of the matrix at once.
            per_row[rows] += column[rows] * np.log(np.clip(pred[:, j][rows], eps, 1 - eps))
    return float(-np.mean(per_row))


def weighted_multilabel_log_loss(
    answers: pd.DataFrame,
    submission: pd.DataFrame,
    *,
    id_columns: Sequence[str],
    target_columns: Sequence[str],
    variables: Sequence[str] = ("patient_overall", "C1", "C2", "C3", "C4", "C5", "C6", "C7"),
    negative_weights: Sequence[float] = (7, 1, 1, 1, 1, 1, 1, 1),
    positive_weights: Sequence[float] = (14, 2, 2, 2, 2, 2, 2, 2),
    eps: float = 1e-15,
) -> float:
    """Weighted multi-label binary log loss over a melted table (RSNA 2022 cervical spine).

    Each submission row is one ``<study>_<variable>`` probability. Rows are regrouped per study;
    each study's loss is the weighted mean of its variables' binary log losses, a variable
    weighing ``positive_weights[j]`` when it is positive in the answers and
    ``negative_weights[j]`` otherwise; the score is the mean over studies.

    Parameters
    ----------
    answers, submission : pandas.DataFrame
        Aligned frames; the id is ``<study>_<variable>`` (split at the first ``_``) and the
        target column holds 0/1 answers and predicted probabilities.
    variables : sequence of str
        Variables scored per study, in the order of the weights.
    negative_weights, positive_weights : sequence of float
        Per-variable weights.
    eps : float
        Clip of the probabilities (Kaggle's 1e-15).

    Returns
    -------
    float
        >= 0, lower is better.

    Raises
    ------
    ConfigError
        If a study in the answers lacks one of ``variables``.

    References
    ----------
    Kaggle RSNA 2022 Cervical Spine Fracture Detection, discussions 340392 and 341854.
    """
    column = target_columns[0]
    ids = answers[id_columns[0]].astype(str)
    parts = ids.str.split("_", n=1, expand=True)
    if parts.shape[1] < 2:
        raise ConfigError("weighted_multilabel_log_loss: ids must look like <study>_<variable>")
    studies, study_index = pd.factorize(parts[0])
    order = {name: j for j, name in enumerate(variables)}
    var_pos = parts[1].map(order)
    scored = var_pos.notna().to_numpy()
    n_studies, n_vars = len(study_index), len(variables)
    truth = np.full((n_studies, n_vars), np.nan)
    pred = np.full((n_studies, n_vars), np.nan)
    rows, cols = studies[scored], var_pos[scored].to_numpy(dtype=np.intp)
    truth[rows, cols] = pd.to_numeric(answers[column]).to_numpy(dtype=float)[scored]
    pred[rows, cols] = submission[column].to_numpy(dtype=float)[scored]
    if np.isnan(truth).any():
        study = study_index[int(np.flatnonzero(np.isnan(truth).any(axis=1))[0])]
        raise ConfigError(f"weighted_multilabel_log_loss: study {study!r} lacks some of {list(variables)} in the answers")
    p = np.clip(pred, eps, 1 - eps)
    losses = -(truth * np.log(p) + (1 - truth) * np.log(1 - p))
    weights = truth * np.asarray(positive_weights, dtype=float) + (1 - truth) * np.asarray(negative_weights, dtype=float)
    per_study = (losses * weights).sum(axis=1) / weights.sum(axis=1)
    return float(np.mean(per_study))


def kl_divergence_loss(y_true: np.ndarray, y_pred: np.ndarray, eps: float = 1e-15) -> float:
    """Kullback-Leibler divergence of predicted class distributions from the answers' votes.

    Each answer row (vote counts) is divided by its sum; predictions are clipped to
    ``[eps, 1 - eps]``; cells where the answer is 0 add nothing (scipy's ``rel_entr``
    convention). The score is the mean over rows of ``sum_j y_j log(y_j / p_j)`` (Kaggle's
    micro average).

    Parameters
    ----------
    y_true : numpy.ndarray
        Vote counts or probabilities, shape ``(n_rows, n_classes)``.
    y_pred : numpy.ndarray of float
        Predicted probabilities, same shape, rows summing to 1.
    eps : float
        Clip of the predictions.

    Returns
    -------
    float
        >= 0, lower is better.

    Raises
    ------
    ConfigError
        If an answer row has no votes.

    References
    ----------
    Kaggle metric "Kullback-Leibler divergence", https://www.kaggle.com/code/metric/kullback-leibler-divergence

    Examples
    --------
    >>> import numpy as np
    >>> round(kl_divergence_loss(np.array([[0, 1], [1, 0]]), np.array([[0.1, 0.9], [0.8, 0.2]])), 6)
    0.164252
    """
    truth = as_matrix(np.asarray(y_true, dtype=float))
    pred = as_matrix(np.asarray(y_pred, dtype=float))
    sums = truth.sum(axis=1)
    if (sums <= 0).any():
        raise ConfigError(f"kl_divergence_loss: answer row {int(np.flatnonzero(sums <= 0)[0]) + 1} has no votes")
    truth = truth / sums[:, None]
    p = np.clip(pred, eps, 1 - eps)
    with np.errstate(divide="ignore", invalid="ignore"):
        cells = np.where(truth != 0, truth * np.log(truth / p), 0.0)
    return float(np.mean(cells.sum(axis=1)))


def lwlrap_score(y_true: np.ndarray, y_pred: np.ndarray) -> float:
    """Label-weighted label-ranking average precision (Freesound Audio Tagging 2019).

    :func:`sklearn.metrics.label_ranking_average_precision_score` with each row weighted by its
    number of true labels, so every true label weighs the same; rows without labels are left
    out (scikit-learn would count them as perfect).

    Parameters
    ----------
    y_true : numpy.ndarray
        Binary label matrix, shape ``(n_rows, n_classes)``.
    y_pred : numpy.ndarray of float
        Scores, same shape.

    Returns
    -------
    float
        In [0, 1], higher is better.

    Raises
    ------
    ConfigError
        If no answer row has a label.

    References
    ----------
    Kaggle Freesound Audio Tagging 2019, evaluation page (lwlrap).

    Examples
    --------
    >>> import numpy as np
    >>> lwlrap_score(np.array([[1, 0, 0], [0, 1, 1]]), np.array([[0.9, 0.1, 0.2], [0.1, 0.8, 0.7]]))
    1.0
    """
    truth = as_matrix(np.asarray(y_true, dtype=float)) > 0
    scores = as_matrix(np.asarray(y_pred, dtype=float))
    weights = truth.sum(axis=1)
    rows = np.flatnonzero(weights > 0)
    if rows.size == 0:
        raise undefined_metric("lwlrap_score", "no answer row has a label")
    return float(_skm.label_ranking_average_precision_score(truth[rows], scores[rows], sample_weight=weights[rows]))
