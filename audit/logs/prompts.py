"""Commands and code typed at a prompt: shell, PowerShell, ``cmd.exe``, Python and IPython prompts.

:func:`match_prompt` reads the command or code typed at a prompt on one line, with the lines it
goes on over (backslash continuations, here-documents, open quotes, ``> ``/``>> ``/``... ``
continuation prompts); :func:`find_prompts` finds every one in a region. Plain transcripts
(:mod:`mleaudit.audit.logs.text`) and the line-oriented readers (``steplog``, ``pylogging``,
``runlog``) alike find typed commands with them; which forms count as a prompt, and why bare
``#``/``%``/``!`` need a known command word (:data:`PROMPT_WORDS`) after them, is told in
:mod:`mleaudit.audit.logs.text`. Every pattern is matched at a line start with bounded
repetitions, so a long line costs linear time.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from mleaudit.audit.logs.common import SHELL_WORDS
from mleaudit.audit.units import LogEventKind

__all__ = ["PROMPT_WORDS", "PromptHit", "find_prompts", "match_prompt"]

#: Command words that a bare ``#``, ``%`` or ``!`` prompt must be followed by (without a
#: ``user@host`` or ``(env)`` part those signs also start headings, comments, percentages and
#: exclamations): the shell words of :data:`~mleaudit.audit.logs.common.SHELL_WORDS` and others an agent
#: types at a prompt. English words that often follow such a sign in prose (``time``, ``make``,
#: ``free``, ``set``, ``done``) are left out.
PROMPT_WORDS = tuple(sorted(set(SHELL_WORDS) | {
    "7z", "accelerate", "chown", "deepspeed", "diff", "docker", "env", "gunzip", "gzip", "ipython", "jq", "jupyter",
    "ln", "locate", "lsof", "md5sum", "nproc", "papermill", "pgrep", "printf", "pwd", "Rscript", "rsync", "scp",
    "sha256sum", "ssh", "stat", "torchrun", "ulimit", "uname", "which", "whoami", "xargs", "zip",
}, key=lambda word: (-len(word), word)))
_WORD_AHEAD = r"(?:" + "|".join(re.escape(w) for w in PROMPT_WORDS) + r")(?=[ \t;&|<>]|$)|\.{0,2}/[\w.~-]|~/"
_KNOWN_COMMAND = re.compile(_WORD_AHEAD)
# Prompts are matched at a line start with ``pattern.match(text, pos, line_end)`` (no ``^``: a
# region may start inside a line, after a log record's prefix). Every repetition is bounded or
# stops at one character class, so a long line costs linear time.
#: Terminal escape sequences a recorded session keeps around its prompt (colours, the window
#: title, bracketed-paste mode); possessive, so runs of them never backtrack.
_ESC = r"(?:\x1b\[[0-9;?]{0,32}[A-Za-z]|\x1b\][^\x07\x1b\n]{0,300}(?:\x07|\x1b\\))"
_A = _ESC + "*+"
_ENV = r"(?P<env>\([^()\s]{1,80}\)[ \t]*)?"
_HOST = (
    r"(?P<host>\[[\w.-]+@[\w.-]+(?:[ \t][^\]\n]{0,200})?\]"  # [user@host dir]$
    r"|[\w.-]+@[\w.-]+" + _A + r"(?::" + _A + r"[^\s$#%>\x1b]*+" + _A + r")?"  # user@host:~/dir$
    r"(?:[ \t]+" + _A + r"[~/][^\s$#%>\x1b]*+" + _A + r")?"  # user@host ~/dir % (zsh)
    r"|(?:ba|z|k|da|fi|tc|c)?sh-\d+(?:\.\d+)*"  # bash-5.1$
    r"|~[^\s$#%>\x1b]*+"  # ~/work$
    r")"
)
#: ``$ cmd``, ``user@host:~/dir$ cmd``, ``(venv) $ cmd``, ``bash-5.1$ cmd``, ``root@box:/# cmd``,
#: ``user@host ~ % cmd`` (zsh) and the bare ``# cmd``/``% cmd`` forms (checked against
#: :data:`PROMPT_WORDS` in :func:`match_prompt`), with terminal escapes around the prompt.
_SHELL_PROMPT = re.compile(
    r"(?:[ \t]|" + _ESC + r")*+" + _ENV + _A + r"(?:" + _HOST + _A + r"[ \t]*+)?" + _A
    + r"(?P<sign>[$#%])" + _A + r"[ \t]+" + _A + r"(?=[A-Za-z_./~\"'])"
)
#: Prompts of zsh themes that end in an arrow: ``\u276f cmd`` (pure, starship), ``\u279c  dir git:(main) cmd``
#: (oh-my-zsh); the arrow itself is the prompt sign.
_ARROW_PROMPT = re.compile(
    r"(?:[ \t]|" + _ESC + r")*+(?:\u276f|\u03bb|\u00bb)" + _A + r"[ \t]++" + _A + r"(?=[A-Za-z_./~\"'])"
    r"|(?:[ \t]|" + _ESC + r")*+\u279c" + _A + r"[ \t]++[^\s\x1b]++" + _A
    + r"(?:[ \t]++git:\([^)\n]{0,200}\))?(?:[ \t]++\u2717)?" + _A + r"[ \t]++" + _A + r"(?=[A-Za-z_./~\"'])"
)
#: ``!cmd``: an IPython or notebook shell escape typed on its own line.
_BANG = re.compile(r"[ \t]*!(?=" + _WORD_AHEAD + r")")
#: PowerShell ``PS C:\work> cmd`` (``PS>`` too) and ``cmd.exe`` ``C:\work>cmd``.
_POWERSHELL = re.compile(r"[ \t]*(?:\([^()\s]{1,80}\)[ \t]*)?PS(?:[ \t]+[^\n>]{0,400})?>[ \t]?")
_CMD_EXE = re.compile(r"[ \t]*[A-Za-z]:\\[^\n>]{0,400}>(?=[^\s>])")
_PS_CONT = re.compile(r"[ \t]*>>(?: |$)")
_PS_HERE_OPEN = re.compile(r"@([\"'])[ \t\r]*$")
_PY_PROMPT = re.compile(r"[ \t]*>>>(?: |$)")
_PY_CONT = re.compile(r"[ \t]*\.\.\.(?: |$)")
_IPY_PROMPT = re.compile(r"[ \t]*In[ \t]?\[\d{0,9}\]:(?: |$)")
_IPY_CONT = re.compile(r"[ \t]*\.\.\.+:(?: |$)")
#: A shell's continuation prompt (``PS2``, ``> ``) on the lines of a command typed over several.
_SHELL_CONT = re.compile(r"[ \t]*>(?: |$)")
_OPEN_END = re.compile(r"(?:\||&&)[ \t\r]*$")
#: Lines that may start a prompt; the rest are skipped without trying each form.
_CANDIDATE = re.compile(r"[ \t]*(?:[$#%!>(\[~\x1b\u279c\u276f\u03bb\u00bb]|PS[ \t>]|In[ \t]?\[|[A-Za-z]:\\|"
                        r"[\w.-]+@|(?:ba|z|k|da|fi|tc|c)?sh-\d)")
#: The line break before a line :data:`_CANDIDATE` matches (no alternative of it spans a line
#: break, so the line's end does not change the answer): :func:`find_prompts` visits only these.
_CANDIDATE_LINE = re.compile(r"\n(?=" + _CANDIDATE.pattern + ")")
_HEREDOC = re.compile(r"<<(-?)[ \t]*(['\"]?)([A-Za-z_][\w]*)\2")


@dataclass(frozen=True, slots=True)
class PromptHit:
    """A command or code typed at a prompt, found by :func:`match_prompt`.

    Attributes
    ----------
    kind : LogEventKind
        COMMAND (shell, PowerShell, ``cmd.exe``) or CODE (Python and IPython prompts).
    language : str
        ``"bash"`` for commands (PowerShell too: the closest grammar there is), ``"python"``.
    line_start : int
        Where the prompt's line starts.
    start, end : int
        The typed text: after the first prompt, to the end of its last line (trailing blanks
        left to the caller).
    text : str or None
        The typed text without the continuation prompts (``... ``, ``>> ``, ``> ``) when it had
        any, else ``None`` (the text is ``file_text[start:end]``).
    """

    kind: LogEventKind
    language: str
    line_start: int
    start: int
    end: int
    text: str | None = None


def _line_end(text: str, pos: int, limit: int) -> int:
    found = text.find("\n", pos, limit)
    return limit if found == -1 else found


def _quote_state(text: str, start: int, end: int, state: str) -> str:
    """The shell quote left open after ``text[start:end]`` (``'``, ``"`` or ``""``), from ``state``."""
    pos = start
    while pos < end:
        char = text[pos]
        if state == "":
            if char == "\\":
                pos += 1
            elif char in "'\"":
                state = char
            elif char == "#" and (pos == start or text[pos - 1] in " \t"):
                return state  # a comment: nothing after it opens a quote
        elif state == '"' and char == "\\":
            pos += 1
        elif char == state:
            state = ""
        pos += 1
    return state


def _shell_block(text: str, start: int, line_end: int, limit: int) -> tuple[int, list[tuple[int, int]], bool]:
    """The lines of a shell command typed at a prompt: ``(end, pieces, prompted)``.

    The command goes on past its first line while it asks for more: a trailing backslash, a
    here-document whose delimiter has not come, or, on lines that carry the continuation
    prompt ``> ``, an open quote or a trailing ``|``/``&&``. ``pieces`` are the typed parts of
    each line; ``prompted`` says whether any line carried ``> `` (then the pieces differ from
    the file text).
    """
    pieces = [(start, line_end)]
    pending: list[tuple[str, bool]] = [(m.group(3), m.group(1) == "-")
                                       for m in _HEREDOC.finditer(text, start, line_end)]
    quote = "" if pending else _quote_state(text, start, line_end, "")
    prompted: bool | None = None  # None: not known yet whether continuation lines carry ``> ``
    end = line_end
    while end < limit:
        last_start, last_end = pieces[-1]
        backslash = text[last_start:last_end].rstrip().endswith("\\")
        open_end = quote or _OPEN_END.search(text, last_start, last_end) is not None
        if not (pending or backslash or open_end):
            break
        next_start = end + 1
        next_end = _line_end(text, next_start, limit)
        cont = _SHELL_CONT.match(text, next_start, next_end)
        if cont is not None and prompted is not False:
            prompted, content_start = True, cont.end()
        elif prompted or not (pending or backslash):
            break  # an open quote or pipe continues only on ``> `` lines
        else:
            prompted, content_start = False, next_start
        pieces.append((content_start, next_end))
        end = next_end
        if pending:
            line = text[content_start:next_end].rstrip("\r")
            delimiter, strip_tabs = pending[0]
            if (line.lstrip("\t") if strip_tabs else line) == delimiter:
                pending.pop(0)
        else:
            pending.extend((m.group(3), m.group(1) == "-") for m in _HEREDOC.finditer(text, content_start, next_end))
            quote = "" if pending else _quote_state(text, content_start, next_end, quote)
    return end, pieces, bool(prompted)


def _powershell_block(text: str, start: int, line_end: int, limit: int) -> tuple[int, list[tuple[int, int]], bool]:
    """The lines of a PowerShell command: ``>> `` continuation lines (prompt removed), here-strings
    (``@"`` ... ``"@``) and backtick continuations typed without a continuation prompt."""
    pieces = [(start, line_end)]
    prompted = False
    here = _PS_HERE_OPEN.search(text, start, line_end)
    closer = here.group(1) + "@" if here is not None else ""
    end = line_end
    while end < limit:
        next_start = end + 1
        next_end = _line_end(text, next_start, limit)
        cont = _PS_CONT.match(text, next_start, next_end)
        last_start, last_end = pieces[-1]
        if cont is not None:
            prompted, content_start = True, cont.end()
        elif closer or text[last_start:last_end].rstrip().endswith("`"):
            content_start = next_start
        else:
            break
        pieces.append((content_start, next_end))
        end = next_end
        if closer and text.startswith(closer, content_start):
            closer = ""
        if not closer:
            here = _PS_HERE_OPEN.search(text, content_start, next_end)
            closer = here.group(1) + "@" if here is not None else ""
    return end, pieces, prompted


def _prefixed_block(text: str, start: int, line_end: int, limit: int,
                    cont: re.Pattern[str]) -> tuple[int, list[tuple[int, int]], bool]:
    """A first line and the following lines that carry the continuation prompt ``cont``."""
    pieces = [(start, line_end)]
    end = line_end
    while end < limit:
        next_end = _line_end(text, end + 1, limit)
        match = cont.match(text, end + 1, next_end)
        if match is None:
            break
        pieces.append((match.end(), next_end))
        end = next_end
    return end, pieces, len(pieces) > 1


def match_prompt(text: str, pos: int, limit: int, *, verbatim: bool = False) -> PromptHit | None:
    """The command or code typed at a prompt on the line starting at ``pos``, else ``None``.

    Shell prompts (``$ ``, ``user@host:~$ ``, ``(venv) $ ``, ``bash-5.1$ ``, ``root@box:/# ``,
    zsh ``% ``, bare ``# `` and ``% `` only before a known command word), ``!cmd`` shell
    escapes, PowerShell ``PS C:\\dir> `` (with ``>> `` lines) and ``cmd.exe`` ``C:\\dir>``
    give COMMAND; Python ``>>> `` (``... `` lines) and IPython ``In [3]: `` (``...: `` lines)
    give CODE.

    Parameters
    ----------
    text : str
        The whole file text.
    pos : int
        Where a line starts (or the region of a log record's message does).
    limit : int
        The end of the region; nothing past it is read.
    verbatim : bool
        Keep continuation prompts in the text, so that the text is the file's slice
        ``[start:end]`` (readers that promise verbatim events).

    Returns
    -------
    PromptHit or None
    """
    line_end = _line_end(text, pos, limit)
    if _CANDIDATE.match(text, pos, line_end) is None:
        return None
    kind, language = LogEventKind.COMMAND, "bash"
    block = None
    shell = _SHELL_PROMPT.match(text, pos, line_end)
    if shell is not None and (shell.group("sign") == "$" or shell.group("host") or shell.group("env")
                              or _KNOWN_COMMAND.match(text, shell.end(), line_end)):
        block = _shell_block(text, shell.end(), line_end, limit)
    elif (arrow := _ARROW_PROMPT.match(text, pos, line_end)) is not None:
        block = _shell_block(text, arrow.end(), line_end, limit)
    elif (bang := _BANG.match(text, pos, line_end)) is not None:
        block = _shell_block(text, bang.end(), line_end, limit)
    elif (ps := _POWERSHELL.match(text, pos, line_end)) is not None or (
            ps := _CMD_EXE.match(text, pos, line_end)) is not None:
        if not text[ps.end():line_end].strip():
            return None
        block = _powershell_block(text, ps.end(), line_end, limit)
    else:
        kind, language = LogEventKind.CODE, "python"
        if (py := _PY_PROMPT.match(text, pos, line_end)) is not None:
            block = _prefixed_block(text, py.end(), line_end, limit, _PY_CONT)
        elif (ipy := _IPY_PROMPT.match(text, pos, line_end)) is not None:
            block = _prefixed_block(text, ipy.end(), line_end, limit, _IPY_CONT)
    if block is None:
        return None
    end, pieces, prompted = block
    typed = None
    if prompted and not verbatim:
        typed = "\n".join(text[s:e].rstrip("\r") for s, e in pieces).rstrip()
    return PromptHit(kind=kind, language=language, line_start=pos, start=pieces[0][0], end=end, text=typed)


def find_prompts(text: str, start: int, end: int, *, verbatim: bool = True) -> list[PromptHit]:
    """Every command or code typed at a prompt in ``text[start:end]`` (see :func:`match_prompt`).

    For readers of line-oriented logs (a log record's message, a step's observation): ``start``
    is taken as a line start.

    Parameters
    ----------
    text : str
        The whole file text.
    start, end : int
        The region.
    verbatim : bool
        See :func:`match_prompt`; by default each hit's text is the file's slice.

    Returns
    -------
    list of PromptHit
        In text order, not overlapping.
    """
    hits: list[PromptHit] = []
    if start >= end:
        return hits
    # The region's first line is tried as it is (a region may start inside a line); every later
    # line that match_prompt would look at is found by one search for its line break.
    hit = match_prompt(text, start, end, verbatim=verbatim)
    if hit is not None:
        hits.append(hit)
    after = start if hit is None else hit.end
    candidates = _CANDIDATE_LINE.finditer(text, start, end)
    for line_break in candidates:
        pos = line_break.end()
        if pos <= after:
            continue  # inside the last hit's block, or its own first line
        hit = match_prompt(text, pos, end, verbatim=verbatim)
        if hit is not None:
            hits.append(hit)
            after = hit.end
    return hits
