"""Generic JSONL event streams: one JSON object per line.

Each record may give its kind in ``type`` (or ``kind``/``event``) and its text in ``content``
(a string, or a list of text/tool parts as chat APIs write it), or carry the text under a key
that names the kind: ``command``/``cmd`` (COMMAND), ``code`` (CODE), ``output``/
``observation``/``result`` (OUTPUT), ``message``/``text``/``thought`` (MESSAGE). Tool calls in
the OpenAI shape (``tool_calls[].function.arguments``, a JSON string) and the Anthropic shape
(``content[]`` parts of type ``tool_use`` with ``input``) become COMMAND when their arguments
hold ``cmd``/``command``, CODE when they hold ``code``, else TOOL_CALL. A record with role
``tool`` (or ``function``) is OUTPUT unless its type says otherwise.

Lines that are not JSON objects (a record cut short when the run was killed, junk) or that nest
deeper than :data:`~grading.untrusted_json.MAX_JSON_DEPTH` levels are skipped, never fatal, and
reported with their line numbers. Every event's span is its record's
line (the text is decoded from JSON, so it is not a verbatim slice of the file); ``location``
is ``line N``.
"""

from __future__ import annotations

import json
import logging
import shlex
from pathlib import PurePosixPath
from typing import Any

from audit.logs.common import EventList, SpanMaker, guess_code_language, loads_json
from audit.units import LogEvent, LogEventKind

__all__ = ["NAME", "detect", "read_events"]

logger = logging.getLogger(__name__)

NAME = "jsonl"

_TYPE_KINDS = {
    "command": LogEventKind.COMMAND, "bash": LogEventKind.COMMAND, "shell": LogEventKind.COMMAND,
    "cmd": LogEventKind.COMMAND, "run": LogEventKind.COMMAND,
    "code": LogEventKind.CODE, "python": LogEventKind.CODE, "ipython": LogEventKind.CODE,
    "run_ipython": LogEventKind.CODE,
    "output": LogEventKind.OUTPUT, "observation": LogEventKind.OUTPUT, "result": LogEventKind.OUTPUT,
    "tool_result": LogEventKind.OUTPUT, "stdout": LogEventKind.OUTPUT, "stderr": LogEventKind.OUTPUT,
    "function_call_output": LogEventKind.OUTPUT,
    "message": LogEventKind.MESSAGE, "text": LogEventKind.MESSAGE, "thought": LogEventKind.MESSAGE,
    "reasoning": LogEventKind.MESSAGE, "assistant": LogEventKind.MESSAGE, "user": LogEventKind.MESSAGE,
    "system": LogEventKind.MESSAGE,
    "tool_call": LogEventKind.TOOL_CALL, "tool_use": LogEventKind.TOOL_CALL, "action": LogEventKind.TOOL_CALL,
    "function_call": LogEventKind.TOOL_CALL,
}  # fmt: skip
#: Keys that carry text of a known kind when a record has no ``type``, in priority order.
_KEY_KINDS = (
    ("command", LogEventKind.COMMAND), ("cmd", LogEventKind.COMMAND),
    ("code", LogEventKind.CODE),
    ("output", LogEventKind.OUTPUT), ("observation", LogEventKind.OUTPUT), ("result", LogEventKind.OUTPUT),
    ("message", LogEventKind.MESSAGE), ("text", LogEventKind.MESSAGE), ("thought", LogEventKind.MESSAGE),
)  # fmt: skip
_TEXT_KEYS = ("content", "text", "command", "cmd", "code", "output", "observation", "result", "message")
_SHELLS = frozenset({"bash", "sh", "zsh", "/bin/bash", "/bin/sh", "/usr/bin/bash"})


def detect(path: str, text: str) -> bool:
    """A ``.jsonl``/``.ndjson`` file, or a text whose first two non-blank lines are JSON objects."""
    if PurePosixPath(path).suffix.lower() in (".jsonl", ".ndjson"):
        return True
    seen = 0
    for line in text[:1_000_000].splitlines():
        if not line.strip():
            continue
        try:
            value = loads_json(line)
        except ValueError:
            return False
        if not isinstance(value, dict):
            return False
        seen += 1
        if seen == 2:
            return True
    return False


def _as_text(value: Any) -> str | None:
    """Text of a content value: a string, or the text parts of a list of chat content parts."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        parts = []
        for part in value:
            if isinstance(part, str):
                parts.append(part)
            elif isinstance(part, dict) and part.get("type") in (None, "text", "output_text", "input_text"):
                if isinstance(part.get("text"), str):
                    parts.append(part["text"])
        return "\n".join(parts) if parts else None
    return None


def _command_text(value: Any) -> str | None:
    """A command given as a string, or as an argv list (``["bash", "-lc", "ls"]`` gives ``ls``)."""
    if isinstance(value, str):
        return value
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        if len(value) >= 3 and value[0] in _SHELLS and value[1] in ("-c", "-lc"):
            return value[2]
        return shlex.join(value)
    return None


def _from_arguments(arguments: Any) -> tuple[LogEventKind, str, str | None]:
    """Kind, text and language of a tool call's arguments."""
    if isinstance(arguments, str):
        try:
            parsed = loads_json(arguments)
        except ValueError:
            return LogEventKind.TOOL_CALL, arguments, None
        arguments = parsed
    if isinstance(arguments, dict):
        for key in ("cmd", "command"):
            command = _command_text(arguments.get(key))
            if command is not None:
                return LogEventKind.COMMAND, command, "bash"
        for key in ("code", "source"):
            if isinstance(arguments.get(key), str):
                return LogEventKind.CODE, arguments[key], guess_code_language(arguments[key])
    return LogEventKind.TOOL_CALL, json.dumps(arguments, sort_keys=True, ensure_ascii=False), None


def _record_events(record: dict[str, Any]) -> list[tuple[LogEventKind, str, str | None, str]]:
    """``(kind, text, language, role)`` for each event one record holds."""
    role = record.get("role") if isinstance(record.get("role"), str) else ""
    role = role or (record.get("source") if isinstance(record.get("source"), str) else "")
    found: list[tuple[LogEventKind, str, str | None, str]] = []

    def add(kind: LogEventKind, text: str | None, language: str | None = None) -> None:
        if text is None or not text.strip():
            return
        if kind is LogEventKind.COMMAND:
            language = "bash"
        elif kind is LogEventKind.CODE:
            language = language or guess_code_language(text)
        found.append((kind, text, language, role))

    type_value = next((record[k] for k in ("type", "kind", "event") if isinstance(record.get(k), str)), None)
    kind = _TYPE_KINDS.get(type_value.lower()) if type_value else None
    if kind is not None:
        text = next((t for t in (_as_text(record.get(k)) for k in _TEXT_KEYS) if t is not None), None)
        if kind is LogEventKind.COMMAND:
            text = next((t for t in (_command_text(record.get(k)) for k in ("command", "cmd")) if t), text)
        if kind is LogEventKind.TOOL_CALL:
            arguments = record.get("arguments", record.get("input", record.get("args")))
            if arguments is not None:
                kind, text, language = _from_arguments(arguments)
                add(kind, text, language)
                return found
        add(kind, text)
    else:
        for key, key_kind in _KEY_KINDS:
            value = _command_text(record.get(key)) if key_kind is LogEventKind.COMMAND else _as_text(record.get(key))
            if value is not None:
                add(key_kind, value)
                break
        else:
            content = record.get("content")
            content_kind = LogEventKind.OUTPUT if role in ("tool", "function", "ipython") else LogEventKind.MESSAGE
            add(content_kind, _as_text(content))

    # Tool calls and tool-use parts ride along with a message's text.
    for call in record.get("tool_calls") or ():
        if isinstance(call, dict):
            function = call.get("function") if isinstance(call.get("function"), dict) else call
            kind, text, language = _from_arguments(function.get("arguments", function.get("input")))
            add(kind, text, language)
    content = record.get("content")
    if isinstance(content, list):
        for part in content:
            if not isinstance(part, dict):
                continue
            if part.get("type") == "tool_use":
                kind, text, language = _from_arguments(part.get("input"))
                add(kind, text, language)
            elif part.get("type") == "tool_result":
                add(LogEventKind.OUTPUT, _as_text(part.get("content")))
    return found


#: How many unreadable line numbers a note lists before it only counts them.
_LISTED_LINES = 5


def read_events(path: str, text: str, notes: list[str] | None = None) -> list[LogEvent]:
    """Events of a JSONL stream, in line order.

    Parameters
    ----------
    path : str
        The log's POSIX path relative to the run root.
    text : str
        The whole file text.
    notes : list of str, optional
        Receives one sentence listing the lines that are not JSON objects, if any.

    Returns
    -------
    list of LogEvent
        Indexed from 0 across the file; a record may give several events (a message and its
        tool calls), all spanning the record's line. ``role`` is the record's ``role``
        (or ``source``).
    """
    spans = SpanMaker(text, path)
    events = EventList()
    unread: list[int] = []
    too_deep: list[tuple[int, str]] = []
    pos = 0
    line_no = 0
    while pos <= len(text):
        end = text.find("\n", pos)
        end = len(text) if end == -1 else end
        line_no += 1
        line = text[pos:end]
        if line.strip():
            try:
                record = loads_json(line)
            except json.JSONDecodeError as exc:
                if exc.msg.startswith("nested "):
                    logger.info("%s:%d: skipping a line nested too deep", path, line_no)
                    too_deep.append((line_no, exc.msg))
                else:
                    logger.info("%s:%d: skipping a line that is not JSON (%s)", path, line_no, exc)
                    unread.append(line_no)
                record = None
            except (ValueError, RecursionError):
                logger.info("%s:%d: skipping a line that cannot be decoded", path, line_no)
                unread.append(line_no)
                record = None
            if isinstance(record, dict):
                stripped_end = pos + len(line.rstrip())
                span = spans.span(pos, stripped_end)
                for kind, body, language, role in _record_events(record):
                    events.append(
                        LogEvent(index=len(events), kind=kind, text=body, span=span, language=language, role=role,
                                 location=f"line {line_no}")
                    )
            elif record is not None:
                logger.info("%s:%d: skipping a JSON %s (not an object)", path, line_no, type(record).__name__)
                unread.append(line_no)
        pos = end + 1
    if notes is not None:
        for number, message in too_deep[:_LISTED_LINES]:
            notes.append(f"line {number} not read: JSON {message}")
        if len(too_deep) > _LISTED_LINES:
            rest = ", ".join(str(n) for n, _ in too_deep[_LISTED_LINES : 4 * _LISTED_LINES])
            more = " ..." if len(too_deep) > 4 * _LISTED_LINES else ""
            notes.append(f"{len(too_deep) - _LISTED_LINES} more line(s) not read, nested too deep: line {rest}{more}")
        if unread:
            listed = ", ".join(str(n) for n in unread[:_LISTED_LINES])
            more = f" and {len(unread) - _LISTED_LINES} more" if len(unread) > _LISTED_LINES else ""
            notes.append(f"{len(unread)} line(s) not read, not a JSON object (cut short or damaged): "
                         f"line {listed}{more}")
    return events
