"""Code, commands and tool calls found in printed text: notebook outputs read as a log, and the
messages of JSON logs (fenced blocks, shell prompts, printed calls, code under a header naming it)."""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from itertools import accumulate

from mleaudit.audit.logs import parse_log
from mleaudit.audit.logs import text as plain_text
from mleaudit.audit.logs.common import MAX_LOG_EVENTS, SpanMaker
from mleaudit.audit.logs.keys import classify_text, is_generic_tool
from mleaudit.audit.logs.toolcalls import call_actions, call_expressions
from mleaudit.audit.units import Actor, LogEvent, LogEventKind


#: Name the plain-text and structured readers see for the text of a notebook's outputs.
_OUTPUT_VIRTUAL_PATH = "notebook-output"
_FOUND_KINDS = (LogEventKind.CODE, LogEventKind.COMMAND, LogEventKind.TOOL_CALL)


#: A line that heads printed code: ``----- node c77e code -----``, ``--- code ---``, ``code:``,
#: ``Executing code:``, ``[node 3] code``, ``### Code``, ``Generated python script for step 2:``.
_CODE_HEADER = re.compile(
    r"^[ \t]*(?:[-=#*~<>|]{1,}[ \t]*)?(?:\[[^\]\n]{0,40}\][ \t]*)?"
    r"(?:(?:node|step|draft|iteration|attempt|turn)[ \t#:]*[\w.-]{0,20}[ \t]*[:|-]?[ \t]*)?"
    r"(?:(?:executing|running|generated|final|new|updated|proposed|submitted|best|the|agent|node|solution)[ \t]+){0,3}"
    r"(?:python[ \t]+|py[ \t]+)?(?:code|script|program|source)"
    r"(?:[ \t]+(?:for|of|in|from)[ \t]+(?:node|step|draft|iteration)[ \t#]*[\w.-]{1,20})?"
    r"[:\-=#*~<>|\] \t]*+$", re.IGNORECASE | re.MULTILINE)
#: A line that ends printed code: another header, a rule line, a timestamped or levelled log record.
_SECTION_END = re.compile(
    r"^[ \t]*(?:-{3,}|={3,}|\*{3,}|~{3,}|#{3,}[ \t]|```)"
    r"|^[ \t]*\[?\d{4}-\d{2}-\d{2}[ T]\d"
    r"|^[ \t]*(?:\[[^\]\n]{0,40}\][ \t]*)?(?:INFO|WARNING|ERROR|DEBUG|CRITICAL)\b"
    r"|^[ \t]*(?:\[[^\]\n]{0,40}\][ \t]*)?(?:[\w-]+[ \t]+){0,3}(?:output|result|results|stdout|stderr|observation"
    r"|feedback|plan|analysis|metric|response|error|execution|traceback)[:\-=#*~<>|\] \t]*+$",
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
        body_end = stop
        while body_end > start and text[body_end - 1].isspace():  # as len(text[:stop].rstrip()), no copy
            body_end -= 1
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
    covered = sorted((e.span.start_byte, e.span.end_byte) for e in found if e.kind in (LogEventKind.CODE,
                                                                                        LogEventKind.COMMAND))
    # a section is covered by a span holding its start (the farthest reach of the spans starting
    # at or before it) or starting inside it (the first span starting at or after it): two bisects
    firsts = [a for a, _ in covered]
    reach = list(accumulate((b for _, b in covered), max))
    for start, end in _code_sections(text):
        before = bisect_right(firsts, start)
        after = bisect_left(firsts, start)
        if (before and reach[before - 1] > start) or (after < len(firsts) and firsts[after] < end):
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
