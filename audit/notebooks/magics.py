"""IPython syntax in notebook code: magics and shell escapes, commented out (:func:`split_magics`).

``%magic``, ``%%cell`` magics, ``!shell``, ``var = !shell`` and ``obj?`` are commented out so the code
still parses, every line kept in place; the shell commands among them are returned as
:class:`ShellCommand` records so that rules can check them as bash.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True, slots=True, kw_only=True)
class ShellCommand:
    """A shell command written in IPython syntax.

    Parameters
    ----------
    text : str
        The command as bash would read it, verbatim from the source: ``pip install timm`` for
        ``!pip install timm`` or ``%pip install timm``; the whole body of a ``%%bash`` cell.
    magic : str
        How it was written: ``"!"``, ``"!!"``, ``"%pip"``, ``"%conda"``, ``"%system"``,
        ``"%sx"``, ``"%%bash"``, ``"%%sh"``, ``"%%script"``, ``"%%writefile"`` (a shell script);
        ``pip install x`` typed without ``%`` (IPython's automagic) is recorded as ``"%pip"``.
    cell_index : int
        0-based index of the notebook cell among all cells; ``-1`` outside notebooks.
    line : int
        1-based line of the code text where the command starts.
    start, end : int
        0-based, half-open character offsets of ``text`` in the verbatim code text
        (:attr:`NotebookCode.raw_text`), where ``raw_text[start:end] == text``.
    """

    text: str
    magic: str
    cell_index: int
    line: int
    start: int
    end: int


#: Cell magics whose body is Python; any other cell magic's body is commented out.
_PYTHON_CELL_MAGICS = frozenset({"time", "timeit", "capture", "prun", "debug", "python", "python3", "pypy"})
#: Cell magics whose body runs in a shell.
_SHELL_CELL_MAGICS = frozenset({"bash", "sh", "system"})
#: Line magics that run a package manager: ``%pip install x`` runs ``pip install x``, which
#: is the magic's own text without the ``%``.
_PACKAGE_MAGICS = frozenset({"pip", "conda", "mamba"})
#: Line magics whose argument is a shell command line.
_SYSTEM_MAGICS = frozenset({"system", "sx"})

_SHELL_ESCAPE = re.compile(r"^([ \t]*)(?:[A-Za-z_][\w.,\s]*=[ \t]*)?(!!?)(.*)$")
_LINE_MAGIC = re.compile(r"^([ \t]*)(?:[A-Za-z_][\w.,\s]*=[ \t]*)?%(\w+)(.*)$")
_CELL_MAGIC = re.compile(r"^%%(\w+)[ \t]*(.*)$")
#: IPython's automagic runs ``pip install x`` typed without the ``%`` as ``%pip install x``.
_AUTOMAGIC = re.compile(
    r"^([ \t]*)(pip|conda|mamba)[ \t]+"
    r"(?=(?:install|uninstall|download|list|show|freeze|create|update|remove)\b)(.*)$"
)
_HELP = re.compile(r"^[ \t]*(?:\?\??[\w.]+|[\w.]+\?\??)[ \t]*$")


def _comment(line: str) -> str:
    stripped = line.lstrip(" \t")
    indent = line[: len(line) - len(stripped)]
    return f"{indent}# {stripped}" if stripped else line


def split_magics(source: str, *, cell_index: int = -1) -> tuple[str, tuple[ShellCommand, ...]]:
    """Comment out IPython-only syntax in one block of code and collect its shell commands.

    Parameters
    ----------
    source : str
        One cell (or one block of code sent to an IPython kernel).
    cell_index : int, optional
        Recorded on each :class:`ShellCommand` (``-1`` when not a notebook cell).

    Returns
    -------
    (str, tuple of ShellCommand)
        The code with every IPython-only line turned into a comment (same number of lines,
        so line numbers stay valid), and the shell commands with offsets into ``source``.

    Notes
    -----
    Like IPython's own line transforms this works line by line, so a ``!`` or ``%`` at the start
    of a line inside a triple-quoted string is treated as IPython syntax too.

    Examples
    --------
    >>> text, cmds = split_magics("%matplotlib inline\\n!pip install timm\\nimport timm")
    >>> print(text)
    # %matplotlib inline
    # !pip install timm
    import timm
    >>> cmds[0].text, cmds[0].magic, cmds[0].line
    ('pip install timm', '!', 2)
    """
    if "!" not in source and "%" not in source and "?" not in source:
        return source, ()
    lines = source.split("\n")
    offsets = []
    pos = 0
    for line in lines:
        offsets.append(pos)
        pos += len(line) + 1
    out = list(lines)
    commands: list[ShellCommand] = []

    def add(magic: str, start: int, end: int, first_line: int) -> None:
        text = source[start:end]
        if text.strip():
            commands.append(
                ShellCommand(text=text, magic=magic, cell_index=cell_index, line=first_line + 1, start=start, end=end)
            )

    first = next((i for i, line in enumerate(lines) if line.strip()), None)
    if first is not None:
        cell = _CELL_MAGIC.match(lines[first])
        if cell is not None:
            name, args = cell.group(1), cell.group(2).strip()
            out[first] = _comment(lines[first])
            body_start = first + 1
            body_python = name in _PYTHON_CELL_MAGICS or (name == "script" and args.startswith("python"))
            body_shell = name in _SHELL_CELL_MAGICS or (name == "script" and re.match(r"(ba|z)?sh\b", args) is not None)
            if name == "writefile":
                target = args.split()[-1] if args.split() else ""
                body_python = target.endswith((".py", ".pyw"))
                body_shell = target.endswith((".sh", ".bash"))
            if body_shell and body_start < len(lines):
                add(f"%%{name}", offsets[body_start], len(source), body_start)
            if not body_python:
                for i in range(body_start, len(lines)):
                    out[i] = _comment(lines[i])
                return "\n".join(out), tuple(commands)

    i = 0
    while i < len(lines):
        line = lines[i]
        escape = _SHELL_ESCAPE.match(line)
        magic = None if escape else (_LINE_MAGIC.match(line) or _AUTOMAGIC.match(line))
        if escape is None and magic is None:
            if _HELP.match(line):
                out[i] = _comment(line)
            i += 1
            continue
        # A trailing backslash continues an IPython command on the next line.
        last = i
        while lines[last].endswith("\\") and last + 1 < len(lines):
            last += 1
        for j in range(i, last + 1):
            out[j] = _comment(lines[j])
        end = offsets[last] + len(lines[last])
        if escape is not None:
            add(escape.group(2), offsets[i] + escape.start(3), end, i)
        elif magic is not None and magic.group(2) in _PACKAGE_MAGICS:
            add(f"%{magic.group(2)}", offsets[i] + magic.start(2), end, i)
        elif magic is not None and magic.group(2) in _SYSTEM_MAGICS:
            start = offsets[i] + magic.start(3)
            while start < end and source[start] in " \t":
                start += 1
            add(f"%{magic.group(2)}", start, end, i)
        i = last + 1
    return "\n".join(out), tuple(commands)
