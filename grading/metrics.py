"""Built-in competition metrics: one registry entry per Kaggle scoring function.

A metric takes the answers and the predictions *already aligned row by row* by
:func:`grading.validation.check_submission` (``y_true``, ``y_pred``: 1-D arrays for one target
column, 2-D ``(n_rows, n_targets)`` arrays for several) and returns a float. The name says the
direction: ``*_score`` is higher-is-better, ``*_error`` and ``*_loss`` are lower-is-better. Each
:class:`Metric` also declares what kind of values its predictions must be
(:class:`TargetKind`), so validation can reject text where numbers are needed, or values
outside [0, 1] where probabilities are needed, before the metric runs.

A metric raises :class:`~grading.errors.InvalidSubmission` when predictions cannot be scored
(for example labels of a type that cannot be compared with the answers); it never returns a
sentinel score.
"""

from __future__ import annotations

import enum
import inspect
from dataclasses import dataclass
from typing import Any, Callable, Mapping

import numpy as np
from sklearn import metrics as _skm

from grading.errors import InvalidSubmission

__all__ = [
    "TargetKind",
    "Metric",
    "METRICS",
    "get_metric",
    "accuracy_score",
    "rmse_error",
    "mae_error",
    "roc_auc_score",
    "log_loss",
]


class TargetKind(enum.Enum):
    """What a metric needs in the submission's target columns."""

    #: Class labels, compared for equality with the answers (bool, int or text).
    LABEL = "label"
    #: Finite real numbers.
    NUMERIC = "numeric"
    #: Finite real numbers in [0, 1].
    PROBABILITY = "probability"


def _columns(y: np.ndarray) -> list[np.ndarray]:
    return [y] if y.ndim == 1 else [y[:, j] for j in range(y.shape[1])]


def accuracy_score(y_true: np.ndarray, y_pred: np.ndarray) -> float:
    """Fraction of rows whose predicted label equals the answer.

    Labels are compared as MLE-bench compares them: the values pandas parsed from both CSV
    files are handed to :func:`sklearn.metrics.accuracy_score`, so ``True``/``true``/``1``
    all equal a boolean ``True`` answer, while text labels against boolean or numeric answers
    (or continuous predictions against class answers) cannot be compared and make the
    submission invalid.

    Parameters
    ----------
    y_true, y_pred : numpy.ndarray
        Answers and predictions, shape ``(n_rows,)`` or ``(n_rows, n_targets)``, aligned by id.

    Returns
    -------
    float
        In [0, 1], higher is better; with several target columns a row counts only when
        every column is right (subset accuracy).

    Raises
    ------
    InvalidSubmission
        If the predicted labels cannot be compared with the answers.

    Examples
    --------
    >>> import numpy as np
    >>> accuracy_score(np.array([True, False, True]), np.array([True, True, True]))
    0.6666666666666666
    """
    for truth, pred in zip(_columns(y_true), _columns(y_pred)):
        try:
            _skm.accuracy_score(truth, pred)
        except (ValueError, TypeError) as exc:
            raise InvalidSubmission(f"predicted labels cannot be compared with the answers: {exc}") from None
    equal = np.asarray(y_true == y_pred)
    if equal.ndim == 2:
        equal = equal.all(axis=1)
    return float(np.mean(equal)) if equal.size else 0.0


def rmse_error(y_true: np.ndarray, y_pred: np.ndarray) -> float:
    """Root mean squared error.

    Parameters
    ----------
    y_true, y_pred : numpy.ndarray of float
        Shape ``(n_rows,)`` or ``(n_rows, n_targets)``, aligned by id.

    Returns
    -------
    float
        ``sqrt(mean((y_true - y_pred) ** 2))``, >= 0, lower is better; with several target
        columns the per-column RMSEs are averaged (scikit-learn's ``uniform_average``).

    Examples
    --------
    >>> import numpy as np
    >>> rmse_error(np.array([1.0, 2.0]), np.array([1.0, 4.0]))
    1.4142135623730951
    """
    diff = np.asarray(y_true, dtype=float) - np.asarray(y_pred, dtype=float)
    per_column = np.sqrt(np.mean(diff**2, axis=0))
    return float(np.mean(per_column))


def mae_error(y_true: np.ndarray, y_pred: np.ndarray) -> float:
    """Mean absolute error.

    Parameters
    ----------
    y_true, y_pred : numpy.ndarray of float
        Shape ``(n_rows,)`` or ``(n_rows, n_targets)``, aligned by id.

    Returns
    -------
    float
        ``mean(|y_true - y_pred|)``, >= 0, lower is better; per-column values are averaged.

    Examples
    --------
    >>> import numpy as np
    >>> mae_error(np.array([1.0, 2.0]), np.array([1.0, 4.0]))
    1.0
    """
    diff = np.abs(np.asarray(y_true, dtype=float) - np.asarray(y_pred, dtype=float))
    return float(np.mean(np.mean(diff, axis=0)))


def roc_auc_score(y_true: np.ndarray, y_pred: np.ndarray, average: str = "macro") -> float:
    """Area under the ROC curve of predicted scores against binary answers.

    Parameters
    ----------
    y_true : numpy.ndarray
        Binary answers (0/1 or bool), shape ``(n_rows,)``, or a label-indicator matrix
        ``(n_rows, n_targets)``.
    y_pred : numpy.ndarray of float
        Predicted probabilities of the positive class, same shape.
    average : {"macro", "micro", "weighted", "samples"}
        How per-column AUCs are combined for 2-D input (scikit-learn's meaning).

    Returns
    -------
    float
        In [0, 1], higher is better; 0.5 is chance.

    Examples
    --------
    >>> import numpy as np
    >>> roc_auc_score(np.array([0, 0, 1, 1]), np.array([0.1, 0.4, 0.35, 0.8]))
    0.75
    """
    return float(_skm.roc_auc_score(np.asarray(y_true, dtype=float), np.asarray(y_pred, dtype=float), average=average))


def log_loss(y_true: np.ndarray, y_pred: np.ndarray, eps: float = 1e-15, normalize_rows: bool = True) -> float:
    """Logarithmic loss (cross-entropy) as Kaggle computes it.

    Parameters
    ----------
    y_true : numpy.ndarray
        Shape ``(n_rows,)``: binary answers (0/1 or bool); or ``(n_rows, n_classes)``: one-hot
        answers, one column per class.
    y_pred : numpy.ndarray of float
        Predicted probabilities of the positive class, or one column per class.
    eps : float
        Probabilities are clipped to ``[eps, 1 - eps]`` so a confident mistake costs a large
        but finite amount (Kaggle uses 1e-15).
    normalize_rows : bool
        For class columns, divide each row by its sum before scoring, as Kaggle does.

    Returns
    -------
    float
        Mean negative log-likelihood, >= 0, lower is better.

    Raises
    ------
    InvalidSubmission
        If a row of class probabilities sums to zero, so it cannot be rescaled.

    Examples
    --------
    >>> import numpy as np
    >>> round(log_loss(np.array([1, 0]), np.array([0.8, 0.2])), 6)
    0.223144
    """
    truth = np.asarray(y_true, dtype=float)
    pred = np.asarray(y_pred, dtype=float)
    if pred.ndim == 1:
        p = np.clip(pred, eps, 1 - eps)
        return float(-np.mean(truth * np.log(p) + (1 - truth) * np.log(1 - p)))
    if normalize_rows:
        sums = pred.sum(axis=1)
        zero = np.flatnonzero(sums <= 0)
        if zero.size:
            raise InvalidSubmission(
                f"class probabilities at row {int(zero[0]) + 1} (in answer order) sum to 0; they cannot be rescaled"
            )
        pred = pred / sums[:, None]
    p = np.clip(pred, eps, 1 - eps)
    return float(-np.mean(np.sum(truth * np.log(p), axis=1)))


@dataclass(frozen=True, slots=True, kw_only=True)
class Metric:
    """A registered scoring function and what it needs.

    Attributes
    ----------
    name : str
        Registry key, used as ``metric.name`` in a competition's config.yaml.
    fn : callable
        ``fn(y_true, y_pred, **params) -> float``.
    higher_is_better : bool
        Direction of the score.
    target_kind : TargetKind
        What validation must ensure about the predicted values.
    best : float
        The score of a perfect submission (the answers themselves).
    """

    name: str
    fn: Callable[..., float]
    higher_is_better: bool
    target_kind: TargetKind
    best: float

    @property
    def param_names(self) -> tuple[str, ...]:
        """Names of the keyword parameters a config may set under ``metric.params``."""
        params = list(inspect.signature(self.fn).parameters)
        return tuple(params[2:])

    def __call__(self, y_true: np.ndarray, y_pred: np.ndarray, **params: Any) -> float:
        """Score aligned answers and predictions; see the wrapped function for details."""
        return float(self.fn(y_true, y_pred, **params))


def _build_registry() -> Mapping[str, Metric]:
    entries = [
        Metric(name="accuracy_score", fn=accuracy_score, higher_is_better=True, target_kind=TargetKind.LABEL, best=1.0),
        Metric(name="rmse_error", fn=rmse_error, higher_is_better=False, target_kind=TargetKind.NUMERIC, best=0.0),
        Metric(name="mae_error", fn=mae_error, higher_is_better=False, target_kind=TargetKind.NUMERIC, best=0.0),
        Metric(
            name="roc_auc_score", fn=roc_auc_score, higher_is_better=True, target_kind=TargetKind.PROBABILITY, best=1.0
        ),
        Metric(name="log_loss", fn=log_loss, higher_is_better=False, target_kind=TargetKind.PROBABILITY, best=0.0),
    ]
    return {m.name: m for m in entries}


#: Built-in metrics by name.
METRICS: Mapping[str, Metric] = _build_registry()


def get_metric(name: str) -> Metric:
    """Return the built-in metric called ``name``.

    Raises
    ------
    KeyError
        If no metric has that name; the message lists the known names.
    """
    try:
        return METRICS[name]
    except KeyError:
        raise KeyError(f"unknown metric {name!r}; known metrics: {', '.join(sorted(METRICS))}") from None
