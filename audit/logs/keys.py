"""Where JSON logs keep commands, code and tool calls: one vocabulary for every JSON adapter.

Agent scaffolds put the same things under many names. A shell command sits under ``command``,
``cmd``, ``input``, ``script``, ``args`` or ``tool_input``; code under ``code``, ``source`` or
``script``; a tool call's arguments are an object, or a JSON object *inside a string*
(``"arguments": "{\\"cmd\\": \\"curl ...\\"}"``), or a bare command string. :data:`KEYS` is the
table the JSON adapters (:mod:`~mleaudit.audit.logs.jsonl`, :mod:`~mleaudit.audit.logs.jsondoc`,
:mod:`~mleaudit.audit.logs.openhands`, :mod:`~mleaudit.audit.logs.inspect_eval`, :mod:`~mleaudit.audit.logs.aide`) read
them by, and :func:`call_actions` the one reader of a tool call's arguments.

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
:func:`call_expressions`.
"""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any, Callable

from mleaudit.audit.logs.common import guess_code_language
from mleaudit.audit.logs.jsonregions import loads_json
from mleaudit.audit.units import Actor, LogEventKind
from mleaudit.grading.untrusted_json import collect_shadowed, object_from_pairs

__all__ = [
    "member_events",
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
    "call_actions",
    "call_expressions",
    "call_text",
    "classify_text",
    "command_text",
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
_CODE_SUFFIXES = {".py": "python", ".pyw": "python", ".sh": "bash", ".bash": "bash"}
#: Keys of an editor call holding the text written.
_WRITTEN_KEYS = ("file_text", "new_str", "content", "text", "new_content", "insert_text", "contents")
#: Sub-commands of editor tools, given under ``command``.
_EDITOR_VERBS = frozenset({"view", "create", "str_replace", "insert", "undo_edit", "write", "append", "delete",
                           "overwrite", "replace"})
_PATH_KEYS = ("path", "file", "filename", "file_path", "filepath", "target")
_SHELLS = frozenset({"bash", "sh", "zsh", "/bin/bash", "/bin/sh", "/usr/bin/bash", "/bin/zsh"})
#: Nesting read inside one call's arguments (JSON inside a string inside JSON counts one level).
MAX_ARGUMENT_DEPTH = 8

_LOOKS_PYTHON = re.compile(
    r"^[ \t]*(?:import[ \t]+\w|from[ \t]+[\w.]+[ \t]+import\b|def[ \t]+\w+[ \t]*\(|class[ \t]+\w+|print\("
    r"|[A-Za-z_][\w.]*(?:\[[^\]\n]*\])?[ \t]*=[ \t]*\S|[A-Za-z_][\w.]*\([^\n]*\)[ \t]*$"
    r"|with[ \t]+\S|for[ \t]+\w+[ \t]+in\b)",
    re.MULTILINE,
)
_LOOKS_COMMAND = re.compile(
    r"^[ \t]*(?:sudo[ \t]+|env[ \t]+|[A-Z_][A-Z0-9_]*=\S*[ \t]+)*(?:\./|/|~/)?[\w.-]+(?:/[\w.-]+)*"
    r"(?:[ \t]+(?:-{1,2}[\w-]+|[\w./~:=@%+,-]+|\"[^\"\n]*\"|'[^'\n]*'|[|&;<>]+))*[ \t]*$"
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
    if ("\n" not in text.strip() and len(words) >= 2 and _LOOKS_COMMAND.match(first) and not _prose(first)
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


def call_text(name: str, arguments: Any, raw: str | None = None) -> str:
    """The text of a TOOL_CALL event: ``name(arguments)``, the arguments as written when known.

    Examples
    --------
    >>> call_text("submit_to_kaggle", {"file": "submission.csv"})
    'submit_to_kaggle({"file": "submission.csv"})'
    """
    if raw is None:
        raw = arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)
    return f"{name}({raw})" if name else raw


_CALL_EXPRESSION = re.compile(
    # A name starts at a name boundary, and holds an underscore (looked for ahead once, so a
    # long run of word characters is not split every way: linear, not quadratic).
    r"(?:^|(?<=[\s>:;,(\[]))(?<![\w.])((?:functions|tools|multi_tool_use)\.[A-Za-z_][\w.]*|(?=[A-Za-z_]\w*_)[A-Za-z_]\w*)"
    r"[ \t]*\([ \t]*(?=\{)"
)
_CLOSING = re.compile(r"[ \t]*\)")
_JSON_DECODER = json.JSONDecoder(object_pairs_hook=object_from_pairs)


def call_expressions(text: str, *, limit: int = 10_000) -> list[tuple[int, int, str, Any]]:
    """Tool calls written as calls in text: ``functions.submit_to_kaggle({"file": "s.csv"})``.

    A name with a ``functions.``/``tools.`` prefix, or a snake_case name, followed by a JSON
    object and the closing parenthesis, as chat transcripts print the model's calls.

    Parameters
    ----------
    text : str
        Any text (a message, a printed log).
    limit : int, optional
        Calls returned at most.

    Returns
    -------
    list of (int, int, str, Any)
        ``(start, end, name, arguments)`` of each call, ``[start, end)`` its place in ``text``.

    Examples
    --------
    >>> [(name, args) for _, _, name, args in call_expressions('ok functions.submit_to_kaggle({"file": "s.csv"})')]
    [('functions.submit_to_kaggle', {'file': 's.csv'})]
    >>> call_expressions("print({'a': 1})")
    []
    """
    if "({" not in text and "( {" not in text:
        return []
    found = []
    for match in _CALL_EXPRESSION.finditer(text):
        with collect_shadowed() as hidden:
            try:
                arguments, end = _JSON_DECODER.raw_decode(text, match.end())
            except (ValueError, RecursionError):
                continue
        closing = _CLOSING.match(text, end)
        if closing is None or not isinstance(arguments, dict):
            continue
        found.append((match.start(1), closing.end(), match.group(1), arguments))
        # An argument written twice ({"code": A, "code": B}): the hidden value is a call too.
        found.extend((match.start(1), closing.end(), match.group(1), {member.key: member.value}) for member in hidden)
        if len(found) >= limit:
            break
    return found[:limit]


def _decoded(value: str) -> Any:
    """``value`` decoded when it holds a JSON object or array, else ``None``."""
    stripped = value.strip()
    if stripped[:1] not in ("{", "[") or stripped[-1:] not in ("}", "]"):
        return None
    try:
        return loads_json(stripped)
    except (ValueError, RecursionError):
        return None


def _editor_code(arguments: dict[str, Any]) -> Found | None:
    path = next((arguments[k] for k in _PATH_KEYS if isinstance(arguments.get(k), str)), "")
    language = _CODE_SUFFIXES.get(PurePosixPath(path).suffix.lower()) if path else None
    if language is None:
        return None
    key = next((k for k in _WRITTEN_KEYS if isinstance(arguments.get(k), str) and arguments[k].strip()), None)
    return Found(LogEventKind.CODE, arguments[key], language) if key is not None else None


def call_actions(arguments: Any, tool: str = "", *, depth: int = 0) -> list[Found]:
    """The commands and code a tool call's arguments hold, in key order.

    Parameters
    ----------
    arguments : Any
        The arguments as decoded from the log: an object, a string (a JSON object inside it is
        decoded and read), a list (each element read), anything else (nothing found).
    tool : str, optional
        The tool's name, when the record gives one.
    depth : int, optional
        Nesting already read (bounded by :data:`MAX_ARGUMENT_DEPTH`).

    Returns
    -------
    list of Found
        COMMAND and CODE events; empty when the arguments hold neither (the caller then gives
        the call as a TOOL_CALL).

    Examples
    --------
    >>> [f.text for f in call_actions('{"cmd": "curl -s https://example.org"}')]
    ['curl -s https://example.org']
    >>> [(f.kind.value, f.text) for f in call_actions({"tool_input": {"script": "ls /home/data"}})]
    [('command', 'ls /home/data')]
    """
    if depth > MAX_ARGUMENT_DEPTH:
        return []
    name = tool.strip().lower()
    if isinstance(arguments, str):
        decoded = _decoded(arguments)
        if decoded is not None:
            return call_actions(decoded, tool, depth=depth + 1)
        found = classify_text(arguments, tool)
        return [found] if found is not None else []
    if isinstance(arguments, list):
        command = command_text(arguments) if name in SHELL_TOOLS else None
        if command is not None:
            return [Found(LogEventKind.COMMAND, command, "bash")]
        found: list[Found] = []
        for item in arguments[:1000]:
            found.extend(call_actions(item, tool, depth=depth + 1))
        return found
    if not isinstance(arguments, dict):
        return []
    found = []
    short = name.rsplit(".", 1)[-1]
    editing = short in EDITOR_TOOLS or name in EDITOR_TOOLS or any(k in arguments for k in ("file_text", "new_str",
                                                                                             "old_str"))
    if editing:
        edited = _editor_code(arguments)
        if edited is not None:
            found.append(edited)
    inner_tool = tool_name(arguments) or tool
    for key, value in arguments.items():
        slot = KEYS.get(key.lower()) if isinstance(key, str) else None
        if slot is None:
            continue
        if slot == "command":
            if editing and isinstance(value, str) and value.strip().lower() in _EDITOR_VERBS:
                continue  # the editor's sub-command (``create``, ``str_replace``), not a shell command
            command = command_text(value)
            if command is not None and command.strip():
                found.append(Found(LogEventKind.COMMAND, command, "bash"))
            elif isinstance(value, (dict, list)):
                found.extend(call_actions(value, "bash", depth=depth + 1))
        elif slot == "code" and key.lower() != "file_text":
            if isinstance(value, str) and value.strip():
                language = "python" if short in PYTHON_TOOLS or key.lower() in ("python", "ipython") else (
                    guess_code_language(value))
                kind = LogEventKind.COMMAND if language == "bash" else LogEventKind.CODE
                found.append(Found(kind, value, language))
            elif isinstance(value, (dict, list)):
                found.extend(call_actions(value, inner_tool, depth=depth + 1))
        elif slot == "script":
            if isinstance(value, str) and value.strip():
                decoded = _decoded(value)
                if decoded is not None:
                    found.extend(call_actions(decoded, inner_tool, depth=depth + 1))
                    continue
                # ``source`` also names who wrote a record ("agent"): only text that reads as code counts.
                script = classify_text(value, inner_tool if inner_tool.lower() in SHELL_TOOLS | PYTHON_TOOLS else "")
                if script is not None:
                    found.append(script)
            elif isinstance(value, (dict, list)):
                found.extend(call_actions(value, inner_tool, depth=depth + 1))
        elif slot == "arguments":
            found.extend(call_actions(value, inner_tool, depth=depth + 1))
    if not found and short in (SHELL_TOOLS | PYTHON_TOOLS):
        # A shell or Python tool whose argument key is not in the table: its one string value.
        strings = [v for v in arguments.values() if isinstance(v, str) and v.strip()]
        if len(strings) == 1:
            found.append(Found(LogEventKind.COMMAND, strings[0], "bash") if short in SHELL_TOOLS
                         else Found(LogEventKind.CODE, strings[0], "python"))
    return _unique(found)


def _unique(found: list[Found]) -> list[Found]:
    seen: set[tuple[LogEventKind, str]] = set()
    out = []
    for item in found:
        key = (item.kind, item.text)
        if key not in seen:
            seen.add(key)
            out.append(item)
    return out


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


#: Member names (lowercased prefixes) that hold a run's printed output besides the terminal
#: (an exception's name, info, stack).
_OUTPUT_MEMBERS = ("exc_", "stdout", "stderr", "output", "traceback", "error")


def _strings(value: Any, out: list[str], depth: int = 0) -> None:
    if depth > 16 or len(out) > 10_000:
        return
    if isinstance(value, str):
        if value.strip():
            out.append(value)
    elif isinstance(value, dict):
        for item in value.values():
            _strings(item, out, depth + 1)
    elif isinstance(value, list):
        for item in value:
            _strings(item, out, depth + 1)


def member_events(key: str, value: Any, add: Callable[[str, LogEventKind, str, str | None, str, Actor], None]) -> None:
    """Events of a JSON member read by its name (odd journals keep code in members of their own).

    A member named like code in the shared vocabulary (:mod:`mleaudit.audit.logs.keys`: ``script``,
    ``source``, ``python`` ..., or any name ending in ``code``) is the agent's code; an
    exception's members and other output the agent's output; any other text an UNKNOWN message,
    so that nothing with text is left unread.

    Parameters
    ----------
    key : str
        The member's name.
    value : Any
        Its decoded value.
    add : callable
        Called once per event as ``add(key, kind, text, language, role, actor)``.
    """
    lowered = key.lower()
    if KEYS.get(lowered) in ("code", "script", "command") or lowered.endswith("code"):
        if isinstance(value, str):
            language = "bash" if KEYS.get(lowered) == "command" else guess_code_language(value)
            kind = LogEventKind.COMMAND if language == "bash" and KEYS.get(lowered) == "command" else LogEventKind.CODE
            add(key, kind, value, language, "assistant", Actor.AGENT)
            return
        if isinstance(value, list) and all(isinstance(v, str) for v in value):
            body = "".join(value)
            add(key, LogEventKind.CODE, body, guess_code_language(body), "assistant", Actor.AGENT)
            return
        hits = call_actions(value, "python")
        for hit in hits:
            add(key, hit.kind, hit.text, hit.language, "assistant", Actor.AGENT)
        if hits:
            return
    strings: list[str] = []
    _strings(value, strings)
    if not strings:
        return
    lines = isinstance(value, list) and all(isinstance(v, str) for v in value)
    body = "".join(strings) if lines else "\n".join(strings)
    if lowered.startswith(_OUTPUT_MEMBERS) or lowered.endswith(("_out", "output")):
        add(key, LogEventKind.OUTPUT, body, None, "tool", Actor.AGENT)
    else:
        add(key, LogEventKind.MESSAGE, body, None, "", Actor.UNKNOWN)
