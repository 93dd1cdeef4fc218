"""AIDE ``journal.json``: the tree-search journal of an AIDE agent.

The journal is either a JSON list of nodes or AIDE's serialised ``Journal`` object
(``{"nodes": [...], ...}``). Each node holds ``plan`` (MESSAGE), ``code`` (CODE, Python),
``term_out`` or ``_term_out`` (the run's output, a list of chunks or one string: OUTPUT) and
``analysis`` (the agent's review of the run: MESSAGE), in that order, node by node.

Spans: each event points at the region inside the quotes of its JSON string value (for an
output list, from the first chunk to the last), found with the JSON decoder so the region is
exact. The text is the decoded string, so escapes (``\\n``, ``\\"``) make it differ from the
raw region; a value without escapes round-trips exactly. When a region cannot be located the
span falls back to the first line of the node's record. ``location`` is the node's place in
the journal (``[3].code``, ``nodes[3].code``).

Actors: ``code`` and the terminal output are the AGENT's; ``plan`` and ``analysis`` (AIDE's
prompts' answers that steer the search) the SCAFFOLD's. Journals of other shapes are read too:
``code`` given as a list of lines or of text parts, or an object (read with the shared key vocabulary of
:mod:`mleaudit.audit.logs.keys`), other members holding code (``script``, ``source``, ``*code``: the
AGENT's code), an exception's ``exc_type``/``exc_info``/``exc_stack`` (the AGENT's output),
and any other member with text (an UNKNOWN message); entries of ``nodes`` that are not node
records and the other members of a ``Journal`` object (``best_node``) are read member by member
the same way; ids, tree links, timings and the metric are labels, not text.

A journal cut short (a run killed while AIDE wrote it) is read up to the break: the complete
nodes, and the complete fields of the node being written; the break is reported.
"""

from __future__ import annotations

import logging
from pathlib import PurePosixPath
from typing import Any

from mleaudit.audit.logs.common import EventList, SpanMaker
from mleaudit.audit.logs.jsonregions import json_members_partial, json_value_regions, load_json, string_content
from mleaudit.audit.logs.toolcalls import call_actions, member_events
from mleaudit.audit.units import Actor, LogEvent, LogEventKind

__all__ = ["NAME", "detect", "read_events", "journal_nodes"]

logger = logging.getLogger(__name__)

NAME = "aide"

_FIELDS = (
    ("plan", LogEventKind.MESSAGE, None, "assistant", Actor.SCAFFOLD),
    ("code", LogEventKind.CODE, "python", "assistant", Actor.AGENT),
    ("term_out", LogEventKind.OUTPUT, None, "tool", Actor.AGENT),
    ("_term_out", LogEventKind.OUTPUT, None, "tool", Actor.AGENT),
    ("analysis", LogEventKind.MESSAGE, None, "assistant", Actor.SCAFFOLD),
)
#: Node members that label or measure a node (ids, tree links, timings, the metric): no text.
_NODE_LABELS = frozenset({"id", "parent", "parent_id", "children", "step", "ctime", "exec_time", "is_buggy",
                          "metric", "maximize", "debug_depth", "is_seed_node", "is_valid", "type", "stage"})


def journal_nodes(data: Any) -> list[dict[str, Any]] | None:
    """The node records of a parsed journal, or ``None`` when ``data`` is not an AIDE journal."""
    nodes = data.get("nodes") if isinstance(data, dict) else data
    if not isinstance(nodes, list) or not nodes:
        return None
    dicts = [n for n in nodes if isinstance(n, dict)]
    if not dicts or not any("code" in n and ({"plan", "term_out", "_term_out", "step"} & n.keys()) for n in dicts):
        return None
    return dicts


def detect(path: str, text: str) -> bool:
    """A JSON list of nodes with ``code`` and ``plan``/``term_out``/``step`` (or a ``Journal`` object)."""
    head = text.lstrip()[:1]
    if head not in ("[", "{") or '"code"' not in text:
        return False
    if PurePosixPath(path).suffix.lower() not in (".json", ""):
        return False
    return journal_nodes(load_json(text)[0]) is not None


def _node_regions(text: str) -> list[tuple[int, int]]:
    """``(start, end)`` of each dict node record in the file (up to a break, if any)."""
    start = len(text) - len(text.lstrip())
    if text[start : start + 1] == "[":
        items, _ = json_value_regions(text, start)
    else:
        members = json_members_partial(text, start)
        if "nodes" not in members:
            return []
        items, _ = json_value_regions(text, members["nodes"][0])
    return [(s, e) for s, e, value in items if isinstance(value, dict)]


def read_events(path: str, text: str, notes: list[str] | None = None) -> list[LogEvent]:
    """Events of an AIDE journal, node by node in file order.

    Parameters
    ----------
    path : str
        The journal's POSIX path relative to the run root.
    text : str
        The journal's JSON text; a journal cut short is read up to the break.
    notes : list of str, optional
        Receives a sentence on what was not read (where the JSON broke).

    Returns
    -------
    list of LogEvent
        Per node: ``plan`` (MESSAGE), ``code`` (CODE, ``"python"``), the terminal output
        (OUTPUT, chunks joined) and ``analysis`` (MESSAGE); empty fields give no event.

    Raises
    ------
    ValueError
        If the text is not JSON or not an AIDE journal.
    """
    data, broke = load_json(text)
    nodes = journal_nodes(data)
    if nodes is None:
        raise ValueError(f"{path}: not an AIDE journal (no nodes with code)")
    prefix = "nodes" if isinstance(data, dict) else ""
    spans = SpanMaker(text, path)
    regions = _node_regions(text)
    if len(regions) != len(nodes):
        regions = []
    events = EventList()
    for number, node in enumerate(nodes):
        region = regions[number] if regions else None
        members = json_members_partial(text, region[0]) if region is not None else {}
        def add(key: str, kind: LogEventKind, body: str, language: str | None, role: str, actor: Actor) -> None:
            if not body.strip():
                return
            located = _value_span(text, members.get(key))
            if located is not None:
                span = spans.span(*located)
            elif key in members:
                span = spans.line_span(members[key][0])
            elif region is not None:
                span = spans.line_span(region[0])
            else:
                span = spans.line_span(0)
            events.append(LogEvent(index=len(events), kind=kind, text=body, span=span, language=language, role=role,
                                   location=f"{prefix}[{number}].{key}", actor=actor))

        for key, kind, language, role, actor in _FIELDS:
            value = node.get(key)
            if isinstance(value, list):
                # chunks of text, or parts ({"type": "text", "text": ...}); anything else by the member's name
                pieces = [_piece(v) for v in value]
                add(key, kind, "".join(p for p in pieces if p is not None), language, role, actor)
                others = [v for v, piece in zip(value, pieces) if piece is None]
                if others:
                    member_events(key, others, add)
            elif isinstance(value, str):
                add(key, kind, value, language, role, actor)
            elif key == "code" and isinstance(value, dict):
                for hit in call_actions(value, "python"):
                    add(key, hit.kind, hit.text, hit.language, role, actor)
        for key, value in node.items():
            if not isinstance(key, str) or key in _HANDLED:
                continue
            if key in _NODE_LABELS:
                # a label holds ids and numbers; inline node records (``children: [{...}]``) are read
                if isinstance(value, dict) or (isinstance(value, list) and any(isinstance(v, dict) for v in value)):
                    _walk_members(key, value, add)
                continue
            member_events(key, value, add)
    _other_members(text, data, spans, events)
    if broke is not None and notes is not None:
        notes.append(f"JSON cut short or damaged at {broke.describe()}; read {len(nodes)} node(s) up to there")
    return events


def _piece(value: Any) -> str | None:
    """A chunk of a field given as a list: a string, or a part's ``text`` (or ``content``)."""
    if isinstance(value, dict):
        value = value.get("text", value.get("content"))
    return value if isinstance(value, str) else None


def _walk_members(name: str, value: Any, add, depth: int = 0) -> None:
    """:func:`member_events` of a value, objects and lists of objects walked member by member (a
    ``best_node`` object's ``code`` is code)."""
    if depth < 8 and isinstance(value, dict):
        for key, child in value.items():
            if isinstance(key, str) and key not in _NODE_LABELS:
                _walk_members(key, child, add, depth + 1)
    elif depth < 8 and isinstance(value, list) and any(isinstance(item, (dict, list)) for item in value):
        for item in value:
            _walk_members(name, item, add, depth + 1)
    else:
        member_events(name, value, add)


#: Members of a ``Journal`` object besides its nodes that hold no text.
_JOURNAL_LABELS = frozenset({"nodes", "node2parent", "__version"})


def _other_members(text: str, data: Any, spans: SpanMaker, events: EventList) -> None:
    """Events of what a journal holds besides its node records: entries of ``nodes`` that are not
    records, and the other members of a ``Journal`` object (``best_node``, ``drafts``), each read
    by its name (:func:`mleaudit.audit.logs.toolcalls.member_events`), at the line it starts on."""
    start = len(text) - len(text.lstrip())
    members = json_members_partial(text, start) if isinstance(data, dict) else {}
    listed = data.get("nodes") if isinstance(data, dict) else data
    entries = json_value_regions(text, members["nodes"][0] if isinstance(data, dict) and "nodes" in members
                                 else start)[0] if isinstance(listed, list) else []
    others = [(f"{'nodes' if isinstance(data, dict) else ''}[{number}]", "nodes", begin, value)
              for number, (begin, _, value) in enumerate(entries) if not isinstance(value, dict)]
    if isinstance(data, dict):
        others += [(key, key, members[key][0] if key in members else 0, value) for key, value in data.items()
                   if isinstance(key, str) and key not in _JOURNAL_LABELS]
    for where, name, begin, value in others:
        def add(key: str, kind: LogEventKind, body: str, language: str | None, role: str, actor: Actor,
                where: str = where, begin: int = begin) -> None:
            if body.strip():
                events.append(LogEvent(index=len(events), kind=kind, text=body, span=spans.line_span(begin),
                                       language=language, role=role, location=where, actor=actor))

        _walk_members(name, value, add)


_HANDLED = frozenset(field[0] for field in _FIELDS)


def _value_span(text: str, region: tuple[int, int] | None) -> tuple[int, int] | None:
    """The quoted content of a string value, or from the first to the last string of a list."""
    content = string_content(text, region)
    if content is not None or region is None:
        return content
    if text[region[0]] != "[":
        return None
    items, _ = json_value_regions(text, region[0])
    strings = [string_content(text, (s, e)) for s, e, v in items if isinstance(v, str)]
    strings = [s for s in strings if s is not None]
    if not strings:
        return None
    return strings[0][0], strings[-1][1]
