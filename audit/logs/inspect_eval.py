"""Inspect eval logs (UK AISI ``inspect_ai``): the JSON log, sample by sample.

A JSON log is one ``EvalLog`` object: ``version``, ``status``, ``eval`` (task, model, ...),
``plan``, ``results``, ``stats`` and ``samples``. Each sample holds the conversation in
``messages``: ``system``/``user`` messages, ``assistant`` messages with ``content`` (a string or
a list of ``text``/``reasoning`` parts) and ``tool_calls`` (``{id, function, arguments}``), and
``tool`` messages with the call's output (``tool_call_id``, ``function``, ``content``,
``error``). Large strings may be stored once in the sample's ``attachments`` and referred to as
``attachment://<id>``; they are resolved here.

What becomes an event:

- a tool call whose arguments hold ``cmd`` (Inspect's ``bash`` tool), ``command`` for a shell
  tool, or ``input`` for ``bash_session``: COMMAND;
- ``code`` (``python`` tool; other tools: language guessed): CODE;
- an editor tool (``text_editor``, ``str_replace_based_edit_tool``) writing a ``.py``/``.sh``
  file (``file_text`` of ``create``, ``new_str`` of ``str_replace``/``insert``): CODE;
- commands and code under any other key of the shared vocabulary (:mod:`mleaudit.audit.logs.keys`:
  ``source``, ``script``, ``command``, ``input`` ..., JSON inside a string included): COMMAND or
  CODE;
- any tool call other than a plain shell, Python or editor tool: TOOL_CALL, whose text is
  ``function(arguments)`` with the ``arguments`` object as written (its span);
- text and reasoning content (a reasoning part's ``summary``, and the providers' ``output_text`` and
  ``thinking`` parts too): MESSAGE with the message's role; tool messages: OUTPUT (their
  ``error.message`` too);
- a tool call found only in the sample's ``events`` transcript (a sub-agent's), read as above.

Actors: assistant messages, their tool calls and the tools' output are the AGENT's; system and
user messages (the solver's prompts) are the SCAFFOLD's.

Spans point inside the quotes of the JSON string each text was decoded from (escapes make the
raw region longer than the text), falling back to the message's first line; ``location`` is the
JSON path, e.g. ``samples[0].messages[5].tool_calls[0]``.

An ``.eval`` file is a zip archive of samples, each read as here by
:func:`mleaudit.audit.logs.inspect_archive.read_eval_archive`.

References: ``inspect_ai/log/_log.py`` (``EvalLog``, ``EvalSample``),
``inspect_ai/model/_chat_message.py``, ``inspect_ai/tool/_tool_call.py``,
https://inspect.aisi.org.uk/eval-logs.html.
"""

from __future__ import annotations

import json
from pathlib import PurePosixPath
from typing import Any

from mleaudit.audit.logs.common import EventList, SpanMaker, guess_code_language
from mleaudit.audit.logs.jsonregions import (
    json_members_partial,
    json_value_regions,
    load_json,
    loads_json,
    string_content,
)
from mleaudit.audit.logs.keys import is_generic_tool
from mleaudit.audit.logs.toolcalls import call_actions, call_text
from mleaudit.audit.units import Actor, LogEvent, LogEventKind

__all__ = ["NAME", "EvalDocument", "detect", "read_events", "sample_events"]

NAME = "inspect"

_SHELL_TOOLS = frozenset({"bash", "shell", "sh", "execute_bash", "run", "terminal", "bash_session", "container_exec"})
_PYTHON_TOOLS = frozenset({"python", "ipython", "execute_python", "run_ipython", "python_exec"})
_EDITOR_TOOLS = frozenset({"text_editor", "str_replace_based_edit_tool", "str_replace_editor", "edit_file",
                           "write_file"})
_CODE_SUFFIXES = {".py": "python", ".sh": "bash", ".bash": "bash"}
_ATTACHMENT = "attachment://"
#: Who wrote a message of each role: the assistant's calls and the tools' output are the agent's,
#: the system and user prompts the scaffold's (Inspect's solver writes them).
_ROLE_ACTORS = {"assistant": Actor.AGENT, "tool": Actor.AGENT, "system": Actor.SCAFFOLD, "user": Actor.SCAFFOLD}


def _is_eval_log(value: Any) -> bool:
    if not isinstance(value, dict) or not isinstance(value.get("eval"), dict):
        return False
    spec = value["eval"]
    return ("task" in spec or "model" in spec) and ("samples" in value or "status" in value)


def detect(path: str, text: str) -> bool:
    """A JSON object with an ``eval`` spec (``task``/``model``) and ``samples`` or ``status``."""
    if text.lstrip()[:1] != "{" or '"eval"' not in text:
        return False
    if PurePosixPath(path).suffix.lower() not in (".json", ""):
        return False
    value, _ = load_json(text)
    return _is_eval_log(value)


class EvalDocument:
    """One JSON text with its span maker, building events into a shared list."""

    def __init__(self, path: str, text: str, events: list[LogEvent]) -> None:
        self.text = text
        self.spans = SpanMaker(text, path)
        self.events = events

    def members(self, region: tuple[int, int] | None) -> dict[str, tuple[int, int]]:
        if region is None or self.text[region[0] : region[0] + 1] != "{":
            return {}
        return json_members_partial(self.text, region[0])

    def items(self, region: tuple[int, int] | None) -> list[tuple[int, int, Any]]:
        if region is None:
            return []
        return json_value_regions(self.text, region[0])[0]

    def emit(self, kind: LogEventKind, body: Any, region: tuple[int, int] | None, fallback: int, *,
             language: str | None = None, role: str = "", location: str = "",
             attachments: tuple[dict[str, Any], dict[str, tuple[int, int]]] | None = None) -> None:
        """Add an event for ``body`` decoded from ``region``; attachments are resolved; the actor
        comes from the role (:data:`_ROLE_ACTORS`)."""
        if isinstance(body, str) and body.startswith(_ATTACHMENT) and attachments is not None:
            key = body[len(_ATTACHMENT):]
            values, regions = attachments
            if isinstance(values.get(key), str):
                body, region = values[key], regions.get(key)
        if not isinstance(body, str) or not body.strip():
            return
        located = string_content(self.text, region)
        span = self.spans.span(*located) if located is not None else self.spans.line_span(fallback)
        self.events.append(
            LogEvent(index=len(self.events), kind=kind, text=body, span=span, language=language, role=role,
                     location=location, actor=_ROLE_ACTORS.get(role, Actor.UNKNOWN))
        )


#: Content parts that hold text: Inspect's ``text`` and ``reasoning`` (with its ``summary``), and the
#: providers' own types a log may keep (``output_text``, ``thinking``).
_TEXT_PART_TYPES = frozenset({None, "text", "reasoning", "output_text", "thinking"})


def _content_events(doc: EvalDocument, content: Any, region: tuple[int, int] | None, kind: LogEventKind,
                    role: str, where: str, fallback: int, attachments) -> None:
    """Text (and reasoning) of a message's ``content``: a string or a list of parts."""
    if isinstance(content, str):
        doc.emit(kind, content, region, fallback, role=role, location=f"{where}.content", attachments=attachments)
        return
    if not isinstance(content, list):
        return
    for number, (start, end, part) in enumerate(doc.items(region)):
        if not isinstance(part, dict):
            continue
        part_members = doc.members((start, end))
        for key in ("text", "reasoning", "summary", "thinking"):
            if isinstance(part.get(key), str) and part.get("type") in _TEXT_PART_TYPES:
                doc.emit(kind, part[key], part_members.get(key), start, role=role,
                         location=f"{where}.content[{number}]", attachments=attachments)


def _call_event(doc: EvalDocument, call: dict[str, Any], region: tuple[int, int], where: str, attachments) -> None:
    """The events of one tool call (see the module docstring)."""
    function = call.get("function") if isinstance(call.get("function"), str) else ""
    if isinstance(call.get("function"), dict):  # an OpenAI-shaped call stored as is
        function = str(call["function"].get("name", ""))
    members = doc.members(region)
    args_region = members.get("arguments")
    arguments = call.get("arguments")
    if isinstance(call.get("function"), dict) and arguments is None:
        arguments = call["function"].get("arguments")
    raw_arguments = arguments if isinstance(arguments, str) else None
    if isinstance(arguments, str):
        try:
            arguments = loads_json(arguments)
        except ValueError:
            arguments = None
        args_members: dict[str, tuple[int, int]] = {}
    else:
        args_members = doc.members(args_region)
    name = function.lower()

    def emit(kind: LogEventKind, key: str, language: str | None) -> None:
        doc.emit(kind, arguments[key], args_members.get(key), region[0], language=language, role="assistant",
                 location=where, attachments=attachments)

    found = True
    if not isinstance(arguments, dict):
        found = False
    elif isinstance(arguments.get("cmd"), str):
        emit(LogEventKind.COMMAND, "cmd", "bash")
    elif name in _SHELL_TOOLS and isinstance(arguments.get("command"), str):
        emit(LogEventKind.COMMAND, "command", "bash")
    elif name == "bash_session" and isinstance(arguments.get("input"), str):
        emit(LogEventKind.COMMAND, "input", "bash")
    elif isinstance(arguments.get("code"), str):
        code = arguments["code"]
        emit(LogEventKind.CODE, "code", "python" if name in _PYTHON_TOOLS else guess_code_language(code))
    elif name in _EDITOR_TOOLS and _CODE_SUFFIXES.get(PurePosixPath(str(arguments.get("path", ""))).suffix.lower()):
        language = _CODE_SUFFIXES[PurePosixPath(str(arguments["path"])).suffix.lower()]
        key = next((k for k in ("file_text", "new_str", "content") if isinstance(arguments.get(k), str)), None)
        if key is not None:
            emit(LogEventKind.CODE, key, language)
        else:
            found = False
    else:
        found = False
    if not found and arguments is not None:
        # Commands and code under any other key of the vocabulary (source, script, input ...).
        for hit in call_actions(arguments, function):
            key = (next((k for k, v in arguments.items() if v == hit.text), None)
                   if isinstance(arguments, dict) else None)
            doc.emit(hit.kind, hit.text, args_members.get(key) if key else args_region, region[0],
                     language=hit.language, role="assistant", location=where, attachments=attachments)
            found = True
    if found and is_generic_tool(function):
        return
    # The call itself, named: ``submit_to_kaggle({...})`` with the arguments as written.
    if args_region is not None and args_region[1] <= len(doc.text) and doc.text[args_region[0]] == "{":
        start, end = args_region
        raw = doc.text[start:end]
        if raw.strip("{} \n\t\r") or function:
            doc.events.append(
                LogEvent(index=len(doc.events), kind=LogEventKind.TOOL_CALL, text=call_text(function, None, raw),
                         span=doc.spans.span(start, end), role="assistant", location=where, actor=Actor.AGENT)
            )
    elif raw_arguments is not None:
        doc.emit(LogEventKind.TOOL_CALL, call_text(function, None, raw_arguments), args_region, region[0],
                 role="assistant", location=where)
    elif arguments or function:
        body = call_text(function, None, json.dumps(arguments if arguments is not None else {}, sort_keys=True,
                                                    ensure_ascii=False))
        doc.emit(LogEventKind.TOOL_CALL, body, None, region[0], role="assistant", location=where)


def _call_key(call: dict[str, Any]) -> str:
    """A tool call's function and arguments, for telling one call written twice."""
    function = call.get("function")
    arguments = call.get("arguments", function.get("arguments") if isinstance(function, dict) else None)
    name = function.get("name") if isinstance(function, dict) else function
    return json.dumps([name, arguments], sort_keys=True, ensure_ascii=False, default=str)


def sample_events(doc: EvalDocument, sample: dict[str, Any], region: tuple[int, int], prefix: str) -> None:
    """Events of one sample's ``messages`` and of the tool calls only its ``events`` hold (``prefix`` is
    ``samples[i].`` or empty)."""
    members = doc.members(region)
    attachment_values = sample.get("attachments") if isinstance(sample.get("attachments"), dict) else {}
    attachments = (attachment_values, doc.members(members.get("attachments")))
    called: set[str] = set()
    for number, (start, end, message) in enumerate(doc.items(members.get("messages"))):
        if not isinstance(message, dict):
            continue
        where = f"{prefix}messages[{number}]"
        role = message.get("role").lower() if isinstance(message.get("role"), str) else ""
        message_members = doc.members((start, end))
        kind = LogEventKind.OUTPUT if role == "tool" else LogEventKind.MESSAGE
        _content_events(doc, message.get("content"), message_members.get("content"), kind, role, where, start,
                        attachments)
        if role == "tool" and isinstance(message.get("error"), dict):
            error_members = doc.members(message_members.get("error"))
            doc.emit(LogEventKind.OUTPUT, message["error"].get("message"), error_members.get("message"), start,
                     role=role, location=f"{where}.error", attachments=attachments)
        calls = message.get("tool_calls")
        if isinstance(calls, list):
            for call_number, (call_start, call_end, call) in enumerate(doc.items(message_members.get("tool_calls"))):
                if isinstance(call, dict):
                    called.add(_call_key(call))
                    _call_event(doc, call, (call_start, call_end), f"{where}.tool_calls[{call_number}]", attachments)
    # The sample's event transcript repeats every tool call of its messages; a call only there (a
    # sub-agent's, a handoff's, one a model event's output asked for) is read too.
    _transcript_calls(doc, members.get("events"), f"{prefix}events", attachments, called)


def _transcript_calls(doc: EvalDocument, region: tuple[int, int] | None, where: str, attachments, called: set[str],
                      depth: int = 0) -> None:
    """The tool calls of an event transcript not read yet (``called``): ``tool`` events, the calls
    in a ``model`` event's output, and the events nested in subtasks, spans and handoffs."""
    if region is None or doc.text[region[0]:region[0] + 1] != "[":
        return
    for number, (start, end, event) in enumerate(doc.items(region)):
        if not isinstance(event, dict):
            continue
        path = f"{where}[{number}]"
        name = event.get("event").lower() if isinstance(event.get("event"), str) else ""
        event_members = doc.members((start, end))
        calls: list[tuple[tuple[int, int], dict[str, Any], str]] = []
        if name == "tool":
            calls.append(((start, end), event, path))
        elif name == "model":
            output_members = doc.members(event_members.get("output"))
            choices = output_members.get("choices")
            choices = choices if choices is not None and doc.text[choices[0]:choices[0] + 1] == "[" else None
            for choice_number, (choice_start, choice_end, _) in enumerate(doc.items(choices)):
                message_region = doc.members((choice_start, choice_end)).get("message")
                message_members = doc.members(message_region)
                listed = message_members.get("tool_calls")
                listed = listed if listed is not None and doc.text[listed[0]:listed[0] + 1] == "[" else None
                for call_number, (call_start, call_end, call) in enumerate(doc.items(listed)):
                    if isinstance(call, dict):
                        calls.append(((call_start, call_end), call,
                                      f"{path}.output.choices[{choice_number}].message.tool_calls[{call_number}]"))
        for call_region, call, call_where in calls:
            if _call_key(call) not in called:
                called.add(_call_key(call))
                _call_event(doc, call, call_region, call_where, attachments)
        if depth < 16 and "events" in event_members:
            _transcript_calls(doc, event_members["events"], f"{path}.events", attachments, called, depth + 1)


def read_events(path: str, text: str, notes: list[str] | None = None) -> list[LogEvent]:
    """Events of an Inspect JSON log, sample by sample, message by message.

    Parameters
    ----------
    path : str
        The log's POSIX path relative to the run root.
    text : str
        The log's JSON text; a log cut short is read up to the break.
    notes : list of str, optional
        Receives a sentence on what was not read (where the JSON broke).

    Returns
    -------
    list of LogEvent
        Indexed from 0 across the samples; ``location`` is the JSON path of each event.

    Raises
    ------
    ValueError
        If the text is not an Inspect eval log.
    """
    value, broke = load_json(text)
    if not _is_eval_log(value):
        raise ValueError(f"{path}: not an Inspect eval log (no eval spec)")
    events = EventList()
    doc = EvalDocument(path, text, events)
    start = len(text) - len(text.lstrip())
    top = json_members_partial(text, start)
    samples = doc.items(top.get("samples"))
    for number, (sample_start, sample_end, sample) in enumerate(samples):
        if isinstance(sample, dict):
            sample_events(doc, sample, (sample_start, sample_end), f"samples[{number}].")
    if notes is not None:
        if broke is not None:
            notes.append(f"JSON cut short or damaged at {broke.describe()}; read {len(samples)} sample(s) up to there")
        elif "samples" not in top:
            notes.append("no samples in the eval log (a header-only log): the agent's messages are not in it")
    return events
