"""The agent's transcript (``agent_log/main_log``) step by step, and the LLM call logs."""

from __future__ import annotations

import re
from mleaudit.audit.logs import llmcalls
from mleaudit.audit.logs.mlagentbench.actions import derived, parse_input
from mleaudit.audit.logs.mlagentbench.events import Events
from mleaudit.audit.units import Actor, LogEventKind

__all__ = ["STEP", "read_call_log", "read_main_log"]

STEP = re.compile(r"^Step \d+:[^\n]*$", re.MULTILINE)
_FIELD = re.compile(
    r"^(Reflection|Research Plan and Status|Fact Check|Thought|Action Input|Action|Final Answer):[ \t]?",
    re.MULTILINE,
)
_OBSERVATION = re.compile(r"^Observation:[ \t]?", re.MULTILINE)


def read_main_log(out: Events) -> None:
    """The main log: the scaffold's prompt up to ``Step 0:``, then each step (:func:`_read_step`)."""
    text = out.text
    steps = list(STEP.finditer(text))
    first = steps[0].start() if steps else len(text)
    # The scaffold's prompt: tool descriptions, the research problem, the instructions.
    out.free_text(0, first, Actor.SCAFFOLD, role="scaffold", code_actor=Actor.SCAFFOLD)
    for number, step in enumerate(steps):
        out.add(LogEventKind.MESSAGE, step.start(), step.end(), Actor.SCAFFOLD, role="scaffold")
        end = steps[number + 1].start() if number + 1 < len(steps) else len(text)
        _read_step(out, step.end(), end)


def _read_step(out: Events, start: int, end: int) -> None:
    """One step of the transcript: the agent's response, then the observation (to the step's end:
    an observation can quote ``Reflection:`` and other field names)."""
    text = out.text
    observation = _OBSERVATION.search(text, start, end)
    response_end = observation.start() if observation is not None else end
    fields = list(_FIELD.finditer(text, start, response_end))
    out.free_text(start, fields[0].start() if fields else response_end, Actor.AGENT, role="assistant")
    number = 0
    while number < len(fields):
        field = fields[number]
        name = field.group(1)
        value_end = fields[number + 1].start() if number + 1 < len(fields) else response_end
        if name == "Action":
            input_start = input_end = None
            if number + 1 < len(fields) and fields[number + 1].group(1) == "Action Input":
                nxt = fields[number + 1]
                input_start = nxt.end()
                input_end = fields[number + 2].start() if number + 2 < len(fields) else response_end
                number += 1
            _action(out, field.end(), value_end, input_start, input_end)
        elif name == "Action Input":
            _action(out, field.end(), field.end(), field.end(), value_end)
        else:
            out.free_text(_skip_spaces(text, field.end(), value_end), value_end, Actor.AGENT, role="assistant")
        number += 1
    if observation is not None:
        obs_start, obs_end = observation.end(), end
        # The observation sits in a ``` fence (twice "Observation:" in some logs): read inside it.
        while True:
            again = _OBSERVATION.match(text, _skip_blank(text, obs_start, obs_end))
            if again is None:
                break
            obs_start = again.end()
        obs_start = _skip_blank(text, obs_start, obs_end)
        fence = re.compile(r"```[^\n]*\n").match(text, obs_start, obs_end)
        if fence is not None:
            obs_start = fence.end()
            close = text.rfind("```", obs_start, obs_end)
            if close != -1 and not text[close + 3 : obs_end].strip():
                obs_end = close
        out.add(LogEventKind.OUTPUT, obs_start, obs_end, Actor.AGENT, role="tool")


def _skip_spaces(text: str, start: int, end: int) -> int:
    while start < end and text[start] in " \t":
        start += 1
    return start


def _skip_blank(text: str, start: int, end: int) -> int:
    while start < end and text[start] in " \t\r\n":
        start += 1
    return start


def _action(out: Events, name_start: int, name_end: int, input_start: int | None, input_end: int | None) -> None:
    """One action: a TOOL_CALL over the name and its input, plus what it runs or writes."""
    text = out.text
    name = text[name_start:name_end].strip()
    end = input_end if input_end is not None else name_end
    out.add(LogEventKind.TOOL_CALL, name_start, end, Actor.AGENT, role="assistant")
    if input_start is None or input_end is None:
        return
    args = parse_input(text[input_start:input_end])
    span_start, span_end = _skip_blank(text, input_start, input_end), input_end
    while span_end > span_start and text[span_end - 1] in " \t\r\n":
        span_end -= 1
    for kind, language, body in derived(name, args):
        out.add(kind, span_start, span_end, Actor.AGENT, text=body, language=language, role="assistant")


def read_call_log(out: Events, agent_call: bool) -> None:
    """A prompt/response log: the agent's own call (its response is the agent's) or a helper's."""
    response_actor = Actor.AGENT if agent_call else Actor.SCAFFOLD
    actors = {"prompt": Actor.SCAFFOLD, "response": response_actor, "tokens": Actor.SCAFFOLD,
              "preamble": Actor.SCAFFOLD}
    for section in llmcalls.split_sections(out.text):
        for event in llmcalls.section_events(out.spans, section, actors[section.kind], first_index=len(out.events)):
            out.events.append(event)
