"""What the endpoint reads of a submission file itself: header cells, row and line counts, a row's line.

Replies name a place as a line of the file, numbered as an editor numbers them; grading names
a data row, so :func:`read_shape` reads the file with the :mod:`csv` module to find the line
where that row starts.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from mleaudit.sandbox.feedback.outcome import positive_int

#: Bytes of the submission read to find its header cells.
HEADER_SCAN_BYTES = 1 << 20
_READ_PIECE = 1 << 20


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
                   n_lines=positive_int(data.get("n_lines")), row=positive_int(data.get("row")),
                   row_line=positive_int(data.get("row_line")))


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
    wanted = positive_int(row)
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
