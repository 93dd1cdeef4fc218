"""What the run's logs and files show about the submission: writes that target it, its rows typed by hand, counts and headers printed, logs cut short."""

from __future__ import annotations

import os
import re
import stat
import textwrap
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from mleaudit.audit.checks.tables import CsvHead
from mleaudit.audit.checks.writes import WriteSite
from mleaudit.audit.logs.common import is_cut_short
from mleaudit.audit.rules.context import RunContext
from mleaudit.audit.run import RunLayout, read_run_file
from mleaudit.audit.units import CodeUnit, LogEvent, LogEventKind
from mleaudit.grading import untrusted_json

#: A destination that names the submission file or folder (not the sample submission or the
#: validation helper, which merely contain the word).
SUBMISSION_TARGET = re.compile(r"(?i)(?<!sample_)(?<!sample)(?<!validate_)submission")

_WC_LINE = re.compile(r"^\s*(\d+)\s+(\S*?(?<!sample_)submission\.csv)\s*$", re.MULTILINE)

_ROW_TOKEN = re.compile(r"[^\s'\"`()\[\]{}<>|;\\]+")
_MIN_ROW_CHARS = 6


@dataclass(frozen=True, slots=True, kw_only=True)
class Site:
    unit: CodeUnit
    site: WriteSite
    ran: bool
    exact: bool
    when: tuple[str, int] = ("", -1)  # the log place that runs it, to order writers in time


def file_name(path: str) -> str:
    """The file name of a path as a tool call spells it: POSIX, Windows (``scripts\\train.py``,
    the backslash doubled when the call is JSON text) or both."""
    return PurePosixPath(path.replace("\\", "/")).name


def normalise_code(text: str) -> str:
    lines = [line.rstrip() for line in textwrap.dedent(text.replace("\r\n", "\n")).strip().splitlines()]
    return "\n".join(line for line in lines if line)


def notebook_ran(root: Path, rel: str) -> bool:
    """Whether a notebook file of the run has executed code cells (an execution count or outputs).

    The file is read without following links below ``root`` and decoded with bounded nesting;
    one that cannot be read counts as not run.
    """
    try:
        info = os.lstat(root / rel)
        if not stat.S_ISREG(info.st_mode) or info.st_size > RunLayout.MAX_FILE_BYTES:
            return False
        data = untrusted_json.loads(read_run_file(root, rel, max_bytes=RunLayout.MAX_FILE_BYTES))
    except (OSError, ValueError):
        return False
    cells = data.get("cells") if isinstance(data, dict) else None
    if cells is None and isinstance(data, dict):  # nbformat 3 keeps cells in worksheets
        cells = [c for ws in data.get("worksheets") or [] if isinstance(ws, dict) for c in ws.get("cells") or []]
    for cell in cells or []:
        if isinstance(cell, dict) and cell.get("cell_type") == "code":
            if cell.get("execution_count") or cell.get("prompt_number") or cell.get("outputs"):
                return True
    return False


def last_mention(name: str, events: list[LogEvent]) -> tuple[str, int] | None:
    """``(log path, offset)`` of the last agent action that names ``name`` (a script file)."""
    pattern = re.compile(r"(?<![\w.-])" + re.escape(name) + r"(?![\w-])")
    last = None
    for event in events:
        if name in event.text and pattern.search(event.text):
            last = (event.span.path, event.span.start_byte)
    return last


def targets_submission(site: WriteSite) -> bool:
    if site.kind == "script-argument":
        # Only a path passed to a script, not any argument that mentions the word.
        return bool(SUBMISSION_TARGET.search(site.target)) and ("/" in site.target or site.target.endswith(".csv"))
    return bool(SUBMISSION_TARGET.search(site.resolved))


def data_rows(head: CsvHead) -> set[str]:
    return {line.strip() for line in head.lines if len(line.strip()) >= _MIN_ROW_CHARS}


def count_typed_rows(text: str, rows: set[str]) -> tuple[int, int, int]:
    """How many distinct submission rows ``text`` contains verbatim, and where the first is.

    Returns ``(count, start, end)``; ``start``/``end`` are offsets of the first matching line in
    ``text`` (or of the text holding it, when escaped newlines had to be decoded).
    """
    decoded = text.replace("\\r\\n", "\n").replace("\\n", "\n") if "\\n" in text else text
    found: list[str] = []
    seen: set[str] = set()
    for line in decoded.splitlines():
        candidates = {line.strip().strip("'\",")}
        candidates.update(m.group(0).strip(",") for m in _ROW_TOKEN.finditer(line) if "," in m.group(0))
        hits = sorted((candidates & rows) - seen)
        seen.update(hits)
        found.extend(hits)
    if not found:
        return 0, -1, -1
    # Locate the first row in the original text (escaped rows sit on one line there).
    start = text.find(found[0])
    if start < 0:
        return len(found), 0, len(text)
    return len(found), start, start + len(found[0])


def printed_counts(ctx: RunContext) -> list[int]:
    counts = []
    for event in ctx.log_events:
        if event.kind is LogEventKind.OUTPUT and "submission.csv" in event.text:
            counts.extend(int(m.group(1)) for m in _WC_LINE.finditer(event.text))
    return counts


def printed_headers(ctx: RunContext) -> list[tuple[LogEvent, str]]:
    """Header lines the logs print for the submission (output of ``head ... submission.csv``)."""
    printed = []
    events = ctx.log_events
    for i, event in enumerate(events[:-1]):
        if event.kind is not LogEventKind.COMMAND or not re.search(r"\bhead\b", event.text):
            continue
        if not re.search(r"(?<!sample_)submission\.csv", event.text):
            continue
        nxt = events[i + 1]
        if nxt.kind is not LogEventKind.OUTPUT or nxt.span.path != event.span.path:
            continue
        for line in nxt.text.splitlines():
            # The first CSV-looking line; `{"result": ...}` replies and blank lines come first at times.
            if "," in line and not line.lstrip().startswith(("{", "[")):
                printed.append((nxt, line.strip()))
                break
    return printed


def cut_logs(ctx: RunContext) -> str | None:
    """Why the run's logs are known to be incomplete, or ``None``: a log the loader read only in
    part (larger than ``RunLayout.MAX_LOG_BYTES`` on disk), or a code block a log ends inside."""
    cut = next((event for event in ctx.log_events if is_cut_short(event)), None)
    if cut is not None:
        return (f"{cut.span.path} ends inside the code block opened at line {cut.span.start_line} "
                "(the log is cut short)")
    root = Path(ctx.root)
    for path in dict.fromkeys(event.span.path.split("!/", 1)[0] for event in ctx.log_events):
        try:
            info = os.lstat(root / path)
        except (OSError, ValueError):
            continue
        if stat.S_ISREG(info.st_mode) and info.st_size > RunLayout.MAX_LOG_BYTES:
            return (f"{path} is {info.st_size} bytes and only its first {RunLayout.MAX_LOG_BYTES} were read "
                    "(the log cap)")
    return None
