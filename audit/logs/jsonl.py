"""Generic JSONL event streams: one JSON object per line.

Each record may give its kind in ``type`` (or ``kind``/``event``) and its text in ``content``
(a string, or a list of text/tool parts as chat APIs write it), or carry the text under a key
that names the kind: ``command``/``cmd`` (COMMAND), ``code`` (CODE), ``output``/
``observation``/``result`` (OUTPUT), ``message``/``text``/``thought`` (MESSAGE). Commands and code
under any other key of the shared vocabulary (:mod:`mleaudit.audit.logs.keys`: ``input``, ``script``,
``source``, ``args``, ``arguments``, ``tool_input``, ``action_input`` ...) are read too, and
tool calls in every shape the chat APIs write (OpenAI ``tool_calls[].function.arguments``, a
JSON object inside a string; the legacy ``function_call``; Anthropic ``tool_use`` parts with
``input``; Responses API ``function_call`` items; ReAct ``action``/``action_input``; LangChain
``tool``/``tool_input``; a message whose ``recipient`` is a tool, its ``content`` the
arguments) give COMMAND or CODE events for what they run, and a TOOL_CALL event
``name(arguments)`` for any tool that is not a plain shell or Python tool (``submit_to_kaggle``).
Calls a message prints as text (``functions.submit_to_kaggle({...})``,
:func:`mleaudit.audit.logs.toolcalls.call_expressions`) are read as calls too. A record with role ``tool``
(or ``function``) is OUTPUT unless its type says otherwise. A
record of a shape none of this reads is still one MESSAGE event holding its strings.

Actors come from the record's ``role`` (or ``source``): assistant, agent and tool records are the
AGENT's, user records the OPERATOR's, system and developer records the SCAFFOLD's
(:func:`mleaudit.audit.logs.keys.actor_for_role`).

Lines that are not JSON objects (a record cut short when the run was killed, junk) or that nest
deeper than :data:`~mleaudit.grading.untrusted_json.MAX_JSON_DEPTH` levels are skipped, never fatal, and
reported with their line numbers. Every event's span is its record's
line (the text is decoded from JSON, so it is not a verbatim slice of the file); ``location``
is ``line N``.
"""

from __future__ import annotations

import json
import logging
from pathlib import PurePosixPath
from typing import Any

from mleaudit.audit.logs.common import EventList, SpanMaker, guess_code_language
from mleaudit.audit.logs.jsonregions import loads_json
from mleaudit.audit.logs.keys import (
    ARGUMENT_KEYS,
    COMMAND_KEYS,
    KEYS,
    actor_for_event,
    actor_for_role,
    classify_text,
    command_text,
    is_generic_tool,
    tool_name,
)
from mleaudit.audit.logs.toolcalls import call_actions, call_expressions, call_text
from mleaudit.audit.units import LogEvent, LogEventKind

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
#: Keys whose string values label a record rather than carry text (left out of the fallback text).
_LABEL_KEYS = frozenset({"id", "type", "kind", "event", "role", "source", "ts", "timestamp", "time", "created",
                         "created_at", "date", "datetime", "model", "status", "object", "index", "step", "level",
                         "tool_call_id", "call_id", "run_id", "thread_id", "uuid", "parent_id"})
#: Recipients that are people or the conversation, not tools.
_NOT_TOOLS = frozenset({"all", "user", "assistant", "system", "developer", "human", "agent"})
#: Depth and number of values the fallback text of a record of unknown shape reads.
_FALLBACK_DEPTH = 32
_FALLBACK_VALUES = 10_000


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


#: Types of content parts that hold text (``None``: a part without a type).
_TEXT_PARTS = frozenset({None, "text", "output_text", "input_text", "thinking", "reasoning"})


def _as_text(value: Any) -> str | None:
    """Text of a content value: a string, or the text parts of a list of chat content parts."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and isinstance(value.get("parts"), list):  # Gemini's {"role", "parts"}
        value = value["parts"]
    if isinstance(value, list):
        parts = []
        for part in value:
            if isinstance(part, str):
                parts.append(part)
            elif isinstance(part, dict) and part.get("type") in _TEXT_PARTS:
                # {"text": "..."}, the Assistants API's {"text": {"value": "..."}}, Anthropic's {"thinking": "..."}
                text = part.get("text", part.get("thinking"))
                text = text.get("value") if isinstance(text, dict) else text
                if isinstance(text, str):
                    parts.append(text)
        return "\n".join(parts) if parts else None
    return None


def _command_text(value: Any) -> str | None:
    """A command given as a string, or as an argv list (``["bash", "-lc", "ls"]`` gives ``ls``)."""
    return command_text(value)


def _strings(value: Any, out: list[str], depth: int = 0) -> None:
    """Every non-blank string under ``value`` (label keys left out), in order, within bounds."""
    if len(out) >= _FALLBACK_VALUES or depth > _FALLBACK_DEPTH:
        return
    if isinstance(value, str):
        if value.strip():
            out.append(value)
    elif isinstance(value, dict):
        for key, item in value.items():
            if not (isinstance(key, str) and key.lower() in _LABEL_KEYS and isinstance(item, str)):
                _strings(item, out, depth + 1)
    elif isinstance(value, list):
        for item in value:
            _strings(item, out, depth + 1)


_Event = tuple[LogEventKind, str, "str | None", str]


#: Keys under which a record wraps the message or item it logs (Claude Code's ``message``,
#: Codex's ``payload``, the Responses API stream's ``item``, ``msg``, ``data``).
_ENVELOPE_KEYS = ("message", "payload", "item", "msg", "data", "response", "body", "completion")
#: Keys that make an object look like a message or an item of a chat API.
_MESSAGE_SHAPE = frozenset({"role", "content", "parts", "tool_calls", "function_call", "type", "arguments",
                            "output", "choices"})
#: Roles whose text is a tool's output.
_TOOL_ROLES = ("tool", "function", "ipython", "tool_result", "observation")
#: Types of content parts (Anthropic, OpenAI Responses) that hold a tool's output.
_RESULT_PARTS = frozenset({"tool_result", "function_call_output", "local_shell_call_output",
                           "custom_tool_call_output", "web_search_tool_result", "mcp_tool_result",
                           "code_execution_tool_result", "bash_code_execution_tool_result", "tool_output"})
#: Types of content parts that call a tool.
_CALL_PARTS = frozenset({"tool_use", "server_tool_use", "function_call", "tool_call", "custom_tool_call",
                         "mcp_tool_use", "mcp_call"})
#: Types of records that are themselves one item of a response (read like a content part).
_ITEM_TYPES = _RESULT_PARTS | {"local_shell_call", "code_interpreter_call"}
_ENVELOPE_DEPTH = 4


def _unwrap(record: dict[str, Any]) -> dict[str, Any]:
    """The record with the message or item it wraps merged in (inner keys win, ``role`` kept).

    ``{"type": "assistant", "message": {"role": "assistant", "content": [...]}}`` reads as the
    message itself; a record whose wrapper key holds a string (a plain ``message`` text) is
    left as it is.

    Examples
    --------
    >>> _unwrap({"type": "user", "message": {"role": "user", "content": "hi"}})["content"]
    'hi'
    """
    for _ in range(_ENVELOPE_DEPTH):
        key = next((k for k in _ENVELOPE_KEYS if isinstance(record.get(k), dict)
                    and _MESSAGE_SHAPE & set(record[k])), None)
        if key is None or any(isinstance(record.get(k), (str, list)) for k in ("content", "parts")):
            return record
        inner = record[key]
        merged = {k: v for k, v in record.items() if k != key}
        merged.update(inner)
        if "role" not in inner and isinstance(record.get("role"), str):
            merged["role"] = record["role"]
        record = merged
    return record


def _record_events(record: dict[str, Any]) -> list[_Event]:
    """``(kind, text, language, role)`` for each event one record holds.

    Nothing in a record is dropped silently: when none of the shapes below gives an event, the
    record's strings (labels such as ``id`` and ``ts`` left out) are one MESSAGE (OUTPUT for a
    tool's record), so the text rules still read them. A tool's output is the agent's even when
    it rides in a ``user`` message (Anthropic's ``tool_result`` parts): its role is ``tool``.
    """
    record = _unwrap(record)
    role = record.get("role") if isinstance(record.get("role"), str) else ""
    role = role or (record.get("source") if isinstance(record.get("source"), str) else "")
    found: list[_Event] = []
    seen: set[tuple[LogEventKind, str]] = set()

    def add(kind: LogEventKind, text: str | None, language: str | None = None, as_role: str | None = None) -> None:
        if text is None or not text.strip() or (kind, text) in seen:
            return
        if kind is LogEventKind.COMMAND:
            language = "bash"
        elif kind is LogEventKind.CODE:
            language = language or guess_code_language(text)
        seen.add((kind, text))
        if as_role is None and kind is LogEventKind.OUTPUT and role.strip().lower() not in _TOOL_ROLES:
            as_role = "tool"  # an output is what the agent's tool printed, whoever relays it
        found.append((kind, text, language, role if as_role is None else as_role))

    def call(name: str, arguments: Any) -> None:
        actions = call_actions(arguments, name)
        for action in actions:
            add(action.kind, action.text, action.language)
        if arguments is not None and (not actions or (name and not is_generic_tool(name))):
            add(LogEventKind.TOOL_CALL, call_text(name, arguments))

    type_value = next((record[k] for k in ("type", "kind", "event") if isinstance(record.get(k), str)), None)
    kind = _TYPE_KINDS.get(type_value.lower()) if type_value else None
    name = tool_name({k: v for k, v in record.items() if k not in ("type", "kind", "event")})
    consumed: set[str] = set()
    if kind is not None:
        text = next((t for t in (_as_text(record.get(k)) for k in _TEXT_KEYS) if t is not None), None)
        if kind is LogEventKind.COMMAND:
            text = next((t for t in (_command_text(record.get(k)) for k in COMMAND_KEYS) if t), text)
        if kind is LogEventKind.TOOL_CALL:
            key = next((k for k in ARGUMENT_KEYS if k in record), None)
            if key is not None:
                consumed.add(key)
                call(name, record[key])
            else:
                add(kind, call_text(name, text) if name and text else text)
        else:
            add(kind, text)
    else:
        for key, key_kind in _KEY_KINDS:
            value = _command_text(record.get(key)) if key_kind is LogEventKind.COMMAND else _as_text(record.get(key))
            if value is not None:
                add(key_kind, value)
        if not found:
            content = record.get("content", record.get("parts"))
            content_kind = LogEventKind.OUTPUT if role in ("tool", "function", "ipython") else LogEventKind.MESSAGE
            add(content_kind, _as_text(content))

    # Commands and code under any key of the vocabulary (mleaudit.audit.logs.keys), a call's arguments
    # included: {"tool": "bash", "tool_input": "ls"}, {"action": "python", "action_input": "..."}.
    vocabulary = {k: v for k, v in record.items() if isinstance(k, str) and k.lower() in KEYS and k not in consumed}
    arguments = {k: v for k, v in vocabulary.items() if KEYS[k.lower()] == "arguments"}
    if arguments and kind is not LogEventKind.TOOL_CALL:
        for key, value in arguments.items():
            if name or not isinstance(value, str) or classify_text(value) is not None:
                call(name, value)
    for action in call_actions({k: v for k, v in vocabulary.items() if KEYS[k.lower()] != "arguments"}, name):
        add(action.kind, action.text, action.language)
    # A message addressed to a tool, its content the call's arguments (``recipient``:
    # ``functions.submit_to_kaggle``, ``content``: ``{"file": ...}``).
    recipient = record.get("recipient")
    if (isinstance(recipient, str) and recipient.strip() and recipient.strip().lower() not in _NOT_TOOLS
            and isinstance(record.get("content"), (str, dict))):
        call(recipient.strip(), record["content"])
    # A nested action object (Codex's {"type": "local_shell_call", "action": {"command": [...]}}).
    if isinstance(record.get("action"), dict):
        call(tool_name(record["action"]) or str(record.get("type") or ""), record["action"])

    # A logged chat completion: each choice's message is read as a record of its own.
    choices = record.get("choices")
    for choice in choices[:100] if isinstance(choices, list) else ():
        message = choice.get("message", choice.get("delta")) if isinstance(choice, dict) else None
        if isinstance(message, dict):
            for kind_, text_, language_, role_ in _record_events(message):
                add(kind_, text_, language_, role_ or None)
    # Tool calls and tool-use parts ride along with a message's text.
    for entry in (record.get("tool_calls") if isinstance(record.get("tool_calls"), list) else ()):
        if isinstance(entry, dict):
            function = entry.get("function") if isinstance(entry.get("function"), dict) else entry
            arguments_value = next((function[k] for k in ARGUMENT_KEYS if k in function), None)
            call(tool_name(function), arguments_value)
    if isinstance(record.get("function_call"), dict):  # OpenAI's legacy single call
        function = record["function_call"]
        call(tool_name(function), next((function[k] for k in ARGUMENT_KEYS if k in function), None))
    content = record.get("content")
    if isinstance(content, dict) and isinstance(content.get("parts"), list):  # Gemini's {"content": {"parts"}}
        content = content["parts"]
    parts = [p for p in (content if isinstance(content, list) else [])
             + (record["parts"] if isinstance(record.get("parts"), list) else []) if isinstance(p, dict)]
    if isinstance(record.get("type"), str) and record["type"] in _ITEM_TYPES:
        parts.insert(0, record)  # a Responses API item logged as its own record
    if isinstance(record.get("output"), list):  # a logged Responses API object: its output items
        parts += [item for item in record["output"] if isinstance(item, dict)]
    for part in parts[:10_000]:
        _part_events(part, add, call)
    # Calls printed as text in a message: functions.submit_to_kaggle({"file": "..."}).
    for _, _, expression_name, expression_args in call_expressions("\n".join(
            text for kind_, text, _, _ in list(found) if kind_ in (LogEventKind.MESSAGE, LogEventKind.OUTPUT))):
        call(expression_name, expression_args)
    if not found:
        strings: list[str] = []
        _strings(record, strings)
        fallback_kind = LogEventKind.OUTPUT if role in ("tool", "function", "ipython") else LogEventKind.MESSAGE
        add(fallback_kind, "\n".join(strings) if strings else None)
    return found


def _output_text(value: Any, depth: int = 0) -> str | None:
    """A tool result's text: a string, a list of text blocks, or the strings of an object."""
    text = _as_text(value)
    if text is not None or value is None:
        return text
    strings: list[str] = []
    _strings(value, strings, depth)
    return "\n".join(strings) if strings else None


def record_events(record: dict[str, Any]) -> list[tuple[LogEventKind, str, str | None, str]]:
    """``(kind, text, language, role)`` of each event a chat or tool record holds, in the shapes of
    this module (messages, tool calls, content parts, command and code keys); its strings as one
    MESSAGE when none of them gives an event. For other readers that meet such a record."""
    return _record_events(record)


def _part_events(part: dict[str, Any], add, call) -> None:
    """Events of one content part: a tool call, a tool's result, code run by a hosted interpreter.

    Anthropic ``tool_use`` (``input``) and ``tool_result`` (``content`` a string or text
    blocks); OpenAI Responses ``function_call`` (``arguments``, JSON in a string),
    ``function_call_output``, ``local_shell_call`` (``action.command`` an argv list) and
    ``code_interpreter_call`` (``code``, ``outputs``); Gemini ``functionCall``
    (``name``, ``args``), ``functionResponse``, ``executableCode`` and ``codeExecutionResult``.
    """
    part_type = part.get("type") if isinstance(part.get("type"), str) else ""
    if part_type in _CALL_PARTS:
        call(tool_name(part), next((part[k] for k in ARGUMENT_KEYS if k in part), None))
    elif part_type in _RESULT_PARTS:
        add(LogEventKind.OUTPUT, _output_text(part.get("content", part.get("output"))))
    elif part_type == "local_shell_call" and isinstance(part.get("action"), dict):
        call("local_shell", part["action"])
    elif part_type == "code_interpreter_call":
        if isinstance(part.get("code"), str):
            add(LogEventKind.CODE, part["code"], "python")
        add(LogEventKind.OUTPUT, _output_text(part.get("outputs")))
    for key in ("functionCall", "function_call"):
        function = part.get(key)
        if isinstance(function, dict):
            call(tool_name(function), next((function[k] for k in ARGUMENT_KEYS if k in function), None))
    for key in ("functionResponse", "function_response"):
        response = part.get(key)
        if isinstance(response, dict):
            add(LogEventKind.OUTPUT, _output_text(response.get("response", response)))
    for key in ("executableCode", "executable_code"):
        executable = part.get(key)
        if isinstance(executable, dict) and isinstance(executable.get("code"), str):
            language = executable.get("language") if isinstance(executable.get("language"), str) else ""
            add(LogEventKind.CODE, executable["code"], "python" if "python" in language.lower() else None)
    for key in ("codeExecutionResult", "code_execution_result"):
        result = part.get(key)
        if isinstance(result, dict):
            add(LogEventKind.OUTPUT, _output_text(result.get("output")))


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
                                 location=f"line {line_no}", actor=actor_for_event(kind, actor_for_role(role)))
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
