"""The events of one MLAgentBench file, numbered in file order: spans, free text, JSON string values."""

from __future__ import annotations

from mleaudit.audit.logs.common import EventList, SpanMaker, restamp
from mleaudit.audit.logs.jsonregions import string_content
from mleaudit.audit.logs.text import Stamp, scan_text, stampable
from mleaudit.audit.units import Actor, LogEvent, LogEventKind

__all__ = ["Events"]


class Events:
    """Collects events in file order, numbering them."""

    def __init__(self, text: str, path: str) -> None:
        self.text = text
        self.spans = SpanMaker(text, path)
        self.events = EventList()

    def add(self, kind: LogEventKind, start: int, end: int, actor: Actor, *, text: str | None = None,
            language: str | None = None, role: str = "", location: str = "") -> None:
        if text is None:
            while start < end and self.text[start] in " \t\r\n":
                start += 1
            while end > start and self.text[end - 1] in " \t\r\n":
                end -= 1
            body = self.text[start:end]
        else:
            body = text
        if not body or body.isspace():  # as "not body.strip()", without copying body
            return
        self.events.append(LogEvent(index=len(self.events), kind=kind, text=body, span=self.spans.span(start, end),
                                    language=language, role=role, location=location, actor=actor))

    def free_text(self, start: int, end: int, actor: Actor, *, role: str, code_actor: Actor = Actor.AGENT) -> None:
        """Free text as MESSAGE events (paragraphs), its code blocks as CODE/COMMAND events."""
        if stampable(start, end):
            stamp = Stamp(len(self.events), role, actor, code_actor)
            for event in scan_text(self.spans, start, end, plain_kind=LogEventKind.MESSAGE, stamp=stamp):
                self.events.append(event)
            return
        for event in scan_text(self.spans, start, end, plain_kind=LogEventKind.MESSAGE):
            code = event.kind in (LogEventKind.CODE, LogEventKind.COMMAND)
            kind = event.kind if code else LogEventKind.MESSAGE
            self.events.append(restamp(event, len(self.events), kind=kind, role=role,
                                       actor=code_actor if code else actor))

    def add_value(self, kind: LogEventKind, region: tuple[int, int], value: str, actor: Actor, where: str, *,
                  language: str | None = None, role: str = "") -> None:
        """A JSON string value (``region`` includes its quotes) as one event."""
        if not value or value.isspace():  # as "not value.strip()", without copying value
            return
        inside = string_content(self.text, region) or region
        self.events.append(LogEvent(index=len(self.events), kind=kind, text=value, span=self.spans.span(*inside),
                                    language=language, role=role, location=where, actor=actor))
