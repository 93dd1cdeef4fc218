"""Bias-aware metrics: Jigsaw's unintended-bias AUC combination.

The answer file carries identity subgroup columns the submission never sees; the metric reads
them from the aligned answers frame.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd
from sklearn import metrics as _skm

from mleaudit.grading.metrics.base import require_answer_columns, undefined_metric

__all__ = ["JIGSAW_IDENTITY_COLUMNS", "jigsaw_bias_auc_score"]

#: Identity subgroups scored in Jigsaw Unintended Bias in Toxicity Classification.
JIGSAW_IDENTITY_COLUMNS = (
    "male",
    "female",
    "homosexual_gay_or_lesbian",
    "christian",
    "jewish",
    "muslim",
    "black",
    "white",
    "psychiatric_or_mental_illness",
)


def _auc(truth: np.ndarray, pred: np.ndarray, what: str) -> float:
    try:
        return float(_skm.roc_auc_score(truth, pred))
    except ValueError as exc:
        raise undefined_metric("jigsaw_bias_auc_score", f"{what}: {exc}") from None


def jigsaw_bias_auc_score(
    answers: pd.DataFrame,
    submission: pd.DataFrame,
    *,
    id_columns: Sequence[str],
    target_columns: Sequence[str],
    identity_columns: Sequence[str] = JIGSAW_IDENTITY_COLUMNS,
    power: float = -5.0,
    weight: float = 0.25,
    threshold: float = 0.5,
    binarize_predictions: bool = True,
) -> float:
    """Overall AUC combined with generalized means of per-identity bias AUCs (Jigsaw 2019).

    Toxicity answers and identity columns are binarised at ``threshold`` (a missing identity
    value counts as absent). For each identity three AUCs are computed: on the comments that
    mention it (subgroup AUC), on its non-toxic comments plus the toxic comments that do not
    mention it (BPSN), and on its toxic comments plus the non-toxic ones that do not mention it
    (BNSP). Each of the three is summarised over identities by the generalized mean
    ``(mean s^p)^(1/p)`` with ``p = power``, and the score is
    ``weight * overall AUC + sum of weight * generalized mean``.

    MLE-bench's grader also binarises the *predictions* at 0.5 before every AUC, which makes
    each AUC one of a two-level score; ``binarize_predictions`` (default true) reproduces it, false
    gives Kaggle's definition on the raw scores.

    Parameters
    ----------
    answers : pandas.DataFrame
        The target column (toxicity in [0, 1]; map it with the ``answer_columns`` scoring
        parameter when the answers call it ``toxicity``) and ``identity_columns``.
    submission : pandas.DataFrame
        The predicted toxicity in the target column.
    identity_columns : sequence of str
        Answer columns of the identity subgroups.
    power : float
        Exponent of the generalized mean (-5 favours the worst subgroups).
    weight : float
        Weight of each of the four parts.
    threshold : float
        Binarisation threshold.
    binarize_predictions : bool
        Binarise predictions too, as MLE-bench does.

    Returns
    -------
    float
        In [0, 1], higher is better.

    Raises
    ------
    ConfigError
        If an AUC is undefined because the answers in a subset hold one class only.

    References
    ----------
    D. Borkan et al. (2019). Nuanced Metrics for Measuring Unintended Bias with Real Data for
    Text Classification. WWW '19 Companion; Kaggle Jigsaw Unintended Bias in Toxicity
    Classification, evaluation page.
    """
    require_answer_columns(answers, list(identity_columns), metric="jigsaw_bias_auc_score")
    column = target_columns[0]
    truth = (pd.to_numeric(answers[column]).to_numpy(dtype=float) >= threshold).astype(int)
    pred = submission[column].to_numpy(dtype=float)
    if binarize_predictions:
        pred = (pred >= threshold).astype(int)
    overall = _auc(truth, pred, "all comments")
    per_kind: list[list[float]] = [[], [], []]
    for identity in identity_columns:
        with np.errstate(invalid="ignore"):
            member = pd.to_numeric(answers[identity]).to_numpy(dtype=float) >= threshold
        toxic = truth == 1
        subsets = (member, (~toxic & member) | (toxic & ~member), (toxic & member) | (~toxic & ~member))
        for kind, (subset, name) in enumerate(zip(subsets, ("subgroup", "BPSN", "BNSP"))):
            per_kind[kind].append(_auc(truth[subset], pred[subset], f"{name} AUC of {identity!r}"))
    n = len(identity_columns)
    means = [(np.sum(np.power(values, power)) / n) ** (1.0 / power) for values in per_kind]
    return float(weight * overall + sum(weight * m for m in means))
