"""A tool call's argument text in a framework transcript: decoded, and the commands and code it holds."""

from __future__ import annotations

import re
from typing import Any

from mleaudit.audit.logs.common import guess_code_language
from mleaudit.audit.logs.frameworks.literal import STRING_PREFIX, read_literal
from mleaudit.audit.logs.jsonregions import loads_json
from mleaudit.audit.logs.keys import Found, classify_text, is_generic_tool
from mleaudit.audit.logs.toolcalls import call_actions
from mleaudit.audit.units import LogEventKind

__all__ = ["decode_arguments", "generic_tool", "tool_actions", "unfence"]

#: Tool names (lower case, letters and digits) whose input is Python, and shell commands.
_PYTHON_TOOL_KEYS = frozenset({
    "python", "python3", "ipython", "pythonrepl", "pythonreplast", "pythonrepltool", "pythonastrepltool",
    "pythoninterpreter", "pythonexec", "executepython", "runpython", "jupyter", "pythoncodeinterpreter",
    "pythontool", "codeinterpreter", "codeinterpretertool", "executecode", "runcode", "interpreter", "executeipython",
})
_SHELL_TOOL_KEYS = frozenset({
    "terminal", "shell", "bash", "sh", "shelltool", "runshell", "executebash", "executeshell", "executecommand",
    "runcommand", "cmd", "command", "bashtool", "runshellcommand", "shellcommand", "terminaltool",
})


def _key(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower())


def decode_arguments(raw: str) -> tuple[Any, bool]:
    """A tool call's argument text decoded as JSON or a Python literal: ``(value, decoded)``."""
    stripped = raw.strip()
    if not stripped:
        return raw, False
    if stripped[0] in "{[\"" or stripped[0].isdigit():
        try:
            return loads_json(stripped), True
        except (ValueError, RecursionError):
            pass
    if stripped[0] in "{[('\"" or STRING_PREFIX.match(stripped) is not None:
        try:
            return read_literal(stripped), True
        except (ValueError, RecursionError, IndexError):
            pass
    return raw, False


def unfence(text: str) -> str:
    """The inside of a text that is one fenced block (```` ```python ... ``` ````), else the text."""
    stripped = text.strip()
    if stripped.startswith("```") and stripped.endswith("```") and len(stripped) > 6:
        first = stripped.find("\n")
        if first != -1:
            return stripped[first + 1:-3].strip("\n")
    if len(stripped) > 2 and stripped[0] == "`" and stripped[-1] == "`" and "`" not in stripped[1:-1]:
        return stripped[1:-1]
    return text


def tool_actions(value: Any, tool: str) -> list[Found]:
    """The commands and code a tool call's decoded argument holds."""
    key = _key(tool)
    if isinstance(value, str) and value.strip()[:1] in ("{", "["):
        # Arguments given as a JSON text inside a string (CrewAI's ``Tool Input``).
        try:
            inner = loads_json(value.strip())
        except (ValueError, RecursionError):
            inner = None
        if isinstance(inner, (dict, list)):
            value = inner
    if isinstance(value, str):
        value = unfence(value)
        if not value.strip():
            return []
        if key in _PYTHON_TOOL_KEYS:
            language = guess_code_language(value) if "interpreter" in key or "code" in key else "python"
            return [Found(LogEventKind.COMMAND if language == "bash" else LogEventKind.CODE, value, language)]
        if key in _SHELL_TOOL_KEYS:
            return [Found(LogEventKind.COMMAND, value, "bash")]
        found = classify_text(value, tool)
        return [found] if found is not None else []
    if isinstance(value, dict) and key in _SHELL_TOOL_KEYS:
        commands = value.get("commands")
        if isinstance(commands, list) and commands and all(isinstance(c, str) for c in commands):
            return [Found(LogEventKind.COMMAND, c, "bash") for c in commands if c.strip()]
    if isinstance(value, dict) and key in _PYTHON_TOOL_KEYS | _SHELL_TOOL_KEYS:
        strings = [v for v in value.values() if isinstance(v, str) and v.strip()]
        found = call_actions(value, tool)
        if not found and len(strings) == 1:
            return tool_actions(strings[0], tool)
        return [Found(f.kind, unfence(f.text), f.language) for f in found]
    try:
        return [Found(f.kind, unfence(f.text), f.language) for f in call_actions(value, tool)]
    except (ValueError, TypeError, RecursionError):
        return []


def generic_tool(tool: str) -> bool:
    """Whether a tool is a plain Python or shell tool (its call needs no TOOL_CALL event)."""
    key = _key(tool)
    return key in _PYTHON_TOOL_KEYS or key in _SHELL_TOOL_KEYS or is_generic_tool(tool)
