"""Step records of agent trajectories saved as one JSON document (SWE-agent ``.traj`` and kin).

A trajectory is a list of step records, wherever it sits in the document (SWE-agent's
``{"trajectory": [{"action", "observation", "thought", "response", "state"}], "history": [...]}``,
a bare list of steps, ``{"run": {"steps": [...]}}``). What a step ran sits under ``action`` when
no other key names the tool's arguments (``action_input``, ``tool_input`` ... make ``action`` the
tool's name instead), or under the vocabulary's command and code keys
(:mod:`mleaudit.audit.logs.keys`: ``command``, ``cmd``, ``code``, ``tool_input`` ...), which the JSON
document reader (:mod:`mleaudit.audit.logs.jsondoc`) reads in any record.

:func:`is_step_list` tells a list of step records; :func:`action_events` reads one step's
``action``: a shell command (heredocs in it are expanded into code units downstream, as for any
command), or one of SWE-agent's own commands, whose written text is code too
(``edit 12:20`` ... ``end_of_edit`` replaces lines of the open file; ``create``, ``open``,
``goto``, ``scroll_down``, ``search_dir``, ``find_file``, ``submit`` are commands;
``str_replace_editor create PATH --file_text TEXT`` writes a file).
"""

from __future__ import annotations

import re
import shlex
from pathlib import PurePosixPath
from typing import Any

from mleaudit.audit.logs.common import guess_code_language
from mleaudit.audit.logs.keys import ARGUMENT_KEYS, COMMAND_KEYS, Found, command_text, tool_name
from mleaudit.audit.logs.toolcalls import call_actions
from mleaudit.audit.units import LogEventKind

__all__ = ["STEP_KEYS", "action_events", "is_step_list", "is_step_record"]

#: Keys whose value in a step record is what the step ran.
STEP_KEYS = ("action", *COMMAND_KEYS, "code", "tool_input", "tool_calls")
#: Keys that make a record a step of a trajectory along with what it ran.
_STEP_CONTEXT = frozenset({"observation", "thought", "response", "output", "result", "state", "stdout",
                           "stderr", "reasoning", "plan", "step", "step_id", "tool", "exit_code", "returncode"})
#: Records of a list read to decide whether it holds steps.
_SAMPLE = 64
_EDIT_BLOCK = re.compile(r"^[ \t]*edit[ \t]+(\d+)[ \t]*:[ \t]*(\d+)[ \t]*\n(.*?)(?:\n[ \t]*end_of_edit[ \t]*)?$",
                         re.DOTALL)
_EDITOR_COMMAND = re.compile(r"^[ \t]*(?:str_replace_editor|edit_file|file_editor)[ \t]+(\w+)[ \t]+(\S+)", re.DOTALL)
_WRITE_FLAGS = ("--file_text", "--new_str")
_CODE_SUFFIXES = {".py": "python", ".sh": "bash", ".bash": "bash"}


def is_step_record(record: Any) -> bool:
    """Whether ``record`` is an object holding what a step ran (a key of :data:`STEP_KEYS`).

    Examples
    --------
    >>> is_step_record({"action": "ls", "observation": "a.csv"})
    True
    >>> is_step_record({"name": "x"})
    False
    """
    if not isinstance(record, dict):
        return False
    return any(isinstance(record.get(key), (str, dict, list)) and record.get(key) for key in STEP_KEYS)


def is_step_list(items: Any) -> bool:
    """Whether a JSON list is a trajectory: at least half of its first records are steps.

    Examples
    --------
    >>> is_step_list([{"action": "ls -la", "observation": "x"}, {"action": "submit"}])
    True
    >>> is_step_list([{"role": "user", "content": "hi"}, 3])
    False
    """
    if not isinstance(items, list) or not items:
        return False
    sample = items[:_SAMPLE]
    steps = sum(1 for item in sample if is_step_record(item))
    return steps * 2 >= len(sample) and steps > 0


def _action_is_tool_name(record: dict[str, Any]) -> bool:
    """``action`` names a tool (ReAct ``action``/``action_input``) rather than being a command."""
    return any(key in record for key in ARGUMENT_KEYS)


def action_events(record: dict[str, Any]) -> list[Found] | None:
    """The commands and code of a step's ``action``, or ``None`` when ``action`` is a tool's name.

    Parameters
    ----------
    record : dict
        One step record.

    Returns
    -------
    list of Found or None
        ``None`` when the record has no ``action`` string or list to read that way (the caller
        reads the value as usual); else its COMMAND events and the CODE an edit writes.

    Examples
    --------
    >>> [(f.kind.value, f.text) for f in action_events({"action": "cat /etc/hosts", "observation": ""})]
    [('command', 'cat /etc/hosts')]
    >>> [(f.kind.value, f.text) for f in action_events({"action": "edit 3:4\\nimport os\\nend_of_edit"})]
    [('command', 'edit 3:4\\nimport os\\nend_of_edit'), ('code', 'import os')]
    >>> action_events({"action": "python_repl", "action_input": "print(1)"}) is None
    True
    """
    value = record.get("action")
    if isinstance(value, dict):
        return call_actions(value, tool_name(value) or "bash") or None
    if _action_is_tool_name(record):
        return None
    command = command_text(value)
    if command is None or not command.strip():
        return None
    found = [Found(LogEventKind.COMMAND, command, "bash")]
    edit = _EDIT_BLOCK.match(command)
    if edit is not None and edit.group(3).strip():
        body = edit.group(3)
        found.append(Found(LogEventKind.CODE, body, _open_file_language(record) or guess_code_language(body)))
        return found
    written = _editor_write(command)
    if written is not None:
        found.append(written)
    return found


def _open_file_language(record: dict[str, Any]) -> str | None:
    """The language of the file SWE-agent has open (its ``state`` names ``open_file``)."""
    state = record.get("state")
    text = state if isinstance(state, str) else (str(state.get("open_file", "")) if isinstance(state, dict) else "")
    match = re.search(r"open_file\"?\s*:\s*\"([^\"]+)\"", text) if isinstance(state, str) else None
    path = match.group(1) if match else text
    return _CODE_SUFFIXES.get(PurePosixPath(path).suffix.lower()) if path else None


def _editor_write(command: str) -> Found | None:
    """The code a ``str_replace_editor create PATH --file_text TEXT`` command writes to a code file."""
    match = _EDITOR_COMMAND.match(command)
    if match is None:
        return None
    language = _CODE_SUFFIXES.get(PurePosixPath(match.group(2)).suffix.lower())
    if language is None:
        return None
    try:
        words = shlex.split(command[:1_000_000])
    except ValueError:
        return None
    for flag in _WRITE_FLAGS:
        if flag in words:
            at = words.index(flag)
            if at + 1 < len(words) and words[at + 1].strip():
                return Found(LogEventKind.CODE, words[at + 1], language)
    return None
