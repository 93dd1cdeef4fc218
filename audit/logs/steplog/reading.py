"""The events of a step log: tagged records (:func:`read_records`) or MLAgentBench-style fields
(:func:`read_fields`), with who wrote each (see :mod:`mleaudit.audit.logs.steplog`)."""

from __future__ import annotations

import re

from mleaudit.audit.logs.common import EventList, SpanMaker
from mleaudit.audit.logs.prompts import find_prompts
from mleaudit.audit.logs.steplog.actions import (
    CODE_TOOL_KEYS,
    PYTHON_TOOL_KEYS,
    SHELL_TOOL_KEYS,
    WRITE_TOOL_KEYS,
    action_tool,
    classify_action,
    input_events,
    json_actions,
    tool_input,
    tool_key,
    unfence,
)
from mleaudit.audit.logs.steplog.records import AFTER_TAG, TAG_COLON, end_of_line, split_records, trim
from mleaudit.audit.units import Actor, LogEvent, LogEventKind

__all__ = ["read_fields", "read_records"]

_FIELD = re.compile(
    r"^(Reflection|Research Plan and Status|Fact Check|Thought|Action Input|Action|Observation|Final Answer):[ \t]?",
    re.MULTILINE,
)
_STEP_HEADER = re.compile(r"^Step \d+\b.*$", re.MULTILINE)


class _Out:
    """Collects events in file order."""

    def __init__(self, text: str, spans: SpanMaker) -> None:
        self.text = text
        self.spans = spans
        self.events = EventList()

    def add(self, kind: LogEventKind, start: int, end: int, language: str | None = None, role: str = "",
            actor: Actor = Actor.AGENT) -> None:
        start, end = trim(self.text, start, end)
        if end > start:
            self.events.append(LogEvent(index=len(self.events), kind=kind, text=self.text[start:end],
                                        span=self.spans.span(start, end), language=language, role=role, actor=actor))

    def with_prompts(self, kind: LogEventKind, start: int, end: int, role: str, actor: Actor,
                     typed_actor: Actor) -> None:
        """Free text: commands and code typed at a prompt become events of their own."""
        plain_from = start
        for hit in find_prompts(self.text, start, end):
            self.add(kind, plain_from, hit.line_start, role=role, actor=actor)
            self.add(hit.kind, hit.start, hit.end, hit.language, role=role, actor=typed_actor)
            plain_from = hit.end
        self.add(kind, plain_from, end, role=role, actor=actor)


def read_records(text: str, spans: SpanMaker, bare: bool = False) -> list[LogEvent]:
    """Events of a log of tagged records (time-stamped, or ``bare``: tags at line starts)."""
    out = _Out(text, spans)
    records = split_records(text, bare)
    first = records[0].line_start if records else len(text)
    # What comes before the first record: a banner, a task statement; who wrote it is not known.
    out.with_prompts(LogEventKind.MESSAGE, 0, first, "", Actor.UNKNOWN, Actor.UNKNOWN)
    number = 0
    while number < len(records):
        record = records[number]
        number += 1
        end = record.end
        if record.tag == "observation":
            # Untagged timestamped lines after an observation are lines of that output.
            while number < len(records) and not records[number].tag and not records[number].logger:
                end = records[number].end
                number += 1
        if record.tag == "action" and number < len(records) and records[number].tag == "input":
            # ``Action: bash`` then ``Action Input: ls``: the input record holds what the tool ran.
            following = records[number]
            number += 1
            name = action_tool(text, record.tag_end, end)
            input_start = AFTER_TAG.match(text, following.tag_end, following.end).end()
            known = tool_key(name) in SHELL_TOOL_KEYS | PYTHON_TOOL_KEYS | CODE_TOOL_KEYS | WRITE_TOOL_KEYS
            if not known:
                for kind, start, stop, language in classify_action(text, record.tag_end, end):
                    out.add(kind, start, stop, language, "assistant")
            for kind, start, stop, language in input_events(text, name, input_start, following.end):
                out.add(kind, start, stop, language, "assistant")
            continue
        if record.tag == "action":
            for kind, start, stop, language in classify_action(text, record.tag_end, end):
                out.add(kind, start, stop, language, "assistant")
            continue
        if record.tag in ("command", "code", "input"):
            # ``COMMAND: ls``, ``[CODE]`` then code, an input without its action.
            name = {"command": "bash", "code": "python"}.get(record.tag, "")
            input_start = AFTER_TAG.match(text, record.tag_end, end).end()
            for kind, start, stop, language in input_events(text, name, input_start, end):
                out.add(kind, start, stop, language, "assistant")
            continue
        if record.tag in ("thought", "observation"):
            colon = TAG_COLON.match(text, record.tag_end, end_of_line(text, record.tag_end, end))
            body = colon.end() if colon is not None else record.tag_end
            if record.tag == "thought":
                out.add(LogEventKind.MESSAGE, body, end, role="assistant")
            else:
                out.with_prompts(LogEventKind.OUTPUT, body, end, "tool", Actor.AGENT, Actor.AGENT)
        elif record.logger:
            out.with_prompts(LogEventKind.MESSAGE, record.body, end, "scaffold", Actor.SCAFFOLD, Actor.UNKNOWN)
        else:
            out.with_prompts(LogEventKind.MESSAGE, record.body, end, "", Actor.UNKNOWN, Actor.UNKNOWN)
    return out.events


def read_fields(text: str, spans: SpanMaker) -> list[LogEvent]:
    """Events of a log of MLAgentBench-style fields (``Thought:``, ``Action:``, ``Observation:`` ...)."""
    out = _Out(text, spans)
    # Field labels and ``Step N`` headers both end the value before them.
    boundaries = sorted(
        [(m.start(), m.end(), m.group(1)) for m in _FIELD.finditer(text)]
        + [(m.start(), m.end(), None) for m in _STEP_HEADER.finditer(text)],
        key=lambda boundary: boundary[0],
    )
    # The banner before the first field is the scaffold's; only commands typed there are events.
    for hit in find_prompts(text, 0, boundaries[0][0] if boundaries else len(text)):
        out.add(hit.kind, hit.start, hit.end, hit.language, actor=Actor.UNKNOWN)
    number = 0
    while number < len(boundaries):
        _, value_start, name = boundaries[number]
        value_end = boundaries[number + 1][0] if number + 1 < len(boundaries) else len(text)
        number += 1
        if name is None:
            continue
        if name == "Action" and number < len(boundaries) and boundaries[number][2] == "Action Input":
            # The action and its input are one call, or a command or code for a shell or Python tool.
            input_start = boundaries[number][1]
            input_end = boundaries[number + 1][0] if number + 1 < len(boundaries) else len(text)
            number += 1
            key = tool_key(text[value_start:value_end].strip())
            inner_start, inner_end, tag = unfence(text, input_start, input_end)
            plain = text[inner_start:inner_start + 1] not in ("{", "[", "")
            if plain and (key in SHELL_TOOL_KEYS or key in PYTHON_TOOL_KEYS or key in CODE_TOOL_KEYS):
                kind, start, end, language = tool_input(key, text, value_start, input_start, input_end)
                out.add(kind, start, end, language, "assistant")
                continue
            found = json_actions(text, value_start, input_start, input_end, text[value_start:value_end].strip())
            for kind, start, end, language in found or [(LogEventKind.TOOL_CALL, value_start, input_end, None)]:
                out.add(kind, start, end, language, "assistant")
        elif name == "Action":
            for kind, start, end, language in classify_action(text, value_start, value_end):
                out.add(kind, start, end, language, "assistant")
        elif name == "Action Input":
            out.add(LogEventKind.TOOL_CALL, value_start, value_end, role="assistant")
        elif name == "Observation":
            start, end = trim(text, value_start, value_end)
            fence = re.match(r"```[^\n]*\n", text[start:end])
            if fence is not None:
                start += fence.end()
                if text[start:end].endswith("```"):
                    end -= 3
            out.with_prompts(LogEventKind.OUTPUT, start, max(start, end), "tool", Actor.AGENT, Actor.AGENT)
        else:
            out.add(LogEventKind.MESSAGE, value_start, value_end, role="assistant")
    return out.events
