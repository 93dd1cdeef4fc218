"""``expand_run``: a loaded run turned into code units and log events (:class:`RunUnits`), file by
file, each read by its kind: code, notebook, log, Inspect ``.eval`` archive; then the logs the run
runs with Python, and the sandbox's recorded agent command."""

from __future__ import annotations

import functools
import logging
from collections import defaultdict
from dataclasses import dataclass
from pathlib import PurePosixPath

from mleaudit.audit.expand.decoding import decode_as_declared, declared_source_encoding, is_binary_text
from mleaudit.audit.expand.derived import _log_units, _with_heredocs
from mleaudit.audit.expand.found import _code_in_messages
from mleaudit.audit.expand.launch import _run_as_python
from mleaudit.audit.expand.notebook_units import NOTEBOOK_OUTPUTS, NotebookRecord, _notebook_units
from mleaudit.audit.logs import parse_log
from mleaudit.audit.logs.inspect_archive import read_eval_archive
from mleaudit.audit.logs.inspect_eval import NAME as INSPECT_FORMAT
from mleaudit.audit.model import Skipped
from mleaudit.audit.run import LONE_CR, Artifact, ArtifactKind, Run, decode_text
from mleaudit.audit.sandbox_record import READER as SANDBOX_READER
from mleaudit.audit.sandbox_record import read_sandbox_command
from mleaudit.audit.units import CodeUnit, LogEvent

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


@functools.lru_cache(maxsize=8192)
def _eval_archive(path: str) -> bool:
    """Whether ``path`` names an Inspect ``.eval`` archive (a function of the path: cached)."""
    return PurePosixPath(path).suffix.lower() == ".eval"


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
        if artifact.kind is ArtifactKind.LOG and _eval_archive(artifact.path):
            try:
                _archive_units(artifact, data, log_formats, log_events, code_units, skipped, notes)
            except Exception as exc:  # noqa: BLE001 - one hostile archive must not stop the audit
                logger.warning("%s: eval archive not read", artifact.path, exc_info=True)
                reason = f"eval archive not read: {type(exc).__name__}: {exc}"
                skipped.append(Skipped(path=artifact.path, reason=reason))
            continue
        text, decoding = decode_text(data, code=artifact.kind is ArtifactKind.CODE)
        if is_binary_text(text):
            reason = "binary content (NUL bytes) in a text file" if "\x00" in text else (
                f"binary content: {text.count(chr(0xFFFD))} of {len(text)} characters are not valid UTF-8")
            skipped.append(Skipped(path=artifact.path, reason=reason))
            continue
        if decoding is not None:
            notes.append(Skipped(path=artifact.path, reason=decoding))
        is_python = artifact.kind is ArtifactKind.CODE and (artifact.language or "python") == "python"
        if is_python:
            declared = declared_source_encoding(data)
            if declared is not None:
                decoded, problem = decode_as_declared(data, declared)
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
