"""What the validation endpoint may say to the agent: replies rendered from our own templates only.

Grading's messages are written for the host (``mleaudit grade``): they quote cells and ids and,
for a few metric errors, the scoring library's text, which can list the answers' labels. The
endpoint never forwards them. A reply is rendered from a template keyed by the reason code of
:data:`grading.errors.REASONS` (or one of the endpoint's own codes, :data:`ENDPOINT_REASONS`),
filled with at most:

- a column name, shown only if it is one of the submission's own header cells (read here, with
  the :mod:`csv` module, within :data:`HEADER_SCAN_BYTES`) or one of the competition's public
  expected columns (id and target columns);
- a row number, shown only if it is an ``int`` within the submission's own row count;
- numbers the host configures (the size limit, the time bound).

Never an exception's text, never a value from the answers, never an id or a cell value. A reason
without a template gets the generic one.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping

__all__ = [
    "ENDPOINT_REASONS",
    "TEMPLATES",
    "SubmissionShape",
    "ValidationOutcome",
    "as_outcome",
    "read_shape",
    "render_reply",
    "shown_fields",
]

#: Reasons the endpoint itself gives (not grading's): the validation ran out of time, the
#: validator failed or crashed, another validation is running, the body is over the size limit,
#: the request was malformed.
ENDPOINT_REASONS = frozenset({"timeout", "validator-failed", "busy", "body-too-large", "bad-request"})

#: Reply templates by reason. ``{where}`` becomes `` in column 'x'``, `` at row N`` or both (or
#: nothing); ``{col}`` `` 'x'`` (or nothing); ``{expected}`` the public expected columns;
#: ``{max_bytes}`` and ``{time_limit_s}`` the host's configured limits. Nothing else is ever
#: substituted.
TEMPLATES: Mapping[str, str] = {
    "valid": "Submission is valid.",
    "unreadable": "Submission is invalid: the file could not be read.",
    "empty": "Submission is invalid: the file is empty.",
    "csv-syntax": "Submission is invalid: the file is not a readable CSV (check quoting, delimiters and UTF-8 encoding).",
    "too-large": "Submission is invalid: a row or cell is larger than a submission may hold.",
    "no-columns": "Submission is invalid: the header has no columns.",
    "missing-column": "Submission is invalid: required column{col} is missing.{expected}",
    "extra-column": "Submission is invalid: unexpected column{col}.{expected}",
    "duplicate-column": "Submission is invalid: column{col} appears more than once.",
    "column-order": "Submission is invalid: column{col} is out of place.{expected}",
    "empty-id": "Submission is invalid: empty id{where}.",
    "duplicate-id": "Submission is invalid: repeated id{where}.",
    "unknown-id": "Submission is invalid: an id that is not a test id{where}.",
    "missing-ids": "Submission is invalid: some test ids have no row (one row per test id is expected).",
    "row-count": "Submission is invalid: the number of rows differs from the test set (one row per test id is expected).",
    "bad-value": "Submission is invalid: a value of the wrong type or outside the allowed range{where}.",
    "missing-value": "Submission is invalid: a missing value{where}.",
    "non-finite": "Submission is invalid: a non-finite number{where}.",
    "row-sum": "Submission is invalid: probabilities of a row do not sum to 1{where}.",
    "unknown-label": "Submission is invalid: a label the metric cannot use{where}.",
    "incomparable": "Submission is invalid: predictions{where} are not of the type the answers hold.",
    "undefined-score": "Submission is valid.",
    "non-finite-score": "Submission is invalid: the metric is not finite for these predictions.",
    "grader-failed": "Submission is invalid: the competition's grader could not score it.",
    "invalid": "Submission is invalid.",
    "timeout": "The submission could not be validated within {time_limit_s} seconds; it was not checked.",
    "validator-failed": "The submission could not be validated.",
    "busy": "Another validation is running; try again in a few seconds.",
    "body-too-large": "The request body is over the {max_bytes}-byte limit; the file was not checked.",
    "bad-request": "The request could not be read; post the file as the request body or as the multipart field 'file'.",
}

#: Bytes of the submission read to find its header cells.
HEADER_SCAN_BYTES = 1 << 20
#: Header cells longer than this are never shown.
MAX_SHOWN_COLUMN_CHARS = 100
#: Columns listed in an ``{expected}`` hint at most (a longer list is not shown).
MAX_EXPECTED_SHOWN = 12


@dataclass(frozen=True, slots=True, kw_only=True)
class ValidationOutcome:
    """What a validator found, as the endpoint passes it around (never sent as it stands).

    Attributes
    ----------
    valid : bool
        The verdict.
    reason : str or None
        ``None`` when valid; otherwise a code of :data:`grading.errors.REASONS` or
        :data:`ENDPOINT_REASONS`.
    column : str or None
        The submission column the problem is in.
    row : int or None
        The 1-based data row of the submission file the problem is in.
    detail : str
        Host-side text (grading's full message); logged on the host at debug level only.
    """

    valid: bool
    reason: str | None = None
    column: str | None = None
    row: int | None = None
    detail: str = ""

    def to_dict(self) -> dict[str, Any]:
        """The fields as a picklable, JSON-ready dict."""
        return {"valid": self.valid, "reason": self.reason, "column": self.column, "row": self.row,
                "detail": self.detail}


def as_outcome(result: object) -> ValidationOutcome:
    """Normalise what a validator returned into a :class:`ValidationOutcome`.

    Parameters
    ----------
    result : object
        A :class:`ValidationOutcome`; an object with ``valid``, ``reason``, ``column``, ``row``
        and ``message`` attributes (:class:`grading.grade.SubmissionCheck`); a mapping with those
        keys; a legacy ``(valid, message)`` pair (its message is kept for the host only and the
        reason is the generic ``"invalid"``); or a bare bool.

    Returns
    -------
    ValidationOutcome
        Fields type-checked: a non-str reason becomes ``"invalid"``, a non-str column and a
        non-int row become ``None``.
    """
    if isinstance(result, ValidationOutcome):
        valid, reason, column, row, detail = result.valid, result.reason, result.column, result.row, result.detail
    elif isinstance(result, Mapping):
        valid, reason = result.get("valid"), result.get("reason")
        column, row = result.get("column"), result.get("row")
        detail = result.get("detail", result.get("message", ""))
    elif isinstance(result, tuple) and len(result) == 2:
        valid, reason, column, row, detail = result[0], None, None, None, result[1]
    elif isinstance(result, bool):
        valid, reason, column, row, detail = result, None, None, None, ""
    elif hasattr(result, "valid"):
        valid, reason = getattr(result, "valid"), getattr(result, "reason", None)
        column, row = getattr(result, "column", None), getattr(result, "row", None)
        detail = getattr(result, "message", getattr(result, "detail", ""))
    else:
        raise TypeError(f"a validator returned {type(result).__name__}; expected a ValidationOutcome, "
                        "a SubmissionCheck or a (valid, message) pair")
    valid = valid is True
    if valid:
        reason = None
    elif not isinstance(reason, str):
        reason = "invalid"
    column = column if isinstance(column, str) else None
    row = row if isinstance(row, int) and not isinstance(row, bool) else None
    return ValidationOutcome(valid=valid, reason=reason, column=column, row=row,
                             detail=detail if isinstance(detail, str) else "")


@dataclass(frozen=True, slots=True, kw_only=True)
class SubmissionShape:
    """What the endpoint read of a submission file itself, to decide what a reply may name.

    Attributes
    ----------
    header : tuple of str
        The cells of the first CSV record (empty if none could be read within
        :data:`HEADER_SCAN_BYTES`).
    n_rows : int or None
        Data records after the header (blank lines not counted); ``None`` when the file could
        not be read through with the :mod:`csv` module.
    """

    header: tuple[str, ...] = ()
    n_rows: int | None = None


def read_shape(path: Path, *, max_field_bytes: int = 64 << 20) -> SubmissionShape:
    """Read a submission's header cells and count its data rows with the :mod:`csv` module.

    Parameters
    ----------
    path : pathlib.Path
        The posted file (already capped in size by the endpoint).
    max_field_bytes : int
        Largest CSV field accepted while counting rows; a larger one leaves the count unknown.

    Returns
    -------
    SubmissionShape
        Header cells from the first :data:`HEADER_SCAN_BYTES` bytes, and the number of
        non-blank records after the header (``None`` if the file cannot be read through).
    """
    header: tuple[str, ...] = ()
    try:
        with Path(path).open("rb") as handle:
            head = handle.read(HEADER_SCAN_BYTES)
    except OSError:
        return SubmissionShape()
    text = head.decode("utf-8-sig", errors="replace")
    try:
        first = next(csv.reader(io.StringIO(text, newline="")), [])
        header = tuple(first)
    except csv.Error:
        header = ()
    n_rows: int | None = None
    previous = csv.field_size_limit()
    try:
        csv.field_size_limit(max_field_bytes)
        with Path(path).open("r", encoding="utf-8-sig", errors="replace", newline="") as handle:
            records = sum(1 for record in csv.reader(handle) if record)
        n_rows = max(records - 1, 0)
    except (csv.Error, OSError, ValueError):
        n_rows = None
    finally:
        csv.field_size_limit(previous)
    return SubmissionShape(header=header, n_rows=n_rows)


def _shown_column(column: str | None, shape: SubmissionShape, expected: Iterable[str]) -> str | None:
    if not isinstance(column, str) or not column or len(column) > MAX_SHOWN_COLUMN_CHARS or not column.isprintable():
        return None
    if column in shape.header or column in tuple(expected):
        return column
    return None


def _shown_row(row: int | None, shape: SubmissionShape) -> int | None:
    if not isinstance(row, int) or isinstance(row, bool) or shape.n_rows is None:
        return None
    return row if 1 <= row <= shape.n_rows else None


def shown_fields(
    outcome: ValidationOutcome, *, shape: SubmissionShape | None = None, expected_columns: Iterable[str] = ()
) -> tuple[str | None, int | None]:
    """The column and row a reply for ``outcome`` may name (what :func:`render_reply` shows).

    Parameters
    ----------
    outcome : ValidationOutcome
        The verdict.
    shape : SubmissionShape, optional
        The submission's header cells and row count.
    expected_columns : iterable of str
        The competition's public columns.

    Returns
    -------
    (str or None, int or None)
        The column if it is a header cell of the submission or an expected column (short and
        printable), and the row if it is within the submission's row count.
    """
    shape = shape or SubmissionShape()
    expected = tuple(c for c in expected_columns if isinstance(c, str) and c.isprintable()
                     and len(c) <= MAX_SHOWN_COLUMN_CHARS)
    return _shown_column(outcome.column, shape, expected), _shown_row(outcome.row, shape)


def render_reply(
    outcome: ValidationOutcome,
    *,
    shape: SubmissionShape | None = None,
    expected_columns: Iterable[str] = (),
    max_bytes: int | None = None,
    time_limit_s: float | None = None,
) -> str:
    """Render the agent-facing reply for an outcome from :data:`TEMPLATES`.

    Parameters
    ----------
    outcome : ValidationOutcome
        The verdict; only its ``valid``, ``reason``, ``column`` and ``row`` are read, and the
        last two only as allowed below. ``detail`` is never used.
    shape : SubmissionShape, optional
        The submission's header cells and row count (:func:`read_shape`); without it no column
        outside ``expected_columns`` and no row is shown.
    expected_columns : iterable of str
        The competition's public columns (id and targets), which may always be named.
    max_bytes : int, optional
        The configured body size limit (for ``body-too-large``).
    time_limit_s : float, optional
        The configured time bound (for ``timeout``).

    Returns
    -------
    str
        One line of text built only from the template, an allowed column name, an allowed row
        number and the configured numbers.
    """
    shape = shape or SubmissionShape()
    expected = tuple(c for c in expected_columns if isinstance(c, str) and c.isprintable()
                     and len(c) <= MAX_SHOWN_COLUMN_CHARS)
    reason = "valid" if outcome.valid else (outcome.reason or "invalid")
    template = TEMPLATES.get(reason, TEMPLATES["invalid"])
    column, row = shown_fields(outcome, shape=shape, expected_columns=expected)
    where = ""
    if column is not None:
        where += f" in column {column!r}"
    if row is not None:
        where += f" at row {row}"
    hint = ""
    if expected and len(expected) <= MAX_EXPECTED_SHOWN:
        hint = " Expected columns: " + ", ".join(repr(c) for c in expected) + "."
    return template.format(
        where=where,
        col=f" {column!r}" if column is not None else "",
        expected=hint,
        max_bytes=int(max_bytes) if max_bytes is not None else "configured",
        time_limit_s=f"{float(time_limit_s):g}" if time_limit_s is not None else "the configured",
    )

