"""Reading the CSV files that run-level checks compare: submissions, sample submissions, answers.

Every file here is untrusted or large: a submission is whatever the agent left, and answer files
of some competitions are hundreds of megabytes. Reads are therefore capped (file size, number
of columns, lines of a head) and every failure becomes a :class:`CsvReadError` whose message
names the file and the cause but never quotes the file's cells, so that no held-out value can
reach a report through an error message.
"""

from __future__ import annotations

import csv
import io
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from mleaudit.audit.errors import AuditError

# pandas loads in a third of a second: imported where a table is read, so that loading the
# check registry (every `rules` command) does not pay for it.
if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "MAX_CSV_BYTES",
    "MAX_CSV_COLUMNS",
    "CsvReadError",
    "CsvHead",
    "check_regular_file",
    "load_csv_table",
    "read_csv_head",
]

#: Larger CSVs are not compared (a full MLE-bench answers file is well under this).
MAX_CSV_BYTES = 512 * 1024 * 1024
#: Only the first this many columns (plus any requested by name) are loaded.
MAX_CSV_COLUMNS = 512
#: A head read stops after this many bytes whatever the line count.
MAX_HEAD_BYTES = 1024 * 1024


class CsvReadError(AuditError):
    """A CSV file cannot be read for a check; the message names the file and the cause."""


def check_regular_file(path: Path, *, max_bytes: int = MAX_CSV_BYTES, label: str | None = None) -> int:
    """Check that ``path`` is a regular file (not a symlink) no larger than ``max_bytes``.

    Parameters
    ----------
    path : Path
        File to check; symlinks are refused because a run could point one at held-out data.
    max_bytes : int
        Size cap in bytes.
    label : str, optional
        Name used in messages (default: the file name).

    Returns
    -------
    int
        The file size in bytes.

    Raises
    ------
    CsvReadError
        If the file is missing, a symlink, not a regular file, or over the cap.
    """
    name = label or Path(path).name
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        raise CsvReadError(f"{name}: file not found") from None
    except OSError as exc:
        raise CsvReadError(f"{name}: cannot be read ({type(exc).__name__})") from None
    if stat.S_ISLNK(info.st_mode):
        raise CsvReadError(f"{name}: is a symbolic link; not followed")
    if not stat.S_ISREG(info.st_mode):
        raise CsvReadError(f"{name}: not a regular file")
    if info.st_size > max_bytes:
        raise CsvReadError(f"{name}: {info.st_size} bytes is over the {max_bytes}-byte cap for CSV checks")
    return int(info.st_size)


def _describe_parse_error(exc: Exception) -> str:
    # pandas parser messages quote positions ("Expected 2 fields in line 3, saw 4"), never
    # cell contents; other exceptions are reduced to their class so no content leaks.
    import pandas as pd

    if isinstance(exc, (pd.errors.ParserError, pd.errors.EmptyDataError)):
        return str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__
    if isinstance(exc, UnicodeDecodeError):
        return "not UTF-8 text"  # pandas decodes in chunks, so the offset would be misleading
    return type(exc).__name__


def load_csv_table(
    path: Path,
    *,
    columns: tuple[str, ...] = (),
    max_bytes: int = MAX_CSV_BYTES,
    max_columns: int = MAX_CSV_COLUMNS,
    label: str | None = None,
) -> pd.DataFrame:
    """Read a CSV with every cell as a string, capped in size and columns.

    Parameters
    ----------
    path : Path
        The CSV file (not followed if it is a symlink).
    columns : tuple of str
        Columns that must be loaded even beyond ``max_columns`` (the id and target columns).
    max_bytes : int
        Refuse files larger than this.
    max_columns : int
        Load at most the first ``max_columns`` columns, plus ``columns``.
    label : str, optional
        Name used in error messages (default: the file name).

    Returns
    -------
    DataFrame
        Columns in file order (duplicate header names keep pandas' ``.1`` suffixes); cells are
        the raw strings, empty cells are empty strings (no NA conversion).

    Raises
    ------
    CsvReadError
        If the file is missing, a symlink, too large, not UTF-8, or not parseable as CSV.
    """
    import pandas as pd

    from mleaudit.grading.csvscan import TEXT_CSV_LIMITS, check_csv_limits
    from mleaudit.grading.errors import InvalidSubmission

    name = label or Path(path).name
    check_regular_file(path, max_bytes=max_bytes, label=name)
    try:
        # The same caps as grading, checked before pandas, which is slow on hostile rows.
        check_csv_limits(path, TEXT_CSV_LIMITS)
    except InvalidSubmission as exc:
        raise CsvReadError(f"{name}: not read as CSV: {exc}") from None
    except OSError as exc:
        raise CsvReadError(f"{name}: cannot be read: {exc.strerror or exc}") from None
    try:
        header = pd.read_csv(path, dtype=str, keep_default_na=False, nrows=0, encoding="utf-8").columns
        wanted = set(columns)
        keep = [c for i, c in enumerate(header) if i < max_columns or c in wanted]
        usecols = keep if len(keep) < len(header) else None
        return pd.read_csv(path, dtype=str, keep_default_na=False, usecols=usecols, encoding="utf-8",
                           on_bad_lines="error")
    except (OSError, UnicodeDecodeError, ValueError, pd.errors.ParserError, pd.errors.EmptyDataError) as exc:
        raise CsvReadError(f"{name}: not readable as CSV: {_describe_parse_error(exc)}") from None


@dataclass(frozen=True, slots=True, kw_only=True)
class CsvHead:
    """The first lines of a CSV file, as text.

    Attributes
    ----------
    header : tuple of str
        Column names of the first record.
    lines : tuple of str
        The first data lines (line endings removed), at most the number asked for.
    line_count : int
        Number of newline characters in the file (what ``wc -l`` prints).
    """

    header: tuple[str, ...]
    lines: tuple[str, ...]
    line_count: int


def read_csv_head(path: Path, *, max_lines: int = 5000, max_bytes: int = MAX_CSV_BYTES,
                  label: str | None = None) -> CsvHead:
    """The header and first data lines of a CSV file, plus its ``wc -l`` line count.

    Parameters
    ----------
    path : Path
        The CSV file (not followed if it is a symlink).
    max_lines : int
        How many data lines to keep.
    max_bytes : int
        Refuse files larger than this.
    label : str, optional
        Name used in error messages.

    Returns
    -------
    CsvHead

    Raises
    ------
    CsvReadError
        If the file is missing, a symlink, too large, empty or not UTF-8.
    """
    name = label or Path(path).name
    size = check_regular_file(path, max_bytes=max_bytes, label=name)
    try:
        with open(path, "rb") as handle:
            head = handle.read(min(size, MAX_HEAD_BYTES + 1))
            newlines = head.count(b"\n")
            while chunk := handle.read(1 << 20):
                newlines += chunk.count(b"\n")
    except OSError as exc:
        raise CsvReadError(f"{name}: cannot be read ({type(exc).__name__})") from None
    try:
        text = head[:MAX_HEAD_BYTES].decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.start < MAX_HEAD_BYTES - 4:  # a multi-byte character cut at the cap is not an error
            raise CsvReadError(f"{name}: not UTF-8 text (byte offset {exc.start})") from None
        text = head[: exc.start].decode("utf-8")
    if size > MAX_HEAD_BYTES:
        text = text[: text.rfind("\n") + 1] if "\n" in text else text
    rows = text.splitlines()
    if not rows or not rows[0].strip():
        raise CsvReadError(f"{name}: empty file or empty header line")
    try:
        header = next(csv.reader(io.StringIO(rows[0])))
    except (csv.Error, StopIteration):
        raise CsvReadError(f"{name}: header line is not CSV") from None
    lines = tuple(line.rstrip("\r") for line in rows[1 : max_lines + 1])
    return CsvHead(header=tuple(h.strip() for h in header), lines=lines, line_count=newlines)
