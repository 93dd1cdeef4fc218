"""MLE-bench host logs (``run.log``): ``[time] [file.py:line] message`` lines.

The host log records what the harness did and, on ``[Container]`` lines, the agent container's
stdout: the ``start.sh`` trace, scaffold progress and sometimes the scaffold's own calls to its
LLM provider. None of it is agent-written code, so every line becomes an OUTPUT event (role
``container`` for container lines, ``host`` otherwise) rather than a COMMAND: rules that look
for commands must not fire on the harness's own trace (``+ cd /home/agent``, the ``set -x`` trace,
stays OUTPUT). A command typed at a prompt inside a line (``$ python train.py``, ``root@box:/# ls``;
see :func:`mleaudit.audit.logs.prompts.match_prompt`) is a COMMAND event of its own, with the line's role and
actor. Lines without the prefix (a traceback) join the line before them. Spans cover each message
exactly (the prefix is left out), and every event's text is its span's slice of the file.

Host lines are the harness's: their :class:`~mleaudit.audit.units.Actor` is the **operator**. Container
lines mix the scaffold's progress with what the agent's programs print, so they are left
``unknown`` (judged like the agent's).
"""

from __future__ import annotations

import re

from mleaudit.audit.logs.common import EventList, SpanMaker, lines_start_with
from mleaudit.audit.logs.prompts import find_prompts
from mleaudit.audit.units import Actor, LogEvent, LogEventKind

__all__ = ["NAME", "detect", "read_events"]

NAME = "runlog"

_LINE = re.compile(r"^\[\d{4}-\d\d-\d\d [\d:,.]+\] \[[\w.<>-]+:\d+\] (?:(\[Container\]) ?)?", re.MULTILINE)


def detect(path: str, text: str) -> bool:
    """At least three of the first five non-blank lines carry the ``[time] [file.py:N]`` prefix."""
    return lines_start_with(text, _LINE)


def read_events(path: str, text: str, notes: list[str] | None = None) -> list[LogEvent]:
    """One OUTPUT event per prefixed line (continuation lines included), in file order.

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
        Indexed from 0; ``role`` is ``"container"`` or ``"host"``; text equals the span's slice.
        OUTPUT events, and COMMAND/CODE events for what was typed at a prompt.
    """
    spans = SpanMaker(text, path)
    events = EventList()
    matches = list(_LINE.finditer(text))
    lead_end = matches[0].start() if matches else len(text)
    if text[:lead_end].strip():
        end = len(text[:lead_end].rstrip())
        start = len(text[:end]) - len(text[:end].lstrip())
        span = spans.span(start, end)
        events.append(LogEvent(index=0, kind=LogEventKind.OUTPUT, text=text[start:end], span=span, role="host",
                               actor=Actor.OPERATOR))
    for number, match in enumerate(matches):
        start = match.end()
        end = matches[number + 1].start() if number + 1 < len(matches) else len(text)
        while end > start and text[end - 1] in " \t\r\n":
            end -= 1
        if end <= start:
            continue
        role = "container" if match.group(1) else "host"
        actor = Actor.UNKNOWN if match.group(1) else Actor.OPERATOR
        plain_from = start
        for hit in find_prompts(text, start, end):
            _add(events, spans, LogEventKind.OUTPUT, plain_from, hit.line_start, role, actor)
            _add(events, spans, hit.kind, hit.start, hit.end, role, actor, hit.language)
            plain_from = hit.end
        _add(events, spans, LogEventKind.OUTPUT, plain_from, end, role, actor)
    return events


def _add(events: EventList, spans: SpanMaker, kind: LogEventKind, start: int, end: int, role: str, actor: Actor,
         language: str | None = None) -> None:
    """One event for ``[start, end)`` without its outer blank lines and trailing blanks; none when empty."""
    text = spans.text
    while end > start and text[end - 1] in " \t\r\n":
        end -= 1
    while start < end and text[start] in "\r\n":
        start += 1
    if end > start:
        events.append(LogEvent(index=len(events), kind=kind, text=text[start:end], span=spans.span(start, end),
                               role=role, actor=actor, language=language))
