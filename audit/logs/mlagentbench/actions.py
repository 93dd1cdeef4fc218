"""What an MLAgentBench action's input asks for: its arguments, and what the environment runs or writes."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import PurePosixPath
from typing import Any

from mleaudit.audit.logs.jsonregions import loads_json
from mleaudit.audit.units import LogEventKind
from mleaudit.grading import untrusted_json

__all__ = ["derived", "parse_input"]

_CODE_SUFFIXES = {".py": "python", ".pyw": "python", ".sh": "bash", ".bash": "bash"}
_FENCE_LINE = re.compile(r"^[ \t]*```[^\n]*\n?|\n?[ \t]*```[ \t]*$")


def _strip_fences(raw: str) -> str:
    """An action input without the code fence an LLM sometimes wraps it in."""
    return _FENCE_LINE.sub("", raw.strip()).strip()


# A key starts where its word starts (a start inside a word run gives the same key, so only the first
# is tried) and takes the whole run: a long word run costs linear time, not quadratic.
_QUOTED_ARG = re.compile(r"[\"']?(?<!\w)(\w++)[\"']?\s*:\s*\"((?:[^\"\\]|\\.)*)\"", re.DOTALL)


def parse_input(raw: str) -> dict[str, Any]:
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


def derived(name: str, args: dict[str, Any]) -> list[tuple[LogEventKind, str, str]]:
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
