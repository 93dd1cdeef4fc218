"""Scaffold step logs: THOUGHT/ACTION/OBSERVATION records and MLAgentBench-style step blocks.

Two styles are read:

- timestamped records (``2025-07-09 16:45:04,555 INFO agent: ACTION bash: ls``): a record runs
  until the next timestamped line. ``THOUGHT:`` gives a MESSAGE; ``ACTION bash:``/``shell:``
  a COMMAND; ``ACTION python:``/``ipython:`` a CODE event; ``ACTION write_file:`` (target path on
  its first line, content after) a CODE event for ``.py``/``.sh`` targets, else a TOOL_CALL;
  other actions a TOOL_CALL; ``OBSERVATION ...:`` an OUTPUT; other records a MESSAGE with
  role ``scaffold``.
- MLAgentBench-style blocks (``Thought:``, ``Action:``, ``Action Input:``, ``Observation:``
  fields, ``Step N`` headers): the action name and its input together give one TOOL_CALL, the
  observation (inside its ``` fence) an OUTPUT, the other fields a MESSAGE.

Every span covers exactly the event's text in the file. Who wrote each event
(:class:`~audit.units.Actor`): the agent's thoughts, actions and the observations its actions
returned are the **agent**'s; records without a THOUGHT/ACTION/OBSERVATION tag (the scaffold's
own progress lines, role ``scaffold``) the **scaffold**'s.
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath

from audit.logs.common import EventList, SpanMaker
from audit.units import Actor, LogEvent, LogEventKind

__all__ = ["NAME", "detect", "read_events"]

NAME = "steplog"

_RECORD = re.compile(r"^\d{4}-\d\d-\d\d[ T][\d:,.]+[ \t]+(?:[A-Z]+[ \t]+)?[\w.-]+:[ \t]", re.MULTILINE)
# Possessive runs: a tag line with no colon fails at once instead of trying every split (quadratic).
_REACT_TAG = re.compile(r"(THOUGHT|ACTION|OBSERVATION)\b[ \t]*+([\w.-]*+)[^:\n]*+:[ \t]?")
_REACT_DETECT = re.compile(
    r"^\d{4}-\d\d-\d\d[ T][\d:,.]+[ \t]+(?:[A-Z]+[ \t]+)?[\w.-]+:[ \t]+(?:THOUGHT|ACTION|OBSERVATION)\b", re.MULTILINE
)
_FIELD = re.compile(
    r"^(Reflection|Research Plan and Status|Fact Check|Thought|Action Input|Action|Observation|Final Answer):[ \t]?",
    re.MULTILINE,
)
_STEP_HEADER = re.compile(r"^Step \d+\b.*$", re.MULTILINE)
_SHELL_TOOLS = frozenset({"bash", "shell", "sh", "execute_bash", "run", "terminal"})
_PYTHON_TOOLS = frozenset({"python", "ipython", "execute_ipython", "run_ipython", "execute_python"})
_WRITE_TOOLS = frozenset({"write_file", "write", "create_file", "save_file"})
_CODE_SUFFIXES = {".py": "python", ".sh": "bash", ".bash": "bash"}


def detect(path: str, text: str) -> bool:
    """Timestamped THOUGHT/ACTION/OBSERVATION records, or ``Action:`` plus ``Action Input:`` fields."""
    head = text[:1_000_000]
    if _REACT_DETECT.search(head):
        return True
    has_action = re.search(r"^Action:", head, re.MULTILINE) is not None
    return has_action and re.search(r"^Action Input:", head, re.MULTILINE) is not None


def _trim(text: str, start: int, end: int) -> tuple[int, int]:
    while start < end and text[start] in " \t\r\n":
        start += 1
    while end > start and text[end - 1] in " \t\r\n":
        end -= 1
    return start, end


def _read_react(text: str, spans: SpanMaker) -> list[LogEvent]:
    events = EventList()

    def add(kind: LogEventKind, start: int, end: int, language: str | None = None, role: str = "") -> None:
        start, end = _trim(text, start, end)
        if end > start:
            span = spans.span(start, end)
            actor = Actor.SCAFFOLD if role == "scaffold" else Actor.AGENT
            events.append(LogEvent(index=len(events), kind=kind, text=text[start:end], span=span, language=language,
                                   role=role, actor=actor))

    records = list(_RECORD.finditer(text))
    for number, record in enumerate(records):
        body_start = record.end()
        body_end = records[number + 1].start() if number + 1 < len(records) else len(text)
        tag = _REACT_TAG.match(text, body_start)
        if tag is None:
            add(LogEventKind.MESSAGE, body_start, body_end, role="scaffold")
            continue
        start = tag.end()
        name, tool = tag.group(1), tag.group(2).lower()
        if name == "THOUGHT":
            add(LogEventKind.MESSAGE, start, body_end, role="assistant")
        elif name == "OBSERVATION":
            add(LogEventKind.OUTPUT, start, body_end, role="tool")
        elif tool in _SHELL_TOOLS:
            add(LogEventKind.COMMAND, start, body_end, "bash", "assistant")
        elif tool in _PYTHON_TOOLS:
            add(LogEventKind.CODE, start, body_end, "python", "assistant")
        elif tool in _WRITE_TOOLS:
            first_start, _ = _trim(text, start, body_end)
            line_end = text.find("\n", first_start, body_end)
            line_end = body_end if line_end == -1 else line_end
            target = text[first_start:line_end].strip()
            language = _CODE_SUFFIXES.get(PurePosixPath(target).suffix.lower())
            kind = LogEventKind.CODE if language else LogEventKind.TOOL_CALL
            add(kind, line_end + 1 if line_end < body_end else line_end, body_end, language, "assistant")
        else:
            add(LogEventKind.TOOL_CALL, start, body_end, role="assistant")
    return events


def _read_fields(text: str, spans: SpanMaker) -> list[LogEvent]:
    events = EventList()
    # Field labels and ``Step N`` headers both end the value before them.
    boundaries = sorted(
        [(m.start(), m.end(), m.group(1)) for m in _FIELD.finditer(text)]
        + [(m.start(), m.end(), None) for m in _STEP_HEADER.finditer(text)],
        key=lambda boundary: boundary[0],
    )
    number = 0
    while number < len(boundaries):
        _, value_start, name = boundaries[number]
        value_end = boundaries[number + 1][0] if number + 1 < len(boundaries) else len(text)
        number += 1
        if name is None:
            continue
        if name == "Action" and number < len(boundaries) and boundaries[number][2] == "Action Input":
            # The action and its input are one call.
            value_end = boundaries[number + 1][0] if number + 1 < len(boundaries) else len(text)
            number += 1
            kind = LogEventKind.TOOL_CALL
            start, end = _trim(text, value_start, value_end)
        elif name in ("Action", "Action Input"):
            kind = LogEventKind.TOOL_CALL
            start, end = _trim(text, value_start, value_end)
        elif name == "Observation":
            kind = LogEventKind.OUTPUT
            start, end = _trim(text, value_start, value_end)
            fence = re.match(r"```[^\n]*\n", text[start:end])
            if fence is not None:
                start += fence.end()
                if text[start:end].endswith("```"):
                    end -= 3
                start, end = _trim(text, start, end) if end > start else (start, start)
        else:
            kind = LogEventKind.MESSAGE
            start, end = _trim(text, value_start, value_end)
        if end > start:
            role = "tool" if kind is LogEventKind.OUTPUT else "assistant"
            span = spans.span(start, end)
            events.append(LogEvent(index=len(events), kind=kind, text=text[start:end], span=span, role=role,
                                   actor=Actor.AGENT))
    return events


def read_events(path: str, text: str, notes: list[str] | None = None) -> list[LogEvent]:
    """Events of a scaffold step log, in file order (see the module docstring).

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
        Indexed from 0; every ``text`` equals ``file_text[span.start_byte:span.end_byte]``.
    """
    spans = SpanMaker(text, path)
    if _REACT_DETECT.search(text[:1_000_000]):
        return _read_react(text, spans)
    return _read_fields(text, spans)
