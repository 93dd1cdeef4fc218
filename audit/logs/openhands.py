"""OpenHands / CodeAct event streams: a JSON list of action and observation events.

Actions (``"action"`` key) carry ``args``: ``run`` gives a COMMAND (``args.command``),
``run_ipython`` a CODE event (``args.code``, IPython: may hold ``!``/``%`` lines), ``write`` a
CODE event for ``.py``/``.sh`` targets (``args.content``) or a TOOL_CALL for other files,
``message`` and ``finish`` a MESSAGE, any other action a TOOL_CALL whose text is its ``args``
object as written in the file. A non-empty ``args.thought`` comes first as a MESSAGE.
Observations (``"observation"`` key) give OUTPUT from ``content``. ``role`` is the event's
``source`` (``user``/``agent``/``environment``). Top-level ``{"history": [...]}`` or
``{"events": [...]}`` wrappers are accepted.

Spans point inside the quotes of the JSON string the text was decoded from (exact region;
escapes make the raw text differ), falling back to the first line of the event's record;
``location`` is the record's place in the list and the field (``[12].args.command``). A list
cut short is read up to the break, which is reported.
"""

from __future__ import annotations

import json
import logging
from pathlib import PurePosixPath
from typing import Any

from audit.logs.common import EventList, SpanMaker, json_members_partial, json_value_regions, load_json, string_content
from audit.units import LogEvent, LogEventKind

__all__ = ["NAME", "detect", "read_events"]

logger = logging.getLogger(__name__)

NAME = "openhands"

_WRAPPERS = ("history", "events")


def _event_list(data: Any) -> tuple[list[Any], str | None] | None:
    if isinstance(data, dict):
        for key in _WRAPPERS:
            if isinstance(data.get(key), list):
                return data[key], key
        return None
    if isinstance(data, list):
        return data, None
    return None


def _is_event_list(items: list[Any]) -> bool:
    dicts = [i for i in items if isinstance(i, dict)]
    return bool(dicts) and any(("action" in d and isinstance(d.get("args"), dict)) or "observation" in d for d in dicts)


def detect(path: str, text: str) -> bool:
    """A JSON list (or ``history``/``events`` wrapper) of dicts with ``action``+``args`` or ``observation``."""
    if text.lstrip()[:1] not in ("[", "{") or ('"action"' not in text and '"observation"' not in text):
        return False
    if PurePosixPath(path).suffix.lower() not in (".json", ""):
        return False
    found = _event_list(load_json(text)[0])
    return found is not None and _is_event_list(found[0])


def _regions(text: str, wrapper: str | None) -> list[tuple[int, int, Any]]:
    start = len(text) - len(text.lstrip())
    if wrapper is None:
        return json_value_regions(text, start)[0]
    members = json_members_partial(text, start)
    if wrapper not in members:
        return []
    return json_value_regions(text, members[wrapper][0])[0]


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
    found = _event_list(data)
    if found is None or not _is_event_list(found[0]):
        raise ValueError(f"{path}: not an OpenHands event list")
    items, wrapper = found
    prefix = wrapper or ""
    spans = SpanMaker(text, path)
    regions = _regions(text, wrapper)
    if len(regions) != len(items):
        regions = []
    events = EventList()

    for number, item in enumerate(items):
        if not isinstance(item, dict):
            continue
        record_start = regions[number][0] if regions else 0
        members: dict[str, tuple[int, int]] = {}
        args_members: dict[str, tuple[int, int]] = {}
        if regions:
            members = json_members_partial(text, record_start)
            if "args" in members and text[members["args"][0]] == "{":
                args_members = json_members_partial(text, members["args"][0])
        role = item.get("source") if isinstance(item.get("source"), str) else ""
        where = f"{prefix}[{number}]"

        def emit(kind: LogEventKind, body: Any, region: tuple[int, int] | None, language: str | None = None,
                 field: str = "") -> None:
            if not isinstance(body, str) or not body.strip():
                return
            located = string_content(text, region)
            span = spans.span(*located) if located is not None else spans.line_span(record_start)
            events.append(LogEvent(index=len(events), kind=kind, text=body, span=span, language=language, role=role,
                                   location=f"{where}.{field}" if field else where))

        args = item.get("args") if isinstance(item.get("args"), dict) else {}
        action = item.get("action")
        if isinstance(action, str):
            if action not in ("message", "finish"):
                emit(LogEventKind.MESSAGE, args.get("thought"), args_members.get("thought"), field="args.thought")
            if action == "run":
                emit(LogEventKind.COMMAND, args.get("command"), args_members.get("command"), "bash", "args.command")
            elif action == "run_ipython":
                emit(LogEventKind.CODE, args.get("code"), args_members.get("code"), "python", "args.code")
            elif action == "write":
                target = str(args.get("path", ""))
                suffix = PurePosixPath(target).suffix.lower()
                language = {".py": "python", ".sh": "bash", ".bash": "bash"}.get(suffix)
                kind = LogEventKind.CODE if language else LogEventKind.TOOL_CALL
                emit(kind, args.get("content"), args_members.get("content"), language, "args.content")
            elif action == "message":
                if isinstance(args.get("content"), str):
                    emit(LogEventKind.MESSAGE, args["content"], args_members.get("content"), field="args.content")
                else:
                    emit(LogEventKind.MESSAGE, item.get("message"), members.get("message"), field="message")
            elif action == "finish":
                keys = ("final_thought", "thought", "outputs")
                key = next((k for k in keys if isinstance(args.get(k), str) and args[k].strip()), None)
                if key is not None:
                    emit(LogEventKind.MESSAGE, args[key], args_members.get(key), field=f"args.{key}")
                else:
                    emit(LogEventKind.MESSAGE, item.get("message"), members.get("message"), field="message")
            elif "args" in members:
                # Unknown tools: the args object exactly as written, so the span round-trips.
                start, end = members["args"]
                events.append(
                    LogEvent(
                        index=len(events),
                        kind=LogEventKind.TOOL_CALL,
                        text=text[start:end],
                        span=spans.span(start, end),
                        role=role,
                        location=f"{where}.args",
                    )
                )
            else:
                emit(LogEventKind.TOOL_CALL, json.dumps(args, sort_keys=True), None, field="args")
        elif "observation" in item:
            emit(LogEventKind.OUTPUT, item.get("content"), members.get("content"), field="content")
    if broke is not None and notes is not None:
        notes.append(f"JSON cut short or damaged at {broke.describe()}; read {len(items)} event record(s) up to there")
    return events
