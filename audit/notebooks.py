"""Jupyter notebooks as code: the joined code cells, a cell/line map, and the shell escapes.

Notebooks are read as untrusted JSON (:func:`mleaudit.grading.untrusted_json.loads`: nesting bounded)
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

Outputs are read apart from the code, by :func:`read_notebook_outputs`, and never joined to it:
stream text (stdout, stderr), the text forms of ``execute_result`` and ``display_data``
(``text/plain``, ``text/markdown``, ``text/html`` and other text or JSON MIME types), errors
(``ename``, ``evalue``, ``traceback``), in nbformat 4 and 3 (``pyout``, ``pyerr``, MIME types as
keys); the text of markdown and raw cells is read the same way. Each text keeps its place in the
file (:class:`mleaudit.audit.textmap.TextMap`: the JSON strings' regions, escapes accounted for), with
terminal escapes removed. Images and other binary outputs are counted, not read.
"""

from __future__ import annotations

import json
import json.scanner
import logging
import re
import warnings
from dataclasses import dataclass
from typing import Any

import nbformat

from mleaudit.audit.errors import AuditError
from mleaudit.audit.textmap import TextMap
from mleaudit.grading import untrusted_json
from mleaudit.audit.units import CellRange

__all__ = [
    "MAX_OUTPUT_CHARS",
    "NotebookError",
    "NotebookOutput",
    "NotebookOutputs",
    "ShellCommand",
    "NotebookCode",
    "cell_sources",
    "read_notebook",
    "read_notebook_outputs",
    "split_magics",
]

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
    name = str(kernelspec.get("name") or "").strip().lower()
    if name.startswith(("python", "ipython")):
        # Jupyter starts the kernel that kernelspec.name names; the language fields are only
        # labels, which a hostile notebook can set to anything (a Python kernel labelled bash).
        return "python"
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

    The text is decoded by :func:`mleaudit.grading.untrusted_json.loads` (nesting bounded, lone
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
        :data:`mleaudit.grading.untrusted_json.MAX_JSON_DEPTH`, or is not a notebook; the message names
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


def cell_sources(notebook: NotebookCode, *, clean: bool = False) -> list[tuple[int, str]]:
    """``(cell index, source)`` of each code cell of a notebook, in order.

    Parameters
    ----------
    notebook : NotebookCode
        From :func:`read_notebook`.
    clean : bool, optional
        Take the sources from :attr:`NotebookCode.text` (IPython syntax commented out) instead
        of :attr:`NotebookCode.raw_text` (verbatim, the default).

    Returns
    -------
    list of (int, str)
        The cells' sources, trailing newlines stripped as in the joined text.
    """
    lines = (notebook.text if clean else notebook.raw_text).split("\n")
    return [(cell.cell_index, "\n".join(lines[cell.start_line - 1 : cell.end_line])) for cell in notebook.cells]


#: Characters of output text read per notebook; outputs past it are listed as not read. A
#: notebook file is at most the run's file cap (20 MB), and decoded text is never longer than
#: its JSON, so the cap only binds when a caller lowers it.
MAX_OUTPUT_CHARS = 20 * 1024 * 1024


@dataclass(frozen=True, slots=True, kw_only=True)
class NotebookOutput:
    """The text of one cell output (or of one markdown/raw cell), located in the notebook file.

    Attributes
    ----------
    cell_index : int
        0-based index of the cell among all cells (the index :class:`CellRange` uses).
    output_index : int
        0-based index among the cell's outputs; ``-1`` for a markdown or raw cell's own text.
    output_type : str
        As written (``stream``, ``execute_result``, ``display_data``, ``error``, ``pyout``,
        ``pyerr``), or ``markdown``/``raw`` (the cell type) for a cell's own text.
    name : str
        The stream (``stdout``/``stderr``) or the MIME types read, comma-separated.
    location : str
        JSON path of the output in the file: ``cells[12].outputs[0]``,
        ``worksheets[0].cells[3].outputs[1]``, ``cells[2].source``.
    text_map : TextMap
        The text (terminal escapes removed, lone CRs as newlines) and its offsets in the file.
    """

    cell_index: int
    output_index: int
    output_type: str
    name: str
    location: str
    text_map: TextMap

    @property
    def text(self) -> str:
        """The output's text."""
        return self.text_map.text


@dataclass(frozen=True, slots=True, kw_only=True)
class NotebookOutputs:
    """What :func:`read_notebook_outputs` read.

    Attributes
    ----------
    outputs : tuple of NotebookOutput
        Text outputs and markdown/raw cell texts, in file order; blank ones left out.
    binary : tuple of (str, str)
        ``(location, MIME type)`` of each output part not read because it is not text
        (images, PDF, audio ...): data, like the run's data files.
    unread : tuple of str
        What was not read and why (the character cap), one sentence each; empty when all was.
    output_count : int
        Cell outputs looked at (text, binary or empty).
    """

    outputs: tuple[NotebookOutput, ...]
    binary: tuple[tuple[str, str], ...] = ()
    unread: tuple[str, ...] = ()
    output_count: int = 0


_DECODER = json.JSONDecoder()
# The decoder's C scanner, called directly: one call per value, no wrapper per call.
_SCAN = json.scanner.make_scanner(_DECODER)
_WS = re.compile(r"[ \t\n\r]*")
_WS_CHARS = " \t\n\r"


def _skip_ws(text: str, pos: int) -> int:
    return _WS.match(text, pos).end() if text[pos : pos + 1] in _WS_CHARS and pos < len(text) else pos


def _scan(text: str, pos: int) -> tuple[Any, int]:
    """The JSON value at ``pos`` and where it ends."""
    try:
        return _SCAN(text, pos)
    except StopIteration:
        raise ValueError(f"no JSON value at offset {pos}") from None
#: Members of an output that label it rather than hold its text.
_OUTPUT_LABELS = frozenset({"output_type", "name", "stream", "metadata", "execution_count", "prompt_number",
                            "transient", "id"})
#: nbformat 3 keeps MIME data as short keys on the output itself.
_V3_MIME_KEYS = {
    "text": "text/plain", "html": "text/html", "latex": "text/latex", "markdown": "text/markdown",
    "json": "application/json", "javascript": "application/javascript", "svg": "image/svg+xml",
    "png": "image/png", "jpeg": "image/jpeg", "pdf": "application/pdf",
}  # fmt: skip


_HAS_TEXT_PARTS = re.compile(r'"outputs"\s*:(?!\s*\[\s*\])|"cell_type"\s*:(?!\s*"code")')


def _textual(mime: str) -> bool:
    """Whether a MIME type holds text a person or a program reads (not an image or a binary blob)."""
    mime = mime.strip().lower()
    if mime.startswith(("image/", "audio/", "video/", "font/")):
        return False
    if mime.startswith("text/"):
        return True
    return mime.startswith("application/") and mime.endswith(("json", "javascript", "xml", "x-python", "x-sh",
                                                              "x-latex", "x-tex"))


def _members(text: str, start: int) -> dict[str, tuple[int, int, Any]]:
    """Members of the JSON object at ``start``: key -> (value start, value end, value); the last
    of a repeated key wins, as in the decoder that read the notebook."""
    members: dict[str, tuple[int, int, Any]] = {}
    if text[start : start + 1] != "{":
        return members
    scan, space, blank = _scan, _WS.match, _WS_CHARS
    pos = start + 1
    if text[pos : pos + 1] in blank:
        pos = space(text, pos).end()
    if text[pos : pos + 1] == "}":
        return members
    while True:
        key, pos = scan(text, pos)
        if text[pos : pos + 1] in blank:
            pos = space(text, pos).end()
        if not isinstance(key, str) or text[pos : pos + 1] != ":":
            raise ValueError(f"malformed object at offset {pos}")
        pos += 1
        if text[pos : pos + 1] in blank:
            pos = space(text, pos).end()
        value, value_end = scan(text, pos)
        members[key] = (pos, value_end, value)
        pos = value_end
        if text[pos : pos + 1] in blank:
            pos = space(text, pos).end()
        sep = text[pos : pos + 1]
        if sep == "}":
            return members
        if sep != ",":
            raise ValueError(f"malformed object at offset {pos}")
        pos += 1
        if text[pos : pos + 1] in blank:
            pos = space(text, pos).end()


def _items(text: str, start: int) -> list[tuple[int, int, Any]]:
    """Elements of the JSON array at ``start``: (start, end, value)."""
    items: list[tuple[int, int, Any]] = []
    if text[start : start + 1] != "[":
        return items
    scan, space, blank = _scan, _WS.match, _WS_CHARS
    pos = start + 1
    if text[pos : pos + 1] in blank:
        pos = space(text, pos).end()
    if text[pos : pos + 1] == "]":
        return items
    while True:
        value, end = scan(text, pos)
        items.append((pos, end, value))
        pos = end
        if text[pos : pos + 1] in blank:
            pos = space(text, pos).end()
        sep = text[pos : pos + 1]
        if sep == "]":
            return items
        if sep != ",":
            raise ValueError(f"malformed array at offset {pos}")
        pos += 1
        if text[pos : pos + 1] in blank:
            pos = space(text, pos).end()


def _add_value(target: TextMap, text: str, start: int, end: int, value: Any, separator: str = "") -> None:
    """Add a string, a list of strings (nbformat's multi-line text) or any other JSON value
    (its text as written) to ``target``, located in ``text``."""
    if isinstance(value, str):
        if value:
            target.add_literal(text, start + 1, end - 1, value)
        return
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        first = True
        for item_start, item_end, item in _items(text, start):
            if not item:
                continue
            if not first and separator:
                target.add_filler(separator)
            target.add_literal(text, item_start + 1, item_end - 1, item)
            first = False
        return
    if value is None or isinstance(value, (bool, int, float)) or not value:
        return
    target.add_verbatim(text[start:end], start)


def _separate(target: TextMap) -> None:
    if target.length and not target.text.endswith("\n"):
        target.add_filler("\n")


def _read_output(text: str, start: int, end: int, value: Any, where: str,
                 binary: list[tuple[str, str]]) -> tuple[str, str, TextMap]:
    """``(output_type, name, text map)`` of one output record."""
    target = TextMap()
    if not isinstance(value, dict):
        _add_value(target, text, start, end, value)
        return "", "", target
    members = _members(text, start)
    output_type = value.get("output_type") if isinstance(value.get("output_type"), str) else ""
    names: list[str] = []
    stream = value.get("name", value.get("stream"))
    if isinstance(stream, str):
        names.append(stream)
    previous = ""
    for key, (value_start, value_end, item) in members.items():
        if key in _OUTPUT_LABELS:
            continue
        if key == "data" and isinstance(item, dict):
            for mime, (mime_start, mime_end, data) in _members(text, value_start).items():
                if not _textual(mime):
                    binary.append((f"{where}.data", mime))
                    continue
                _separate(target)
                _add_value(target, text, mime_start, mime_end, data)
                names.append(mime)
            continue
        mime = _V3_MIME_KEYS.get(key)
        if mime is not None and not _textual(mime):
            binary.append((f"{where}.{key}", mime))
            continue
        if key == "evalue" and previous == "ename" and target.length:
            target.add_filler(": ")  # "ValueError: message", as Python prints it
        else:
            _separate(target)
        _add_value(target, text, value_start, value_end, item, separator="\n" if key == "traceback" else "")
        previous = key
        if mime is not None and mime not in names and output_type not in ("stream", ""):
            names.append(mime)
    return output_type, ", ".join(names), target


def _cell_regions(text: str) -> list[tuple[str, int, int, Any]]:
    """``(JSON path, start, end, value)`` of each cell, in the order :func:`read_notebook` reads them."""
    top = _members(text, _skip_ws(text, 0))
    cells: list[tuple[str, int, int, Any]] = []
    if "cells" in top and isinstance(top["cells"][2], list):
        cells.extend((f"cells[{i}]", s, e, v) for i, (s, e, v) in enumerate(_items(text, top["cells"][0])))
    if "worksheets" in top and isinstance(top["worksheets"][2], list):
        for w, (ws_start, _, sheet) in enumerate(_items(text, top["worksheets"][0])):
            if not isinstance(sheet, dict) or not isinstance(sheet.get("cells"), list):
                continue
            sheet_cells = _members(text, ws_start)["cells"]
            cells.extend((f"worksheets[{w}].cells[{i}]", s, e, v)
                         for i, (s, e, v) in enumerate(_items(text, sheet_cells[0])))
    return cells


def read_notebook_outputs(text: str, path: str, *, max_chars: int = MAX_OUTPUT_CHARS) -> NotebookOutputs:
    """Read the text of a notebook's cell outputs and of its markdown and raw cells.

    Parameters
    ----------
    text : str
        The ``.ipynb`` file's content, already accepted by :func:`read_notebook` (valid JSON,
        nesting bounded).
    path : str
        The notebook's path, used in messages.
    max_chars : int, optional
        Characters of text read at most; outputs past it are listed in ``unread``.

    Returns
    -------
    NotebookOutputs
        One :class:`NotebookOutput` per output with text (stream text, the text MIME types of
        results and displays in file order, an error's name, value and traceback) and per
        markdown or raw cell, in file order; binary parts counted in ``binary``.

    Raises
    ------
    NotebookError
        If the text is not the JSON of a notebook (callers read the code first, which fails the
        same way).

    Notes
    -----
    Cells are taken as :func:`read_notebook` takes them (``cells``, then every worksheet's
    cells), so ``cell_index`` matches :class:`CellRange`. Outputs are read on any cell that has
    them, whatever its type. Each value is located with the standard JSON decoder
    (``raw_decode``): a few linear passes over the file.
    """
    if not _HAS_TEXT_PARTS.search(text):
        # No non-empty outputs list and no markdown or raw cell anywhere (a quote inside a JSON
        # string is escaped, so these keys cannot be spelled inside a value): nothing to read.
        return NotebookOutputs(outputs=())
    try:
        cells = _cell_regions(text)
    except (ValueError, RecursionError) as exc:
        raise NotebookError(f"{path}: outputs not readable ({type(exc).__name__}: {str(exc)[:200]})") from None
    outputs: list[NotebookOutput] = []
    binary: list[tuple[str, str]] = []
    unread: list[str] = []
    total = 0
    looked = 0

    def keep(output: NotebookOutput) -> bool:
        nonlocal total
        if not output.text.strip():
            return True
        if total + output.text_map.length > max_chars:
            unread.append(f"outputs from {output.location} on not read: over the {max_chars}-character cap on "
                          "notebook output text")
            return False
        total += output.text_map.length
        outputs.append(output)
        return True

    for index, (where, cell_start, _, cell) in enumerate(cells):
        if not isinstance(cell, dict):
            continue
        cell_type = cell.get("cell_type").strip().lower() if isinstance(cell.get("cell_type"), str) else ""
        if not cell.get("outputs") and cell_type not in ("markdown", "raw", "heading"):
            continue  # nothing to locate: no outputs, and code is read by read_notebook
        members = _members(text, cell_start)
        if cell_type in ("markdown", "raw", "heading") and "source" in members:
            source = TextMap()
            value_start, value_end, value = members["source"]
            _add_value(source, text, value_start, value_end, value)
            if not keep(NotebookOutput(cell_index=index, output_index=-1, output_type=cell_type, name="",
                                       location=f"{where}.source", text_map=source.cleaned())):
                break
        if "outputs" not in members:
            continue
        out_start, out_end, out_value = members["outputs"]
        records = _items(text, out_start) if isinstance(out_value, list) else [(out_start, out_end, out_value)]
        stop = False
        for number, (start, end, value) in enumerate(records):
            looked += 1
            location = f"{where}.outputs[{number}]"
            output_type, name, target = _read_output(text, start, end, value, location, binary)
            output = NotebookOutput(cell_index=index, output_index=number, output_type=output_type, name=name,
                                    location=location, text_map=target.cleaned())
            if not keep(output):
                stop = True
                break
        if stop:
            break
    return NotebookOutputs(outputs=tuple(outputs), binary=tuple(binary), unread=tuple(unread), output_count=looked)
