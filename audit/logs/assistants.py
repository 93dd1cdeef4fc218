"""OpenAI Assistants message dumps (DSBench ``*_message.txt`` and its JSON summary).

DSBench saves the Python ``repr`` of a thread's message page:
``SyncCursorPage[Message](data=[Message(id='msg_…', …, content=[TextContentBlock(text=Text(
annotations=[], value='…'), type='text')], …, role='assistant', …), …])``, newest message
first, and a JSON summary whose ``response`` string holds the same text. Each text value
becomes a MESSAGE event with the message's role, in file order. The string literals are
decoded with :func:`ast.literal_eval`, which only evaluates literals (nothing is run).

Spans cover the literal's content inside its quotes. In the JSON summary the dump is itself
a JSON string; when the file encodes it the way :func:`json.dumps` does, offsets are mapped
through the escapes exactly, otherwise the span is the whole ``response`` value.

Assistant messages are the AGENT's, and the code they show (fenced blocks, shell prompts) and
the tool calls they print (``functions.name({...})``) are also given as CODE/COMMAND/TOOL_CALL
events of the agent; user messages are the OPERATOR's.
"""

from __future__ import annotations

import ast
import json
import re
from itertools import accumulate

from mleaudit.audit.logs import text as plain_text
from mleaudit.audit.logs.common import EventList, SpanMaker
from mleaudit.audit.logs.jsonregions import json_member_regions, loads_json, string_content
from mleaudit.audit.logs.keys import is_generic_tool
from mleaudit.audit.logs.toolcalls import call_actions, call_expressions
from mleaudit.audit.units import Actor, LogEvent, LogEventKind

__all__ = ["NAME", "detect", "read_events"]

NAME = "assistants"

_PAGE = "SyncCursorPage[Message]("
#: The tokens of a dump that matter: string literals (whole, so nothing inside them is taken for
#: structure) and the start of a message.
_TOKENS = re.compile(r"""'(?:[^'\\\n]|\\.)*'|"(?:[^"\\\n]|\\.)*"|(?P<marker>\bMessage\(id=)""")
#: The assistant is the agent; the user messages are the operator's task statement and files.
_ROLE_ACTORS = {"assistant": Actor.AGENT, "user": Actor.OPERATOR}


def detect(path: str, text: str) -> bool:
    """A message-page ``repr``, or a JSON object whose ``response`` string is one."""
    head = text.lstrip()[:200]
    if head.startswith(_PAGE):
        return True
    return head.startswith("{") and '"response": "SyncCursorPage[Message](' in text[:1_000_000]


def _messages(dump: str) -> list[tuple[int, int, str, str]]:
    """``(content_start, content_end, text, role)`` for each text value in a dump.

    The dump is read token by token, string literals whole: a ``Message(id=`` or ``role='user'``
    written inside a message's text starts no message and sets no role.
    """
    found = []
    messages: list[tuple[list[re.Match[str]], list[str]]] = []
    for token in _TOKENS.finditer(dump):
        if token.group("marker"):
            messages.append(([], [""]))
        elif messages:
            values, role = messages[-1]
            before = dump[max(0, token.start() - 6):token.start()]
            if before.endswith("value="):
                values.append(token)
            elif before.endswith("role=") and not (before[0].isalnum() or before[0] == "_") \
                    and token.group().startswith("'"):
                role[0] = token.group()[1:-1]
    for values, (role,) in messages:
        for value in values:
            try:
                decoded = ast.literal_eval(value.group())
            except (ValueError, SyntaxError):
                continue
            if isinstance(decoded, str) and decoded.strip():
                found.append((value.start() + 1, value.end() - 1, decoded, role))
    return found


def read_events(path: str, text: str, notes: list[str] | None = None) -> list[LogEvent]:
    """MESSAGE events, one per text block, in file order (see the module docstring).

    Parameters
    ----------
    path : str
        The dump's POSIX path relative to the run root.
    text : str
        The whole file text.
    notes : list of str, optional
        Unused.

    Returns
    -------
    list of LogEvent
        Indexed from 0; ``role`` is ``"assistant"`` or ``"user"``; a message's code events
        follow it.

    Raises
    ------
    ValueError
        If the JSON summary is malformed.
    """
    spans = SpanMaker(text, path)
    events = EventList()
    if text.lstrip().startswith(_PAGE):
        for start, end, body, role in _messages(text):
            _message_events(events, body, role, spans.span(start, end))
        return events
    data = loads_json(text)
    dump = data.get("response") if isinstance(data, dict) else None
    if not isinstance(dump, str):
        raise ValueError(f"{path}: no 'response' string in the JSON summary")
    region = string_content(text, json_member_regions(text, len(text) - len(text.lstrip())).get("response"))
    if region is None:
        raise ValueError(f"{path}: 'response' is not a string literal")
    offsets: list[int] | None = None
    if json.dumps(dump)[1:-1] == text[region[0] : region[1]]:
        # Raw offset of each decoded character: the lengths of its JSON escapes, summed.
        offsets = list(accumulate((len(json.dumps(ch)) - 2 for ch in dump), initial=region[0]))
    for start, end, body, role in _messages(dump):
        span = spans.span(offsets[start], offsets[end]) if offsets is not None else spans.span(*region)
        _message_events(events, body, role, span)
    return events


def _message_events(events: EventList, body: str, role: str, span) -> None:
    """The MESSAGE event of one text block, then the code and commands an assistant wrote in it.

    Code the assistant shows in fenced blocks (or shell prompts) is read with the plain-text
    reader (:mod:`mleaudit.audit.logs.text`) and given as CODE/COMMAND events of the agent, spanning the
    whole message (the block's offsets inside a decoded literal do not map onto the file).
    """
    actor = _ROLE_ACTORS.get(role, Actor.UNKNOWN)
    events.append(LogEvent(index=len(events), kind=LogEventKind.MESSAGE, text=body, span=span, role=role,
                           actor=actor))
    if role != "assistant":
        return
    if "```" in body or "~~~" in body or "$ " in body:
        for found in plain_text.read_events("message", body):
            if found.kind in (LogEventKind.CODE, LogEventKind.COMMAND):
                events.append(LogEvent(index=len(events), kind=found.kind, text=found.text, span=span,
                                       language=found.language, role=role, actor=actor))
    for start, end, name, arguments in call_expressions(body):
        for hit in call_actions(arguments, name):
            events.append(LogEvent(index=len(events), kind=hit.kind, text=hit.text, span=span, language=hit.language,
                                   role=role, actor=actor))
        if not is_generic_tool(name):
            events.append(LogEvent(index=len(events), kind=LogEventKind.TOOL_CALL, text=body[start:end], span=span,
                                   role=role, actor=actor))
