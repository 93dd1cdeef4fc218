"""A checked submission and its answers aligned by id, as frames (for frame metrics)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from mleaudit.grading.errors import ConfigError
from mleaudit.grading.metrics import Metric
from mleaudit.grading.metrics.arrowtext import arrow_text
from mleaudit.grading.validation.checks import _Checked, _row_mask_keeps, _validate
from mleaudit.grading.validation.options import ScoringOptions


def check_frames(
    submission: pd.DataFrame,
    answers: pd.DataFrame,
    *,
    metric: Metric,
    options: ScoringOptions,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Validate a submission against the answer key and align both tables by id.

    Checks run in this order, and the first failure is raised: columns (missing, then
    unexpected, then repeated); ids (empty, repeated, unknown, then row count); then per target
    column: missing values (unless the metric reads empty cells as empty text), and for numeric
    and probability targets non-numbers, non-finite values, values outside [0, 1] (probability
    targets) or outside ``value_range``; finally row sums (``row_sum_tolerance``). Then the
    ``row_mask`` keeps the scored answer rows.

    Parameters
    ----------
    submission : pandas.DataFrame
        As read by :func:`read_submission`.
    answers : pandas.DataFrame
        As read by :func:`read_answers`.
    metric : Metric
        Says what the target values must be.
    options : ScoringOptions
        Columns, id matching and filters (:func:`scoring_options`).

    Returns
    -------
    answers : pandas.DataFrame
        Every answer column, a fresh index; targets under their submission names. For answer
        files with one row per box, all rows (the metric groups them).
    submission : pandas.DataFrame
        The id, target and unscored columns, one row per distinct answer id in answer order;
        numeric targets as float, text targets with empty cells as ``""`` when allowed. Its
        index is each row's 0-based position in the submission file, and
        ``attrs["id_columns"]`` names the id columns.

    For a metric with ``any_row_order`` and a submission that only reorders the test ids, the
    rows stay in file order instead and the answers are reordered to match: the answers' index
    then holds each row's place in answer order (:func:`mleaudit.grading.metrics.base.in_answer_order`).

    Raises
    ------
    InvalidSubmission
        With a message naming the column, row and id at fault.
    ConfigError
        If the answers lack a mapped column or the row mask's column.
    """
    return _aligned_frames(_validate(submission, answers, metric=metric, options=options), metric=metric, options=options)


def _aligned_frames(checked: _Checked, *, metric: Metric, options: ScoringOptions) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The frames :func:`check_frames` returns, from a checked submission."""
    id_columns, targets = list(options.id_columns), list(options.target_columns)
    answers, submission, order, replaced = checked.answers, checked.submission, checked.order, checked.replaced
    # Answer order; the index keeps each row's 0-based position in the file. Rows already in
    # answer order (the usual case) are not copied.
    if _in_order(order, len(submission)):
        aligned = submission[[*id_columns, *targets, *options.unscored_columns]]
        if replaced:
            aligned = aligned.assign(**replaced)
        aligned = aligned.set_axis(pd.RangeIndex(len(order), name="row"), axis=0)
    elif (
        metric.any_row_order
        and len(order) == len(submission) == len(answers)
        and options.row_mask is None
        and not metric.repeated_answer_ids
    ):
        # The metric reduces in answer order itself: the rows stay in file order and the
        # answers, usually the smaller table, are reordered to match, their index holding each
        # row's place in answer order.
        aligned = submission[[*id_columns, *targets, *options.unscored_columns]]
        if replaced:
            aligned = aligned.assign(**replaced)
        aligned = aligned.set_axis(pd.RangeIndex(len(order), name="row"), axis=0)
        aligned.attrs["id_columns"] = id_columns
        place = np.empty(len(order), dtype=np.intp)
        place[order] = np.arange(len(order), dtype=np.intp)
        answers = answers.reset_index(drop=True)
        # Ids matched exactly are the submission's own, in file order: reused, not gathered.
        same_ids = [c for c in id_columns if answers[c].dtype == aligned[c].dtype and arrow_text(aligned[c]) is not None]
        reordered = _taken(answers.drop(columns=same_ids), place)
        if same_ids:
            reordered = reordered.assign(**{c: aligned[c].reset_index(drop=True) for c in same_ids})[list(answers.columns)]
        return reordered.set_axis(pd.Index(place, copy=False), axis=0), aligned
    else:
        columns = [*id_columns, *targets, *options.unscored_columns]
        # Text ids matched exactly are the answers' own ids, one row each: those are reused
        # rather than copied out of the submission.
        id_column = id_columns[0]
        reuse = (
            len(id_columns) == 1
            and len(order) == len(answers)
            and arrow_text(submission[id_column]) is not None
            and answers[id_column].dtype == submission[id_column].dtype
        )
        moved = [c for c in columns if not (reuse and c == id_column)]
        source = submission[moved].assign(**{c: v for c, v in replaced.items() if c in moved})
        aligned = _taken(source, order).set_axis(pd.Index(order, name="row", copy=False), axis=0)
        if reuse:
            aligned = aligned.assign(**{id_column: answers[id_column].set_axis(aligned.index)})[columns]
    aligned.attrs["id_columns"] = id_columns
    answers = answers.reset_index(drop=True)
    if options.row_mask is not None:
        column = options.row_mask[0]
        if column not in answers.columns:
            raise ConfigError(f"row_mask: the answers have no column {column!r}")
        keep = _row_mask_keeps(answers, options)
        if metric.repeated_answer_ids:
            raise ConfigError("row_mask cannot filter an answer file with several rows per id")
        answers = answers[keep].reset_index(drop=True)
        aligned = aligned[keep]
    return answers, aligned


def _taken(frame: pd.DataFrame, rows: np.ndarray) -> pd.DataFrame:
    """``frame.take(rows)`` with a fresh index."""
    return frame.take(rows).reset_index(drop=True)


def _in_order(order: np.ndarray, n_rows: int) -> bool:
    """The alignment keeps every row in place (the rows are in answer order)."""
    # The rows of distinct answer ids are distinct: n of them in 0..n-1, increasing, are the
    # identity. One comparison pass, no array of the identity built.
    return len(order) == n_rows and (n_rows < 2 or bool((order[1:] > order[:-1]).all()))
