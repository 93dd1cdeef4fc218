"""Console transcripts of agent frameworks: LangChain, smolagents, AutoGen, CrewAI, scaffold printouts.

Frameworks print what their agent does to the console, and runs save that console as a log (or
as the output of the notebook cell that launched the framework). Each framework marks the
agent's actions with a few fixed lines; this reader finds them and turns

- what the agent ran into COMMAND, CODE or TOOL_CALL events (actor ``agent``),
- what its tools returned into OUTPUT events (actor ``agent``),
- the agent's own reasoning into MESSAGE events (actor ``agent``),
- the framework's chatter (chain banners, step rules, task panels, executor notices) into
  MESSAGE events (actor ``scaffold``, role ``scaffold``).

Formats read:

- LangChain/LangGraph ``AgentExecutor`` (verbose): ``> Entering new AgentExecutor chain...`` and
  ``> Finished chain.`` banners; tool-calling agents' ``Invoking: `python_repl` with `{...}```
  lines, whose argument (a JSON object or a Python ``dict`` as ``repr`` prints it) is decoded
  without evaluating anything (:func:`read_literal`), followed by the tool's observation and the
  agent's reply (OUTPUT); ReAct agents' ``Thought:``, ``Action:``, ``Action Input:``,
  ``Observation:`` and ``Final Answer:`` fields (these only in a file that has a chain banner, so
  that prose saying "Action:" is never read as one).
- smolagents (CodeAct): ``Executing parsed code:`` (or ``Executing this code:``) and the code
  after it, boxed with ``─`` rules, indented, or drawn inside ``│`` borders with line numbers;
  ``Execution logs:``, ``Out:`` and ``Observations:`` outputs; ``Calling tool: 'name' with
  arguments: {...}`` of tool-calling agents; ``━━ Step N ━━`` rules, ``[Step N: Duration ...]``
  summaries and task panels (scaffold); ``Output message of the LLM:`` (the agent's message).
- AutoGen: ``sender (to receiver):`` messages, separated by ``-`` rules, whose fenced code blocks
  are CODE/COMMAND events (the first message, the task, is the scaffold's);
  ``>>>>>>>> EXECUTING CODE BLOCK 0 (inferred language is python)...`` notices (scaffold);
  ``exitcode: 0 (execution succeeded)`` / ``Code output:`` replies (OUTPUT);
  ``***** Suggested tool call (id): name *****`` with its ``Arguments:`` and the
  ``***** Response from calling tool *****`` that answers it.
- CrewAI: ``# Agent:``/``## Task:`` headers (scaffold), ``## Thought:`` and ``## Final Answer:``
  (agent), ``## Using tool: X`` with ``## Tool Input:`` (the call) and ``## Tool Output:``; the
  same fields without ``#`` marks.
- Scaffold printouts: a header line naming code (``----- node c77e code -----``, ``=== code ===``,
  ``[step 3] code:``, ``Executing code:``) followed by the code, which runs to the next header, a
  rule, a time-stamped log line, or a blank line followed by a line that does not read as code; a
  header naming output (``----- node c77e output -----``, ``[step 3] output:``,
  ``Execution output:``) followed by the output, which runs to the next header or time-stamped
  line.

Text outside these blocks (a launcher's log lines, a banner) is read as a plain transcript
(:func:`mleaudit.audit.logs.text.scan_text`): its paragraphs are the scaffold's MESSAGE events, and
commands typed at a prompt or fenced in it are COMMAND/CODE events whose writer is not known.
Text after an action up to the next marker is that action's output (OUTPUT, agent).

Spans: every event's span is its text's place in the file. Code drawn with an indent, ``│``
borders or line numbers has them moved to the end of each of its lines as blanks, so that the
text keeps the span's length and line breaks (evidence lines and columns inside it stay right)
and reads as the code that ran; terminal colour escapes are read as blanks the same way. A tool
call whose argument decodes to other text (a JSON or Python string with escapes) has the span of
the call's argument. Detection is by content (:func:`detect`): a LangChain chain banner or
``Invoking:`` line, a smolagents ``Executing parsed code:`` or ``Calling tool:`` line, an AutoGen
``>>>>>>>> EXECUTING`` notice or ``exitcode: N (execution ...)`` line, a CrewAI ``Using tool:``
line with its ``Tool Input:``, or a scaffold code header followed by a line of code, each at the
start of a line.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any

from mleaudit.audit.logs.common import EventList, SpanMaker, guess_code_language
from mleaudit.audit.logs.jsonregions import loads_json
from mleaudit.audit.logs.keys import Found, classify_text, is_generic_tool
from mleaudit.audit.logs.toolcalls import call_actions, call_text
from mleaudit.audit.logs.text import scan_text
from mleaudit.audit.units import Actor, LogEvent, LogEventKind

__all__ = ["NAME", "detect", "read_events", "read_literal"]

NAME = "frameworks"

#: Characters of the head of a file that detection looks at.
_DETECT_CHARS = 2 * 1024 * 1024
#: Lines an ``Invoking:`` argument may run over before its closing backtick.
_MAX_ARG_LINES = 2000
#: Nesting the literal reader follows.
_MAX_LITERAL_DEPTH = 64

# Terminal colour and cursor escapes; replaced by blanks of the same length.
_ANSI = re.compile(r"\x1b\[[0-9;?]{0,40}[A-Za-z]|\x1b\][^\x07\x1b\n]{0,400}(?:\x07|\x1b\\)")

_RULE_CHARS = frozenset("─━═-╌┄┈╴╶╰╯╭╮┌┐└┘ \t")
_BOX_RULE_CHARS = frozenset("─━═╌┄┈╴╶")

# --- detection markers (anchored at a line start, linear) -------------------------------------
_CHAIN_DETECT = re.compile(
    r"^[ \t]*(?:> Entering new [^\n]{0,200}chain\.\.\.|Invoking: `[^`\n]{1,200}` with `)", re.MULTILINE
)
_SMOL_DETECT = re.compile(
    r"^[ \t│╭─]*(?:Executing (?:parsed|this) code:|Calling tool: '[^'\n]{1,200}' with arguments:)", re.MULTILINE
)
_AUTOGEN_DETECT = re.compile(
    r"^[ \t]*(?:>>>>>>>> (?:EXECUTING|USING AUTO REPLY|NO HUMAN INPUT)|exitcode: -?\d{1,6} \(execution (?:succeeded|failed)\))",
    re.MULTILINE,
)
_CREW_TOOL_DETECT = re.compile(r"^[ \t]*(?:#{1,3}[ \t]*)?Using [Tt]ool:[ \t]*\S", re.MULTILINE)
_CREW_INPUT_DETECT = re.compile(r"^[ \t]*(?:#{1,3}[ \t]*)?Tool Input:", re.MULTILINE)

# --- line markers ------------------------------------------------------------------------------
_CHAIN_ENTER = re.compile(r"[ \t]*> Entering new [^\n]{0,200}chain\.{0,3}[ \t\r]*$")
_CHAIN_END = re.compile(r"[ \t]*> Finished chain\.?[ \t\r]*$")
_INVOKING = re.compile(r"[ \t]*Invoking: `(?P<name>[^`\n]{1,200})` with `")
_REACT = re.compile(r"[ \t]*(?P<field>Thought|Action Input|Action|Observation|Final Answer)[ \t]*:[ \t]?")
_EXEC_CODE = re.compile(r"[ \t│╭─]*Executing (?:parsed|this) code:")
_EXEC_LOGS = re.compile(r"[ \t│]*(?:Execution logs|Last output from code snippet)[ \t]*:[ \t]?")
_OUT = re.compile(r"[ \t]*Out(?: - Final answer)?:[ \t]?")
_OBSERVATIONS = re.compile(r"[ \t]*Observations?:[ \t]?")
_SMOL_THOUGHT = re.compile(r"[ \t]*(?:Thought|Final answer|Final Answer)[ \t]*:[ \t]?")
_CALLING_TOOL = re.compile(r"[ \t│]*Calling tool: '(?P<name>[^'\n]{1,200})' with arguments:[ \t]?")
_STEP_SUMMARY = re.compile(r"[ \t]*\[Step \d{1,9}: Duration")
_STEP_WORDS = re.compile(r"Step \d{1,9}")
_LLM_OUTPUT = re.compile(r"[ \t│]*Output message of the LLM:")
_AUTOGEN_NOTICE = re.compile(r"[ \t]*>>>>>>>> [A-Z]")
_AUTOGEN_EXIT = re.compile(r"[ \t]*exitcode: -?\d{1,6}\b")
_AUTOGEN_SPEAKER = re.compile(r"(?P<name>[\w.@-][\w .@-]{0,99}) \(to (?P<to>[\w.@-][\w .@-]{0,99})\):[ \t\r]*$")
_AUTOGEN_TOOL = re.compile(
    r"[ \t]*\*{5} Suggested (?:tool|function) call(?: \([^)\n]{0,200}\))?: (?P<name>[^\s*]{1,200}) \*{5}"
)
_AUTOGEN_RESPONSE = re.compile(r"[ \t]*\*{5} Response from calling (?:tool|function)\b")
_STARS = re.compile(r"[ \t]*\*{10,}[ \t\r]*$")
_ARGUMENTS_LABEL = re.compile(r"[ \t]*Arguments:[ \t]*")
_CREW_AGENT = re.compile(r"[ \t]*#[ \t]*Agent:")
_CREW_TASK = re.compile(r"[ \t]*##[ \t]*Task:[ \t]?")
_CREW_USING = re.compile(r"[ \t]*(?:#{1,3}[ \t]*)?Using [Tt]ool:[ \t]*(?P<name>[^\n]{1,200}?)[ \t\r]*$")
_CREW_INPUT = re.compile(r"[ \t]*(?:#{1,3}[ \t]*)?Tool Input:[ \t]?")
_CREW_OUTPUT = re.compile(r"[ \t]*(?:#{1,3}[ \t]*)?Tool Output:[ \t]?")
_CREW_FIELD = re.compile(r"[ \t]*##[ \t]*(?P<field>Thought|Final Answer):[ \t]?")
#: ``[step 3] code:``, ``[node 8a02] output:``.
_BRACKET_HEADER = re.compile(
    r"[ \t]*\[(?i:step|node|iter|iteration|turn|round|cell|attempt)[ \t#]*[\w.-]{0,20}\][ \t]*"
    r"(?P<word>(?i:code|script|program|command|commands|output|stdout|stderr|result|results|observation))"
    r"[ \t]*:[ \t\r]*$"
)
#: ``Executing code:``, ``Execution output:`` on a line of their own.
_LABEL_HEADER = re.compile(
    r"(?P<code>(?:Executing|Executed|Running|Generated) (?:python |bash |shell )?(?:code|script)|Code to execute)"
    r"|(?P<output>Execution (?:output|result|results)|Code output)"
)
_LABEL_END = re.compile(r"[ \t]*:[ \t\r]*$")
_CODE_WORDS = re.compile(r"(?i:\b(?:code|script|program|source|python|bash|shell|commands?)\b)")
_OUTPUT_WORDS = re.compile(r"(?i:\b(?:output|outputs|stdout|stderr|results?|observation|logs?)\b)")
_TIMESTAMP = re.compile(r"[ \t]*[\[(]?(?:\d{4}[-/]\d\d[-/]\d\d[ T_]\d\d:\d\d|\d\d:\d\d:\d\d\b)")
_FENCE_OPEN = re.compile(r"[ \t]*(?P<fence>`{3,}|~{3,})[ \t]*(?P<lang>[\w+.-]{0,40})[ \t\r]*$")
_LINE_NUMBER = re.compile(r" {0,8}(\d{1,7})(?: |$)")
#: A line that continues code after a blank line (else the code block ends there).
_CODE_LINE = re.compile(
    r"[ \t]+\S|[#@!%)\]}\"']"
    r"|(?:import|from|def|class|if|elif|else|for|while|try|except|finally|with|return|yield|raise|assert|del"
    r"|pass|break|continue|global|nonlocal|async|await|lambda|print|match|case)\b"
    r"|[A-Za-z_][\w.]{0,200}(?:\[[^\]\n]{0,200}\])?[ \t]*(?:[-+*/%&|^@]|//|\*\*|>>|<<)?=(?!=)"
    r"|[A-Za-z_][\w.]{0,200}[ \t]*\("
    r"|[A-Za-z_]\w{0,100}[ \t]*,[ \t]*[A-Za-z_][\w, \t]{0,200}="
)
#: A line that starts code after a header (detection of scaffold printouts).
_CODE_START = re.compile(
    r"[ \t]*(?:import[ \t]+\w|from[ \t]+[\w.]+[ \t]+import\b|def[ \t]+\w+[ \t]*\(|class[ \t]+\w+|print\(|#!|"
    r"[A-Za-z_][\w.]{0,200}(?:\[[^\]\n]{0,200}\])?[ \t]*=[ \t]*\S|[A-Za-z_][\w.]{0,200}\([^\n]{0,2000}\)[ \t\r]*$"
    r"|`{3})"
)

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


def _mask(text: str) -> str:
    """``text`` with terminal escapes replaced by blanks (same length, same offsets)."""
    if "\x1b" not in text:
        return text
    return _ANSI.sub(lambda m: " " * len(m.group()), text)


class _Modes:
    """Which frameworks a text shows the markers of."""

    __slots__ = ("autogen", "chain", "crew", "generic", "smol")

    def __init__(self, text: str) -> None:
        self.chain = _CHAIN_DETECT.search(text) is not None
        self.smol = _SMOL_DETECT.search(text) is not None
        self.autogen = _AUTOGEN_DETECT.search(text) is not None
        self.crew = _CREW_TOOL_DETECT.search(text) is not None and _CREW_INPUT_DETECT.search(text) is not None
        self.generic = _generic_headers(text)

    def any(self) -> bool:
        return self.chain or self.smol or self.autogen or self.crew or self.generic


def _lines(text: str) -> tuple[list[int], list[int]]:
    starts, ends = [], []
    pos = 0
    size = len(text)
    while pos <= size:
        nl = text.find("\n", pos)
        end = size if nl == -1 else nl
        starts.append(pos)
        ends.append(end - 1 if end > pos and text[end - 1] == "\r" else end)
        if nl == -1:
            break
        pos = nl + 1
    return starts, ends


def _rule_header(line: str) -> str | None:
    """``"code"``/``"output"`` for ``----- node c77e code -----`` and ``=== output ===`` lines."""
    s = line.strip()
    if len(s) < 8 or s[0] not in "-=#*~" or s[-1] != s[0]:
        return None
    mark = s[0]
    left = len(s) - len(s.lstrip(mark))
    right = len(s) - len(s.rstrip(mark))
    if left < 3 or right < 3 or left + right >= len(s):
        return None
    label = s[left:len(s) - right].strip()
    if not label or len(label) > 80 or "\t" in label:
        return None
    code = [m.end() for m in _CODE_WORDS.finditer(label)]
    output = [m.end() for m in _OUTPUT_WORDS.finditer(label)]
    if not code and not output:
        return None
    return "output" if (output and (not code or output[-1] >= code[-1])) else "code"


def _header_kind(text: str, start: int, end: int) -> str | None:
    """``"code"``/``"output"`` when the line ``[start, end)`` is a scaffold printout header."""
    if start == end:
        return None
    first = text[start]
    if first in "-=#*~":
        return _rule_header(text[start:end])
    if first == "[" or first in " \t":
        match = _BRACKET_HEADER.match(text, start, end)
        if match is not None:
            word = match.group("word").lower()
            return "code" if word in ("code", "script", "program", "command", "commands") else "output"
        if first == "[":
            return None
    label = _LABEL_HEADER.match(text, start, end)
    if label is not None and _LABEL_END.match(text, label.end(), end) is not None:
        return "code" if label.group("code") else "output"
    return None


def _generic_headers(text: str) -> bool:
    """Whether a scaffold code header is followed by a line of code."""
    starts, ends = _lines(text)
    for i, (start, end) in enumerate(zip(starts, ends)):
        if start == end or text[start] not in "-=#*~[ECRG":
            continue
        if _header_kind(text, start, end) != "code":
            continue
        j = i + 1
        while j < len(starts) and starts[j] == ends[j]:
            j += 1
        if j < len(starts) and (_CODE_START.match(text, starts[j], ends[j]) is not None
                                or guess_code_language(text[starts[j]:ends[j]]) == "bash"):
            return True
    return False


def detect(path: str, text: str) -> bool:
    """Whether a text is a framework console transcript (see the module docstring).

    Parameters
    ----------
    path : str
        The log's POSIX path (unused: detection is by content).
    text : str
        The whole file text.

    Returns
    -------
    bool
    """
    head = text[:_DETECT_CHARS]
    if "\x00" in head[:65536]:
        return False
    return _Modes(_mask(head)).any()


# --- a reader of Python literals (never evaluates) ---------------------------------------------
_NUMBER = re.compile(r"[-+]?(?:\d[\d_]{0,400}(?:\.[\d_]{0,400})?|\.\d[\d_]{0,400})(?:[eE][-+]?\d{1,6})?j?")
_STRING_PREFIX = re.compile(r"(?i:[rbuf]{0,2})(?=['\"])")
_WS = re.compile(r"[ \t\r\n]*")
_SIMPLE_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", "'": "'", '"': '"', "a": "\a", "b": "\b",
                   "f": "\f", "v": "\v", "0": "\0", "\n": ""}


class _Literal:
    """Reads one Python literal: dict, list, tuple, set, str, bytes, number, ``True``/``False``/``None``."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def ws(self) -> None:
        self.pos = _WS.match(self.text, self.pos).end()

    def value(self, depth: int) -> Any:
        if depth > _MAX_LITERAL_DEPTH:
            raise ValueError("literal nested too deep")
        self.ws()
        text, pos = self.text, self.pos
        char = text[pos:pos + 1]
        if char in ("{", "[", "("):
            return self.container(char, depth)
        prefix = _STRING_PREFIX.match(text, pos)
        if prefix is not None:
            parts = []
            while prefix is not None:
                parts.append(self.string(prefix.end(), "r" in prefix.group().lower()))
                self.ws()
                prefix = _STRING_PREFIX.match(self.text, self.pos)
            return "".join(parts)
        for word, value in (("True", True), ("False", False), ("None", None)):
            if text.startswith(word, pos):
                self.pos = pos + len(word)
                return value
        number = _NUMBER.match(text, pos)
        if number is not None and number.end() > pos:
            self.pos = number.end()
            raw = number.group().replace("_", "")
            try:
                return int(raw)
            except ValueError:
                try:
                    return float(raw)
                except ValueError:
                    return raw
        raise ValueError(f"no literal at offset {pos}")

    def container(self, opener: str, depth: int) -> Any:
        closer = {"{": "}", "[": "]", "(": ")"}[opener]
        self.pos += 1
        items: list[Any] = []
        pairs: dict[Any, Any] = {}
        is_dict: bool | None = None if opener == "{" else False
        while True:
            self.ws()
            if self.text.startswith(closer, self.pos):
                self.pos += 1
                break
            item = self.value(depth + 1)
            self.ws()
            if is_dict is not False and self.text.startswith(":", self.pos):
                is_dict = True
                self.pos += 1
                value = self.value(depth + 1)
                try:
                    pairs[item] = value
                except TypeError:
                    pairs[repr(item)[:200]] = value
            elif is_dict:
                raise ValueError("dict entry without a value")
            else:
                is_dict = False
                items.append(item)
            self.ws()
            if self.text.startswith(",", self.pos):
                self.pos += 1
            elif not self.text.startswith(closer, self.pos):
                raise ValueError(f"expected {closer!r} at offset {self.pos}")
        if opener == "{":
            return pairs if is_dict is not False else items
        return items if opener == "[" else tuple(items)

    def string(self, pos: int, raw: bool) -> str:
        text = self.text
        quote = text[pos]
        triple = text.startswith(quote * 3, pos)
        closer = quote * 3 if triple else quote
        pos += len(closer)
        out: list[str] = []
        while True:
            close = text.find(closer, pos)
            if close == -1:
                raise ValueError("unterminated string")
            back = text.find("\\", pos, close)
            if not triple:
                newline = text.find("\n", pos, close)
                if newline != -1 and (back == -1 or newline < back):
                    raise ValueError("newline in a string")
            if back == -1:
                out.append(text[pos:close])
                self.pos = close + len(closer)
                return "".join(out)
            out.append(text[pos:back])
            if back + 1 >= len(text):
                raise ValueError("unterminated string")
            pos = self.escape(back, raw, out)

    def escape(self, back: int, raw: bool, out: list[str]) -> int:
        text = self.text
        char = text[back + 1]
        if raw:
            out.append(text[back:back + 2])
            return back + 2
        if char in _SIMPLE_ESCAPES and not (char == "0" and text[back + 2:back + 3].isdigit()):
            out.append(_SIMPLE_ESCAPES[char])
            return back + 2
        if char in "xuU":
            width = {"x": 2, "u": 4, "U": 8}[char]
            digits = text[back + 2:back + 2 + width]
            if len(digits) == width and all(c in "0123456789abcdefABCDEF" for c in digits):
                code = int(digits, 16)
                out.append(chr(code) if code <= 0x10FFFF else "\ufffd")
                return back + 2 + width
        if char in "01234567":
            end = back + 1
            while end < back + 4 and end < len(text) and text[end] in "01234567":
                end += 1
            out.append(chr(int(text[back + 1:end], 8)))
            return end
        if char == "N" and text.startswith("{", back + 2):
            close = text.find("}", back + 3, back + 200)
            if close != -1:
                try:
                    out.append(unicodedata.lookup(text[back + 3:close]))
                    return close + 1
                except KeyError:
                    pass
        out.append(text[back:back + 2])
        return back + 2


def read_literal(text: str) -> Any:
    """Decode a Python literal as ``repr`` prints it, without evaluating anything.

    Parameters
    ----------
    text : str
        A dict, list, tuple, set, string (any quotes, prefixes, escapes, implicit
        concatenation), number, ``True``, ``False`` or ``None``; untrusted.

    Returns
    -------
    Any
        The value (a set is returned as a list).

    Raises
    ------
    ValueError
        When the text is not one literal, or nests deeper than 64 levels.

    Examples
    --------
    >>> read_literal("{'query': \\"print('a')\\\\nx = 1\\", 'n': (1, None)}")
    {'query': "print('a')\\nx = 1", 'n': (1, None)}
    """
    reader = _Literal(text)
    value = reader.value(0)
    reader.ws()
    if reader.pos != len(text):
        raise ValueError(f"text after the literal at offset {reader.pos}")
    return value


def _decode_arguments(raw: str) -> tuple[Any, bool]:
    """A tool call's argument text decoded as JSON or a Python literal: ``(value, decoded)``."""
    stripped = raw.strip()
    if not stripped:
        return raw, False
    if stripped[0] in "{[\"" or stripped[0].isdigit():
        try:
            return loads_json(stripped), True
        except (ValueError, RecursionError):
            pass
    if stripped[0] in "{[('\"" or _STRING_PREFIX.match(stripped) is not None:
        try:
            return read_literal(stripped), True
        except (ValueError, RecursionError, IndexError):
            pass
    return raw, False


def _unfence(text: str) -> str:
    """The inside of a text that is one fenced block (```` ```python ... ``` ````), else the text."""
    stripped = text.strip()
    if stripped.startswith("```") and stripped.endswith("```") and len(stripped) > 6:
        first = stripped.find("\n")
        if first != -1:
            return stripped[first + 1:-3].strip("\n")
    if len(stripped) > 2 and stripped[0] == "`" and stripped[-1] == "`" and "`" not in stripped[1:-1]:
        return stripped[1:-1]
    return text


def _tool_actions(value: Any, tool: str) -> list[Found]:
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
        value = _unfence(value)
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
            return _tool_actions(strings[0], tool)
        return [Found(f.kind, _unfence(f.text), f.language) for f in found]
    try:
        return [Found(f.kind, _unfence(f.text), f.language) for f in call_actions(value, tool)]
    except (ValueError, TypeError, RecursionError):
        return []


def _generic_tool(tool: str) -> bool:
    key = _key(tool)
    return key in _PYTHON_TOOL_KEYS or key in _SHELL_TOOL_KEYS or is_generic_tool(tool)


# --- the reader ------------------------------------------------------------------------------
class _Reader:
    """Reads one transcript line by line; each line is looked at a bounded number of times."""

    def __init__(self, text: str, path: str) -> None:
        self.text = text
        self.spans = SpanMaker(text, path)
        self.events = EventList()
        self.starts, self.ends = _lines(text)
        self.count = len(self.starts)
        self.modes = _Modes(text)
        self.in_chain = False
        self.after_action = False
        self.speakers = 0

    # -- emitting --
    def emit(self, kind: LogEventKind, start: int, end: int, actor: Actor, *, language: str | None = None,
             text: str | None = None, role: str = "") -> None:
        if text is None:
            while end > start and self.text[end - 1] in " \t\r\n":
                end -= 1
            while start < end and self.text[start] in " \t\r\n":
                start += 1
            text = self.text[start:end]
        if not text.strip() or end <= start:
            return
        self.events.append(LogEvent(index=len(self.events), kind=kind, text=text, span=self.spans.span(start, end),
                                    language=language, role=role, actor=actor))

    def scaffold(self, start: int, end: int) -> None:
        self.emit(LogEventKind.MESSAGE, start, end, Actor.SCAFFOLD, role="scaffold")

    def free(self, start: int, end: int) -> None:
        """Text outside any block: the last action's output, the agent's words in a chain, or the scaffold's."""
        if end <= start or not self.text[start:end].strip():
            return
        if self.after_action:
            self.emit(LogEventKind.OUTPUT, start, end, Actor.AGENT)
            return
        if self.in_chain:
            self.emit(LogEventKind.MESSAGE, start, end, Actor.AGENT)
            return
        for event in scan_text(self.spans, start, end, plain_kind=LogEventKind.MESSAGE):
            scaffold = event.kind is LogEventKind.MESSAGE
            self.events.append(LogEvent(index=len(self.events), kind=event.kind, text=event.text, span=event.span,
                                        language=event.language, location=event.location,
                                        role="scaffold" if scaffold else "",
                                        actor=Actor.SCAFFOLD if scaffold else Actor.UNKNOWN))

    def found(self, items: list[Found], name: str, raw: str, start: int, end: int) -> None:
        """Events of a tool call whose argument text ``raw`` sits at ``[start, end)``."""
        generic = _generic_tool(name)
        if not generic or not items:
            self.emit(LogEventKind.TOOL_CALL, start, end, Actor.AGENT, text=call_text(name, raw.strip()))
        for item in items:
            at = self.text.find(item.text, start, end) if item.text.strip() else -1
            if at >= 0:
                self.emit(item.kind, at, at + len(item.text), Actor.AGENT, language=item.language, text=item.text)
            else:
                self.emit(item.kind, start, end, Actor.AGENT, language=item.language, text=item.text)
        self.after_action = True

    # -- lines --
    def line(self, i: int) -> str:
        return self.text[self.starts[i]:self.ends[i]]

    def blank(self, i: int) -> bool:
        return not self.text[self.starts[i]:self.ends[i]].strip()

    def is_rule(self, i: int, *, ascii_ok: bool = True) -> bool:
        s = self.line(i).strip()
        if len(s) < 3 or not all(c in _RULE_CHARS for c in s):
            return False
        if any(c in _BOX_RULE_CHARS for c in s) or s[0] in "╰╯╭╮┌┐└┘":
            return True
        return ascii_ok and s.count("-") >= 20 and not self.line(i)[:1].isspace()

    def marker(self, i: int) -> tuple[str, Any] | None:
        """What a line starts, ``(kind, match)``, or ``None`` for a line of text."""
        text, start, end = self.text, self.starts[i], self.ends[i]
        if start == end:
            return None
        stripped = text[start:end].lstrip(" \t")
        if not stripped:
            return None
        first = stripped[0]
        modes = self.modes
        if modes.chain:
            if first == ">":
                if _CHAIN_ENTER.match(text, start, end):
                    return "chain-enter", None
                if _CHAIN_END.match(text, start, end):
                    return "chain-end", None
            if first == "I" and (m := _INVOKING.match(text, start, end)):
                return "invoking", m
            if first in "TAOF" and (m := _REACT.match(text, start, end)):
                return "react", m
        if modes.smol:
            if first in "─│╭E" and (m := _EXEC_CODE.match(text, start, end)):
                return "code", m
            if first in "│C" and (m := _CALLING_TOOL.match(text, start, end)):
                return "calling-tool", m
            if first in "│EL" and (m := _EXEC_LOGS.match(text, start, end)):
                return "output", m
            if first == "O":
                if m := _OUT.match(text, start, end):
                    return "output", m
                if m := _OBSERVATIONS.match(text, start, end):
                    return "output", m
            if first in "│O" and (m := _LLM_OUTPUT.match(text, start, end)):
                return "agent-message", m
            if first in "TF" and (m := _SMOL_THOUGHT.match(text, start, end)):
                return "agent-message", m
            if first == "[" and _STEP_SUMMARY.match(text, start, end):
                return "scaffold-line", None
            if first in "━─═" and _STEP_WORDS.fullmatch(stripped.strip("━─═ \t\r")):
                return "step", None
            if first == "╭" and not self.is_rule(i):
                return "panel", None
        if modes.autogen:
            if first == ">" and _AUTOGEN_NOTICE.match(text, start, end):
                return "scaffold-line", None
            if first == "e" and (m := _AUTOGEN_EXIT.match(text, start, end)):
                return "output-line", m
            if first == "*":
                if m := _AUTOGEN_TOOL.match(text, start, end):
                    return "autogen-tool", m
                if m := _AUTOGEN_RESPONSE.match(text, start, end):
                    return "autogen-response", m
            if first == "C" and stripped.startswith("Code output:"):
                return "output-line", None
            if not text[start].isspace() and (m := _AUTOGEN_SPEAKER.match(text, start, end)):
                return "speaker", m
        if modes.crew:
            if first in "#UT":
                if m := _CREW_USING.match(text, start, end):
                    return "crew-tool", m
                if m := _CREW_INPUT.match(text, start, end):
                    return "crew-input", m
                if m := _CREW_OUTPUT.match(text, start, end):
                    return "output", m
                if m := _CREW_FIELD.match(text, start, end):
                    return "agent-message", m
                if m := _CREW_TASK.match(text, start, end):
                    return "scaffold-block", m
                if _CREW_AGENT.match(text, start, end):
                    return "scaffold-line", None
        if modes.generic and first in "-=#*~[ECRG" and not text[start].isspace():
            kind = _header_kind(text, start, end)
            if kind == "code":
                return "code", None
            if kind == "output":
                return "output-header", None
        return None

    def ends_block(self, i: int, *, code: bool) -> bool:
        """Whether line ``i`` ends the body of a block (a marker, a rule, a time-stamped log line)."""
        start, end = self.starts[i], self.ends[i]
        if self.is_rule(i):
            return True
        if _TIMESTAMP.match(self.text, start, end) is not None and not self.text[start].isspace():
            return True
        if code and self.text[start:start + 1] in (" ", "\t"):
            return False  # an indented line of code is never a marker
        return self.marker(i) is not None

    # -- blocks --
    def body(self, i: int, *, code: bool = False) -> int:
        """The first line after the body that starts at line ``i``."""
        j = i
        while j < self.count and not self.ends_block(j, code=code):
            j += 1
        return j

    def code_body(self, i: int, boxed: bool) -> int:
        """The first line after code starting at line ``i``: a rule or marker ends it; unboxed code
        also ends at a blank line followed by a line that does not read as code."""
        j = i
        while j < self.count and self.blank(j):
            j += 1
        if j < self.count and (fence := _FENCE_OPEN.match(self.text, self.starts[j], self.ends[j])):
            k = j + 1
            mark = fence.group("fence")
            while k < self.count and not self.line(k).strip().startswith(mark):
                k += 1
            return min(k + 1, self.count)
        base = None
        while j < self.count:
            if self.blank(j):
                k = j + 1
                while k < self.count and self.blank(k):
                    k += 1
                if k >= self.count:
                    return j
                if not boxed and (_CODE_LINE.match(self.text, self.starts[k], self.ends[k]) is None
                                  and guess_code_language(self.line(k)) != "bash"):
                    return j
                j = k
                continue
            if self.ends_block(j, code=True) and not (boxed and self.line(j).lstrip().startswith("│")
                                                       and not self.line(j).lstrip().startswith("│ ─")):
                return j
            if boxed:
                line = self.line(j)
                indent = len(line) - len(line.lstrip(" \t"))
                if base is None:
                    base = indent
                elif indent < base:
                    return j
            j += 1
        return j

    def code_event(self, first: int, stop: int) -> None:
        """A CODE/COMMAND event of lines ``[first, stop)`` (fence, borders and indent moved aside)."""
        while first < stop and self.blank(first):
            first += 1
        while stop > first and self.blank(stop - 1):
            stop -= 1
        if stop <= first:
            return
        language = None
        fence = _FENCE_OPEN.match(self.text, self.starts[first], self.ends[first])
        if fence is not None:
            lang = fence.group("lang").lower()
            language = "python" if lang in ("python", "py", "python3", "ipython") else (
                "bash" if lang in ("bash", "sh", "shell", "console", "zsh") else None)
            first += 1
            if stop > first and self.line(stop - 1).strip().startswith(fence.group("fence")):
                stop -= 1
            while first < stop and self.blank(first):
                first += 1
            while stop > first and self.blank(stop - 1):
                stop -= 1
            if stop <= first:
                return
        lines = [self.line(k) for k in range(first, stop)]
        contents = _strip_layout(lines)
        start, end = self.starts[first], self.ends[stop - 1]
        if contents == lines:
            body = None
            code = "\n".join(lines)
        else:
            code = body = "\n".join(c + " " * (self.ends[k] - self.starts[k] - len(c))
                                    for k, c in zip(range(first, stop), contents))
            if len(body) != end - start:  # a CRLF line: no padded text keeps the offsets
                body = "\n".join(contents)
        language = language or guess_code_language(code)
        kind = LogEventKind.COMMAND if language == "bash" else LogEventKind.CODE
        if body is None:
            self.emit(kind, start, end, Actor.AGENT, language=language)
        else:
            self.emit(kind, start, end, Actor.AGENT, language=language, text=body)
        self.after_action = True

    def argument_end(self, i: int, pos: int) -> tuple[int, int]:
        """The closing backtick of an ``Invoking:`` argument starting at ``pos`` on line ``i``:
        ``(offset of the backtick, last line)``."""
        for k in range(i, min(self.count, i + _MAX_ARG_LINES)):
            line_end = self.ends[k]
            stripped_end = line_end
            while stripped_end > self.starts[k] and self.text[stripped_end - 1] in " \t":
                stripped_end -= 1
            if stripped_end > max(pos, self.starts[k]) and self.text[stripped_end - 1] == "`":
                return stripped_end - 1, k
            if k > i and self.marker(k) is not None:
                break
        return self.ends[i], i

    # -- handlers --
    def run(self) -> list[LogEvent]:
        i = 0
        free_from = 0
        while i < self.count:
            found = self.marker(i)
            if found is None:
                if self.is_rule(i):
                    # A rule separates; it is no event.
                    self.free(free_from, self.starts[i])
                    free_from = self.ends[i]
                elif (self.after_action and not self.in_chain and not self.text[self.starts[i]:self.starts[i] + 1].isspace()
                      and _TIMESTAMP.match(self.text, self.starts[i], self.ends[i]) is not None):
                    # A launcher's log line after an action's output: the scaffold speaks again.
                    self.free(free_from, self.starts[i])
                    free_from = self.starts[i]
                    self.after_action = False
                i += 1
                continue
            self.free(free_from, self.starts[i])
            i = self.handle(i, *found)
            free_from = self.starts[i] if i < self.count else len(self.text)
        self.free(free_from, len(self.text))
        return self.events

    def handle(self, i: int, kind: str, match: Any) -> int:
        text, start, end = self.text, self.starts[i], self.ends[i]
        if kind in ("chain-enter", "chain-end", "scaffold-line", "step"):
            self.scaffold(start, end)
            if kind == "chain-enter":
                self.in_chain, self.after_action = True, False
            elif kind == "chain-end":
                self.in_chain = self.after_action = False
            elif kind == "step":
                self.after_action = False
            return i + 1
        if kind == "panel":
            j = i + 1
            while j < self.count and not self.line(j).lstrip().startswith("╰") and self.marker(j) is None:
                j += 1
            if j < self.count and self.line(j).lstrip().startswith("╰"):
                j += 1
            self.scaffold(start, self.ends[j - 1])
            return j
        if kind == "scaffold-block":
            stop = self.body(i + 1)
            self.scaffold(start, self.ends[stop - 1])
            return stop
        if kind == "code":
            line = text[start:end]
            boxed = any(c in line for c in "─╭│")
            stop = self.code_body(i + 1, boxed)
            self.code_event(i + 1, stop)
            return stop
        if kind in ("output", "output-line", "output-header", "autogen-response"):
            body_start = {"output": match.end() if match is not None else end, "output-line": start,
                          "output-header": end, "autogen-response": end}[kind]
            stop = self.body(i + 1)
            if kind == "autogen-response" and stop < self.count and _STARS.match(text, self.starts[stop],
                                                                                  self.ends[stop]):
                stop += 1
                self.emit(LogEventKind.OUTPUT, body_start, self.starts[stop - 1], Actor.AGENT)
                self.after_action = True
                return stop
            self.emit(LogEventKind.OUTPUT, body_start, self.ends[stop - 1], Actor.AGENT)
            self.after_action = True
            return stop
        if kind == "agent-message":
            stop = self.body(i + 1)
            self.emit(LogEventKind.MESSAGE, match.end(), self.ends[stop - 1], Actor.AGENT)
            self.after_action = False
            return stop
        if kind == "invoking":
            arg_start = match.end()
            close, last = self.argument_end(i, arg_start)
            raw = text[arg_start:close]
            value, _ = _decode_arguments(raw)
            self.found(_tool_actions(value, match.group("name")), match.group("name"), raw, arg_start,
                       max(close, arg_start))
            return last + 1
        if kind == "calling-tool":
            return self.calling_tool(i, match)
        if kind == "react":
            return self.react(i, match)
        if kind == "crew-tool":
            return self.crew_tool(i, match)
        if kind == "crew-input":
            return self.tool_input(i, match, "")
        if kind == "autogen-tool":
            return self.autogen_tool(i, match)
        if kind == "speaker":
            return self.speaker(i)
        return i + 1

    def react(self, i: int, match: re.Match[str]) -> int:
        field = match.group("field")
        if field == "Action":
            name = self.text[match.end():self.ends[i]].strip().strip("`*")
            return self.action(i, name, match.end())
        if field == "Action Input":
            return self.tool_input(i, match, "")
        stop = self.body(i + 1)
        end = self.ends[stop - 1]
        if field == "Observation":
            self.emit(LogEventKind.OUTPUT, match.end(), end, Actor.AGENT)
            self.after_action = True
        else:
            self.emit(LogEventKind.MESSAGE, match.end(), end, Actor.AGENT)
            self.after_action = False
        return stop

    def action(self, i: int, name: str, name_end: int) -> int:
        """An ``Action:``/``Using tool:`` line and the input that follows it."""
        j = i + 1
        while j < self.count and self.blank(j) and j < i + 4:
            j += 1
        following = self.marker(j) if j < self.count else None
        if following is not None and following[0] in ("react", "crew-input") and (
                following[0] == "crew-input" or following[1].group("field") == "Action Input"):
            return self.tool_input(j, following[1], name)
        if name:
            self.emit(LogEventKind.TOOL_CALL, self.starts[i], self.ends[i], Actor.AGENT, text=name)
            self.after_action = True
            return i + 1
        # ``Action:`` alone: the input (a JSON blob, often fenced) is on the lines after it.
        stop = self.body(i + 1)
        self.input_events(self.starts[i + 1] if i + 1 < self.count else name_end, self.ends[stop - 1], "")
        return stop

    def tool_input(self, i: int, match: re.Match[str], name: str) -> int:
        stop = self.body(i + 1)
        self.input_events(match.end(), self.ends[stop - 1], name)
        return stop

    def input_events(self, start: int, end: int, name: str) -> None:
        while end > start and self.text[end - 1] in " \t\r\n":
            end -= 1
        while start < end and self.text[start] in " \t\r\n":
            start += 1
        raw = self.text[start:end]
        if not raw.strip():
            if name:
                self.emit(LogEventKind.TOOL_CALL, start, end, Actor.AGENT, text=name)
            return
        value, decoded = _decode_arguments(_unfence(raw))
        if decoded and isinstance(value, dict) and not name:
            action = value.get("action") or value.get("tool") or value.get("name")
            if isinstance(action, str) and ("action_input" in value or "tool_input" in value):
                name = action
                value = value.get("action_input", value.get("tool_input"))
        self.found(_tool_actions(value, name), name, raw, start, end)

    def crew_tool(self, i: int, match: re.Match[str]) -> int:
        return self.action(i, match.group("name").strip().strip("`*"), match.end())

    def calling_tool(self, i: int, match: re.Match[str]) -> int:
        """``Calling tool: 'name' with arguments: {...}``, possibly wrapped over ``│`` box lines."""
        pieces = [(match.end(), self.ends[i])]
        j = i + 1
        boxed = self.line(i).lstrip().startswith("│")
        while boxed and j < self.count:
            line = self.line(j).lstrip()
            if not line.startswith("│") or self.marker(j) is not None:
                break
            pieces.append((self.starts[j] + self.line(j).index("│") + 1, self.ends[j]))
            j += 1
        texts = []
        for start, end in pieces:
            piece = self.text[start:end].rstrip()
            if boxed and piece.endswith("│"):
                piece = piece[:-1].rstrip()
            texts.append(piece.strip() if len(texts) else piece.strip())
        name = match.group("name")
        value, decoded = _decode_arguments("".join(texts))
        if not decoded and len(texts) > 1:
            value, decoded = _decode_arguments(" ".join(texts))
        raw = "".join(texts) if decoded or len(texts) == 1 else " ".join(texts)
        if name == "final_answer":
            self.emit(LogEventKind.MESSAGE, match.end(), self.ends[j - 1], Actor.AGENT)
        else:
            self.found(_tool_actions(value, name), name, raw, match.end(), self.ends[j - 1])
        if j < self.count and self.line(j).lstrip().startswith("╰"):
            j += 1
        return j

    def autogen_tool(self, i: int, match: re.Match[str]) -> int:
        j = i + 1
        while j < self.count and _STARS.match(self.text, self.starts[j], self.ends[j]) is None and not (
                self.marker(j) is not None or self.is_rule(j)):
            j += 1
        start = self.starts[i + 1] if i + 1 < self.count else self.ends[i]
        label = _ARGUMENTS_LABEL.match(self.text, start, self.ends[i + 1]) if i + 1 < j else None
        if label is not None:
            start = label.end()
        end = self.ends[j - 1] if j > i + 1 else start
        name = match.group("name")
        while end > start and self.text[end - 1] in " \t\r\n":
            end -= 1
        while start < end and self.text[start] in " \t\r\n":
            start += 1
        raw = self.text[start:end]
        value, _ = _decode_arguments(raw)
        self.found(_tool_actions(value, name), name, raw, start, max(start, end))
        if j < self.count and _STARS.match(self.text, self.starts[j], self.ends[j]) is not None:
            j += 1
        return j

    def speaker(self, i: int) -> int:
        """An AutoGen message: the header line, then the text up to the next rule or marker."""
        self.scaffold(self.starts[i], self.ends[i])
        self.speakers += 1
        actor = Actor.SCAFFOLD if self.speakers == 1 else Actor.AGENT
        stop = self.body(i + 1)
        if stop <= i + 1:
            return stop
        start, end = self.starts[i + 1], self.ends[stop - 1]
        for event in scan_text(self.spans, start, end, plain_kind=LogEventKind.MESSAGE):
            code = event.kind in (LogEventKind.CODE, LogEventKind.COMMAND)
            self.events.append(LogEvent(index=len(self.events), kind=event.kind, text=event.text, span=event.span,
                                        language=event.language, location=event.location,
                                        role="scaffold" if actor is Actor.SCAFFOLD else "", actor=actor))
            if code and actor is Actor.AGENT:
                self.after_action = True
        return stop


def _strip_layout(lines: list[str]) -> list[str]:
    """Code lines without the box borders, common indent and line-number column they were drawn with."""
    contents = [line.rstrip(" \t\r") for line in lines]
    filled = [c for c in contents if c.strip()]
    if filled and all(c.lstrip(" \t").startswith("│") for c in filled):
        stripped = []
        for c in contents:
            if not c.strip():
                stripped.append("")
                continue
            c = c.lstrip(" \t")[1:]
            c = c[1:] if c.startswith(" ") else c
            if c.rstrip().endswith("│"):
                c = c.rstrip()[:-1]
            stripped.append(c.rstrip())
        contents = stripped
        filled = [c for c in contents if c.strip()]
    numbers = [_LINE_NUMBER.match(c) for c in contents]
    if len(contents) > 1 and all(numbers):
        values = [int(m.group(1)) for m in numbers]
        if values == list(range(values[0], values[0] + len(values))):
            contents = [c[m.end():] for c, m in zip(contents, numbers)]
            filled = [c for c in contents if c.strip()]
    if filled:
        indent = min(len(c) - len(c.lstrip(" \t")) for c in filled)
        if indent:
            contents = [c[indent:] if c.strip() else "" for c in contents]
    return contents


def read_events(path: str, text: str, notes: list[str] | None = None) -> list[LogEvent]:
    """Events of a framework console transcript, in file order (see the module docstring).

    Parameters
    ----------
    path : str
        The log's POSIX path relative to the run root (goes on every span).
    text : str
        The whole file text (untrusted; only parsed, never run).
    notes : list of str, optional
        Unused (every line is read).

    Returns
    -------
    list of LogEvent
        Indexed from 0. COMMAND (language ``bash``), CODE (``python``) and TOOL_CALL events of
        what the agent ran, OUTPUT events of what it got back, MESSAGE events of its words
        (actor ``agent``) and of the framework's chatter (actor ``scaffold``, role
        ``scaffold``); commands typed at a prompt in text outside the framework's blocks have
        an unknown actor.
    """
    return _Reader(_mask(text), path).run()
