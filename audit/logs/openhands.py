"""OpenHands / CodeAct event streams: a JSON list of action and observation events.

Actions (``"action"`` key) carry ``args`` (an object, or the same object as a JSON string):
``run`` gives a COMMAND (``args.command``), ``run_ipython`` a CODE event (``args.code``,
IPython: may hold ``!``/``%`` lines), ``write``/``edit`` a CODE event for ``.py``/``.sh``
targets (``args.content``) or a TOOL_CALL for other files (the written text), ``message`` and
``finish`` a MESSAGE. A ``run``/``run_ipython`` whose arguments are nested or named otherwise,
and any other action, are read with the shared key vocabulary (:mod:`mleaudit.audit.logs.keys`): what
they run gives COMMAND/CODE events, and any other action is also a TOOL_CALL
``action(args)`` with its ``args`` object as written in the file. A non-empty ``args.thought``
comes first as a MESSAGE. Observations (``"observation"`` key) give OUTPUT from ``content``,
and the command or code their ``extras`` echo (``extras.command``, ``extras.code``) when no
action of the list gave the same text. A record that is neither is read as a MESSAGE (its
``message``/``content``, else all its strings); a record of another shape that gives no event
(a SWE-agent step, whose ``action`` is the command itself) gives what its action runs and all its
text, and a string among the records a MESSAGE. ``role`` is the event's ``source``; the actor
is the AGENT for ``agent`` and ``environment`` events (the agent's actions and their output),
the OPERATOR for ``user`` messages, else UNKNOWN. Every event list of the document is read:
a top-level list, or each member that is one (``history``, ``events``, a delegate's list under
any other key), in that order.

Spans point inside the quotes of the JSON string the text was decoded from (exact region;
escapes make the raw text differ), falling back to the first line of the event's record;
``location`` is the record's place in the list and the field (``[12].args.command``). A list
cut short is read up to the break, which is reported.
"""

from __future__ import annotations

import logging
import re
from pathlib import PurePosixPath
from typing import Any

from mleaudit.audit.logs.common import EventList, SpanMaker
from mleaudit.audit.logs.jsonregions import (
    json_members_partial,
    json_value_regions,
    load_json,
    loads_json,
    string_content,
)
from mleaudit.audit.logs.jsonl import record_events
from mleaudit.audit.logs.keys import KEYS
from mleaudit.audit.logs.toolcalls import call_actions, call_text
from mleaudit.audit.logs.trajectory import action_events
from mleaudit.audit.units import Actor, LogEvent, LogEventKind

__all__ = ["NAME", "detect", "read_events"]

logger = logging.getLogger(__name__)

NAME = "openhands"

_WRAPPERS = ("history", "events")
_ACTORS = {"agent": Actor.AGENT, "environment": Actor.AGENT, "user": Actor.OPERATOR}
_WRITTEN_SUFFIXES = {".py": "python", ".sh": "bash", ".bash": "bash"}


#: An OpenHands action or observation name (``run``, ``run_ipython``, ``read``): a SWE-agent step's
#: ``action`` is the command itself and its ``observation`` the command's output.
_EVENT_NAME = re.compile(r"[a-z][a-z0-9_]{0,63}")


def _is_event_record(item: dict) -> bool:
    """An OpenHands action (a named ``action`` with ``args``) or observation (a named
    ``observation`` with its ``content`` or ``extras``)."""
    action, observation = item.get("action"), item.get("observation")
    if isinstance(action, str) and _EVENT_NAME.fullmatch(action):
        return isinstance(item.get("args"), (dict, str))
    return (isinstance(observation, str) and _EVENT_NAME.fullmatch(observation) is not None
            and ("content" in item or "extras" in item))


def _is_event_list(items: Any) -> bool:
    if not isinstance(items, list):
        return False
    return any(_is_event_record(item) for item in items if isinstance(item, dict))


def _event_lists(data: Any) -> list[tuple[list[Any], str | None]]:
    """Every event list of the document: the document itself, or each member that is one
    (``history`` and ``events`` first, then any other key, e.g. a delegate's events)."""
    if isinstance(data, list):
        return [(data, None)] if _is_event_list(data) else []
    if not isinstance(data, dict):
        return []
    keys = [k for k in _WRAPPERS if k in data] + [k for k in data if k not in _WRAPPERS]
    return [(data[k], k) for k in keys if isinstance(k, str) and _is_event_list(data[k])]


def _event_list(data: Any) -> tuple[list[Any], str | None] | None:
    found = _event_lists(data)
    return found[0] if found else None


def detect(path: str, text: str) -> bool:
    """A JSON list of OpenHands action or observation records (or an object with such lists)."""
    if text.lstrip()[:1] not in ("[", "{") or ('"action"' not in text and '"observation"' not in text):
        return False
    if PurePosixPath(path).suffix.lower() not in (".json", ""):
        return False
    return bool(_event_lists(load_json(text)[0]))


def _regions(text: str, wrapper: str | None) -> list[tuple[int, int, Any]]:
    start = len(text) - len(text.lstrip())
    if wrapper is None:
        return json_value_regions(text, start)[0]
    members = json_members_partial(text, start)
    if wrapper not in members:
        return []
    return json_value_regions(text, members[wrapper][0])[0]


def _strings(value: Any, out: list[str], depth: int = 0) -> None:
    if depth > 16 or len(out) > 1000:
        return
    if isinstance(value, str):
        if value.strip():
            out.append(value)
    elif isinstance(value, dict):
        for key, item in value.items():
            if key not in ("id", "timestamp", "source", "cause", "hidden"):
                _strings(item, out, depth + 1)
    elif isinstance(value, list):
        for item in value:
            _strings(item, out, depth + 1)


def read_events(path: str, text: str, notes: list[str] | None = None) -> list[LogEvent]:
    """Events of an OpenHands event list, in file order (see the module docstring).

    Parameters
    ----------
    path : str
        The log's POSIX path relative to the run root.
    text : str
        The file's JSON text; a list cut short is read up to the break.
    notes : list of str, optional
        Receives a sentence on what was not read (where the JSON broke).

    Returns
    -------
    list of LogEvent
        Indexed from 0 across the file (not the OpenHands ``id``; the span's line locates it).

    Raises
    ------
    ValueError
        If the text is not JSON or not an event list.
    """
    data, broke = load_json(text)
    lists = _event_lists(data)
    if not lists:
        raise ValueError(f"{path}: not an OpenHands event list")
    spans = SpanMaker(text, path)
    events = EventList()
    read = 0
    for items, wrapper in lists:
        read += len(items)
        _list_events(text, spans, events, items, wrapper)
    if broke is not None and notes is not None:
        notes.append(f"JSON cut short or damaged at {broke.describe()}; read {read} event record(s) up to there")
    return events


def _list_events(text: str, spans: SpanMaker, events: EventList, items: list[Any], wrapper: str | None) -> None:
    """Events of one event list (``wrapper`` is its key in the document, ``None`` for a bare list)."""
    prefix = wrapper or ""
    regions = _regions(text, wrapper)
    if len(regions) != len(items):
        regions = []
    emitted: set[str] = set()

    for number, item in enumerate(items):
        if not isinstance(item, dict):
            # A string or list among the records: its text is still read.
            strings: list[str] = []
            _strings(item, strings)
            if strings:
                located = regions[number][:2] if regions else None
                span = spans.span(*located) if located is not None else spans.line_span(0)
                events.append(LogEvent(index=len(events), kind=LogEventKind.MESSAGE, text="\n".join(strings),
                                       span=span, location=f"{prefix}[{number}]", actor=Actor.UNKNOWN))
            continue
        before = len(events)
        record_start = regions[number][0] if regions else 0
        members: dict[str, tuple[int, int]] = {}
        args_members: dict[str, tuple[int, int]] = {}
        if regions:
            members = json_members_partial(text, record_start)
            if "args" in members and text[members["args"][0]] == "{":
                args_members = json_members_partial(text, members["args"][0])
        role = item.get("source") if isinstance(item.get("source"), str) else ""
        actor = _ACTORS.get(role.lower(), Actor.UNKNOWN)
        where = f"{prefix}[{number}]"

        def emit(kind: LogEventKind, body: Any, region: tuple[int, int] | None, language: str | None = None,
                 field: str = "", *, exact_region: bool = False) -> None:
            if not isinstance(body, str) or not body.strip():
                return
            if exact_region and region is not None:
                span = spans.span(*region)
            else:
                located = string_content(text, region)
                span = spans.span(*located) if located is not None else spans.line_span(record_start)
            if kind in (LogEventKind.COMMAND, LogEventKind.CODE):
                emitted.add(body)
            events.append(LogEvent(index=len(events), kind=kind, text=body, span=span, language=language, role=role,
                                   location=f"{where}.{field}" if field else where, actor=actor))

        raw_args = item.get("args")
        args: dict[str, Any] = raw_args if isinstance(raw_args, dict) else {}
        if isinstance(raw_args, str):  # arguments kept as a JSON string
            try:
                decoded = loads_json(raw_args)
            except (ValueError, RecursionError):
                decoded = None
            if isinstance(decoded, dict):
                args = decoded
                # Values come from inside a string: every event points at that string.
                args_members = {key: members["args"] for key in args} if "args" in members else {}
        action = item.get("action")
        if isinstance(action, str):
            if action not in ("message", "finish"):
                emit(LogEventKind.MESSAGE, args.get("thought"), args_members.get("thought"), field="args.thought")
            found = _action_events(action, args)
            if found is not None:
                for kind, key, language in found:
                    emit(kind, _value(args, key), args_members.get(key.split(".")[0]), language, f"args.{key}")
            elif action == "message":
                if _parts_text(args.get("content")):
                    emit(LogEventKind.MESSAGE, _parts_text(args["content"]), args_members.get("content"),
                         field="args.content")
                else:
                    emit(LogEventKind.MESSAGE, item.get("message"), members.get("message"), field="message")
            elif action == "finish":
                keys = ("final_thought", "thought", "outputs")
                key = next((k for k in keys if isinstance(args.get(k), str) and args[k].strip()), None)
                if key is not None:
                    emit(LogEventKind.MESSAGE, args[key], args_members.get(key), field=f"args.{key}")
                else:
                    emit(LogEventKind.MESSAGE, item.get("message"), members.get("message"), field="message")
            else:
                # Any other tool: what its arguments run, and the call itself, named.
                for action_found in call_actions(args, action):
                    emit(action_found.kind, action_found.text, members.get("args"), action_found.language, "args")
                if "args" in members and isinstance(raw_args, dict):
                    start, end = members["args"]
                    emit(LogEventKind.TOOL_CALL, call_text(action, args, text[start:end]), (start, end), field="args",
                         exact_region=True)
                elif raw_args is not None:
                    emit(LogEventKind.TOOL_CALL, call_text(action, raw_args), members.get("args"), field="args")
        elif "observation" in item:
            emit(LogEventKind.OUTPUT, _parts_text(item.get("content")), members.get("content"), field="content")
            extras = item.get("extras") if isinstance(item.get("extras"), dict) else {}
            extras_members = (json_members_partial(text, members["extras"][0])
                              if "extras" in members and text[members["extras"][0]] == "{" else {})
            # The command or code the observation answers, when its action was not logged.
            for found_action in call_actions({k: v for k, v in extras.items() if k in KEYS}, str(item["observation"])):
                if found_action.text not in emitted:
                    key = next((k for k, v in extras.items() if v == found_action.text), "")
                    emit(found_action.kind, found_action.text, extras_members.get(key), found_action.language,
                         f"extras.{key}" if key else "extras")
        else:
            # Neither an action nor an observation: its text is still read, and what it holds in the
            # shapes of a chat log (tool calls, command and code keys: mleaudit.audit.logs.jsonl).
            if isinstance(item.get("message"), str) or isinstance(item.get("content"), str):
                key = "message" if isinstance(item.get("message"), str) else "content"
                emit(LogEventKind.MESSAGE, item[key], members.get(key), field=key)
            said = {event.text for event in events[before:]}
            found_in_record = [found for found in record_events(item) if found[1] not in said]
            for kind, body, language, _ in found_in_record:
                emit(kind, body, None, language)
            if len(events) == before:
                strings = []
                _strings(item, strings)
                emit(LogEventKind.MESSAGE, "\n".join(strings), None)
        if len(events) == before and not _is_event_record(item):
            # A record of another shape that gave no event (a SWE-agent step, whose ``action`` is
            # the command itself): what its action runs, then all its text.
            found = action_events(item) or []
            for hit in found:
                emit(hit.kind, hit.text, members.get("action"), hit.language, "action")
            strings = []
            _strings({k: v for k, v in item.items() if not (found and k == "action")}, strings)
            emit(LogEventKind.MESSAGE, "\n".join(strings), None)


def _parts_text(value: Any) -> str | None:
    """A content's text: the string itself, or the texts of a list of parts (``[{"type": "text",
    "text": ...}]``, as newer OpenHands versions and the LLM APIs write it) joined by line breaks."""
    if isinstance(value, str) or not isinstance(value, list):
        return value if isinstance(value, str) else None
    texts = []
    for part in value:
        if isinstance(part, dict):
            part = part.get("text", part.get("content"))
            part = part.get("value") if isinstance(part, dict) else part
        if isinstance(part, str) and part.strip():
            texts.append(part)
    return "\n".join(texts) or None


def _value(args: dict[str, Any], key: str) -> Any:
    value: Any = args
    for part in key.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return value


def _action_events(action: str, args: dict[str, Any]) -> list[tuple[LogEventKind, str, str | None]] | None:
    """``(kind, args key, language)`` of the events of a known action, or ``None`` for other actions.

    ``run`` and ``run_ipython`` read their command or code, and fall back to the shared key
    vocabulary (:mod:`mleaudit.audit.logs.keys`) when the arguments are nested or named otherwise.
    """
    if action == "run":
        if isinstance(args.get("command"), str):
            return [(LogEventKind.COMMAND, "command", "bash")]
    elif action == "run_ipython":
        if isinstance(args.get("code"), str):
            return [(LogEventKind.CODE, "code", "python")]
    elif action in ("write", "edit"):
        target = str(next((args[k] for k in ("path", "file_path", "filename", "file", "target")
                           if isinstance(args.get(k), str)), ""))
        language = _WRITTEN_SUFFIXES.get(PurePosixPath(target).suffix.lower())
        # Every written text: OpenHands' editor sends ``content: ""`` beside the ``file_text`` it writes.
        keys = [k for k in ("content", "file_text", "new_str", "text")
                if isinstance(args.get(k), str) and args[k].strip()]
        if keys:
            return [(LogEventKind.CODE if language else LogEventKind.TOOL_CALL, key, language) for key in keys]
    else:
        return None
    # A known action whose arguments are shaped otherwise: read them with the vocabulary.
    found = []
    for key in _flat_keys(args):
        for hit in call_actions({key.split(".")[-1]: _value(args, key)}, "bash" if action == "run" else
                                ("python" if action == "run_ipython" else action)):
            found.append((hit.kind, key, hit.language))
            break
    return found or None


def _flat_keys(args: dict[str, Any], prefix: str = "", depth: int = 0) -> list[str]:
    """Dotted paths of the vocabulary keys in nested arguments (``kwargs.command``)."""
    keys = []
    for key, value in args.items():
        if not isinstance(key, str) or depth > 4:
            continue
        path = f"{prefix}{key}"
        if key.lower() in KEYS and isinstance(value, str):
            keys.append(path)
        elif isinstance(value, dict):
            keys.extend(_flat_keys(value, f"{path}.", depth + 1))
    return keys
