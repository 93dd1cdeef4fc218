"""Built-in competition metrics: one registry entry per scoring function and per MLE-bench label.

Every metric is a named, documented function in a submodule (``classification``,
``probability``, ``regression``, ``ranking``, ``text``, ``masks``, ``detection`` with its 3-D
boxes in ``box3d``, ``fairness``).
:data:`METRICS` maps registry names to :class:`~mleaudit.grading.metrics.base.Metric` records: each
function under its own name (``*_score`` higher-is-better, ``*_error``/``*_loss``
lower-is-better), and each grader label of MLE-bench's competition configs (``auc-roc``,
``MAP@12``, ``dice-hausdorff-combo`` ...) as an alias of the function that computes it, with
the parameters that reproduce MLE-bench's grader for the competitions using the label.

Four MLE-bench configs carry a label that names another metric than the one their grader
computes; use the function's own name for them:

- ``3d-object-detection-for-autonomous-vehicles`` (label ``mean-average-precision``):
  :func:`box3d_map_score`;
- ``stanford-covid-vaccine`` (``multi-class-log-loss``): :func:`rmse_error` over the three
  scored columns with ``row_mask: {column: keep, equals: true}`` and
  ``unscored_columns: [deg_pH10, deg_50C]``;
- ``ventilator-pressure-prediction`` (``dice-hausdorff-combo``): :func:`mae_error` with
  ``row_mask: {column: u_out, equals: 0}``;
- ``tensorflow2-question-answering`` (``micro-f1-score``): :func:`answer_span_accuracy_score`
  on answers prepared as one row per ``<example>_long``/``_short`` with the valid answers.

A metric raises :class:`~mleaudit.grading.errors.InvalidSubmission` when predictions cannot be scored;
it never returns a sentinel score.
"""

from __future__ import annotations

import math
from typing import Any, Mapping

from mleaudit.grading.metrics.base import (
    FRAME_ARGUMENTS,
    SCORING_PARAMS,
    Metric,
    PredictionError,
    TargetKind,
    bad_prediction,
    describe_row,
    invalid_cell,
)
from mleaudit.grading.metrics.classification import (
    accuracy_score,
    integer_labels,
    macro_f1_score,
    matthews_corrcoef_score,
    micro_f1_score,
    probabilistic_f1_score,
    quadratic_weighted_kappa_score,
    top1_classification_error,
)
from mleaudit.grading.metrics.detection import box3d_map_score, coco_map_score, pascal_voc_map_score, point_in_box_f1_score
from mleaudit.grading.metrics.fairness import JIGSAW_IDENTITY_COLUMNS, jigsaw_bias_auc_score
from mleaudit.grading.metrics.masks import (
    decode_rle,
    dice_hausdorff_score,
    global_dice_score,
    mask_iou_precision_score,
    mean_dice_score,
    mean_fbeta_mask_score,
    parse_rle,
)
from mleaudit.grading.metrics.probability import (
    kl_divergence_loss,
    log_loss,
    lwlrap_score,
    roc_auc_score,
    weighted_auc_score,
    weighted_multilabel_log_loss,
)
from mleaudit.grading.metrics.ranking import kendall_tau_score, map_at_k_score
from mleaudit.grading.metrics.regression import (
    grouped_log_mae_error,
    laplace_log_likelihood_score,
    mae_error,
    mean_angular_error,
    mean_haversine_distance_error,
    pearson_correlation_score,
    rmse_error,
    rmsle_error,
    spearman_correlation_score,
)
from mleaudit.grading.metrics.text import (
    answer_span_accuracy_score,
    levenshtein_distance_error,
    normalized_edit_distance_error,
    word_jaccard_score,
)

__all__ = [
    "TargetKind",
    "Metric",
    "METRICS",
    "MLEBENCH_LABELS",
    "SCORING_PARAMS",
    "FRAME_ARGUMENTS",
    "PredictionError",
    "get_metric",
    "bad_prediction",
    "describe_row",
    "invalid_cell",
    "integer_labels",
    "parse_rle",
    "decode_rle",
    "JIGSAW_IDENTITY_COLUMNS",
    # classification
    "accuracy_score",
    "top1_classification_error",
    "micro_f1_score",
    "macro_f1_score",
    "matthews_corrcoef_score",
    "quadratic_weighted_kappa_score",
    "probabilistic_f1_score",
    # probabilities and scores
    "roc_auc_score",
    "weighted_auc_score",
    "log_loss",
    "weighted_multilabel_log_loss",
    "kl_divergence_loss",
    "lwlrap_score",
    "jigsaw_bias_auc_score",
    # numbers
    "rmse_error",
    "mae_error",
    "rmsle_error",
    "grouped_log_mae_error",
    "pearson_correlation_score",
    "spearman_correlation_score",
    "mean_haversine_distance_error",
    "mean_angular_error",
    "laplace_log_likelihood_score",
    # rankings and text
    "map_at_k_score",
    "kendall_tau_score",
    "levenshtein_distance_error",
    "normalized_edit_distance_error",
    "word_jaccard_score",
    "answer_span_accuracy_score",
    # masks and boxes
    "mean_dice_score",
    "global_dice_score",
    "mean_fbeta_mask_score",
    "mask_iou_precision_score",
    "dice_hausdorff_score",
    "point_in_box_f1_score",
    "pascal_voc_map_score",
    "coco_map_score",
    "box3d_map_score",
]

_L, _N, _P, _T = TargetKind.LABEL, TargetKind.NUMERIC, TargetKind.PROBABILITY, TargetKind.TEXT

# name: (function, higher_is_better, target kind, best score, frame flavour, extra Metric fields)
_FUNCTIONS: dict[str, tuple[Any, bool, TargetKind, float, bool, dict[str, Any]]] = {
    "accuracy_score": (accuracy_score, True, _L, 1.0, False, {}),
    "top1_classification_error": (top1_classification_error, False, _T, 0.0, True, {}),
    "micro_f1_score": (micro_f1_score, True, _T, 1.0, True, {"allow_missing": True}),
    "macro_f1_score": (macro_f1_score, True, _L, 1.0, True, {}),
    "matthews_corrcoef_score": (matthews_corrcoef_score, True, _L, 1.0, False, {}),
    "quadratic_weighted_kappa_score": (quadratic_weighted_kappa_score, True, _L, 1.0, False, {}),
    "probabilistic_f1_score": (probabilistic_f1_score, True, _N, 1.0, False, {}),
    "roc_auc_score": (roc_auc_score, True, _P, 1.0, False, {}),
    "weighted_auc_score": (weighted_auc_score, True, _N, 1.0, False, {}),
    "log_loss": (log_loss, False, _P, 0.0, False, {}),
    "weighted_multilabel_log_loss": (weighted_multilabel_log_loss, False, _P, 0.0, True, {}),
    "kl_divergence_loss": (kl_divergence_loss, False, _P, 0.0, False, {}),
    "lwlrap_score": (lwlrap_score, True, _N, 1.0, False, {}),
    "jigsaw_bias_auc_score": (jigsaw_bias_auc_score, True, _N, 1.0, True, {}),
    "rmse_error": (rmse_error, False, _N, 0.0, False, {}),
    "mae_error": (mae_error, False, _N, 0.0, False, {}),
    "rmsle_error": (rmsle_error, False, _N, 0.0, False, {}),
    "grouped_log_mae_error": (grouped_log_mae_error, False, _N, math.log(1e-9), True, {}),
    "pearson_correlation_score": (pearson_correlation_score, True, _N, 1.0, False, {"undefined_on_missing": True}),
    "spearman_correlation_score": (
        spearman_correlation_score, True, _N, 1.0, False, {"undefined_on_missing": True, "infinite_ranked": True}
    ),
    "mean_haversine_distance_error": (mean_haversine_distance_error, False, _N, 0.0, True, {}),
    "mean_angular_error": (mean_angular_error, False, _N, 0.0, True, {}),
    "laplace_log_likelihood_score": (
        laplace_log_likelihood_score, True, _N, -math.log(math.sqrt(2) * 70.0), True, {"targets_in_answers": False}
    ),
    "map_at_k_score": (map_at_k_score, True, _T, 1.0, True, {"allow_missing": True, "any_row_order": True}),
    "kendall_tau_score": (kendall_tau_score, True, _T, 1.0, True, {}),
    "levenshtein_distance_error": (levenshtein_distance_error, False, _T, 0.0, True, {"allow_missing": True}),
    "normalized_edit_distance_error": (normalized_edit_distance_error, False, _T, 0.0, True, {"allow_missing": True}),
    "word_jaccard_score": (word_jaccard_score, True, _T, 1.0, True, {"allow_missing": True}),
    "answer_span_accuracy_score": (answer_span_accuracy_score, True, _T, 1.0, True, {"allow_missing": True}),
    "mean_dice_score": (mean_dice_score, True, _T, 1.0, True, {"allow_missing": True}),
    "global_dice_score": (global_dice_score, True, _T, 1.0, True, {"allow_missing": True}),
    "mean_fbeta_mask_score": (mean_fbeta_mask_score, True, _T, 1.0, True, {"allow_missing": True}),
    "mask_iou_precision_score": (mask_iou_precision_score, True, _T, 1.0, True, {"allow_missing": True}),
    "dice_hausdorff_score": (dice_hausdorff_score, True, _T, 1.0, True, {"allow_missing": True}),
    "point_in_box_f1_score": (point_in_box_f1_score, True, _T, 1.0, True, {"allow_missing": True}),
    "pascal_voc_map_score": (pascal_voc_map_score, True, _T, 1.0, True, {"allow_missing": True}),
    "coco_map_score": (
        coco_map_score, True, _T, 1.0, True, {"allow_missing": True, "repeated_answer_ids": True, "targets_in_answers": False}
    ),
    "box3d_map_score": (box3d_map_score, True, _T, 1.0, True, {"allow_missing": True}),
}

#: MLE-bench grader labels (``grader.name`` in its competition configs): the function each one
#: names, and the parameters (own or scoring) that reproduce MLE-bench's grader.
MLEBENCH_LABELS: Mapping[str, tuple[str, Mapping[str, Any]]] = {
    "accuracy": ("accuracy_score", {}),
    "multi-class-classification-accuracy": ("accuracy_score", {}),
    "top-1-classification-error": ("top1_classification_error", {}),
    "micro-f1-score": ("micro_f1_score", {}),
    "macro-f1-score": ("macro_f1_score", {}),
    "matthews-correlation-coefficient": ("matthews_corrcoef_score", {}),
    "quadratic-weighted-kappa": ("quadratic_weighted_kappa_score", {}),
    "probabilistic-f1-score": ("probabilistic_f1_score", {}),
    "auc-roc": ("roc_auc_score", {}),
    "mean-column-wise-roc-auc": ("roc_auc_score", {}),
    "column-wise ROC AUC": ("roc_auc_score", {"ignore_label": -1}),
    "auroc-multi-label": ("roc_auc_score", {}),
    "weighted-auroc": ("weighted_auc_score", {}),
    "log-loss": ("log_loss", {}),
    # MLE-bench's np.isclose(row sum, 1, atol=1e-6) with its default rtol of 1e-5.
    "multi-class-log-loss": ("log_loss", {"row_sum_tolerance": 1.1e-5}),
    "weighted-multi-label-log-loss": ("weighted_multilabel_log_loss", {}),
    # MLE-bench: round(row sum, 5) == 1.
    "KL-divergence": ("kl_divergence_loss", {"row_sum_tolerance": 5e-6}),
    "label-ranking-average-precision": ("lwlrap_score", {}),
    "jigsaw-unintended-bias-in-toxicity-classification-score": (
        "jigsaw_bias_auc_score",
        {"answer_columns": {"prediction": "toxicity"}},
    ),
    "root-mean-squared-error": ("rmse_error", {}),
    "root_mean_squared_error": ("rmse_error", {}),
    "mean-absolute-error": ("mae_error", {"decimals": 0}),
    "mean-column-wise-rmsle": ("rmsle_error", {}),
    "log-mean-absolute-error": ("grouped_log_mae_error", {}),
    "pearson-correlation-coefficient": ("pearson_correlation_score", {}),
    "column-wise-spearman": ("spearman_correlation_score", {}),
    "average-haversine-distance": ("mean_haversine_distance_error", {"id_columns": ["tripId", "UnixTimeMillis"]}),
    "mean-angular-error": ("mean_angular_error", {}),
    "modified-laplace-log-likelihood": ("laplace_log_likelihood_score", {}),
    "map-at-5": ("map_at_k_score", {"k": 5}),
    "MAP@5": ("map_at_k_score", {"k": 5}),
    "MAP@12": ("map_at_k_score", {"k": 12, "extra_ids": "ignore"}),
    "kendall-tau": ("kendall_tau_score", {}),
    "levenshtein-distance": ("levenshtein_distance_error", {}),
    "levenhstein-distance": ("normalized_edit_distance_error", {}),
    "jaccard-similarity": ("word_jaccard_score", {"empty_score": 1.0}),
    "word-level-jaccard-score": ("word_jaccard_score", {"empty_score": 0.0}),
    "dice-coefficient": (
        "mean_dice_score",
        {"height": "height_pixels", "width": "width_pixels", "answer_columns": {"predicted": "encoding"}},
    ),
    "global-dice": ("global_dice_score", {}),
    "f0.5-score": ("mean_fbeta_mask_score", {"beta": 0.5}),
    "mean-precision-intersection-over-union-at-different-thresholds": ("mask_iou_precision_score", {}),
    "dice-hausdorff-combo": ("dice_hausdorff_score", {"id_columns": ["id", "class"]}),
    "f1-score": ("point_in_box_f1_score", {}),
    "mean-average-precision": ("pascal_voc_map_score", {}),
    "mAP-at-IoU>0.4": ("coco_map_score", {"iou_threshold": 0.4}),
}


#: Labels whose MLE-bench graders take any real scores, where the function's own entry wants
#: probabilities (MLE-bench checks [0, 1] only for the single-column ``auc-roc`` graders).
_SCORE_LABELS = frozenset({"mean-column-wise-roc-auc", "column-wise ROC AUC", "auroc-multi-label"})


def _build_registry() -> Mapping[str, Metric]:
    entries: dict[str, Metric] = {}
    for name, (fn, higher, kind, best, frame, extra) in _FUNCTIONS.items():
        entries[name] = Metric(name=name, fn=fn, higher_is_better=higher, target_kind=kind, best=best, frame=frame, **extra)
    for label, (target, defaults) in MLEBENCH_LABELS.items():
        base = entries[target]
        unknown = set(defaults) - set(base.param_names)
        if unknown:  # a programming error in the table above, caught at import
            raise ValueError(f"label {label!r}: {target} takes no parameter {sorted(unknown)}")
        kind = TargetKind.NUMERIC if label in _SCORE_LABELS else base.target_kind
        entries[label] = Metric(
            name=label,
            fn=base.fn,
            higher_is_better=base.higher_is_better,
            target_kind=kind,
            best=base.best,
            frame=base.frame,
            defaults=dict(defaults),
            alias_of=target,
            allow_missing=base.allow_missing,
            repeated_answer_ids=base.repeated_answer_ids,
            targets_in_answers=base.targets_in_answers,
            any_row_order=base.any_row_order,
            undefined_on_missing=base.undefined_on_missing,
            infinite_ranked=base.infinite_ranked,
        )
    return entries


#: Built-in metrics by name: every function, then every MLE-bench label.
METRICS: Mapping[str, Metric] = _build_registry()


def get_metric(name: str) -> Metric:
    """Return the built-in metric called ``name`` (a function name or an MLE-bench label).

    Raises
    ------
    KeyError
        If no metric has that name; the message lists the known names.

    Examples
    --------
    >>> get_metric("MAP@12").alias_of, dict(get_metric("MAP@12").defaults)
    ('map_at_k_score', {'k': 12, 'extra_ids': 'ignore'})
    >>> get_metric("auc-roc").higher_is_better
    True
    """
    try:
        return METRICS[name]
    except KeyError:
        raise KeyError(f"unknown metric {name!r}; known metrics: {', '.join(sorted(METRICS))}") from None
