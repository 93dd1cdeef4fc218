"""Plain-text transcripts: shell prompts, Python prompts, fenced code blocks and execute tags.

What becomes an event:

- fenced blocks (```` ```python ````, ```` ```bash ````, ``~~~``): Python tags give CODE,
  shell tags (``bash``, ``sh``, ``shell``, ``console``, ``zsh``) give COMMAND, other tags give
  OUTPUT; an untagged block is CODE when it looks like Python (imports, ``def``, ``class``,
  ``print(``, an assignment from a call), COMMAND when it starts with a shell command word,
  else OUTPUT;
- ``<execute_bash>``/``<execute_shell>`` (COMMAND) and ``<execute_ipython>``/``<execute_python>``
  (CODE) tags, as CodeAct-style agents write them;
- shell prompts ``$ cmd``, ``user@host:dir$ cmd``, ``[user@host dir]$ cmd``, ``(env) $ cmd``,
  ``bash-5.1$ cmd``, ``~/dir$ cmd``, root prompts ``root@box:/# cmd``, zsh prompts
  ``user@host ~ % cmd`` and arrow prompts of zsh themes (``\u276f cmd``, ``\u279c  dir git:(main) cmd``),
  terminal escapes (colours, window titles) around the prompt allowed as a recorded session
  keeps them; the bare ``# cmd`` and ``% cmd`` forms and ``!cmd`` shell escapes only
  before a known command word (:data:`~mleaudit.audit.logs.prompts.PROMPT_WORDS`) or a path,
  so Markdown headings, Python comments, ``% done`` and ``$5.00`` stay text. Backslash
  continuations, here-documents and the continuation prompt ``> `` (an open quote, a trailing
  ``|``, a here-document typed at an interactive shell) belong to the command: COMMAND;
- PowerShell prompts ``PS C:\\dir> cmd`` with ``>> `` continuation lines, here-strings
  (``@"`` ... ``"@``) and backtick continuations, and ``cmd.exe`` prompts ``C:\\dir>cmd``:
  COMMAND, language ``bash`` (the closest grammar there is; the text is what rules read);
- Python prompts ``>>> `` with ``... `` continuations and IPython prompts ``In [3]: `` with
  ``...: `` continuations: CODE;
- continuation prompts are removed from an event's text (``>>> ``/``... ``, ``>> ``, ``> ``,
  ``...: ``), so lines still align with the file (see
  :func:`~mleaudit.audit.logs.prompts.match_prompt`; readers of line-oriented logs keep them,
  :func:`~mleaudit.audit.logs.prompts.find_prompts`);
- everything else, split into paragraphs at blank lines: MESSAGE until the first command or
  code event and OUTPUT from then on (plain text cannot tell a program's output from the
  agent's prose once commands run; output blocks contain blank lines too), and OUTPUT
  throughout in files named like program output (``*output*``, ``stdout``, ``*.out``, and
  ``*preview*`` such as AutoKaggle's ``data_preview.txt``, the head of the data files).

Spans point exactly at the event text in the file (for blocks typed over several prompted lines
the span covers the block, prompts included).

A fenced code block that is never closed runs to the end of the file: the log was cut short
inside it (a run killed mid-write, a log cut at the size cap). Its event keeps the text up to
the end and its ``location`` is :data:`~mleaudit.audit.logs.common.CUT_SHORT`, so that checks know what
follows it is missing (:func:`mleaudit.audit.logs.parse_log` lists it as a part not read). A stray fence
before prose (an unclosed ``` in a summary) opens no code block and marks nothing.
:func:`scan_text` reads one region of a file the same way, for adapters of formats that embed
free text (prompt and response sections of LLM call logs);
:func:`~mleaudit.audit.logs.prompts.find_prompts` finds only the
typed commands of a region, for the line-oriented readers (``steplog``, ``pylogging``,
``runlog``).
"""

from __future__ import annotations

import functools
import re
from pathlib import PurePosixPath
from typing import Iterator, NamedTuple

from mleaudit.audit.logs import common
from mleaudit.audit.logs.common import CUT_SHORT, EventList, SpanMaker, guess_code_language
from mleaudit.audit.logs.prompts import find_prompts
from mleaudit.audit.units import Actor, LogEvent, LogEventKind

__all__ = ["NAME", "Stamp", "detect", "read_events", "scan_text", "stampable"]

NAME = "text"

_PYTHON_TAGS = frozenset({"python", "py", "python3", "py3", "ipython", "ipython3", "pycon", "jupyter"})
_SHELL_TAGS = frozenset({"bash", "sh", "shell", "console", "zsh", "shell-session", "sh-session", "terminal"})

_BLOCKS = re.compile(
    r"^(?P<indent>[ \t]*)(?P<fence>`{3,}+|~{3,}+)[ \t]*(?P<lang>[^\s`~]*)[^\n]*\n"
    r"(?P<body>.*?)(?:(?P<close>(?<=\n)[ \t]*(?P=fence)[ \t\r]*$)|\Z)"
    r"|<(?P<tag>execute_(?:bash|shell|ipython|python))>(?P<tbody>(?:[^<]|<(?!execute_))*?)</(?P=tag)>",
    re.MULTILINE | re.DOTALL,
)
#: The opening line of a fenced block: the first part of :data:`_BLOCKS`.
_FENCE_OPEN = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}+|~{3,}+)[ \t]*(?P<lang>[^\s`~]*)[^\n]*\n", re.MULTILINE)
_CLOSE_TAIL = re.compile(r"[ \t\r]*$", re.MULTILINE)
_BLANKS = re.compile(r"[ \t]*")
_LOOKS_PYTHON = re.compile(
    r"^[ \t]*(?:import[ \t]+\w|from[ \t]+[\w.]+[ \t]+import\b|def[ \t]+\w+[ \t]*\(|class[ \t]+\w+"
    r"|print\(|[A-Za-z_][\w.]*[ \t]*=[ \t]*[\w.]+\()",
    re.MULTILINE,
)
_OUTPUT_NAME = re.compile(r"(?:output|stdout|stderr|preview|\.out$|\.err$)", re.IGNORECASE)
_PARAGRAPH_BREAK = re.compile(r"\n[ \t]*\n")


class _FenceLines:
    """The line starts of ``text[:end]`` where, past blanks, a ``` or ~~~ fence begins (where the
    fence alternative of :data:`_BLOCKS` can match), asked for in increasing order.

    The next ``````` and ``~~~`` are each remembered until the search passes them: looking for both
    afresh at every step would scan to ``end`` for the one that never occurs, which makes a log
    of many fences (a 10 MB text log: 18,000 steps) quadratic.
    """

    __slots__ = ("_text", "_end", "_next")

    def __init__(self, text: str, end: int) -> None:
        self._text, self._end = text, end
        self._next = {"```": -2, "~~~": -2}  # the next occurrence at or past the last search; -2: not looked for

    def _find(self, needle: str, pos: int) -> int:
        found = self._next[needle]
        if found != -1 and found < pos:
            found = self._next[needle] = self._text.find(needle, pos, self._end)
        return found

    def at_or_after(self, pos: int) -> int:
        """The first fence line start at or after ``pos``, else ``end``."""
        text, end = self._text, self._end
        while True:
            ticks, tildes = self._find("```", pos), self._find("~~~", pos)
            found = min(ticks, tildes) if ticks != -1 and tildes != -1 else max(ticks, tildes)
            if found == -1:
                return end
            line_start = text.rfind("\n", 0, found) + 1
            if line_start >= pos and not text[line_start:found].strip(" \t"):
                return line_start
            line_end = text.find("\n", found, end)
            if line_end == -1:
                return end
            pos = line_end + 1


class _FencedBlock:
    """What ``_BLOCKS.match`` gives for a fenced block (the groups :func:`scan_text` reads), found
    by :func:`_fenced_block`."""

    __slots__ = ("_text", "_opener", "_body", "_close")

    def __init__(self, text: str, opener: re.Match[str], body: tuple[int, int], close: tuple[int, int] | None):
        self._text, self._opener, self._body, self._close = text, opener, body, close

    def span(self, name: str = "") -> tuple[int, int]:
        if name in ("indent", "fence", "lang"):
            return self._opener.span(name)
        if name == "body":
            return self._body
        if name == "close":
            return self._close or (-1, -1)
        if name in ("tag", "tbody"):
            return -1, -1
        if name:
            raise IndexError(f"no such group: {name!r}")
        return self._opener.start(), self.end()

    def group(self, name: str) -> str | None:
        if name in ("indent", "fence", "lang"):
            return self._opener.group(name)
        if name == "tag":
            return None
        start, stop = self.span(name)
        return None if start < 0 else self._text[start:stop]

    def start(self) -> int:
        return self._opener.start()

    def end(self) -> int:
        return self._close[1] if self._close is not None else self._body[1]


def _fenced_block(text: str, line_start: int, end: int) -> _FencedBlock | None:
    """The fenced block ``_BLOCKS.match(text, line_start, end)`` finds at a fence line, found by
    looking for its closing fence with ``find`` (the pattern's lazy body tries the closing line at
    every character); ``None`` when the fence line opens no block (the pattern is then asked)."""
    opener = _FENCE_OPEN.match(text, line_start, end)
    if opener is None:
        return None
    fence = opener.group("fence")
    body_start = opener.end()
    found = text.find(fence, body_start, end)
    while found != -1:
        # a closing line: at a line start (after a line break, so at or past the body's start),
        # blanks, the fence itself, then blanks to the line's end. Only the first fence of a line
        # can close (any later one has that fence before it): the rest of the line is skipped, so
        # each line is looked at once however many fences it holds (a printed message list).
        close_start = max(body_start, text.rfind("\n", body_start, found) + 1)
        if _BLANKS.fullmatch(text, close_start, found) is not None:
            tail = _CLOSE_TAIL.match(text, found + len(fence), end)
            if tail is not None:
                return _FencedBlock(text, opener, (body_start, close_start), (close_start, tail.end()))
        line_end = text.find("\n", found, end)
        if line_end == -1:
            break
        found = text.find(fence, line_end + 1, end)
    return _FencedBlock(text, opener, (body_start, end), None)


def _blocks(text: str, start: int, end: int) -> Iterator[re.Match[str]]:
    """``_BLOCKS.finditer(text, start, end)``, trying the pattern only where a match can start: at
    a line whose first non-blank characters are a fence, or at ``<execute_``. ``find`` gets there
    in C instead of the pattern being tried at every position."""
    pos = start
    fences = _FenceLines(text, end)
    fence = tag = -1  # the next candidates at or after pos (-1: not looked for yet)
    while pos < end:
        if fence < pos:
            fence = fences.at_or_after(pos)
        if tag < pos:
            tag = text.find("<execute_", pos, end)
            tag = end if tag == -1 else tag
        candidate = min(fence, tag)
        if candidate >= end:
            return
        match = _fenced_block(text, candidate, end) if candidate == fence else None
        if match is None:
            match = _BLOCKS.match(text, candidate, end)
        if match is not None:
            yield match
            pos = match.end()
        else:
            pos = candidate + 1


def detect(path: str, text: str) -> bool:
    """Plain text is the fallback format: anything without NUL characters reads as text."""
    return "\x00" not in text[:65536]


def _fence_kind(lang: str, body: str) -> tuple[LogEventKind, str | None]:
    lang = lang.lower().lstrip("{.").rstrip("}")
    if lang in _PYTHON_TAGS:
        return LogEventKind.CODE, "python"
    if lang in _SHELL_TAGS:
        return LogEventKind.COMMAND, "bash"
    if lang:
        return LogEventKind.OUTPUT, None
    if _LOOKS_PYTHON.search(body):
        return LogEventKind.CODE, "python"
    if body.strip() and guess_code_language(body) == "bash":
        return LogEventKind.COMMAND, "bash"
    return LogEventKind.OUTPUT, None


#: The most characters one COMMAND event holds; a longer command (a prompt line millions of
#: characters long) is read as several events (:meth:`_Builder._split_command`).
MAX_COMMAND_CHARS = 2 * 1024 * 1024


def _piece_end(body: str, pos: int) -> int:
    """Where the piece of ``body`` starting at ``pos`` ends: at most :data:`MAX_COMMAND_CHARS`
    on, after the last line break (else blank) in that reach, else at the cap."""
    limit = pos + MAX_COMMAND_CHARS
    if limit >= len(body):
        return len(body)
    for sep in ("\n", " ", "\t"):
        found = body.rfind(sep, pos + 1, limit)
        if found > pos:
            return found + 1
    return limit


class Stamp(NamedTuple):
    """How :func:`scan_text` numbers and attributes the events it builds, for readers that renumber
    and re-attribute them: ``index`` from ``first_index``, ``role`` on all, code and commands
    with ``code_actor``, everything else a MESSAGE with ``actor`` (what those readers made of
    the plain events before, built once)."""

    first_index: int
    role: str
    actor: Actor
    code_actor: Actor


class _Builder:
    """Collects events in file order; free text is OUTPUT once a command or code event was seen."""

    def __init__(self, spans: SpanMaker, plain_kind: LogEventKind | None, stamp: Stamp | None = None) -> None:
        self.spans = spans
        self.text = spans.text
        self.events = EventList()
        self.plain_kind = plain_kind
        self.after_exec = False
        self.stamp = stamp

    def _event(self, kind: LogEventKind, body: str, span, language: str | None, location: str) -> LogEvent:
        stamp = self.stamp
        if stamp is None:
            return LogEvent(index=len(self.events), kind=kind, text=body, span=span, language=language,
                            location=location)
        code = kind is LogEventKind.CODE or kind is LogEventKind.COMMAND
        return LogEvent(index=stamp.first_index + len(self.events), kind=kind if code else LogEventKind.MESSAGE,
                        text=body, span=span, language=language, role=stamp.role, location=location,
                        actor=stamp.code_actor if code else stamp.actor)

    def add(self, kind: LogEventKind, start: int, end: int, language: str | None, text: str | None = None,
            location: str = "") -> None:
        if text is None:
            # Trailing blanks (a CRLF file's ``\r``) are not part of a command or block.
            while end > start and self.text[end - 1] in " \t\r\n":
                end -= 1
        body = self.text[start:end] if text is None else text
        if not body or body.isspace():  # as "not body.strip()", without copying body
            return
        if kind is LogEventKind.COMMAND and len(body) > MAX_COMMAND_CHARS:
            self._split_command(start, end, language, body, text is None, location)
            return
        self.events.append(self._event(kind, body, self.spans.span(start, end), language, location))
        if kind in (LogEventKind.COMMAND, LogEventKind.CODE):
            self.after_exec = True

    def _split_command(self, start: int, end: int, language: str | None, body: str, verbatim: bool,
                       location: str) -> None:
        """A command over :data:`MAX_COMMAND_CHARS`, as several COMMAND events of at most that
        many characters each, cut at a line break or a blank where there is one: all of it is
        read, none of it as one huge event. Pieces of a verbatim command keep their own spans;
        pieces of a text rebuilt from continuation lines share the command's span."""
        pos = 0
        while pos < len(body):
            cut = _piece_end(body, pos)
            piece = body[pos:cut]
            if piece.strip():
                span = self.spans.span(start + pos, start + cut) if verbatim else self.spans.span(start, end)
                self.events.append(self._event(LogEventKind.COMMAND, piece, span, language, location))
            pos = cut
        self.after_exec = True

    def plain(self, start: int, end: int) -> None:
        """Free text ``[start, end)``, one event per paragraph."""
        kind = self.plain_kind or (LogEventKind.OUTPUT if self.after_exec else LogEventKind.MESSAGE)
        pos = start
        for brk in _PARAGRAPH_BREAK.finditer(self.text, start, end):  # no anchor: as in text[start:end]
            self._paragraph(kind, pos, brk.start())
            pos = brk.end()
        self._paragraph(kind, pos, end)

    def _paragraph(self, kind: LogEventKind, start: int, end: int) -> None:
        while start < end and self.text[start] in "\n\r":
            start += 1
        while end > start and self.text[end - 1] in " \t\n\r":
            end -= 1
        if end > start:
            self.events.append(self._event(kind, self.text[start:end], self.spans.span(start, end), None, ""))



def _scan_lines(builder: _Builder, start: int, end: int) -> None:
    """Find prompt events in ``[start, end)`` (outside fenced blocks and tags)."""
    plain_from = start
    for hit in find_prompts(builder.text, start, end, verbatim=False):
        builder.plain(plain_from, hit.line_start)
        builder.add(hit.kind, hit.start, hit.end, hit.language, hit.text)
        plain_from = hit.end + 1
    builder.plain(plain_from, max(plain_from, end))

def _skip_template_indent(text: str, indent: str, start: int, end: int) -> int:
    """Where a fenced block's code starts: after the first line's indent when only that line
    carries the fence's indent. A prompt template that indents its fence (``    ```python``
    then ``    {code}``) indents the first line of the code it wraps and no other."""
    if not indent or not text.startswith(indent, start):
        return start
    first_end = text.find("\n", start, end)
    if first_end == -1:
        return start
    rest = [line for line in text[first_end + 1 : end].split("\n") if line.strip()]
    if rest and any(not line.startswith(indent) for line in rest):
        return start + len(indent)
    return start


def scan_text(spans: SpanMaker, start: int, end: int, *, plain_kind: LogEventKind | None = None,
              cut_at_end: bool | None = None, stamp: Stamp | None = None) -> list[LogEvent]:
    """Events of the region ``[start, end)`` of a text, read as a plain-text transcript.

    Parameters
    ----------
    spans : SpanMaker
        Over the whole file text (spans are positions in the file).
    start, end : int
        The region, character offsets; ``start`` should begin a line.
    plain_kind : LogEventKind, optional
        The kind of free text; by default MESSAGE until the first command or code event and
        OUTPUT from then on (see the module docstring).
    cut_at_end : bool, optional
        Whether a fenced block left open at ``end`` means the file was cut short (its event's
        ``location`` is then :data:`~mleaudit.audit.logs.common.CUT_SHORT`); by default only when
        ``end`` is the end of the file.
    stamp : Stamp, optional
        Number and attribute the events as :class:`Stamp` says (else ``index`` from 0, the
        kinds above, no role, actor unknown). Only for a region shorter than the event limit
        (:func:`stampable`): the limit then cannot be reached inside it.

    Returns
    -------
    list of LogEvent
        In text order, ``index`` from 0 (a caller that joins regions renumbers them); every
        text equals the file text at its span, except ``>>>`` blocks (prompts removed).
    """
    text = spans.text
    cut = (end >= len(text)) if cut_at_end is None else cut_at_end
    builder = _Builder(spans, plain_kind, stamp)
    pos = start
    for match in _blocks(text, start, end):
        _scan_lines(builder, pos, match.start())
        location = ""
        if match.group("tag"):
            tag = match.group("tag")
            if tag in ("execute_bash", "execute_shell"):
                kind, language = LogEventKind.COMMAND, "bash"
            else:
                kind, language = LogEventKind.CODE, "python"
            body_start, body_end = match.span("tbody")
        else:
            body_start, body_end = match.span("body")
            kind, language = _fence_kind(match.group("lang"), match.group("body"))
            if cut and match.group("close") is None and kind in (LogEventKind.CODE, LogEventKind.COMMAND):
                location = CUT_SHORT
            body_start = _skip_template_indent(text, match.group("indent"), body_start, body_end)
        # Strip the blank lines an agent puts around code inside tags, keeping exact offsets.
        while body_start < body_end and text[body_start] in "\n\r":
            body_start += 1
        while body_end > body_start and text[body_end - 1] in " \t\n\r":
            body_end -= 1
        builder.add(kind, body_start, body_end, language, location=location)
        pos = match.end()
    _scan_lines(builder, pos, end)
    return builder.events


@functools.lru_cache(maxsize=8192)
def _output_name(path: str) -> bool:
    """Whether the file name says program output (a function of the path: cached)."""
    return _OUTPUT_NAME.search(PurePosixPath(path).name) is not None


def stampable(start: int, end: int) -> bool:
    """Whether :func:`scan_text` may stamp the events of ``[start, end)``: the region is shorter
    than the event limit, so it gives fewer events than that (each holds a character of its own)
    and the limit, whose exception hands over the region's events as built, is never reached."""
    return end - start < common.MAX_LOG_EVENTS


def read_events(path: str, text: str, notes: list[str] | None = None) -> list[LogEvent]:
    """Events of a plain-text transcript, in file order (see the module docstring).

    Parameters
    ----------
    path : str
        The log's POSIX path relative to the run root (goes on every span).
    text : str
        The whole file text.
    notes : list of str, optional
        Unused (every line of a text log is read).

    Returns
    -------
    list of LogEvent
        Indexed from 0; COMMAND events have language ``"bash"``, CODE events ``"python"``
        (or ``"bash"`` for an untagged shell block). A block the file ends inside has
        ``location`` :data:`~mleaudit.audit.logs.common.CUT_SHORT`.
    """
    plain_kind = LogEventKind.OUTPUT if _output_name(path) else None
    return scan_text(SpanMaker(text, path), 0, len(text), plain_kind=plain_kind)
