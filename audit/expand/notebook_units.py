"""A notebook's code units and log events: its code cells (one unit per actor in a driver notebook),
shell escapes, and its outputs and text cells read as a log (:class:`NotebookRecord` says how)."""

from __future__ import annotations

import logging
from bisect import bisect_right
from collections import defaultdict
from dataclasses import dataclass

from mleaudit.audit.driver import DriverReading, read_driver
from mleaudit.audit.expand.derived import _log_units, _with_heredocs
from mleaudit.audit.expand.found import _found_in_text
from mleaudit.audit.logs import read_hidden_members
from mleaudit.audit.logs.common import MAX_LOG_EVENTS, SpanMaker
from mleaudit.audit.logs.jsonregions import surrogate_note
from mleaudit.audit.model import Skipped, Span
from mleaudit.audit.notebooks import NotebookCode, NotebookError, cell_sources, read_notebook, read_notebook_outputs
from mleaudit.audit.parsing import LANGUAGES
from mleaudit.audit.textmap import TextMap
from mleaudit.audit.units import Actor, CellRange, CodeUnit, LogEvent, LogEventKind
from mleaudit.grading.untrusted_json import ShadowedList, collect_shadowed

logger = logging.getLogger(__name__)


#: ``log_formats`` name of a notebook whose outputs (or markdown and raw cells) gave events.
NOTEBOOK_OUTPUTS = "notebook-outputs"
#: How the note on a notebook's images and other binary outputs starts (a note, not a gap: they
#: are data, like the run's data files).
BINARY_OUTPUTS_NOT_READ = "binary notebook outputs not read (images and other data, not code or logs)"
#: An output longer than this is given as several OUTPUT events, cut at line ends, so that no
#: single event holds megabytes of text (the rules' per-unit time bound).
MAX_OUTPUT_EVENT_CHARS = 1 << 20


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
        ends_line = True  # whether the joined text so far ends with a line break (asked without joining it)
        for output in members:
            # A stream is cut into outputs anywhere, even mid-line: its pieces join as printed.
            same_stream = (previous is not None and output.output_type == previous.output_type == "stream"
                           and output.cell_index == previous.cell_index and output.name == previous.name)
            if joined.length and not same_stream and not ends_line:
                joined.add_filler("\n")
                ends_line = True
            starts.append(joined.length)
            joined.add_map(output.text_map)
            if output.text_map.length:
                ends_line = output.text.endswith("\n")
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
        pieces: dict[int, list[str]] = {}
        for output in outputs.outputs if outputs is not None else ():
            if output.output_index >= 0:  # a code cell's output (markdown and raw cells have none)
                pieces.setdefault(output.cell_index, []).append(output.text)
        printed = {cell: "\n".join(texts) + "\n" for cell, texts in pieces.items()}
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
