"""A notebook's code: :func:`read_notebook` joins its code cells into :class:`NotebookCode`.

The JSON is decoded with bounded nesting; v3 worksheets are flattened as nbformat's upgrade does
(formats 1 and 2 go through nbformat itself); only code cells' source and the kernel metadata are
read, and nothing is executed.
"""

from __future__ import annotations

import json
import warnings
from dataclasses import dataclass
from typing import Any

import nbformat

from mleaudit.audit.errors import AuditError
from mleaudit.audit.notebooks.magics import ShellCommand, split_magics
from mleaudit.audit.units import CellRange
from mleaudit.grading import untrusted_json


class NotebookError(AuditError):
    """A notebook file cannot be read (broken JSON, not a notebook); the message names the path."""


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
