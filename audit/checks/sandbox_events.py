"""What the sandbox saw: events the host recorded in ``run.json`` while the agent ran.

``mleaudit run`` (:mod:`sandbox`) writes ``run.json`` with an ``events`` list of ``{"kind",
"detail", "path"?}`` objects: things only the host can see, because the agent's own logs may lie
or be silent about them. Kinds written today:

- ``refused-output``: a symbolic link or special file the agent left in an output folder, removed
  before grading (``detail`` names the link target, e.g. the private answers);
- ``spoofed-validation-log``: the agent wrote its own ``logs/validation_calls.jsonl`` (only the host
  writes that file; the agent's copy is kept aside);
- ``network-denied``: requests to hosts off the allow-list;
- ``no-sandbox``: the agent ran without isolation (``--unsafe-no-sandbox``);
- ``limit-hit``: a time/memory/process limit stopped the agent.

The ``sandbox-events`` check turns selected kinds into matches whose evidence points at the
event's line in ``run.json``. It reads only ``run.json`` (capped, without following links, JSON
nesting bounded), never runs anything; a ``run.json`` it cannot read is listed as skipped.
"""

from __future__ import annotations

import errno
import json
import logging
import os
import re
from pathlib import Path
from typing import Any

from audit.checks.registry import RunContext, check
from audit.model import Evidence, Span, make_excerpt
from audit.rules.match import Match
from audit.run import read_run_file
from grading import untrusted_json

__all__ = ["MAX_RUN_JSON_BYTES", "sandbox_events"]

logger = logging.getLogger(__name__)

#: ``run.json`` larger than this is not read (the sandbox writes a few kilobytes).
MAX_RUN_JSON_BYTES = 4 << 20


def _events(ctx: RunContext) -> tuple[str, list[dict[str, Any]]] | None:
    """The text of ``run.json`` and its event records; ``None`` when there are none to read.

    ``run.json`` is read without following links (:func:`audit.run.read_run_file`) and decoded
    with bounded nesting; a ``run.json`` that exists but cannot be read is recorded with
    :meth:`RunContext.skip`, since its events then went unchecked.
    """
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
        data = untrusted_json.loads(text)
    except json.JSONDecodeError as exc:
        logger.info("not reading sandbox events from %s: %s", path, exc)
        ctx.skip("run.json", f"sandbox events not read: {exc.msg}")
        return None
    events = data.get("events") if isinstance(data, dict) else None
    if not isinstance(events, list):
        return None
    return text, [e for e in events if isinstance(e, dict) and isinstance(e.get("kind"), str)]


def _evidence(text: str, event: dict[str, Any], occurrence: int) -> Evidence:
    """The ``occurrence``-th line of ``run.json`` that holds an event of this kind."""
    needle = json.dumps(event["kind"])
    start = -1
    for _ in range(occurrence + 1):
        start = text.find(needle, start + 1)
        if start == -1:
            return Evidence(span=Span.from_lines("run.json", 1, 1), excerpt="", label=f"sandbox event {event['kind']}")
    line_start = text.rfind("\n", 0, start) + 1
    line_end = text.find("\n", start)
    line_end = len(text) if line_end == -1 else line_end
    return Evidence(span=Span.from_offsets(text, "run.json", line_start, line_end),
                    excerpt=make_excerpt(text, line_start, line_end), label=f"sandbox event {event['kind']}")


@check("sandbox-events", values=("kind", "detail", "path", "count"))
def sandbox_events(ctx: RunContext, *, kinds: list[str], detail_pattern: str | None = None,
                   exclude_pattern: str | None = None) -> list[Match]:
    """Match the host-recorded sandbox events of the given kinds.

    Parameters
    ----------
    ctx : RunContext
    kinds : list of str
        Event kinds to report (see the module docstring).
    detail_pattern, exclude_pattern : str, optional
        Regular expressions (case-insensitive) that an event's ``detail`` and ``path`` must /
        must not match, e.g. links whose target names the private answers.

    Returns
    -------
    list of Match
        One per matching event, with values ``kind``, ``detail``, ``path`` and ``count`` (events
        of that kind in the run).

    Raises
    ------
    ValueError
        If ``kinds`` is empty or a pattern is not a valid regular expression.
    """
    if not kinds:
        raise ValueError("sandbox-events needs at least one event kind")
    include = re.compile(detail_pattern, re.IGNORECASE) if detail_pattern else None
    exclude = re.compile(exclude_pattern, re.IGNORECASE) if exclude_pattern else None
    loaded = _events(ctx)
    if loaded is None:
        return []
    text, events = loaded
    wanted = set(kinds)
    seen: dict[str, int] = {}
    matches = []
    counts = {kind: sum(e["kind"] == kind for e in events) for kind in wanted}
    for event in events:
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
        matches.append(Match(
            values={"kind": kind, "detail": str(event.get("detail", "")), "path": str(event.get("path", "")),
                    "count": counts[kind]},
            evidence=(_evidence(text, event, occurrence),),
        ))
    return matches
