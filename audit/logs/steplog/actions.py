"""What an action record of a step log holds: a command, code, a file write or a tool call.

The tool an action names decides (shell, Python, code and file-write tools, by their names with
case and punctuation dropped: :func:`tool_key`), else the input's own look: a fenced block's
tag, a command word or path, Python statements, JSON arguments (read with
:func:`mleaudit.audit.logs.toolcalls.call_actions`).
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath

from mleaudit.audit.logs.common import guess_code_language
from mleaudit.audit.logs.jsonregions import loads_json
from mleaudit.audit.logs.keys import EDITOR_TOOLS, PYTHON_TOOLS, SHELL_TOOLS, classify_text, tool_name
from mleaudit.audit.logs.prompts import PROMPT_WORDS
from mleaudit.audit.logs.steplog.records import AFTER_TAG, end_of_line, trim
from mleaudit.audit.logs.toolcalls import call_actions
from mleaudit.audit.units import LogEventKind

__all__ = [
    "CODE_TOOL_KEYS",
    "PYTHON_TOOL_KEYS",
    "SHELL_TOOL_KEYS",
    "WRITE_TOOL_KEYS",
    "action_tool",
    "classify_action",
    "input_events",
    "json_actions",
    "tool_input",
    "tool_key",
    "unfence",
]

#: A tool name, bare or wrapped (``(bash)``, ``[bash]``, ``**CmdRunAction (source=agent)**``).
_TOOL = re.compile(r"(?P<open>\*\*|__|[(\[<\"'`]?)(?P<name>[A-Za-z_][\w.-]{0,80})"
                   r"(?P<note>[ \t]*\([^)\n]{0,200}\))?(?P<close>\*\*|__|[)\]>\"'`]?)")
#: A label line inside an action's input that says where the command or code starts
#: (OpenHands' console: ``**CmdRunAction**``, ``THOUGHT: ...``, ``COMMAND:``, then the command).
_INPUT_LABEL = re.compile(r"^[ \t]*(?:COMMAND|CODE|CMD|SCRIPT|INPUT|ARGUMENTS|ARGS)[ \t]*:[ \t]*",
                          re.MULTILINE | re.IGNORECASE)
_PATH_LABEL = re.compile(r"^[ \t]*(?:path|file|filename|target)[ \t]*[:=][ \t]*(\S+)", re.MULTILINE | re.IGNORECASE)
_CONTENT_LABEL = re.compile(r"^[ \t]*(?:content|contents|text|file_text)[ \t]*:[ \t]*", re.MULTILINE | re.IGNORECASE)
_FENCE = re.compile(r"(?P<fence>`{3,}|~{3,})[ \t]*(?P<lang>[\w+.-]*)[^\n]*\n")
_PLACEHOLDER = re.compile(r"\(?\s*(?:\d+\s+)?(?:lines?|bytes?|chars?|characters?)\s+(?:written|omitted|hidden|elided)"
                          r"\s*\)?|\(?\s*(?:content|file|code)\s+(?:omitted|hidden|elided|not shown)\s*\)?",
                          re.IGNORECASE)
_LOOKS_PYTHON = re.compile(
    r"[ \t]*(?:import[ \t]+\w|from[ \t]+[\w.]+[ \t]+import\b|def[ \t]+\w+[ \t]*\(|class[ \t]+\w+|print\(|"
    r"[A-Za-z_][\w.]*(?:\[[^\]\n]{0,200}\])?[ \t]*=[ \t]*[\w.\"'\[({]|for[ \t]+\w+[ \t]+in[ \t]|with[ \t]+\w|"
    r"%(?:run|pip|cd)\b)"
)
_COMMAND_START = re.compile(
    r"(?:" + "|".join(re.escape(w) for w in PROMPT_WORDS) + r")(?=[ \t;&|<>]|$)(?![ \t]*=)|\.{0,2}/[\w.~-]|~/"
)


def tool_key(name: str) -> str:
    """A tool name as the tool sets hold it: lower case, letters and digits only."""
    return re.sub(r"[^a-z0-9]", "", name.lower())


#: Tool names (lower case, letters and digits only) whose input is a shell command.
SHELL_TOOL_KEYS = frozenset({
    "bash", "sh", "zsh", "shell", "terminal", "cmd", "command", "commands", "console", "run", "exec", "execute",
    "executebash", "executeshell", "executecommand", "execcommand", "runcommand", "runshell", "runbash",
    "runshellcommand", "runterminalcommand", "runterminal", "shellexec", "shellcommand", "bashcommand", "bashtool",
    "cmdrun", "cmdrunaction", "powershell", "pwsh", "containerexec", "localshell", "terminalcommand", "execbash",
    "bashexec", "shelltool", "runcmd",
})
#: Tool names whose input is Python code.
PYTHON_TOOL_KEYS = frozenset({
    "python", "python3", "py", "ipython", "executeipython", "executepython", "runipython", "runpython",
    "pythonrepl", "pythonexec", "execpython", "jupyter", "notebook", "runcell", "executecell",
    "ipythonruncellaction", "pythoninterpreter", "pythontool", "ipythoncell",
})
#: Tool names whose input is code in either language (guessed from its first line).
CODE_TOOL_KEYS = frozenset({"code", "executecode", "runcode", "codeinterpreter", "execcode", "interpreter"})
#: Tool names that write a file: the target path, then the content.
WRITE_TOOL_KEYS = frozenset({"writefile", "write", "createfile", "savefile", "writetofile", "filewrite", "create",
                             "filewriteaction"})
_CODE_SUFFIXES = {".py": "python", ".sh": "bash", ".bash": "bash"}
# The tool vocabulary of the JSON readers (:mod:`mleaudit.audit.logs.keys`) counts here too.
CODE_TOOL_KEYS = CODE_TOOL_KEYS | {tool_key(name) for name in PYTHON_TOOLS if "code" in name or "interpreter" in name}
SHELL_TOOL_KEYS = SHELL_TOOL_KEYS | {tool_key(name) for name in SHELL_TOOLS}
PYTHON_TOOL_KEYS = (PYTHON_TOOL_KEYS | {tool_key(name) for name in PYTHON_TOOLS}) - CODE_TOOL_KEYS
WRITE_TOOL_KEYS = WRITE_TOOL_KEYS | (
    {tool_key(name) for name in EDITOR_TOOLS} & {"writefile", "createfile", "savefile"})


def unfence(text: str, start: int, end: int) -> tuple[int, int, str]:
    """The inside of ``[start, end)`` when it is one fenced block, and the block's tag ("" else)."""
    start, end = trim(text, start, end)
    fence = _FENCE.match(text, start, end)
    if fence is None:
        return start, end, ""
    closing = fence.group("fence")
    if end - fence.end() < len(closing) or not text.startswith(closing, end - len(closing)):
        return start, end, ""
    inner_start, inner_end = trim(text, fence.end(), end - len(closing))
    return inner_start, inner_end, fence.group("lang").lower()


def _fence_language(tag: str) -> str | None:
    if tag in ("python", "py", "python3", "ipython", "py3", "pycon", "jupyter"):
        return "python"
    if tag in ("bash", "sh", "shell", "console", "zsh", "powershell", "ps1", "pwsh", "cmd", "bat", "terminal"):
        return "bash"
    return None


def _code_event(language: str, start: int, end: int) -> tuple[LogEventKind, int, int, str]:
    return (LogEventKind.COMMAND if language == "bash" else LogEventKind.CODE), start, end, language


def _guess(text: str, start: int, end: int, tool_start: int) -> tuple[LogEventKind, int, int, str | None]:
    """An input with no tool named: a command line, Python code, a fenced block, else a tool call."""
    inner_start, inner_end, tag = unfence(text, start, end)
    language = _fence_language(tag)
    if language is not None:
        return _code_event(language, inner_start, inner_end)
    if tag or (inner_start, inner_end) != trim(text, start, end):
        language = guess_code_language(text[inner_start:inner_end])
        return _code_event(language, inner_start, inner_end)
    line_end = end_of_line(text, start, end)
    if _COMMAND_START.match(text, start, line_end):
        return LogEventKind.COMMAND, start, end, "bash"
    if _LOOKS_PYTHON.match(text, start, line_end):
        return LogEventKind.CODE, start, end, "python"
    return LogEventKind.TOOL_CALL, tool_start, end, None


def _write(text: str, tool_start: int, input_start: int, end: int) -> tuple[LogEventKind, int, int, str | None]:
    """A file-write action: the target (first word of the input, or a ``Path:`` line), then the
    content (after the target's line, or after a ``Content:`` label)."""
    target_start, _ = trim(text, input_start, end)
    line_end = end_of_line(text, target_start, end)
    words = text[target_start:line_end].split()
    target = words[0].strip("\"'`") if words else ""
    labelled = _PATH_LABEL.search(text, input_start, end)
    content = _CONTENT_LABEL.search(text, input_start, end)
    if labelled is not None and content is not None and labelled.start() < content.start():
        target, line_end = labelled.group(1).strip("\"'`"), content.end()
    language = _CODE_SUFFIXES.get(PurePosixPath(target).suffix.lower())
    content_start, content_end = trim(text, line_end, end)
    if language is not None and content_end > content_start:
        inner_start, inner_end, _ = unfence(text, content_start, content_end)
        if not _PLACEHOLDER.fullmatch(text, inner_start, inner_end):
            return LogEventKind.CODE, inner_start, inner_end, language
    return LogEventKind.TOOL_CALL, tool_start, end, None


def tool_input(key: str, text: str, tool_start: int, input_start: int,
                end: int) -> tuple[LogEventKind, int, int, str | None]:
    """The input of a named tool (after a ``COMMAND:``/``CODE:`` label line when it has one)."""
    start, stop = trim(text, input_start, end)
    if stop <= start:
        return LogEventKind.TOOL_CALL, tool_start, end, None
    if key in WRITE_TOOL_KEYS:
        return _write(text, tool_start, input_start, end)
    if key in SHELL_TOOL_KEYS or key in PYTHON_TOOL_KEYS or key in CODE_TOOL_KEYS:
        label = _INPUT_LABEL.search(text, start, stop)
        if label is not None:
            start, stop = trim(text, label.end(), stop)
            if stop <= start:
                return LogEventKind.TOOL_CALL, tool_start, end, None
    inner_start, inner_end, tag = unfence(text, start, stop)
    fenced = _fence_language(tag)
    if key in SHELL_TOOL_KEYS:
        return _code_event(fenced or "bash", inner_start, inner_end)
    if key in PYTHON_TOOL_KEYS:
        return _code_event(fenced or "python", inner_start, inner_end)
    if key in CODE_TOOL_KEYS:
        return _code_event(fenced or guess_code_language(text[inner_start:inner_end]), inner_start, inner_end)
    if fenced is not None:
        return _code_event(fenced, inner_start, inner_end)
    return LogEventKind.TOOL_CALL, tool_start, end, None


def _classify(text: str, start: int, end: int) -> tuple[LogEventKind, int, int, str | None] | None:
    """The one event an action's body gives (see :func:`classify_action`)."""
    pos = AFTER_TAG.match(text, start, end).end()
    line_end = end_of_line(text, pos, end)
    bare = not text[pos:line_end].strip()
    if bare:
        pos, _ = trim(text, line_end, end)
        if pos >= end:
            return None
        line_end = end_of_line(text, pos, end)
    tool = _TOOL.match(text, pos, line_end)
    if tool is None:
        return _guess(text, pos, end, pos)
    key = tool_key(tool.group("name"))
    after = tool.end()
    known = key in SHELL_TOOL_KEYS or key in PYTHON_TOOL_KEYS or key in CODE_TOOL_KEYS or key in WRITE_TOOL_KEYS
    colon = re.compile(r"[ \t]*:").match(text, after, line_end)
    if colon is not None:  # ``bash: ls``, ``write_file: a.py``, ``finish: done``
        return tool_input(key, text, pos, colon.end(), end)
    if not text[after:line_end].strip() and (not bare or known):
        # ``ACTION shell`` / ``[ACTION] python`` / ``ACTION\nbash``, the input on the next lines
        return tool_input(key, text, pos, line_end, end)
    # The tool name has arguments on its line, or the body's first word is no tool name.
    if tool.group("open") or tool.group("close"):
        if known and key not in WRITE_TOOL_KEYS:
            return tool_input(key, text, pos, after, end)
    if key in WRITE_TOOL_KEYS:
        return _write(text, pos, after, end)
    if _COMMAND_START.match(text, pos, line_end):
        return LogEventKind.COMMAND, pos, end, "bash"
    if key in SHELL_TOOL_KEYS or key in PYTHON_TOOL_KEYS or key in CODE_TOOL_KEYS:
        # ``execute_bash ls -la``, but not ``Execute the script "train.py".`` (a verb, then prose).
        rest, _ = trim(text, after, end)
        if classify_text(text[rest:end]) is not None:
            return tool_input(key, text, pos, after, end)
        return LogEventKind.TOOL_CALL, pos, end, None
    return _guess(text, pos, end, pos)


def json_actions(text: str, tool_start: int, input_start: int, end: int,
                  tool: str) -> list[tuple[LogEventKind, int, int, str | None]]:
    """Commands and code in a JSON input (``{"command": "ls"}``), where their text is written
    verbatim in the log (a string without escapes); empty when there are none."""
    start, stop = trim(text, input_start, end)
    if text[start:start + 1] not in ("{", "["):
        return []
    try:
        value = loads_json(text[start:stop])
    except (ValueError, RecursionError):
        return []
    try:
        found = call_actions(value, tool)
    except (ValueError, TypeError, RecursionError):
        return []
    events: list[tuple[LogEventKind, int, int, str | None]] = []
    for item in found:
        at = text.find(item.text, start, stop) if item.text.strip() else -1
        if at >= 0:
            events.append((item.kind, at, at + len(item.text), item.language))
    if not events:
        return []
    inner = tool_name(value) if isinstance(value, dict) else None
    names = [name for name in (tool, inner or "") if name]
    running = SHELL_TOOL_KEYS | PYTHON_TOOL_KEYS | CODE_TOOL_KEYS
    generic = bool(names) and all(tool_key(name) in running for name in names)
    return events if generic else [(LogEventKind.TOOL_CALL, tool_start, end, None), *events]


def classify_action(text: str, start: int, end: int) -> list[tuple[LogEventKind, int, int, str | None]]:
    """What an action's body holds (see the module docstring), from just after its tag.

    A tool call whose input is a JSON object gives the commands and code its arguments hold
    (:func:`mleaudit.audit.logs.toolcalls.call_actions`) where the log writes them verbatim: instead of the
    call for a shell or Python tool, after it for any other tool.

    Parameters
    ----------
    text : str
        The whole file text.
    start, end : int
        The body: after the ``ACTION`` tag to the end of the record.

    Returns
    -------
    list of (LogEventKind, int, int, str or None)
        Each event's kind, its span ``[start, end)`` (outer blanks included; the caller trims)
        and its language, in text order; empty for an action with nothing after its tag.
    """
    event = _classify(text, start, end)
    if event is None:
        return []
    kind, event_start, event_end, _ = event
    body, _ = trim(text, AFTER_TAG.match(text, start, end).end(), end)
    tool = _TOOL.match(text, body, end_of_line(text, body, end))
    name = tool.group("name") if tool is not None else ""
    if kind is LogEventKind.TOOL_CALL:
        input_start = tool.end() if tool is not None else event_start
        input_start = re.compile(r"[ \t]*:?").match(text, input_start, event_end).end()
        return json_actions(text, event_start, input_start, event_end, name) or [event]
    if text[event_start:event_start + 1] in ("{", "["):
        # A shell or Python tool given its arguments as JSON: what they hold, else the call as written.
        found = json_actions(text, body, event_start, event_end, name)
        if found:
            return found
        try:
            loads_json(text[event_start:event_end])
        except (ValueError, RecursionError):
            return [event]  # not JSON: a shell group ``{ ls; pwd; }``, a Python literal
        return [(LogEventKind.TOOL_CALL, body, event_end, None)]
    return [event]


def action_tool(text: str, start: int, end: int) -> str:
    """The tool an action record names (``Action: bash`` gives ``bash``), else ``""``."""
    body, _ = trim(text, AFTER_TAG.match(text, start, end).end(), end)
    tool = _TOOL.match(text, body, end_of_line(text, body, end))
    return tool.group("name") if tool is not None else ""


def input_events(text: str, tool: str, start: int, end: int) -> list[tuple[LogEventKind, int, int, str | None]]:
    """The events of a tool's input ``[start, end)``: commands or code for a shell or Python tool,
    what a JSON input holds, else a TOOL_CALL of the input."""
    begin, stop = trim(text, start, end)
    if stop <= begin:
        return []
    found = json_actions(text, begin, begin, stop, tool)
    if found:
        return found
    key = tool_key(tool)
    if text[begin] in "{[":
        try:
            loads_json(text[begin:stop])
        except (ValueError, RecursionError):
            pass
        else:
            return [(LogEventKind.TOOL_CALL, begin, stop, None)]
    if key in SHELL_TOOL_KEYS | PYTHON_TOOL_KEYS | CODE_TOOL_KEYS | WRITE_TOOL_KEYS:
        return [tool_input(key, text, begin, begin, stop)]
    return [(LogEventKind.TOOL_CALL, begin, stop, None)]
