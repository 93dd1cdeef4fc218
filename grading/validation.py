"""Read and check submission files before a metric sees them.

Every check raises :class:`~grading.errors.InvalidSubmission` with a message that names the
column, the row and the id at fault, so an agent (or a reviewer) can fix the file. Rows are
counted from 1 over data rows, header excluded, in the order of the submission file. Ids are
compared as the exact text in the CSV (``"0001_01"`` and ``"1"`` stay text), as Kaggle
matches submission rows to the answer key.

Messages never contain answer values: the validation endpoint that agents may call echoes
them, and the held-out answers must not leak through it. Ids and column names are public
(they are in the public test file and sample submission), so they may appear.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd

from grading.errors import ConfigError, InvalidSubmission
from grading.metrics import TargetKind

__all__ = [
    "read_csv",
    "read_submission",
    "read_answers",
    "check_columns",
    "check_ids",
    "check_no_missing",
    "check_numeric",
    "check_probabilities",
    "check_submission",
]

logger = logging.getLogger(__name__)

_PANDAS_VERSION = tuple(int(p) for p in pd.__version__.split(".")[:2] if p.isdigit())


def read_csv(path: str | os.PathLike[str], **kwargs) -> pd.DataFrame:
    """Read a CSV the way MLE-bench does (round-trip float parsing).

    pandas 3.1 parses floats exactly by default and deprecates ``float_precision``; older
    pandas needs ``float_precision="round_trip"`` so a written float reads back unchanged.
    """
    if _PANDAS_VERSION < (3, 1):
        kwargs.setdefault("float_precision", "round_trip")
    return pd.read_csv(path, **kwargs)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def read_submission(path: str | os.PathLike[str], *, id_column: str | None = None) -> pd.DataFrame:
    """Read a submission CSV.

    Parameters
    ----------
    path : path-like
        The submission file.
    id_column : str, optional
        Read this column as text so ids keep their exact spelling (leading zeros, ``"1.0"``).

    Returns
    -------
    pandas.DataFrame
        One row per data row of the file; the id column as text, other columns as pandas
        infers them (the same inference MLE-bench's grader sees).

    Raises
    ------
    InvalidSubmission
        If the file is empty or is not a readable CSV (the message quotes the parser).
    """
    path = Path(path)
    try:
        with path.open("rb") as handle:
            head = handle.read(65536)
    except OSError as exc:
        raise InvalidSubmission(f"Submission file '{path}' cannot be read: {exc.strerror or exc}") from None
    if len(head) < 65536 and not head.strip():
        raise InvalidSubmission(f"Submission file '{path}' is empty.")
    dtype = {id_column: str} if id_column else None
    try:
        frame = read_csv(path, dtype=dtype)
    except pd.errors.EmptyDataError:
        raise InvalidSubmission(f"Submission file '{path}' is empty.") from None
    except (pd.errors.ParserError, UnicodeDecodeError, ValueError) as exc:
        raise InvalidSubmission(f"Submission file '{path}' is not a readable CSV: {_first_line(exc)}") from None
    return frame


def read_answers(path: str | os.PathLike[str], *, id_column: str, target_columns: Sequence[str]) -> pd.DataFrame:
    """Read a competition's private answers file.

    Parameters
    ----------
    path : path-like
        The answers CSV (``<data>/<id>/prepared/private/...``).
    id_column : str
        Read as text, like the submission's.
    target_columns : sequence of str
        Columns that must be present.

    Returns
    -------
    pandas.DataFrame
        With at least ``[id_column, *target_columns]``.

    Raises
    ------
    ConfigError
        If the file cannot be read, lacks a column, or has missing or repeated ids: the
        answer key itself is broken, which is not the submission's fault.
    """
    path = Path(path)
    try:
        frame = read_csv(path, dtype={id_column: str})
    except (OSError, pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError, ValueError) as exc:
        raise ConfigError(f"answers file {path}: cannot be read: {_first_line(exc)}") from None
    missing = [c for c in [id_column, *target_columns] if c not in frame.columns]
    if missing:
        raise ConfigError(f"answers file {path}: missing column(s) {_quote_list(missing)}")
    ids = frame[id_column]
    if ids.isna().any():
        raise ConfigError(f"answers file {path}: empty id at row {int(np.flatnonzero(ids.isna().to_numpy())[0]) + 1}")
    if ids.duplicated().any():
        raise ConfigError(f"answers file {path}: repeated id {ids[ids.duplicated()].iloc[0]!r}")
    return frame


def _quote_list(names: Sequence[str]) -> str:
    return ", ".join(repr(str(n)) for n in names)


def _plural(word: str, n: int) -> str:
    return word if n == 1 else word + "s"


def check_columns(submission: pd.DataFrame, *, id_column: str, target_columns: Sequence[str]) -> None:
    """Check the submission has exactly the id column and the target columns.

    Raises
    ------
    InvalidSubmission
        Naming the missing columns, or else the unexpected ones, and the expected set.
    """
    expected = [id_column, *target_columns]
    columns = [str(c) for c in submission.columns]
    if not columns:
        raise InvalidSubmission("Submission has no columns.")
    missing = [c for c in expected if c not in columns]
    if missing:
        raise InvalidSubmission(
            f"Submission is missing {_plural('column', len(missing))} {_quote_list(missing)} "
            f"(expected columns: {_quote_list(expected)})."
        )
    extra = [c for c in columns if c not in expected]
    if extra:
        raise InvalidSubmission(
            f"Submission has unexpected {_plural('column', len(extra))} {_quote_list(extra)} "
            f"(expected columns: {_quote_list(expected)})."
        )
    seen: set[str] = set()
    for c in columns:
        if c in seen:
            raise InvalidSubmission(f"Submission repeats column {c!r}.")
        seen.add(c)


def check_ids(submission_ids: pd.Series, answer_ids: pd.Series) -> np.ndarray:
    """Check the submission has each test id exactly once.

    Parameters
    ----------
    submission_ids, answer_ids : pandas.Series of str
        The id columns, in file order.

    Returns
    -------
    numpy.ndarray of int
        For each answer row, the position of its row in the submission (a permutation), so
        ``submission.iloc[order]`` is aligned with the answers.

    Raises
    ------
    InvalidSubmission
        For an empty id, a repeated id (both rows named), an id that is not a test id, or a
        row count that differs from the test set (the first missing id named).
    """
    sub = submission_ids.reset_index(drop=True)
    ans = answer_ids.reset_index(drop=True).astype(str)
    empty = np.flatnonzero(sub.isna().to_numpy())
    if empty.size:
        raise InvalidSubmission(f"Submission has an empty id at row {int(empty[0]) + 1}.")
    sub = sub.astype(str)
    first_row: dict[str, int] = {}
    for row, value in enumerate(sub.tolist()):
        if value in first_row:
            raise InvalidSubmission(f"Submission repeats id {value!r} at rows {first_row[value] + 1} and {row + 1}.")
        first_row[value] = row
    answer_set = set(ans.tolist())
    unknown = [row for row, value in enumerate(sub.tolist()) if value not in answer_set]
    if unknown:
        # The totals tell a reviewer at once whether a few ids are off or the whole file was
        # made for another test set (e.g. Kaggle's own test.csv instead of the prepared split).
        raise InvalidSubmission(
            f"Submission has id {sub.iloc[unknown[0]]!r} at row {unknown[0] + 1}, which is not a test id "
            f"({len(unknown)} of its {len(sub)} {_plural('row', len(sub))} have ids outside the "
            f"{len(ans)} test ids)."
        )
    if len(sub) != len(ans):
        # No repeats and no unknown ids, so the submission is short: name what it lacks.
        missing_row = next(i for i, value in enumerate(ans.tolist()) if value not in first_row)
        raise InvalidSubmission(
            f"Submission has {len(sub)} {_plural('row', len(sub))}; expected {len(ans)} (one per test id). "
            f"First missing id: {ans.iloc[missing_row]!r} (row {missing_row + 1} of the test set)."
        )
    return np.array([first_row[value] for value in ans.tolist()], dtype=np.intp)


def _describe_row(row: int, ids: pd.Series) -> str:
    return f"row {row + 1} (id {str(ids.iloc[row])!r})"


def check_no_missing(values: pd.Series, *, column: str, ids: pd.Series) -> None:
    """Check a target column has no empty cells.

    Raises
    ------
    InvalidSubmission
        Naming the first empty cell's row and id.
    """
    missing = np.flatnonzero(values.isna().to_numpy())
    if missing.size:
        raise InvalidSubmission(
            f"Submission column {column!r} has a missing value at {_describe_row(int(missing[0]), ids)}."
        )


def check_numeric(values: pd.Series, *, column: str, ids: pd.Series) -> np.ndarray:
    """Check a target column holds finite numbers and return them as floats.

    Raises
    ------
    InvalidSubmission
        Naming the first value that is not a number (booleans and text count as not numbers)
        or is infinite, with its row and id.
    """
    values = values.reset_index(drop=True)
    # Booleans convert to 0/1 silently, but True/False is a label, not a prediction of a number.
    if pd.api.types.is_bool_dtype(values.dtype):
        is_bool = np.ones(len(values), dtype=bool)
    elif pd.api.types.is_numeric_dtype(values.dtype):
        is_bool = np.zeros(len(values), dtype=bool)
    else:
        is_bool = values.map(lambda v: isinstance(v, (bool, np.bool_))).to_numpy(dtype=bool)
    numbers = pd.to_numeric(values.where(~is_bool), errors="coerce")
    not_numbers = np.flatnonzero((numbers.isna().to_numpy() & values.notna().to_numpy()) | is_bool)
    if not_numbers.size:
        bad = int(not_numbers[0])
        raise InvalidSubmission(
            f"Submission column {column!r} has a non-numeric value {str(values.iloc[bad])!r} at "
            f"{_describe_row(bad, ids)}; expected a number."
        )
    floats = numbers.to_numpy(dtype=float)
    infinite = np.flatnonzero(~np.isfinite(floats))
    if infinite.size:
        row = int(infinite[0])
        raise InvalidSubmission(
            f"Submission column {column!r} has a non-finite value {float(floats[row])!r} at {_describe_row(row, ids)}."
        )
    return floats


def check_probabilities(values: np.ndarray, *, column: str, ids: pd.Series) -> None:
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
            "outside [0, 1]; expected a probability."
        )


def check_submission(
    submission: pd.DataFrame,
    answers: pd.DataFrame,
    *,
    id_column: str,
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
    id_column : str
        Name of the id column.
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
    target_columns = list(target_columns)
    check_columns(submission, id_column=id_column, target_columns=target_columns)
    submission = submission.reset_index(drop=True)
    ids = submission[id_column]
    order = check_ids(ids, answers[id_column])
    true_cols: list[np.ndarray] = []
    pred_cols: list[np.ndarray] = []
    for column in target_columns:
        values = submission[column]
        check_no_missing(values, column=column, ids=ids)
        if target_kind is TargetKind.LABEL:
            pred = values.to_numpy()
            truth = answers[column].to_numpy()
        else:
            pred = check_numeric(values, column=column, ids=ids)
            if target_kind is TargetKind.PROBABILITY:
                check_probabilities(pred, column=column, ids=ids)
            truth = pd.to_numeric(answers[column]).to_numpy(dtype=float)
        pred_cols.append(pred[order])
        true_cols.append(truth)
    if len(target_columns) == 1:
        return true_cols[0], pred_cols[0]
    return np.column_stack(true_cols), np.column_stack(pred_cols)
