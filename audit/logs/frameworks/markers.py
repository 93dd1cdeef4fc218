"""The lines of a framework transcript and what each starts: markers, rules, headers, block ends.

Every pattern is anchored at a line start and linear; :class:`Lines` looks at each line a bounded
number of times. :class:`Modes` says which frameworks a text shows the markers of, so a line is
only tried against the patterns of those frameworks.
"""

from __future__ import annotations

import re
from typing import Any

from mleaudit.audit.logs.common import AtLineStart, guess_code_language

__all__ = ["FENCE_OPEN", "TIMESTAMP", "Lines", "Modes", "line_bounds", "mask"]

#: Lines an ``Invoking:`` argument may run over before its closing backtick.
_MAX_ARG_LINES = 2000

# Terminal colour and cursor escapes; replaced by blanks of the same length.
_ANSI = re.compile(r"\x1b\[[0-9;?]{0,40}[A-Za-z]|\x1b\][^\x07\x1b\n]{0,400}(?:\x07|\x1b\\)")

_RULE_CHARS = frozenset("─━═-╌┄┈╴╶╰╯╭╮┌┐└┘ \t")
_BOX_RULE_CHARS = frozenset("─━═╌┄┈╴╶")

# Detection: each pattern tried at line starts only (AtLineStart: at the start of the text and
# after each line break), as ``^`` in multiline mode would.
_CHAIN_DETECT = AtLineStart(r"[ \t]*(?:> Entering new [^\n]{0,200}chain\.\.\.|Invoking: `[^`\n]{1,200}` with `)")
_SMOL_DETECT = AtLineStart(
    r"[ \t│╭─]*(?:Executing (?:parsed|this) code:|Calling tool: '[^'\n]{1,200}' with arguments:)"
)
_AUTOGEN_DETECT = AtLineStart(
    r"[ \t]*(?:>>>>>>>> (?:EXECUTING|USING AUTO REPLY|NO HUMAN INPUT)|exitcode: -?\d{1,6} \(execution (?:succeeded|failed)\))"
)
_CREW_TOOL_DETECT = AtLineStart(r"[ \t]*(?:#{1,3}[ \t]*)?Using [Tt]ool:[ \t]*\S")
_CREW_INPUT_DETECT = AtLineStart(r"[ \t]*(?:#{1,3}[ \t]*)?Tool Input:")
#: Lines whose first character may start a scaffold printout header (:func:`_generic_headers`).
_HEADER_CANDIDATE = AtLineStart(r"[-=#*~\[ECRG]")

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
TIMESTAMP = re.compile(r"[ \t]*[\[(]?(?:\d{4}[-/]\d\d[-/]\d\d[ T_]\d\d:\d\d|\d\d:\d\d:\d\d\b)")
FENCE_OPEN = re.compile(r"[ \t]*(?P<fence>`{3,}|~{3,})[ \t]*(?P<lang>[\w+.-]{0,40})[ \t\r]*$")
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


def mask(text: str) -> str:
    """``text`` with terminal escapes replaced by blanks (same length, same offsets)."""
    if "\x1b" not in text:
        return text
    return _ANSI.sub(lambda m: " " * len(m.group()), text)


class Modes:
    """Which frameworks a text shows the markers of."""

    __slots__ = ("autogen", "chain", "crew", "generic", "smol")

    def __init__(self, text: str) -> None:
        self.chain = _CHAIN_DETECT.search(text)
        self.smol = _SMOL_DETECT.search(text)
        self.autogen = _AUTOGEN_DETECT.search(text)
        self.crew = _CREW_TOOL_DETECT.search(text) and _CREW_INPUT_DETECT.search(text)
        self.generic = _generic_headers(text)

    def any(self) -> bool:
        return self.chain or self.smol or self.autogen or self.crew or self.generic


def line_bounds(text: str) -> tuple[list[int], list[int]]:
    """``(starts, ends)`` of every line of ``text``; an end stops before a ``\\r`` ending the line."""
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


def _line_end(text: str, start: int) -> tuple[int, int]:
    """``(end, line break)`` of the line starting at ``start``: its end as :func:`line_bounds`
    gives it (before a ``\\r`` ending it) and where its ``\\n`` is (-1: the last line)."""
    nl = text.find("\n", start)
    end = len(text) if nl == -1 else nl
    return (end - 1 if end > start and text[end - 1] == "\r" else end), nl


def _generic_headers(text: str) -> bool:
    """Whether a scaffold code header is followed by a line of code."""
    # The lines line_bounds gives, visited from the candidates' line starts on: a header starts
    # with one of "-=#*~[ECRG" (never an empty line), and the line after it that is not empty
    # is looked at.
    for start, _ in _HEADER_CANDIDATE.matches(text):
        end, nl = _line_end(text, start)
        if _header_kind(text, start, end) != "code":
            continue
        while nl != -1:
            next_start = nl + 1
            next_end, nl = _line_end(text, next_start)
            if next_start == next_end:
                continue
            if (_CODE_START.match(text, next_start, next_end) is not None
                    or guess_code_language(text[next_start:next_end]) == "bash"):
                return True
            break
    return False


class Lines:
    """A transcript's lines (start and end offsets, ``\\r`` dropped) and the markers and blocks they make."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.starts, self.ends = line_bounds(text)
        self.count = len(self.starts)
        self.modes = Modes(text)

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
        if TIMESTAMP.match(self.text, start, end) is not None and not self.text[start].isspace():
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
        if j < self.count and (fence := FENCE_OPEN.match(self.text, self.starts[j], self.ends[j])):
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
