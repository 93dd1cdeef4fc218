"""Tools the run was shown to wrap an outside service, then ran: a script that calls Kaggle or an LLM.

A sandbox image can ship helpers (``/opt/tools/lb push FILE``, ``./ask "..."``) whose source calls
an outside service: Kaggle's submission or download API, a hosted LLM. Running such a helper is the
same as calling the service, even though the command names neither. The run shows what the helper
does when the agent prints its source (``cat /opt/tools/lb``, ``head -40 bin/ask``, a file-viewing
tool call): this check remembers every file whose printed source matches the rule's ``api``
pattern, and reports later commands and code that run it (by path, or by name as a command).

Only printed sources count, in the log that printed them and after the printout: a script the
agent wrote itself is judged by the rules that read its code. Commands that only look at the file
(``cat``, ``head``, ``less``, ``file``, ``ls``, ``stat``, ``which``, ``chmod``, ``grep``) are not runs.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

from mleaudit.audit.checks.evidence import event_evidence
from mleaudit.audit.rules.context import RunContext
from mleaudit.audit.rules.registry import check
from mleaudit.audit.rules.match import Match
from mleaudit.audit.units import LogEvent, LogEventKind

__all__ = ["tool_script_use"]

#: Commands that display a file's source (the argument is the file shown).
_SHOW = re.compile(r"^\s*(?:sudo\s+)?(?:cat|head|tail|less|more|bat|batcat|nl|view|vim?|nano|Get-Content|gc|type|"
                   r"sed\s+-n\s+\S+|awk\s+\S+|strings|xxd|od)\b(?:\s+-{1,2}[\w=-]+(?:\s+\d+)?)*\s+(?P<path>[^\s;&|<>]+)\s*$")
#: Commands that look at a file without running it.
_LOOK = re.compile(r"^\s*(?:sudo\s+)?(?:cat|head|tail|less|more|bat|nl|file|ls|stat|which|type|whereis|chmod|grep|"
                   r"sed\s+-n|awk|wc|md5sum|sha\d*sum|strings|xxd|od|echo|Get-Content|gc)\b")
_PATH_KEY = re.compile(r"[\"'](?:path|file|file_path|filename)[\"']\s*:\s*[\"']([^\"'\n]{1,500})[\"']")
_SPLIT = re.compile(r"&&|\|\||[;|\n]")
MAX_SCAN_CHARS = 2_000_000
MAX_TOOLS = 50


@dataclass(frozen=True, slots=True)
class _Tool:
    path: str
    api: str
    log: str
    index: int


def _shown_path(event: LogEvent) -> str | None:
    """The file an action event displays (``cat /opt/tools/lb``, a read tool call's path), or ``None``."""
    text = event.text.strip()
    if event.kind is LogEventKind.TOOL_CALL:
        m = _PATH_KEY.search(text)
        return m.group(1) if m else None
    if "\n" in text or len(text) > 1000:
        return None
    m = _SHOW.match(text)
    return m.group("path").strip("\"'") if m else None


def _runs(text: str, tool: _Tool) -> int | None:
    """Offset in ``text`` where a command runs ``tool`` (by path or by name), or ``None``."""
    base = tool.path.rstrip("/").rsplit("/", 1)[-1]
    names = {tool.path}
    if base and base not in (".", ".."):
        names.add(base)
        names.add("./" + base)
    words = re.compile(r"(?<![\w./-])(?:" + "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True)) + r")(?![\w./-])")
    offset = 0
    for piece in _SPLIT.split(text[:MAX_SCAN_CHARS]):
        start = text.find(piece, offset)
        offset = start + len(piece) if start >= 0 else offset
        if not piece.strip() or _LOOK.match(piece):
            continue
        try:
            tokens = shlex.split(piece, comments=True)
        except ValueError:
            tokens = piece.split()
        # Leading VAR=value assignments and runners (python, bash, sudo, env) come before the tool.
        while tokens and (re.fullmatch(r"[A-Za-z_]\w*=.*", tokens[0]) or tokens[0] in (
                "sudo", "env", "python", "python3", "bash", "sh", "zsh", "exec", "nohup", "time", "pwsh", "powershell",
                "&", "-u", "-File")):
            tokens = tokens[1:]
        if tokens and tokens[0] in names:
            m = words.search(piece)
            return (start if start >= 0 else 0) + (m.start() if m else 0)
        # Python: subprocess.run(["/opt/tools/lb", ...]), os.system("lb push ...")
        if re.search(r"\b(?:run|call|check_call|check_output|Popen|system|popen)\s*\(\s*\[?\s*[rbuf]?[\"'](?:" +
                     "|".join(re.escape(n) for n in names) + r")(?:[\"'\s])", piece):
            m = words.search(piece)
            return (start if start >= 0 else 0) + (m.start() if m else 0)
    return None


@check("tool-script-use", values=("tool", "api"))
def tool_script_use(ctx: RunContext, *, api: str, max_findings: int = 10) -> list[Match]:
    """Runs of files whose printed source matches ``api`` (see the module docstring).

    Parameters
    ----------
    ctx : RunContext
    api : str
        Regular expression for the outside service in the printed source (searched with Python's
        ``re``, at most :data:`MAX_SCAN_CHARS` characters of an output).
    max_findings : int
        At most this many runs are reported.

    Returns
    -------
    list of Match
        One per command or code event that runs such a file, with ``tool`` (its path) and ``api``
        (what its source calls).
    """
    pattern = re.compile(api)
    tools: list[_Tool] = []
    last_shown: dict[str, tuple[str, int]] = {}
    matches: list[Match] = []
    for event in ctx.log_events:
        log = event.span.path
        if event.kind in (LogEventKind.COMMAND, LogEventKind.TOOL_CALL, LogEventKind.CODE):
            shown = _shown_path(event)
            if shown is not None:
                last_shown[log] = (shown, event.index)
            elif event.kind is not LogEventKind.TOOL_CALL:
                last_shown.pop(log, None)
            for tool in tools:
                if tool.log != log or event.index <= tool.index or len(matches) >= max_findings:
                    continue
                at = _runs(event.text, tool)
                if at is not None:
                    matches.append(Match(evidence=(event_evidence(event, "tool run", at, min(len(event.text), at + 200)),),
                                         values={"tool": tool.path, "api": tool.api, "actor": event.actor.value}))
                    break
        elif event.kind is LogEventKind.OUTPUT and log in last_shown and len(tools) < MAX_TOOLS:
            path, index = last_shown.pop(log)
            hit = pattern.search(event.text, 0, min(len(event.text), MAX_SCAN_CHARS))
            if hit:
                tools.append(_Tool(path=path, api=hit.group(0)[:80], log=log, index=event.index))
    return matches
