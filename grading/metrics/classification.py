"""Classification metrics on predicted labels: accuracy, F1 variants, kappa, MCC.

Labels are compared as MLE-bench compares them: the values pandas parsed from both CSV files
(``True``/``true``/``1`` all equal a boolean ``True``), unless a metric says it reads integer
class ids or text. Where scikit-learn has the metric, it computes it.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd
from sklearn import metrics as _skm

from mleaudit.grading.errors import InvalidSubmission
from mleaudit.grading.metrics.base import as_matrix, invalid_cell, undefined_metric
from mleaudit.grading.metrics.tokens import split_tokens, token_codes

__all__ = [
    "accuracy_score",
    "top1_classification_error",
    "micro_f1_score",
    "macro_f1_score",
    "matthews_corrcoef_score",
    "quadratic_weighted_kappa_score",
    "probabilistic_f1_score",
    "integer_labels",
]


def _label_type(values: np.ndarray) -> str:
    """pandas' cheap type inference: 'string', 'integer', 'boolean', 'floating', 'mixed' ..."""
    return pd.api.types.infer_dtype(values, skipna=False)


def _comparable_fast(truth: np.ndarray, pred: np.ndarray) -> bool:
    """True when the labels certainly pass scikit-learn's target-type checks.

    scikit-learn's checks sort every label (slow on a million text labels); they only fail on a
    mix of text and numbers or on continuous predictions for classes, which pandas' type
    inference sees at once.
    """
    kinds = {_label_type(truth), _label_type(pred)}
    if kinds == {"string"}:
        return True
    if kinds <= {"integer", "boolean"}:
        return True
    return False


def accuracy_score(y_true: np.ndarray, y_pred: np.ndarray, as_text: bool = False) -> float:
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
    as_text : bool
        Compare the labels' text (``str(value)``) instead, as MLE-bench's text-normalization
        graders do, so ``"1"`` and ``1`` are the same answer.

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
    y_true, y_pred = np.asarray(y_true), np.asarray(y_pred)
    if as_text:
        y_true = y_true.astype(str)
        y_pred = y_pred.astype(str)
    truth_cols, pred_cols = as_matrix(y_true), as_matrix(y_pred)
    for j in range(truth_cols.shape[1]):
        truth, pred = truth_cols[:, j], pred_cols[:, j]
        if as_text or _comparable_fast(truth, pred):
            continue
        try:
            _skm.accuracy_score(truth, pred)
        except (ValueError, TypeError) as exc:
            raise InvalidSubmission(f"predicted labels cannot be compared with the answers: {exc}", reason="incomparable") from None
    equal = np.asarray(truth_cols == pred_cols)
    equal = equal.all(axis=1)
    return float(np.mean(equal)) if equal.size else 0.0


def integer_labels(submission: pd.DataFrame, column: str) -> np.ndarray:
    """Read a submission column of integer class ids, as MLE-bench's ``int(label)`` does.

    Parameters
    ----------
    submission : pandas.DataFrame
        An aligned submission (frame metric input).
    column : str
        The label column; integers, integral floats (``3.0``) and integer text (``"3"``) pass.

    Returns
    -------
    numpy.ndarray of int64
        In the frame's row order.

    Raises
    ------
    InvalidSubmission
        Naming the first value that is not an integer, with its row and id.
    """
    values = submission[column]
    if pd.api.types.is_integer_dtype(values.dtype):
        return values.to_numpy(dtype=np.int64)
    numbers = pd.to_numeric(values, errors="coerce")
    if pd.api.types.is_bool_dtype(values.dtype):
        numbers = pd.Series(np.nan, index=values.index)
    floats = numbers.to_numpy(dtype=float)
    with np.errstate(invalid="ignore"):
        bad = ~np.isfinite(floats) | (floats != np.round(floats))
    if bad.any():
        first = int(np.flatnonzero(bad)[0])
        raise invalid_cell(submission, first, column, f"{str(values.iloc[first])!r}, which is not an integer class id",
                           reason="unknown-label")
    return floats.astype(np.int64)


def top1_classification_error(
    answers: pd.DataFrame,
    submission: pd.DataFrame,
    *,
    id_columns: Sequence[str],
    target_columns: Sequence[str],
) -> float:
    """Share of rows whose first predicted class is wrong (1 - top-1 accuracy).

    Kaggle's iNaturalist submissions list several class ids per row, best first; only the
    first one counts, as in MLE-bench's grader.

    Parameters
    ----------
    answers : pandas.DataFrame
        With the target column holding one integer class id per row.
    submission : pandas.DataFrame
        With the target column holding space-separated integer class ids (text).

    Returns
    -------
    float
        In [0, 1], lower is better.

    Raises
    ------
    InvalidSubmission
        For a cell whose first token is not an integer (the row and id named).

    Examples
    --------
    >>> import pandas as pd
    >>> answers = pd.DataFrame({"id": ["a", "b"], "predicted": [3, 5]})
    >>> sub = pd.DataFrame({"id": ["a", "b"], "predicted": ["3 1 2", "4 5"]})
    >>> top1_classification_error(answers, sub, id_columns=["id"], target_columns=["predicted"])
    0.5
    """
    column = target_columns[0]
    first = submission[column].astype(str).str.strip().str.split(n=1).str[0]
    tokens = pd.DataFrame({column: first.fillna("")}, index=submission.index)
    tokens.attrs = submission.attrs
    tokens[list(id_columns)] = submission[list(id_columns)]
    pred = integer_labels(tokens, column)
    truth = pd.to_numeric(answers[column]).to_numpy(dtype=np.int64)
    return float(1.0 - np.mean(truth == pred)) if len(truth) else 0.0


def micro_f1_score(
    answers: pd.DataFrame,
    submission: pd.DataFrame,
    *,
    id_columns: Sequence[str],
    target_columns: Sequence[str],
    multilabel: bool = True,
) -> float:
    """Micro-averaged F1 of predicted label sets (or single labels).

    With ``multilabel`` each cell is a space-separated set of labels (Kaggle's ``"tag1 tag2"``).
    As in MLE-bench (scikit-learn's ``MultiLabelBinarizer`` fitted on the answers), only labels
    that occur somewhere in the answers count: a predicted label no answer has is ignored, not a
    false positive. Repeated labels in a cell count once. Then over all rows
    ``F1 = 2 TP / (|true labels| + |predicted labels|)``, 0 when both are empty.

    Without ``multilabel`` each cell is one label (text) and micro F1 equals accuracy, as
    :func:`sklearn.metrics.f1_score` with ``average="micro"`` gives for single-label classes; a
    prediction column of numbers only (class indices) against answers that are not is
    rejected, as scikit-learn rejects that mix of label types.

    Parameters
    ----------
    answers, submission : pandas.DataFrame
        Aligned frames whose target column holds label text (empty cells are empty sets).
    multilabel : bool
        Whether cells hold label sets.

    Returns
    -------
    float
        In [0, 1], higher is better.

    Examples
    --------
    >>> import pandas as pd
    >>> answers = pd.DataFrame({"id": ["a", "b"], "tags": ["x y", "z"]})
    >>> sub = pd.DataFrame({"id": ["a", "b"], "tags": ["x q", "z y"]})
    >>> micro_f1_score(answers, sub, id_columns=["id"], target_columns=["tags"])
    0.6666666666666666
    """
    column = target_columns[0]
    if not multilabel:
        truth = answers[column].fillna("").astype(str).to_numpy()
        pred = submission[column].fillna("").astype(str).to_numpy()
        if len(pred) and _all_numbers(pred) and not _all_numbers(truth):
            raise InvalidSubmission(
                f"predicted labels cannot be compared with the answers: column {column!r} holds only numbers "
                f"(e.g. {pred[0]!r}), the answers hold text labels (e.g. {truth[0]!r})",
                reason="incomparable", column=column,
            )
        return float(np.mean(truth == pred)) if len(truth) else 0.0
    true_rows, true_tokens = split_tokens(answers[column])
    pred_rows, pred_tokens = split_tokens(submission[column])
    true_keys, pred_keys, n_codes = token_codes(true_rows, true_tokens, pred_rows, pred_tokens)
    true_keys = np.unique(true_keys)
    pred_keys = np.unique(pred_keys)
    known = np.isin(pred_keys % n_codes, np.unique(true_keys % n_codes)) if n_codes else np.zeros(0, bool)
    pred_keys = pred_keys[known]
    tp = np.intersect1d(true_keys, pred_keys, assume_unique=True).size
    denominator = true_keys.size + pred_keys.size
    return float(2 * tp / denominator) if denominator else 0.0


def _all_numbers(cells: np.ndarray) -> bool:
    """Whether every cell is a number, so pandas would have read the column as numbers."""
    return bool(pd.to_numeric(pd.Series(cells, dtype=object), errors="coerce").notna().all())


def macro_f1_score(
    answers: pd.DataFrame,
    submission: pd.DataFrame,
    *,
    id_columns: Sequence[str],
    target_columns: Sequence[str],
    integer: bool = True,
) -> float:
    """Macro-averaged F1 over classes, by :func:`sklearn.metrics.f1_score` (``average="macro"``).

    Every class in the answers or the predictions weighs the same; a class never predicted
    and never true does not exist. MLE-bench's herbarium and iWildCam graders read integer class
    ids (``int(label)``), which ``integer`` reproduces.

    Parameters
    ----------
    answers, submission : pandas.DataFrame
        Aligned frames with one label per row in the target column.
    integer : bool
        Read labels as integer class ids (a non-integer prediction is invalid); otherwise
        compare the parsed values.

    Returns
    -------
    float
        In [0, 1], higher is better.

    Raises
    ------
    InvalidSubmission
        For a non-integer label when ``integer`` (the row and id named).

    Examples
    --------
    >>> import pandas as pd
    >>> answers = pd.DataFrame({"Id": ["a", "b", "c", "d"], "Predicted": [0, 0, 1, 1]})
    >>> sub = pd.DataFrame({"Id": ["a", "b", "c", "d"], "Predicted": [0, 1, 1, 1]})
    >>> round(macro_f1_score(answers, sub, id_columns=["Id"], target_columns=["Predicted"]), 4)
    0.7333
    """
    column = target_columns[0]
    if integer:
        truth = pd.to_numeric(answers[column]).to_numpy(dtype=np.int64)
        pred = integer_labels(submission, column)
    else:
        truth, pred = answers[column].to_numpy(), submission[column].to_numpy()
    try:
        return float(_skm.f1_score(truth, pred, average="macro", zero_division=0.0))
    except (ValueError, TypeError) as exc:
        raise InvalidSubmission(f"predicted labels cannot be compared with the answers: {exc}", reason="incomparable") from None


def matthews_corrcoef_score(y_true: np.ndarray, y_pred: np.ndarray) -> float:
    """Matthews correlation coefficient, by :func:`sklearn.metrics.matthews_corrcoef`.

    Parameters
    ----------
    y_true, y_pred : numpy.ndarray
        Labels, shape ``(n_rows,)``, aligned by id.

    Returns
    -------
    float
        In [-1, 1], higher is better; 0 for a constant prediction.

    Raises
    ------
    InvalidSubmission
        If the labels cannot be compared with the answers.

    Examples
    --------
    >>> import numpy as np
    >>> round(matthews_corrcoef_score(np.array([1, 1, 0, 0]), np.array([1, 0, 0, 0])), 4)
    0.5774
    """
    try:
        return float(_skm.matthews_corrcoef(y_true, y_pred))
    except (ValueError, TypeError) as exc:
        raise InvalidSubmission(f"predicted labels cannot be compared with the answers: {exc}", reason="incomparable") from None


def quadratic_weighted_kappa_score(y_true: np.ndarray, y_pred: np.ndarray) -> float:
    """Cohen's kappa with quadratic weights, by :func:`sklearn.metrics.cohen_kappa_score`.

    The agreement between ordinal ratings, corrected for chance; disagreements cost the square
    of their distance in the sorted list of labels seen in either column.

    Parameters
    ----------
    y_true, y_pred : numpy.ndarray
        Ratings, shape ``(n_rows,)``, aligned by id.

    Returns
    -------
    float
        In [-1, 1], higher is better; 1 for perfect agreement.

    Raises
    ------
    InvalidSubmission
        If the ratings cannot be compared with the answers.

    References
    ----------
    Cohen, J. (1968). Weighted kappa. Psychological Bulletin 70(4), 213-220.

    Examples
    --------
    >>> import numpy as np
    >>> round(quadratic_weighted_kappa_score(np.array([0, 1, 2, 3]), np.array([0, 1, 2, 2])), 4)
    0.875
    """
    try:
        value = _skm.cohen_kappa_score(y_pred, y_true, weights="quadratic")
    except (ValueError, TypeError) as exc:
        raise InvalidSubmission(f"predicted ratings cannot be compared with the answers: {exc}", reason="incomparable") from None
    return float(value)


def probabilistic_f1_score(y_true: np.ndarray, y_pred: np.ndarray, beta: float = 1.0) -> float:
    """Probabilistic F-beta: F-beta with predicted probabilities as fractional counts.

    Predictions are clipped to [0, 1]; true positives are the predicted probabilities of the
    positive rows, false positives those of the negative rows (Kaggle's RSNA screening metric).

    Parameters
    ----------
    y_true : numpy.ndarray
        Binary answers, shape ``(n_rows,)``.
    y_pred : numpy.ndarray of float
        Predicted probabilities of the positive class.
    beta : float
        Weight of recall (1 gives F1).

    Returns
    -------
    float
        In [0, 1], higher is better; 0 when every prediction is 0 (precision 0 / 0), as in
        MLE-bench's grader, whose NumPy division gives NaN there and whose ``NaN > 0`` test then
        gives 0.

    Raises
    ------
    ConfigError
        If the answers have no positive row (recall is undefined).

    References
    ----------
    Kaggle, "Probabilistic F-score", https://www.kaggle.com/code/sohier/probabilistic-f-score

    Examples
    --------
    >>> import numpy as np
    >>> round(probabilistic_f1_score(np.array([1, 0, 1, 0]), np.array([0.9, 0.2, 0.6, 0.1])), 4)
    0.7895
    """
    truth = np.asarray(y_true).astype(bool)
    pred = np.clip(np.asarray(y_pred, dtype=float), 0.0, 1.0)
    positives = int(truth.sum())
    if positives == 0:
        raise undefined_metric("probabilistic_f1_score", "no positive answer, so recall is undefined")
    ctp = float(pred[truth].sum())
    cfp = float(pred[~truth].sum())
    if ctp + cfp == 0:
        return 0.0
    precision, recall = ctp / (ctp + cfp), ctp / positives
    if precision <= 0 or recall <= 0:
        return 0.0
    b2 = beta * beta
    return float((1 + b2) * precision * recall / (b2 * precision + recall))
