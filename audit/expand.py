"""Expand a run into what rules and similarity read: code units and log events.

- every ``.py``/``.sh`` file is a code unit (``source="file"``);
- every Python notebook gives one unit of its joined code cells (``source="notebook"``,
  ``cells`` set) plus one bash unit per shell escape (``!pip``, ``%%bash``), whose ``origin``
  locates the command in the notebook's joined code text (the coordinates the notebook unit
  itself uses). A *driver* notebook (one that runs an agent framework, :mod:`mleaudit.audit.driver`)
  gives one unit per actor instead: each keeps the joined text's line numbers with the other
  actors' cells emptied, and its ``cells`` lists its own cells;
- every notebook's cell outputs, and its markdown and raw cells, are read as log events
  (:func:`mleaudit.audit.notebooks.read_notebook_outputs`; ``log_formats`` names the notebook
  :data:`NOTEBOOK_OUTPUTS`): OUTPUT (MESSAGE for text cells) events located at the JSON strings
  in the file, with ``location`` such as ``cells[12].outputs[0]``; outputs over
  :data:`MAX_OUTPUT_EVENT_CHARS` are cut at line ends into several events. The outputs are
  then read as a log (the scaffold's printed log holds the agent's code): fenced code, shell
  prompts, structured records and printed calls give CODE, COMMAND and TOOL_CALL events, and
  units like any log's. Outputs are never part of the notebook's code. How each notebook was
  read is in ``RunUnits.notebooks``;
- actors: units and events of a notebook that is not a driver are the AGENT's; in a driver,
  each cell's role decides (:mod:`mleaudit.audit.driver`); log events carry the actor their adapter
  gives, and every unit derived from an event (its code, shell escapes, here-documents)
  inherits it. Code files stay UNKNOWN here (a later pass places them by the run's layout);
- every log is read by its adapter (:mod:`mleaudit.audit.logs`) into events; each CODE event becomes a
  unit in its language and each COMMAND event a bash unit, with ``origin`` = the event's span
  in the log (``source="log"``). IPython syntax in Python code from logs is handled as in
  notebooks (commented out, shell escapes become bash units);
- here-documents in bash units that feed Python (``python - <<EOF``, ``cat > x.py <<EOF``)
  also become Python units located inside the bash text, so code an agent wrote through the
  shell is checked as Python;
- the agent command a sandbox record (``run.json`` of ``mleaudit run``) says the sandbox ran is
  one COMMAND event of the OPERATOR, located at ``spec.command`` in ``run.json``
  (:mod:`mleaudit.audit.sandbox_record`), and a bash unit like any logged command; ``log_formats`` names
  ``run.json`` as ``sandbox-record``.

Nothing is parsed here (the rules engine parses). Files that cannot be read, binary content,
notebooks in languages without a grammar or nested too deep, and the parts of logs that could
not be read (a JSON log cut short or nested deeper than
:data:`~mleaudit.grading.untrusted_json.MAX_JSON_DEPTH`, the event limit) go to ``skipped``; text that
was read with caveats (not valid UTF-8, lone surrogate escapes decoded as U+FFFD) goes to
``notes``; nothing aborts the expansion. Inspect ``.eval`` archives are read member by member
(:func:`mleaudit.audit.logs.inspect_eval.read_eval_archive`); their events and units carry the member's
virtual path ``<archive>!/<member>``, and each member not read is listed in ``skipped`` under
that virtual path.

Note on ``origin``: for logs whose events are decoded from JSON strings (AIDE journals,
OpenHands events, JSONL), ``origin`` is the string literal's region in the file, but the unit
text is the decoded string, so positions inside the unit cannot be mapped onto the file
(escapes such as ``\\n`` change lengths and lines). Such a unit is recognisable by
``len(unit.text) != origin.end_byte - origin.start_byte``; its evidence should point at the
whole origin. Units derived from it (here-documents, shell escapes) get that whole origin.
"""

from __future__ import annotations

import logging
import re
from bisect import bisect_right
from collections import defaultdict
from dataclasses import dataclass
from pathlib import PurePosixPath

from mleaudit.audit.driver import DriverReading, read_driver
from mleaudit.audit.logs import parse_log, read_hidden_members
from mleaudit.audit.logs import text as plain_text
from mleaudit.audit.logs.common import MAX_LOG_EVENTS, SpanMaker
from mleaudit.audit.logs.jsonregions import surrogate_note
from mleaudit.audit.logs.inspect_eval import NAME as INSPECT_FORMAT
from mleaudit.audit.logs.keys import classify_text, is_generic_tool
from mleaudit.audit.logs.toolcalls import call_actions, call_expressions
from mleaudit.audit.logs.inspect_archive import read_eval_archive
from mleaudit.audit.model import Skipped, Span
from mleaudit.audit.notebooks import (
    NotebookCode,
    NotebookError,
    cell_sources,
    read_notebook,
    read_notebook_outputs,
    split_magics,
)
from mleaudit.audit.parsing import LANGUAGES
from mleaudit.audit.run import BINARY_INVALID_SHARE, LONE_CR, Artifact, ArtifactKind, Run, decode_text, python_by_content
from mleaudit.audit.sandbox_record import READER as SANDBOX_READER
from mleaudit.audit.sandbox_record import read_sandbox_command
from mleaudit.audit.textmap import TextMap
from mleaudit.audit.units import Actor, CellRange, CodeUnit, LogEvent, LogEventKind
from mleaudit.grading.untrusted_json import ShadowedList, collect_shadowed

__all__ = [
    "BINARY_OUTPUTS_NOT_READ",
    "NOTEBOOK_OUTPUTS",
    "NotebookRecord",
    "RunUnits",
    "expand_run",
    "heredoc_python_units",
]

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True, kw_only=True)
class RunUnits:
    """A run expanded into units.

    Attributes
    ----------
    code_units : tuple of CodeUnit
        In artifact path order; within a file: the file or notebook unit, then units from its
        shell escapes, log events and here-documents in text order.
    log_events : tuple of LogEvent
        All events of all logs, flat, in artifact path order then event order. Each event's
        log is ``event.span.path``; ``index`` counts within its log.
    log_formats : tuple of (str, str)
        ``(log path, adapter name)`` for every log that gave events, in path order; a notebook
        whose outputs (or markdown cells) gave events is listed as :data:`NOTEBOOK_OUTPUTS`.
    skipped : tuple of Skipped
        What expansion could not read (files, or parts of logs). Files skipped while loading
        are in ``Run.skipped``.
    notes : tuple of Skipped
        Files read with a caveat that is no sign of anything (not valid UTF-8, UTF-16, images
        in notebook outputs).
    notebooks : tuple of NotebookRecord
        How each notebook that could be read was read (code cells, outputs, driver or not), in
        path order.
    """

    code_units: tuple[CodeUnit, ...]
    log_events: tuple[LogEvent, ...]
    log_formats: tuple[tuple[str, str], ...] = ()
    skipped: tuple[Skipped, ...] = ()
    notes: tuple[Skipped, ...] = ()
    notebooks: tuple["NotebookRecord", ...] = ()

    def events_of(self, path: str) -> tuple[LogEvent, ...]:
        """The events of one log, in order."""
        return tuple(e for e in self.log_events if e.span.path == path)


_HEREDOC = re.compile(r"<<(-?)[ \t]*(['\"]?)([A-Za-z_]\w*)\2")
_PYTHON_TARGET = re.compile(r"(?:\bpython[\d.]*\b|>>?[ \t]*\S+\.pyw?\b|\btee\b[^|;&\n]*\.pyw?\b)")


def _sub_origin(parent: CodeUnit, start: int, end: int, exact: bool) -> Span:
    """Where ``parent.text[start:end]`` lies in the host file.

    When ``parent``'s text is not a verbatim slice of its host (decoded from a JSON string),
    positions inside it cannot be mapped, so the whole of ``parent``'s origin is returned.
    """
    if parent.origin is not None and not exact:
        return parent.origin
    return parent.host_span(Span.from_offsets(parent.text, parent.path, start, end))


def heredoc_python_units(unit: CodeUnit, *, exact: bool = True) -> list[CodeUnit]:
    """Python units for the here-documents of a bash unit that feed Python.

    A here-document counts as Python when its command line runs ``python`` or writes a
    ``.py`` file (``cat > train.py <<'EOF'``, ``tee x.py <<EOF``, ``python - <<EOF``).

    Parameters
    ----------
    unit : CodeUnit
        A unit with ``language == "bash"``.
    exact : bool, optional
        Whether ``unit.text`` is a verbatim slice of its host at ``unit.origin``; when it is
        not (text decoded from JSON), each body's origin is ``unit.origin`` as a whole.

    Returns
    -------
    list of CodeUnit
        One per Python here-document, ``language="python"``, same ``path``, ``source`` and
        ``actor``; ``origin`` is the body's place in ``unit``'s host.
    """
    text = unit.text
    units: list[CodeUnit] = []
    pos = 0
    while True:
        match = _HEREDOC.search(text, pos)
        if match is None:
            return units
        line_start = text.rfind("\n", 0, match.start()) + 1
        line_end = text.find("\n", match.end())
        if line_end == -1:
            return units
        command_line = text[line_start : match.start()] + text[match.end() : line_end]
        delimiter, strip_tabs = match.group(3), match.group(1) == "-"
        body_start = line_end + 1
        scan = body_start
        body_end = len(text)
        end_of_doc = len(text)
        while scan <= len(text):
            nxt = text.find("\n", scan)
            nxt = len(text) if nxt == -1 else nxt
            line = text[scan:nxt]
            if (line.lstrip("\t") if strip_tabs else line).rstrip("\r") == delimiter:
                body_end = max(body_start, scan - 1)
                end_of_doc = nxt
                break
            scan = nxt + 1
        if _PYTHON_TARGET.search(command_line) and body_end > body_start:
            units.append(
                CodeUnit(
                    path=unit.path,
                    language="python",
                    text=text[body_start:body_end],
                    origin=_sub_origin(unit, body_start, body_end, exact),
                    source=unit.source,
                    actor=unit.actor,
                )
            )
        pos = max(end_of_doc, match.end())


def _with_heredocs(unit: CodeUnit, exact: bool = True) -> list[CodeUnit]:
    if unit.language == "bash" and "<<" in unit.text:
        return [unit, *heredoc_python_units(unit, exact=exact)]
    return [unit]


def _python_with_magics(path: str, text: str, origin: Span, exact: bool,
                        actor: Actor = Actor.UNKNOWN) -> list[CodeUnit]:
    """A Python unit from IPython code in a log, plus bash units for its shell escapes."""
    clean, commands = split_magics(text)
    unit = CodeUnit(path=path, language="python", text=text, origin=origin, source="log", actor=actor)
    units = [CodeUnit(path=path, language="python", text=clean, origin=origin, source="log", actor=actor)]
    for command in commands:
        shell = CodeUnit(
            path=path,
            language="bash",
            text=command.text,
            origin=_sub_origin(unit, command.start, command.end, exact),
            source="log",
            actor=actor,
        )
        units.extend(_with_heredocs(shell, exact))
    return units


#: ``log_formats`` name of a notebook whose outputs (or markdown and raw cells) gave events.
NOTEBOOK_OUTPUTS = "notebook-outputs"
#: How the note on a notebook's images and other binary outputs starts (a note, not a gap: they
#: are data, like the run's data files).
BINARY_OUTPUTS_NOT_READ = "binary notebook outputs not read (images and other data, not code or logs)"
#: An output longer than this is given as several OUTPUT events, cut at line ends, so that no
#: single event holds megabytes of text (the rules' per-unit time bound).
MAX_OUTPUT_EVENT_CHARS = 1 << 20
#: Name the plain-text and structured readers see for the text of a notebook's outputs.
_OUTPUT_VIRTUAL_PATH = "notebook-output"
_FOUND_KINDS = (LogEventKind.CODE, LogEventKind.COMMAND, LogEventKind.TOOL_CALL)


@dataclass(frozen=True, slots=True, kw_only=True)
class NotebookRecord:
    """How one notebook was read.

    Attributes
    ----------
    path : str
        The notebook's path.
    nbformat : int
        Its major format version.
    language : str
        Its kernel language.
    code_cells : int
        Code cells read as code (0 when the language has no grammar).
    outputs : int
        Cell outputs looked at.
    text_parts : int
        Outputs, and markdown or raw cells, read as text.
    binary_outputs : int
        Output parts not read because they are images or other binary data.
    events : int
        Log events read from the outputs and from markdown and raw cells (code and commands
        found in the outputs included).
    driver : DriverReading
        Whether the notebook drives an agent framework, and each cell's role
        (:mod:`mleaudit.audit.driver`).
    unread : tuple of str
        What of the notebook was not read, one sentence each (also in ``RunUnits.skipped``).
    """

    path: str
    nbformat: int
    language: str
    code_cells: int
    outputs: int = 0
    text_parts: int = 0
    binary_outputs: int = 0
    events: int = 0
    driver: DriverReading = DriverReading(driver=False)
    unread: tuple[str, ...] = ()

    def describe(self) -> str:
        """One line for a "what was read" table."""
        parts = [f"nbformat {self.nbformat}, {self.language}", f"{self.code_cells} code cell(s) read as code",
                 f"{self.text_parts} output(s) and text cell(s) read as text ({self.events} event(s))"]
        if self.binary_outputs:
            parts.append(f"{self.binary_outputs} binary output part(s) not read")
        parts.append(self.driver.describe())
        if self.unread:
            parts.append("partly unread: " + "; ".join(self.unread))
        return "; ".join(parts)


def _blank_other_cells(text: str, cells: tuple[CellRange, ...], keep: set[int]) -> str:
    """``text`` with the lines of every cell not in ``keep`` emptied (line numbers unchanged)."""
    lines = text.split("\n")
    for cell in cells:
        if cell.cell_index not in keep:
            for number in range(cell.start_line - 1, min(cell.end_line, len(lines))):
                lines[number] = ""
    return "\n".join(lines)


def _notebook_code_units(path: str, notebook: NotebookCode, driver: DriverReading) -> list[CodeUnit]:
    """The notebook's code unit(s), one per actor, and its shell escapes.

    A notebook whose cells all have one actor gives one unit (the joined code cells). A driver
    notebook gives one unit per actor; each keeps the whole joined text's line numbers, with the
    other actors' cells emptied, and ``cells`` lists only its own cells, so evidence says
    "cell N, line M" as for any notebook.
    """
    by_actor: dict[Actor, list[CellRange]] = defaultdict(list)
    for cell in notebook.cells:
        by_actor[driver.code_actor(cell.cell_index)].append(cell)
    units: list[CodeUnit] = []
    if len(by_actor) <= 1:
        actor = next(iter(by_actor), Actor.AGENT)
        units.append(CodeUnit(path=path, language=notebook.language, text=notebook.text, cells=notebook.cells,
                              source="notebook", actor=actor))
    else:
        for actor, cells in by_actor.items():
            keep = {cell.cell_index for cell in cells}
            units.append(CodeUnit(path=path, language=notebook.language,
                                  text=_blank_other_cells(notebook.text, notebook.cells, keep), cells=tuple(cells),
                                  source="notebook", actor=actor))
    for command in notebook.shell_commands:
        origin = Span.from_offsets(notebook.raw_text, path, command.start, command.end)
        shell = CodeUnit(path=path, language="bash", text=command.text, origin=origin, source="notebook",
                         actor=driver.code_actor(command.cell_index))
        units.extend(_with_heredocs(shell))
    return units


def _chunks(text: str, limit: int) -> list[tuple[int, int]]:
    """``[start, end)`` pieces of ``text`` of at most about ``limit`` characters, cut after a newline."""
    if len(text) <= limit:
        return [(0, len(text))]
    pieces = []
    start = 0
    while start < len(text):
        end = min(len(text), start + limit)
        if end < len(text):
            cut = text.rfind("\n", start, end)
            end = cut + 1 if cut > start else end
        pieces.append((start, end))
        start = end
    return pieces


#: A line that heads printed code: ``----- node c77e code -----``, ``--- code ---``, ``code:``,
#: ``Executing code:``, ``[node 3] code``, ``### Code``, ``Generated python script for step 2:``.
_CODE_HEADER = re.compile(
    r"^[ \t]*(?:[-=#*~<>|]{1,}[ \t]*)?(?:\[[^\]\n]{0,40}\][ \t]*)?"
    r"(?:(?:node|step|draft|iteration|attempt|turn)[ \t#:]*[\w.-]{0,20}[ \t]*[:|-]?[ \t]*)?"
    r"(?:(?:executing|running|generated|final|new|updated|proposed|submitted|best|the|agent|node|solution)[ \t]+){0,3}"
    r"(?:python[ \t]+|py[ \t]+)?(?:code|script|program|source)"
    r"(?:[ \t]+(?:for|of|in|from)[ \t]+(?:node|step|draft|iteration)[ \t#]*[\w.-]{1,20})?"
    r"[ \t]*(?:[:\-=#*~<>|\]]+[ \t]*)*$", re.IGNORECASE | re.MULTILINE)
#: A line that ends printed code: another header, a rule line, a timestamped or levelled log record.
_SECTION_END = re.compile(
    r"^[ \t]*(?:-{3,}|={3,}|\*{3,}|~{3,}|#{3,}[ \t]|```)"
    r"|^[ \t]*\[?\d{4}-\d{2}-\d{2}[ T]\d"
    r"|^[ \t]*(?:\[[^\]\n]{0,40}\][ \t]*)?(?:INFO|WARNING|ERROR|DEBUG|CRITICAL)\b"
    r"|^[ \t]*(?:\[[^\]\n]{0,40}\][ \t]*)?(?:[\w-]+[ \t]+){0,3}(?:output|result|results|stdout|stderr|observation"
    r"|feedback|plan|analysis|metric|response|error|execution|traceback)[ \t]*(?:[:\-=#*~<>|\]]+[ \t]*)*$",
    re.IGNORECASE | re.MULTILINE)
#: Lines of one printed code section read at most.
MAX_SECTION_LINES = 5_000


def _code_sections(text: str) -> list[tuple[int, int]]:
    """``[start, end)`` of code a scaffold printed under a header naming code, until the next header.

    A section is kept only when its text reads as code or a command
    (:func:`mleaudit.audit.logs.keys.classify_text`); prose under a ``Code:`` heading is not code.

    Examples
    --------
    >>> text = "[node 3] code\\nimport os\\nprint(os.listdir('/'))\\n[node 3] output\\n['bin']\\n"
    >>> [text[a:b] for a, b in _code_sections(text)]
    ["import os\\nprint(os.listdir('/'))"]
    """
    if not re.search(r"code|script|program|source", text, re.IGNORECASE):
        return []
    sections: list[tuple[int, int]] = []
    for header in _CODE_HEADER.finditer(text):
        start = header.end() + 1
        if start >= len(text) or (sections and header.start() < sections[-1][1]):
            continue
        end = _SECTION_END.search(text, start)
        stop = end.start() if end is not None else len(text)
        limit = start
        for _ in range(MAX_SECTION_LINES):
            limit = text.find("\n", limit + 1)
            if limit == -1 or limit >= stop:
                break
        else:
            stop = limit
        body_end = len(text[:stop].rstrip())
        if body_end <= start:
            continue
        if classify_text(text[start:body_end]) is not None:
            sections.append((start, body_end))
    return sections


def _found_in_text(text: str) -> list[LogEvent]:
    """Code, commands and tool calls a log printed into outputs holds (spans into ``text``).

    The text is read as any log is (:func:`mleaudit.audit.logs.parse_log`: a structured format when it
    is one, else plain text); when a structured reader took it, the plain-text reader runs too,
    for fenced code and shell prompts around the structured lines.
    """
    reading = parse_log(_OUTPUT_VIRTUAL_PATH, text)
    found = [e for e in reading.events if e.kind in _FOUND_KINDS]
    if reading.log_format not in (None, plain_text.NAME):
        seen = {(e.span.start_byte, e.span.end_byte) for e in found}
        found.extend(e for e in plain_text.read_events(_OUTPUT_VIRTUAL_PATH, text)
                     if e.kind in (LogEventKind.CODE, LogEventKind.COMMAND)
                     and (e.span.start_byte, e.span.end_byte) not in seen)
    # Tool calls a scaffold prints as calls: functions.submit_to_kaggle({"file": "..."}).
    spans = SpanMaker(text, _OUTPUT_VIRTUAL_PATH)
    for start, end, name, arguments in call_expressions(text):
        for hit in call_actions(arguments, name):
            found.append(LogEvent(index=0, kind=hit.kind, text=hit.text, span=spans.span(start, end),
                                  language=hit.language))
        if not is_generic_tool(name):
            found.append(LogEvent(index=0, kind=LogEventKind.TOOL_CALL, text=text[start:end],
                                  span=spans.span(start, end)))
    # Code printed under a header that names it (``----- node 3 code -----``, ``Executing code:``).
    covered = [(e.span.start_byte, e.span.end_byte) for e in found if e.kind in (LogEventKind.CODE,
                                                                                 LogEventKind.COMMAND)]
    for start, end in _code_sections(text):
        if any(a <= start < b or start <= a < end for a, b in covered):
            continue
        hit = classify_text(text[start:end])
        if hit is not None:
            found.append(LogEvent(index=0, kind=hit.kind, text=text[start:end], span=spans.span(start, end),
                                  language=hit.language))
    return found


#: JSON log formats whose message texts are decoded strings that may show code the adapter did
#: not take as code (fenced blocks in a chat message, an OpenHands thought).
_MESSAGE_CODE_FORMATS = frozenset({"jsonl", "json", "openhands", "inspect", "trajectory"})


def _code_in_messages(reading) -> list[LogEvent]:
    """Code and commands that the messages of a JSON log show (fenced blocks, shell prompts, printed
    tool calls), as events of the message's actor located at the whole message.

    A message is read only when it is the agent's or nobody's: a system prompt's examples or the
    operator's task text are not something the run did.
    """
    if reading.log_format not in _MESSAGE_CODE_FORMATS:
        return []
    found: list[LogEvent] = []
    taken = {(e.span.start_byte, e.span.end_byte) for e in reading.events if e.kind in _FOUND_KINDS}
    index = len(reading.events)
    for event in reading.events:
        if (event.kind is not LogEventKind.MESSAGE or event.actor not in (Actor.AGENT, Actor.UNKNOWN)
                or (event.span.start_byte, event.span.end_byte) in taken):
            continue
        if "```" not in event.text and "$ " not in event.text and "(" not in event.text:
            continue
        for hit in _found_in_text(event.text):
            if hit.kind not in (LogEventKind.CODE, LogEventKind.COMMAND):
                continue
            found.append(LogEvent(index=index, kind=hit.kind, text=hit.text, span=event.span, language=hit.language,
                                  role=event.role, location=event.location, actor=event.actor))
            index += 1
            if len(found) >= MAX_LOG_EVENTS:
                return found
    return found


class _NotebookEvents:
    """Builds a notebook's events from its outputs (see :func:`_notebook_events`)."""

    def __init__(self, path: str, text: str) -> None:
        self.path = path
        self.spans = SpanMaker(text, path)
        self.events: list[tuple[int, int, tuple]] = []
        self.full = False

    def add(self, kind: LogEventKind, body: str, host: tuple[int, int], actor: Actor, *, location: str,
            role: str = "", language: str | None = None) -> bool:
        if len(self.events) >= MAX_LOG_EVENTS:
            self.full = True
            return False
        if not body.strip():
            return True
        self.events.append((host[0], len(self.events), (kind, body, host, actor, location, role, language)))
        return True

    def ordered(self) -> list[LogEvent]:
        """The events in file order (an output, then what was found in it), indexed from 0."""
        self.events.sort(key=lambda item: (item[0], item[1]))
        span = self.spans.span
        return [LogEvent(index=number, kind=kind, text=body, span=span(*host), language=language, role=role,
                         location=location, actor=actor)
                for number, (_, _, (kind, body, host, actor, location, role, language)) in enumerate(self.events)]


def _notebook_events(path: str, text: str, driver: DriverReading, outputs) -> tuple[list[LogEvent], str | None]:
    """Events of a notebook's outputs and text cells, and why some were not read (or ``None``).

    Each output gives OUTPUT events (markdown and raw cells MESSAGE events) with the actor of
    its cell's outputs; the outputs of consecutive cells whose found code has one actor are then
    read together as a log (:func:`_found_in_text`), each code, command or tool call found
    becoming an event of that actor, located at its place in the file.
    """
    builder = _NotebookEvents(path, text)
    groups: list[tuple[Actor, list]] = []
    for output in outputs:
        cell = output.cell_index
        is_text_cell = output.output_index < 0
        actor = driver.output_actor(cell)
        kind = LogEventKind.MESSAGE if is_text_cell else LogEventKind.OUTPUT
        role = output.output_type if not output.name or output.output_type != "stream" else output.name
        for start, end in _chunks(output.text, MAX_OUTPUT_EVENT_CHARS):
            if not builder.add(kind, output.text[start:end], output.text_map.host_range(start, end), actor,
                               location=output.location, role=role):
                break
        if builder.full:
            break
        if is_text_cell:
            continue
        found_actor = driver.found_code_actor(cell)
        if not groups or groups[-1][0] is not found_actor:
            groups.append((found_actor, []))
        groups[-1][1].append(output)
    for found_actor, members in groups if not builder.full else ():
        joined = TextMap()
        starts: list[int] = []
        previous = None
        for output in members:
            # A stream is cut into outputs anywhere, even mid-line: its pieces join as printed.
            same_stream = (previous is not None and output.output_type == previous.output_type == "stream"
                           and output.cell_index == previous.cell_index and output.name == previous.name)
            if joined.length and not same_stream and not joined.text.endswith("\n"):
                joined.add_filler("\n")
            starts.append(joined.length)
            joined.add_map(output.text_map)
            previous = output
        for event in _found_in_text(joined.text):
            start, end = event.span.start_byte, event.span.end_byte
            where = members[max(0, bisect_right(starts, start) - 1)]
            if not builder.add(event.kind, event.text, joined.host_range(start, end), found_actor,
                               location=where.location, role=event.role, language=event.language):
                break
        if builder.full:
            break
    unread = None
    if builder.full:
        unread = (f"notebook outputs partly read: the event limit of {MAX_LOG_EVENTS} was reached; the rest of the "
                  "outputs were not read")
    return builder.ordered(), unread


def _notebook_units(path: str, text: str, skipped: list[Skipped], notes: list[Skipped]
                    ) -> tuple[list[CodeUnit], list[LogEvent], NotebookRecord | None]:
    """Code units, output events and the reading record of one notebook (see the module docstring)."""
    with collect_shadowed() as hidden:
        try:  # read_notebook bounds the JSON nesting itself
            notebook = read_notebook(text, path)
        except NotebookError as exc:
            skipped.append(Skipped(path=path, reason=str(exc)))
            return [], [], None
        except RecursionError:
            skipped.append(Skipped(path=path, reason="notebook not read: JSON nested too deep to decode"))
            return [], [], None
    remark = surrogate_note(text)
    if remark is not None:
        notes.append(Skipped(path=path, reason=remark))
    units: list[CodeUnit] = []
    unread: list[str] = []
    events: list[LogEvent] = []
    outputs_seen = text_parts = binary = 0
    with collect_shadowed() as hidden_in_outputs:
        try:
            outputs = read_notebook_outputs(text, path)
        except Exception as exc:  # noqa: BLE001 - the code was read; the outputs are a gap, not a failure
            logger.warning("%s: notebook outputs not read", path, exc_info=True)
            unread.append(f"notebook outputs not read: {type(exc).__name__}: {exc}"[:300])
            outputs = None
    driver = DriverReading(driver=False, reason="not a Python notebook")
    if notebook.language not in LANGUAGES:
        skipped.append(Skipped(path=path, reason=f"notebook kernel language {notebook.language!r} has no grammar"))
    else:
        printed: dict[int, str] = {}
        for output in outputs.outputs if outputs is not None else ():
            if output.output_index >= 0:  # a code cell's output (markdown and raw cells have none)
                printed[output.cell_index] = printed.get(output.cell_index, "") + output.text + "\n"
        # Only a notebook at the run root can be the harness (mleaudit.audit.driver): the agent writes the
        # run's folders (MLE-bench's logs/ and code/, AIDE's working/, MLAgentBench's traces).
        driver = read_driver(path, cell_sources(notebook), printed)
        if notebook.cells:
            units = _notebook_code_units(path, notebook, driver)
    if outputs is not None:
        outputs_seen, text_parts, binary = outputs.output_count, len(outputs.outputs), len(outputs.binary)
        unread.extend(outputs.unread)
        if outputs.binary:
            kinds = ", ".join(sorted({mime for _, mime in outputs.binary}))
            notes.append(Skipped(path=path, reason=f"{BINARY_OUTPUTS_NOT_READ}: {binary} part(s) ({kinds})"))
        events, limit = _notebook_events(path, text, driver, outputs.outputs)
        if limit is not None:
            unread.append(limit)
        units.extend(_log_units(events, text))
    if hidden or hidden_in_outputs:
        # A key written twice (a cell's "source"): what Jupyter and nbformat drop is read too.
        hidden_read, problems = read_hidden_members(path, text, ShadowedList.joined(hidden, hidden_in_outputs),
                                                    len(events))
        events = events + hidden_read
        units.extend(_log_units(hidden_read, text))
        unread.extend(problems)
    skipped.extend(Skipped(path=path, reason=reason) for reason in unread)
    record = NotebookRecord(path=path, nbformat=notebook.nbformat, language=notebook.language,
                            code_cells=len(notebook.cells) if notebook.language in LANGUAGES else 0,
                            outputs=outputs_seen, text_parts=text_parts, binary_outputs=binary, events=len(events),
                            driver=driver, unread=tuple(unread))
    return units, events, record


def _log_units(events: list[LogEvent], host: str) -> list[CodeUnit]:
    units: list[CodeUnit] = []
    for event in events:
        if event.kind not in (LogEventKind.CODE, LogEventKind.COMMAND):
            continue
        span = event.span
        exact = host[span.start_byte : span.end_byte] == event.text
        language = "bash" if event.kind is LogEventKind.COMMAND else event.language
        language = language if language in LANGUAGES else "python"
        if language == "python":
            units.extend(_python_with_magics(span.path, event.text, span, exact, event.actor))
        else:
            unit = CodeUnit(path=span.path, language=language, text=event.text, origin=span, source="log",
                            actor=event.actor)
            units.extend(_with_heredocs(unit, exact))
    return units


def _archive_units(artifact: Artifact, data: bytes, log_formats, log_events, code_units, skipped, notes) -> None:
    """Events and code units of an Inspect ``.eval`` archive; unread members go to ``skipped``."""
    archive = read_eval_archive(artifact.path, data)
    for problem in archive.problems:
        skipped.append(Skipped(path=artifact.path, reason=f"eval archive partly read: {problem}"))
    for member, reason in archive.unread:
        skipped.append(Skipped(path=f"{artifact.path}!/{member}", reason=f"eval archive member: {reason}"))
    for remark in archive.notes:
        notes.append(Skipped(path=artifact.path, reason=f"eval archive member {remark}"))
    if not archive.events:
        return
    log_formats.append((artifact.path, INSPECT_FORMAT))
    log_events.extend(archive.events)
    by_member: dict[str, list[LogEvent]] = defaultdict(list)
    for event in archive.events:
        by_member[event.span.path].append(event)
    for virtual, text in archive.documents:
        code_units.extend(_log_units(by_member[virtual], text))


# PEP 263: a comment in the first two lines naming the source encoding.
_CODING = re.compile(rb"^[ \t\f]*#.*?coding[:=][ \t]*([-\w.]+)")
_UTF8_NAMES = frozenset({"utf-8", "utf8", "utf_8", "u8", "utf", "cp65001", "utf-8-sig", "utf_8_sig"})


def _declared_source_encoding(data: bytes) -> str | None:
    """The source encoding a Python file declares (PEP 263), when it is not UTF-8."""
    for line in data.split(b"\n", 2)[:2]:
        m = _CODING.match(line)
        if m is not None:
            name = m.group(1).decode("ascii", errors="replace").lower()
            return None if name in _UTF8_NAMES else name
        if line.strip() and not line.lstrip().startswith(b"#"):
            return None  # the cookie must come before any code
    return None


def _decode_as_declared(data: bytes, name: str) -> tuple[str | None, str]:
    """``data`` decoded as Python would decode it under the cookie ``name``, or why it cannot be."""
    import codecs

    try:
        info = codecs.lookup(name)
    except (LookupError, ValueError):
        return None, f"declares the unknown source encoding {name!r}: not read"
    if not getattr(info, "_is_text_encoding", True):
        return None, f"declares {name!r}, which is not a text encoding: not read"
    try:
        text = data.decode(info.name, errors="strict")
    except (UnicodeDecodeError, ValueError, TypeError) as exc:
        return None, f"not valid in its declared source encoding {name!r}: {exc}"[:300]
    return text.replace("\x00", "\ufffd"), ""


def _is_binary(text: str) -> bool:
    if "\x00" in text:
        return True
    # Junk without NUL bytes decodes to mostly U+FFFD: not text worth auditing.
    return len(text) >= 64 and text.count("\ufffd") > BINARY_INVALID_SHARE * len(text)


#: What starts Python on a file in a command or in code: an interpreter, ``sys.executable``, or
#: Python's own ways to run a file's text (``exec``, ``compile``, ``runpy``, a source loader).
_PYTHON_LAUNCH = re.compile(r"python|pypy|sys\.executable|\bexec\b|\bcompile\b|runpy|run_path|SourceFileLoader")


def _run_as_python(unnamed_logs: dict[str, str], code_units: list[CodeUnit], log_events: list[LogEvent],
                   notes: list[Skipped]) -> list[CodeUnit]:
    """Logs read by content (their name says nothing) that the run may run with Python, as
    Python code units too.

    A file is taken when a command, a code block or a code unit of the run that starts Python
    (:data:`_PYTHON_LAUNCH`: ``python3 -X dev peek``, ``cat peek | python``,
    ``subprocess.run([sys.executable, "peek"])``, ``exec(open("peek").read())``) names it — its
    file name as a word, since commands name paths from the agent's working folder, not from the
    run root, and options, pipes and variables stand between interpreter and file — and its text
    parses as Python without a syntax error and calls, imports or defines something
    (:func:`mleaudit.audit.run.python_by_content` as for the top of a run). Call-only code outside
    the agent's folders was read as a log, which the code rules never see. A log that only holds
    Python lines (a traceback piped to ``tee output``) does not parse, and stays a log.
    """
    if not unnamed_logs:
        return []
    by_name: dict[str, list[str]] = defaultdict(list)
    for path in unnamed_logs:
        by_name[PurePosixPath(path).name].append(path)
    names_at = re.compile("(?<![\\w.-])(" + "|".join(map(re.escape, sorted(by_name, key=len, reverse=True)))
                          + ")(?![\\w-])")
    sources = [e.text for e in log_events if e.kind in (LogEventKind.COMMAND, LogEventKind.CODE, LogEventKind.TOOL_CALL)]
    sources += [u.text for u in code_units]
    named: set[str] = set()
    for text in sources:
        if _PYTHON_LAUNCH.search(text) is not None:
            named.update(names_at.findall(text))
    units = []
    for name in sorted(named):
        for path in by_name[name]:
            # parsed up to the same limit as any file read by content: a stdout log a command names
            # (`python train.py | tee output`) may be megabytes of prose, seconds to parse
            why = python_by_content(unnamed_logs[path], agent_folder=False, top=True)
            if why is None:
                continue
            notes.append(Skipped(path=path, reason=f"named by a command or code of the run that starts Python, and "
                                                   f"{why.removesuffix(', at the top of the run')}: read as Python "
                                                   "code too"))
            units.extend(_with_heredocs(CodeUnit(path=path, language="python", text=unnamed_logs[path], source="file")))
    return units


def expand_run(run: Run) -> RunUnits:
    """Turn a loaded run into code units and log events.

    Parameters
    ----------
    run : Run
        From :func:`mleaudit.audit.run.load_run`.

    Returns
    -------
    RunUnits
        Code units from code files, notebooks, log events and here-documents; all log events;
        the files expansion skipped (with reasons). Units are not parsed here.
    """
    code_units: list[CodeUnit] = []
    log_events: list[LogEvent] = []
    log_formats: list[tuple[str, str]] = []
    skipped: list[Skipped] = []
    notes: list[Skipped] = []
    notebooks: list[NotebookRecord] = []
    unnamed_logs: dict[str, str] = {}
    for artifact in run.artifacts:
        if artifact.kind not in (ArtifactKind.CODE, ArtifactKind.NOTEBOOK, ArtifactKind.LOG):
            continue
        try:
            data = artifact.read_bytes()
        except OSError as exc:
            skipped.append(Skipped(path=artifact.path, reason=f"cannot read: {exc.strerror or exc}"))
            continue
        if artifact.kind is ArtifactKind.LOG and PurePosixPath(artifact.path).suffix.lower() == ".eval":
            try:
                _archive_units(artifact, data, log_formats, log_events, code_units, skipped, notes)
            except Exception as exc:  # noqa: BLE001 - one hostile archive must not stop the audit
                logger.warning("%s: eval archive not read", artifact.path, exc_info=True)
                reason = f"eval archive not read: {type(exc).__name__}: {exc}"
                skipped.append(Skipped(path=artifact.path, reason=reason))
            continue
        text, decoding = decode_text(data, code=artifact.kind is ArtifactKind.CODE)
        if _is_binary(text):
            reason = "binary content (NUL bytes) in a text file" if "\x00" in text else (
                f"binary content: {text.count(chr(0xFFFD))} of {len(text)} characters are not valid UTF-8")
            skipped.append(Skipped(path=artifact.path, reason=reason))
            continue
        if decoding is not None:
            notes.append(Skipped(path=artifact.path, reason=decoding))
        is_python = artifact.kind is ArtifactKind.CODE and (artifact.language or "python") == "python"
        if is_python:
            declared = _declared_source_encoding(data)
            if declared is not None:
                decoded, problem = _decode_as_declared(data, declared)
                if decoded is None:
                    skipped.append(Skipped(path=artifact.path, reason=problem))
                    continue
                if decoded != text:
                    notes.append(Skipped(path=artifact.path, reason=f"read in its declared source encoding {declared!r}, "
                                                                    "as Python reads it"))
                    text = decoded
        if (is_python or artifact.kind is ArtifactKind.LOG) and "\r" in text and LONE_CR.search(text):
            # Python (and a terminal) break lines at a lone CR; the parsers and line-based readers
            # would keep it inside a comment or one long line. One character for one: offsets hold.
            text = LONE_CR.sub("\n", text)
            notes.append(Skipped(path=artifact.path, reason="lone carriage returns read as line ends"))
        if artifact.kind is ArtifactKind.CODE:
            language = artifact.language or "python"
            code_units.extend(_with_heredocs(CodeUnit(path=artifact.path, language=language, text=text, source="file")))
        elif artifact.kind is ArtifactKind.NOTEBOOK:
            units, events, record = _notebook_units(artifact.path, text, skipped, notes)
            code_units.extend(units)
            if events:
                log_formats.append((artifact.path, NOTEBOOK_OUTPUTS))
                log_events.extend(events)
            if record is not None:
                notebooks.append(record)
        else:
            if artifact.sniffed is not None:
                unnamed_logs[artifact.path] = text
            try:
                reading = parse_log(artifact.path, text)
            except Exception as exc:  # noqa: BLE001 - one hostile log must not stop the audit
                logger.warning("%s: log not read", artifact.path, exc_info=True)
                skipped.append(Skipped(path=artifact.path, reason=f"log not read: {type(exc).__name__}: {exc}"))
                continue
            for problem in reading.problems:
                skipped.append(Skipped(path=artifact.path, reason=f"log partly read: {problem}"))
            for remark in reading.notes:
                notes.append(Skipped(path=artifact.path, reason=remark))
            if reading.log_format is None or not reading.events:
                continue
            log_formats.append((artifact.path, reading.log_format))
            events = list(reading.events) + _code_in_messages(reading)
            log_events.extend(events)
            code_units.extend(_log_units(events, text))
    code_units.extend(_run_as_python(unnamed_logs, code_units, log_events, notes))
    launch = read_sandbox_command(run)
    if launch is not None:
        # The command the sandbox ran the agent with: the operator's, in no log (sandbox_record).
        log_formats.append((launch.event.span.path, SANDBOX_READER))
        log_events.append(launch.event)
        code_units.extend(_log_units([launch.event], ""))
        skipped.extend(launch.skipped)
        notes.extend(launch.notes)
    return RunUnits(
        code_units=tuple(code_units),
        log_events=tuple(log_events),
        log_formats=tuple(log_formats),
        skipped=tuple(skipped),
        notes=tuple(notes),
        notebooks=tuple(notebooks),
    )
