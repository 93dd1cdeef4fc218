"""MLAgentBench log folders (ResearchAgent): the agent's transcript, its LLM calls, the environment's trace.

An MLAgentBench run writes, under its log folder (paths relative to the run root):

``agent_log/main_log`` (no extension)
    The agent's whole transcript: the scaffold's prompt (tool descriptions, research problem,
    instructions) up to ``Step 0:``, then per step the agent's response (``Reflection``,
    ``Research Plan and Status``, ``Fact Check``, ``Thought``, ``Action``, ``Action Input``)
    and the environment's ``Observation``.
``agent_log/step_N_log.log``
    The agent's own LLM call of step N: the prompt the scaffold built and the agent's response.
``agent_log/step_N_summary_log.log``, ``agent_log/step_N_summarize_observation_log.log_K``,
``env_log/tool_logs/step_N_tool_log.log[_K]``
    The scaffold's helper LLM calls (summaries, Understand File, Edit Script (AI) ...).
``agent_log/agent_<i>_<j>.json``
    The scaffold's saved state: ``args``, tool descriptions, prompts and ``history_steps``.
``env_log/trace.json``
    The environment's record: ``steps`` (the high-level actions with their arguments and
    observations) and ``low_level_steps`` (the primitive actions it ran for them).
``log`` (at the top, no extension)
    The scaffold's standard output: its ``Namespace(...)`` arguments, a banner, the output of
    the scripts it executed and the agent responses it discarded.
``env_log/overall_time.txt``
    The run's duration.

Who wrote what (:class:`~mleaudit.audit.units.Actor`):

- prompts, tool descriptions, configuration, summaries and the helper LLMs' answers: the
  **scaffold** (MESSAGE events);
- the agent's responses (MESSAGE), its actions (TOOL_CALL events whose text names the tool and
  its arguments), what the environment returned for them (OUTPUT), and every fenced code block
  of the LLM call logs (CODE: the Edit Script (AI) tool writes the agent's solution code): the
  **agent**. ``Execute Script`` also gives a COMMAND ``python <script>`` and ``Python REPL`` a
  CODE event, as the environment runs them; ``Write File``/``Append File`` of a ``.py`` or
  ``.sh`` file give a CODE event of the content;
- the research-log bookkeeping the scaffold does on its own after each step (``Append Summary
  to Research Log``, ``Retrieval from Research Log``) and the primitive actions the environment
  runs for a high-level tool (``low_level_steps``): the **scaffold**, except the code a
  primitive ``Write File`` writes, which is the agent's.

The JSON state and trace are never read as code: their prompts are messages. The logs were
made on Windows at times: a script name written with backslashes (``scripts\\train.py``) is run
as ``python scripts/train.py``. Detection is by path pattern and content together, so a file of
another format that happens to share a name is left to the other readers.
"""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import replace
from pathlib import PurePosixPath
from typing import Any, Iterator

from mleaudit.audit.logs import llmcalls
from mleaudit.audit.logs.common import EventList, SpanMaker
from mleaudit.audit.logs.jsonregions import (
    json_members_partial,
    json_value_regions,
    load_json,
    loads_json,
    string_content,
)
from mleaudit.audit.logs.text import scan_text
from mleaudit.audit.units import Actor, LogEvent, LogEventKind
from mleaudit.grading import untrusted_json

__all__ = ["NAME", "SNAPSHOT", "detect", "read_events", "untouched_snapshots"]

NAME = "mlagentbench"

#: Where an MLAgentBench log folder may sit: at the run root, or in a folder under the layout's
#: ``logs/`` (a run whose logs were copied there). Never at any depth: a file the agent writes
#: (``code/agent_log/main_log``) must not pass for the scaffold's.
_ROOT = r"^(?:logs/(?:[^/]+/)+)?"
_MAIN_LOG = re.compile(_ROOT + r"agent_log/main_log$")
_AGENT_CALL_LOG = re.compile(_ROOT + r"agent_log/step_\d+_log\.log(?:_\d+)?$")
_SCAFFOLD_CALL_LOG = re.compile(
    _ROOT + r"(?:agent_log/step_\d+_[a-z_]*log\.log(?:_\d+)?|env_log/tool_logs/step_\d+_tool_log\.log(?:_\d+)?)$"
)
_AGENT_STATE = re.compile(_ROOT + r"agent_log/agent_\d+_\d+\.json$")
_TRACE = re.compile(_ROOT + r"env_log/trace\.json$")
#: The scaffold's standard output: ``log`` at the top of the run only.
_STDOUT = re.compile(r"^log$")
#: Folders a run layout gives the agent: nothing under them is the scaffold's log.
_AGENT_FOLDERS = frozenset({"code", "working", "workspace", "submission"})
_OVERALL_TIME = re.compile(_ROOT + r"env_log/overall_time\.txt$")

_STEP = re.compile(r"^Step \d+:[^\n]*$", re.MULTILINE)
_FIELD = re.compile(
    r"^(Reflection|Research Plan and Status|Fact Check|Thought|Action Input|Action|Final Answer):[ \t]?",
    re.MULTILINE,
)
_OBSERVATION = re.compile(r"^Observation:[ \t]?", re.MULTILINE)
#: Actions the scaffold takes itself after every step, never chosen by the agent.
_SCAFFOLD_ACTIONS = frozenset({"Append Summary to Research Log", "Retrieval from Research Log"})
#: The high-level actions that leave the workspace's scripts as they were (MLAgentBench's
#: ``ResearchAgent`` tools; the research log is not a script). Any other action, and a step
#: whose action cannot be read, may have changed them.
_READ_ONLY_ACTIONS = frozenset({
    "List Files", "Read File", "Understand File", "Inspect Script Lines", "Reflection", "Final Answer",
    "Append Summary to Research Log", "Retrieval from Research Log",
})
#: A workspace snapshot the environment saves after each step: its root (the trace's folder),
#: the step number and the file's path in the workspace.
SNAPSHOT = re.compile(r"^(?P<root>(?:logs/(?:[^/]+/)+)?env_log/)traces/step_(?P<step>\d{1,9})_files/(?P<file>.+)$")
_CODE_SUFFIXES = {".py": "python", ".pyw": "python", ".sh": "bash", ".bash": "bash"}
_FENCE_LINE = re.compile(r"^[ \t]*```[^\n]*\n?|\n?[ \t]*```[ \t]*$")
#: Containers nested deeper than this in the JSON state are not walked (real files nest < 6).
_MAX_DEPTH = 48


# --- detection --------------------------------------------------------------------------------


def _json_object(text: str) -> dict[str, Any] | None:
    if text.lstrip()[:1] != "{":
        return None
    value, _ = load_json(text)
    return value if isinstance(value, dict) else None


def _kind_of(path: str, text: str) -> str | None:
    """Which MLAgentBench file ``path`` is, when its content agrees; else ``None``."""
    head = text[:200_000]
    if any(part in _AGENT_FOLDERS for part in PurePosixPath(path).parts[:-1]):
        return None
    if _MAIN_LOG.search(path):
        if _STEP.search(head) or "Enabled Tools in Prompt" in head[:2000] or re.search(r"^Action:", head, re.M):
            return "main"
        return None
    if _AGENT_CALL_LOG.search(path) or _SCAFFOLD_CALL_LOG.search(path):
        if not any(section.kind == "prompt" for section in llmcalls.split_sections(head)):
            return None
        return "agent-call" if _AGENT_CALL_LOG.search(path) else "scaffold-call"
    if _AGENT_STATE.search(path):
        state = _json_object(text)
        return "state" if state is not None and {"history_steps", "initial_prompt", "args"} & set(state) else None
    if _TRACE.search(path):
        trace = _json_object(text)
        return "trace" if trace is not None and {"steps", "low_level_steps"} & set(trace) else None
    if _STDOUT.search(path):
        return "stdout" if text.lstrip().startswith("Namespace(") else None
    if _OVERALL_TIME.search(path):
        return "time" if re.fullmatch(r"[\d.\s]+", text) else None
    return None


def detect(path: str, text: str) -> bool:
    """An MLAgentBench file by its path (see the module docstring) whose content agrees."""
    return _kind_of(path, text) is not None


# --- helpers ----------------------------------------------------------------------------------


class _Events:
    """Collects events in file order, numbering them."""

    def __init__(self, text: str, path: str) -> None:
        self.text = text
        self.spans = SpanMaker(text, path)
        self.events = EventList()

    def add(self, kind: LogEventKind, start: int, end: int, actor: Actor, *, text: str | None = None,
            language: str | None = None, role: str = "", location: str = "") -> None:
        if text is None:
            while start < end and self.text[start] in " \t\r\n":
                start += 1
            while end > start and self.text[end - 1] in " \t\r\n":
                end -= 1
            body = self.text[start:end]
        else:
            body = text
        if not body.strip():
            return
        self.events.append(LogEvent(index=len(self.events), kind=kind, text=body, span=self.spans.span(start, end),
                                    language=language, role=role, location=location, actor=actor))

    def free_text(self, start: int, end: int, actor: Actor, *, role: str, code_actor: Actor = Actor.AGENT) -> None:
        """Free text as MESSAGE events (paragraphs), its code blocks as CODE/COMMAND events."""
        for event in scan_text(self.spans, start, end, plain_kind=LogEventKind.MESSAGE):
            code = event.kind in (LogEventKind.CODE, LogEventKind.COMMAND)
            kind = event.kind if code else LogEventKind.MESSAGE
            self.events.append(replace(event, index=len(self.events), kind=kind, role=role,
                                       actor=code_actor if code else actor))

    def add_value(self, kind: LogEventKind, region: tuple[int, int], value: str, actor: Actor, where: str, *,
                  language: str | None = None, role: str = "") -> None:
        """A JSON string value (``region`` includes its quotes) as one event."""
        if not value.strip():
            return
        inside = string_content(self.text, region) or region
        self.events.append(LogEvent(index=len(self.events), kind=kind, text=value, span=self.spans.span(*inside),
                                    language=language, role=role, location=where, actor=actor))


def _strip_fences(raw: str) -> str:
    """An action input without the code fence an LLM sometimes wraps it in."""
    return _FENCE_LINE.sub("", raw.strip()).strip()


_QUOTED_ARG = re.compile(r"[\"']?(\w+)[\"']?\s*:\s*\"((?:[^\"\\]|\\.)*)\"", re.DOTALL)


def _parse_input(raw: str) -> dict[str, Any]:
    """The arguments of an action input: JSON when it parses, else the ``"key": "value"`` pairs
    that can be read (LLMs write broken JSON; MLAgentBench's own parser is lenient too)."""
    body = _strip_fences(raw)
    try:
        value = loads_json(body)
    except (ValueError, RecursionError):
        value = None
    if isinstance(value, dict):
        return value
    args: dict[str, Any] = {}
    for match in _QUOTED_ARG.finditer(body):
        key = match.group(1)
        try:
            value = json.loads(f'"{match.group(2)}"')
        except ValueError:
            value = match.group(2)
        if key in args:
            # As a JSON reader would: the last value wins, the one it hides is reported (read and a gap).
            untrusted_json.report_shadowed((untrusted_json.ShadowedMember(key, args[key]),))
        args[key] = value
    return args


def _script_path(name: str) -> str:
    """A script name as a POSIX path (Windows separators turned round)."""
    return name.strip().replace("\\", "/")


def _derived(name: str, args: dict[str, Any]) -> list[tuple[LogEventKind, str, str]]:
    """What an action runs or writes, as ``(kind, language, text)``: the command the environment
    runs for ``Execute Script``, the code of ``Python REPL``, a code file ``Write File`` writes."""
    name = " ".join(name.split())
    if name == "Execute Script":
        script = args.get("script_name")
        if isinstance(script, str) and script.strip():
            return [(LogEventKind.COMMAND, "bash", f"python {shlex.quote(_script_path(script))}")]
    elif name == "Python REPL":
        command = args.get("command")
        if isinstance(command, str) and command.strip():
            return [(LogEventKind.CODE, "python", command)]
    elif name in ("Write File", "Append File"):
        target, content = args.get("file_name"), args.get("content")
        if isinstance(target, str) and isinstance(content, str) and content.strip():
            language = _CODE_SUFFIXES.get(PurePosixPath(_script_path(target)).suffix.lower())
            if language is not None:
                return [(LogEventKind.CODE if language == "python" else LogEventKind.COMMAND, language, content)]
    return []


# --- agent_log/main_log -------------------------------------------------------------------------


def _read_main_log(out: _Events) -> None:
    text = out.text
    steps = list(_STEP.finditer(text))
    first = steps[0].start() if steps else len(text)
    # The scaffold's prompt: tool descriptions, the research problem, the instructions.
    out.free_text(0, first, Actor.SCAFFOLD, role="scaffold", code_actor=Actor.SCAFFOLD)
    for number, step in enumerate(steps):
        out.add(LogEventKind.MESSAGE, step.start(), step.end(), Actor.SCAFFOLD, role="scaffold")
        end = steps[number + 1].start() if number + 1 < len(steps) else len(text)
        _read_step(out, step.end(), end)


def _read_step(out: _Events, start: int, end: int) -> None:
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


def _action(out: _Events, name_start: int, name_end: int, input_start: int | None, input_end: int | None) -> None:
    """One action: a TOOL_CALL over the name and its input, plus what it runs or writes."""
    text = out.text
    name = text[name_start:name_end].strip()
    end = input_end if input_end is not None else name_end
    out.add(LogEventKind.TOOL_CALL, name_start, end, Actor.AGENT, role="assistant")
    if input_start is None or input_end is None:
        return
    args = _parse_input(text[input_start:input_end])
    span_start, span_end = _skip_blank(text, input_start, input_end), input_end
    while span_end > span_start and text[span_end - 1] in " \t\r\n":
        span_end -= 1
    for kind, language, body in _derived(name, args):
        out.add(kind, span_start, span_end, Actor.AGENT, text=body, language=language, role="assistant")


# --- LLM call logs ------------------------------------------------------------------------------


def _read_call_log(out: _Events, agent_call: bool) -> None:
    """A prompt/response log: the agent's own call (its response is the agent's) or a helper's."""
    response_actor = Actor.AGENT if agent_call else Actor.SCAFFOLD
    actors = {"prompt": Actor.SCAFFOLD, "response": response_actor, "tokens": Actor.SCAFFOLD,
              "preamble": Actor.SCAFFOLD}
    for section in llmcalls.split_sections(out.text):
        for event in llmcalls.section_events(out.spans, section, actors[section.kind]):
            out.events.append(replace(event, index=len(out.events)))


# --- JSON state and trace -----------------------------------------------------------------------


def _key_path(parent: str, key: str) -> str:
    if re.fullmatch(r"[A-Za-z_]\w*", key):
        return f"{parent}.{key}" if parent else key
    return f"{parent}[{json.dumps(key)}]"


def _members(text: str, region: tuple[int, int], value: Any) -> Iterator[tuple[str, tuple[int, int], Any]]:
    """``(key, region, value)`` of a JSON object's members as located in the text."""
    if not isinstance(value, dict):
        return
    located = json_members_partial(text, region[0])
    for key, child in value.items():
        where = located.get(key)
        if where is not None:
            yield key, where, child


def _items(text: str, region: tuple[int, int], value: Any) -> Iterator[tuple[int, tuple[int, int], Any]]:
    if not isinstance(value, list):
        return
    for number, (start, end, child) in enumerate(json_value_regions(text, region[0])[0]):
        yield number, (start, end), child


def _messages(out: _Events, region: tuple[int, int], value: Any, where: str, actor: Actor, depth: int = 0) -> None:
    """Every string under a JSON value as a MESSAGE event (never code: prompts are not programs)."""
    if isinstance(value, str):
        out.add_value(LogEventKind.MESSAGE, region, value, actor, where or "$", role="scaffold")
    elif depth >= _MAX_DEPTH:
        return
    elif isinstance(value, dict):
        for key, child_region, child in _members(out.text, region, value):
            _messages(out, child_region, child, _key_path(where, key), actor, depth + 1)
    elif isinstance(value, list):
        for number, child_region, child in _items(out.text, region, value):
            _messages(out, child_region, child, f"{where}[{number}]", actor, depth + 1)


def _read_state(out: _Events, notes: list[str] | None) -> None:
    value, broke = load_json(out.text)
    root = (len(out.text) - len(out.text.lstrip()), len(out.text))
    for key, region, child in _members(out.text, root, value):
        if key == "history_steps" and isinstance(child, list):
            for number, step_region, step in _items(out.text, region, child):
                _state_step(out, step_region, step, f"history_steps[{number}]")
        else:
            _messages(out, region, child, _key_path("", key), Actor.SCAFFOLD)
    if broke is not None and notes is not None:
        notes.append(f"JSON cut short or damaged at {broke.describe()}; read up to there")


def _state_step(out: _Events, region: tuple[int, int], step: Any, where: str) -> None:
    if not isinstance(step, dict):
        _messages(out, region, step, where, Actor.SCAFFOLD)
        return
    for key, child_region, child in _members(out.text, region, step):
        path = _key_path(where, key)
        if key == "action" and isinstance(child, dict):
            members = {k: (r, v) for k, r, v in _members(out.text, child_region, child)}
            name = members.get("Action", ((0, 0), None))[1]
            for field, (field_region, field_value) in members.items():
                field_path = _key_path(path, field)
                if field == "Action Input" and isinstance(name, str) and isinstance(field_value, str):
                    continue  # joined with the action's name below
                if field == "Action" and isinstance(field_value, str):
                    raw_input = members.get("Action Input", (None, None))
                    text = f"{field_value.strip()}\nAction Input: {raw_input[1].strip()}" if isinstance(
                        raw_input[1], str) else field_value.strip()
                    span_end = raw_input[0][1] if raw_input[0] is not None else field_region[1]
                    start = (string_content(out.text, field_region) or field_region)[0]
                    out.events.append(LogEvent(index=len(out.events), kind=LogEventKind.TOOL_CALL, text=text,
                                               span=out.spans.span(start, span_end), role="assistant",
                                               location=field_path, actor=Actor.AGENT))
                elif isinstance(field_value, str):
                    out.add_value(LogEventKind.MESSAGE, field_region, field_value, Actor.AGENT, field_path,
                                  role="assistant")
                else:
                    _messages(out, field_region, field_value, field_path, Actor.AGENT)
        elif key == "observation" and isinstance(child, str):
            out.add_value(LogEventKind.OUTPUT, child_region, child, Actor.AGENT, path, role="tool")
        elif key != "step_idx":
            _messages(out, child_region, child, path, Actor.SCAFFOLD)


def _read_trace(out: _Events, notes: list[str] | None) -> None:
    value, broke = load_json(out.text)
    root = (len(out.text) - len(out.text.lstrip()), len(out.text))
    for key, region, child in _members(out.text, root, value):
        if key in ("steps", "low_level_steps") and isinstance(child, list):
            for number, step_region, step in _items(out.text, region, child):
                _trace_step(out, step_region, step, f"{key}[{number}]", low_level=key == "low_level_steps")
        else:
            _messages(out, region, child, _key_path("", key), Actor.SCAFFOLD)
    if broke is not None and notes is not None:
        notes.append(f"JSON cut short or damaged at {broke.describe()}; read up to there")


def _trace_step(out: _Events, region: tuple[int, int], step: Any, where: str, *, low_level: bool) -> None:
    if not isinstance(step, dict):
        _messages(out, region, step, where, Actor.SCAFFOLD)
        return
    action = step.get("action")
    name = action.get("name") if isinstance(action, dict) else None
    name = name if isinstance(name, str) else ""
    args = action.get("args") if isinstance(action, dict) else None
    args = args if isinstance(args, dict) else {}
    by_scaffold = low_level or " ".join(name.split()) in _SCAFFOLD_ACTIONS
    actor = Actor.SCAFFOLD if by_scaffold else Actor.AGENT
    for key, child_region, child in _members(out.text, region, step):
        path = _key_path(where, key)
        if key == "action" and isinstance(child, dict):
            shown = json.dumps(action.get("args"), ensure_ascii=False) if "args" in action else ""
            text = f"{name} {shown}".strip() if name else json.dumps(child, ensure_ascii=False)
            out.add(LogEventKind.TOOL_CALL, child_region[0], child_region[1], actor, text=text,
                    role="scaffold" if by_scaffold else "assistant", location=path)
            for kind, language, body in _derived(name, args):
                if low_level and " ".join(name.split()) not in ("Write File", "Append File"):
                    continue  # a primitive Execute Script or REPL call repeats the agent's own step
                out.add(kind, child_region[0], child_region[1], Actor.AGENT, text=body, language=language,
                        role="assistant", location=path)
        elif key == "observation" and isinstance(child, str):
            out.add_value(LogEventKind.OUTPUT, child_region, child, actor, path, role="tool")
        elif key != "timestamp":
            _messages(out, child_region, child, path, Actor.SCAFFOLD)


# --- the scaffold's standard output -------------------------------------------------------------

_SCAFFOLD_LINE = re.compile(
    r"^(?:Namespace\(|log_dir |.*prepare\.py not found|=+[ \t]*$|Benchmark folder name:|Research problem:|"
    r"Lower level actions enabled:|High level actions enabled:|Read only files:|Agent is up!|Final message:|"
    r"Active Children:|Trying again\.|list index out of range|Step:?[ \t]*\d+[ \t]*$|Executing script now\.\.\.)"
)
_RUN_OUTPUT = re.compile(r"^Executing script now\.\.\.[ \t]*$")
_ECHOED_STEP = re.compile(r"^Step:?[ \t]*\d+[ \t]*$")


def _read_stdout(out: _Events) -> None:
    """The scaffold's banner and progress lines (scaffold), the output of the scripts it ran
    for the agent (agent), the agent responses it echoed (agent); other lines are not placed."""
    text = out.text
    pos = 0
    header_end = text.find("Agent is up!")
    if header_end != -1:
        pos = text.find("\n", header_end)
        pos = len(text) if pos == -1 else pos + 1
        out.free_text(0, pos, Actor.SCAFFOLD, role="scaffold", code_actor=Actor.SCAFFOLD)
    block_start, block = pos, "unknown"

    def flush(end: int) -> None:
        if block == "output":
            out.add(LogEventKind.OUTPUT, block_start, end, Actor.AGENT, role="tool")
        elif block == "echo":
            out.free_text(block_start, end, Actor.AGENT, role="assistant")
        else:
            out.add(LogEventKind.OUTPUT, block_start, end, Actor.UNKNOWN)

    while pos < len(text):
        line_end = text.find("\n", pos)
        line_end = len(text) if line_end == -1 else line_end
        line = text[pos:line_end].rstrip("\r")
        if _SCAFFOLD_LINE.match(line):
            flush(pos)
            out.add(LogEventKind.MESSAGE, pos, line_end, Actor.SCAFFOLD, role="scaffold")
            block = "output" if _RUN_OUTPUT.match(line) else "echo" if _ECHOED_STEP.match(line) else "unknown"
            block_start = line_end + 1
        pos = line_end + 1
    flush(len(text))


# --- entry point --------------------------------------------------------------------------------


def read_events(path: str, text: str, notes: list[str] | None = None) -> list[LogEvent]:
    """Events of one MLAgentBench file, in file order (see the module docstring).

    Parameters
    ----------
    path : str
        The file's POSIX path relative to the run root (it says which file it is).
    text : str
        The whole file text.
    notes : list of str, optional
        Receives a sentence when a JSON file is cut short (read up to the break).

    Returns
    -------
    list of LogEvent
        Indexed from 0, each with its :class:`~mleaudit.audit.units.Actor`.

    Raises
    ------
    ValueError
        If the file is not an MLAgentBench file this reader knows (the caller then reads it
        as plain text).
    """
    kind = _kind_of(path, text)
    out = _Events(text, path)
    if kind == "main":
        _read_main_log(out)
    elif kind in ("agent-call", "scaffold-call"):
        _read_call_log(out, agent_call=kind == "agent-call")
    elif kind == "state":
        _read_state(out, notes)
    elif kind == "trace":
        _read_trace(out, notes)
    elif kind == "stdout":
        _read_stdout(out)
    elif kind == "time":
        out.add(LogEventKind.MESSAGE, 0, len(text), Actor.SCAFFOLD, role="scaffold")
    else:
        raise ValueError(f"{path}: not an MLAgentBench log")
    return out.events


# --- the workspace as the benchmark gave it -------------------------------------------------------


def untouched_snapshots(trace_text: str) -> int:
    """How many of the first workspace snapshots show the workspace's scripts as the benchmark gave them.

    The environment saves the workspace after each step (``env_log/traces/step_N_files/``, N
    from 0, after the step's action). While every action so far left the scripts as they were
    (:data:`_READ_ONLY_ACTIONS`: listing, reading, inspecting, reflecting), the snapshot holds
    the task's starter files, the same for every run of the task.

    Parameters
    ----------
    trace_text : str
        ``env_log/trace.json`` (untrusted; parsed up to where it breaks).

    Returns
    -------
    int
        The number of leading steps whose action is read-only: snapshots ``0`` to this number
        minus one hold the starter files. ``0`` when the first action may have written, or the
        trace has no readable ``steps``.

    Examples
    --------
    >>> untouched_snapshots('{"steps": [{"action": {"name": "List Files"}}, {"action": {"name": "Edit Script (AI)"}}]}')
    1
    >>> untouched_snapshots('{"steps": [{"action": {"name": "Execute Script"}}]}')
    0
    """
    value, _ = load_json(trace_text)
    steps = value.get("steps") if isinstance(value, dict) else None
    count = 0
    for step in steps if isinstance(steps, list) else ():
        action = step.get("action") if isinstance(step, dict) else None
        name = action.get("name") if isinstance(action, dict) else None
        if not isinstance(name, str) or " ".join(name.split()) not in _READ_ONLY_ACTIONS:
            break
        count += 1
    return count
