"""Inspect eval logs (UK AISI ``inspect_ai``): the JSON log and the ``.eval`` archive.

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
- text and reasoning content: MESSAGE with the message's role; tool messages: OUTPUT (their
  ``error.message`` too).

Actors: assistant messages, their tool calls and the tools' output are the AGENT's; system and
user messages (the solver's prompts) are the SCAFFOLD's.

Spans point inside the quotes of the JSON string each text was decoded from (escapes make the
raw region longer than the text), falling back to the message's first line; ``location`` is the
JSON path, e.g. ``samples[0].messages[5].tool_calls[0]``.

An ``.eval`` file is a zip archive (``header.json``, ``samples/<id>_epoch_<n>.json`` with one
sample each, ``_journal/`` while running). :func:`read_eval_archive` reads every member under
``samples/`` whose name ends in ``.json`` (any case), whatever other characters the name holds
(spaces, colons, subfolders, very long names: member names are only names, nothing is ever
extracted to disk), with hard limits checked before and while reading (zip bombs: declared and
actual sizes, member count, total bytes), and gives events whose span path is
``<archive>!/<member>``, the location of the member inside the archive. Every member that is
not read (a damaged, encrypted or oversized member, one that is not JSON, or any member other
than the samples and Inspect's own ``header.json``, ``reductions.json``, ``summaries.json`` and
``_journal/``) is listed with the reason.

References: ``inspect_ai/log/_log.py`` (``EvalLog``, ``EvalSample``),
``inspect_ai/model/_chat_message.py``, ``inspect_ai/tool/_tool_call.py``,
``inspect_ai/log/_recorders/eval.py`` (archive layout), https://inspect.aisi.org.uk/eval-logs.html.
"""

from __future__ import annotations

import io
import json
import logging
import zipfile
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

from mleaudit.audit.logs.common import EventList, EventLimitReached, SpanMaker, guess_code_language
from mleaudit.audit.logs.jsonregions import (
    json_members_partial,
    json_nesting_problem,
    json_value_regions,
    load_json,
    loads_json,
    string_content,
    surrogate_note,
)
from mleaudit.audit.logs.keys import is_generic_tool
from mleaudit.audit.logs.toolcalls import call_actions, call_text
from mleaudit.audit.logs.shadowed import read_hidden_members
from mleaudit.audit.units import Actor, LogEvent, LogEventKind
from mleaudit.grading.untrusted_json import ShadowedList, collect_shadowed

__all__ = [
    "NAME",
    "MAX_ARCHIVE_MEMBERS",
    "MAX_MEMBER_BYTES",
    "MAX_ARCHIVE_BYTES",
    "EvalArchive",
    "detect",
    "read_events",
    "read_eval_archive",
]

logger = logging.getLogger(__name__)

NAME = "inspect"

#: Archive limits, checked on the zip's directory before anything is inflated and again on the
#: bytes actually inflated (declared sizes can lie): entries looked at, bytes of one member,
#: bytes of all members together. A sample of a long agent run is a few MB.
MAX_ARCHIVE_MEMBERS = 10_000
MAX_MEMBER_BYTES = 20 * 1024 * 1024
MAX_ARCHIVE_BYTES = 64 * 1024 * 1024

_SHELL_TOOLS = frozenset({"bash", "shell", "sh", "execute_bash", "run", "terminal", "bash_session", "container_exec"})
_PYTHON_TOOLS = frozenset({"python", "ipython", "execute_python", "run_ipython", "python_exec"})
_EDITOR_TOOLS = frozenset({"text_editor", "str_replace_based_edit_tool", "str_replace_editor", "edit_file",
                           "write_file"})
_CODE_SUFFIXES = {".py": "python", ".sh": "bash", ".bash": "bash"}
_ATTACHMENT = "attachment://"
#: Who wrote a message of each role: the assistant's calls and the tools' output are the agent's,
#: the system and user prompts the scaffold's (Inspect's solver writes them).
_ROLE_ACTORS = {"assistant": Actor.AGENT, "tool": Actor.AGENT, "system": Actor.SCAFFOLD, "user": Actor.SCAFFOLD}
#: Members Inspect writes besides the samples, which hold no agent messages: not read, not a gap.
_METADATA_MEMBERS = frozenset({"header.json", "reductions.json", "summaries.json"})
_METADATA_FOLDERS = ("_journal/",)
#: Unread members listed one by one; past this many, the rest are counted in one sentence.
MAX_LISTED_MEMBERS = 100


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


class _Document:
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


def _content_events(doc: _Document, content: Any, region: tuple[int, int] | None, kind: LogEventKind,
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
        for key in ("text", "reasoning"):
            if isinstance(part.get(key), str) and part.get("type") in (None, "text", key):
                doc.emit(kind, part[key], part_members.get(key), start, role=role,
                         location=f"{where}.content[{number}]", attachments=attachments)


def _call_event(doc: _Document, call: dict[str, Any], region: tuple[int, int], where: str, attachments) -> None:
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


def _sample_events(doc: _Document, sample: dict[str, Any], region: tuple[int, int], prefix: str) -> None:
    """Events of one sample's ``messages`` (``prefix`` is ``samples[i].`` or empty)."""
    members = doc.members(region)
    attachment_values = sample.get("attachments") if isinstance(sample.get("attachments"), dict) else {}
    attachments = (attachment_values, doc.members(members.get("attachments")))
    for number, (start, end, message) in enumerate(doc.items(members.get("messages"))):
        if not isinstance(message, dict):
            continue
        where = f"{prefix}messages[{number}]"
        role = message.get("role") if isinstance(message.get("role"), str) else ""
        message_members = doc.members((start, end))
        kind = LogEventKind.OUTPUT if role == "tool" else LogEventKind.MESSAGE
        _content_events(doc, message.get("content"), message_members.get("content"), kind, role, where, start,
                        attachments)
        if role == "tool" and isinstance(message.get("error"), dict):
            error_members = doc.members(message_members.get("error"))
            doc.emit(LogEventKind.OUTPUT, message["error"].get("message"), error_members.get("message"), start,
                     role=role, location=f"{where}.error", attachments=attachments)
        calls = message.get("tool_calls")
        if role == "assistant" and isinstance(calls, list):
            for call_number, (call_start, call_end, call) in enumerate(doc.items(message_members.get("tool_calls"))):
                if isinstance(call, dict):
                    _call_event(doc, call, (call_start, call_end), f"{where}.tool_calls[{call_number}]", attachments)


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
    doc = _Document(path, text, events)
    start = len(text) - len(text.lstrip())
    top = json_members_partial(text, start)
    samples = doc.items(top.get("samples"))
    for number, (sample_start, sample_end, sample) in enumerate(samples):
        if isinstance(sample, dict):
            _sample_events(doc, sample, (sample_start, sample_end), f"samples[{number}].")
    if notes is not None:
        if broke is not None:
            notes.append(f"JSON cut short or damaged at {broke.describe()}; read {len(samples)} sample(s) up to there")
        elif "samples" not in top:
            notes.append("no samples in the eval log (a header-only log): the agent's messages are not in it")
    return events


@dataclass(frozen=True, slots=True, kw_only=True)
class EvalArchive:
    """What :func:`read_eval_archive` read from an ``.eval`` file.

    Attributes
    ----------
    documents : tuple of (str, str)
        ``(virtual path, text)`` of each sample member read; the virtual path is
        ``<archive path>!/<member name>`` and is the ``span.path`` of its events.
    events : tuple of LogEvent
        All samples' events, indexed from 0 across the archive.
    problems : tuple of str
        What was not read of the archive as a whole and why (not a zip, the member-count
        limit, members past :data:`MAX_LISTED_MEMBERS` counted together), one sentence each.
    unread : tuple of (str, str)
        ``(member name, reason)`` of each member not read, or read only in part (a sample cut
        short, the event limit), in archive order.
    notes : tuple of str
        Members read with a caveat (not valid UTF-8, lone surrogate escapes), one sentence each.
    """

    documents: tuple[tuple[str, str], ...]
    events: tuple[LogEvent, ...]
    problems: tuple[str, ...] = ()
    unread: tuple[tuple[str, str], ...] = ()
    notes: tuple[str, ...] = ()


def _inflate(archive: zipfile.ZipFile, info: zipfile.ZipInfo, limit: int) -> bytes:
    """A member's bytes, refusing more than ``limit`` whatever its directory entry says."""
    with archive.open(info) as handle:
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise ValueError(f"inflates past {limit} bytes")
    return data


def _is_sample(name: str) -> bool:
    return name.startswith("samples/") and name.lower().endswith(".json") and len(name) > len("samples/.json")


def _is_metadata(name: str) -> bool:
    return name in _METADATA_MEMBERS or name.startswith(_METADATA_FOLDERS)


def _decode_member(raw: bytes) -> tuple[str, str | None]:
    """A member's text (UTF-8, BOM dropped, invalid bytes replaced) and a note when not clean."""
    if raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]
    try:
        return raw.decode("utf-8"), None
    except UnicodeDecodeError as exc:
        first = exc.start
    note = f"not valid UTF-8 (invalid bytes replaced with U+FFFD, the first at byte {first})"
    return raw.decode("utf-8", errors="replace"), note


class _Unread:
    """Collects unread members: the first :data:`MAX_LISTED_MEMBERS` one by one, then a count."""

    def __init__(self) -> None:
        self.listed: list[tuple[str, str]] = []
        self.more = 0
        self.first_more = ""

    def add(self, member: str, reason: str) -> None:
        if len(self.listed) < MAX_LISTED_MEMBERS:
            self.listed.append((member, reason))
            return
        if not self.more:
            self.first_more = member
        self.more += 1

    def summary(self) -> str | None:
        if not self.more:
            return None
        return (f"{self.more} more member(s) not read, from {self.first_more!r} on (only the first "
                f"{MAX_LISTED_MEMBERS} unread members are listed one by one)")


def read_eval_archive(path: str, data: bytes) -> EvalArchive:
    """Read the samples of an Inspect ``.eval`` archive, within the archive limits.

    Parameters
    ----------
    path : str
        The archive's POSIX path relative to the run root.
    data : bytes
        The archive's bytes (at most the run's file-size cap).

    Returns
    -------
    EvalArchive
        Events of every sample member (``samples/**.json``, any case) read, in archive order.
        Members past :data:`MAX_ARCHIVE_MEMBERS`, larger than :data:`MAX_MEMBER_BYTES`
        (declared or inflated), past :data:`MAX_ARCHIVE_BYTES` in total, damaged (bad CRC,
        bad header, cut short), encrypted, compressed with an unsupported method, not JSON,
        nested deeper than :data:`~mleaudit.audit.logs.jsonregions.MAX_JSON_DEPTH`, or not samples at all
        are listed in ``unread`` (member by member) or ``problems`` (the archive as a whole);
        nothing raises.
    """
    problems: list[str] = []
    unread = _Unread()
    notes: list[str] = []
    events = EventList()
    documents: list[tuple[str, str]] = []
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except Exception as exc:  # noqa: BLE001 - a damaged archive is reported, whatever zipfile raises
        return EvalArchive(documents=(), events=(), problems=(f"not a readable zip archive: {_describe(exc)}",))
    with archive:
        infos = archive.infolist()
        if len(infos) > MAX_ARCHIVE_MEMBERS:
            problems.append(f"{len(infos)} archive entries; only the first {MAX_ARCHIVE_MEMBERS} were looked at, "
                            f"the other {len(infos) - MAX_ARCHIVE_MEMBERS} were not read")
            infos = infos[:MAX_ARCHIVE_MEMBERS]
        names = {info.filename for info in infos}
        if not names & {"header.json", "_journal/start.json"} and not any(n.startswith("samples/") for n in names):
            return EvalArchive(documents=(), events=(),
                               problems=("not an Inspect eval archive (no header.json or samples/)", *problems))
        samples = []
        for info in infos:
            name = info.filename
            if info.is_dir() or _is_metadata(name):
                continue
            if _is_sample(name):
                samples.append(info)
            else:
                unread.add(name, "not an Inspect sample member (samples/*.json); not read")
        if not samples:
            problems.append("no samples/*.json in the archive: the agent's messages are not in it")
        total = 0
        used: dict[str, int] = {}
        for number, info in enumerate(samples):
            member = info.filename
            if info.flag_bits & 0x1:
                unread.add(member, "encrypted member; not read")
                continue
            if info.file_size > MAX_MEMBER_BYTES:
                unread.add(member, f"{info.file_size} bytes inflated is over the {MAX_MEMBER_BYTES}-byte member limit; "
                                   "not read")
                continue
            if total + info.file_size > MAX_ARCHIVE_BYTES:
                for later in samples[number:]:
                    unread.add(later.filename, f"not read: over the {MAX_ARCHIVE_BYTES}-byte archive limit")
                break
            try:
                raw = _inflate(archive, info, min(MAX_MEMBER_BYTES, MAX_ARCHIVE_BYTES - total))
            except Exception as exc:  # noqa: BLE001 - bad CRC, bad header, zlib errors, encryption ...
                unread.add(member, f"not read ({_describe(exc)})")
                continue
            total += len(raw)
            text, decoding = _decode_member(raw)
            if decoding is not None:
                notes.append(f"{member}: {decoding}")
            nesting = json_nesting_problem(text)
            if nesting is not None:
                unread.add(member, f"{nesting}; not read")
                continue
            with collect_shadowed() as hidden:
                sample, broke = load_json(text)
            if not isinstance(sample, dict):
                why = broke.describe() if broke else "wrong type"
                unread.add(member, f"not a JSON sample object ({why}); not read")
                continue
            seen = used.get(member, 0)
            used[member] = seen + 1
            virtual = f"{path}!/{member}" if not seen else f"{path}!/{member}#{seen + 1}"
            documents.append((virtual, text))
            remark = surrogate_note(text)
            if remark is not None:
                notes.append(f"{member}: {remark}")
            doc = _Document(virtual, text, events)
            start = len(text) - len(text.lstrip())
            try:
                with collect_shadowed() as hidden_inside:  # JSON held in strings (tool-call arguments)
                    _sample_events(doc, sample, (start, len(text)), "")
                hidden = ShadowedList.joined(hidden, hidden_inside)
            except EventLimitReached as exc:
                unread.add(member, f"event limit of {exc.limit} reached at line {exc.event.span.start_line}; the rest "
                                   "of the member was not read")
                for later in samples[number + 1:]:
                    unread.add(later.filename, f"not read: the event limit of {exc.limit} was reached before it")
                break
            if broke is not None:
                unread.add(member, f"JSON cut short or damaged at {broke.describe()}; read up to there")
            if hidden:
                hidden_read, hidden_said = read_hidden_members(virtual, text, hidden, len(events))
                try:
                    for event in hidden_read:
                        events.append(event)
                except EventLimitReached as exc:
                    hidden_said.append(f"event limit of {exc.limit} reached in its hidden values")
                for sentence in hidden_said:
                    unread.add(member, sentence)
    summary = unread.summary()
    if summary is not None:
        problems.append(summary)
    return EvalArchive(documents=tuple(documents), events=tuple(events), problems=tuple(problems),
                       unread=tuple(unread.listed), notes=tuple(notes))


def _describe(exc: Exception) -> str:
    """``"BadZipFile: Bad CRC-32 for file 'x'"``: the exception's class and message."""
    message = str(exc)
    return f"{type(exc).__name__}: {message}" if message else type(exc).__name__
