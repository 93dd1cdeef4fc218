"""Any other JSON document: scaffold state, reviewer verdicts, plans saved as JSON.

Multi-agent scaffolds keep their state as JSON files next to the code (AutoKaggle's per-phase
``review.json`` holds the reviewer's suggestions and scores). Such a document is not a
transcript, but the text it holds is what the agents wrote, so every string value becomes one
event, in document order, its kind from its key by the shared vocabulary
(:mod:`mleaudit.audit.logs.keys`): code keys (``code``, ``source``, ``script`` ...) give CODE (language
guessed), command keys (``cmd``, ``command`` ...) COMMAND, a tool call's arguments (``input``,
``arguments``, ``tool_input`` ..., JSON inside the string included) the commands and code they
hold (else a MESSAGE), ``output``/``stdout``/``stderr``/``observation``/``result`` OUTPUT,
everything else MESSAGE. In a list of step records (a trajectory, :mod:`mleaudit.audit.logs.trajectory`)
a step's ``action`` is what it ran: COMMAND events, and the code a SWE-agent edit writes. An
object naming a tool (``name``, ``tool``, ``function``) that is not
a plain shell or Python tool, with arguments, also gives a TOOL_CALL ``name(arguments)``.
Numbers, booleans, blank strings and the values of ``id``/``type``/``role`` keys (labels, not
text) give no event. Actors come from the nearest enclosing ``role`` (or ``source``) key
(:func:`mleaudit.audit.logs.keys.actor_for_role`), else UNKNOWN. A document cut short is read up to the
break, which is reported.

Spans point inside the quotes of each string value (exact; escapes make the raw region
longer than the text); ``location`` is the value's JSON path (``final_suggestion["agent
developer"]``, ``[3].text``).
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath
from typing import Any

from mleaudit.audit.logs.common import EventList, SpanMaker, guess_code_language
from mleaudit.audit.logs.jsonregions import json_members_partial, json_value_regions, load_json, string_content
from mleaudit.audit.logs.keys import (
    ARGUMENT_KEYS,
    CODE_KEYS,
    COMMAND_KEYS,
    KEYS,
    SCRIPT_KEYS,
    actor_for_event,
    actor_for_role,
    is_generic_tool,
    tool_name,
)
from mleaudit.audit.logs.toolcalls import call_actions, call_text
from mleaudit.audit.logs.trajectory import action_events, is_step_list
from mleaudit.audit.units import Actor, LogEvent, LogEventKind

__all__ = ["NAME", "detect", "read_events"]

NAME = "json"

_KEY_KINDS = {
    **{key: LogEventKind.CODE for key in (*CODE_KEYS, *SCRIPT_KEYS)},
    **{key: LogEventKind.COMMAND for key in COMMAND_KEYS},
    "output": LogEventKind.OUTPUT, "stdout": LogEventKind.OUTPUT, "stderr": LogEventKind.OUTPUT,
    "observation": LogEventKind.OUTPUT, "result": LogEventKind.OUTPUT,
}  # fmt: skip
_PLAIN_KEY = re.compile(r"^[A-Za-z_]\w*$")
#: Keys whose string values label a record rather than carry text.
_LABEL_KEYS = frozenset({"id", "type", "role"})
#: Containers nested deeper than this are not walked (the values stay unread and are reported).
MAX_WALK_DEPTH = 48


def detect(path: str, text: str) -> bool:
    """A JSON object or array: a ``.json`` file (or one without suffix), or a log of any other
    suffix whose whole text is one JSON document (SWE-agent's ``.traj``).

    A ``.json`` document that breaks before half of the text, or gives nothing before its
    break, is left to the plain-text reader, which reads every line; so is a document of
    another suffix that breaks anywhere.
    """
    if text.lstrip()[:1] not in ("{", "["):
        return False
    value, broke = load_json(text)
    if not isinstance(value, (dict, list)):
        return False
    if PurePosixPath(path).suffix.lower() not in (".json", ""):
        return broke is None and bool(value)
    return broke is None or (bool(value) and broke.offset * 2 >= len(text))


def _key_path(parent: str, key: str) -> str:
    if _PLAIN_KEY.match(key):
        return f"{parent}.{key}" if parent else key
    return f"{parent}[{key!r}]" if parent else f"[{key!r}]"


def read_events(path: str, text: str, notes: list[str] | None = None) -> list[LogEvent]:
    """One event per non-blank string value, in document order (see the module docstring).

    Parameters
    ----------
    path : str
        The document's POSIX path relative to the run root.
    text : str
        The JSON text; a document cut short is read up to the break.
    notes : list of str, optional
        Receives a sentence on what was not read (where the JSON broke, values nested too deep).

    Returns
    -------
    list of LogEvent
        Indexed from 0; ``location`` is each value's JSON path.

    Raises
    ------
    ValueError
        If the text is not a JSON object or array.
    """
    value, broke = load_json(text)
    if not isinstance(value, (dict, list)):
        raise ValueError(f"{path}: not a JSON object or array")
    spans = SpanMaker(text, path)
    events = EventList()
    too_deep: list[str] = []

    def emit(kind: LogEventKind, body: str, span, language: str | None, where: str, actor: Actor) -> None:
        events.append(LogEvent(index=len(events), kind=kind, text=body, span=span, language=language,
                               location=where or "$", actor=actor_for_event(kind, actor)))

    def walk(start: int, end: int, item: Any, where: str, key: str, depth: int, actor: Actor, tool: str,
             step: bool = False) -> None:
        if isinstance(item, str):
            if not item.strip() or key.lower() in _LABEL_KEYS:
                return
            located = string_content(text, (start, end))
            span = spans.span(*located) if located is not None else spans.line_span(start)
            slot = KEYS.get(key.lower())
            if slot == "arguments":
                # A tool call's arguments: a command, code, or JSON inside the string.
                hits = call_actions(item, tool)
                for hit in hits:
                    emit(hit.kind, hit.text, span, hit.language, where, actor)
                if not hits:
                    emit(LogEventKind.MESSAGE, item, span, None, where, actor)
                return
            kind = _KEY_KINDS.get(key.lower(), LogEventKind.MESSAGE)
            language = None
            if kind is LogEventKind.CODE:
                language = guess_code_language(item)
            elif kind is LogEventKind.COMMAND:
                language = "bash"
            emit(kind, item, span, language, where, actor)
            return
        if not isinstance(item, (dict, list)) or not item:
            return
        if depth >= MAX_WALK_DEPTH:
            too_deep.append(where or "$")
            return
        if isinstance(item, dict):
            members = json_members_partial(text, start)
            role = next((item[k] for k in ("role", "source") if isinstance(item.get(k), str)), None)
            if role is not None:
                actor = actor_for_role(role)
            name = tool_name(item) or tool
            arguments = next((k for k in ARGUMENT_KEYS if k in item and k in members), None)
            if arguments is not None and tool_name(item) and not is_generic_tool(tool_name(item)):
                # A named call: the function and its arguments as written, for rules on names.
                args_start, args_end = members[arguments]
                emit(LogEventKind.TOOL_CALL, call_text(tool_name(item), None, text[args_start:args_end]),
                     spans.span(args_start, args_end), None, _key_path(where, arguments), actor)
            read_action = False
            if step and "action" in members:
                # A trajectory's step: its ``action`` is what it ran (mleaudit.audit.logs.trajectory).
                actions = action_events(item)
                if actions is not None:
                    read_action = True
                    action_start, action_end = members["action"]
                    located = string_content(text, (action_start, action_end))
                    span = spans.span(*located) if located is not None else spans.span(action_start, action_end)
                    for hit in actions:
                        emit(hit.kind, hit.text, span, hit.language, _key_path(where, "action"), actor)
            for member, child in item.items():
                if read_action and member == "action":
                    continue
                region = members.get(member)
                if region is not None:
                    walk(region[0], region[1], child, _key_path(where, member), member, depth + 1, actor, name)
        else:
            steps = is_step_list(item)
            for number, (child_start, child_end, child) in enumerate(json_value_regions(text, start)[0]):
                walk(child_start, child_end, child, f"{where}[{number}]", key, depth + 1, actor, tool, steps)

    walk(len(text) - len(text.lstrip()), len(text), value, "", "", 0, Actor.UNKNOWN, "")
    if notes is not None:
        if broke is not None:
            notes.append(f"JSON cut short or damaged at {broke.describe()}; read up to there")
        if too_deep:
            first = too_deep[0] if len(too_deep[0]) <= 80 else too_deep[0][:77] + "..."
            notes.append(f"values nested over {MAX_WALK_DEPTH} deep not read (first at {first})")
    return events
