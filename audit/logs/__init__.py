"""Agent log adapters: each turns one log format into :class:`mleaudit.audit.units.LogEvent` records.

Formats, tried in this order by :func:`detect_log_format`:

================  ========================================================================
``mlagentbench``  MLAgentBench log folders: ``agent_log/main_log``, step and tool logs,
                  ``agent_*.json``, ``env_log/trace.json``, the scaffold's ``log``
                  (:mod:`mleaudit.audit.logs.mlagentbench`; by path and content)
``aide``          AIDE ``journal.json`` (:mod:`mleaudit.audit.logs.aide`)
``openhands``     OpenHands/CodeAct JSON event lists (:mod:`mleaudit.audit.logs.openhands`)
``inspect``       Inspect eval logs, JSON (:mod:`mleaudit.audit.logs.inspect_eval`; ``.eval`` archives
                  are read by :func:`mleaudit.audit.logs.inspect_archive.read_eval_archive`)
``assistants``    OpenAI Assistants message dumps, as DSBench saves them
                  (:mod:`mleaudit.audit.logs.assistants`)
``jsonl``         generic JSONL event streams (:mod:`mleaudit.audit.logs.jsonl`)
``json``          any other JSON document: scaffold state, reviews (:mod:`mleaudit.audit.logs.jsondoc`)
``llmcalls``      logs of LLM calls in ``=== prompt ===``/``=== response ===`` sections, such
                  as AIDE's ``history.txt`` (:mod:`mleaudit.audit.logs.llmcalls`)
``runlog``        MLE-bench host ``run.log`` (:mod:`mleaudit.audit.logs.runlog`)
``pylogging``     Python ``logging`` records, e.g. AutoKaggle's run log
                  (:mod:`mleaudit.audit.logs.pylogging`)
``frameworks``    console transcripts of agent frameworks: LangChain, smolagents, AutoGen,
                  CrewAI, scaffold code/output printouts (:mod:`mleaudit.audit.logs.frameworks`; by
                  content)
``steplog``       scaffold step logs, THOUGHT/ACTION/OBSERVATION records after a time stamp
                  in any tag style, and MLAgentBench-style fields (:mod:`mleaudit.audit.logs.steplog`)
``text``          plain transcripts, the fallback for any text (:mod:`mleaudit.audit.logs.text`)
================  ========================================================================

Commands and code typed at a prompt (``$ cmd``, ``root@box:/# cmd``, ``PS C:\\dir> cmd``,
``>>> code``; :func:`mleaudit.audit.logs.prompts.match_prompt`) are COMMAND/CODE events in plain
transcripts and inside the records of the line-oriented formats (``runlog``, ``pylogging``,
``steplog``) alike.

Logs are untrusted: a structured log cut short is read up to the break, a log that gives more
than :data:`~mleaudit.audit.logs.common.MAX_LOG_EVENTS` events is read up to that many, and
:func:`parse_log` says what was not read in :attr:`LogReading.problems`: JSON nested deeper
than :data:`~mleaudit.audit.logs.jsonregions.MAX_JSON_DEPTH` levels, a structured reader that
failed (the log is then read as plain text), unreadable JSONL lines, a key written twice in one JSON object
(the value JSON readers drop is read too: :mod:`mleaudit.audit.logs.shadowed`). Nothing raises.
Lone UTF-16 surrogates that JSON escapes spell (``"\\udfff"``) become U+FFFD in the events, which
:attr:`LogReading.notes` counts.

Routine Listings
----------------
Shared by the adapters (each adapter is one module, or a package for the larger ones:
``mlagentbench``, ``frameworks``, ``steplog``, whose ``__init__`` docstrings list their parts):

common
    :class:`~mleaudit.audit.logs.common.EventList` (the event cap),
    :class:`~mleaudit.audit.logs.common.SpanMaker` (fast spans), ``CUT_SHORT``, code-language guesses.
jsonregions
    JSON in log text: bounded decoding (``loads_json``), value regions, what parses of a
    document cut short (``load_json``), nesting and lone-surrogate notes.
keys
    Where JSON logs keep commands, code and tool names (the key table), roles as actors.
toolcalls
    ``call_actions``: the commands and code a tool call's arguments hold; calls printed as text.
prompts
    ``match_prompt``/``find_prompts``: commands and code typed at a shell or Python prompt.
text
    The plain-text reader; its ``scan_text`` reads free text embedded in other formats.
trajectory
    Step lists of agent trajectories in JSON documents (for ``jsondoc``).
shadowed
    The values hidden by a key written twice in one JSON object, read as events.
inspect_archive
    ``read_eval_archive``: the samples of an Inspect ``.eval`` zip archive, within hard limits.

Notes
-----
Logs sit low: modules here import only each other (helpers above, adapters on them) plus
:mod:`mleaudit.audit.model`, :mod:`mleaudit.audit.units`, :mod:`mleaudit.audit.parsing`,
:mod:`mleaudit.audit.errors`, :mod:`mleaudit.audit.textcache` and :mod:`mleaudit.grading.untrusted_json`; never the rules engine,
the checks, the pipeline or the command line, which read logs through :func:`parse_log`.

Adding a format (a new agent framework's log): a module (or a package, when it outgrows one
module) with ``NAME``, ``detect(path, text) -> bool`` and
``read_events(path, text, notes=None) -> list[LogEvent]`` (events collected in an
:class:`~mleaudit.audit.logs.common.EventList`; sentences on unread parts appended to
``notes``), built on the helpers above; an entry in :data:`ADAPTERS` ahead of ``text`` (in
detection order: a format recognised by its path or a strict shape before looser ones), and a
fixture under ``tests/fixtures/logs/``. A format that decodes JSON escapes also goes in
``_DECODING_FORMATS``.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Callable

from mleaudit.audit.logs import (
    aide,
    assistants,
    frameworks,
    inspect_eval,
    jsondoc,
    jsonl,
    llmcalls,
    mlagentbench,
    openhands,
    pylogging,
    runlog,
    steplog,
)
from mleaudit.audit.logs import text as plain_text
from mleaudit.audit.logs.shadowed import read_hidden_members
from mleaudit.audit.logs.common import MAX_LOG_EVENTS, EventLimitReached, is_cut_short
from mleaudit.audit.logs.jsonregions import json_nesting_problem, surrogate_note
from mleaudit.audit.units import LogEvent, LogEventKind
from mleaudit.grading.untrusted_json import collect_shadowed

__all__ = [
    "ADAPTERS",
    "MAX_LOG_EVENTS",
    "LogAdapter",
    "LogEvent",
    "LogEventKind",
    "LogReading",
    "detect_log_format",
    "parse_log",
    "read_hidden_members",
    "read_log",
    "read_log_events",
]

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True, kw_only=True)
class LogAdapter:
    """One log format: its name, a detector ``(path, text)`` and a reader ``(path, text, notes=)``."""

    name: str
    detect: Callable[[str, str], bool]
    read: Callable[..., list[LogEvent]]


#: Adapters in detection order; structured formats first, plain text last as the fallback.
ADAPTERS: tuple[LogAdapter, ...] = tuple(
    LogAdapter(name=module.NAME, detect=module.detect, read=module.read_events)
    for module in (
        mlagentbench, aide, openhands, inspect_eval, assistants, jsonl, jsondoc, llmcalls, runlog, pylogging, frameworks,
        steplog, plain_text,
    )
)
_BY_NAME = {adapter.name: adapter for adapter in ADAPTERS}


@dataclass(frozen=True, slots=True, kw_only=True)
class LogReading:
    """What reading one log gave.

    Attributes
    ----------
    path : str
        The log's POSIX path relative to the run root.
    log_format : str or None
        The adapter that produced the events; ``None`` for empty or binary text.
    events : tuple of LogEvent
        In file order, ``index`` from 0.
    problems : tuple of str
        Parts of the log that were not read, one sentence each naming where (a JSON document
        cut short or nested too deep, a text log that ends inside a code block, whose event is
        marked :data:`~mleaudit.audit.logs.common.CUT_SHORT`, unreadable JSONL lines, a structured
        reader that failed, the event limit, a key written twice in one JSON object); empty
        when all was read.
    notes : tuple of str
        What was read with a caveat that is no sign of anything missing (lone surrogate
        escapes decoded as U+FFFD).
    """

    path: str
    log_format: str | None
    events: tuple[LogEvent, ...]
    problems: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()


def detect_log_format(path: str, text: str) -> str | None:
    """The name of the first adapter that recognises a log.

    Parameters
    ----------
    path : str
        The log's POSIX path relative to the run root (its name and suffix are hints).
    text : str
        The whole file text.

    Returns
    -------
    str or None
        An :data:`ADAPTERS` name; ``None`` for empty or binary text (NUL characters).
    """
    if not text.strip():
        return None
    for adapter in ADAPTERS:
        try:
            if adapter.detect(path, text):
                return adapter.name
        except (ValueError, TypeError, RecursionError) as exc:
            # Hostile JSON (deep nesting) must not stop the audit; the next adapter tries.
            logger.info("%s: %s detection failed: %s", path, adapter.name, exc)
    return None


def _read_capped(adapter: LogAdapter, path: str, text: str, notes: list[str]) -> list[LogEvent]:
    """Run an adapter; past the event limit keep the events read so far and say where it stopped."""
    try:
        return list(adapter.read(path, text, notes=notes))
    except EventLimitReached as exc:
        stop = exc.event.span
        notes.append(
            f"event limit of {exc.limit} reached at line {stop.start_line} of {text.count(chr(10)) + 1}; "
            "the rest of the log was not read"
        )
        return list(exc.events)


#: Adapters that decode JSON (or Python) string escapes, where ``\\udXXX`` can spell a lone surrogate.
_DECODING_FORMATS = frozenset({
    mlagentbench.NAME, aide.NAME, openhands.NAME, inspect_eval.NAME, assistants.NAME, jsonl.NAME, jsondoc.NAME,
})
#: Readers that read every string of a file: when they find nothing, the file holds no text.
_READS_EVERY_STRING = frozenset({jsondoc.NAME, plain_text.NAME})
#: Suffixes of files meant to hold JSON.
_JSON_SUFFIXES = frozenset({".json", ".jsonl", ".ndjson"})


def _read_by_another(path: str, text: str, detected: str, events: list[LogEvent],
                     notes: list[str]) -> tuple[str, list[LogEvent], list[str]]:
    """``(format, events, problems)`` of the first reader after ``detected`` that recognises the
    file and finds events in it, the plain-text reader last; ``detected``'s own when none does.

    Asked when ``detected`` found nothing and said nothing was left unread: a reader that
    recognises a file by its shape and finds nothing in it would leave the file's text unread
    (another framework's trajectory shaped like its own).
    """
    names = [adapter.name for adapter in ADAPTERS]
    for adapter in ADAPTERS[names.index(detected) + 1:]:
        tried: list[str] = []
        try:
            if adapter.name != plain_text.NAME and not adapter.detect(path, text):
                continue
            found = _read_capped(adapter, path, text, tried)
        except (ValueError, TypeError, KeyError, RecursionError) as exc:
            logger.info("%s: the %s reader failed after the %s reader found nothing: %s", path, adapter.name,
                        detected, exc)
            continue
        if found:
            return adapter.name, found, tried
    return detected, events, notes


def parse_log(path: str, text: str) -> LogReading:
    """Detect a log's format and read it, saying what could not be read.

    A structured reader that recognises the file but finds nothing in it (and says nothing was
    left unread) hands it to the next reader that recognises it, the plain-text reader last,
    and ``notes`` says so. A structured reader that fails outright falls back to the plain-text
    reader (every line of the file is then read as text) and the failure is listed in ``problems``: code the
    structured reader would have found in the log is not audited as code. A file meant to
    hold JSON (``.json``/``.jsonl`` suffix or a leading ``{``/``[``) that nests deeper than
    :data:`~mleaudit.audit.logs.jsonregions.MAX_JSON_DEPTH` and was read as plain text is listed too.

    Parameters
    ----------
    path : str
        The log's POSIX path relative to the run root; it goes on every event's span.
    text : str
        The whole file text (untrusted; only parsed).

    Returns
    -------
    LogReading
        The adapter's name, its events, the problems met and the notes (see :class:`LogReading`).
    """
    detected = detect_log_format(path, text)
    if detected is None:
        return LogReading(path=path, log_format=None, events=())
    notes: list[str] = []
    fallback: str | None = None
    claimed: str | None = None
    with collect_shadowed() as hidden:
        try:
            events = _read_capped(_BY_NAME[detected], path, text, notes)
        except (ValueError, TypeError, KeyError, RecursionError) as exc:
            logger.info("%s: read as plain text, the %s reader failed: %s", path, detected, exc)
            message = "nested too deep to decode" if isinstance(exc, RecursionError) else f"{type(exc).__name__}: {exc}"
            fallback = f"not read as {detected} ({message}); read as plain text instead"
            detected, notes = plain_text.NAME, []
            events = _read_capped(_BY_NAME[plain_text.NAME], path, text, notes)
        if not events and not notes and fallback is None and detected not in _READS_EVERY_STRING:
            claimed, (detected, events, notes) = detected, _read_by_another(path, text, detected, events, notes)
    if fallback is not None:
        notes.insert(0, fallback)
    if hidden:
        hidden_read, problems = read_hidden_members(path, text, hidden, len(events))
        events.extend(hidden_read)
        notes.extend(problems)
    cut = next((event for event in events if is_cut_short(event)), None)
    if cut is not None:
        notes.append(f"the log ends inside the code block opened at line {cut.span.start_line} (cut short): read "
                     "up to its end; what followed it is not in the log")
    remarks: list[str] = []
    if claimed is not None and claimed != detected:
        remarks.append(f"the {claimed} reader, which recognised the file, found nothing in it; read as {detected}")
    if detected in _DECODING_FORMATS:
        remark = surrogate_note(text)
        if remark is not None:
            remarks.append(remark)
    elif PurePosixPath(path).suffix.lower() in _JSON_SUFFIXES or text.lstrip()[:1] in ("{", "["):
        nesting = json_nesting_problem(text)
        if nesting is not None:
            notes.insert(0, f"{nesting}: not read as JSON (its lines were read as plain text)")
    return LogReading(path=path, log_format=detected, events=tuple(events), problems=tuple(notes),
                      notes=tuple(remarks))


def read_log(path: str, text: str) -> tuple[str | None, list[LogEvent]]:
    """Detect a log's format and read it (:func:`parse_log` without the problems).

    Parameters
    ----------
    path : str
        The log's POSIX path relative to the run root; it goes on every event's span.
    text : str
        The whole file text (untrusted; only parsed).

    Returns
    -------
    (str or None, list of LogEvent)
        The adapter that produced the events (``None`` for empty or binary text, with no
        events) and the events in file order, ``index`` from 0.
    """
    reading = parse_log(path, text)
    return reading.log_format, list(reading.events)


def read_log_events(path: str, text: str, log_format: str | None = None) -> list[LogEvent]:
    """Read a log into events with the named adapter, or the detected one.

    Parameters
    ----------
    path : str
        The log's POSIX path relative to the run root; it goes on every event's span.
    text : str
        The whole file text (untrusted; only parsed).
    log_format : str, optional
        An :data:`ADAPTERS` name; detected with :func:`detect_log_format` when omitted
        (see :func:`read_log`).

    Returns
    -------
    list of LogEvent
        In file order, ``index`` from 0; empty for empty or binary text; at most
        :data:`MAX_LOG_EVENTS`.

    Raises
    ------
    KeyError
        If ``log_format`` names no adapter.
    ValueError
        If the named structured adapter cannot read the text.
    """
    if log_format is not None:
        if log_format not in _BY_NAME:
            raise KeyError(f"unknown log format {log_format!r}; known: {', '.join(_BY_NAME)}")
        return _read_capped(_BY_NAME[log_format], path, text, [])
    return read_log(path, text)[1]
