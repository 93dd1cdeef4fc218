"""Write sites in shell code: a small quote-aware lexer (:func:`split_shell_commands`), then each command's destinations.

Redirects, ``tee``, copy commands, downloads, in-place edits, extraction folders, ``dd of=`` and
interpreter commands whose arguments name a path. Here-document bodies are not read as commands.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from mleaudit.audit.checks.writes.site import WriteSite
from mleaudit.audit.units import CodeUnit

#: Shell text longer than this is cut before lexing (a command is never this long).
MAX_SHELL_CHARS = 2_000_000

_WRAPPERS = frozenset({"sudo", "env", "timeout", "nice", "nohup", "time", "stdbuf", "command", "exec", "xargs",
                       "ionice", "taskset", "setsid", "unbuffer"})
_WRAPPER_VALUE_OPTIONS = {
    "sudo": {"-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-U"},
    "timeout": {"-k", "-s", "--kill-after", "--signal"},
    "nice": {"-n"},
    "ionice": {"-c", "-n", "-p"},
    "xargs": {"-I", "-n", "-P", "-L", "-d", "-E", "-s", "-a"},
    "env": {"-u", "-C", "-S"},
    "stdbuf": {"-i", "-o", "-e"},
}
_KEYWORDS = frozenset({"do", "then", "else", "elif", "if", "while", "until", "!", "exec"})
_COPY_COMMANDS = frozenset({"cp", "mv", "install", "rsync", "ln", "scp"})
INTERPRETERS = re.compile(r"^(?:python[\d.]*|ipython[\d.]*|pypy[\d.]*|Rscript|R|julia|node|bash|sh|zsh|dash|"
                           r"jupyter|papermill|perl|ruby)$")
SCRIPT_SUFFIX = re.compile(r"\.(?:py|pyw|ipynb|sh|bash|R|r|jl|js)$")
_INLINE_WRITE = re.compile(r"to_csv|write_csv|savetxt|write_text|write_bytes|\bopen\s*\(|copy|move|rename|\.write\(")
_VALIDATION_HELPER = re.compile(r"validat", re.IGNORECASE)


@dataclass(frozen=True, slots=True, kw_only=True)
class ShellCommand:
    """One simple shell command: its words (quotes removed) and its redirects.

    Attributes
    ----------
    words : tuple of (str, int, int)
        Each word with its 0-based, half-open character offsets in the shell text.
    redirects : tuple of (str, str, int, int)
        ``(operator, target, start, end)``: ``>``, ``>>``, ``&>``, ``<`` ... and the word after it.
    """

    words: tuple[tuple[str, int, int], ...]
    redirects: tuple[tuple[str, str, int, int], ...] = ()

    @property
    def start(self) -> int:
        offsets = [w[1] for w in self.words] + [r[2] for r in self.redirects]
        return min(offsets) if offsets else 0

    @property
    def end(self) -> int:
        offsets = [w[2] for w in self.words] + [r[3] for r in self.redirects]
        return max(offsets) if offsets else 0


_HEREDOC = re.compile(r"<<(-?)[ \t]*(['\"]?)([A-Za-z_]\w*)\2")


def _blank_heredocs(text: str) -> str:
    """``text`` with here-document bodies replaced by spaces (offsets kept)."""
    out = list(text)
    pos = 0
    while True:
        match = _HEREDOC.search(text, pos)
        if match is None:
            return "".join(out)
        line_end = text.find("\n", match.end())
        if line_end == -1:
            return "".join(out)
        delimiter, strip_tabs = match.group(3), match.group(1) == "-"
        scan = line_end + 1
        end = len(text)
        while scan < len(text):
            nxt = text.find("\n", scan)
            nxt = len(text) if nxt == -1 else nxt
            line = text[scan:nxt]
            if (line.lstrip("\t") if strip_tabs else line).rstrip("\r") == delimiter:
                end = nxt
                break
            scan = nxt + 1
        for i in range(line_end + 1, end):
            if out[i] != "\n":
                out[i] = " "
        pos = max(end, match.end())


def split_shell_commands(text: str) -> list[ShellCommand]:
    """Split shell text into simple commands (quote-aware; ``;``, ``&&``, ``||``, ``|``, ``&``,
    newlines, parentheses, braces and ``$(``/backticks separate commands).

    Parameters
    ----------
    text : str
        Shell source (untrusted; only lexed). Here-document bodies are skipped.

    Returns
    -------
    list of ShellCommand
        In text order; comments are dropped.
    """
    text = _blank_heredocs(text[:MAX_SHELL_CHARS])
    commands: list[ShellCommand] = []
    words: list[tuple[str, int, int]] = []
    redirects: list[tuple[str, str, int, int]] = []
    pending: list = []  # [operator, start] waiting for its target word
    buf: list[str] = []
    word_start = -1
    n = len(text)
    i = 0

    def end_word(at: int) -> None:
        nonlocal buf, word_start
        if word_start < 0:
            return
        word = "".join(buf)
        if pending:
            op, op_start = pending.pop()
            if op != "skip":
                redirects.append((op, word, op_start, at))
        else:
            words.append((word, word_start, at))
        buf, word_start = [], -1

    def end_command() -> None:
        nonlocal words, redirects
        if words or redirects:
            commands.append(ShellCommand(words=tuple(words), redirects=tuple(redirects)))
        words, redirects = [], []
        pending.clear()

    while i < n:
        c = text[i]
        if c in " \t\r":
            end_word(i)
            i += 1
        elif c == "\\":
            if i + 1 < n and text[i + 1] == "\n":
                end_word(i)
                i += 2
                continue
            if word_start < 0:
                word_start = i
            if i + 1 < n:
                buf.append(text[i + 1])
            i += 2
        elif c in "'\"":
            if word_start < 0:
                word_start = i
            close = i + 1
            while close < n and text[close] != c:
                close += 2 if (c == '"' and text[close] == "\\") else 1
            buf.append(text[i + 1 : min(close, n)])
            i = close + 1
        elif c == "#" and word_start < 0:
            nl = text.find("\n", i)
            i = n if nl == -1 else nl
        elif c == "$" and i + 1 < n and text[i + 1] in "({":
            if text[i + 1] == "(":
                end_word(i)
                end_command()
                i += 2
            else:
                close = text.find("}", i)
                close = n - 1 if close == -1 else close
                if word_start < 0:
                    word_start = i
                buf.append(text[i : close + 1])
                i = close + 1
        elif c in ";&|\n()`{}":
            if c == "&" and i + 1 < n and text[i + 1] == ">":
                end_word(i)
                op = "&>>" if text[i + 2 : i + 3] == ">" else "&>"
                pending[:] = [[op, i]]
                i += len(op)
                continue
            end_word(i)
            end_command()
            i += 1
        elif c in "<>":
            fd_only = word_start >= 0 and "".join(buf).isdigit() and word_start + len(buf) == i
            if fd_only:
                buf, word_start = [], -1
            else:
                end_word(i)
            j = i
            while j < n and text[j] in "<>&|":
                j += 1
            op = text[i:j]
            if op.startswith("<<") or op in ("<&", ">&") or op.endswith("&"):
                # Here-document delimiters and fd duplications have no file target.
                pending[:] = [["skip", i]]
            else:
                pending[:] = [[op, i]]
            i = j
        else:
            if word_start < 0:
                word_start = i
            buf.append(c)
            i += 1
    end_word(n)
    end_command()
    return commands


def strip_wrappers(words: list[tuple[str, int, int]]) -> list[tuple[str, int, int]]:
    i = 0
    while i < len(words):
        word = words[i][0]
        if re.match(r"^[A-Za-z_]\w*=", word):
            i += 1
            continue
        if word in _KEYWORDS:
            i += 1
            continue
        name = word.rsplit("/", 1)[-1]
        if name not in _WRAPPERS:
            break
        i += 1
        value_options = _WRAPPER_VALUE_OPTIONS.get(name, set())
        while i < len(words) and (words[i][0].startswith("-") or re.match(r"^[A-Za-z_]\w*=", words[i][0])):
            i += 2 if words[i][0] in value_options else 1
        if name == "timeout" and i < len(words) and re.match(r"^\d+(?:\.\d+)?[smhd]?$", words[i][0]):
            i += 1
    return words[i:]


def split_positional(words: list[tuple[str, int, int]], value_options: set[str]) -> tuple[list[str], dict[str, str]]:
    positional: list[str] = []
    options: dict[str, str] = {}
    i = 0
    while i < len(words):
        word = words[i][0]
        if word == "--":
            positional.extend(w[0] for w in words[i + 1:])
            break
        if word.startswith("--") and "=" in word:
            key, value = word.split("=", 1)
            options[key] = value
        elif word in value_options and i + 1 < len(words):
            options[word] = words[i + 1][0]
            i += 1
        elif word.startswith("-") and len(word) > 1:
            # -ofile / -Ppath glued forms
            for opt in value_options:
                if len(opt) == 2 and word.startswith(opt) and len(word) > 2:
                    options[opt] = word[2:]
        else:
            positional.append(word)
        i += 1
    return positional, options


def _command_sites(command: ShellCommand) -> list[WriteSite]:
    sites: list[WriteSite] = []

    def add(kind: str, target: str, sources: tuple[str, ...] = ()) -> None:
        sites.append(WriteSite(start=command.start, end=command.end, kind=kind, target=target, resolved=target,
                               literal=True, sources=sources))

    for op, target, _, _ in command.redirects:
        if ">" in op:
            add("redirect", target)
    words = strip_wrappers(list(command.words))
    if not words:
        return sites
    name = words[0][0].rsplit("/", 1)[-1]
    args = words[1:]
    if name in _COPY_COMMANDS:
        positional, options = split_positional(args, {"-t", "--target-directory", "-S", "--suffix", "-m", "--mode",
                                                 "-o", "-g", "--owner", "--group", "-e"})
        target = options.get("-t") or options.get("--target-directory")
        if target is None and len(positional) >= 2:
            target, positional = positional[-1], positional[:-1]
        if target is not None:
            add("move" if name == "mv" else "copy", target, tuple(positional))
    elif name == "tee":
        positional, _ = split_positional(args, set())
        for target in positional:
            add("tee", target)
    elif name == "curl":
        _, options = split_positional(args, {"-o", "--output", "-d", "--data", "-F", "--form", "-H", "--header", "-X",
                                        "--request", "-u", "--user", "-A", "-e", "-w", "-T", "--upload-file"})
        target = options.get("-o") or options.get("--output")
        if target:
            add("download", target)
    elif name == "wget":
        _, options = split_positional(args, {"-O", "--output-document", "-P", "--directory-prefix"})
        target = next((options[k] for k in ("-O", "--output-document", "-P", "--directory-prefix") if k in options), None)
        if target:
            add("download", target)
    elif name in ("sed", "perl") and any(w[0].startswith("-i") or (w[0].startswith("-") and "i" in w[0][1:]
                                                                  and not w[0].startswith("--")) for w in args):
        positional, options = split_positional(args, {"-e", "--expression", "-f", "--file"})
        files = positional if ("-e" in options or "--expression" in options or "-f" in options) else positional[1:]
        for target in files:
            add("edit", target)
    elif name in ("unzip", "tar", "7z", "bsdtar"):
        _, options = split_positional(args, {"-d", "-C", "--directory", "-o", "-f", "-x"})
        target = options.get("-d") or options.get("-C") or options.get("--directory")
        if target:
            add("extract", target)
    elif name == "dd":
        for word, _, _ in args:
            if word.startswith("of="):
                add("redirect", word[3:])
    elif INTERPRETERS.match(name):
        positional, options = split_positional(args, {"-c", "-m", "-e", "--to", "--output", "-p", "--ExecutePreprocessor.timeout"})
        inline = options.get("-c") or options.get("-e")
        if inline and _INLINE_WRITE.search(inline):
            add("inline", inline)
        script = next((p for p in positional if SCRIPT_SUFFIX.search(p)), None)
        if script is not None and _VALIDATION_HELPER.search(script.rsplit("/", 1)[-1]):
            return sites
        for value in [p for p in positional if p != script] + [v for k, v in options.items() if k not in ("-c", "-e")]:
            add("script-argument", value)
    return sites


def find_shell_write_sites(unit: CodeUnit) -> list[WriteSite]:
    """Write sites of a shell unit (see the module docstring for what counts).

    Parameters
    ----------
    unit : CodeUnit
        A unit with ``language == "bash"`` (or any shell text).

    Returns
    -------
    list of WriteSite
        In text order; offsets are those of the whole simple command.
    """
    sites: list[WriteSite] = []
    for command in split_shell_commands(unit.text):
        sites.extend(_command_sites(command))
    return sites
