"""JSON members hidden by a repeated key: read as events, reported as a part not read for sure.

``{"code": A, "code": B}`` decodes as ``{"code": B}`` in every reader built on Python's
``json`` (and in most others), so a file can show the audit one value and hold another. No
serializer writes a repeated key; an agent that edits its own log can. The decoders of
:mod:`mleaudit.audit.logs` report each hidden member (:func:`mleaudit.grading.untrusted_json.collect_shadowed`),
and this module turns them into

- events, so the hidden text is audited like the rest: each string (or list of lines) by the
  name of the member holding it (:func:`mleaudit.audit.logs.toolcalls.member_events`: ``code`` is code),
  containers walked (a hidden ``nodes`` list gives each node's code), placed at the hidden
  value's first text in the file;
- one problem per repeated key, so the run is never clean on a log whose reading depends on
  which of two values a reader keeps.
"""

from __future__ import annotations

import json
import re
from typing import Any, Callable, Sequence

from mleaudit.audit.logs import text as plain_text
from mleaudit.audit.logs.common import SpanMaker
from mleaudit.audit.logs.jsonregions import loads_json
from mleaudit.audit.logs.keys import KEYS, classify_text
from mleaudit.audit.logs.toolcalls import member_events
from mleaudit.audit.model import Span
from mleaudit.audit.units import Actor, LogEvent, LogEventKind
from mleaudit.grading.untrusted_json import MAX_SHADOWED, MAX_SHADOWED_CHARS, ShadowedMember, collect_shadowed

__all__ = ["distinct", "hidden_events", "hidden_problems", "read_hidden_members"]

#: Characters of a hidden string searched for in the file to place its events.
_PROBE_CHARS = 200


def distinct(members: Sequence[ShadowedMember]) -> list[ShadowedMember]:
    """``members`` without repeats (a text decoded twice, by detection and by the reader, reports
    its hidden members twice), in first-seen order."""
    seen: set[tuple[str, str]] = set()
    kept: list[ShadowedMember] = []
    for member in members:
        try:
            identity = json.dumps(member.value, sort_keys=True, ensure_ascii=False, default=str)
        except (TypeError, ValueError, RecursionError):
            identity = repr(type(member.value))
        if (member.key, identity) in seen:
            continue
        seen.add((member.key, identity))
        kept.append(member)
    return kept


def _first_text(value: Any, depth: int = 0) -> str | None:
    if isinstance(value, str):
        return value if value.strip() else None
    if depth > 32:
        return None
    items = value.values() if isinstance(value, dict) else value if isinstance(value, list) else ()
    for item in items:
        found = _first_text(item, depth + 1)
        if found is not None:
            return found
    return None


#: Characters the placing of one file's hidden members may scan, per character of the file (at
#: least :data:`_MIN_SEARCH`); past it a member is placed where the one before it was.
_SEARCH_PER_CHAR = 8
_MIN_SEARCH = 1 << 20


class _Placer:
    """Where each hidden member is written in the file: its value's first text, else its key.

    Members are asked for in the order the decoders met them, which is the file's order: each
    search starts where the previous member was found and looks before it only when that fails.
    All searches of one file together scan at most :data:`_SEARCH_PER_CHAR` times its length: a
    file of thousands of hidden values written with escapes the probe lacks (``\\u0061``) would
    otherwise be scanned whole once per member. Past that, a member is placed where the previous
    one was (its events are still read; only their line is approximate).
    """

    def __init__(self, text: str) -> None:
        self._text = text
        self._ascii = text.isascii()
        self._cursor = 0
        self._budget = max(_MIN_SEARCH, _SEARCH_PER_CHAR * len(text))

    def _find(self, needle: str) -> int:
        text, start = self._text, self._cursor
        found = text.find(needle, start)
        self._budget -= (len(text) if found < 0 else found + len(needle)) - start
        if found < 0 and start:
            found = text.find(needle, 0, start + len(needle))
            self._budget -= start + len(needle) if found < 0 else found + len(needle)
        return found

    def _search(self, pattern: re.Pattern[str]) -> int:
        text, start = self._text, self._cursor
        match = pattern.search(text, start)
        self._budget -= (len(text) if match is None else match.end()) - start
        if match is None and start:
            match = pattern.search(text, 0, start)
            self._budget -= start if match is None else match.end()
        return -1 if match is None else match.start()

    def offset(self, member: ShadowedMember) -> int | None:
        """The member's offset in the file, ``None`` when neither its text nor its key is found."""
        if self._budget <= 0:
            return self._cursor
        probe = _first_text(member.value)
        found = -1
        if probe is not None:
            # an ASCII file cannot hold the probe's non-ASCII form: no search of the file for it
            for ascii_only in ((True,) if self._ascii else (False, True)):
                encoded = json.dumps(probe[:_PROBE_CHARS], ensure_ascii=ascii_only)[1:-1]
                found = self._find(encoded) if encoded else -1
                if found >= 0:
                    break
        if found < 0:
            found = self._search(re.compile(re.escape(json.dumps(member.key)) + r"\s*:"))
        if found < 0:
            return None
        self._cursor = found
        return found


def _located(span_maker: SpanMaker, offset: int | None) -> Span:
    return span_maker.line_span(offset if offset is not None else 0)


#: Nesting levels of a hidden container walked, and events made from one file's hidden members, at most.
_MAX_DEPTH = 32
_MAX_EVENTS = 10_000


def _walk(key: str, value: Any, where: str, depth: int,
          add: Callable[[str, str, LogEventKind, str, str | None, str, Actor], None]) -> None:
    """Events of a hidden value: text by the name of the member holding it, containers walked."""
    lines = isinstance(value, list) and all(isinstance(item, str) for item in value)
    if isinstance(value, str) and depth < _MAX_DEPTH:
        _text(key, value, where, depth, add)
    if isinstance(value, str) or lines or depth >= _MAX_DEPTH:
        member_events(key, value, lambda k, kind, body, language, role, actor: add(
            where, k, kind, body, language, role, actor))
        return
    if isinstance(value, dict):
        for child_key, child in value.items():
            _walk(str(child_key), child, f"{where}.{child_key}", depth + 1, add)
    elif isinstance(value, list):
        for number, child in enumerate(value):
            _walk(key, child, f"{where}[{number}]", depth + 1, add)


def _is_code_key(key: str) -> bool:
    lowered = key.lower()
    return KEYS.get(lowered) in ("code", "script", "command") or lowered.endswith("code")


def _text(key: str, value: str, where: str, depth: int,
          add: Callable[[str, str, LogEventKind, str, str | None, str, Actor], None]) -> None:
    """What a hidden string holds besides the text its member's name makes of it.

    Its member's tool is not known (``{"name": "bash", "input": A, "input": B}`` hides A from the
    call), so a string under any other name is read for what it says: a JSON object or array in
    it is walked (with the members it hides in turn), a text that reads as a command or as code
    is one (:func:`mleaudit.audit.logs.keys.classify_text`), and commands typed at a prompt or code in
    fences inside it are read as in a plain transcript (:mod:`mleaudit.audit.logs.text`).
    """
    if _is_code_key(key) or not value.strip():
        return
    stripped = value.strip()
    if stripped[:1] in ("{", "[") and stripped[-1:] in ("}", "]"):
        with collect_shadowed(propagate=False) as inner:
            try:
                decoded = loads_json(stripped)
            except (ValueError, RecursionError):
                decoded = None
        if isinstance(decoded, (dict, list)):
            _walk(key, decoded, f"{where}(json)", depth + 1, add)
            for member in distinct(inner):
                _walk(member.key, member.value, f"{where}(json): hidden {member.key}", depth + 1, add)
            return
    found = classify_text(value)
    if found is not None:
        add(where, key, found.kind, found.text, found.language, "assistant", Actor.AGENT)
        return
    for event in plain_text.read_events("", value):
        if event.kind in (LogEventKind.CODE, LogEventKind.COMMAND):
            add(where, key, event.kind, event.text, event.language, "assistant", Actor.AGENT)


def hidden_events(path: str, text: str, members: Sequence[ShadowedMember], first_index: int) -> list[LogEvent]:
    """Events of the hidden members of one file.

    Parameters
    ----------
    path : str
        The file's POSIX path relative to the run root.
    text : str
        The file's text (to place the events).
    members : sequence of ShadowedMember
        What its decoders hid (:func:`distinct` applied here).
    first_index : int
        ``index`` of the first event returned (they follow the file's own events).

    Returns
    -------
    list of LogEvent
        Each text of a hidden value read by the name of the member that holds it
        (:func:`mleaudit.audit.logs.toolcalls.member_events`: ``code`` is code, ``stdout`` output, other text
        a message), containers walked (a hidden ``nodes`` list gives each node's code), at most
        10,000 events; located at the line of the hidden value's first text; ``location`` is
        ``hidden <key>`` and the path inside the value (``hidden nodes[0].code``). Code is the
        agent's (fail closed: a hidden value has no trustworthy author).
    """
    spans = SpanMaker(text, path)
    events: list[LogEvent] = []
    placer = _Placer(text)
    for member in distinct(members):
        if len(events) >= _MAX_EVENTS:
            break  # no event of the members left would be kept (the problem says so)
        span = _located(spans, placer.offset(member))

        def add(where: str, key: str, kind: LogEventKind, body: str, language: str | None, role: str,
                actor: Actor) -> None:
            if body.strip() and len(events) < _MAX_EVENTS:
                events.append(LogEvent(index=first_index + len(events), kind=kind, text=body, span=span,
                                       language=language, role=role, location=where, actor=actor))

        _walk(member.key, member.value, f"hidden {member.key}", 0, add)
    return events


def hidden_problems(text: str, members: Sequence[ShadowedMember]) -> list[str]:
    """One sentence per repeated key, naming it, how many values it hid and the first one's line,
    and one more when the decoders met more hidden values than they keep.

    Examples
    --------
    >>> hidden_problems('{"code": "a",\\n "code": "b"}', [ShadowedMember("code", "a")])
    ["key 'code' written more than once in one JSON object (1 distinct hidden value, first at line 1): JSON readers keep only the last value; every value was read, but which one the run used cannot be told"]
    """
    by_key: dict[str, list[ShadowedMember]] = {}
    # distinct values: a text is decoded more than once (detection, reading, locating), each
    # decode reporting what it hides
    for member in distinct(members):
        by_key.setdefault(member.key, []).append(member)
    placer, spans = _Placer(text), SpanMaker(text, "")
    sentences = []
    for key, hidden in by_key.items():
        offset = placer.offset(hidden[0])
        where = f", first at line {spans.line_span(offset).start_line}" if offset is not None else ""
        count = f"{len(hidden)} distinct hidden value{'s' if len(hidden) != 1 else ''}"
        sentences.append(f"key {key[:80]!r} written more than once in one JSON object ({count}{where}): JSON readers "
                         "keep only the last value; every value was read, but which one the run used cannot be told")
    if getattr(members, "overflowed", False):
        sentences.append(f"more values hidden by repeated keys than are kept ({len(members)} kept, "
                         f"{MAX_SHADOWED} values or {MAX_SHADOWED_CHARS // (1024 * 1024)} MiB at most): "
                         "the others were not read")
    return sentences


def read_hidden_members(path: str, text: str, hidden: list[ShadowedMember], first_index: int
                        ) -> tuple[list[LogEvent], list[str]]:
    """Read the JSON members a repeated key hid in one file: :func:`hidden_events` and :func:`hidden_problems`.

    Parameters
    ----------
    path : str
        The file's POSIX path relative to the run root.
    text : str
        The file's text.
    hidden : list of ShadowedMember
        What its decoders reported (:func:`mleaudit.grading.untrusted_json.collect_shadowed`).
    first_index : int
        ``index`` of the first event returned.

    Returns
    -------
    (list of LogEvent, list of str)
        The hidden values' events and one problem per repeated key: a file read this way is
        never clean.
    """
    events = hidden_events(path, text, hidden, first_index)
    problems = hidden_problems(text, hidden)
    if len(events) >= _MAX_EVENTS:
        problems.append(f"the hidden values gave {_MAX_EVENTS:,} events, the most read from them: the rest were not "
                        "read")
    return events, problems
