"""A checked submission and its answers aligned by id, as the arrays an array metric takes."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np
import pandas as pd

from mleaudit.grading.errors import ConfigError
from mleaudit.grading.metrics import Metric, TargetKind
from mleaudit.grading.validation.checks import _validate
from mleaudit.grading.validation.frames import _aligned_frames, _in_order, check_frames
from mleaudit.grading.validation.keys import _as_tuple
from mleaudit.grading.validation.messages import _describe_row, _quote_list
from mleaudit.grading.validation.options import ScoringOptions


@dataclass(frozen=True, slots=True, kw_only=True)
class AlignedArrays:
    """Answers and predictions of a checked submission, aligned by id, as an array metric takes them.

    Attributes
    ----------
    y_true, y_pred : numpy.ndarray
        As :func:`answer_arrays` returns them: shape ``(n_rows,)`` for one target column,
        ``(n_rows, n_targets)`` (column-major) for several; rows in answer order.
    rows : numpy.ndarray of intp
        Each aligned row's 0-based row in the submission file.
    ids : pandas.Series or pandas.DataFrame
        The submission's id column(s) in file order, to name a row.
    """

    y_true: np.ndarray
    y_pred: np.ndarray
    rows: np.ndarray
    ids: pd.Series | pd.DataFrame

    def describe(self, position: int) -> str:
        """``"row N (id 'x')"`` for an aligned row, as validation messages name rows.

        Parameters
        ----------
        position : int
            0-based position in answer order.
        """
        return _describe_row(int(self.rows[position]), self.ids)


def check_arrays(
    submission: pd.DataFrame,
    answers: pd.DataFrame,
    *,
    metric: Metric,
    options: ScoringOptions,
) -> AlignedArrays:
    """Validate a submission like :func:`check_frames` and return the arrays of an array metric.

    The result equals :func:`answer_arrays` on the frames :func:`check_frames` returns, value
    for value and in the same memory layout (so reductions add in the same order), without
    building an aligned frame: numeric predictions are gathered into answer order straight from
    the checked floats, one column at a time.

    Parameters
    ----------
    submission, answers : pandas.DataFrame
        As for :func:`check_frames`.
    metric : Metric
        An array metric (``metric.frame`` false).
    options : ScoringOptions
        Columns, id matching and filters.

    Returns
    -------
    AlignedArrays

    Raises
    ------
    InvalidSubmission
        With a message naming the column, row and id at fault.
    ConfigError
        If the answers lack a column, or hold something that is not a number for a numeric
        metric.
    """
    checked = _validate(submission, answers, metric=metric, options=options)
    targets = list(options.target_columns)
    numeric = metric.target_kind in (TargetKind.NUMERIC, TargetKind.PROBABILITY)
    direct = (
        options.row_mask is None
        and len(checked.order) == len(checked.answers)
        and (numeric or (metric.target_kind is TargetKind.LABEL and len(targets) == 1))
    )
    if not direct:
        aligned_answers, aligned = _aligned_frames(checked, metric=metric, options=options)
        y_true, y_pred = answer_arrays(aligned_answers, aligned, metric=metric, target_columns=targets)
        return AlignedArrays(y_true=y_true, y_pred=y_pred, rows=aligned.index.to_numpy(dtype=np.intp), ids=checked.ids)
    order = checked.order
    in_order = _in_order(order, len(checked.submission))
    y_true = _answer_truth(checked.answers.reset_index(drop=True), metric=metric, target_columns=targets)
    if numeric:
        columns = [checked.floats[c] for c in targets]
        if len(targets) == 1:
            # The order is a checked permutation: take without bounds checks.
            y_pred = columns[0] if in_order else np.take(columns[0], order, mode="clip")
        elif in_order and not any(c in checked.replaced for c in targets):
            # Float columns as read: pandas hands out its column-major block itself (a view,
            # where one block holds them), the layout the copy below would make.
            y_pred = checked.submission[targets].to_numpy(dtype=float)
        else:
            # Column-major, as DataFrame.to_numpy lays out a frame of separate columns.
            stacked = np.empty((len(targets), len(order)), dtype=float)
            for row, values in zip(stacked, columns):
                if in_order:
                    row[:] = values
                else:
                    np.take(values, order, out=row, mode="clip")  # valid rows: no bounds check
            y_pred = stacked.T
    else:
        # A label column whose missing cells were filled (``missing_values``) is read filled.
        column = targets[0]
        filled = checked.replaced.get(column)
        labels = (checked.submission[column] if filled is None else filled).to_numpy()
        y_pred = labels if in_order else np.take(labels, order, mode="clip")
    return AlignedArrays(y_true=y_true, y_pred=y_pred, rows=order, ids=checked.ids)


def _answer_truth(answers: pd.DataFrame, *, metric: Metric, target_columns: Sequence[str]) -> np.ndarray:
    """``y_true`` of :func:`answer_arrays`."""
    columns = list(target_columns)
    truth = answers[columns]
    if metric.target_kind in (TargetKind.NUMERIC, TargetKind.PROBABILITY):
        if not all(pd.api.types.is_numeric_dtype(t) for t in truth.dtypes):
            try:
                truth = truth.apply(pd.to_numeric)
            except (ValueError, TypeError):
                raise ConfigError(f"answers columns {_quote_list(columns)} hold values that are not numbers") from None
        y_true = truth.to_numpy(dtype=float)
    else:
        y_true = truth.to_numpy()
    return y_true[:, 0] if len(columns) == 1 else y_true


def answer_arrays(
    answers: pd.DataFrame, submission: pd.DataFrame, *, metric: Metric, target_columns: Sequence[str]
) -> tuple[np.ndarray, np.ndarray]:
    """Turn aligned frames into the ``(y_true, y_pred)`` arrays an array metric takes.

    Returns
    -------
    y_true, y_pred : numpy.ndarray
        Shape ``(n_rows,)`` for one target column, ``(n_rows, n_targets)`` for several; floats
        for numeric and probability targets, the parsed values otherwise.

    Raises
    ------
    ConfigError
        If an answer column of a numeric metric holds something that is not a number.
    """
    y_true = _answer_truth(answers, metric=metric, target_columns=target_columns)
    columns = list(target_columns)
    if metric.target_kind in (TargetKind.NUMERIC, TargetKind.PROBABILITY):
        y_pred = submission[columns].to_numpy(dtype=float)
    else:
        y_pred = submission[columns].to_numpy()
    return y_true, (y_pred[:, 0] if len(columns) == 1 else y_pred)


def check_submission(
    submission: pd.DataFrame,
    answers: pd.DataFrame,
    *,
    id_column: str | Sequence[str],
    target_columns: Sequence[str],
    target_kind: TargetKind = TargetKind.LABEL,
) -> tuple[np.ndarray, np.ndarray]:
    """Validate a submission against the answer key and align it row by row.

    Checks run in this order, and the first failure is raised: columns (missing, then
    unexpected, then repeated); ids (empty, repeated, unknown, then row count); per target
    column, missing values; then, for numeric and probability targets, non-numbers,
    non-finite values and (probabilities only) values outside [0, 1].

    Parameters
    ----------
    submission : pandas.DataFrame
        Columns ``[id_column, *target_columns]`` in any order, rows in any order; the id
        column read as text (:func:`read_submission`).
    answers : pandas.DataFrame
        Columns including ``[id_column, *target_columns]``; the id column read as text.
    id_column : str or sequence of str
        Name of the id column (or the columns of a composite id).
    target_columns : sequence of str
        Names of the predicted columns.
    target_kind : TargetKind
        What the metric needs the predictions to be.

    Returns
    -------
    y_true, y_pred : numpy.ndarray
        Answers and predictions in answer-file order; shape ``(n_rows,)`` for one target
        column, ``(n_rows, n_targets)`` for several. Float arrays for numeric and probability
        targets; the parsed values (bool, int, text) for labels.

    Raises
    ------
    InvalidSubmission
        With a message naming the column, row and id at fault.

    Examples
    --------
    >>> import pandas as pd
    >>> answers = pd.DataFrame({"id": ["a", "b"], "y": [1, 0]})
    >>> sub = pd.DataFrame({"id": ["b", "a"], "y": [0, 1]})
    >>> check_submission(sub, answers, id_column="id", target_columns=["y"])
    (array([1, 0]), array([1, 0]))
    """
    metric = Metric(name="check", fn=lambda y_true, y_pred: math.nan, higher_is_better=True, target_kind=target_kind, best=math.nan)
    options = ScoringOptions(id_columns=_as_tuple(id_column), target_columns=tuple(target_columns))
    aligned_answers, aligned = check_frames(submission, answers, metric=metric, options=options)
    return answer_arrays(aligned_answers, aligned, metric=metric, target_columns=target_columns)
