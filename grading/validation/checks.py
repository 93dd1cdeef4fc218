"""Every check of a submission against the answer key, in order; the first failure is raised."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from mleaudit.grading.errors import ConfigError, InvalidSubmission, UndefinedScore
from mleaudit.grading.metrics import Metric, TargetKind
from mleaudit.grading.validation.columns import check_columns
from mleaudit.grading.validation.ids import check_ids, check_ids_in_order, ids_by_number
from mleaudit.grading.validation.messages import _describe_row, _quote_list
from mleaudit.grading.validation.options import NAN_TEXT, ScoringOptions
from mleaudit.grading.validation.values import (
    check_label_kind,
    check_no_missing,
    check_numeric,
    check_probabilities,
    check_row_sums,
    check_value_range,
)


def _map_answer_columns(answers: pd.DataFrame, options: ScoringOptions) -> pd.DataFrame:
    if not options.answer_columns:
        return answers
    answers = answers.copy()
    for target, source in options.answer_columns.items():
        if source not in answers.columns:
            raise ConfigError(f"the answers have no column {source!r} (mapped to target {target!r} by answer_columns)")
        if target in answers.columns and target != source:
            raise ConfigError(f"the answers already have a column {target!r}; answer_columns cannot map {source!r} onto it")
        answers[target] = answers[source]
    return answers


@dataclass(frozen=True, slots=True, kw_only=True)
class _Checked:
    """A submission that passed every check, with what aligning it needs."""

    answers: pd.DataFrame  # targets under their submission names, the answers' own index
    submission: pd.DataFrame  # a 0-based index over file rows
    ids: pd.Series | pd.DataFrame  # the submission's id column(s)
    order: np.ndarray  # per distinct answer id, its row in the file
    floats: dict[str, np.ndarray]  # numeric targets as floats, in file order
    replaced: dict[str, Any]  # targets whose checked values replace the column as read


def _checked_floats(values: pd.Series, *, kind: TargetKind, options: ScoringOptions) -> np.ndarray | None:
    """The floats of a number column that passes every value check, from two reductions; else None.

    ``min`` and ``max`` carry a NaN through, and an infinity or a value out of range is one of
    them, so in-range extremes prove the whole column valid. ``None`` (some value fails, or
    the column is not numbers) sends the caller to the checks that name the first bad row.
    """
    if not len(values) or not (pd.api.types.is_float_dtype(values.dtype) or pd.api.types.is_integer_dtype(values.dtype)):
        return None
    if pd.api.types.is_extension_array_dtype(values.dtype):
        return None  # nullable dtypes: missing cells need the general checks
    floats = values.to_numpy(dtype=float)
    low, high = float(floats.min()), float(floats.max())
    if not (math.isfinite(low) and math.isfinite(high)):
        return None
    if kind is TargetKind.PROBABILITY and not (low >= 0.0 and high <= 1.0):
        return None
    if options.value_range is not None and not (low >= options.value_range[0] and high <= options.value_range[1]):
        return None
    return floats


def _aliased(submission: pd.DataFrame, options: ScoringOptions) -> pd.DataFrame:
    """The submission with a target column given under its alias renamed to the target's name."""
    for target, alias in options.column_aliases.items():
        if alias not in submission.columns:
            continue
        if target in submission.columns:
            raise InvalidSubmission(
                f"Submission has both column {target!r} and column {alias!r}, which are read as one column; keep one.",
                reason="duplicate-column", column=alias,
            )
        submission = submission.rename(columns={alias: target})
    return submission


def _validate(submission: pd.DataFrame, answers: pd.DataFrame, *, metric: Metric, options: ScoringOptions) -> _Checked:
    """Every check of :func:`check_frames`, in its order; the first failure is raised."""
    id_columns, targets = list(options.id_columns), list(options.target_columns)
    answers = _map_answer_columns(answers, options)
    absent = [c for c in targets if c not in answers.columns]
    if absent and metric.targets_in_answers:
        raise ConfigError(f"the answers have no column(s) {_quote_list(absent)}")
    submission = _aliased(submission, options)
    check_columns(
        submission,
        id_column=id_columns,
        target_columns=targets,
        unscored_columns=options.unscored_columns,
        extra_columns=options.extra_columns,
        column_order=options.column_order,
    )
    submission = submission.reset_index(drop=True)
    ids = submission[id_columns[0]] if len(id_columns) == 1 else submission[id_columns]
    answer_ids = answers[id_columns[0]] if len(id_columns) == 1 else answers[id_columns]
    matched = check_ids_in_order if options.repeated_ids == "in_order" else check_ids
    try:
        order = matched(ids, answer_ids, extra_ids=options.extra_ids)
    except InvalidSubmission:
        # Only ids that fail as text are read as numbers: the usual file costs nothing more.
        spelled = ids_by_number(ids, answer_ids) if options.id_match == "number" else None
        if spelled is None:
            raise
        submission = submission.assign(**{spelled.name: spelled})
        ids = submission[spelled.name]
        order = matched(ids, answer_ids, extra_ids=options.extra_ids)
    if len(order) != len(answers) and not metric.repeated_answer_ids:
        repeated = answer_ids.duplicated() if isinstance(answer_ids, pd.Series) else answer_ids.duplicated()
        row = int(np.flatnonzero(repeated.to_numpy())[0])
        raise ConfigError(f"the answers repeat an id at row {row + 1}")
    floats: dict[str, np.ndarray] = {}
    replaced: dict[str, Any] = {}
    kind = metric.target_kind
    unscored = _unscored_file_rows(answers, order, options, n_rows=len(submission), metric=metric)
    for column in targets:
        values = submission[column]
        if unscored is not None:
            # Rows the row mask drops are never read: MLE-bench drops them before scoring, so a
            # missing or odd value there is no error. They take the first scored row's value,
            # which is checked itself, and the mask removes them after alignment.
            values = values.where(~unscored, values.iloc[int(np.flatnonzero(~unscored)[0])])
        if options.missing_values in ("nan_text", "empty_text"):
            if values.isna().any():
                filler = NAN_TEXT if options.missing_values == "nan_text" else ""
                replaced[column] = values.astype(object).where(values.notna(), filler)
            continue
        if options.missing_values == "error_if_all" and len(values) and values.isna().all():
            raise InvalidSubmission(
                f"Submission column {column!r} has no value in any of its {len(values)} rows.",
                reason="missing-value", column=column,
            )
        if kind is TargetKind.TEXT and metric.allow_missing and options.missing_values != "error":
            if values.isna().any():
                replaced[column] = values.astype(object).where(values.notna(), "")
            continue
        numbers = None
        if kind in (TargetKind.NUMERIC, TargetKind.PROBABILITY):
            numbers = _checked_floats(values, kind=kind, options=options)
        if numbers is None and metric.undefined_on_missing:
            _raise_if_undefined(values, column=column, ids=ids, metric=metric)
            if metric.infinite_ranked:
                numbers = _ranked_floats(values)
        if numbers is None:
            check_no_missing(values, column=column, ids=ids)
            truth_column = options.answer_columns.get(column, column)
            if kind is TargetKind.LABEL and truth_column in answers.columns:
                check_label_kind(values, answers[truth_column], column=column, ids=ids)
            if kind in (TargetKind.LABEL, TargetKind.TEXT):
                continue
            numbers = check_numeric(values, column=column, ids=ids)
            if kind is TargetKind.PROBABILITY:
                check_probabilities(numbers, column=column, ids=ids)
            if options.value_range is not None:
                check_value_range(numbers, column=column, ids=ids, low=options.value_range[0], high=options.value_range[1])
        floats[column] = numbers
        if values.dtype != np.float64:
            replaced[column] = numbers
    if options.row_sum_tolerance is not None and kind in (TargetKind.PROBABILITY, TargetKind.NUMERIC) and len(targets) > 1:
        check_row_sums([floats[c] for c in targets], columns=targets, ids=ids, tolerance=options.row_sum_tolerance)
    return _Checked(answers=answers, submission=submission, ids=ids, order=order, floats=floats, replaced=replaced)


def _unscored_file_rows(
    answers: pd.DataFrame, order: np.ndarray, options: ScoringOptions, *, n_rows: int, metric: Metric
) -> np.ndarray | None:
    """Which submission rows the ``row_mask`` leaves out of the score; None when it leaves none out.

    ``order`` holds each answer row's row in the file; rows it does not hold (ids dropped by
    ``extra_ids: ignore``) are dropped too. ``None`` also when every row is left out (the
    usual checks then apply) or the answers lack the mask's column (an error named later).
    """
    if options.row_mask is None or metric.repeated_answer_ids or len(order) != len(answers):
        return None
    if options.row_mask[0] not in answers.columns:
        return None
    scored = np.zeros(n_rows, dtype=bool)
    scored[order] = _row_mask_keeps(answers, options)
    if scored.all() or not scored.any():
        return None
    return ~scored


def _row_mask_keeps(answers: pd.DataFrame, options: ScoringOptions) -> np.ndarray:
    """Which answer rows the row mask keeps (boolean, answer order)."""
    assert options.row_mask is not None
    column, value = options.row_mask
    equal = (answers[column] == value).to_numpy(dtype=bool)
    return equal if options.row_mask_equals else ~equal


def _ranked_floats(values: pd.Series) -> np.ndarray | None:
    """The numbers of a column with infinities a rank metric ranks; None when a cell is text."""
    numbers = pd.to_numeric(values.astype(object), errors="coerce")
    if numbers.isna().any():
        return None  # text: the usual checks name it
    return numbers.to_numpy(dtype=float)


def _raise_if_undefined(values: pd.Series, *, column: str, ids: pd.Series | pd.DataFrame, metric: Metric) -> None:
    """For a metric that is NaN on missing or infinite predictions: raise :class:`UndefinedScore`.

    Only a column of numbers (some missing or infinite) is undefined; one with text in it is
    left to the usual checks, which reject it.
    """
    numbers = pd.to_numeric(values.astype(object).where(values.notna(), np.nan), errors="coerce").reset_index(drop=True)
    if (numbers.isna().to_numpy() & values.notna().to_numpy()).any():
        return
    floats = numbers.to_numpy(dtype=float, na_value=np.nan)
    undefined = np.flatnonzero(np.isnan(floats) if metric.infinite_ranked else ~np.isfinite(floats))
    if undefined.size:
        row = int(undefined[0])
        what = "a missing value" if pd.isna(numbers.iloc[row]) else f"the value {float(numbers.iloc[row])!r}"
        raise UndefinedScore(
            f"Submission column {column!r} has {what} at {_describe_row(row, ids)}, for which {metric.name} is "
            "undefined (NaN); MLE-bench counts it as a valid submission with no score and no medal",
            column=column, row=row + 1,
        )
