"""Jupyter notebooks as code: the joined code cells, a cell/line map, and the shell escapes.

Notebooks are read as untrusted JSON (:func:`grading.untrusted_json.loads`: nesting bounded)
with nbformat's v4 layout, v3 worksheets flattened as nbformat's upgrade does (formats 1 and 2
through nbformat itself), and never executed. Only code cells' source and the kernel metadata
are read, so the work is linear in the file whatever it holds (100,000 cells, outputs of any
size).
The code text joins the code cells with one blank line between cells, each cell stripped of
trailing newlines, plus a final newline: the same text Dolos compares, so a notebook and its
``.py`` export give the same tokens. IPython syntax that is not Python (``%magic``, ``%%cell``
magics, ``!shell``, ``var = !shell``, ``obj?``) is commented out in :attr:`NotebookCode.text`
so the code still parses, keeping every line in place; the shell commands among it
(``!cmd``, ``%pip``, automagic ``pip install``, ``%%bash`` bodies, ...) are returned as :class:`ShellCommand` records so
rules can check them as bash. :func:`split_magics` does the same for one block of IPython code
found elsewhere (a log's ``run_ipython`` event).
"""

from __future__ import annotations

import json
import logging
import re
import warnings
from dataclasses import dataclass
from typing import Any

import nbformat

from audit.errors import AuditError
from grading import untrusted_json
from audit.units import CellRange

__all__ = ["NotebookError", "ShellCommand", "NotebookCode", "read_notebook", "split_magics"]

logger = logging.getLogger(__name__)


class NotebookError(AuditError):
    """A notebook file cannot be read (broken JSON, not a notebook); the message names the path."""


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


@dataclass(frozen=True, slots=True, kw_only=True)
class NotebookCode:
    """The code of a notebook.

    Attributes
    ----------
    path : str
        The notebook's path (as given to :func:`read_notebook`).
    language : str
        Kernel language, lower-case (``"python"``, ``"r"``, ``"julia"``); ``"python"`` when the
        metadata declares none. Callers skip languages they have no grammar for.
    text : str
        Code cells joined by a blank line, IPython syntax commented out (parses as Python).
    raw_text : str
        The same join with the cells verbatim (identical line structure to ``text``).
    cells : tuple of CellRange
        Lines of ``text`` per code cell, in order (empty cells included).
    shell_commands : tuple of ShellCommand
        Shell escapes and shell cell magics, in order.
    nbformat : int
        The file's major format version before conversion (3 or 4).
    """

    path: str
    language: str
    text: str
    raw_text: str
    cells: tuple[CellRange, ...]
    shell_commands: tuple[ShellCommand, ...]
    nbformat: int


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


def _kernel_language(metadata: Any) -> str:
    metadata = metadata if isinstance(metadata, dict) else {}
    kernelspec = metadata.get("kernelspec") if isinstance(metadata.get("kernelspec"), dict) else {}
    info = metadata.get("language_info") if isinstance(metadata.get("language_info"), dict) else {}
    language = kernelspec.get("language") or info.get("name") or metadata.get("language")
    if not isinstance(language, str) or not language.strip():
        name = str(kernelspec.get("name") or "").lower()
        if name in {"ir", "r"}:
            return "r"
        if name.startswith("julia"):
            return "julia"
        return "python"
    language = language.strip().lower()
    if language.startswith(("python", "ipython")):
        return "python"
    return language


def _notebook_cells(text: str) -> tuple[object, list, dict]:
    """Format version, cells (v4-shaped dicts) and metadata of a notebook's JSON text.

    The text is decoded by :func:`grading.untrusted_json.loads` (nesting bounded, lone
    surrogates replaced), never by a recursive reader. v4 cells are used as they are; v3 (and
    any) worksheets are flattened in order, a code cell's ``input`` becoming its ``source``, as
    nbformat's upgrade does; only the code cells' source and the kernel metadata are read, so a
    notebook that fails nbformat's schema (agent-written files often lack cell metadata or
    outputs) is read all the same, and outputs are never converted. Notebooks of format 1 and 2
    (2011-2012) go through nbformat's own reader and upgrade.

    Raises
    ------
    ValueError
        If the text is not JSON or nests too deep (:class:`nbformat.reader.NotJSONError`), or
        is not a JSON object with ``cells`` or ``worksheets``.
    """
    try:
        data = untrusted_json.loads(text)
    except json.JSONDecodeError as exc:
        # nbformat's name for it, which messages have always shown.
        raise nbformat.reader.NotJSONError(f"Notebook does not appear to be JSON: {exc}") from None
    if not isinstance(data, dict):
        raise ValueError(f"a JSON {type(data).__name__}, not a notebook object")
    version = data.get("nbformat")
    if isinstance(version, int) and not isinstance(version, bool) and version in (1, 2):
        with warnings.catch_warnings():
            # nbformat warns about missing or duplicate cell ids, which do not matter here.
            warnings.simplefilter("ignore")
            notebook = nbformat.convert(nbformat.versions[version].to_notebook_json(data), 4)
        return version, list(notebook.get("cells") or []), dict(notebook.get("metadata") or {})
    metadata = data.get("metadata") if isinstance(data.get("metadata"), dict) else {}
    worksheets = data.get("worksheets")
    if not isinstance(data.get("cells"), list) and not isinstance(worksheets, list):
        raise ValueError("no 'cells' or 'worksheets' list")
    # Both lists are read when both are there: a reader (nbformat 3) may run the one we skip.
    cells: list = list(data["cells"]) if isinstance(data.get("cells"), list) else []
    for sheet in worksheets if isinstance(worksheets, list) else ():
        sheet_cells = sheet.get("cells") if isinstance(sheet, dict) else None
        cells.extend(sheet_cells if isinstance(sheet_cells, list) else ())
    # A code cell's v3 ``input`` is its source, whatever the declared version.
    cells = [{**c, "source": c.get("input", "")} if isinstance(c, dict) and "source" not in c and "input" in c else c
             for c in cells]
    return version, cells, metadata


def _cell_source(source: object, index: int) -> str:
    """A cell's source as one string (a list of lines is joined).

    Raises
    ------
    ValueError
        The source is neither text nor a list of texts (a number is taken as its text): such a
        cell cannot be read as the code it may stand for, so the notebook is not read (a gap).
    """
    if isinstance(source, str):
        return source
    if isinstance(source, list) and all(isinstance(s, str) for s in source):  # one string per line
        return "".join(source)
    if source is None or (isinstance(source, (int, float)) and not isinstance(source, bool)):
        return "" if source is None else str(source)
    raise ValueError(f"code cell {index} has a source that is not text ({type(source).__name__})")


def read_notebook(text: str, path: str) -> NotebookCode:
    """Turn a notebook's JSON text into code.

    Parameters
    ----------
    text : str
        The ``.ipynb`` file's content (nbformat v3 or v4; untrusted).
    path : str
        The notebook's path, used in messages and on the result.

    Returns
    -------
    NotebookCode
        Joined code cells (blank line between cells), their line ranges, kernel language and
        shell commands. IPython syntax is only rewritten for Python kernels; other kernels keep
        ``text == raw_text`` and no shell commands.

    Raises
    ------
    NotebookError
        If the text is not JSON, nests deeper than
        :data:`grading.untrusted_json.MAX_JSON_DEPTH`, or is not a notebook; the message names
        ``path`` and the cause.

    Notes
    -----
    The work is linear in the size of the text: one bounded JSON decode, one pass over the
    cells, one join.
    """
    try:
        version, cells, metadata = _notebook_cells(text)
    except Exception as exc:  # noqa: BLE001 - JSON errors, nbformat's many types on old formats
        cause = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise NotebookError(f"{path}: not a readable notebook ({type(exc).__name__}: {cause[:200]})") from None

    language = _kernel_language(metadata)
    raw_parts: list[str] = []
    clean_parts: list[str] = []
    ranges: list[CellRange] = []
    commands: list[ShellCommand] = []
    line = 1
    offset = 0
    for index, cell in enumerate(cells):
        cell_type = cell.get("cell_type") if isinstance(cell, dict) else None
        if not isinstance(cell_type, str) or cell_type.strip().lower() != "code":
            continue
        try:
            source = _cell_source(cell.get("source", ""), index).rstrip("\n")
        except ValueError as exc:
            raise NotebookError(f"{path}: not a readable notebook ({exc})") from None
        n_lines = source.count("\n") + 1
        clean = source
        if language == "python":
            clean, cell_commands = split_magics(source, cell_index=index)
            for command in cell_commands:
                commands.append(
                    ShellCommand(
                        text=command.text,
                        magic=command.magic,
                        cell_index=index,
                        line=command.line + line - 1,
                        start=command.start + offset,
                        end=command.end + offset,
                    )
                )
        ranges.append(CellRange(cell_index=index, start_line=line, end_line=line + n_lines - 1))
        raw_parts.append(source)
        clean_parts.append(clean)
        line += n_lines + 1
        offset += len(source) + 2
    raw_text = "\n\n".join(raw_parts) + "\n" if raw_parts else ""
    clean_text = "\n\n".join(clean_parts) + "\n" if clean_parts else ""
    return NotebookCode(
        path=path,
        language=language,
        text=clean_text,
        raw_text=raw_text,
        cells=tuple(ranges),
        shell_commands=tuple(commands),
        nbformat=int(version) if isinstance(version, int) else 4,
    )
