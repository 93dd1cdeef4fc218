"""Notebook reading: ``mleaudit.audit.notebooks.read_notebook`` and ``split_magics``.

``read_notebook`` raises only ``NotebookError`` (an ``AuditError``). What it returns keeps the
documented shape: ``text`` (IPython syntax commented out) and ``raw_text`` (verbatim) have the
same line structure, each shell command's ``raw_text[start:end]`` is its text, cell line ranges
lie inside the text in order, and kernels other than Python keep ``text == raw_text`` with no
shell commands. ``split_magics`` keeps the line count and its commands' offsets point into the
source.
"""

from __future__ import annotations

from hypothesis import given

from mleaudit.audit.errors import AuditError
from mleaudit.audit.notebooks import NotebookCode, NotebookError, read_notebook, split_magics
from tests.property import strategies as S
from tests.property.support import budget, call, time_limit


@budget(120)
@given(S.notebook_text)
def test_read_notebook_raises_only_notebook_error(text):
    path = "code/notebook.ipynb"
    notebook, error = call(read_notebook, text, path, allowed=(NotebookError,), what="read_notebook")
    if error is not None:
        assert isinstance(error, AuditError)
        return
    assert isinstance(notebook, NotebookCode)
    assert notebook.path == path
    assert notebook.language == notebook.language.lower()
    assert notebook.text.count("\n") == notebook.raw_text.count("\n"), "text and raw_text differ in line structure"
    lines = notebook.text.count("\n")
    previous_end = 0
    for cell in notebook.cells:
        assert previous_end < cell.start_line <= cell.end_line <= max(lines, 1), (
            f"cell range {cell.start_line}..{cell.end_line} out of order or outside {lines} lines")
        previous_end = cell.end_line
    for command in notebook.shell_commands:
        assert notebook.raw_text[command.start:command.end] == command.text, (
            f"shell command offsets {command.start}..{command.end} do not hold {command.text!r:.80}")
        assert 1 <= command.line <= max(lines, 1)
    if notebook.language != "python":
        assert notebook.text == notebook.raw_text and not notebook.shell_commands


@budget(100)
@given(S.cell_source_text)
def test_split_magics_keeps_lines_and_offsets(source):
    with time_limit(what="split_magics"):
        clean, commands = split_magics(source)
    assert clean.count("\n") == source.count("\n")
    for command in commands:
        assert source[command.start:command.end] == command.text
        assert 1 <= command.line <= source.count("\n") + 1
        assert command.text.strip()
