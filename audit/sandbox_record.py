"""The agent command a sandbox ran, as recorded in the ``run.json`` that ``mleaudit run`` writes.

``mleaudit run`` starts the agent with one command (``--agent``, run as ``/bin/sh -c CMD``) and
records it in ``run.json`` under ``spec.command``, next to ``backend``, ``status`` and
``agent_started``. That command is the root of everything the sandbox ran, yet it is in no log:
an agent that prints a few lines and writes its submission leaves a ``run.log`` without a
single command. :func:`read_sandbox_command` turns the recorded command into one COMMAND event
of the :attr:`~mleaudit.audit.units.Actor.OPERATOR` (the person who launched the run), located at
``spec.command`` in ``run.json``, so that checks which trace what ran (submission provenance)
see it.

Only a sandbox record counts: a ``run.json`` whose ``backend`` and ``status`` are strings,
whose ``agent_started`` is ``true`` and whose ``spec.command`` is a list. Any other
``run.json`` (MLE-bench metadata, a run whose agent never started) adds nothing.

The record is untrusted: it is read through :func:`mleaudit.audit.run.read_run_file` (size cap, no
links) and :func:`mleaudit.grading.untrusted_json.loads` (bounded nesting); at most
:data:`MAX_COMMAND_ITEMS` items of ``spec.command`` are read, each up to
:data:`MAX_ITEM_CHARS` characters and :data:`MAX_COMMAND_CHARS` in all; items that are not
strings are ignored (a note says how many). A command cut by these caps is listed as an unread
part of ``run.json``, so the audit cannot be clean on a command it read in part.
"""

from __future__ import annotations

import json
import logging
import re
import shlex
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

from mleaudit.audit.model import Skipped, Span
from mleaudit.audit.run import RunLayout, Run, decode_text, read_run_file
from mleaudit.audit.units import Actor, CodeUnit, LogEvent, LogEventKind
from mleaudit.grading import untrusted_json

__all__ = [
    "MAX_COMMAND_CHARS",
    "MAX_COMMAND_ITEMS",
    "MAX_ITEM_CHARS",
    "READER",
    "RECORD_PATH",
    "SandboxCommand",
    "command_text",
    "is_sandbox_command",
    "is_sandbox_record",
    "read_sandbox_command",
]

logger = logging.getLogger(__name__)

#: The file the sandbox writes its record to.
RECORD_PATH = RunLayout.RUN_META[0]
#: The reader name the run's file readings give ``run.json`` when its command was read.
READER = "sandbox-record"
#: Where the command sits in the record (the event's ``location``).
LOCATION = "spec.command"
#: Items of ``spec.command`` read; later ones are dropped (and the command counts as cut).
MAX_COMMAND_ITEMS = 1000
#: Characters of one item read.
MAX_ITEM_CHARS = 64 * 1024
#: Characters of the whole command text read.
MAX_COMMAND_CHARS = 256 * 1024
#: Shells whose ``-c`` script is the command itself (``/bin/sh -c "python3 solve.py"``).
_SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "ash", "busybox"})
_SCRIPT_FLAG = re.compile(r"-[A-Za-z]*c[A-Za-z]*")
_COMMAND_KEY = re.compile(r'"command"\s*:\s*\[')
#: ``"command": [`` keys tried when locating the command in the file's text.
_MAX_KEY_TRIES = 4


@dataclass(frozen=True, slots=True, kw_only=True)
class SandboxCommand:
    """The command of a sandbox record.

    Attributes
    ----------
    event : LogEvent
        A COMMAND event of the operator, language ``bash``, at ``spec.command`` of ``run.json``.
    skipped : tuple of Skipped
        The command was cut by the caps (an unread part of ``run.json``).
    notes : tuple of Skipped
        Items that were not strings, ignored.
    """

    event: LogEvent
    skipped: tuple[Skipped, ...] = ()
    notes: tuple[Skipped, ...] = ()


def is_sandbox_record(data: Any) -> bool:
    """Whether a decoded ``run.json`` is a sandbox record of a run whose agent started.

    Parameters
    ----------
    data : object
        The decoded JSON value.

    Returns
    -------
    bool
        ``True`` for an object with string ``backend`` and ``status``, ``agent_started`` true
        and a ``spec`` object whose ``command`` is a list.

    Examples
    --------
    >>> is_sandbox_record({"backend": "bubblewrap", "status": "completed", "agent_started": True,
    ...                    "spec": {"command": ["/bin/sh", "-c", "python3 solve.py"]}})
    True
    >>> is_sandbox_record({"competition_id": "x", "spec": {"command": ["python3"]}})
    False
    """
    if not isinstance(data, dict):
        return False
    backend, status, spec = data.get("backend"), data.get("status"), data.get("spec")
    return (isinstance(backend, str) and bool(backend.strip()) and isinstance(status, str)
            and data.get("agent_started") is True and isinstance(spec, dict)
            and isinstance(spec.get("command"), list))


def command_text(command: list[Any]) -> tuple[str, bool, int]:
    """The shell text of a recorded command, within the caps.

    ``[shell, -c, SCRIPT, NAME, ARGS...]`` gives ``SCRIPT`` (followed by a ``set --`` line with
    the arguments, when there are any); any other list is joined with shell quoting.

    Parameters
    ----------
    command : list
        ``spec.command`` as decoded; only its first :data:`MAX_COMMAND_ITEMS` items are looked at.

    Returns
    -------
    (str, bool, int)
        The text, whether the caps cut it, and how many items were ignored as not strings.

    Examples
    --------
    >>> command_text(["/bin/sh", "-c", "python3 /home/agent/solve.py"])
    ('python3 /home/agent/solve.py', False, 0)
    >>> command_text(["python3", "my script.py", 3])
    ("python3 'my script.py'", False, 1)
    """
    cut = len(command) > MAX_COMMAND_ITEMS
    strings: list[str] = []
    ignored = 0
    total = 0
    for item in command[:MAX_COMMAND_ITEMS]:
        if not isinstance(item, str):
            ignored += 1
            continue
        if len(item) > MAX_ITEM_CHARS:
            item, cut = item[:MAX_ITEM_CHARS], True
        if total + len(item) > MAX_COMMAND_CHARS:
            cut = True
            break
        total += len(item)
        strings.append(item)
    if len(strings) >= 3 and PurePosixPath(strings[0]).name in _SHELLS and _SCRIPT_FLAG.fullmatch(strings[1]):
        text = strings[2]
        if len(strings) > 4:
            text += "\nset -- " + shlex.join(strings[4:])
    else:
        text = shlex.join(strings)
    if len(text) > MAX_COMMAND_CHARS:
        text, cut = text[:MAX_COMMAND_CHARS], True
    return text, cut, ignored


def is_sandbox_command(item: CodeUnit | LogEvent) -> bool:
    """Whether a unit or an event is the sandbox's recorded command (or code cut from it).

    Parameters
    ----------
    item : CodeUnit or LogEvent

    Returns
    -------
    bool
        ``True`` for the operator's units and events located in ``run.json``.
    """
    path = item.span.path if isinstance(item, LogEvent) else item.path
    return item.actor is Actor.OPERATOR and path == RECORD_PATH


def _command_span(text: str, command: list[Any]) -> Span:
    """Where ``"command": [...]`` lies in the record's text (the file's start when not found)."""
    decoder = json.JSONDecoder()
    for tries, match in enumerate(_COMMAND_KEY.finditer(text)):
        if tries >= _MAX_KEY_TRIES:
            break
        try:
            value, end = decoder.raw_decode(text, match.end() - 1)
        except (ValueError, RecursionError):
            continue
        if value == command:
            return Span.from_offsets(text, RECORD_PATH, match.start(), end)
    return Span.from_offsets(text, RECORD_PATH, 0, 0)


def read_sandbox_command(run: Run) -> SandboxCommand | None:
    """The agent command of the run's sandbox record, as an operator COMMAND event.

    Parameters
    ----------
    run : Run
        From :func:`mleaudit.audit.run.load_run`; only a run folder (not a single file) holding a
        ``run.json`` is looked at.

    Returns
    -------
    SandboxCommand or None
        ``None`` when there is no sandbox record (see :func:`is_sandbox_record`), when it cannot
        be read (:func:`mleaudit.audit.run.load_run` already lists an unreadable ``run.json``), or when
        the command is empty.
    """
    if run.layout == "file" or not any(a.path == RECORD_PATH for a in run.artifacts):
        return None
    try:
        text = decode_text(read_run_file(run.root, RECORD_PATH))[0]
        data = untrusted_json.loads(text)
    except (OSError, ValueError) as exc:
        logger.info("%s: sandbox record not read: %s", RECORD_PATH, exc)
        return None
    if not is_sandbox_record(data):
        return None
    command = data["spec"]["command"]
    body, cut, ignored = command_text(command)
    if not body.strip():
        return None
    event = LogEvent(index=0, kind=LogEventKind.COMMAND, text=body, span=_command_span(text, command),
                     language="bash", role="operator", location=LOCATION, actor=Actor.OPERATOR)
    skipped: tuple[Skipped, ...] = ()
    if cut:
        skipped = (Skipped(path=RECORD_PATH, reason=(
            f"the sandbox's agent command ({LOCATION}, {len(command)} items) is over the caps of "
            f"{MAX_COMMAND_ITEMS} items, {MAX_ITEM_CHARS} characters an item and {MAX_COMMAND_CHARS} in all; "
            "only its first part was read")),)
    notes: tuple[Skipped, ...] = ()
    if ignored:
        notes = (Skipped(path=RECORD_PATH, reason=f"{ignored} item(s) of {LOCATION} that are not strings ignored"),)
    return SandboxCommand(event=event, skipped=skipped, notes=notes)
