"""What the validation endpoint may say to the agent: replies rendered from our own templates only.

Grading's messages are written for the host (``mleaudit grade``): they quote cells and ids and,
for a few metric errors, the scoring library's text, which can list the answers' labels. The
endpoint never forwards them. A reply is rendered from a template keyed by the reason code of
:data:`mleaudit.grading.errors.REASONS` (or one of the endpoint's own codes, :data:`ENDPOINT_REASONS`),
filled with at most:

- a column name, shown only if it is one of the submission's own header cells (read here, with
  the :mod:`csv` module, within :data:`HEADER_SCAN_BYTES`) or one of the competition's public
  expected columns (id and target columns);
- a line number of the submission file, shown only if it is within the file's own line count;
- counts about the submission file itself: its data rows, the fields on a line and in its
  header;
- numbers the host configures (the size limit, the time bound, the caps on a line's fields and
  bytes, :class:`mleaudit.grading.csvscan.CsvLimits`);
- public facts of the competition (:class:`PublicFacts`): the sample submission's row count,
  and the kind of value the metric needs, as the competition's config and metric say.

Never an exception's text, never a value from the answers, never an id or a cell value, never a
count taken from the answers. A reason without a template gets the generic one.

Positions are lines of the file
-------------------------------
Every reply names a place in the submission as a **line of the file**, numbered as an editor
numbers them: the header is line 1, and a line ends at ``\n``, ``\r\n`` or a lone ``\r``.
Grading names a problem in a value by its data row (the 1-based row of the table pandas read,
header excluded); the endpoint turns it into the line where that row starts, by reading the
file with the :mod:`csv` module (:func:`read_shape`), so blank lines and quoted cells that span
lines are counted as the file has them. Parser and pre-scan problems (``csv-syntax``,
``too-large``) come with their line from grading (:attr:`mleaudit.grading.errors.InvalidSubmission.line`).
A row whose line cannot be found is not named. "Rows" in a reply are only ever counted, never
numbered: the data rows of the file, blank lines not counted.
"""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping

__all__ = [
    "COUNT_KEYS",
    "ENDPOINT_REASONS",
    "TARGET_KINDS",
    "TEMPLATES",
    "PublicFacts",
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

#: The counts a reply may use (:data:`mleaudit.grading.errors.COUNT_KEYS`): the file's own field counts
#: and the caps the host configured. Any other key is dropped.
COUNT_KEYS = frozenset({"fields", "expected_fields", "max_columns", "max_field_bytes", "max_line_bytes"})

#: What the metric needs in the target columns, by :attr:`PublicFacts.target_kind`
#: (:class:`mleaudit.grading.metrics.TargetKind` values); ``number`` may add the config's value range.
TARGET_KINDS: Mapping[str, str] = {
    "numeric": "numbers",
    "probability": "probabilities (numbers from 0 to 1)",
    "label": "labels of the same kind as the sample submission's",
    "text": "text in the format of the sample submission",
}

#: Reply templates by reason, and a few variants a reason is rendered with when the details
#: allow (``csv-syntax-fields``, ``too-large-*``, ``unnamed-*``). Placeholders:
#:
#: - ``{where}``: `` in column 'x'``, `` at line N``, both or nothing;
#: - ``{col}``: `` 'x'`` (or nothing); ``{expected}``: the public expected columns;
#: - ``{at}``: `` at line N`` (or nothing); ``{subject}``: ``line N`` (or ``a line``);
#: - ``{line}``, ``{fields}``, ``{header_fields}``, ``{expected_fields}``: a line and field
#:   counts of the submission; ``{position}``: a column's place in the header;
#: - ``{cap}``: the configured cap a line broke;
#: - ``{counts}``: the submission's row count, and the sample submission's when it is public;
#: - ``{needs}``: what the metric needs, from the competition's config and metric;
#: - ``{max_bytes}`` and ``{time_limit_s}``: the host's configured limits.
#:
#: Nothing else is ever substituted.
TEMPLATES: Mapping[str, str] = {
    "valid": "Submission is valid.",
    "unreadable": "Submission is invalid: the file could not be read.",
    "empty": "Submission is invalid: the file is empty.",
    "csv-syntax": "Submission is invalid: the file is not a readable CSV{at} (check quoting, delimiters and UTF-8 encoding).",
    "csv-syntax-fields": "Submission is invalid: line {line} has {fields} fields; the header has {header_fields}.",
    "csv-syntax-fields-expected": "Submission is invalid: line {line} has {fields} fields, where {expected_fields} are expected.",
    "too-large": "Submission is invalid: a row or cell is larger than a submission may hold.",
    "too-large-columns": "Submission is invalid: {subject} has more than {cap} fields (the most a submission may have).",
    "too-large-field": "Submission is invalid: {subject} has a cell over {cap} bytes (the most one cell may hold).",
    "too-large-line": "Submission is invalid: {subject} is over {cap} bytes (the most one row may hold).",
    "no-columns": "Submission is invalid: the header has no columns.",
    "missing-column": "Submission is invalid: required column{col} is missing.{expected}",
    "extra-column": "Submission is invalid: unexpected column{col}.{expected}",
    "duplicate-column": "Submission is invalid: column{col} appears more than once.",
    "column-order": "Submission is invalid: column{col} is out of place.{expected}",
    "unnamed-index": "Submission is invalid: an unnamed first column (an index written by to_csv? use index=False).{expected}",
    "unnamed-column": "Submission is invalid: column {position} of the header has no name.{expected}",
    "empty-id": "Submission is invalid: empty id{where}.",
    "duplicate-id": "Submission is invalid: repeated id{where}.",
    "unknown-id": "Submission is invalid: an id that is not a test id{where}.",
    "missing-ids": "Submission is invalid: some test ids have no row{counts} (one row per test id is expected).",
    "row-count": "Submission is invalid: the number of rows differs from the test set{counts} (one row per test id is expected).",
    "bad-value": "Submission is invalid: a value of the wrong type or outside the allowed range{where}{needs}.",
    "missing-value": "Submission is invalid: a missing value{where}.",
    "non-finite": "Submission is invalid: a non-finite number{where}.",
    "row-sum": "Submission is invalid: probabilities of a row do not sum to 1{where}.",
    "unknown-label": "Submission is invalid: a label the metric cannot use{where}{needs}.",
    "incomparable": "Submission is invalid: predictions{where} are not of the type the answers hold{needs}.",
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
#: Largest field count a reply shows (a larger one is not shown).
MAX_SHOWN_FIELDS = 1 << 20
#: Reasons about a column whose reply names an unnamed column for what it is.
_COLUMN_REASONS = frozenset({"extra-column", "column-order", "duplicate-column"})
#: pandas' name for a header cell left empty (``Unnamed: 0`` for the first column).
_UNNAMED = re.compile(r"Unnamed: (\d{1,6})")
#: The ``too-large`` variant for each cap.
_CAP_TEMPLATES = {"max_columns": "too-large-columns", "max_field_bytes": "too-large-field",
                  "max_line_bytes": "too-large-line"}
_READ_PIECE = 1 << 20


@dataclass(frozen=True, slots=True, kw_only=True)
class ValidationOutcome:
    """What a validator found, as the endpoint passes it around (never sent as it stands).

    Attributes
    ----------
    valid : bool
        The verdict.
    reason : str or None
        ``None`` when valid; otherwise a code of :data:`mleaudit.grading.errors.REASONS` or
        :data:`ENDPOINT_REASONS`.
    column : str or None
        The submission column the problem is in.
    row : int or None
        The 1-based data row of the submission (header excluded) the problem is in.
    line : int or None
        The 1-based line of the file (the header is line 1) the problem is on, for problems
        found before there are rows (``csv-syntax``, ``too-large``).
    counts : dict of str to int
        Field counts of the file and configured caps, keyed by :data:`COUNT_KEYS`.
    detail : str
        Host-side text (grading's full message); logged on the host at debug level only.
    """

    valid: bool
    reason: str | None = None
    column: str | None = None
    row: int | None = None
    line: int | None = None
    counts: Mapping[str, int] = field(default_factory=dict)
    detail: str = ""

    def to_dict(self) -> dict[str, Any]:
        """The fields as a picklable, JSON-ready dict."""
        return {"valid": self.valid, "reason": self.reason, "column": self.column, "row": self.row,
                "line": self.line, "counts": dict(self.counts), "detail": self.detail}


def _positive_int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 1 else None


def _clean_counts(counts: object) -> dict[str, int]:
    if not isinstance(counts, Mapping):
        return {}
    return {k: v for k, v in counts.items()
            if k in COUNT_KEYS and isinstance(v, int) and not isinstance(v, bool) and v >= 0}


def as_outcome(result: object) -> ValidationOutcome:
    """Normalise what a validator returned into a :class:`ValidationOutcome`.

    Parameters
    ----------
    result : object
        A :class:`ValidationOutcome`; an object with ``valid``, ``reason``, ``column``, ``row``
        and ``message`` attributes (and optionally ``line`` and ``counts``:
        :class:`mleaudit.grading.grade.SubmissionCheck`); a mapping with those keys; a legacy
        ``(valid, message)`` pair (its message is kept for the host only and the reason is the
        generic ``"invalid"``); or a bare bool.

    Returns
    -------
    ValidationOutcome
        Fields type-checked: a non-str reason becomes ``"invalid"``, a non-str column and a
        row or line that is not a positive int become ``None``, and counts keep only
        :data:`COUNT_KEYS` with non-negative int values.
    """
    line: object = None
    counts: object = None
    if isinstance(result, ValidationOutcome):
        valid, reason, column, row, detail = result.valid, result.reason, result.column, result.row, result.detail
        line, counts = result.line, result.counts
    elif isinstance(result, Mapping):
        valid, reason = result.get("valid"), result.get("reason")
        column, row = result.get("column"), result.get("row")
        line, counts = result.get("line"), result.get("counts")
        detail = result.get("detail", result.get("message", ""))
    elif isinstance(result, tuple) and len(result) == 2:
        valid, reason, column, row, detail = result[0], None, None, None, result[1]
    elif isinstance(result, bool):
        valid, reason, column, row, detail = result, None, None, None, ""
    elif hasattr(result, "valid"):
        valid, reason = getattr(result, "valid"), getattr(result, "reason", None)
        column, row = getattr(result, "column", None), getattr(result, "row", None)
        line, counts = getattr(result, "line", None), getattr(result, "counts", None)
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
    return ValidationOutcome(valid=valid, reason=reason, column=column, row=_positive_int(row),
                             line=_positive_int(line), counts=_clean_counts(counts),
                             detail=detail if isinstance(detail, str) else "")


@dataclass(frozen=True, slots=True, kw_only=True)
class SubmissionShape:
    """What the endpoint read of a submission file itself, to decide what a reply may name.

    Attributes
    ----------
    header : tuple of str
        The cells of the first non-blank CSV record (empty if none could be read within
        :data:`HEADER_SCAN_BYTES`).
    n_rows : int or None
        Data records after the header (blank lines not counted); ``None`` when the file could
        not be read through with the :mod:`csv` module.
    n_lines : int or None
        Lines of the file (a last line without a line end counted); ``None`` if unreadable.
    row : int or None
        The data row whose line was looked up (the outcome's row).
    row_line : int or None
        The line where that data row starts; ``None`` when it was not found.
    """

    header: tuple[str, ...] = ()
    n_rows: int | None = None
    n_lines: int | None = None
    row: int | None = None
    row_line: int | None = None

    def to_dict(self) -> dict[str, Any]:
        """The fields as a picklable, JSON-ready dict (what the worker sends)."""
        return {"header": list(self.header), "n_rows": self.n_rows, "n_lines": self.n_lines, "row": self.row,
                "row_line": self.row_line}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> "SubmissionShape":
        """Rebuild a shape from :meth:`to_dict`, type-checked (anything malformed is dropped).

        Parameters
        ----------
        data : mapping or None
            The worker's dict.

        Returns
        -------
        SubmissionShape
        """
        if not isinstance(data, Mapping):
            return cls()
        header = data.get("header") or ()
        n_rows = data.get("n_rows")
        return cls(header=tuple(str(c) for c in header) if isinstance(header, (list, tuple)) else (),
                   n_rows=n_rows if isinstance(n_rows, int) and not isinstance(n_rows, bool) and n_rows >= 0 else None,
                   n_lines=_positive_int(data.get("n_lines")), row=_positive_int(data.get("row")),
                   row_line=_positive_int(data.get("row_line")))


def _is_blank(record: list[str]) -> bool:
    """A record pandas skips: an empty line, or one of spaces and tabs only."""
    return not record or (len(record) == 1 and record[0] != "" and not record[0].strip(" \t"))


def _count_lines(path: Path) -> int | None:
    r"""Lines of the file: line ends (``\n``, ``\r\n``, lone ``\r``), plus a last line without one."""
    ends = 0
    last = b""
    try:
        with Path(path).open("rb") as handle:
            while piece := handle.read(_READ_PIECE):
                # A \r\n is one line end, also when the pieces cut it in two.
                ends += piece.count(b"\n") + piece.count(b"\r") - (last + piece).count(b"\r\n")
                last = piece[-1:]
    except OSError:
        return None
    return ends + (1 if last and last not in (b"\n", b"\r") else 0)


def read_shape(path: Path, *, row: int | None = None, max_field_bytes: int = 64 << 20) -> SubmissionShape:
    """Read a submission's header cells, count its data rows and lines, and find a row's line.

    Parameters
    ----------
    path : pathlib.Path
        The posted file (already capped in size by the endpoint).
    row : int, optional
        A 1-based data row (as grading numbers it) whose starting line to find.
    max_field_bytes : int
        Largest CSV field accepted while counting rows; a larger one leaves the count unknown.

    Returns
    -------
    SubmissionShape
        Header cells from the first :data:`HEADER_SCAN_BYTES` bytes, the number of non-blank
        records after the header (``None`` if the file cannot be read through), the file's
        line count, and the line where ``row`` starts.
    """
    header: tuple[str, ...] = ()
    try:
        with Path(path).open("rb") as handle:
            head = handle.read(HEADER_SCAN_BYTES)
    except OSError:
        return SubmissionShape()
    text = head.decode("utf-8-sig", errors="replace")
    try:
        first = next((r for r in csv.reader(io.StringIO(text, newline="")) if not _is_blank(r)), [])
        header = tuple(first)
    except csv.Error:
        header = ()
    wanted = _positive_int(row)
    n_rows: int | None = None
    row_line: int | None = None
    previous = csv.field_size_limit()
    try:
        csv.field_size_limit(max_field_bytes)
        with Path(path).open("r", encoding="utf-8-sig", errors="replace", newline="") as handle:
            reader = csv.reader(handle)
            records = 0
            start = 1
            for record in reader:
                if not _is_blank(record):
                    records += 1
                    if wanted is not None and records == wanted + 1:
                        row_line = start
                start = reader.line_num + 1
        n_rows = max(records - 1, 0)
    except (csv.Error, OSError, ValueError):
        n_rows, row_line = None, None
    finally:
        csv.field_size_limit(previous)
    return SubmissionShape(header=header, n_rows=n_rows, n_lines=_count_lines(path), row=wanted,
                           row_line=row_line)


@dataclass(frozen=True, slots=True, kw_only=True)
class PublicFacts:
    """Public facts of a competition a reply may state (never read from the answers).

    Attributes
    ----------
    sample_rows : int or None
        Data rows of the public sample submission.
    target_kind : str or None
        A key of :data:`TARGET_KINDS`: what the competition's metric needs in the target
        columns (``None`` for a custom grader, whose needs are not known).
    value_range : tuple of (float, float) or None
        The closed range of the competition's config (``metric.params.value_range``).
    """

    sample_rows: int | None = None
    target_kind: str | None = None
    value_range: tuple[float, float] | None = None

    def needs(self) -> str:
        """What the metric needs, as a phrase (empty when not known).

        Returns
        -------
        str
            e.g. ``"numbers from 0 to 10"`` or ``"labels of the same kind as the sample submission's"``.
        """
        text = TARGET_KINDS.get(self.target_kind or "", "")
        if self.target_kind == "numeric" and self.value_range is not None:
            low, high = self.value_range
            text = f"numbers from {float(low):g} to {float(high):g}"
        return text


def _shown_column(column: str | None, shape: SubmissionShape, expected: Iterable[str]) -> str | None:
    if not isinstance(column, str) or not column or len(column) > MAX_SHOWN_COLUMN_CHARS or not column.isprintable():
        return None
    if column in shape.header or column in tuple(expected):
        return column
    return None


def _shown_line(outcome: ValidationOutcome, shape: SubmissionShape) -> int | None:
    if shape.n_lines is None:
        return None
    if outcome.line is not None:
        return outcome.line if 1 <= outcome.line <= shape.n_lines else None
    row = outcome.row
    if row is None or shape.n_rows is None or not 1 <= row <= shape.n_rows or row != shape.row:
        return None
    line = shape.row_line
    return line if line is not None and 1 <= line <= shape.n_lines else None


def _expected(expected_columns: Iterable[str]) -> tuple[str, ...]:
    return tuple(c for c in expected_columns if isinstance(c, str) and c.isprintable()
                 and len(c) <= MAX_SHOWN_COLUMN_CHARS)


def shown_fields(
    outcome: ValidationOutcome, *, shape: SubmissionShape | None = None, expected_columns: Iterable[str] = ()
) -> tuple[str | None, int | None]:
    """The column and line a reply for ``outcome`` may name (what :func:`render_reply` shows).

    Parameters
    ----------
    outcome : ValidationOutcome
        The verdict.
    shape : SubmissionShape, optional
        The submission's header cells, row and line counts, and the line of the outcome's row.
    expected_columns : iterable of str
        The competition's public columns.

    Returns
    -------
    (str or None, int or None)
        The column if it is a header cell of the submission or an expected column (short and
        printable), and the line of the file: the outcome's ``line`` if it is within the file's
        line count, else the line where the outcome's ``row`` starts if the row is within the
        file's row count and its line was found.
    """
    shape = shape or SubmissionShape()
    return _shown_column(outcome.column, shape, _expected(expected_columns)), _shown_line(outcome, shape)


def _unnamed_position(column: str | None, shape: SubmissionShape) -> int | None:
    """The 0-based place of an unnamed header cell that pandas called ``column``, if it is one."""
    found = _UNNAMED.fullmatch(column) if isinstance(column, str) else None
    if found is None:
        return None
    position = int(found.group(1))
    if position < len(shape.header) and shape.header[position] in ("", column):
        return position
    return None


def _plural(n: int, word: str) -> str:
    return f"{n:,} {word}" if n == 1 else f"{n:,} {word}s"


def _row_counts(shape: SubmissionShape, public: PublicFacts) -> str:
    if shape.n_rows is None:
        return ""
    text = f": the submission has {_plural(shape.n_rows, 'row')}"
    sample = public.sample_rows
    if isinstance(sample, int) and not isinstance(sample, bool) and sample >= 0:
        if sample == shape.n_rows:
            text += ", as many as the sample submission"
        else:
            text += f"; the sample submission has {sample:,}"
    return text


def _choose(reason: str, outcome: ValidationOutcome, shape: SubmissionShape, line: int | None) -> tuple[str, dict[str, Any]]:
    """The template key for ``reason`` and the details only it uses."""
    counts = outcome.counts
    if reason == "csv-syntax":
        fields, expected = counts.get("fields"), counts.get("expected_fields")
        if line is not None and fields is not None and expected is not None and fields <= MAX_SHOWN_FIELDS \
                and expected <= MAX_SHOWN_FIELDS and fields != expected:
            if len(shape.header) == expected:
                return "csv-syntax-fields", {"line": line, "fields": f"{fields:,}", "header_fields": f"{expected:,}"}
            return "csv-syntax-fields-expected", {"line": line, "fields": f"{fields:,}", "expected_fields": f"{expected:,}"}
        return reason, {}
    if reason == "too-large":
        caps = [key for key in _CAP_TEMPLATES if key in counts]
        if len(caps) == 1:
            return _CAP_TEMPLATES[caps[0]], {"cap": f"{counts[caps[0]]:,}",
                                             "subject": f"line {line}" if line is not None else "a line"}
        return reason, {}
    if reason in _COLUMN_REASONS:
        position = _unnamed_position(outcome.column, shape)
        if position == 0:
            return "unnamed-index", {}
        if position is not None:
            return "unnamed-column", {"position": position + 1}
    return reason, {}


def render_reply(
    outcome: ValidationOutcome,
    *,
    shape: SubmissionShape | None = None,
    expected_columns: Iterable[str] = (),
    public: PublicFacts | None = None,
    max_bytes: int | None = None,
    time_limit_s: float | None = None,
) -> str:
    """Render the agent-facing reply for an outcome from :data:`TEMPLATES`.

    Parameters
    ----------
    outcome : ValidationOutcome
        The verdict; only its ``valid``, ``reason``, ``column``, ``row``, ``line`` and
        ``counts`` are read, and the position fields only as allowed below. ``detail`` is
        never used.
    shape : SubmissionShape, optional
        The submission's header cells, row and line counts (:func:`read_shape`); without it
        no column outside ``expected_columns``, no line and no row count is shown.
    expected_columns : iterable of str
        The competition's public columns (id and targets), which may always be named.
    public : PublicFacts, optional
        The sample submission's row count and what the metric needs.
    max_bytes : int, optional
        The configured body size limit (for ``body-too-large``).
    time_limit_s : float, optional
        The configured time bound (for ``timeout``).

    Returns
    -------
    str
        One line of text built only from the template, an allowed column name, an allowed line
        number, the file's own counts, public facts and the configured numbers.
    """
    shape = shape or SubmissionShape()
    public = public or PublicFacts()
    expected = _expected(expected_columns)
    reason = "valid" if outcome.valid else (outcome.reason or "invalid")
    column, line = shown_fields(outcome, shape=shape, expected_columns=expected)
    key, details = _choose(reason, outcome, shape, line) if not outcome.valid else (reason, {})
    template = TEMPLATES.get(key, TEMPLATES["invalid"])
    where = ""
    if column is not None:
        where += f" in column {column!r}"
    if line is not None:
        where += f" at line {line}"
    hint = ""
    if expected and len(expected) <= MAX_EXPECTED_SHOWN:
        hint = " Expected columns: " + ", ".join(repr(c) for c in expected) + "."
    needs = public.needs()
    fills: dict[str, Any] = {
        "where": where,
        "col": f" {column!r}" if column is not None else "",
        "expected": hint,
        "at": f" at line {line}" if line is not None else "",
        "counts": _row_counts(shape, public),
        "needs": f"; the metric needs {needs}" if needs else "",
        "max_bytes": int(max_bytes) if max_bytes is not None else "configured",
        "time_limit_s": f"{float(time_limit_s):g}" if time_limit_s is not None else "the configured",
    }
    fills.update(details)
    return template.format(**fills)
