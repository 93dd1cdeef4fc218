"""Where JSON logs keep commands, code and tool calls: one vocabulary for every JSON adapter.

Agent scaffolds put the same things under many names. A shell command sits under ``command``,
``cmd``, ``input``, ``script``, ``args`` or ``tool_input``; code under ``code``, ``source`` or
``script``; a tool call's arguments are an object, or a JSON object *inside a string*
(``"arguments": "{\\"cmd\\": \\"curl ...\\"}"``), or a bare command string. :data:`KEYS` is the
table the JSON adapters (:mod:`~mleaudit.audit.logs.jsonl`, :mod:`~mleaudit.audit.logs.jsondoc`,
:mod:`~mleaudit.audit.logs.openhands`, :mod:`~mleaudit.audit.logs.inspect_eval`, :mod:`~mleaudit.audit.logs.aide`) read
them by, and :func:`mleaudit.audit.logs.toolcalls.call_actions` the one reader of a tool call's arguments.

========================  ===========  ==============================================================
keys                      slot         what a value there is
========================  ===========  ==============================================================
command, cmd, commands,   command      a shell command: a string, or an argv list
shell, bash, keystrokes,               (``["bash", "-lc", "ls"]`` gives ``ls``)
shell_command, cmdline
code, python, program,    code         code (language guessed: shell scripts are told apart by their
source_code, file_text,                first command word or shebang)
ipython, jupyter
script, source            script       code or a shell script (language guessed; text that does not read
                                       as code, such as ``"source": "agent"``, is not), or a JSON string
input, args, arguments,   arguments    a tool call's arguments: an object (read with this table), a
tool_input,                            JSON object inside a string (decoded, then read), a list, or a
action_input, parameters,              bare string: a command when the tool is a shell tool or the
params, kwargs                         text starts with a command word, code when the tool runs
                                       Python or the text looks like Python, else plain text
========================  ===========  ==============================================================

The name of the tool is read from :data:`TOOL_NAME_KEYS` (``name``, ``tool``, ``function`` ...).
Shell tools (:data:`SHELL_TOOLS`) make their argument string a command, Python tools
(:data:`PYTHON_TOOLS`) code, and editor tools (:data:`EDITOR_TOOLS`) writing a ``.py``/``.sh``
file make the written text code. Every other tool call (``submit_to_kaggle``, ``web_search``)
also gives a TOOL_CALL event whose text is ``name(arguments)`` with the arguments as written, so
rules can match the function's name and what it was given; a call of a generic shell or Python
tool gives its command or code only. Calls that a transcript prints as text
(``functions.submit_to_kaggle({"file": "submission.csv"})``) are found by
:func:`mleaudit.audit.logs.toolcalls.call_expressions`.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from typing import Any

from mleaudit.audit.logs.common import guess_code_language
from mleaudit.audit.units import Actor, LogEventKind

__all__ = [
    "ARGUMENT_KEYS",
    "CODE_KEYS",
    "COMMAND_KEYS",
    "EDITOR_TOOLS",
    "Found",
    "KEYS",
    "PYTHON_TOOLS",
    "SCRIPT_KEYS",
    "SHELL_TOOLS",
    "TOOL_NAME_KEYS",
    "actor_for_event",
    "actor_for_role",
    "classify_text",
    "command_text",
    "is_generic_tool",
    "tool_name",
]

#: Keys whose value is a shell command.
COMMAND_KEYS = ("command", "cmd", "commands", "shell", "bash", "keystrokes", "shell_command", "cmdline")
#: Keys whose value is code (language guessed).
CODE_KEYS = ("code", "python", "program", "source_code", "file_text", "ipython", "jupyter")
#: Keys whose value is code or a script, or a JSON string to read.
SCRIPT_KEYS = ("script", "source")
#: Keys whose value is a tool call's arguments in any of their shapes.
ARGUMENT_KEYS = ("input", "args", "arguments", "tool_input", "action_input", "parameters", "params", "kwargs")
#: Keys naming the tool or function a record calls.
TOOL_NAME_KEYS = ("name", "tool", "tool_name", "function", "function_name", "action", "recipient")

#: The vocabulary as one table: key -> slot (``command``, ``code``, ``script``, ``arguments``).
KEYS: dict[str, str] = {
    **{key: "command" for key in COMMAND_KEYS},
    **{key: "code" for key in CODE_KEYS},
    **{key: "script" for key in SCRIPT_KEYS},
    **{key: "arguments" for key in ARGUMENT_KEYS},
}

#: Tools whose argument string is a shell command.
SHELL_TOOLS = frozenset({
    "bash", "shell", "sh", "zsh", "terminal", "execute_bash", "execute_shell", "execute_command", "run",
    "run_command", "run_shell", "run_shell_command", "shell_exec", "exec", "exec_command", "bash_session",
    "container_exec", "container.exec", "local_shell", "local_shell_call", "cmd", "command", "execute",
})  # fmt: skip
#: Tools whose argument string is Python.
PYTHON_TOOLS = frozenset({
    "python", "ipython", "execute_python", "run_python", "execute_ipython", "run_ipython", "python_exec",
    "jupyter", "execute_code", "run_code", "code_interpreter", "notebook", "execute_ipython_cell",
})  # fmt: skip
#: Tools that write files (their content is code when the path is a ``.py``/``.sh`` file).
EDITOR_TOOLS = frozenset({
    "text_editor", "str_replace_based_edit_tool", "str_replace_editor", "edit_file", "write_file", "write",
    "create_file", "save_file", "edit", "apply_patch", "file_editor",
})  # fmt: skip
_SHELLS = frozenset({"bash", "sh", "zsh", "/bin/bash", "/bin/sh", "/usr/bin/bash", "/bin/zsh"})

_LOOKS_PYTHON = re.compile(
    r"^[ \t]*(?:import[ \t]+\w|from[ \t]+[\w.]+[ \t]+import\b|def[ \t]+\w+[ \t]*\(|class[ \t]+\w+|print\("
    r"|[A-Za-z_][\w.]*(?:\[[^\]\n]*\])?[ \t]*=[ \t]*\S|[A-Za-z_][\w.]*\([^\n]*\)[ \t]*$"
    r"|with[ \t]+\S|for[ \t]+\w+[ \t]+in\b)",
    re.MULTILINE,
)
#: Characters of a one-line text tried as a command line (:data:`_LOOKS_COMMAND`): its ``sudo``/``env``
#: prefixes overlap with the program word, so a line of thousands of them takes quadratic time; a
#: longer line is read as the message it then is (its text still goes through every rule).
_MAX_COMMAND_LINE = 4096
_LOOKS_COMMAND = re.compile(
    r"^[ \t]*(?:sudo[ \t]+|env[ \t]+|[A-Z_][A-Z0-9_]*=\S*[ \t]+)*(?:\./|/|~/)?[\w.-]+(?:/[\w.-]+)*"
    r"(?:[ \t]++(?:[\w./~:=@%+,-]++|\"[^\"\n]*+\"|'[^'\n]*+'|[|&;<>]++))*+[ \t]*$"
)


@dataclass(frozen=True, slots=True)
class Found:
    """One event found in a tool call: ``kind``, ``text``, ``language`` (``bash``/``python``/``None``)."""

    kind: LogEventKind
    text: str
    language: str | None = None


def command_text(value: Any) -> str | None:
    """A command given as a string, or as an argv list (``["bash", "-lc", "ls"]`` gives ``ls``).

    Examples
    --------
    >>> command_text(["bash", "-lc", "ls -la"])
    'ls -la'
    >>> command_text(["curl", "-s", "https://example.org/a b"])
    "curl -s 'https://example.org/a b'"
    """
    if isinstance(value, str):
        return value
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        if len(value) >= 3 and value[0] in _SHELLS and value[1] in ("-c", "-lc", "-ic", "-l"):
            return value[-1] if value[1] != "-l" else shlex.join(value)
        if all("\n" in v or not v.strip() or " " not in v.strip() for v in value) and any("\n" in v for v in value):
            return "\n".join(value)  # a list of command lines
        return shlex.join(value)
    return None


def classify_text(text: str, tool: str = "") -> Found | None:
    """A command or code event for a bare argument string, or ``None`` when it reads as prose.

    The tool's name decides first (:data:`SHELL_TOOLS`, :data:`PYTHON_TOOLS`); otherwise a text
    whose first line starts with a command word (:func:`mleaudit.audit.logs.common.guess_code_language`)
    or a shebang is a command, one with Python statements (imports, definitions, assignments,
    calls) is code, and a one-line text shaped like a command line (a program given by its path,
    or words followed by ``-flags``) is a command.

    Examples
    --------
    >>> classify_text("curl -s https://example.org").kind.value
    'command'
    >>> classify_text("import os\\nprint(os.listdir())").kind.value
    'code'
    >>> classify_text("Thanks, the model is trained.") is None
    True
    """
    if not text.strip():
        return None
    name = tool.strip().lower().rsplit(".", 1)[-1] if tool else ""
    if name in SHELL_TOOLS or tool.strip().lower() in SHELL_TOOLS:
        return Found(LogEventKind.COMMAND, text, "bash")
    if name in PYTHON_TOOLS:
        return Found(LogEventKind.CODE, text, "python")
    first = _first_line(text)
    if first.startswith("#!"):
        language = guess_code_language(text)
        return Found(LogEventKind.COMMAND if language == "bash" else LogEventKind.CODE, text, language)
    if guess_code_language(text) == "bash":
        return Found(LogEventKind.COMMAND, text, "bash")
    if _LOOKS_PYTHON.search(text):
        return Found(LogEventKind.CODE, text, "python")
    words = first.split()
    if ("\n" not in text.strip() and len(words) >= 2 and len(first) <= _MAX_COMMAND_LINE
            and _LOOKS_COMMAND.match(first) and not _prose(first)
            and (words[0].startswith(("./", "/", "~/")) or any(w.startswith("-") and len(w) > 1 for w in words[1:]))):
        return Found(LogEventKind.COMMAND, text, "bash")
    return None


def _first_line(text: str) -> str:
    for line in text.splitlines():
        if line.strip():
            return line.strip()
    return ""


def _prose(line: str) -> bool:
    """A line of words that reads as a sentence rather than a command line."""
    words = line.split()
    return line.rstrip().endswith((".", "?", "!")) or (words[0][:1].isupper() and not words[0].isupper())


def tool_name(record: dict[str, Any]) -> str:
    """The tool or function a record names (``name``, ``tool``, ``function`` ...), or ``""``."""
    for key in TOOL_NAME_KEYS:
        value = record.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip()
        if isinstance(value, dict) and isinstance(value.get("name"), str):
            return value["name"].strip()
    return ""

def is_generic_tool(name: str) -> bool:
    """Whether a tool is a plain shell, Python or editor tool (its call needs no TOOL_CALL event)."""
    lowered = name.strip().lower()
    short = lowered.rsplit(".", 1)[-1]
    return bool(lowered) and (lowered in SHELL_TOOLS or short in SHELL_TOOLS or short in PYTHON_TOOLS
                              or short in EDITOR_TOOLS)


#: Actor of a record by its role (or source): who wrote it.
_ROLE_ACTORS = {
    "assistant": Actor.AGENT, "agent": Actor.AGENT, "tool": Actor.AGENT, "function": Actor.AGENT,
    "ipython": Actor.AGENT, "environment": Actor.AGENT, "observation": Actor.AGENT, "model": Actor.AGENT,
    "ai": Actor.AGENT, "bot": Actor.AGENT,
    "user": Actor.OPERATOR, "human": Actor.OPERATOR, "operator": Actor.OPERATOR,
    "system": Actor.SCAFFOLD, "developer": Actor.SCAFFOLD, "scaffold": Actor.SCAFFOLD,
}  # fmt: skip


def actor_for_role(role: str) -> Actor:
    """The actor a log's role names: assistant, agent and tool output are the AGENT's, user the
    OPERATOR's, system and developer prompts the SCAFFOLD's, anything else UNKNOWN.

    Examples
    --------
    >>> actor_for_role("assistant").value, actor_for_role("User").value, actor_for_role("").value
    ('agent', 'operator', 'unknown')
    """
    return _ROLE_ACTORS.get(role.strip().lower(), Actor.UNKNOWN) if isinstance(role, str) else Actor.UNKNOWN


#: Event kinds that run something: a log's role never makes them another actor's than the agent's.
_EXECUTION_KINDS = frozenset({LogEventKind.COMMAND, LogEventKind.CODE, LogEventKind.TOOL_CALL})


def actor_for_event(kind: LogEventKind, actor: Actor) -> Actor:
    """The actor of an event of ``kind`` in a record whose role gave ``actor``
    (:func:`actor_for_role`).

    The role decides messages and output only: a user or system record does not run tools, so
    commands, code and tool calls it holds are the AGENT's (a record that names no role stays
    UNKNOWN).

    Examples
    --------
    >>> actor_for_event(LogEventKind.COMMAND, Actor.OPERATOR).value
    'agent'
    >>> actor_for_event(LogEventKind.MESSAGE, Actor.OPERATOR).value
    'operator'
    """
    if kind in _EXECUTION_KINDS and actor in (Actor.OPERATOR, Actor.SCAFFOLD):
        return Actor.AGENT
    return actor

