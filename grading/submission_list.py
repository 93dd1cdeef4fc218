"""Read MLE-bench's submission JSONL: one JSON object per line naming a competition and its files.

MLE-bench's ``experiments/make_submission.py`` writes one object per run with
``competition_id`` and the paths ``submission_path``, ``logs_path`` and ``code_path`` (each a
string or null), relative to where it ran. ``mleaudit grade`` reads the submission path of each
line and ``mleaudit audit batch`` all three; both read the file through :func:`read_listed_records`
so that they accept and refuse the same lines with the same messages.

The file may come from anywhere: each line is decoded with :func:`mleaudit.grading.untrusted_json.loads`
(bounded nesting, so a line of a thousand nested brackets is a "not JSON" line, not a crash),
and :func:`confine_path` tells whether a listed path, once resolved (links and ``..``
included), stays inside a folder.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mleaudit.grading import untrusted_json

__all__ = ["ListedRecord", "confine_path", "read_listed_records", "resolve_listed_path", "listed_path"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ListedRecord:
    """One well-formed line of a submission JSONL.

    Attributes
    ----------
    competition_id : str
        The line's ``competition_id`` (a non-empty string).
    record : dict
        The whole JSON object, for the caller's own fields.
    line : int
        The 1-based line number.
    listed_at : str
        ``<file>:<line>``, for messages and reports.
    """

    competition_id: str
    record: dict[str, Any]
    line: int
    listed_at: str


def resolve_listed_path(value: str, base: Path) -> Path:
    """Resolve a path written in a submission JSONL.

    Parameters
    ----------
    value : str
        The path as written.
    base : pathlib.Path
        The folder holding the JSONL.

    Returns
    -------
    pathlib.Path
        ``value`` itself when absolute; else ``base / value`` when that exists or ``value`` does
        not exist from the current directory (MLE-bench writes paths relative to where it ran, so
        the JSONL's folder is preferred and the current directory is the fallback).
    """
    path = Path(value)
    if path.is_absolute():
        return path
    beside = base / path
    return beside if _exists(beside) or not _exists(path) else path


def _exists(path: Path) -> bool:
    # A name too long for the file system (or otherwise unusable) names nothing there.
    try:
        return path.exists()
    except (OSError, ValueError):
        return False


def confine_path(path: str | os.PathLike[str], base: str | os.PathLike[str]) -> Path | None:
    """``path`` resolved (symbolic links and ``..`` followed), if it is ``base`` or inside it.

    Parameters
    ----------
    path : path-like
        A path as resolved by :func:`resolve_listed_path` (it need not exist).
    base : path-like
        The folder it must stay in (resolved the same way).

    Returns
    -------
    pathlib.Path or None
        The resolved path, or ``None`` when it lies outside ``base`` or cannot be resolved.

    Examples
    --------
    >>> confine_path("/data/runs/../etc", "/data/runs") is None
    True
    >>> str(confine_path("/data/runs/r1/./logs", "/data/runs"))
    '/data/runs/r1/logs'
    """
    try:
        real = Path(os.path.realpath(path))
        base_real = Path(os.path.realpath(base))
    except (OSError, ValueError):
        return None
    return real if real == base_real or real.is_relative_to(base_real) else None


def listed_path(listed: ListedRecord, key: str, base: Path) -> tuple[Path | None, tuple[int, str] | None]:
    """One path field of a line, resolved.

    Parameters
    ----------
    listed : ListedRecord
        The line.
    key : str
        The field, e.g. ``"submission_path"``.
    base : pathlib.Path
        The folder holding the JSONL (see :func:`resolve_listed_path`).

    Returns
    -------
    tuple of (pathlib.Path or None, tuple of (int, str) or None)
        The resolved path (``None`` when the field is absent or null) and, when the value is not
        a string, a problem: the line number and a message naming the line and field (then the
        path is ``None``).
    """
    value = listed.record.get(key)
    if value is None:
        return None, None
    if not isinstance(value, str):
        return None, (listed.line, f"{listed.listed_at}: field {key!r} must be a path string or null")
    return resolve_listed_path(value, base), None


def read_listed_records(path: str | os.PathLike[str], *, default_competition: str | None = None
                        ) -> tuple[list[ListedRecord], list[tuple[int, str]]]:
    """Read the lines of a submission JSONL that are JSON objects with a competition id.

    Blank lines and lines starting with ``#`` or ``//`` are skipped.

    Parameters
    ----------
    path : path-like
        The JSONL file (UTF-8).
    default_competition : str, optional
        The competition of a line without ``competition_id`` (a line with a malformed one is
        still a problem).

    Returns
    -------
    tuple of (list of ListedRecord, list of (int, str))
        The well-formed lines in file order, and one problem per malformed line: its line number
        and a message starting with ``<file>:<line>:`` (not JSON, not an object,
        ``competition_id`` missing or not a non-empty string). Callers add their own problems
        with line numbers and sort, so that messages come out in file order.

    Raises
    ------
    OSError, UnicodeDecodeError
        If the file cannot be read as UTF-8 text; callers turn this into their own error.
    """
    path = Path(path)
    lines = path.read_text(encoding="utf-8").splitlines()
    records: list[ListedRecord] = []
    problems: list[tuple[int, str]] = []
    for number, line in enumerate(lines, start=1):
        text = line.strip()
        if not text or text.startswith(("#", "//")):
            continue
        where = f"{path}:{number}"
        try:
            record = untrusted_json.loads_unique(text)
        except json.JSONDecodeError as exc:
            problems.append((number, f"{where}: not JSON ({exc.msg} at column {exc.colno})"))
            continue
        if not isinstance(record, dict):
            problems.append((number, f"{where}: expected a JSON object"))
            continue
        competition = record.get("competition_id")
        if competition is None and "competition_id" not in record and default_competition:
            competition = default_competition
        if not isinstance(competition, str) or not competition:
            problems.append((number, f"{where}: field 'competition_id' is missing or not a string"))
            continue
        records.append(ListedRecord(competition_id=competition, record=record, line=number, listed_at=where))
    return records, problems
