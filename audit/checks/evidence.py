"""Evidence for run-level checks: locations in code units, log events and the submission file.

Built-in checks report places the way text rules do: a span in the host file (code embedded in
a log points into the log) and a short excerpt, so the report stands alone. Code decoded from a
JSON string is not a verbatim slice of its log, so its evidence is the whole encoded region.
"""

from __future__ import annotations

from pathlib import Path

from mleaudit.audit.rules.context import RunContext
from mleaudit.audit.model import Evidence, Span, make_excerpt
from mleaudit.audit.units import CodeUnit, LogEvent, LogEventKind

__all__ = [
    "ACTION_KINDS",
    "action_events",
    "event_evidence",
    "file_line_evidence",
    "unit_evidence",
    "unit_location",
]

#: Log events that are the agent acting (as opposed to output, messages and host lines).
ACTION_KINDS = frozenset({LogEventKind.COMMAND, LogEventKind.CODE, LogEventKind.TOOL_CALL})


def action_events(ctx: RunContext) -> list[LogEvent]:
    """The run's log events in which the agent acts: commands, code and tool calls."""
    return [e for e in ctx.log_events if e.kind in ACTION_KINDS]


def _unit_span(unit: CodeUnit, start: int, end: int) -> Span:
    origin = unit.origin
    if origin is not None and origin.end_byte - origin.start_byte != len(unit.text):
        return origin
    return unit.host_span(Span.from_offsets(unit.text, unit.path, start, end))


def unit_location(unit: CodeUnit, start: int) -> str:
    """``path:line`` of offset ``start`` of a unit, in its host file (notebooks add the cell)."""
    span = _unit_span(unit, start, start)
    where = f"{span.path}:{span.start_line}"
    if unit.cells:
        where += f" ({unit.describe(unit.text.count(chr(10), 0, start) + 1)})"
    return where


def unit_evidence(unit: CodeUnit, start: int, end: int, label: str) -> Evidence:
    """Evidence for characters ``[start, end)`` of a code unit, mapped to its host file."""
    return Evidence(span=_unit_span(unit, start, end), excerpt=make_excerpt(unit.text, start, end),
                    label=label)


def event_evidence(event: LogEvent, label: str, start: int = 0, end: int | None = None) -> Evidence:
    """Evidence for characters ``[start, end)`` of a log event's text (the whole event by default)."""
    end = len(event.text) if end is None else end
    host = event.span
    if host.end_byte - host.start_byte == len(event.text) and host.end_byte > host.start_byte:
        span = Span.from_offsets(event.text, host.path, start, end).within(host)
    else:
        span = host
    return Evidence(span=span, excerpt=make_excerpt(event.text, start, end),
                    label=f"{label} ({event.kind.value} event {event.index})")


def file_line_evidence(ctx: RunContext, path: Path, line_index: int, label: str, *, max_bytes: int = 1 << 20) -> Evidence:
    """Evidence for one line (0-based ``line_index``) of a small text file of the run.

    Only the first ``max_bytes`` bytes are read; a line past them (or an unreadable file)
    gives a line-only span with an empty excerpt.
    """
    rel = ctx.relative(path)
    try:
        with open(path, "rb") as handle:
            text = handle.read(max_bytes).decode("utf-8", errors="replace")
    except OSError:
        return Evidence(span=Span.from_lines(rel, line_index + 1, line_index + 1), excerpt="", label=label)
    start = 0
    for _ in range(line_index):
        nxt = text.find("\n", start)
        if nxt == -1:
            return Evidence(span=Span.from_lines(rel, line_index + 1, line_index + 1), excerpt="", label=label)
        start = nxt + 1
    end = text.find("\n", start)
    end = len(text) if end == -1 else end
    if end > start and text[end - 1] == "\r":
        end -= 1
    return Evidence(span=Span.from_offsets(text, rel, start, end), excerpt=make_excerpt(text, start, end), label=label)
