"""Read and check submission files before a metric sees them.

Every check raises :class:`~mleaudit.grading.errors.InvalidSubmission` with a message that names the
column, the row and the id at fault, so an agent (or a reviewer) can fix the file. Rows are
counted from 1 over data rows, header excluded, in the order of the submission file. Ids are
compared as the exact text in the CSV (``"0001_01"`` and ``"1"`` stay text), as Kaggle
matches submission rows to the answer key; a row may be identified by several id columns
together (``tripId`` and ``UnixTimeMillis``), shown as a tuple.

Messages never contain answer values: the validation endpoint that agents may call echoes
them, and the held-out answers must not leak through it. Ids and column names are public
(they are in the public test file and sample submission), so they may appear.

The checks are vectorised (pandas hash indexes, numpy masks) so a million-row submission is
validated in a fraction of the time pandas needs to read it: a number column whose minimum and
maximum pass every value check is valid as a whole (the cell-by-cell checks run only to name
the first bad row), and array metrics get their aligned arrays from :func:`check_arrays`
without an aligned frame being built.
"""

from __future__ import annotations

import logging
import math
import os
import re
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

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
from mleaudit.grading.errors import ConfigError, InvalidSubmission, UndefinedScore
from mleaudit.grading.metrics import SCORING_PARAMS, Metric, TargetKind
from mleaudit.grading.metrics.arrowtext import arrow_text, text_permutation

__all__ = [
    "read_csv",
    "read_submission",
    "read_answers",
    "ScoringOptions",
    "scoring_options",
    "check_columns",
    "COLUMN_ORDERS",
    "check_ids",
    "check_ids_in_order",
    "ids_by_number",
    "check_no_missing",
    "check_label_kind",
    "check_numeric",
    "check_probabilities",
    "check_value_range",
    "check_row_sums",
    "check_frames",
    "AlignedArrays",
    "check_arrays",
    "answer_arrays",
    "check_submission",
]

logger = logging.getLogger(__name__)

_PANDAS_VERSION = tuple(int(p) for p in pd.__version__.split(".")[:2] if p.isdigit())
# Joins the parts of a composite id into one hashable key; a control character no CSV id holds.
_KEY_SEPARATOR = "\x1f"
#: Rows per block of the row-sum check (32,768 floats: 256 KiB, within a core's L2 cache).
_ROW_BLOCK = 1 << 15


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


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _as_tuple(columns: str | Sequence[str] | None) -> tuple[str, ...]:
    if columns is None:
        return ()
    if isinstance(columns, str):
        return (columns,)
    return tuple(columns)


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


def _quote_list(names: Sequence[str]) -> str:
    return ", ".join(repr(str(n)) for n in names)


def _plural(word: str, n: int) -> str:
    return word if n == 1 else word + "s"


def _id_keys(frame: pd.DataFrame, id_columns: Sequence[str]) -> pd.Series:
    """One text key per row: the id, or the id columns joined.

    A single id is missing when its cell is empty. A composite id is missing only when all its
    parts are: an empty part (a comment without a date) is the empty text.
    """
    first = frame[id_columns[0]]
    if len(id_columns) == 1:
        if not (pd.api.types.is_string_dtype(first.dtype) and not pd.api.types.is_object_dtype(first.dtype)):
            first = first.astype(str).where(first.notna())
        return first.reset_index(drop=True)
    parts = [frame[c] for c in id_columns]
    texts = [part.astype(str).where(part.notna(), "") for part in parts]
    keys = texts[0].str.cat(texts[1:], sep=_KEY_SEPARATOR)
    all_missing = np.logical_and.reduce([part.isna().to_numpy() for part in parts])
    return keys.where(~all_missing).reset_index(drop=True)


#: Characters of an id quoted in a message; a longer id (a whole comment used as the id) is cut.
_SHOWN_ID_CHARS = 80


def _quote_id(text: str) -> str:
    """An id as messages quote it: ``repr``, cut after :data:`_SHOWN_ID_CHARS` characters."""
    if len(text) <= _SHOWN_ID_CHARS:
        return repr(text)
    return f"{text[:_SHOWN_ID_CHARS]!r}... ({len(text)} characters)"


def _show_key(key: str, n_parts: int) -> str:
    if n_parts == 1:
        return _quote_id(str(key))
    return "(" + ", ".join(_quote_id(part) for part in str(key).split(_KEY_SEPARATOR)) + ")"


@dataclass(frozen=True, slots=True, kw_only=True)
class ScoringOptions:
    """How the scoring path matches and filters rows before a metric runs.

    Built by :func:`scoring_options` from a metric, the competition's columns and the
    ``metric.params`` of its config (see :data:`mleaudit.grading.metrics.SCORING_PARAMS`).

    Attributes
    ----------
    id_columns : tuple of str
        Columns that together identify a row.
    target_columns : tuple of str
        Predicted columns, as named in the submission.
    answer_columns : mapping
        ``{target column: answers column}`` for targets the answers name differently.
    unscored_columns : tuple of str
        Columns the submission must have that are not scored.
    extra_columns : str
        ``"error"`` or ``"ignore"`` for columns beyond the id, target and unscored ones.
    column_order : str
        ``"any"``, ``"id_first"`` (the id columns lead, in their order) or ``"as_listed"`` (the
        header is exactly the id, target and unscored columns, in that order).
    extra_ids : str
        ``"error"`` or ``"ignore"`` for submission ids that are not test ids.
    id_match : str
        ``"exact"`` (ids compared as text) or ``"number"`` (ids of two number columns compared by
        value, see :func:`ids_by_number`).
    missing_values : str or None
        ``None`` (the metric decides), ``"error"`` (missing cells are rejected even where the
        metric allows empty text) ``"nan_text"`` (missing label and text cells are the text
        ``"nan"`` in both files), ``"empty_text"`` (missing label cells are empty text, scored
        wrong) or ``"error_if_all"`` (a column with every cell missing is rejected).
    repeated_ids : str
        ``"error"``, or ``"in_order"`` where a test id may stand on several rows, paired by
        occurrence (see :func:`check_ids_in_order`).
    row_mask : tuple of (str, object), optional
        Only answer rows whose column equals the value are scored (differs from it, where
        ``row_mask_equals`` is false).
    row_mask_equals : bool
        ``row_mask`` keeps the rows equal to its value (``equals:``) or those that differ
        (``not_equals:``).
    value_range : tuple of (float, float), optional
        Closed range numeric predictions must lie in.
    row_sum_tolerance : float, optional
        Several probability columns must sum to 1 within this.
    column_aliases : mapping of str to str
        Target column -> another name the submission may give it (where the target column
        itself is absent; a file with both is rejected).
    """

    id_columns: tuple[str, ...]
    target_columns: tuple[str, ...]
    answer_columns: Mapping[str, str] = field(default_factory=dict)
    unscored_columns: tuple[str, ...] = ()
    extra_columns: str = "error"
    column_order: str = "any"
    extra_ids: str = "error"
    id_match: str = "exact"
    missing_values: str | None = None
    repeated_ids: str = "error"
    row_mask: tuple[str, Any] | None = None
    row_mask_equals: bool = True
    value_range: tuple[float, float] | None = None
    row_sum_tolerance: float | None = None
    column_aliases: Mapping[str, str] = field(default_factory=dict)

    @property
    def answer_target_columns(self) -> tuple[str, ...]:
        """The targets as the answer file names them."""
        return tuple(self.answer_columns.get(c, c) for c in self.target_columns)


#: What ``str()`` makes of a missing cell pandas read (``float("nan")``): the label such a cell
#: takes under ``missing_values: nan_text``.
NAN_TEXT = "nan"
#: Values of the ``missing_values`` metric parameter (see ``mleaudit.grading.metrics.base``).
MISSING_VALUE_MODES = (None, "error", "nan_text", "empty_text", "error_if_all")

#: Values of the ``column_order`` scoring parameter.
COLUMN_ORDERS = ("any", "id_first", "as_listed")


def _string_list(value: Any, name: str, where: str) -> tuple[str, ...]:
    if isinstance(value, str) or not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{where}: metric parameter {name!r} must be a list of column names")
    return tuple(value)


def scoring_options(
    metric: Metric,
    *,
    id_column: str | Sequence[str],
    target_columns: Sequence[str],
    params: Mapping[str, Any] | None = None,
) -> tuple[ScoringOptions, dict[str, Any]]:
    """Split a metric's parameters into scoring options and the function's own parameters.

    Parameters
    ----------
    metric : Metric
        The registry entry; its ``defaults`` apply unless ``params`` overrides them.
    id_column : str or sequence of str
        The competition's id column(s); the ``id_columns`` parameter replaces them.
    target_columns : sequence of str
        The competition's predicted columns.
    params : mapping, optional
        ``metric.params`` from the competition config.

    Returns
    -------
    options : ScoringOptions
    own_params : dict
        What remains, passed to the scoring function.

    Raises
    ------
    ConfigError
        If a scoring parameter has the wrong shape or a parameter is unknown.
    """
    where = f"metric {metric.name!r}"
    merged = {**metric.defaults, **(params or {})}
    unknown = sorted(map(str, set(merged) - set(metric.param_names)))
    if unknown:
        raise ConfigError(f"{where}: unknown parameter(s) {_quote_list(unknown)} (it takes: {', '.join(metric.param_names)})")
    scoring = {k: merged.pop(k) for k in SCORING_PARAMS if k in merged}
    id_columns = _as_tuple(id_column)
    if "id_columns" in scoring:
        id_columns = _string_list(scoring["id_columns"], "id_columns", where)
        if not id_columns:
            raise ConfigError(f"{where}: metric parameter 'id_columns' must name at least one column")
    answer_columns = scoring.get("answer_columns", {})
    if not isinstance(answer_columns, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in answer_columns.items()
    ):
        raise ConfigError(f"{where}: metric parameter 'answer_columns' must map target columns to answer columns")
    extra_columns = scoring.get("extra_columns", "error")
    if extra_columns not in ("error", "ignore"):
        raise ConfigError(f"{where}: metric parameter 'extra_columns' must be 'error' or 'ignore', not {extra_columns!r}")
    column_order = scoring.get("column_order", "any")
    if column_order not in COLUMN_ORDERS:
        raise ConfigError(
            f"{where}: metric parameter 'column_order' must be one of {_quote_list(COLUMN_ORDERS)}, not {column_order!r}"
        )
    if column_order == "as_listed" and extra_columns == "ignore":
        raise ConfigError(f"{where}: metric parameter 'column_order: as_listed' admits no extra columns to ignore")
    extra_ids = scoring.get("extra_ids", "error")
    if extra_ids not in ("error", "ignore"):
        raise ConfigError(f"{where}: metric parameter 'extra_ids' must be 'error' or 'ignore', not {extra_ids!r}")
    id_match = scoring.get("id_match", "exact")
    if id_match not in ("exact", "number"):
        raise ConfigError(f"{where}: metric parameter 'id_match' must be 'exact' or 'number', not {id_match!r}")
    missing_values = scoring.get("missing_values")
    if missing_values not in MISSING_VALUE_MODES:
        modes = ", ".join(repr(m) for m in MISSING_VALUE_MODES if m is not None)
        raise ConfigError(f"{where}: metric parameter 'missing_values' must be one of {modes}, not {missing_values!r}")
    if missing_values in ("nan_text", "empty_text") and metric.target_kind not in (TargetKind.LABEL, TargetKind.TEXT):
        raise ConfigError(
            f"{where}: metric parameter 'missing_values: {missing_values}' applies to label and text targets only"
        )
    if missing_values == "error_if_all" and not (metric.target_kind is TargetKind.TEXT and metric.allow_missing):
        raise ConfigError(
            f"{where}: metric parameter 'missing_values: error_if_all' applies to text targets that may be empty only"
        )
    repeated_ids = scoring.get("repeated_ids", "error")
    if repeated_ids not in ("error", "in_order"):
        raise ConfigError(f"{where}: metric parameter 'repeated_ids' must be 'error' or 'in_order', not {repeated_ids!r}")
    row_mask = None
    row_mask_equals = True
    if "row_mask" in scoring:
        mask = scoring["row_mask"]
        if (
            not isinstance(mask, Mapping)
            or set(mask) not in ({"column", "equals"}, {"column", "not_equals"})
            or not isinstance(mask["column"], str)
        ):
            raise ConfigError(
                f"{where}: metric parameter 'row_mask' must be {{column: <answers column>, equals: <value>}} "
                "or {column: <answers column>, not_equals: <value>}"
            )
        row_mask_equals = "equals" in mask
        row_mask = (mask["column"], mask["equals"] if row_mask_equals else mask["not_equals"])
    value_range = None
    if "value_range" in scoring:
        bounds = scoring["value_range"]
        if (
            not isinstance(bounds, (list, tuple))
            or len(bounds) != 2
            or not all(isinstance(b, (int, float)) and not isinstance(b, bool) for b in bounds)
            or bounds[0] > bounds[1]
        ):
            raise ConfigError(f"{where}: metric parameter 'value_range' must be [low, high] with low <= high")
        value_range = (float(bounds[0]), float(bounds[1]))
    column_aliases = scoring.get("column_aliases", {})
    if (
        not isinstance(column_aliases, Mapping)
        or not all(isinstance(k, str) and isinstance(v, str) for k, v in column_aliases.items())
        or not set(column_aliases) <= set(target_columns)
    ):
        raise ConfigError(f"{where}: metric parameter 'column_aliases' must map target columns to other column names")
    tolerance = scoring.get("row_sum_tolerance")
    if tolerance is not None and (not isinstance(tolerance, (int, float)) or isinstance(tolerance, bool) or tolerance < 0):
        raise ConfigError(f"{where}: metric parameter 'row_sum_tolerance' must be a number >= 0")
    options = ScoringOptions(
        id_columns=id_columns,
        target_columns=tuple(target_columns),
        answer_columns=dict(answer_columns),
        unscored_columns=_string_list(scoring.get("unscored_columns", []), "unscored_columns", where),
        extra_columns=extra_columns,
        column_order=column_order,
        extra_ids=extra_ids,
        id_match=id_match,
        missing_values=missing_values,
        repeated_ids=repeated_ids,
        row_mask=row_mask,
        row_mask_equals=row_mask_equals,
        value_range=value_range,
        row_sum_tolerance=None if tolerance is None else float(tolerance),
        column_aliases=dict(column_aliases),
    )
    return options, merged


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


def _key_values(ids: pd.Series | pd.DataFrame) -> tuple[np.ndarray, int]:
    """Id keys as an object array (missing ids as NaN) and the number of id columns."""
    if isinstance(ids, pd.DataFrame):
        return _id_keys(ids, list(ids.columns)).to_numpy(dtype=object), ids.shape[1]
    if pd.api.types.is_string_dtype(ids.dtype) and not pd.api.types.is_object_dtype(ids.dtype):
        return ids.to_numpy(dtype=object), 1
    return ids.astype(str).where(ids.notna()).to_numpy(dtype=object), 1


def _encode(answer_keys: np.ndarray, submission_keys: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Integer codes of both id lists from one hash pass (missing ids get -1), and the distinct keys."""
    codes, uniques = pd.factorize(np.concatenate([answer_keys, submission_keys]))
    return codes[: len(answer_keys)], codes[len(answer_keys) :], np.asarray(uniques, dtype=object)


def _arrow_order(submission_ids: pd.Series | pd.DataFrame, answer_ids: pd.Series | pd.DataFrame) -> np.ndarray | None:
    """The alignment of a valid submission, found on Arrow-backed id columns; None otherwise.

    Only the valid case is decided here: the same number of rows, no empty id, and every
    submission id matching exactly one distinct test id. Rows already in test order take one
    vectorised comparison; other orders one join on the exact text
    (:func:`mleaudit.grading.metrics.arrowtext.text_permutation`), with no Python string per row. Anything
    else (a repeat, an unknown or missing id, empty answer ids, composite or non-text ids)
    returns ``None`` and the general path finds and names the problem.
    """
    if not isinstance(submission_ids, pd.Series) or not isinstance(answer_ids, pd.Series):
        return None
    sub, ans = arrow_text(submission_ids), arrow_text(answer_ids)
    if sub is None or ans is None or len(sub) != len(ans) or not len(sub) or sub.null_count or ans.null_count:
        return None
    import pyarrow.compute as pc  # arrow_text returned an array, so pyarrow is installed

    # A shuffled file shows at once in its first rows; the whole columns are compared only when
    # those agree.
    head = min(len(sub), 64)
    if pc.all(pc.equal(sub.slice(0, head), ans.slice(0, head))).as_py():
        if pc.all(pc.equal(sub, ans)).as_py():
            return np.arange(len(sub), dtype=np.intp)
    return text_permutation(sub, ans)


def _outside(n_unknown: int, n_rows: int) -> str:
    """``"3 of its 10 rows have ids outside"`` with the verb agreeing."""
    return f"{n_unknown} of its {n_rows} {_plural('row', n_rows)} {'has an id' if n_unknown == 1 else 'have ids'} outside"


def check_ids(
    submission_ids: pd.Series | pd.DataFrame,
    answer_ids: pd.Series | pd.DataFrame,
    *,
    extra_ids: str = "error",
) -> np.ndarray:
    """Check the submission has each test id exactly once.

    Parameters
    ----------
    submission_ids, answer_ids : pandas.Series or pandas.DataFrame
        The id column (or id columns, for composite ids), in file order. Repeated answer ids
        (answer files with one row per box) are matched once, in order of first appearance.
    extra_ids : {"error", "ignore"}
        Whether submission rows with ids that are not test ids are an error or dropped.

    Returns
    -------
    numpy.ndarray of int
        For each distinct answer id, the position of its row in the submission, so
        ``submission.iloc[order]`` is aligned with the answers.

    Raises
    ------
    InvalidSubmission
        For an empty id, a repeated id (both rows named), an id that is not a test id, or a
        row count that differs from the test set (the first missing id named).
    """
    order = _arrow_order(submission_ids, answer_ids)
    if order is not None:
        return order
    sub, n_parts = _key_values(submission_ids)
    ans, _ = _key_values(answer_ids)
    n_sub = len(sub)
    empty = np.flatnonzero(pd.isna(sub))
    if empty.size:
        raise InvalidSubmission(f"Submission has an empty id at row {int(empty[0]) + 1}.", reason="empty-id",
                                column=_id_name(submission_ids), row=int(empty[0]) + 1)
    if n_sub == len(ans) and n_sub and (sub == ans).all():
        # The usual case: rows in the order of the test set. The submission repeats an id only
        # if the answers do, and those are checked when the answers are read.
        return np.arange(n_sub, dtype=np.intp)
    ans_codes, sub_codes, uniques = _encode(ans, sub)
    n_codes = len(uniques)
    first_row = np.full(n_codes, n_sub, dtype=np.int64)
    np.minimum.at(first_row, sub_codes, np.arange(n_sub))
    repeated = np.flatnonzero(first_row[sub_codes] != np.arange(n_sub))
    if repeated.size:
        row = int(repeated[0])
        first = int(first_row[sub_codes[row]])
        raise InvalidSubmission(f"Submission repeats id {_show_key(sub[row], n_parts)} at rows {first + 1} and {row + 1}.",
                                reason="duplicate-id", column=_id_name(submission_ids), row=row + 1)
    # Distinct answer ids in order of first appearance.
    _, first_answer = np.unique(ans_codes, return_index=True)
    ans_distinct = ans_codes[np.sort(first_answer)]
    known = np.zeros(n_codes, dtype=bool)
    known[ans_distinct] = True
    unknown = ~known[sub_codes]
    if unknown.any() and extra_ids != "ignore":
        # The totals tell a reviewer at once whether a few ids are off or the whole file was
        # made for another test set (e.g. Kaggle's own test.csv instead of the prepared split).
        row = int(np.flatnonzero(unknown)[0])
        raise InvalidSubmission(
            f"Submission has id {_show_key(sub[row], n_parts)} at row {row + 1}, which is not a test id "
            f"({_outside(int(unknown.sum()), n_sub)} the {len(ans_distinct)} test ids).",
            reason="unknown-id", column=_id_name(submission_ids), row=row + 1,
        )
    order = np.where(first_row[ans_distinct] < n_sub, first_row[ans_distinct], -1)
    missing = np.flatnonzero(order < 0)
    if missing.size:
        first_missing = int(missing[0])
        missing_id = _show_key(uniques[ans_distinct[first_missing]], n_parts)
        if extra_ids == "ignore":
            raise InvalidSubmission(
                f"Submission has no row for id {missing_id} (row {first_missing + 1} "
                f"of the test set); {missing.size} of the {len(ans_distinct)} test ids are missing.",
                reason="missing-ids", column=_id_name(submission_ids),
            )
        # No repeats and no unknown ids, so the submission is short: name what it lacks.
        raise InvalidSubmission(
            f"Submission has {n_sub} {_plural('row', n_sub)}; expected {len(ans_distinct)} (one per test id). "
            f"First missing id: {missing_id} (row {first_missing + 1} of the test set).",
            reason="row-count", column=_id_name(submission_ids),
        )
    return order.astype(np.intp)


def ids_by_number(submission_ids: pd.Series | pd.DataFrame, answer_ids: pd.Series | pd.DataFrame) -> pd.Series | None:
    """The submission's ids spelled as the test ids with the same number, where both are numbers.

    MLE-bench reads both files with plain :func:`pandas.read_csv`, so an id column of numbers
    becomes int64 (float64 once a cell reads ``"2.0"``) and its graders compare the values:
    ``"00002"``, ``"2"`` and ``"2.0"`` are one id there. This maps each submission id to the
    test id whose number equals its own, compared as NumPy compares the two columns (as floats
    once either column is), so the usual text checks then apply.

    Parameters
    ----------
    submission_ids, answer_ids : pandas.Series
        One id column each, as read (text).

    Returns
    -------
    pandas.Series or None
        The submission's ids, each replaced by the test id of equal number where there is one
        (others, numbers or not, kept as written, for the checks to name); ``None`` for
        composite ids, when a test id is not a number, or when two test ids are one number.
    """
    if not isinstance(submission_ids, pd.Series) or not isinstance(answer_ids, pd.Series):
        return None
    # Each test id once (answer files with one row per box repeat them).
    answer_ids = answer_ids.drop_duplicates()
    ans = pd.to_numeric(answer_ids.astype(object), errors="coerce")
    if (
        ans.isna().any()
        or ans.dtype == object
        or not np.isfinite(ans.to_numpy(dtype=float)).all()
        or _beyond_64_bits(answer_ids).any()
    ):
        return None
    # A submission id that is no number (or an infinite one, or an integer pandas would keep as
    # text) matches nothing and stays as written.
    beyond = _beyond_64_bits(submission_ids)
    sub = pd.to_numeric(submission_ids.astype(object).where(~beyond), errors="coerce")
    numbers = sub.notna().to_numpy() & np.isfinite(sub.to_numpy(dtype=float, na_value=np.nan))
    if sub.dtype.kind == "f" or ans.dtype.kind == "f":
        sub, ans = sub.astype(np.float64), ans.astype(np.float64)
    spelling = pd.Series(answer_ids.to_numpy(dtype=object), index=ans.to_numpy())
    if spelling.index.has_duplicates:
        return None
    found = spelling.reindex(sub.to_numpy()).to_numpy(dtype=object)
    spelled = np.where(numbers & pd.notna(found), found, submission_ids.to_numpy(dtype=object))
    return pd.Series(spelled, index=submission_ids.index, name=submission_ids.name).astype(answer_ids.dtype)


def _beyond_64_bits(ids: pd.Series) -> np.ndarray:
    """Which cells are integers outside int64 and uint64, which pandas reads as text, not numbers."""
    texts = ids.astype(object).where(ids.notna(), "").astype(str).str.strip()
    long = texts.str.fullmatch(r"[+-]?\d{19,}").to_numpy(dtype=bool)
    beyond = np.zeros(len(texts), dtype=bool)
    for row in np.flatnonzero(long):
        value = int(texts.iloc[row])
        beyond[row] = not (-(2**63) <= value < 2**64)
    return beyond


def check_ids_in_order(
    submission_ids: pd.Series | pd.DataFrame,
    answer_ids: pd.Series | pd.DataFrame,
    *,
    extra_ids: str = "error",
) -> np.ndarray:
    """Check the submission has each test id on as many rows as the test set; pair them in order.

    For test sets where an id may stand on several rows (Detecting Insults: a comment posted
    more than once, its rows sharing one label): the k-th submission row with an id is paired
    with the k-th test row with that id, both counted in file order. MLE-bench pairs such rows
    by sorting both files by the id, which may pair them in any order; where the rows of an id
    share one label every pairing gives the same score.

    Parameters
    ----------
    submission_ids, answer_ids : pandas.Series or pandas.DataFrame
        The id column (or id columns), in file order.
    extra_ids : {"error", "ignore"}
        Whether submission rows with ids that are not test ids are an error or dropped.

    Returns
    -------
    numpy.ndarray of int
        For each test row, the position of its submission row, so ``submission.iloc[order]``
        is aligned with the answers row for row.

    Raises
    ------
    InvalidSubmission
        For an empty id, an id that is not a test id, or an id on a different number of rows
        than in the test set (the first such test id named, with both counts).
    """
    sub, n_parts = _key_values(submission_ids)
    ans, _ = _key_values(answer_ids)
    empty = np.flatnonzero(pd.isna(sub))
    if empty.size:
        raise InvalidSubmission(f"Submission has an empty id at row {int(empty[0]) + 1}.", reason="empty-id",
                                column=_id_name(submission_ids), row=int(empty[0]) + 1)
    if len(sub) == len(ans) and len(sub) and (sub == ans).all():
        return np.arange(len(sub), dtype=np.intp)
    codes, uniques = pd.factorize(np.concatenate([ans, sub]))
    ans_codes, sub_codes = codes[: len(ans)], codes[len(ans):]
    ans_counts = np.bincount(ans_codes, minlength=len(uniques))
    unknown = ans_counts[sub_codes] == 0
    rows = np.arange(len(sub))
    if unknown.any():
        if extra_ids != "ignore":
            row = int(np.flatnonzero(unknown)[0])
            raise InvalidSubmission(
                f"Submission has id {_show_key(sub[row], n_parts)} at row {row + 1}, which is not a test id "
                f"({_outside(int(unknown.sum()), len(sub))} the test ids).",
                reason="unknown-id", column=_id_name(submission_ids), row=row + 1,
            )
        rows, sub_codes = rows[~unknown], sub_codes[~unknown]
    if not sub_codes.size:
        raise InvalidSubmission(f"Submission has no rows with test ids; expected {len(ans)} (one per test row).",
                                reason="missing-ids", column=_id_name(submission_ids))
    sub_counts = np.bincount(sub_codes, minlength=len(uniques))
    differ = np.flatnonzero(sub_counts[ans_codes] != ans_counts[ans_codes])
    if differ.size:
        test_row = int(differ[0])
        code = ans_codes[test_row]
        have, want = int(sub_counts[code]), int(ans_counts[code])
        raise InvalidSubmission(
            f"Submission has id {_show_key(uniques[code], n_parts)} on {have} {_plural('row', have)}, the test set "
            f"on {want} (its first test row is row {test_row + 1}); each id must stand on as many rows as in the "
            f"test set ({len(ans)} rows in all; the submission has {len(sub)}), paired in file order.",
            reason="row-count", column=_id_name(submission_ids),
        )
    # Equal counts per id: both sides sorted by id (stably, so in file order within an id) line up.
    order = np.empty(len(ans), dtype=np.intp)
    order[np.argsort(ans_codes, kind="stable")] = rows[np.argsort(sub_codes, kind="stable")]
    return order


def _id_name(ids: pd.Series | pd.DataFrame) -> str | None:
    """The (first) id column's name, for an error's ``column``."""
    if isinstance(ids, pd.DataFrame):
        return str(ids.columns[0]) if len(ids.columns) else None
    return None if ids.name is None else str(ids.name)


def _describe_row(row: int, ids: pd.Series | pd.DataFrame) -> str:
    if isinstance(ids, pd.DataFrame):
        parts = [_quote_id(str(ids[c].iloc[row])) for c in ids.columns]
        shown = parts[0] if len(parts) == 1 else "(" + ", ".join(parts) + ")"
    else:
        shown = _quote_id(str(ids.iloc[row]))
    return f"row {row + 1} (id {shown})"


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
