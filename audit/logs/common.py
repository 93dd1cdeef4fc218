"""Helpers shared by the log adapters: the event cap, fast spans, code-language guesses.

Log adapters turn a log file's text into :class:`mleaudit.audit.units.LogEvent` records whose spans
point back into that text. Logs can be large (tens of MB, hundreds of thousands of lines), so
spans are built from a precomputed line index instead of counting newlines for every event
(:class:`SpanMaker`), and :class:`EventList` stops an adapter once a log has given
:data:`MAX_LOG_EVENTS` events, so one huge log cannot exhaust memory. JSON in log text is read
by :mod:`mleaudit.audit.logs.jsonregions`.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from itertools import accumulate
from typing import Iterator

from mleaudit.audit.model import Span
from mleaudit.audit.units import Actor, LogEvent, LogEventKind

__all__ = [
    "AtLineStart",
    "CUT_SHORT",
    "is_cut_short",
    "lines_start_with",
    "MAX_LOG_EVENTS",
    "EventList",
    "EventLimitReached",
    "SHELL_WORDS",
    "SpanMaker",
    "guess_code_language",
    "restamp",
]

#: ``LogEvent.location`` of an event the log ends inside (a fenced code block never closed): the
#: log was cut short there, and what the agent did after it is not in the log.
CUT_SHORT = "cut short: the log ends inside this block"


def is_cut_short(event: LogEvent) -> bool:
    """Whether the log ends inside ``event`` (see :data:`CUT_SHORT`).

    Parameters
    ----------
    event : LogEvent

    Returns
    -------
    bool
    """
    return event.location == CUT_SHORT


#: The most events one log gives; an adapter stops at the next one and the rest of the log is
#: reported as not read. 100 000 events is far more than real runs produce (the longest real
#: logs give a few thousand) and keeps a log's events within a few hundred MB.
MAX_LOG_EVENTS = 100_000


class EventLimitReached(Exception):
    """Raised by :meth:`EventList.append` for the first event past :data:`MAX_LOG_EVENTS`.

    ``event`` is the refused event (its span says where reading stopped), ``events`` the list
    with the events kept and ``limit`` the cap.
    """

    def __init__(self, event: LogEvent, events: "EventList") -> None:
        super().__init__(f"over {events.limit} events")
        self.event = event
        self.events = events
        self.limit = events.limit


class EventList(list):
    """A list of events that refuses to grow past :data:`MAX_LOG_EVENTS` (read when created).

    Adapters collect their events in one; :func:`mleaudit.audit.logs.parse_log` catches
    :class:`EventLimitReached` and keeps the events gathered so far.
    """

    __slots__ = ("limit",)

    def __init__(self) -> None:
        super().__init__()
        self.limit = MAX_LOG_EVENTS

    def append(self, event: LogEvent) -> None:  # noqa: D102 - list.append with a cap
        if len(self) >= self.limit:
            raise EventLimitReached(event, self)
        super().append(event)


class SpanMaker:
    """Builds :class:`Span` records for one text; equal to ``Span.from_offsets`` but O(log n).

    The line index is built on the first span asked for (a reader that gives no event builds
    none).

    Parameters
    ----------
    text : str
        The whole file text.
    path : str
        POSIX path of the file, relative to the run root.
    """

    __slots__ = ("text", "path", "_line_starts")

    def __init__(self, text: str, path: str) -> None:
        self.text = text
        self.path = path
        self._line_starts: list[int] | None = None

    @property
    def _starts(self) -> list[int]:
        """Where each line starts: 0, then one past every ``\\n``."""
        starts = self._line_starts
        if starts is None:
            # split and accumulate run in C; a find loop costs a Python step per line
            lines = self.text.split("\n")
            lines.pop()
            starts = [0, *accumulate([len(line) + 1 for line in lines])]
            self._line_starts = starts
        return starts

    def _point(self, offset: int) -> tuple[int, int]:
        index = bisect_right(self._starts, offset) - 1
        return index + 1, offset - self._starts[index] + 1

    def span(self, start: int, end: int) -> Span:
        """The span of characters ``[start, end)`` (clamped to the text)."""
        length = len(self.text)
        start = 0 if start < 0 else length if start > length else start
        end = start if end < start else length if end > length else end
        starts = self._line_starts or self._starts
        first = bisect_right(starts, start) - 1
        last = bisect_right(starts, end, first) - 1
        return Span(
            path=self.path,
            start_byte=start,
            end_byte=end,
            start_line=first + 1,
            start_col=start - starts[first] + 1,
            end_line=last + 1,
            end_col=end - starts[last] + 1,
        )

    def line_span(self, offset: int) -> Span:
        """The span of the whole line holding ``offset`` (without its newline)."""
        starts = self._starts
        index = bisect_right(starts, max(0, min(offset, len(self.text)))) - 1
        start = starts[index]
        end = self.text.find("\n", start)
        return self.span(start, len(self.text) if end == -1 else end)


def restamp(event: LogEvent, index: int, *, kind: LogEventKind | None = None, role: str | None = None,
            actor: Actor | None = None) -> LogEvent:
    """``dataclasses.replace(event, index=index, ...)`` for the fields readers renumber and
    re-attribute, built directly (``replace`` looks up every field of the class on each call).

    Parameters
    ----------
    event : LogEvent
    index : int
        The event's number in its log.
    kind, role, actor : optional
        New values; ``None`` keeps the event's own.

    Returns
    -------
    LogEvent
    """
    return LogEvent(index=index, kind=event.kind if kind is None else kind, text=event.text, span=event.span,
                    language=event.language, role=event.role if role is None else role, location=event.location,
                    actor=event.actor if actor is None else actor)


class AtLineStart:
    """A pattern tried at every line start: ``^(?:source)`` with ``re.MULTILINE``, found faster.

    The plain form tries the pattern at every position of the text; this one tries it at the
    start of the text and after each line break, which the regex engine finds with a fast scan
    for its first character. The answers are the same for patterns that never match across a
    line break (:meth:`matches` relies on it; :meth:`search` does not).

    Parameters
    ----------
    source : str
        The pattern without its ``^``.
    flags : int
        Regex flags; ``re.MULTILINE`` is added.
    """

    __slots__ = ("pattern", "_first", "_after_break")

    def __init__(self, source: str, flags: int = 0) -> None:
        flags |= re.MULTILINE
        #: The plain form, for readers that need a pattern object.
        self.pattern = re.compile(f"^(?:{source})", flags)
        self._first = re.compile(f"(?:{source})", flags)
        self._after_break = re.compile(f"\n(?:{source})", flags)

    def search(self, text: str, end: int | None = None) -> bool:
        """Whether ``self.pattern.search(text, 0, end)`` finds a match."""
        end = len(text) if end is None else end
        return self._first.match(text, 0, end) is not None or self._after_break.search(text, 0, end) is not None

    def matches(self, text: str, end: int | None = None) -> Iterator[tuple[int, re.Match[str]]]:
        """``(line start, match)`` for each match of ``self.pattern.finditer(text, 0, end)``;
        a match found after a line break includes it (the line starts one character later)."""
        end = len(text) if end is None else end
        first = self._first.match(text, 0, end)
        pos = 0
        if first is not None:
            yield 0, first
            pos = first.end()
        for match in self._after_break.finditer(text, pos, end):
            yield match.start() + 1, match


#: Command words that start a shell script rather than Python (not followed by ``=``, ``(``,
#: ``.`` or ``[``, which would make them Python names).
SHELL_WORDS = (
    "apt", "apt-get", "awk", "bash", "cat", "cd", "chmod", "conda", "cp", "curl", "df", "du", "echo",
    "export", "find", "git", "grep", "head", "kaggle", "kill", "ls", "mkdir", "mv", "nohup",
    "nvidia-smi", "pip", "pip3", "pkill", "ps", "python", "python3", "rm", "sed", "sh", "source",
    "sudo", "tail", "tar", "tee", "timeout", "touch", "uv", "unzip", "wc", "wget",
)  # fmt: skip
_SHELL_START = re.compile(
    r"^[ \t]*(?:"
    + "|".join(re.escape(w) for w in sorted(SHELL_WORDS, key=len, reverse=True))
    + r")(?=[ \t;&|<>]|$)(?![ \t]*=)"
)
_SHEBANG = re.compile(r"^#![ \t]*(?:/usr)?/bin/(?:env[ \t]+)?(\w+)")


def guess_code_language(text: str) -> str:
    """``"bash"`` when a block of executed code is a shell script, else ``"python"``.

    Agents run shell scripts through the same "code" action as Python (``cat > f.py <<'EOF'``,
    ``cd /home/code && python train.py``). The first line that is not blank and not a comment
    decides: a shell shebang or a known command word (:data:`SHELL_WORDS`) means bash.

    Examples
    --------
    >>> guess_code_language("cd /home/code && python train.py")
    'bash'
    >>> guess_code_language("import pandas as pd\\ncat = pd.read_csv('x.csv')")
    'python'
    """
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped:
            continue
        shebang = _SHEBANG.match(stripped)
        if shebang is not None:
            return "python" if shebang.group(1).startswith("python") else "bash"
        if stripped.startswith("#"):
            continue
        return "bash" if _SHELL_START.match(line) else "python"
    return "python"


def lines_start_with(text: str, prefix: re.Pattern[str], *, sample: int = 5, needed: int = 3) -> bool:
    """Whether at least ``needed`` of the first ``sample`` non-blank lines match ``prefix``.

    The format sniff of line-prefixed logs (MLE-bench's ``run.log``, Python ``logging`` output):
    only the first 64 KiB are looked at, so detection stays cheap on huge files.
    """
    lines = [line for line in text[:65536].splitlines() if line.strip()][:sample]
    return len(lines) >= needed and sum(1 for line in lines if prefix.match(line)) >= needed
