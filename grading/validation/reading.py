"""Reading submission and answer CSVs: verbatim text columns, byte limits, parser errors placed."""

from __future__ import annotations

import os
import re
import warnings
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import pandas as pd

from mleaudit.grading.csvscan import (
    DEFAULT_CSV_LIMITS,
    TEXT_CSV_LIMITS,
    CsvLimits,
    check_csv_limits,
    invalid_utf8_line,
    record_line,
)
from mleaudit.grading.errors import ConfigError, InvalidSubmission
from mleaudit.grading.validation.keys import _as_tuple, _id_keys
from mleaudit.grading.validation.messages import _first_line, _quote_list, _show_key


_PANDAS_VERSION = tuple(int(p) for p in pd.__version__.split(".")[:2] if p.isdigit())


def read_csv(path: str | os.PathLike[str], **kwargs) -> pd.DataFrame:
    """Read a CSV the way MLE-bench does (round-trip float parsing).

    pandas 3.1 parses floats exactly by default and deprecates ``float_precision``; older
    pandas needs ``float_precision="round_trip"`` so a written float reads back unchanged.
    """
    if _PANDAS_VERSION < (3, 1):
        kwargs.setdefault("float_precision", "round_trip")
    return pd.read_csv(path, **kwargs)


def _arrow_str_dtype() -> Any:
    """pandas' ``str`` dtype when it is Arrow-backed (pandas >= 3 with pyarrow), else ``None``."""
    dtype = pd.api.types.pandas_dtype("str")
    if isinstance(dtype, pd.StringDtype) and str(dtype.storage).startswith("pyarrow"):
        return dtype
    return None


def _read_with_text(path: str | os.PathLike[str], text_columns: Sequence[str]) -> pd.DataFrame:
    """Read a CSV with ``text_columns`` as verbatim text (``str``), other columns inferred.

    Asking the C parser for ``dtype=str`` builds a Python string per cell and costs several
    times the read itself on a million rows; where ``str`` is Arrow-backed the columns are read
    as Arrow strings and relabelled ``str`` without a copy. Where pandas' own inference already
    reads every text column as ``str`` (ids with a letter in them, label lists) the file is read
    with no dtype at all, which keeps the parser's zero-copy string path (an explicit Arrow
    dtype costs a copy of every string column's chunks, a tenth of the read on a wide file).
    Same cells, same missing-value rules, same parser errors.
    """
    text = list(dict.fromkeys(text_columns))
    if not text:
        return read_csv(path)
    target = _arrow_str_dtype()
    if target is None:
        return read_csv(path, dtype={c: str for c in text})
    inferred = _read_inferring_text(path, text, target)
    if inferred is not None:
        return inferred
    import pyarrow as pa  # pandas' str is Arrow-backed, so pyarrow is installed

    frame = read_csv(path, dtype={c: pd.ArrowDtype(pa.large_string()) for c in text})
    present = [c for c in text if c in frame.columns]
    return frame.astype({c: target for c in present}) if present else frame


#: Rows read first to see whether pandas' inference takes the text columns as text.
_SAMPLE_ROWS = 1000


def _read_inferring_text(path: str | os.PathLike[str], text: Sequence[str], target: Any) -> pd.DataFrame | None:
    """The file as pandas infers it, when that reads every text column as ``str``; else ``None``.

    Inference keeps a column's cells verbatim exactly when it reads the column as ``str``
    (anything it converts, numbers or booleans, gets another dtype), so such a frame equals the
    one read with the text dtype asked for. A sample of the first rows tells first whether the
    whole file is worth reading this way: a column of numbers there is read as numbers
    throughout (or as mixed objects), and goes to the caller's explicit text read. Any failure
    also goes there, so a broken file raises the parser's usual error.
    """
    try:
        sample = read_csv(path, nrows=_SAMPLE_ROWS)
    except Exception:  # noqa: BLE001 - the caller's read raises the file's own error
        return None
    if not all(sample[c].dtype == target for c in text if c in sample.columns):
        return None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            frame = read_csv(path)
        except Exception:  # noqa: BLE001 - as above
            return None
    if not all(frame[c].dtype == target for c in text if c in frame.columns):
        return None
    for warning in caught:  # the parser's own warnings, raised once the frame is kept
        warnings.warn_explicit(warning.message, warning.category, warning.filename, warning.lineno)
    return frame


def read_submission(
    path: str | os.PathLike[str],
    *,
    id_column: str | Sequence[str] | None = None,
    text_columns: Sequence[str] = (),
    limits: CsvLimits | None = None,
) -> pd.DataFrame:
    """Read a submission CSV.

    The file's bytes are first checked against ``limits`` (:func:`mleaudit.grading.csvscan.check_csv_limits`):
    a file built to make the parser slow or to fill memory (hundreds of thousands of columns,
    a field of hundreds of megabytes) is rejected before pandas reads it.

    Parameters
    ----------
    path : path-like
        The submission file.
    id_column : str or sequence of str, optional
        Read these columns as text so ids keep their exact spelling (leading zeros, ``"1.0"``).
    text_columns : sequence of str
        Other columns to read verbatim as text (label lists, masks, sentences).
    limits : CsvLimits, optional
        Caps on columns, field and row bytes; by default
        :data:`~mleaudit.grading.csvscan.TEXT_CSV_LIMITS` when there are ``text_columns``, else
        :data:`~mleaudit.grading.csvscan.DEFAULT_CSV_LIMITS`.

    Returns
    -------
    pandas.DataFrame
        One row per data row of the file; id and text columns as text, other columns as pandas
        infers them (the same inference MLE-bench's grader sees).

    Raises
    ------
    InvalidSubmission
        If the file is empty, has a row over a cap (the message names its line and the cap)
        or is not a readable CSV (the message quotes the parser).
    """
    path = Path(path)
    try:
        with path.open("rb") as handle:
            head = handle.read(65536)
    except OSError as exc:
        raise InvalidSubmission(f"Submission file '{path}' cannot be read: {exc.strerror or exc}", reason="unreadable") from None
    if len(head) < 65536 and not head.strip():
        raise InvalidSubmission(f"Submission file '{path}' is empty.", reason="empty")
    if limits is None:
        limits = TEXT_CSV_LIMITS if text_columns else DEFAULT_CSV_LIMITS
    check_csv_limits(path, limits)
    text = [*_as_tuple(id_column), *text_columns]
    try:
        frame = _read_with_text(path, text)
    except pd.errors.EmptyDataError:
        raise InvalidSubmission(f"Submission file '{path}' is empty.", reason="empty") from None
    except (pd.errors.ParserError, UnicodeDecodeError, ValueError) as exc:
        line, counts = _syntax_location(path, exc)
        raise InvalidSubmission(f"Submission file '{path}' is not a readable CSV: {_first_line(exc)}",
                                reason="csv-syntax", line=line, counts=counts) from None
    return frame


#: pandas' C tokenizer errors that place a record: ``Expected 2 fields in line 6, saw 3`` (a
#: 1-based record count) and ``EOF inside string starting at row 5`` (0-based).
_FIELDS_ERROR = re.compile(r"Expected (\d{1,9}) fields in line (\d{1,12}), saw (\d{1,9})")
_EOF_ERROR = re.compile(r"EOF inside string starting at row (\d{1,12})")


def _syntax_location(path: Path, exc: BaseException) -> tuple[int | None, dict[str, int]]:
    """Where in the file a parser error is: its line, and the field counts pandas compared.

    Only numbers about the file itself are taken from the error: the record pandas names
    (turned into the file's own line by :func:`mleaudit.grading.csvscan.record_line`), and the two field
    counts; an undecodable byte is found again in the file (:func:`mleaudit.grading.csvscan.invalid_utf8_line`).

    Returns
    -------
    (int or None, dict)
        The line (the header is line 1) and ``fields`` / ``expected_fields`` when known.
    """
    if isinstance(exc, UnicodeDecodeError):
        return invalid_utf8_line(path), {}
    text = str(exc)
    found = _FIELDS_ERROR.search(text)
    if found:
        expected, record, fields = (int(g) for g in found.groups())
        return record_line(path, record), {"fields": fields, "expected_fields": expected}
    found = _EOF_ERROR.search(text)
    if found:
        return record_line(path, int(found.group(1)) + 1), {}
    return None, {}


def read_answers(
    path: str | os.PathLike[str],
    *,
    id_column: str | Sequence[str],
    target_columns: Sequence[str],
    text_columns: Sequence[str] = (),
    unique_ids: bool = True,
) -> pd.DataFrame:
    """Read a competition's private answers file.

    Parameters
    ----------
    path : path-like
        The answers CSV (``<data>/<id>/prepared/private/...``).
    id_column : str or sequence of str
        Read as text, like the submission's.
    target_columns : sequence of str
        Columns that must be present.
    text_columns : sequence of str
        Other columns to read verbatim as text.
    unique_ids : bool
        Whether each id must appear once (false for answer files with one row per box).

    Returns
    -------
    pandas.DataFrame
        With at least ``[*id_columns, *target_columns]``.

    Raises
    ------
    ConfigError
        If the file cannot be read, lacks a column, or has missing or repeated ids: the
        answer key itself is broken, which is not the submission's fault.
    """
    path = Path(path)
    id_columns = _as_tuple(id_column)
    try:
        frame = _read_with_text(path, (*id_columns, *text_columns))
    except (OSError, pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError, ValueError) as exc:
        raise ConfigError(f"answers file {path}: cannot be read: {_first_line(exc)}") from None
    missing = [c for c in [*id_columns, *target_columns] if c not in frame.columns]
    if missing:
        raise ConfigError(f"answers file {path}: missing column(s) {_quote_list(missing)}")
    keys = _id_keys(frame, id_columns)
    if keys.isna().any():
        raise ConfigError(f"answers file {path}: empty id at row {int(np.flatnonzero(keys.isna().to_numpy())[0]) + 1}")
    if unique_ids:
        repeated = keys.duplicated()
        if repeated.any():
            raise ConfigError(f"answers file {path}: repeated id {_show_key(keys[repeated].iloc[0], len(id_columns))}")
    return frame
