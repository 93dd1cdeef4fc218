"""Units the audit analyses: code texts (real files, notebook code, code inside logs) and log events.

A :class:`CodeUnit` is what rules of target ``code`` and the similarity engine read. Its text may
be a whole ``.py`` file, the joined code cells of a notebook, or a block embedded in a log
(an AIDE node, a shell command in a transcript); ``origin`` and ``cells`` map positions in the
unit back to the host file so evidence always points at something a reviewer can open.

Every text of a unit or an event encodes as UTF-8: a lone UTF-16 surrogate (which JSON escapes
such as ``"\\udfff"`` and Python literals can spell, and which no encoder accepts) is replaced by
U+FFFD when the record is built, one character for one, so offsets into the text are unchanged.
The readers that decode such escapes say so in their notes.
"""

from __future__ import annotations

import bisect

import enum
import re
from dataclasses import dataclass

from mleaudit.audit.model import Span

__all__ = ["Actor", "CellRange", "CodeUnit", "LogEventKind", "LogEvent", "encodable"]

_SURROGATE = re.compile("[\ud800-\udfff]")


def encodable(text: str) -> str:
    """``text`` with every lone surrogate replaced by U+FFFD, so that it encodes as UTF-8.

    Parameters
    ----------
    text : str
        Any text (decoded from JSON escapes or Python literals of a run).

    Returns
    -------
    str
        ``text`` itself when it holds no surrogate, else a copy of the same length.

    Examples
    --------
    >>> encodable("x = '\\udfff'")
    "x = '\ufffd'"
    >>> encodable("plain") == "plain"
    True
    """
    if text.isascii() or not _SURROGATE.search(text):
        return text
    return _SURROGATE.sub("\ufffd", text)


class Actor(enum.Enum):
    """Who produced a code unit or a log event (DESIGN decision 12).

    - ``agent``: code the agent wrote or ran through its tools, and what that code printed;
    - ``scaffold``: the agent framework's own process: its prompts, LLM calls, config and
      progress lines;
    - ``operator``: the person's harness around the run: setup cells, installs, launch
      commands, grading after the run;
    - ``unknown``: nothing tells. Rules judge ``unknown`` like ``agent`` unless they say
      otherwise, so that a unit nobody can place is never exempt.

    Rules declare the actors they judge (``actors:`` in the rule YAML); the heuristics that set
    the actor per run format live in :mod:`mleaudit.audit.attribution` and in each log adapter.
    """

    AGENT = "agent"
    SCAFFOLD = "scaffold"
    OPERATOR = "operator"
    UNKNOWN = "unknown"

    @classmethod
    def parse(cls, value: "str | Actor") -> "Actor":
        """The member spelled ``value`` (case-insensitive).

        Raises
        ------
        ValueError
            If ``value`` names no actor; the message lists the allowed names.
        """
        if isinstance(value, cls):
            return value
        try:
            return cls(str(value).strip().lower())
        except ValueError:
            allowed = ", ".join(m.value for m in cls)
            raise ValueError(f"unknown actor {value!r}; expected one of: {allowed}") from None


@dataclass(frozen=True, slots=True, kw_only=True)
class CellRange:
    """Lines ``[start_line, end_line]`` (1-based, inclusive) of a unit's text that come from one
    notebook cell; ``cell_index`` is the cell's 0-based index among all cells of the notebook."""

    cell_index: int
    start_line: int
    end_line: int


@dataclass(frozen=True, slots=True, kw_only=True)
class CodeUnit:
    """One piece of code to audit.

    Parameters
    ----------
    path : str
        Host file, POSIX, relative to the run root (``code/train.py``, ``logs/journal.json``).
    language : str
        Grammar name from :data:`mleaudit.audit.parsing.LANGUAGES`.
    text : str
        The code.
    origin : Span or None
        Where ``text`` sits in the host file when it is embedded (log code); ``None`` when the
        unit is the whole file or a notebook (see ``cells``).
    cells : tuple of CellRange
        For notebooks: which lines of ``text`` come from which cell.
    source : str
        What the unit came from: ``"file"``, ``"notebook"``, ``"log"``.
    actor : Actor
        Who wrote the code (:class:`Actor`); ``UNKNOWN`` until a reader or
        :mod:`mleaudit.audit.attribution` says.
    """

    path: str
    language: str
    text: str
    origin: Span | None = None
    cells: tuple[CellRange, ...] = ()
    source: str = "file"
    actor: Actor = Actor.UNKNOWN

    def __post_init__(self) -> None:
        path, text = self.path, self.text
        if type(path) is str and type(text) is str and path.isascii() and text.isascii():
            return  # ASCII holds no surrogate: nothing to replace
        _replace_surrogates(self, ("path", "text"))

    def host_span(self, span: Span) -> Span:
        """Map ``span`` (relative to ``text``) to the host file.

        Code decoded from a JSON string (AIDE, OpenHands, JSONL logs) is not a verbatim slice of
        the log, so offsets inside it cannot be shifted into the file: the whole origin is
        returned instead, which still points at the right record.
        """
        if self.origin is None:
            return span
        if len(self.text) != self.origin.end_byte - self.origin.start_byte:
            return self.origin
        return span.within(self.origin)

    def describe(self, line: int) -> str:
        """A human location for ``line`` of ``text``: ``"cell 3, line 2"`` in notebooks, else ``"line N"``."""
        cells = self.cells
        if len(cells) > 16:
            # Cells are in text order: find the last one starting at or before the line.
            starts = _cell_starts(cells)
            k = bisect.bisect_right(starts, line) - 1
            cells = cells[k:k + 1] if k >= 0 else ()
        for cell in cells:
            if cell.start_line <= line <= cell.end_line:
                return f"cell {cell.cell_index}, line {line - cell.start_line + 1}"
        return f"line {line}"


_CELL_STARTS: dict[int, tuple[tuple, list[int]]] = {}


def _cell_starts(cells: tuple) -> list[int]:
    cached = _CELL_STARTS.get(id(cells))
    if cached is None or cached[0] is not cells:
        if len(_CELL_STARTS) >= 8:
            _CELL_STARTS.pop(next(iter(_CELL_STARTS)))
        cached = (cells, [cell.start_line for cell in cells])
        _CELL_STARTS[id(cells)] = cached
    return cached[1]


class LogEventKind(enum.Enum):
    """What a log event is: a shell command, code the agent ran, program output, a message, a tool call."""

    COMMAND = "command"
    CODE = "code"
    OUTPUT = "output"
    MESSAGE = "message"
    TOOL_CALL = "tool_call"


@dataclass(frozen=True, slots=True, kw_only=True)
class LogEvent:
    """One event of an agent log, in order.

    ``span`` locates ``text`` in the log file (for JSON logs: the string value's region, or the
    record's line). ``language`` is ``"bash"`` for commands and ``"python"`` for code, else ``None``.
    ``location`` names the event's place in a structured log, JSON-path style
    (``samples[0].messages[5].tool_calls[0]``, ``[12].args.command``); empty for plain text,
    where the span's line says it. ``actor`` says who produced the event (:class:`Actor`).
    """

    index: int
    kind: LogEventKind
    text: str
    span: Span
    language: str | None = None
    role: str = ""
    location: str = ""
    actor: Actor = Actor.UNKNOWN

    def __post_init__(self) -> None:
        text, role, location = self.text, self.role, self.location
        if (type(text) is str and type(role) is str and type(location) is str
                and text.isascii() and role.isascii() and location.isascii()):
            return  # ASCII holds no surrogate: nothing to replace
        _replace_surrogates(self, ("text", "role", "location"))


def _replace_surrogates(record: object, names: tuple[str, ...]) -> None:
    """Set each text field of a frozen ``record`` named in ``names`` to :func:`encodable` of it."""
    for name in names:
        value = getattr(record, name)
        if isinstance(value, str):
            clean = encodable(value)
            if clean is not value:
                object.__setattr__(record, name, clean)
