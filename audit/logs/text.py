"""Plain-text transcripts: shell prompts, Python prompts, fenced code blocks and execute tags.

What becomes an event:

- fenced blocks (```` ```python ````, ```` ```bash ````, ``~~~``): Python tags give CODE,
  shell tags (``bash``, ``sh``, ``shell``, ``console``, ``zsh``) give COMMAND, other tags give
  OUTPUT; an untagged block is CODE when it looks like Python (imports, ``def``, ``class``,
  ``print(``, an assignment from a call), COMMAND when it starts with a shell command word,
  else OUTPUT;
- ``<execute_bash>``/``<execute_shell>`` (COMMAND) and ``<execute_ipython>``/``<execute_python>``
  (CODE) tags, as CodeAct-style agents write them;
- shell prompts ``$ cmd``, ``user@host:dir$ cmd``, ``(env) $ cmd`` and root prompts
  ``# cmd`` (the latter only with a known command word, so Markdown headings and Python
  comments stay text), with backslash continuations and here-documents: COMMAND;
- Python prompts ``>>> `` with ``... `` continuations: CODE (the prompts are removed from
  the text, so lines still align with the file);
- everything else, split into paragraphs at blank lines: MESSAGE until the first command or
  code event and OUTPUT from then on (plain text cannot tell a program's output from the
  agent's prose once commands run; output blocks contain blank lines too), and OUTPUT
  throughout in files named like program output (``*output*``, ``stdout``, ``*.out``, and
  ``*preview*`` such as AutoKaggle's ``data_preview.txt``, the head of the data files).

Spans point exactly at the event text in the file (for ``>>>`` blocks of several lines the
span covers the block, prompts included).

A fenced code block that is never closed runs to the end of the file: the log was cut short
inside it (a run killed mid-write, a log cut at the size cap). Its event keeps the text up to
the end and its ``location`` is :data:`~audit.logs.common.CUT_SHORT`, so that checks know what
follows it is missing (:func:`audit.logs.parse_log` lists it as a part not read). A stray fence
before prose (an unclosed ``` in a summary) opens no code block and marks nothing. :func:`scan_text` reads one region of a file the same way, for adapters of
formats that embed free text (prompt and response sections of LLM call logs).
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath

from audit.logs.common import CUT_SHORT, SHELL_WORDS, EventList, SpanMaker, guess_code_language
from audit.units import LogEvent, LogEventKind

__all__ = ["NAME", "detect", "read_events", "scan_text"]

NAME = "text"

_PYTHON_TAGS = frozenset({"python", "py", "python3", "py3", "ipython", "ipython3", "pycon", "jupyter"})
_SHELL_TAGS = frozenset({"bash", "sh", "shell", "console", "zsh", "shell-session", "sh-session", "terminal"})

_BLOCKS = re.compile(
    r"^(?P<indent>[ \t]*)(?P<fence>`{3,}+|~{3,}+)[ \t]*(?P<lang>[^\s`~]*)[^\n]*\n"
    r"(?P<body>.*?)(?:(?P<close>(?<=\n)[ \t]*(?P=fence)[ \t\r]*$)|\Z)"
    r"|<(?P<tag>execute_(?:bash|shell|ipython|python))>(?P<tbody>(?:[^<]|<(?!execute_))*?)</(?P=tag)>",
    re.MULTILINE | re.DOTALL,
)
_PROMPT = re.compile(
    r"^[ \t]*(?:\([\w.-]+\)[ \t]*)?(?:[\w.-]+@[\w.-]+(?::[^\s$#]*)?[ \t]*)?\$[ \t]+(?=[A-Za-z_./~\"'])"
)
_ROOT_PROMPT = re.compile(
    r"^[ \t]*(?:[\w.-]+@[\w.-]+(?::[^\s$#]*)?[ \t]*)?#[ \t]+(?=(?:"
    + "|".join(re.escape(w) for w in sorted(SHELL_WORDS, key=len, reverse=True))
    + r")(?:[ \t]|$))"
)
_PY_PROMPT = re.compile(r"^[ \t]*>>>(?: |$)")
_PY_CONT = re.compile(r"[ \t]*\.\.\.(?: |$)", re.MULTILINE)
_HEREDOC = re.compile(r"<<-?[ \t]*(['\"]?)([A-Za-z_][\w]*)\1")
_LOOKS_PYTHON = re.compile(
    r"^[ \t]*(?:import[ \t]+\w|from[ \t]+[\w.]+[ \t]+import\b|def[ \t]+\w+[ \t]*\(|class[ \t]+\w+"
    r"|print\(|[A-Za-z_][\w.]*[ \t]*=[ \t]*[\w.]+\()",
    re.MULTILINE,
)
_OUTPUT_NAME = re.compile(r"(?:output|stdout|stderr|preview|\.out$|\.err$)", re.IGNORECASE)
_PARAGRAPH_BREAK = re.compile(r"\n[ \t]*\n")


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


class _Builder:
    """Collects events in file order; free text is OUTPUT once a command or code event was seen."""

    def __init__(self, spans: SpanMaker, plain_kind: LogEventKind | None) -> None:
        self.spans = spans
        self.text = spans.text
        self.events = EventList()
        self.plain_kind = plain_kind
        self.after_exec = False

    def add(self, kind: LogEventKind, start: int, end: int, language: str | None, text: str | None = None,
            location: str = "") -> None:
        if text is None:
            # Trailing blanks (a CRLF file's ``\r``) are not part of a command or block.
            while end > start and self.text[end - 1] in " \t\r\n":
                end -= 1
        body = self.text[start:end] if text is None else text
        if not body.strip():
            return
        self.events.append(LogEvent(index=len(self.events), kind=kind, text=body, span=self.spans.span(start, end),
                                    language=language, location=location))
        if kind in (LogEventKind.COMMAND, LogEventKind.CODE):
            self.after_exec = True

    def plain(self, start: int, end: int) -> None:
        """Free text ``[start, end)``, one event per paragraph."""
        kind = self.plain_kind or (LogEventKind.OUTPUT if self.after_exec else LogEventKind.MESSAGE)
        pos = start
        chunk = self.text[start:end]
        for brk in _PARAGRAPH_BREAK.finditer(chunk):
            self._paragraph(kind, pos, start + brk.start())
            pos = start + brk.end()
        self._paragraph(kind, pos, end)

    def _paragraph(self, kind: LogEventKind, start: int, end: int) -> None:
        while start < end and self.text[start] in "\n\r":
            start += 1
        while end > start and self.text[end - 1] in " \t\n\r":
            end -= 1
        if end > start:
            self.events.append(
                LogEvent(index=len(self.events), kind=kind, text=self.text[start:end], span=self.spans.span(start, end))
            )


def _scan_lines(builder: _Builder, start: int, end: int) -> None:
    """Find prompt events in ``[start, end)`` (outside fenced blocks and tags)."""
    text = builder.text
    plain_from = start
    pos = start
    while pos < end:
        line_end = text.find("\n", pos, end)
        line_end = end if line_end == -1 else line_end
        line = text[pos:line_end]
        prompt = _PROMPT.match(line) or _ROOT_PROMPT.match(line)
        if prompt is not None:
            cmd_start = pos + prompt.end()
            last_end = line_end
            # Continuation lines and here-document bodies belong to the command.
            heredoc = _HEREDOC.search(line, prompt.end())
            last_start = cmd_start
            while last_end < end and text[last_start:last_end].rstrip().endswith("\\"):
                last_start = last_end + 1
                nxt = text.find("\n", last_start, end)
                last_end = end if nxt == -1 else nxt
            if heredoc is not None:
                delimiter = heredoc.group(2)
                strip_tabs = text[pos + heredoc.start() : pos + heredoc.start() + 3] == "<<-"
                scan = last_end
                while scan < end:
                    nxt = text.find("\n", scan + 1, end)
                    nxt = end if nxt == -1 else nxt
                    body_line = text[scan + 1 : nxt]
                    scan = nxt
                    if (body_line.lstrip("\t") if strip_tabs else body_line).rstrip("\r") == delimiter:
                        break
                last_end = scan
            builder.plain(plain_from, pos)
            builder.add(LogEventKind.COMMAND, cmd_start, last_end, "bash")
            pos = plain_from = last_end + 1
            continue
        py = _PY_PROMPT.match(line)
        if py is not None:
            code_start = pos + py.end()
            lines = [line[py.end() :]]
            last_end = line_end
            while last_end < end:
                nxt = text.find("\n", last_end + 1, end)
                nxt = end if nxt == -1 else nxt
                cont = _PY_CONT.match(text, last_end + 1, nxt)
                if cont is None:
                    break
                lines.append(text[cont.end() : nxt])
                last_end = nxt
            builder.plain(plain_from, pos)
            builder.add(LogEventKind.CODE, code_start, last_end, "python", "\n".join(lines))
            pos = plain_from = last_end + 1
            continue
        pos = line_end + 1
    builder.plain(plain_from, min(pos, end))


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
              cut_at_end: bool | None = None) -> list[LogEvent]:
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
        ``location`` is then :data:`~audit.logs.common.CUT_SHORT`); by default only when
        ``end`` is the end of the file.

    Returns
    -------
    list of LogEvent
        In text order, ``index`` from 0 (a caller that joins regions renumbers them); every
        text equals the file text at its span, except ``>>>`` blocks (prompts removed).
    """
    text = spans.text
    cut = (end >= len(text)) if cut_at_end is None else cut_at_end
    builder = _Builder(spans, plain_kind)
    pos = start
    for match in _BLOCKS.finditer(text, start, end):
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
        ``location`` :data:`~audit.logs.common.CUT_SHORT`.
    """
    plain_kind = LogEventKind.OUTPUT if _OUTPUT_NAME.search(PurePosixPath(path).name) else None
    return scan_text(SpanMaker(text, path), 0, len(text), plain_kind=plain_kind)
