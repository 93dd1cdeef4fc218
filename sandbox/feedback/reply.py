"""Rendering a reply: the template for an outcome, filled only with what the agent may read.

A column is named only if it is a header cell of the submission or a public expected column;
a line only if it is within the file and was found from the file itself; counts only of the
file's own rows and fields, or public facts and the host's configured limits.
"""

from __future__ import annotations

import re
from typing import Any, Iterable

from mleaudit.sandbox.feedback.outcome import ValidationOutcome
from mleaudit.sandbox.feedback.public import PublicFacts
from mleaudit.sandbox.feedback.shape import SubmissionShape
from mleaudit.sandbox.feedback.templates import TEMPLATES

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
