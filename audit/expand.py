"""Expand a run into what rules and similarity read: code units and log events.

- every ``.py``/``.sh`` file is a code unit (``source="file"``);
- every Python notebook gives one unit of its joined code cells (``source="notebook"``,
  ``cells`` set) plus one bash unit per shell escape (``!pip``, ``%%bash``), whose ``origin``
  locates the command in the notebook's joined code text (the coordinates the notebook unit
  itself uses);
- every log is read by its adapter (:mod:`audit.logs`) into events; each CODE event becomes a
  unit in its language and each COMMAND event a bash unit, with ``origin`` = the event's span
  in the log (``source="log"``). IPython syntax in Python code from logs is handled as in
  notebooks (commented out, shell escapes become bash units);
- here-documents in bash units that feed Python (``python - <<EOF``, ``cat > x.py <<EOF``)
  also become Python units located inside the bash text, so code an agent wrote through the
  shell is checked as Python.

Nothing is parsed here (the rules engine parses). Files that cannot be read, binary content,
notebooks in languages without a grammar or nested too deep, and the parts of logs that could
not be read (a JSON log cut short or nested deeper than
:data:`~grading.untrusted_json.MAX_JSON_DEPTH`, the event limit) go to ``skipped``; text that
was read with caveats (not valid UTF-8, lone surrogate escapes decoded as U+FFFD) goes to
``notes``; nothing aborts the expansion. Inspect ``.eval`` archives are read member by member
(:func:`audit.logs.inspect_eval.read_eval_archive`); their events and units carry the member's
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
from collections import defaultdict
from dataclasses import dataclass
from pathlib import PurePosixPath

from audit.logs import parse_log
from audit.logs.common import surrogate_note
from audit.logs.inspect_eval import NAME as INSPECT_FORMAT
from audit.logs.inspect_eval import read_eval_archive
from audit.model import Skipped, Span
from audit.notebooks import NotebookError, read_notebook, split_magics
from audit.parsing import LANGUAGES
from audit.run import BINARY_INVALID_SHARE, Artifact, ArtifactKind, Run, decode_text
from audit.units import CodeUnit, LogEvent, LogEventKind

__all__ = ["RunUnits", "expand_run", "heredoc_python_units"]

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
        ``(log path, adapter name)`` for every log that gave events, in path order.
    skipped : tuple of Skipped
        What expansion could not read (files, or parts of logs). Files skipped while loading
        are in ``Run.skipped``.
    notes : tuple of Skipped
        Files read with a caveat that is no sign of anything (not valid UTF-8, UTF-16).
    """

    code_units: tuple[CodeUnit, ...]
    log_events: tuple[LogEvent, ...]
    log_formats: tuple[tuple[str, str], ...] = ()
    skipped: tuple[Skipped, ...] = ()
    notes: tuple[Skipped, ...] = ()

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
        One per Python here-document, ``language="python"``, same ``path`` and ``source``;
        ``origin`` is the body's place in ``unit``'s host.
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
                )
            )
        pos = max(end_of_doc, match.end())


def _with_heredocs(unit: CodeUnit, exact: bool = True) -> list[CodeUnit]:
    if unit.language == "bash" and "<<" in unit.text:
        return [unit, *heredoc_python_units(unit, exact=exact)]
    return [unit]


def _python_with_magics(path: str, text: str, origin: Span, exact: bool) -> list[CodeUnit]:
    """A Python unit from IPython code in a log, plus bash units for its shell escapes."""
    clean, commands = split_magics(text)
    unit = CodeUnit(path=path, language="python", text=text, origin=origin, source="log")
    units = [CodeUnit(path=path, language="python", text=clean, origin=origin, source="log")]
    for command in commands:
        shell = CodeUnit(
            path=path,
            language="bash",
            text=command.text,
            origin=_sub_origin(unit, command.start, command.end, exact),
            source="log",
        )
        units.extend(_with_heredocs(shell, exact))
    return units


def _notebook_units(path: str, text: str, skipped: list[Skipped], notes: list[Skipped]) -> list[CodeUnit]:
    try:  # read_notebook bounds the JSON nesting itself
        notebook = read_notebook(text, path)
    except NotebookError as exc:
        skipped.append(Skipped(path=path, reason=str(exc)))
        return []
    except RecursionError:
        skipped.append(Skipped(path=path, reason="notebook not read: JSON nested too deep to decode"))
        return []
    if notebook.language not in LANGUAGES:
        skipped.append(Skipped(path=path, reason=f"notebook kernel language {notebook.language!r} has no grammar"))
        return []
    if not notebook.cells:
        return []
    remark = surrogate_note(text)
    if remark is not None:
        notes.append(Skipped(path=path, reason=remark))
    units = [
        CodeUnit(path=path, language=notebook.language, text=notebook.text, cells=notebook.cells, source="notebook")
    ]
    for command in notebook.shell_commands:
        origin = Span.from_offsets(notebook.raw_text, path, command.start, command.end)
        shell = CodeUnit(path=path, language="bash", text=command.text, origin=origin, source="notebook")
        units.extend(_with_heredocs(shell))
    return units


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
            units.extend(_python_with_magics(span.path, event.text, span, exact))
        else:
            unit = CodeUnit(path=span.path, language=language, text=event.text, origin=span, source="log")
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


_LONE_CR = re.compile(r"\r(?!\n)")
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


def expand_run(run: Run) -> RunUnits:
    """Turn a loaded run into code units and log events.

    Parameters
    ----------
    run : Run
        From :func:`audit.run.load_run`.

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
        text, decoding = decode_text(data)
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
        if (is_python or artifact.kind is ArtifactKind.LOG) and "\r" in text and _LONE_CR.search(text):
            # Python (and a terminal) break lines at a lone CR; the parsers and line-based readers
            # would keep it inside a comment or one long line. One character for one: offsets hold.
            text = _LONE_CR.sub("\n", text)
            notes.append(Skipped(path=artifact.path, reason="lone carriage returns read as line ends"))
        if artifact.kind is ArtifactKind.CODE:
            language = artifact.language or "python"
            code_units.extend(_with_heredocs(CodeUnit(path=artifact.path, language=language, text=text, source="file")))
        elif artifact.kind is ArtifactKind.NOTEBOOK:
            code_units.extend(_notebook_units(artifact.path, text, skipped, notes))
        else:
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
            log_events.extend(reading.events)
            code_units.extend(_log_units(reading.events, text))
    return RunUnits(
        code_units=tuple(code_units),
        log_events=tuple(log_events),
        log_formats=tuple(log_formats),
        skipped=tuple(skipped),
        notes=tuple(notes),
    )
