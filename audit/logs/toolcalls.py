"""Reading a tool call's arguments: the commands and code they hold (key table: :mod:`~mleaudit.audit.logs.keys`).

:func:`call_actions` is the one reader of a tool call's arguments for every JSON adapter: an
object read by the key table, a JSON object inside a string, a list, or a bare string
classified by the tool's name and its text. :func:`call_text` spells the TOOL_CALL event of a
call that is no generic shell or Python tool, :func:`call_expressions` finds calls a transcript
prints as text (``functions.submit_to_kaggle({"file": "submission.csv"})``), and
:func:`member_events` reads a JSON member by its name alone.
"""

from __future__ import annotations

import json
import re
from pathlib import PurePosixPath
from typing import Any, Callable

from mleaudit.audit.logs.common import guess_code_language
from mleaudit.audit.logs.jsonregions import loads_json
from mleaudit.audit.logs.keys import (
    EDITOR_TOOLS,
    KEYS,
    PYTHON_TOOLS,
    SHELL_TOOLS,
    Found,
    classify_text,
    command_text,
    tool_name,
)
from mleaudit.audit.units import Actor, LogEventKind
from mleaudit.grading.untrusted_json import collect_shadowed, object_from_pairs

__all__ = ["MAX_ARGUMENT_DEPTH", "call_actions", "call_expressions", "call_text", "member_events"]

_CODE_SUFFIXES = {".py": "python", ".pyw": "python", ".sh": "bash", ".bash": "bash"}
#: Keys of an editor call holding the text written.
_WRITTEN_KEYS = ("file_text", "new_str", "content", "text", "new_content", "insert_text", "contents")
#: Sub-commands of editor tools, given under ``command``.
_EDITOR_VERBS = frozenset({"view", "create", "str_replace", "insert", "undo_edit", "write", "append", "delete",
                           "overwrite", "replace"})
_PATH_KEYS = ("path", "file", "filename", "file_path", "filepath", "target")
#: Nesting read inside one call's arguments (JSON inside a string inside JSON counts one level).
MAX_ARGUMENT_DEPTH = 8


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
