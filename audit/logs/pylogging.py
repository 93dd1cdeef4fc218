"""Python ``logging`` records, as multi-agent scaffolds such as AutoKaggle write their run log.

A record is ``2024-10-20 22:00:39,703 - agents.developer - INFO - message`` (the ``logging``
format ``%(asctime)s - %(name)s - %(levelname)s - %(message)s``); lines without that prefix
(a traceback, a multi-line message) belong to the record before them. Every record becomes one
OUTPUT event whose ``role`` is the logger name: what a scaffold logs about its agents (which
model each agent uses, which phase runs, whether generated code passed its unit tests) is the
scaffold's own trace, not code the agent ran, so rules that look for commands do not fire on it
(the same reading as MLE-bench's ``run.log``). A command or code typed at a prompt inside a
record (``$ python train.py``, ``user@host:~$ ls``, ``>>> import os``; see
:func:`mleaudit.audit.logs.prompts.match_prompt`) is a COMMAND or CODE event of its own with the record's
role; the text around it stays OUTPUT. Spans cover each message exactly (the prefix is left out),
and every event's text is its span's slice of the file.
"""

from __future__ import annotations

import re

from mleaudit.audit.logs.common import EventList, SpanMaker, lines_start_with
from mleaudit.audit.logs.prompts import find_prompts
from mleaudit.audit.units import LogEvent, LogEventKind

__all__ = ["NAME", "detect", "read_events"]

NAME = "pylogging"

_LEVELS = "DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL|FATAL|NOTSET"
_RECORD = re.compile(
    r"^\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[,.]\d+)? - ([\w.<>:/-]+) - (?:" + _LEVELS + r") - ?",
    re.MULTILINE,
)


def detect(path: str, text: str) -> bool:
    """At least three of the first five non-blank lines are ``time - logger - LEVEL - `` records."""
    return lines_start_with(text, _RECORD)


def read_events(path: str, text: str, notes: list[str] | None = None) -> list[LogEvent]:
    """One OUTPUT event per record (continuation lines included), split around typed commands.

    Parameters
    ----------
    path : str
        The log's POSIX path relative to the run root.
    text : str
        The whole file text.
    notes : list of str, optional
        Unused (every line of a text log is read).

    Returns
    -------
    list of LogEvent
        Indexed from 0; ``role`` is the logger name; each text equals its span's slice. OUTPUT
        events, and COMMAND/CODE events for what was typed at a prompt.
    """
    spans = SpanMaker(text, path)
    events = EventList()

    def piece(kind: LogEventKind, start: int, end: int, role: str, language: str | None = None) -> None:
        while end > start and text[end - 1] in " \t\r\n":
            end -= 1
        while start < end and text[start] in "\r\n":
            start += 1
        if end > start:
            events.append(LogEvent(index=len(events), kind=kind, text=text[start:end], span=spans.span(start, end),
                                   role=role, language=language))

    def add(start: int, end: int, role: str) -> None:
        plain_from = start
        for hit in find_prompts(text, start, end):
            piece(LogEventKind.OUTPUT, plain_from, hit.line_start, role)
            piece(hit.kind, hit.start, hit.end, role, hit.language)
            plain_from = hit.end
        piece(LogEventKind.OUTPUT, plain_from, end, role)

    matches = _RECORD.finditer(text)
    current = next(matches, None)
    if current is None:
        add(0, len(text), "")
        return events
    add(0, current.start(), "")
    for following in matches:
        add(current.end(), following.start(), current.group(1))
        current = following
    add(current.end(), len(text), current.group(1))
    return events
