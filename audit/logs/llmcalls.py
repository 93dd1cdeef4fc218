"""Logs of LLM calls: ``=== prompt ===`` and ``=== response ===`` sections, one call after another.

Scaffolds that log every call to their LLM write the prompt they sent and the response they got
between banner lines. AIDE's ``history.txt`` uses ``================= prompt ==================``
and ``================= response ==================``; MLAgentBench's step and tool logs use
``===================prompt=====================``, ``===================gemini-pro response
(500)=====================`` (model name and token limit) and ``===================tokens===
==================`` (token counts). A banner names its section; the text up to the next banner
is its body.

What becomes an event, section by section (the free text is split into paragraphs and read
like a plain transcript, :func:`mleaudit.audit.logs.text.scan_text`):

- fenced code and shell blocks, shell and ``>>>`` prompts: CODE or COMMAND events whose actor
  is the agent (the code an LLM of the run wrote or was shown: the agent's solution, the script
  being edited);
- everything else: MESSAGE events, role ``user`` in a prompt, ``assistant`` in a response,
  ``scaffold`` in a token count or before the first banner. In this generic reader prompts are
  the scaffold's and responses the agent's; :mod:`mleaudit.audit.logs.mlagentbench` says per file whose
  calls they are.

A response whose code block is never closed is an LLM output cut at its token limit, not a
log cut short: only a block the file ends inside is marked
:data:`~mleaudit.audit.logs.common.CUT_SHORT`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterator

from mleaudit.audit.logs.common import EventList, SpanMaker, restamp
from mleaudit.audit.logs.text import Stamp, scan_text, stampable
from mleaudit.audit.units import Actor, LogEvent, LogEventKind

__all__ = ["NAME", "Section", "banner_matches", "detect", "read_events", "section_events", "split_sections"]

NAME = "llmcalls"

_BANNER = re.compile(
    r"^[ \t]*={3,}[ \t]*(?:(?P<prompt>prompt)|(?:(?P<model>[^\s=][^=\n]{0,80}?)[ \t]+)?(?P<response>response)"
    r"(?:[ \t]*\([^)\n]{0,40}\))?|(?P<tokens>tokens))[ \t]*={3,}[ \t]*\r?$",
    re.MULTILINE | re.IGNORECASE,
)
#: Detection looks at this much of a file.
_DETECT_CHARS = 1_000_000


@dataclass(frozen=True, slots=True, kw_only=True)
class Section:
    """One section of an LLM call log.

    ``kind`` is ``"prompt"``, ``"response"``, ``"tokens"`` or ``"preamble"`` (text before the
    first banner); ``start``/``end`` delimit its body (character offsets, the banner line
    excluded); ``model`` is the model a response banner names (``""`` when none).
    """

    kind: str
    start: int
    end: int
    model: str = ""


def banner_matches(text: str, end: int | None = None) -> Iterator[re.Match[str]]:
    """``_BANNER.finditer(text, 0, end)``, trying the pattern only on lines that hold ``===``.

    A banner is one line with ``===`` in it, so a line without is never one; ``find`` skips
    to the next such line in C instead of trying the pattern at every line start.

    Parameters
    ----------
    text : str
    end : int, optional
        Where the search stops (default: the end of the text).

    Yields
    ------
    re.Match
        The banners, in file order.
    """
    end = len(text) if end is None else end
    found = text.find("===", 0, end)
    while found != -1:
        line_start = text.rfind("\n", 0, found) + 1
        banner = _BANNER.match(text, line_start, end)
        if banner is not None:
            yield banner
        line_end = text.find("\n", found, end)
        if line_end == -1:
            return
        found = text.find("===", line_end, end)


def split_sections(text: str) -> list[Section]:
    """The sections of an LLM call log, in file order.

    Parameters
    ----------
    text : str
        The whole file text.

    Returns
    -------
    list of Section
        A ``preamble`` first when text comes before the first banner; empty bodies are kept
        (a prompt that sent nothing).

    Examples
    --------
    >>> [s.kind for s in split_sections("===prompt===\\nhi\\n===gpt-4 response (500)===\\nyo\\n")]
    ['prompt', 'response']
    """
    sections: list[Section] = []
    banners = list(banner_matches(text))
    first = banners[0].start() if banners else len(text)
    if text[:first].strip():
        sections.append(Section(kind="preamble", start=0, end=first))
    for number, banner in enumerate(banners):
        start = banner.end() + 1 if banner.end() < len(text) else banner.end()
        end = banners[number + 1].start() if number + 1 < len(banners) else len(text)
        kind = "prompt" if banner.group("prompt") else "response" if banner.group("response") else "tokens"
        sections.append(Section(kind=kind, start=min(start, end), end=end, model=(banner.group("model") or "").strip()))
    return sections


def detect(path: str, text: str) -> bool:
    """A prompt banner and a response banner in the first megabyte of text."""
    seen: set[str] = set()
    for banner in banner_matches(text, min(len(text), _DETECT_CHARS)):
        seen.add("prompt" if banner.group("prompt") else "response" if banner.group("response") else "tokens")
        if {"prompt", "response"} <= seen:
            return True
    return False


_ROLES = {"prompt": "user", "response": "assistant", "tokens": "scaffold", "preamble": "scaffold"}


def section_events(spans: SpanMaker, section: Section, actor: Actor, *,
                   code_actor: Actor = Actor.AGENT, first_index: int = 0) -> list[LogEvent]:
    """The events of one section (see the module docstring), ``index`` from ``first_index``.

    Parameters
    ----------
    spans : SpanMaker
        Over the whole file text.
    section : Section
    actor : Actor
        Who wrote the section's text (its MESSAGE events).
    code_actor : Actor
        Who the section's code and commands belong to.
    first_index : int
        The number of the first event (a reader that joins sections numbers on).

    Returns
    -------
    list of LogEvent
        Free text as MESSAGE events with ``actor``; code and commands with ``code_actor``.
    """
    role = _ROLES[section.kind]
    cut_at_end = section.end >= len(spans.text)
    if stampable(section.start, section.end):
        return scan_text(spans, section.start, section.end, plain_kind=LogEventKind.MESSAGE, cut_at_end=cut_at_end,
                         stamp=Stamp(first_index, role, actor, code_actor))
    events = []
    for number, event in enumerate(scan_text(spans, section.start, section.end, plain_kind=LogEventKind.MESSAGE,
                                             cut_at_end=cut_at_end), first_index):
        if event.kind in (LogEventKind.CODE, LogEventKind.COMMAND):
            events.append(restamp(event, number, role=role, actor=code_actor))
        else:
            events.append(restamp(event, number, kind=LogEventKind.MESSAGE, role=role, actor=actor))
    return events


def read_events(path: str, text: str, notes: list[str] | None = None) -> list[LogEvent]:
    """Events of an LLM call log, in file order: prompts as the scaffold's, responses as the agent's.

    Parameters
    ----------
    path : str
        The log's POSIX path relative to the run root.
    text : str
        The whole file text.
    notes : list of str, optional
        Unused (every line is read).

    Returns
    -------
    list of LogEvent
        Indexed from 0 (see the module docstring).
    """
    spans = SpanMaker(text, path)
    events = EventList()
    actors = {"prompt": Actor.SCAFFOLD, "response": Actor.AGENT, "tokens": Actor.SCAFFOLD, "preamble": Actor.UNKNOWN}
    for section in split_sections(text):
        for event in section_events(spans, section, actors[section.kind], first_index=len(events)):
            events.append(event)
    return events
