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

Routine Listings
----------------
magics
    :class:`ShellCommand` and :func:`split_magics`: IPython syntax commented out, shell escapes kept.
cells
    :class:`NotebookCode`, :func:`read_notebook`, :func:`cell_sources`, :class:`NotebookError`.
regions
    JSON members and array elements located in the notebook's text.
outputs
    :class:`NotebookOutput`, :class:`NotebookOutputs`, :func:`read_notebook_outputs`.

Notes
-----
Every public name is re-exported here, so callers import from ``mleaudit.audit.notebooks``.
Imports point down the listing above: a module imports only modules listed before it, plus
``mleaudit.audit.errors``, ``mleaudit.audit.textmap``, ``mleaudit.audit.units`` and
``mleaudit.grading.untrusted_json``. A new IPython syntax goes in ``magics``; a new output type or
MIME key in ``outputs``. What a notebook's code and outputs become (code units, log events) is
decided by :mod:`mleaudit.audit.expand`, not here.
"""

from mleaudit.audit.notebooks.cells import NotebookCode, NotebookError, cell_sources, read_notebook
from mleaudit.audit.notebooks.magics import ShellCommand, split_magics
from mleaudit.audit.notebooks.outputs import MAX_OUTPUT_CHARS, NotebookOutput, NotebookOutputs, read_notebook_outputs

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
