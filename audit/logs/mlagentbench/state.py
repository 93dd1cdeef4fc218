"""The scaffold's JSON state (``agent_log/agent_*.json``) and the environment's ``env_log/trace.json``.

Their prompts are messages, never code; a step's action is a TOOL_CALL and what it runs or
writes (:func:`~mleaudit.audit.logs.mlagentbench.actions.derived`) the agent's.
"""

from __future__ import annotations

import json
import re
from typing import Any, Iterator

from mleaudit.audit.logs.jsonregions import json_members_partial, json_value_regions, load_json, string_content
from mleaudit.audit.logs.mlagentbench.actions import derived
from mleaudit.audit.logs.mlagentbench.events import Events
from mleaudit.audit.units import Actor, LogEvent, LogEventKind

__all__ = ["read_state", "read_trace"]

#: Actions the scaffold takes itself after every step, never chosen by the agent.
_SCAFFOLD_ACTIONS = frozenset({"Append Summary to Research Log", "Retrieval from Research Log"})
#: Containers nested deeper than this in the JSON state are not walked (real files nest < 6).
_MAX_DEPTH = 48


_NAME = re.compile(r"[A-Za-z_]\w*")


#: Short keys already told (the keys of a state repeat in every step); a function of the key alone.
_NAMES: dict[str, bool] = {}


def _is_name(key: str) -> bool:
    """Whether ``key`` is written ``.key`` in a location."""
    known = _NAMES.get(key)
    if known is None:
        known = _NAME.fullmatch(key) is not None
        if len(key) <= 64 and len(_NAMES) < 4096:
            _NAMES[key] = known
    return known


def _key_path(parent: str, key: str) -> str:
    if _is_name(key):
        return f"{parent}.{key}" if parent else key
    return f"{parent}[{json.dumps(key)}]"


def _members(text: str, region: tuple[int, int], value: Any) -> Iterator[tuple[str, tuple[int, int], Any]]:
    """``(key, region, value)`` of a JSON object's members as located in the text."""
    if not isinstance(value, dict):
        return
    located = json_members_partial(text, region[0])
    for key, child in value.items():
        where = located.get(key)
        if where is not None:
            yield key, where, child


def _items(text: str, region: tuple[int, int], value: Any) -> Iterator[tuple[int, tuple[int, int], Any]]:
    if not isinstance(value, list):
        return
    for number, (start, end, child) in enumerate(json_value_regions(text, region[0])[0]):
        yield number, (start, end), child


def _messages(out: Events, region: tuple[int, int], value: Any, where: str, actor: Actor, depth: int = 0) -> None:
    """Every string under a JSON value as a MESSAGE event (never code: prompts are not programs)."""
    if isinstance(value, str):
        out.add_value(LogEventKind.MESSAGE, region, value, actor, where or "$", role="scaffold")
    elif depth >= _MAX_DEPTH:
        return
    elif isinstance(value, dict):
        for key, child_region, child in _members(out.text, region, value):
            _messages(out, child_region, child, _key_path(where, key), actor, depth + 1)
    elif isinstance(value, list):
        for number, child_region, child in _items(out.text, region, value):
            _messages(out, child_region, child, f"{where}[{number}]", actor, depth + 1)


def read_state(out: Events, notes: list[str] | None) -> None:
    """The saved state: ``history_steps`` step by step, everything else as the scaffold's messages."""
    value, broke = load_json(out.text)
    root = (len(out.text) - len(out.text.lstrip()), len(out.text))
    for key, region, child in _members(out.text, root, value):
        if key == "history_steps" and isinstance(child, list):
            for number, step_region, step in _items(out.text, region, child):
                _state_step(out, step_region, step, f"history_steps[{number}]")
        else:
            _messages(out, region, child, _key_path("", key), Actor.SCAFFOLD)
    if broke is not None and notes is not None:
        notes.append(f"JSON cut short or damaged at {broke.describe()}; read up to there")


def _state_step(out: Events, region: tuple[int, int], step: Any, where: str) -> None:
    if not isinstance(step, dict):
        _messages(out, region, step, where, Actor.SCAFFOLD)
        return
    for key, child_region, child in _members(out.text, region, step):
        path = _key_path(where, key)
        if key == "action" and isinstance(child, dict):
            members = {k: (r, v) for k, r, v in _members(out.text, child_region, child)}
            name = members.get("Action", ((0, 0), None))[1]
            for field, (field_region, field_value) in members.items():
                field_path = _key_path(path, field)
                if field == "Action Input" and isinstance(name, str) and isinstance(field_value, str):
                    continue  # joined with the action's name below
                if field == "Action" and isinstance(field_value, str):
                    raw_input = members.get("Action Input", (None, None))
                    text = f"{field_value.strip()}\nAction Input: {raw_input[1].strip()}" if isinstance(
                        raw_input[1], str) else field_value.strip()
                    span_end = raw_input[0][1] if raw_input[0] is not None else field_region[1]
                    start = (string_content(out.text, field_region) or field_region)[0]
                    out.events.append(LogEvent(index=len(out.events), kind=LogEventKind.TOOL_CALL, text=text,
                                               span=out.spans.span(start, span_end), role="assistant",
                                               location=field_path, actor=Actor.AGENT))
                elif isinstance(field_value, str):
                    out.add_value(LogEventKind.MESSAGE, field_region, field_value, Actor.AGENT, field_path,
                                  role="assistant")
                else:
                    _messages(out, field_region, field_value, field_path, Actor.AGENT)
        elif key == "observation" and isinstance(child, str):
            out.add_value(LogEventKind.OUTPUT, child_region, child, Actor.AGENT, path, role="tool")
        elif key != "step_idx":
            _messages(out, child_region, child, path, Actor.SCAFFOLD)


def read_trace(out: Events, notes: list[str] | None) -> None:
    """The trace: ``steps`` and ``low_level_steps`` step by step, everything else as the scaffold's messages."""
    value, broke = load_json(out.text)
    root = (len(out.text) - len(out.text.lstrip()), len(out.text))
    agent_ran = _agent_bodies(value.get("steps") if isinstance(value, dict) else None)
    for key, region, child in _members(out.text, root, value):
        if key in ("steps", "low_level_steps") and isinstance(child, list):
            for number, step_region, step in _items(out.text, region, child):
                _trace_step(out, step_region, step, f"{key}[{number}]", low_level=key == "low_level_steps",
                            agent_ran=agent_ran)
        else:
            _messages(out, region, child, _key_path("", key), Actor.SCAFFOLD)
    if broke is not None and notes is not None:
        notes.append(f"JSON cut short or damaged at {broke.describe()}; read up to there")


def _agent_bodies(steps: Any) -> set[str]:
    """The commands and code the agent's own (high-level) steps ran."""
    bodies: set[str] = set()
    for step in steps if isinstance(steps, list) else ():
        action = step.get("action") if isinstance(step, dict) else None
        name = action.get("name") if isinstance(action, dict) else None
        args = action.get("args") if isinstance(action, dict) else None
        if isinstance(name, str) and isinstance(args, dict):
            bodies.update(body for _, _, body in derived(name, args))
    return bodies


def _trace_step(out: Events, region: tuple[int, int], step: Any, where: str, *, low_level: bool,
                agent_ran: frozenset[str] | set[str] = frozenset()) -> None:
    if not isinstance(step, dict):
        _messages(out, region, step, where, Actor.SCAFFOLD)
        return
    action = step.get("action")
    name = action.get("name") if isinstance(action, dict) else None
    name = name if isinstance(name, str) else ""
    args = action.get("args") if isinstance(action, dict) else None
    args = args if isinstance(args, dict) else {}
    by_scaffold = low_level or " ".join(name.split()) in _SCAFFOLD_ACTIONS
    actor = Actor.SCAFFOLD if by_scaffold else Actor.AGENT
    for key, child_region, child in _members(out.text, region, step):
        path = _key_path(where, key)
        if key == "action" and isinstance(child, dict):
            shown = json.dumps(action.get("args"), ensure_ascii=False) if "args" in action else ""
            text = f"{name} {shown}".strip() if name else json.dumps(child, ensure_ascii=False)
            out.add(LogEventKind.TOOL_CALL, child_region[0], child_region[1], actor, text=text,
                    role="scaffold" if by_scaffold else "assistant", location=path)
            for kind, language, body in derived(name, args):
                if low_level and " ".join(name.split()) not in ("Write File", "Append File") and body in agent_ran:
                    continue  # a primitive Execute Script or REPL call repeats the agent's own step
                out.add(kind, child_region[0], child_region[1], Actor.AGENT, text=body, language=language,
                        role="assistant", location=path)
        elif key == "observation" and isinstance(child, str):
            out.add_value(LogEventKind.OUTPUT, child_region, child, actor, path, role="tool")
        elif key != "timestamp":
            _messages(out, child_region, child, path, Actor.SCAFFOLD)
