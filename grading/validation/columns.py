"""The submission's header: the expected columns, none repeated, in the required order."""

from __future__ import annotations

from typing import Sequence

import pandas as pd

from mleaudit.grading.errors import InvalidSubmission
from mleaudit.grading.validation.keys import _as_tuple
from mleaudit.grading.validation.messages import _plural, _quote_list
from mleaudit.grading.validation.options import COLUMN_ORDERS


def check_columns(
    submission: pd.DataFrame,
    *,
    id_column: str | Sequence[str],
    target_columns: Sequence[str],
    unscored_columns: Sequence[str] = (),
    extra_columns: str = "error",
    column_order: str = "any",
) -> None:
    """Check the submission has exactly the id, target (and unscored) columns.

    Parameters
    ----------
    extra_columns : {"error", "ignore"}
        Whether other columns are an error or allowed (the scoring path never reads them).
    column_order : {"any", "id_first", "as_listed"}
        Whether the columns may come in any order, must start with the id column(s), or must
        be exactly ``[*id_column, *target_columns, *unscored_columns]`` in that order.

    Raises
    ------
    InvalidSubmission
        Naming the missing columns, or else the unexpected ones, and the expected set; then
        a repeated column; then the first column out of place.
    """
    if column_order not in COLUMN_ORDERS:
        raise ValueError(f"column_order must be one of {_quote_list(COLUMN_ORDERS)}, not {column_order!r}")
    expected = [*_as_tuple(id_column), *target_columns, *unscored_columns]
    columns = [str(c) for c in submission.columns]
    if not columns:
        raise InvalidSubmission("Submission has no columns.", reason="no-columns")
    missing = [c for c in expected if c not in columns]
    if missing:
        raise InvalidSubmission(
            f"Submission is missing {_plural('column', len(missing))} {_columns_text(missing)} "
            f"(expected columns: {_columns_text(expected)}).",
            reason="missing-column", column=missing[0],
        )
    extra = [c for c in columns if c not in expected]
    if extra and extra_columns != "ignore":
        raise InvalidSubmission(
            f"Submission has unexpected {_plural('column', len(extra))} {_columns_text(extra)} "
            f"(expected columns: {_columns_text(expected)}).",
            reason="extra-column", column=extra[0],
        )
    seen: set[str] = set()
    for c in columns:
        if c in seen:
            raise InvalidSubmission(f"Submission repeats column {c!r}.", reason="duplicate-column", column=c)
        seen.add(c)
    n_ids = len(_as_tuple(id_column))
    in_place = {"any": 0, "id_first": n_ids, "as_listed": len(expected)}[column_order]
    for position, (found, wanted) in enumerate(zip(columns[:in_place], expected[:in_place])):
        if found != wanted:
            raise InvalidSubmission(
                f"Submission has column {found!r} in place {position + 1}, where {wanted!r} must be "
                f"({_order_rule(column_order, expected, n_ids)}).",
                reason="column-order", column=found,
            )


#: Columns named in full in a message; a longer list shows its start, its end and its size.
_SHOWN_COLUMNS = 8


def _columns_text(columns: Sequence[str]) -> str:
    """The quoted column names, or for a long list (80 class columns) its start, end and size."""
    if len(columns) <= _SHOWN_COLUMNS:
        return _quote_list(columns)
    return f"{_quote_list(columns[: _SHOWN_COLUMNS - 2])}, ..., {columns[-1]!r}: {len(columns)} columns"


def _order_rule(column_order: str, expected: Sequence[str], n_ids: int) -> str:
    if column_order == "id_first":
        return "the id column comes first" if n_ids == 1 else "the id columns come first, in this order"
    return f"columns in this order: {_columns_text(expected)}"
