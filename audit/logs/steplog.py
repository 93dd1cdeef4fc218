"""Scaffold step logs: THOUGHT/ACTION/OBSERVATION records and MLAgentBench-style step blocks.

Two styles are read:

- timestamped records: a line that starts with a time (``2025-07-09 16:45:04,555``,
  ``2025-03-04T09:12:11Z``, ``[03:01:44]``), optionally a level (``INFO``) and a logger name
  (``agent:``), then a tag. A record runs until the next timestamped line. Tags are written
  ``ACTION``, ``ACTION:``, ``[ACTION]``, ``<ACTION>`` or ``Action:`` (any case with a colon or
  brackets, capitals without); ``THOUGHT``/``THINKING``/``REASONING``/``PLAN`` give a MESSAGE,
  ``OBSERVATION``/``OBS``/``RESULT``/``OUTPUT`` an OUTPUT, ``ACTION``/``TOOL_CALL``/``TOOL`` an
  action. What an action holds is read from the tool it names and where its input is
  (:func:`classify_action`):

  - the tool, then a colon and the input (``ACTION bash: ls``, ``ACTION write_file:`` with the
    target on the next line), or the tool alone on the header line and the input on the lines
    after it (``ACTION shell`` / ``ACTION: bash`` / ``[ACTION] python`` / ``Action: Execute``
    then the command or code): a shell tool (``bash``, ``shell``, ``execute``, ``run`` ...)
    gives a COMMAND, a Python tool (``python``, ``ipython`` ...) a CODE event, a file-write
    tool (``write_file`` ...) a CODE event for ``.py``/``.sh`` targets (content after the
    target, or after ``Path:``/``Content:`` labels; a placeholder such as ``(42 lines
    written)`` is no code), other tools a TOOL_CALL (tool name included); an input that is one
    fenced block is read without its fence, and its tag decides between command and code; a
    tool name may be wrapped (``(bash)``, ``**CmdRunAction (source=agent)**``) and its input
    may follow a ``COMMAND:``/``CODE:`` label line (OpenHands' console); a JSON input gives the
    commands and code its arguments hold (:func:`mleaudit.audit.logs.toolcalls.call_actions`) where the log
    writes them verbatim;
  - a command line (``ACTION: python -c "..."``, ``ACTION\\nnvidia-smi -L``): a COMMAND when
    it starts with a shell command word or a path, a CODE event when it reads as Python
    (``import``, ``def``, ``print(``), else a TOOL_CALL (``view_image a.jpg``, ``finish``); a
    shell or Python tool name followed on its line by its input (``execute_bash ls -la``) gives
    that input only when it reads as a command or code (``Execute the script "train.py".`` is a
    sentence: a TOOL_CALL).

  The same records without time stamps are read too when lines start with a tag (``THOUGHT:``,
  ``ACTION: bash``, ``[OBSERVATION]``) and the log has a thought or observation and an action
  that runs a command or code (notes that narrate "[Action]: The agent listed the files" stay
  plain text); a record then runs until the next line that starts with such a tag.
  ``ACTION INPUT:``/``TOOL INPUT:`` records give the input of the action before them
  (``Action: bash`` then ``Action Input: ls``), and ``COMMAND:``/``CODE:`` records (with a
  colon or brackets) a command or code.

  Records without a tag that name a logger after a level (``INFO agent: ===== step 1``) are
  the scaffold's progress lines: a MESSAGE with role ``scaffold``. Timestamped lines without a
  tag or logger that follow an observation are lines of that output (a program's own log
  lines); elsewhere they are a MESSAGE whose writer is not known.
- MLAgentBench-style blocks (``Thought:``, ``Action:``, ``Action Input:``, ``Observation:``
  fields, ``Step N`` headers): the action name and its input together give one TOOL_CALL, or a
  COMMAND/CODE event for a shell or Python tool with a plain-text input; the observation
  (inside its ``` fence) an OUTPUT, the other fields a MESSAGE.

Commands typed at a prompt (``$ cmd``, ``user@host:~$ cmd``, ``>>> code``, see
:func:`mleaudit.audit.logs.prompts.match_prompt`) inside observations, untagged records and the text before
the first record or field are COMMAND/CODE events of their own; the text around them stays what
it was. Text before the first record is a MESSAGE whose writer is not known (a banner, a task
statement); the banner before the first field of an MLAgentBench-style log gives only the
commands typed in it.

Every span covers exactly the event's text in the file. Who wrote each event
(:class:`~mleaudit.audit.units.Actor`): the agent's thoughts, actions and the observations its actions
returned are the **agent**'s; records with a logger name and no tag (the scaffold's own
progress lines, role ``scaffold``) the **scaffold**'s; untagged records without a logger name,
the text before the first record and commands typed inside scaffold text are left ``unknown``
(judged like the agent's).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import PurePosixPath

from mleaudit.audit.logs.common import EventList, SpanMaker, guess_code_language
from mleaudit.audit.logs.jsonregions import loads_json
from mleaudit.audit.logs.keys import EDITOR_TOOLS, PYTHON_TOOLS, SHELL_TOOLS, classify_text, tool_name
from mleaudit.audit.logs.toolcalls import call_actions
from mleaudit.audit.logs.prompts import PROMPT_WORDS, find_prompts
from mleaudit.audit.units import Actor, LogEvent, LogEventKind

__all__ = ["NAME", "classify_action", "detect", "read_events"]

NAME = "steplog"

_STAMP = (
    r"(?:\d{4}[-/]\d\d[-/]\d\d[ T_]\d\d:\d\d(?::\d\d(?:[,.]\d{1,9})?)?(?:[ \t]?(?:Z|UTC|[+-]\d\d:?\d\d))?"
    r"|\d\d:\d\d:\d\d(?:[,.]\d{1,9})?)"
)
_LEVEL = r"(?:DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL|FATAL|TRACE|NOTICE)"
_SEP = r"(?:[ \t]*[|:-][ \t]+|[ \t]+|(?=\n)|$)"
#: The head of a timestamped record: time (bare, ``[...]`` or ``(...)``), then a level.
_HEAD = re.compile(
    r"^[ \t]*(?:\[" + _STAMP + r"\]|\(" + _STAMP + r"\)|" + _STAMP + r")" + _SEP
    + r"(?:(?P<level>\[?" + _LEVEL + r"\]?)" + _SEP + r")?",
    re.MULTILINE,
)
#: A logger name after the level: ``agent:``, ``agent -``, ``agent |``, ``[agent]``, ``[agent.py:42]``.
_LOGGER = re.compile(r"(?:\[[\w.<>/:-]{1,200}\]|[\w.<>/-]{1,200}(?::|[ \t]+[-|]))[ \t]+")
_THOUGHT_TAGS = "THOUGHTS|THOUGHT|THINKING|THINK|REASONING|PLAN"
_ACTION_TAGS = "ACTION|TOOL[ _-]?CALL|TOOL[ _-]?USE|TOOL"
_OBSERVATION_TAGS = "OBSERVATION|TOOL[ _-]?RESULT|TOOL[ _-]?OUTPUT|RESULT|OUTPUT|STDOUT|OBS"
_INPUT_TAGS = r"ACTION[ _-]?INPUT|TOOL[ _-]?INPUT|TOOL[ _-]?ARGS|TOOL[ _-]?ARGUMENTS"
_COMMAND_TAGS = "COMMAND|CMD|SHELL|BASH|TERMINAL"
_CODE_TAGS = "CODE|PYTHON|IPYTHON"
# Input tags first: ``ACTION INPUT`` must not read as ``ACTION`` with a tool named ``INPUT``.
_TAG_NAMES = "|".join((_THOUGHT_TAGS, _OBSERVATION_TAGS, _INPUT_TAGS, _ACTION_TAGS))
#: Tags that name the command or code itself, only with a colon or brackets (``COMMAND: ls``,
#: ``[CODE]``): in capitals alone they are words of program output (``CODE 200``).
_LABEL_NAMES = "|".join((_COMMAND_TAGS, _CODE_TAGS))
#: A tag: ``[ACTION]``, ``<ACTION>``, ``Action:`` / ``Observation (exit=0):`` in any case,
#: ``ACTION`` in capitals. Possessive and bounded: a long line without a tag fails at once.
_TAG = re.compile(
    r"\[(?P<b>(?i:" + _TAG_NAMES + "|" + _LABEL_NAMES + r"))\]"
    r"|<(?P<a>(?i:" + _TAG_NAMES + "|" + _LABEL_NAMES + r"))>"
    r"|(?P<c>(?i:" + _TAG_NAMES + "|" + _LABEL_NAMES + r"))(?=[ \t]*+(?::|\([^)\n]{0,200}\)[ \t]*+:))"
    r"|(?P<u>" + _TAG_NAMES + r")(?![\w-])"
)
_TAG_CLASSES = (
    ("thought", re.compile(_THOUGHT_TAGS, re.IGNORECASE)),
    ("input", re.compile(_INPUT_TAGS, re.IGNORECASE)),
    ("action", re.compile(_ACTION_TAGS, re.IGNORECASE)),
    ("command", re.compile(_COMMAND_TAGS, re.IGNORECASE)),
    ("code", re.compile(_CODE_TAGS, re.IGNORECASE)),
)
#: What may stand between a THOUGHT/OBSERVATION tag and the colon that ends its header.
_TAG_COLON = re.compile(r"[ \t]*+(?:\([^)\n]{0,200}\)|\[[^\]\n]{0,200}\]|[\w.-]{1,80})?[ \t]*+:[ \t]?")
#: Old-style detection: one record with a logger name and a tag is enough.
_REACT_DETECT = re.compile(
    r"^\d{4}-\d\d-\d\d[ T][\d:,.]+[ \t]+(?:[A-Z]+[ \t]+)?[\w.-]+:[ \t]+(?:THOUGHT|ACTION|OBSERVATION)\b", re.MULTILINE
)
_FIELD = re.compile(
    r"^(Reflection|Research Plan and Status|Fact Check|Thought|Action Input|Action|Observation|Final Answer):[ \t]?",
    re.MULTILINE,
)
_STEP_HEADER = re.compile(r"^Step \d+\b.*$", re.MULTILINE)

#: A tool name, bare or wrapped (``(bash)``, ``[bash]``, ``**CmdRunAction (source=agent)**``).
_TOOL = re.compile(r"(?P<open>\*\*|__|[(\[<\"'`]?)(?P<name>[A-Za-z_][\w.-]{0,80})"
                   r"(?P<note>[ \t]*\([^)\n]{0,200}\))?(?P<close>\*\*|__|[)\]>\"'`]?)")
#: A label line inside an action's input that says where the command or code starts
#: (OpenHands' console: ``**CmdRunAction**``, ``THOUGHT: ...``, ``COMMAND:``, then the command).
_INPUT_LABEL = re.compile(r"^[ \t]*(?:COMMAND|CODE|CMD|SCRIPT|INPUT|ARGUMENTS|ARGS)[ \t]*:[ \t]*",
                          re.MULTILINE | re.IGNORECASE)
_PATH_LABEL = re.compile(r"^[ \t]*(?:path|file|filename|target)[ \t]*[:=][ \t]*(\S+)", re.MULTILINE | re.IGNORECASE)
_CONTENT_LABEL = re.compile(r"^[ \t]*(?:content|contents|text|file_text)[ \t]*:[ \t]*", re.MULTILINE | re.IGNORECASE)
_AFTER_TAG = re.compile(r"[ \t]*(?:[:=][ \t]*)?")
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


def _key(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower())


#: Tool names (lower case, letters and digits only) whose input is a shell command.
_SHELL_TOOLS = frozenset({
    "bash", "sh", "zsh", "shell", "terminal", "cmd", "command", "commands", "console", "run", "exec", "execute",
    "executebash", "executeshell", "executecommand", "execcommand", "runcommand", "runshell", "runbash",
    "runshellcommand", "runterminalcommand", "runterminal", "shellexec", "shellcommand", "bashcommand", "bashtool",
    "cmdrun", "cmdrunaction", "powershell", "pwsh", "containerexec", "localshell", "terminalcommand", "execbash",
    "bashexec", "shelltool", "runcmd",
})
#: Tool names whose input is Python code.
_PYTHON_TOOLS = frozenset({
    "python", "python3", "py", "ipython", "executeipython", "executepython", "runipython", "runpython",
    "pythonrepl", "pythonexec", "execpython", "jupyter", "notebook", "runcell", "executecell",
    "ipythonruncellaction", "pythoninterpreter", "pythontool", "ipythoncell",
})
#: Tool names whose input is code in either language (guessed from its first line).
_CODE_TOOLS = frozenset({"code", "executecode", "runcode", "codeinterpreter", "execcode", "interpreter"})
#: Tool names that write a file: the target path, then the content.
_WRITE_TOOLS = frozenset({"writefile", "write", "createfile", "savefile", "writetofile", "filewrite", "create",
                          "filewriteaction"})
_CODE_SUFFIXES = {".py": "python", ".sh": "bash", ".bash": "bash"}
# The tool vocabulary of the JSON readers (:mod:`mleaudit.audit.logs.keys`) counts here too.
_CODE_TOOLS = _CODE_TOOLS | {_key(name) for name in PYTHON_TOOLS if "code" in name or "interpreter" in name}
_SHELL_TOOLS = _SHELL_TOOLS | {_key(name) for name in SHELL_TOOLS}
_PYTHON_TOOLS = (_PYTHON_TOOLS | {_key(name) for name in PYTHON_TOOLS}) - _CODE_TOOLS
_WRITE_TOOLS = _WRITE_TOOLS | ({_key(name) for name in EDITOR_TOOLS} & {"writefile", "createfile", "savefile"})


@dataclass(frozen=True, slots=True)
class _Record:
    line_start: int  # where the record's line starts
    body: int  # after the time, level, logger and tag
    end: int  # where the next record starts
    tag: str  # "thought", "action", "input", "command", "code", "observation" or "" (no tag)
    tag_end: int  # after the tag ("" records: == body)
    logger: bool


def _tag_class(match: re.Match[str]) -> str:
    name = match.group("b") or match.group("a") or match.group("c") or match.group("u")
    return _name_class(name.upper())


@functools.lru_cache(maxsize=256)
def _name_class(name: str) -> str:
    return next((tag for tag, pattern in _TAG_CLASSES if pattern.fullmatch(name)), "observation")


def _tag_at(text: str, pos: int, end: int) -> re.Match[str] | None:
    return _TAG.match(text, pos, end)


def _record_head(text: str, head_end: int, level: bool, end: int) -> tuple[int, str, int, bool]:
    """``(body, tag, tag_end, logger)`` of the record whose head (time, level) ends at ``head_end``."""
    line_end = text.find("\n", head_end, end)
    line_end = end if line_end == -1 else line_end
    tag = _tag_at(text, head_end, line_end)
    if tag is not None:
        return tag.start(), _tag_class(tag), tag.end(), False
    logger = _LOGGER.match(text, head_end, line_end)
    if logger is not None:
        tag = _tag_at(text, logger.end(), line_end)
        if tag is not None:
            return tag.start(), _tag_class(tag), tag.end(), True
        if level:
            return logger.end(), "", logger.end(), True
    return head_end, "", head_end, False


#: Where a record may start in a step log without time stamps: a line that starts with a tag.
_BARE_LINE = re.compile(r"^[ \t]*(?=(?:\[|<|\*\*)?(?i:THOUGHTS?|THINKING|ACTION|OBSERVATION)(?![\w-]))",
                        re.MULTILINE)
_BARE_TAGS = frozenset({"thought", "action", "input", "observation"})


def _heads(text: str, end: int, bare: bool) -> list[tuple[int, int, bool]]:
    """``(line start, head end, has a level)`` of each record head in ``text[:end]``: time-stamped
    lines, or (``bare``) lines that start with a THOUGHT/ACTION/OBSERVATION tag."""
    if not bare:
        return [(m.start(), m.end(), bool(m.group("level"))) for m in _HEAD.finditer(text, 0, end)]
    heads = []
    for match in _BARE_LINE.finditer(text, 0, end):
        tag = _tag_at(text, match.end(), _line_end(text, match.end(), end))
        if tag is not None and _tag_class(tag) in _BARE_TAGS:
            heads.append((match.start(), match.end(), False))
    return heads


def _records(text: str, bare: bool = False) -> list[_Record]:
    end = len(text)
    heads = _heads(text, end, bare)
    records = []
    for number, (line_start, head_end, level) in enumerate(heads):
        record_end = heads[number + 1][0] if number + 1 < len(heads) else end
        body, tag, tag_end, logger = _record_head(text, head_end, level, record_end)
        records.append(_Record(line_start=line_start, body=body, end=record_end, tag=tag, tag_end=tag_end,
                               logger=logger))
    return records


def _tagged_enough(text: str, bare: bool = False) -> bool:
    """At least two tagged records, one of them an action (the first megabyte is looked at);
    without time stamps (``bare``) also a thought or an observation."""
    limit = min(len(text), 1_000_000)
    tagged = actions = others = 0
    for line_start, head_end, level in _heads(text, limit, bare):
        _, tag, _, _ = _record_head(text, head_end, level, _line_end(text, head_end, limit))
        if tag:
            tagged += 1
            actions += tag in ("action", "command", "code", "input")
            others += tag in ("thought", "observation")
            if tagged >= 2 and actions and (others or not bare):
                return True
    return False


def _bare_step_log(text: str) -> bool:
    """Whether lines that start with tags make a step log: :func:`_tagged_enough` without time
    stamps, and one action at least that runs a command or code (research notes that narrate
    "[Action]: The agent listed the files" are prose, not a step log)."""
    if not _tagged_enough(text, bare=True):
        return False
    head = text[:1_000_000]
    records = _records(head, bare=True)
    for number, record in enumerate(records):
        if record.tag == "action" and number + 1 < len(records) and records[number + 1].tag == "input":
            following = records[number + 1]
            input_start = _AFTER_TAG.match(head, following.tag_end, following.end).end()
            events = _input_events(head, _action_tool(head, record.tag_end, record.end), input_start, following.end)
        elif record.tag == "action":
            events = classify_action(head, record.tag_end, record.end)
        elif record.tag in ("command", "code"):
            input_start = _AFTER_TAG.match(head, record.tag_end, record.end).end()
            events = _input_events(head, "bash" if record.tag == "command" else "python", input_start, record.end)
        else:
            continue
        if any(kind in (LogEventKind.COMMAND, LogEventKind.CODE) for kind, *_ in events):
            return True
    return False


def _fields(text: str) -> bool:
    head = text[:1_000_000]
    has_action = re.search(r"^Action:", head, re.MULTILINE) is not None
    return has_action and re.search(r"^Action Input:", head, re.MULTILINE) is not None


def detect(path: str, text: str) -> bool:
    """Timestamped THOUGHT/ACTION/OBSERVATION records, ``Action:`` plus ``Action Input:`` fields,
    or tagged records without time stamps.

    One record with a logger name and a tag (``INFO agent: ACTION bash: ls``) is enough; records
    without a logger name need two tagged records, one an action; lines that start with a tag
    and carry no time stamp need an action and a thought or an observation besides.
    """
    return bool(_REACT_DETECT.search(text[:1_000_000])) or _tagged_enough(text) or _fields(text) or (
        _bare_step_log(text))


def _trim(text: str, start: int, end: int) -> tuple[int, int]:
    while start < end and text[start] in " \t\r\n":
        start += 1
    while end > start and text[end - 1] in " \t\r\n":
        end -= 1
    return start, end


def _line_end(text: str, pos: int, end: int) -> int:
    found = text.find("\n", pos, end)
    return end if found == -1 else found


def _unfence(text: str, start: int, end: int) -> tuple[int, int, str]:
    """The inside of ``[start, end)`` when it is one fenced block, and the block's tag ("" else)."""
    start, end = _trim(text, start, end)
    fence = _FENCE.match(text, start, end)
    if fence is None:
        return start, end, ""
    closing = fence.group("fence")
    if end - fence.end() < len(closing) or not text.startswith(closing, end - len(closing)):
        return start, end, ""
    inner_start, inner_end = _trim(text, fence.end(), end - len(closing))
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
    inner_start, inner_end, tag = _unfence(text, start, end)
    language = _fence_language(tag)
    if language is not None:
        return _code_event(language, inner_start, inner_end)
    if tag or (inner_start, inner_end) != _trim(text, start, end):
        language = guess_code_language(text[inner_start:inner_end])
        return _code_event(language, inner_start, inner_end)
    line_end = _line_end(text, start, end)
    if _COMMAND_START.match(text, start, line_end):
        return LogEventKind.COMMAND, start, end, "bash"
    if _LOOKS_PYTHON.match(text, start, line_end):
        return LogEventKind.CODE, start, end, "python"
    return LogEventKind.TOOL_CALL, tool_start, end, None


def _write(text: str, tool_start: int, input_start: int, end: int) -> tuple[LogEventKind, int, int, str | None]:
    """A file-write action: the target (first word of the input, or a ``Path:`` line), then the
    content (after the target's line, or after a ``Content:`` label)."""
    target_start, _ = _trim(text, input_start, end)
    line_end = _line_end(text, target_start, end)
    words = text[target_start:line_end].split()
    target = words[0].strip("\"'`") if words else ""
    labelled = _PATH_LABEL.search(text, input_start, end)
    content = _CONTENT_LABEL.search(text, input_start, end)
    if labelled is not None and content is not None and labelled.start() < content.start():
        target, line_end = labelled.group(1).strip("\"'`"), content.end()
    language = _CODE_SUFFIXES.get(PurePosixPath(target).suffix.lower())
    content_start, content_end = _trim(text, line_end, end)
    if language is not None and content_end > content_start:
        inner_start, inner_end, _ = _unfence(text, content_start, content_end)
        if not _PLACEHOLDER.fullmatch(text, inner_start, inner_end):
            return LogEventKind.CODE, inner_start, inner_end, language
    return LogEventKind.TOOL_CALL, tool_start, end, None


def _tool_input(key: str, text: str, tool_start: int, input_start: int,
                end: int) -> tuple[LogEventKind, int, int, str | None]:
    """The input of a named tool (after a ``COMMAND:``/``CODE:`` label line when it has one)."""
    start, stop = _trim(text, input_start, end)
    if stop <= start:
        return LogEventKind.TOOL_CALL, tool_start, end, None
    if key in _WRITE_TOOLS:
        return _write(text, tool_start, input_start, end)
    if key in _SHELL_TOOLS or key in _PYTHON_TOOLS or key in _CODE_TOOLS:
        label = _INPUT_LABEL.search(text, start, stop)
        if label is not None:
            start, stop = _trim(text, label.end(), stop)
            if stop <= start:
                return LogEventKind.TOOL_CALL, tool_start, end, None
    inner_start, inner_end, tag = _unfence(text, start, stop)
    fenced = _fence_language(tag)
    if key in _SHELL_TOOLS:
        return _code_event(fenced or "bash", inner_start, inner_end)
    if key in _PYTHON_TOOLS:
        return _code_event(fenced or "python", inner_start, inner_end)
    if key in _CODE_TOOLS:
        return _code_event(fenced or guess_code_language(text[inner_start:inner_end]), inner_start, inner_end)
    if fenced is not None:
        return _code_event(fenced, inner_start, inner_end)
    return LogEventKind.TOOL_CALL, tool_start, end, None


def _classify(text: str, start: int, end: int) -> tuple[LogEventKind, int, int, str | None] | None:
    """The one event an action's body gives (see :func:`classify_action`)."""
    pos = _AFTER_TAG.match(text, start, end).end()
    line_end = _line_end(text, pos, end)
    bare = not text[pos:line_end].strip()
    if bare:
        pos, _ = _trim(text, line_end, end)
        if pos >= end:
            return None
        line_end = _line_end(text, pos, end)
    tool = _TOOL.match(text, pos, line_end)
    if tool is None:
        return _guess(text, pos, end, pos)
    key = _key(tool.group("name"))
    after = tool.end()
    known = key in _SHELL_TOOLS or key in _PYTHON_TOOLS or key in _CODE_TOOLS or key in _WRITE_TOOLS
    colon = re.compile(r"[ \t]*:").match(text, after, line_end)
    if colon is not None:  # ``bash: ls``, ``write_file: a.py``, ``finish: done``
        return _tool_input(key, text, pos, colon.end(), end)
    if not text[after:line_end].strip() and (not bare or known):
        # ``ACTION shell`` / ``[ACTION] python`` / ``ACTION\nbash``, the input on the next lines
        return _tool_input(key, text, pos, line_end, end)
    # The tool name has arguments on its line, or the body's first word is no tool name.
    if tool.group("open") or tool.group("close"):
        if known and key not in _WRITE_TOOLS:
            return _tool_input(key, text, pos, after, end)
    if key in _WRITE_TOOLS:
        return _write(text, pos, after, end)
    if _COMMAND_START.match(text, pos, line_end):
        return LogEventKind.COMMAND, pos, end, "bash"
    if key in _SHELL_TOOLS or key in _PYTHON_TOOLS or key in _CODE_TOOLS:
        # ``execute_bash ls -la``, but not ``Execute the script "train.py".`` (a verb, then prose).
        rest, _ = _trim(text, after, end)
        if classify_text(text[rest:end]) is not None:
            return _tool_input(key, text, pos, after, end)
        return LogEventKind.TOOL_CALL, pos, end, None
    return _guess(text, pos, end, pos)


def _json_actions(text: str, tool_start: int, input_start: int, end: int,
                  tool: str) -> list[tuple[LogEventKind, int, int, str | None]]:
    """Commands and code in a JSON input (``{"command": "ls"}``), where their text is written
    verbatim in the log (a string without escapes); empty when there are none."""
    start, stop = _trim(text, input_start, end)
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
    generic = bool(names) and all(_key(name) in _SHELL_TOOLS | _PYTHON_TOOLS | _CODE_TOOLS for name in names)
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
    body, _ = _trim(text, _AFTER_TAG.match(text, start, end).end(), end)
    tool = _TOOL.match(text, body, _line_end(text, body, end))
    name = tool.group("name") if tool is not None else ""
    if kind is LogEventKind.TOOL_CALL:
        input_start = tool.end() if tool is not None else event_start
        input_start = re.compile(r"[ \t]*:?").match(text, input_start, event_end).end()
        return _json_actions(text, event_start, input_start, event_end, name) or [event]
    if text[event_start:event_start + 1] in ("{", "["):
        # A shell or Python tool given its arguments as JSON: what they hold, else the call as written.
        found = _json_actions(text, body, event_start, event_end, name)
        if found:
            return found
        try:
            loads_json(text[event_start:event_end])
        except (ValueError, RecursionError):
            return [event]  # not JSON: a shell group ``{ ls; pwd; }``, a Python literal
        return [(LogEventKind.TOOL_CALL, body, event_end, None)]
    return [event]


def _action_tool(text: str, start: int, end: int) -> str:
    """The tool an action record names (``Action: bash`` gives ``bash``), else ``""``."""
    body, _ = _trim(text, _AFTER_TAG.match(text, start, end).end(), end)
    tool = _TOOL.match(text, body, _line_end(text, body, end))
    return tool.group("name") if tool is not None else ""


def _input_events(text: str, tool: str, start: int, end: int) -> list[tuple[LogEventKind, int, int, str | None]]:
    """The events of a tool's input ``[start, end)``: commands or code for a shell or Python tool,
    what a JSON input holds, else a TOOL_CALL of the input."""
    begin, stop = _trim(text, start, end)
    if stop <= begin:
        return []
    found = _json_actions(text, begin, begin, stop, tool)
    if found:
        return found
    key = _key(tool)
    if text[begin] in "{[":
        try:
            loads_json(text[begin:stop])
        except (ValueError, RecursionError):
            pass
        else:
            return [(LogEventKind.TOOL_CALL, begin, stop, None)]
    if key in _SHELL_TOOLS | _PYTHON_TOOLS | _CODE_TOOLS | _WRITE_TOOLS:
        return [_tool_input(key, text, begin, begin, stop)]
    return [(LogEventKind.TOOL_CALL, begin, stop, None)]


class _Out:
    """Collects events in file order."""

    def __init__(self, text: str, spans: SpanMaker) -> None:
        self.text = text
        self.spans = spans
        self.events = EventList()

    def add(self, kind: LogEventKind, start: int, end: int, language: str | None = None, role: str = "",
            actor: Actor = Actor.AGENT) -> None:
        start, end = _trim(self.text, start, end)
        if end > start:
            self.events.append(LogEvent(index=len(self.events), kind=kind, text=self.text[start:end],
                                        span=self.spans.span(start, end), language=language, role=role, actor=actor))

    def with_prompts(self, kind: LogEventKind, start: int, end: int, role: str, actor: Actor,
                     typed_actor: Actor) -> None:
        """Free text: commands and code typed at a prompt become events of their own."""
        plain_from = start
        for hit in find_prompts(self.text, start, end):
            self.add(kind, plain_from, hit.line_start, role=role, actor=actor)
            self.add(hit.kind, hit.start, hit.end, hit.language, role=role, actor=typed_actor)
            plain_from = hit.end
        self.add(kind, plain_from, end, role=role, actor=actor)


def _read_react(text: str, spans: SpanMaker, bare: bool = False) -> list[LogEvent]:
    out = _Out(text, spans)
    records = _records(text, bare)
    first = records[0].line_start if records else len(text)
    # What comes before the first record: a banner, a task statement; who wrote it is not known.
    out.with_prompts(LogEventKind.MESSAGE, 0, first, "", Actor.UNKNOWN, Actor.UNKNOWN)
    number = 0
    while number < len(records):
        record = records[number]
        number += 1
        end = record.end
        if record.tag == "observation":
            # Untagged timestamped lines after an observation are lines of that output.
            while number < len(records) and not records[number].tag and not records[number].logger:
                end = records[number].end
                number += 1
        if record.tag == "action" and number < len(records) and records[number].tag == "input":
            # ``Action: bash`` then ``Action Input: ls``: the input record holds what the tool ran.
            following = records[number]
            number += 1
            name = _action_tool(text, record.tag_end, end)
            input_start = _AFTER_TAG.match(text, following.tag_end, following.end).end()
            known = _key(name) in _SHELL_TOOLS | _PYTHON_TOOLS | _CODE_TOOLS | _WRITE_TOOLS
            if not known:
                for kind, start, stop, language in classify_action(text, record.tag_end, end):
                    out.add(kind, start, stop, language, "assistant")
            for kind, start, stop, language in _input_events(text, name, input_start, following.end):
                out.add(kind, start, stop, language, "assistant")
            continue
        if record.tag == "action":
            for kind, start, stop, language in classify_action(text, record.tag_end, end):
                out.add(kind, start, stop, language, "assistant")
            continue
        if record.tag in ("command", "code", "input"):
            # ``COMMAND: ls``, ``[CODE]`` then code, an input without its action.
            name = {"command": "bash", "code": "python"}.get(record.tag, "")
            input_start = _AFTER_TAG.match(text, record.tag_end, end).end()
            for kind, start, stop, language in _input_events(text, name, input_start, end):
                out.add(kind, start, stop, language, "assistant")
            continue
        if record.tag in ("thought", "observation"):
            colon = _TAG_COLON.match(text, record.tag_end, _line_end(text, record.tag_end, end))
            body = colon.end() if colon is not None else record.tag_end
            if record.tag == "thought":
                out.add(LogEventKind.MESSAGE, body, end, role="assistant")
            else:
                out.with_prompts(LogEventKind.OUTPUT, body, end, "tool", Actor.AGENT, Actor.AGENT)
        elif record.logger:
            out.with_prompts(LogEventKind.MESSAGE, record.body, end, "scaffold", Actor.SCAFFOLD, Actor.UNKNOWN)
        else:
            out.with_prompts(LogEventKind.MESSAGE, record.body, end, "", Actor.UNKNOWN, Actor.UNKNOWN)
    return out.events


def _read_fields(text: str, spans: SpanMaker) -> list[LogEvent]:
    out = _Out(text, spans)
    # Field labels and ``Step N`` headers both end the value before them.
    boundaries = sorted(
        [(m.start(), m.end(), m.group(1)) for m in _FIELD.finditer(text)]
        + [(m.start(), m.end(), None) for m in _STEP_HEADER.finditer(text)],
        key=lambda boundary: boundary[0],
    )
    # The banner before the first field is the scaffold's; only commands typed there are events.
    for hit in find_prompts(text, 0, boundaries[0][0] if boundaries else len(text)):
        out.add(hit.kind, hit.start, hit.end, hit.language, actor=Actor.UNKNOWN)
    number = 0
    while number < len(boundaries):
        _, value_start, name = boundaries[number]
        value_end = boundaries[number + 1][0] if number + 1 < len(boundaries) else len(text)
        number += 1
        if name is None:
            continue
        if name == "Action" and number < len(boundaries) and boundaries[number][2] == "Action Input":
            # The action and its input are one call, or a command or code for a shell or Python tool.
            input_start = boundaries[number][1]
            input_end = boundaries[number + 1][0] if number + 1 < len(boundaries) else len(text)
            number += 1
            key = _key(text[value_start:value_end].strip())
            inner_start, inner_end, tag = _unfence(text, input_start, input_end)
            plain = text[inner_start:inner_start + 1] not in ("{", "[", "")
            if plain and (key in _SHELL_TOOLS or key in _PYTHON_TOOLS or key in _CODE_TOOLS):
                kind, start, end, language = _tool_input(key, text, value_start, input_start, input_end)
                out.add(kind, start, end, language, "assistant")
                continue
            found = _json_actions(text, value_start, input_start, input_end, text[value_start:value_end].strip())
            for kind, start, end, language in found or [(LogEventKind.TOOL_CALL, value_start, input_end, None)]:
                out.add(kind, start, end, language, "assistant")
        elif name == "Action":
            for kind, start, end, language in classify_action(text, value_start, value_end):
                out.add(kind, start, end, language, "assistant")
        elif name == "Action Input":
            out.add(LogEventKind.TOOL_CALL, value_start, value_end, role="assistant")
        elif name == "Observation":
            start, end = _trim(text, value_start, value_end)
            fence = re.match(r"```[^\n]*\n", text[start:end])
            if fence is not None:
                start += fence.end()
                if text[start:end].endswith("```"):
                    end -= 3
            out.with_prompts(LogEventKind.OUTPUT, start, max(start, end), "tool", Actor.AGENT, Actor.AGENT)
        else:
            out.add(LogEventKind.MESSAGE, value_start, value_end, role="assistant")
    return out.events


def read_events(path: str, text: str, notes: list[str] | None = None) -> list[LogEvent]:
    """Events of a scaffold step log, in file order (see the module docstring).

    Parameters
    ----------
    path : str
        The log's POSIX path relative to the run root.
    text : str
        The whole file text.
    notes : list of str, optional
        Unused (every line of a text log is read).

    Returns
    -------
    list of LogEvent
        Indexed from 0; every ``text`` equals ``file_text[span.start_byte:span.end_byte]``.
    """
    spans = SpanMaker(text, path)
    if _REACT_DETECT.search(text[:1_000_000]) or _tagged_enough(text):
        return _read_react(text, spans)
    if not _fields(text) and _bare_step_log(text):
        return _read_react(text, spans, bare=True)
    return _read_fields(text, spans)
