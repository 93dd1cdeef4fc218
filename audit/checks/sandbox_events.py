"""What the sandbox saw: events the host recorded in ``run.json`` while the agent ran.

``mleaudit run`` (:mod:`sandbox`) writes ``run.json`` with an ``events`` list of ``{"kind",
"detail", "path"?, ...}`` objects: things only the host can see, because the agent's own logs may
lie or be silent about them. Kinds and the fields they carry besides ``detail``:

- ``refused-output`` (``path``): a symbolic link or special file the agent left in an output
  folder, removed before grading (``detail`` names the link target, e.g. the private answers);
- ``hard-link-copied`` (``path``): a hard-linked output, copied before grading;
- ``spoofed-validation-log`` (``path``): the agent wrote its own ``logs/validation_calls.jsonl``
  (only the host writes that file; the agent's copy is kept aside);
- ``network-denied`` (``host``, ``port``, ``method``, ``count``, ``first_ts``, ``url``?): the
  requests the allow-list proxy refused, one event per ``host:port``; ``url`` (a plain-HTTP
  request's method and URL, without query) is known only for requests that were not tunnelled;
- ``no-sandbox``: the agent ran without isolation (``--unsafe-no-sandbox``);
- ``limit-hit`` (``limit``: ``memory``, ``pids``, ``time``, ``disk`` or ``cpu``): a sandbox limit
  stopped the agent;
- ``log-truncated`` (``path``, ``kept_bytes``, ``dropped_bytes``): the sandbox capped the run log;
  the dropped part is a gap of the audit (:func:`mleaudit.audit.run.load_run` lists it as unread);
- ``sandbox-failed``: the sandbox did not start the agent (``detail`` gives the cause);
- ``validation-refused`` (``status``, ``count``): calls the validation endpoint refused.

The ``sandbox-events`` check turns selected kinds into matches whose evidence is the event's
object in ``run.json`` (its lines, however the file is indented). Every event field named in
:data:`EVENT_FIELDS` is a match value for message templates and for the ``where`` and
``where_not`` filters; text values are printable and bounded (:data:`MAX_VALUE_CHARS`). The check
reads only ``run.json`` (capped, without following links, JSON nesting bounded), never runs
anything; a ``run.json`` it cannot read is listed as skipped.
"""

from __future__ import annotations

import errno
import json
import logging
import os
import re
from pathlib import Path
from typing import Any

from mleaudit.audit.rules.context import RunContext
from mleaudit.audit.rules.registry import check
from mleaudit.audit.model import Evidence, Span, make_excerpt
from mleaudit.audit.rules.match import Match
from mleaudit.audit.run import read_run_file
from mleaudit.grading import untrusted_json

__all__ = ["EVENT_FIELDS", "MAX_RUN_JSON_BYTES", "MAX_VALUE_CHARS", "sandbox_events"]

logger = logging.getLogger(__name__)

#: ``run.json`` larger than this is not read (the sandbox writes a few kilobytes).
MAX_RUN_JSON_BYTES = 4 << 20

#: Longest text value taken from an event (longer ones are cut and end with ``...``).
MAX_VALUE_CHARS = 300

#: Event fields given as match values, with their type: text fields take strings, number fields
#: take integers (not booleans). A field that is absent or of another type has no value (a
#: message shows ``?``; the ``where`` filters see an empty text). ``kind``, ``detail`` and
#: ``path`` are always set (empty when absent).
EVENT_FIELDS: dict[str, type] = {
    "kind": str, "detail": str, "path": str, "host": str, "port": int, "method": str, "url": str,
    "limit": str, "status": int, "count": int, "kept_bytes": int, "dropped_bytes": int, "first_ts": str,
}  # fmt: skip

#: Values computed from the event: ``target`` (``host:port``, or the host alone) and ``events``
#: (how many events of the matched kind ``run.json`` holds).
DERIVED_VALUES = ("target", "events")

# A JSON string (as in mleaudit.grading.untrusted_json, unrolled) or a structural character.
_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[{}\[\]:]', re.DOTALL)
_UNPRINTABLE = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def _events(ctx: RunContext) -> tuple[str, list[dict[str, Any]], list[tuple[int, int]] | None] | None:
    """The text of ``run.json``, its event records and their spans; ``None`` when there are none.

    ``run.json`` is read without following links (:func:`mleaudit.audit.run.read_run_file`) and decoded
    with bounded nesting; a ``run.json`` that exists but cannot be read is recorded with
    :meth:`RunContext.skip`, since its events then went unchecked. The spans are the character
    ranges of the event objects (:func:`_event_spans`), or ``None`` when they cannot be told apart.
    """
    return ctx.memoize("sandbox-events", lambda: _load_events(ctx))


def _load_events(ctx: RunContext) -> tuple[str, list[dict[str, Any]], list[tuple[int, int]] | None] | None:
    path = Path(ctx.root) / "run.json"
    if not os.path.lexists(path):
        return None
    try:
        data_bytes = read_run_file(ctx.root, "run.json", max_bytes=MAX_RUN_JSON_BYTES)
    except OSError as exc:
        reason = exc.strerror or str(exc)
        if exc.errno == errno.EFBIG:
            reason = f"over the {MAX_RUN_JSON_BYTES}-byte cap for sandbox events"
        logger.info("not reading sandbox events from %s: %s", path, reason)
        ctx.skip("run.json", f"sandbox events not read: {reason}")
        return None
    text = data_bytes.decode("utf-8", errors="replace")
    try:
        data = untrusted_json.loads_unique(text)
    except json.JSONDecodeError as exc:
        logger.info("not reading sandbox events from %s: %s", path, exc)
        ctx.skip("run.json", f"sandbox events not read: {exc.msg}")
        return None
    events = data.get("events") if isinstance(data, dict) else None
    if not isinstance(events, list):
        return None
    objects = [e for e in events if isinstance(e, dict)]
    spans = _event_spans(text)
    if spans is not None and len(spans) != len(objects):
        spans = None
    kept = [(e, spans[i] if spans is not None else None) for i, e in enumerate(objects) if isinstance(e.get("kind"), str)]
    return text, [e for e, _ in kept], (None if spans is None else [span for _, span in kept])  # type: ignore[misc]


def _event_spans(text: str) -> list[tuple[int, int]] | None:
    """Character ranges of the objects directly inside the top-level ``"events"`` array.

    One pass over the JSON tokens (strings and brackets); when the key appears more than once the
    last array counts, as in :func:`json.loads`. ``None`` when the text has no such array or its
    brackets do not balance.
    """
    stack: list[tuple[str, int, bool]] = []  # (bracket, start, is the events array)
    last_string = ""
    root_key: str | None = None
    arrays: list[list[tuple[int, int]]] = []
    for token in _TOKEN.finditer(text):
        value = token.group()
        if value[0] == '"':
            last_string = value
        elif value == ":":
            if len(stack) == 1:
                try:
                    root_key = json.loads(last_string)
                except ValueError:
                    root_key = None
        elif value in "{[":
            is_events = value == "[" and len(stack) == 1 and stack[0][0] == "{" and root_key == "events"
            if is_events:
                arrays.append([])
            stack.append((value, token.start(), is_events))
        else:
            if not stack:
                return None
            bracket, start, _ = stack.pop()
            if (bracket == "{") != (value == "}"):
                return None
            if value == "}" and stack and stack[-1][2]:
                arrays[-1].append((start, token.end()))
    return arrays[-1] if arrays and not stack else None


def _evidence(text: str, event: dict[str, Any], occurrence: int, span: tuple[int, int] | None) -> Evidence:
    """The lines of ``run.json`` that hold the event.

    With its object's span known, the lines from its ``{`` to its ``}``; otherwise the
    ``occurrence``-th line that holds an event of this kind.
    """
    label = f"sandbox event {_text(event['kind'])}"
    if span is not None:
        start, end = span
    else:
        needle = json.dumps(event["kind"])
        start = -1
        for _ in range(occurrence + 1):
            start = text.find(needle, start + 1)
            if start == -1:
                return Evidence(span=Span.from_lines("run.json", 1, 1), excerpt="", label=label)
        end = start
    line_start = text.rfind("\n", 0, start) + 1
    line_end = text.find("\n", end)
    line_end = len(text) if line_end == -1 else line_end
    return Evidence(span=Span.from_offsets(text, "run.json", line_start, line_end),
                    excerpt=make_excerpt(text, line_start, line_end), label=label)


def _text(value: str) -> str:
    """``value`` with control characters replaced by ``?``, cut to :data:`MAX_VALUE_CHARS`."""
    value = _UNPRINTABLE.sub("?", value)
    if len(value) > MAX_VALUE_CHARS:
        value = value[: MAX_VALUE_CHARS - 3] + "..."
    return value


def _values(event: dict[str, Any], events_of_kind: int) -> dict[str, Any]:
    """The match values of one event (see :data:`EVENT_FIELDS` and :data:`DERIVED_VALUES`)."""
    values: dict[str, Any] = {"kind": "", "detail": "", "path": ""}
    for name, kind in EVENT_FIELDS.items():
        raw = event.get(name)
        if kind is int and isinstance(raw, int) and not isinstance(raw, bool):
            values[name] = raw
        elif kind is str and isinstance(raw, str):
            values[name] = _text(raw)
    if values.get("host"):
        values["target"] = f"{values['host']}:{values['port']}" if "port" in values else values["host"]
    values["events"] = events_of_kind
    return values


def _filters(param: str, given: Any) -> list[tuple[str, re.Pattern[str]]]:
    """``where``/``where_not`` as (field, compiled pattern) pairs.

    Raises
    ------
    ValueError
        If ``given`` is not a mapping of known field names to regular expressions.
    """
    if given is None:
        return []
    if not isinstance(given, dict) or not given:
        raise ValueError(f"sandbox-events: `{param}` must be a non-empty mapping of event field to regular expression")
    known = (*EVENT_FIELDS, *DERIVED_VALUES)
    compiled = []
    for name, pattern in given.items():
        if name not in known:
            raise ValueError(f"sandbox-events: `{param}` names the unknown event field {name!r} "
                             f"(known: {', '.join(known)})")
        if not isinstance(pattern, str) or not pattern:
            raise ValueError(f"sandbox-events: `{param}.{name}` must be a non-empty regular expression")
        try:
            compiled.append((name, re.compile(pattern, re.IGNORECASE)))
        except re.error as exc:
            raise ValueError(f"sandbox-events: `{param}.{name}` is not a valid regular expression: {exc}") from None
    return compiled


def _pattern(param: str, pattern: str | None) -> re.Pattern[str] | None:
    if pattern is None:
        return None
    try:
        return re.compile(pattern, re.IGNORECASE)
    except (re.error, TypeError) as exc:
        raise ValueError(f"sandbox-events: `{param}` is not a valid regular expression: {exc}") from None


@check("sandbox-events", values=(*EVENT_FIELDS, *DERIVED_VALUES))
def sandbox_events(ctx: RunContext, *, kinds: list[str], detail_pattern: str | None = None,
                   exclude_pattern: str | None = None, where: dict[str, str] | None = None,
                   where_not: dict[str, str] | None = None) -> list[Match]:
    """Match the host-recorded sandbox events of the given kinds.

    Parameters
    ----------
    ctx : RunContext
    kinds : list of str
        Event kinds to report (see the module docstring).
    detail_pattern, exclude_pattern : str, optional
        Regular expressions (case-insensitive) that an event's ``detail`` and ``path`` must /
        must not match, e.g. links whose target names the private answers.
    where : dict of str to str, optional
        Event field (:data:`EVENT_FIELDS`, ``target`` or ``events``) to a regular expression
        (case-insensitive, searched) that the field's value must match, every one of them,
        e.g. ``{host: '(^|\\.)kaggle\\.com$'}``. Numbers are matched as decimal text and an
        absent field as the empty text, so ``{limit: '^(?!time$)'}`` keeps events with no limit.
    where_not : dict of str to str, optional
        Field to pattern that must not match (an event is dropped when any one matches).

    Returns
    -------
    list of Match
        One per matching event, in ``run.json`` order, with the event's fields as values
        (:data:`EVENT_FIELDS`), ``target`` (``host:port``) and ``events`` (events of that kind
        in the run); its evidence is the event's lines in ``run.json``.

    Raises
    ------
    ValueError
        If ``kinds`` is empty or not a list of names, or a filter names an unknown field or
        holds an invalid regular expression (the message names the parameter).
    """
    if not kinds:
        raise ValueError("sandbox-events needs at least one event kind")
    if not isinstance(kinds, list) or not all(isinstance(k, str) and k for k in kinds):
        raise ValueError("sandbox-events: `kinds` must be a list of event kind names")
    include = _pattern("detail_pattern", detail_pattern)
    exclude = _pattern("exclude_pattern", exclude_pattern)
    required = _filters("where", where)
    refused = _filters("where_not", where_not)
    loaded = _events(ctx)
    if loaded is None:
        return []
    text, events, spans = loaded
    wanted = set(kinds)
    seen: dict[str, int] = {}
    matches = []
    counts = {kind: sum(e["kind"] == kind for e in events) for kind in wanted}
    for index, event in enumerate(events):
        kind = event["kind"]
        occurrence = seen.get(kind, 0)
        seen[kind] = occurrence + 1
        if kind not in wanted:
            continue
        about = f"{event.get('detail', '')} {event.get('path', '')}"
        if include is not None and not include.search(about):
            continue
        if exclude is not None and exclude.search(about):
            continue
        values = _values(event, counts[kind])
        shown = {name: str(values.get(name, "")) for name in (*EVENT_FIELDS, *DERIVED_VALUES)}
        if any(not pattern.search(shown[name]) for name, pattern in required):
            continue
        if any(pattern.search(shown[name]) for name, pattern in refused):
            continue
        span = spans[index] if spans is not None else None
        matches.append(Match(values=values, evidence=(_evidence(text, event, occurrence, span),)))
    return matches
