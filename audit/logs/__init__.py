"""Agent log adapters: each turns one log format into :class:`audit.units.LogEvent` records.

Formats, tried in this order by :func:`detect_log_format`:

==============  ==========================================================================
``aide``        AIDE ``journal.json`` (:mod:`audit.logs.aide`)
``openhands``   OpenHands/CodeAct JSON event lists (:mod:`audit.logs.openhands`)
``assistants``  OpenAI Assistants message dumps, as DSBench saves them (:mod:`audit.logs.assistants`)
``jsonl``       generic JSONL event streams (:mod:`audit.logs.jsonl`)
``runlog``      MLE-bench host ``run.log`` (:mod:`audit.logs.runlog`)
``steplog``     scaffold step logs, THOUGHT/ACTION/OBSERVATION (:mod:`audit.logs.steplog`)
``text``        plain transcripts, the fallback for any text (:mod:`audit.logs.text`)
==============  ==========================================================================

Adding a format: a module with ``NAME``, ``detect(path, text) -> bool`` and
``read_events(path, text) -> list[LogEvent]``, an entry in :data:`ADAPTERS` ahead of ``text``,
and a fixture under ``tests/fixtures/runs_loading/logs/``.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Callable

from audit.logs import aide, assistants, jsonl, openhands, runlog, steplog
from audit.logs import text as plain_text
from audit.units import LogEvent, LogEventKind

__all__ = ["ADAPTERS", "LogAdapter", "LogEvent", "LogEventKind", "detect_log_format", "read_log", "read_log_events"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True, kw_only=True)
class LogAdapter:
    """One log format: its name, a detector and a reader (both take ``(path, text)``)."""

    name: str
    detect: Callable[[str, str], bool]
    read: Callable[[str, str], list[LogEvent]]


#: Adapters in detection order; structured formats first, plain text last as the fallback.
ADAPTERS: tuple[LogAdapter, ...] = tuple(
    LogAdapter(name=module.NAME, detect=module.detect, read=module.read_events)
    for module in (aide, openhands, assistants, jsonl, runlog, steplog, plain_text)
)
_BY_NAME = {adapter.name: adapter for adapter in ADAPTERS}


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


def read_log(path: str, text: str) -> tuple[str | None, list[LogEvent]]:
    """Detect a log's format and read it; a structured reader that fails falls back to text.

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
    detected = detect_log_format(path, text)
    if detected is None:
        return None, []
    try:
        return detected, _BY_NAME[detected].read(path, text)
    except (ValueError, TypeError, KeyError, RecursionError) as exc:
        logger.info("%s: read as plain text, the %s reader failed: %s", path, detected, exc)
        return plain_text.NAME, plain_text.read_events(path, text)


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
        In file order, ``index`` from 0; empty for empty or binary text.

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
        return _BY_NAME[log_format].read(path, text)
    return read_log(path, text)[1]
