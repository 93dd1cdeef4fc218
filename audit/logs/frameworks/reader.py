"""The reader of framework transcripts: events marker by marker, with who wrote each."""

from __future__ import annotations

import re
from typing import Any

from mleaudit.audit.logs.common import EventList, SpanMaker, guess_code_language
from mleaudit.audit.logs.frameworks.arguments import decode_arguments, generic_tool, tool_actions, unfence
from mleaudit.audit.logs.frameworks.markers import FENCE_OPEN, TIMESTAMP, Lines
from mleaudit.audit.logs.keys import Found
from mleaudit.audit.logs.toolcalls import call_text
from mleaudit.audit.logs.text import scan_text
from mleaudit.audit.units import Actor, LogEvent, LogEventKind

__all__ = ["Reader"]

_STARS = re.compile(r"[ \t]*\*{10,}[ \t\r]*$")
_ARGUMENTS_LABEL = re.compile(r"[ \t]*Arguments:[ \t]*")
_LINE_NUMBER = re.compile(r" {0,8}(\d{1,7})(?: |$)")


class Reader(Lines):
    """Reads one transcript line by line; each line is looked at a bounded number of times."""

    def __init__(self, text: str, path: str) -> None:
        super().__init__(text)
        self.spans = SpanMaker(text, path)
        self.events = EventList()
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
        generic = generic_tool(name)
        if not generic or not items:
            self.emit(LogEventKind.TOOL_CALL, start, end, Actor.AGENT, text=call_text(name, raw.strip()))
        for item in items:
            at = self.text.find(item.text, start, end) if item.text.strip() else -1
            if at >= 0:
                self.emit(item.kind, at, at + len(item.text), Actor.AGENT, language=item.language, text=item.text)
            else:
                self.emit(item.kind, start, end, Actor.AGENT, language=item.language, text=item.text)
        self.after_action = True


    def code_event(self, first: int, stop: int) -> None:
        """A CODE/COMMAND event of lines ``[first, stop)`` (fence, borders and indent moved aside)."""
        while first < stop and self.blank(first):
            first += 1
        while stop > first and self.blank(stop - 1):
            stop -= 1
        if stop <= first:
            return
        language = None
        fence = FENCE_OPEN.match(self.text, self.starts[first], self.ends[first])
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
                      and TIMESTAMP.match(self.text, self.starts[i], self.ends[i]) is not None):
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
            value, _ = decode_arguments(raw)
            self.found(tool_actions(value, match.group("name")), match.group("name"), raw, arg_start,
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
        value, decoded = decode_arguments(unfence(raw))
        if decoded and isinstance(value, dict) and not name:
            action = value.get("action") or value.get("tool") or value.get("name")
            if isinstance(action, str) and ("action_input" in value or "tool_input" in value):
                name = action
                value = value.get("action_input", value.get("tool_input"))
        self.found(tool_actions(value, name), name, raw, start, end)

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
        value, decoded = decode_arguments("".join(texts))
        if not decoded and len(texts) > 1:
            value, decoded = decode_arguments(" ".join(texts))
        raw = "".join(texts) if decoded or len(texts) == 1 else " ".join(texts)
        if name == "final_answer":
            self.emit(LogEventKind.MESSAGE, match.end(), self.ends[j - 1], Actor.AGENT)
        else:
            self.found(tool_actions(value, name), name, raw, match.end(), self.ends[j - 1])
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
        value, _ = decode_arguments(raw)
        self.found(tool_actions(value, name), name, raw, start, max(start, end))
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
