"""Who produced each code unit and log event of a run: the agent, its scaffold, the operator.

The log adapters and the notebook reader set an actor wherever the format itself says who
spoke (a JSONL record's ``role``, an OpenHands event's ``source``, an AIDE node's ``code`` versus
its ``plan``, a driver notebook's setup cells). :func:`attribute_units` fills in what they left
``unknown``, from the run's layout and the unit's place in it, with these defaults (first
that applies):

==================================  ===========================================================
unit or event                       actor
==================================  ===========================================================
output or message of MLE-bench's    ``scaffold``: its container lines are the agent process's
host ``run.log`` (run root)         stdout: the start script, the scaffold's progress and its
                                    own LLM traffic (MLE-bench run-directory layout); commands
                                    and code typed there stay ``unknown`` (judged)
code unit cut from a log event      the event's actor (a command the scaffold logged is the
                                    command the agent ran)
command, code, tool call, output    ``agent``: what the agent ran through its tools and what
event of any other log              that printed
message event                       ``unknown``: a message without a role may be the task
                                    prompt, the scaffold's or the agent's words
code file or notebook               ``agent``: files of the run are the agent's work unless a
                                    reader placed them (a driver notebook's operator cells)
==================================  ===========================================================

``unknown`` is judged by every rule that judges the agent (:data:`mleaudit.audit.rules.spec.DEFAULT_ACTORS`),
so a unit that no heuristic places is never exempt from a rule.
"""

from __future__ import annotations

import bisect
from dataclasses import replace
from typing import Sequence

from mleaudit.audit.run import RunLayout
from mleaudit.audit.units import Actor, CodeUnit, LogEvent, LogEventKind

__all__ = ["attribute_event", "attribute_units"]

#: Event kinds the agent produces through its tools (or its tools print).
_AGENT_KINDS = frozenset({LogEventKind.COMMAND, LogEventKind.CODE, LogEventKind.TOOL_CALL, LogEventKind.OUTPUT})
#: Event kinds that are printed text, not something run.
_PRINTED_KINDS = frozenset({LogEventKind.OUTPUT, LogEventKind.MESSAGE})


def attribute_event(event: LogEvent, layout: str) -> LogEvent:
    """``event`` with its actor set by the defaults of this module when it is ``unknown``.

    Parameters
    ----------
    event : LogEvent
        One event of a run's log; an actor a reader set is kept.
    layout : str
        The run's layout (:data:`mleaudit.audit.run.RunLayout.LAYOUTS`).

    Returns
    -------
    LogEvent
        ``event`` itself when its actor is known or no default applies, else a copy.
    """
    if event.actor is not Actor.UNKNOWN:
        return event
    if layout == "mlebench" and event.span.path == RunLayout.RUN_LOG and event.kind in _PRINTED_KINDS:
        # The container's printed lines: the scaffold's progress and its own LLM traffic.
        # A command or code typed in the container stays unknown, so every rule judges it.
        return replace(event, actor=Actor.SCAFFOLD)
    if layout == "mlebench" and event.span.path == RunLayout.RUN_LOG:
        return event
    if event.kind in _AGENT_KINDS:
        return replace(event, actor=Actor.AGENT)
    return event


class _EventIndex:
    """The events of each log by start offset, to find the event a log code unit was cut from."""

    def __init__(self, events: Sequence[LogEvent]) -> None:
        self._by_path: dict[str, tuple[list[int], list[LogEvent]]] = {}
        grouped: dict[str, list[LogEvent]] = {}
        for event in events:
            grouped.setdefault(event.span.path, []).append(event)
        for path, items in grouped.items():
            items.sort(key=lambda e: (e.span.start_byte, -e.span.end_byte))
            self._by_path[path] = ([e.span.start_byte for e in items], items)

    def covering(self, unit: CodeUnit) -> LogEvent | None:
        """The innermost-starting event whose span holds ``unit.origin`` (same log file)."""
        origin = unit.origin
        if origin is None or unit.path not in self._by_path:
            return None
        starts, items = self._by_path[unit.path]
        k = bisect.bisect_right(starts, origin.start_byte) - 1
        # Spans of one log rarely nest; look back a few events for one that holds the origin.
        for event in items[max(0, k - 8): k + 1][::-1]:
            if event.span.start_byte <= origin.start_byte and origin.end_byte <= event.span.end_byte:
                return event
        return None


def attribute_units(code_units: Sequence[CodeUnit], log_events: Sequence[LogEvent],
                    layout: str) -> tuple[tuple[CodeUnit, ...], tuple[LogEvent, ...]]:
    """Fill in the actors the readers left ``unknown``, by the table of this module.

    Parameters
    ----------
    code_units : sequence of CodeUnit
        A run's code units (:func:`mleaudit.audit.expand.expand_run`).
    log_events : sequence of LogEvent
        The run's log events.
    layout : str
        The run's layout (:data:`mleaudit.audit.run.RunLayout.LAYOUTS`).

    Returns
    -------
    (tuple of CodeUnit, tuple of LogEvent)
        Same order and length as given; actors a reader set are never changed.
    """
    events = tuple(attribute_event(event, layout) for event in log_events)
    index = _EventIndex(events)
    units: list[CodeUnit] = []
    for unit in code_units:
        if unit.actor is Actor.UNKNOWN:
            if unit.source == "log":
                host = index.covering(unit)
                actor = host.actor if host is not None else Actor.UNKNOWN
            else:
                actor = Actor.AGENT
            if actor is not Actor.UNKNOWN:
                unit = replace(unit, actor=actor)
        units.append(unit)
    return tuple(units), events
