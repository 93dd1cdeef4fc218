"""The MLAgentBench scaffold's standard output (``log``): its banner, the scripts' output, echoed responses."""

from __future__ import annotations

import re

from mleaudit.audit.logs.mlagentbench.events import Events
from mleaudit.audit.units import Actor, LogEventKind

__all__ = ["read_stdout"]

_SCAFFOLD_LINE = re.compile(
    r"^(?:Namespace\(|log_dir |.*prepare\.py not found|=+[ \t]*$|Benchmark folder name:|Research problem:|"
    r"Lower level actions enabled:|High level actions enabled:|Read only files:|Agent is up!|Final message:|"
    r"Active Children:|Trying again\.|list index out of range|Step:?[ \t]*\d+[ \t]*$|Executing script now\.\.\.)"
)
_RUN_OUTPUT = re.compile(r"^Executing script now\.\.\.[ \t]*$")
_ECHOED_STEP = re.compile(r"^Step:?[ \t]*\d+[ \t]*$")


def read_stdout(out: Events) -> None:
    """The scaffold's banner and progress lines (scaffold), the output of the scripts it ran
    for the agent (agent), the agent responses it echoed (agent); other lines are not placed."""
    text = out.text
    pos = 0
    header_end = text.find("Agent is up!")
    if header_end != -1:
        pos = text.find("\n", header_end)
        pos = len(text) if pos == -1 else pos + 1
        out.free_text(0, pos, Actor.SCAFFOLD, role="scaffold", code_actor=Actor.SCAFFOLD)
    block_start, block = pos, "unknown"

    def flush(end: int) -> None:
        if block == "output":
            out.add(LogEventKind.OUTPUT, block_start, end, Actor.AGENT, role="tool")
        elif block == "echo":
            out.free_text(block_start, end, Actor.AGENT, role="assistant")
        else:
            out.add(LogEventKind.OUTPUT, block_start, end, Actor.UNKNOWN)

    while pos < len(text):
        line_end = text.find("\n", pos)
        line_end = len(text) if line_end == -1 else line_end
        line = text[pos:line_end].rstrip("\r")
        if _SCAFFOLD_LINE.match(line):
            flush(pos)
            out.add(LogEventKind.MESSAGE, pos, line_end, Actor.SCAFFOLD, role="scaffold")
            block = "output" if _RUN_OUTPUT.match(line) else "echo" if _ECHOED_STEP.match(line) else "unknown"
            block_start = line_end + 1
        pos = line_end + 1
    flush(len(text))
