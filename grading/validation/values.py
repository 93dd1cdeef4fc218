"""Cell values of a target column: present, of the answers' kind, finite numbers in range, rows summing to 1."""

from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd

from mleaudit.grading.errors import InvalidSubmission
from mleaudit.grading.validation.messages import _describe_row, _quote_list


#: Rows per block of the row-sum check (32,768 floats: 256 KiB, within a core's L2 cache).
_ROW_BLOCK = 1 << 15


def check_no_missing(values: pd.Series, *, column: str, ids: pd.Series | pd.DataFrame) -> None:
    """Check a target column has no empty cells.

    Raises
    ------
    InvalidSubmission
        Naming the first empty cell's row and id.
    """
    missing = np.flatnonzero(values.isna().to_numpy())
    if missing.size:
        raise InvalidSubmission(
            f"Submission column {column!r} has a missing value at {_describe_row(int(missing[0]), ids)}.",
            reason="missing-value", column=column, row=int(missing[0]) + 1,
        )


def check_label_kind(values: pd.Series, truth: pd.Series, *, column: str, ids: pd.Series | pd.DataFrame) -> None:
    """Check a label column holds numbers (or booleans) where the answers' labels are.

    A text label (``"abc"``, ``"-"``) can never equal a number or boolean label: MLE-bench's
    graders (scikit-learn 1.5.1) then compare every label of the column as text and score every
    row wrong, where this check names the cell (a documented deviation). An infinite label, or a
    fractional one among integer labels, scikit-learn refuses in MLE-bench's graders too. Numbers
    among boolean labels compare as NumPy compares them (``True == 1``) and pass.

    Raises
    ------
    InvalidSubmission
        Naming the first label not of the answers' kind, its row and id (reason
        ``incomparable``: what the answers' labels are is a fact about the answers).
    """
    if pd.api.types.is_bool_dtype(truth.dtype):
        if pd.api.types.is_bool_dtype(values.dtype) or pd.api.types.is_numeric_dtype(values.dtype):
            return  # numbers compare with booleans as NumPy and scikit-learn compare them (True == 1)
        cells = values.reset_index(drop=True)
        # pandas reads a column with any other value as text: "True" and "False" are then words.
        bad = np.flatnonzero(
            ~cells.map(lambda v: isinstance(v, (bool, np.bool_)) or v in ("True", "False")).to_numpy(dtype=bool)
        )
        kind = "True or False"
    elif pd.api.types.is_numeric_dtype(truth.dtype):
        numbers = pd.to_numeric(values.reset_index(drop=True), errors="coerce")
        bad = np.flatnonzero(numbers.isna().to_numpy())
        kind = "a number"
        if not bad.size:
            floats = numbers.to_numpy(dtype=float)
            bad = np.flatnonzero(~np.isfinite(floats))
            kind = "a finite number"
            if not bad.size and pd.api.types.is_integer_dtype(truth.dtype):
                # scikit-learn refuses a fractional label among whole ones ("a mix of multiclass and
                # continuous"), as in MLE-bench's graders; a whole float (4.0) is class 4.
                bad = np.flatnonzero(floats != np.round(floats))
                kind = "a whole number"
    else:
        return
    if bad.size:
        row = int(bad[0])
        raise InvalidSubmission(
            f"Submission column {column!r} has the label {str(values.iloc[row])!r} at {_describe_row(row, ids)}, "
            f"which is not {kind} like the answers' labels.",
            reason="incomparable", column=column, row=row + 1,
        )


def check_numeric(values: pd.Series, *, column: str, ids: pd.Series | pd.DataFrame) -> np.ndarray:
    """Check a target column holds finite numbers and return them as floats.

    A column pandas reads as booleans (every cell ``True`` or ``False``) holds the numbers 1 and
    0, as MLE-bench's graders take it (``pd.to_numeric`` keeps it, NumPy and scikit-learn count
    ``True`` as 1): hard class predictions of a binary target are valid scores.

    Raises
    ------
    InvalidSubmission
        Naming the first value that is not a number (text, or a boolean among other values)
        or is infinite, with its row and id.
    """
    values = values.reset_index(drop=True)
    if (
        pd.api.types.is_float_dtype(values.dtype)
        or pd.api.types.is_integer_dtype(values.dtype)
        or (pd.api.types.is_bool_dtype(values.dtype) and not values.isna().any())
    ):
        floats = values.to_numpy(dtype=float)
    else:
        # A boolean among numbers or text is no number pandas could read the column as.
        if pd.api.types.is_bool_dtype(values.dtype):
            is_bool = values.notna().to_numpy(dtype=bool)
        else:
            is_bool = values.map(lambda v: isinstance(v, (bool, np.bool_))).to_numpy(dtype=bool)
        numbers = pd.to_numeric(values.where(~is_bool), errors="coerce")
        not_numbers = np.flatnonzero((numbers.isna().to_numpy() & values.notna().to_numpy()) | is_bool)
        if not_numbers.size:
            bad = int(not_numbers[0])
            raise InvalidSubmission(
                f"Submission column {column!r} has a non-numeric value {str(values.iloc[bad])!r} at "
                f"{_describe_row(bad, ids)}; expected a number.",
                reason="bad-value", column=column, row=bad + 1,
            )
        floats = numbers.to_numpy(dtype=float)
    infinite = np.flatnonzero(~np.isfinite(floats))
    if infinite.size:
        row = int(infinite[0])
        raise InvalidSubmission(
            f"Submission column {column!r} has a non-finite value {float(floats[row])!r} at {_describe_row(row, ids)}.",
            reason="non-finite", column=column, row=row + 1,
        )
    return floats


def check_probabilities(values: np.ndarray, *, column: str, ids: pd.Series | pd.DataFrame) -> None:
    """Check numbers lie in [0, 1].

    Raises
    ------
    InvalidSubmission
        Naming the first value outside [0, 1], with its row and id.
    """
    outside = np.flatnonzero((values < 0) | (values > 1))
    if outside.size:
        row = int(outside[0])
        raise InvalidSubmission(
            f"Submission column {column!r} has {float(values[row])!r} at {_describe_row(row, ids)}, "
            "outside [0, 1]; expected a probability.",
            reason="bad-value", column=column, row=row + 1,
        )


def _number(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else repr(float(x))


def check_value_range(values: np.ndarray, *, column: str, ids: pd.Series | pd.DataFrame, low: float, high: float) -> None:
    """Check numbers lie in the closed range ``[low, high]``.

    Raises
    ------
    InvalidSubmission
        Naming the first value outside the range, with its row and id.
    """
    outside = np.flatnonzero((values < low) | (values > high))
    if outside.size:
        row = int(outside[0])
        raise InvalidSubmission(
            f"Submission column {column!r} has {float(values[row])!r} at {_describe_row(row, ids)}, "
            f"outside [{_number(low)}, {_number(high)}].",
            reason="bad-value", column=column, row=row + 1,
        )


def check_row_sums(
    values: Sequence[np.ndarray], *, columns: Sequence[str], ids: pd.Series | pd.DataFrame, tolerance: float
) -> None:
    """Check each row of class probabilities sums to 1.

    Parameters
    ----------
    values : sequence of numpy.ndarray
        One array per class column, in submission order.
    columns : sequence of str
        The class columns, for the message.
    tolerance : float
        Largest accepted ``|row sum - 1|``.

    Raises
    ------
    InvalidSubmission
        Naming the first row whose probabilities do not sum to 1.
    """
    n_rows = len(values[0]) if len(values) else 0
    # Block by block, so the running sums stay in the CPU cache while each column is added
    # (columns in order, from zero: the same additions as whole-column sums).
    sums = np.empty(min(n_rows, _ROW_BLOCK))
    distance = np.empty_like(sums)
    for begin in range(0, n_rows, _ROW_BLOCK):
        block = sums[: min(_ROW_BLOCK, n_rows - begin)]
        block[:] = 0.0
        for column in values:
            block += column[begin : begin + block.size]
        off = distance[: block.size]
        np.subtract(block, 1.0, out=off)
        np.abs(off, out=off)
        bad = np.flatnonzero(off > tolerance)
        if bad.size:
            row = begin + int(bad[0])
            raise InvalidSubmission(
                f"Submission probabilities in columns {_quote_list(columns)} sum to {float(block[bad[0]])!r} at "
                f"{_describe_row(row, ids)}; each row must sum to 1 (within {tolerance:g}).",
                reason="row-sum", column=columns[0] if columns else None, row=row + 1,
            )
