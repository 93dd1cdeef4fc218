"""A notebook's outputs as text: :func:`read_notebook_outputs`.

Stream text, the text forms of results and displays, errors, and the text of markdown and raw
cells, each located in the file (:class:`~mleaudit.audit.textmap.TextMap`); images and other
binary outputs are counted, not read. Outputs are never joined to the code.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from mleaudit.audit.notebooks.cells import NotebookError
from mleaudit.audit.notebooks.regions import _add_value, _items, _members, _separate, _skip_ws
from mleaudit.audit.textmap import TextMap


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
