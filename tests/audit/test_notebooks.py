"""Tests for ``mleaudit.audit.notebooks``: cell joins, the cell map, IPython syntax and broken files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mleaudit.audit.errors import AuditError
from mleaudit.audit.notebooks import NotebookError, read_notebook, split_magics
from mleaudit.audit.parsing import parse
from mleaudit.audit.units import CellRange
from tests.conftest import shared_path

NOTEBOOKS = Path(__file__).resolve().parents[1] / "fixtures" / "runs_loading" / "notebooks"


def _read(name: str):
    return read_notebook((NOTEBOOKS / name).read_text(), name)


def test_v4_join_and_cell_map():
    nb = _read("v4_magics.ipynb")
    assert nb.language == "python" and nb.nbformat == 4
    # Markdown (0) and raw (6) cells are left out; the empty cell 2 keeps its place.
    assert nb.cells == (
        CellRange(cell_index=1, start_line=1, end_line=3),
        CellRange(cell_index=2, start_line=5, end_line=5),
        CellRange(cell_index=3, start_line=7, end_line=10),
        CellRange(cell_index=4, start_line=12, end_line=14),
        CellRange(cell_index=5, start_line=16, end_line=17),
        CellRange(cell_index=7, start_line=19, end_line=21),
    )
    assert nb.raw_text.startswith("%matplotlib inline\nimport pandas as pd\n!pip install -q lightgbm\n\n\n\n%%time\n")
    assert nb.raw_text.endswith("for i in range(2):\n    print(i)\n\n%%writefile helper.py\ndef helper():\n    return 1\n")
    lines = nb.text.split("\n")
    assert lines[0] == "# %matplotlib inline"
    assert lines[2] == "# !pip install -q lightgbm"
    assert lines[7] == "# files = !ls /kaggle/input"
    assert lines[9] == "# df.head?"
    assert lines[11:14] == ["# %%bash", "# kaggle competitions download -c titanic", "# unzip titanic.zip"]
    # A %%writefile of a .py file keeps its body as code.
    assert lines[18:21] == ["# %%writefile helper.py", "def helper():", "    return 1"]
    assert nb.text.count("\n") == nb.raw_text.count("\n")
    assert not parse(nb.text, "python").has_error


def test_v4_shell_commands_point_into_raw_text():
    nb = _read("v4_magics.ipynb")
    assert [(c.magic, c.cell_index, c.line, c.text) for c in nb.shell_commands] == [
        ("!", 1, 3, "pip install -q lightgbm"),
        ("!", 3, 8, "ls /kaggle/input"),
        ("%%bash", 4, 13, "kaggle competitions download -c titanic\nunzip titanic.zip"),
    ]
    for command in nb.shell_commands:
        assert nb.raw_text[command.start : command.end] == command.text
        assert nb.raw_text.count("\n", 0, command.start) + 1 == command.line
        assert not parse(command.text, "bash").has_error


def test_v3_worksheets_are_converted():
    nb = _read("v3_magics.ipynb")
    assert nb.nbformat == 3 and nb.language == "python"
    assert nb.raw_text == "%pylab inline\nimport numpy as np\n\n!wget http://example.org/data.csv\nx = np.arange(3)\nprint(x)\n"
    assert nb.text == "# %pylab inline\nimport numpy as np\n\n# !wget http://example.org/data.csv\nx = np.arange(3)\nprint(x)\n"
    assert nb.cells == (CellRange(cell_index=1, start_line=1, end_line=2), CellRange(cell_index=3, start_line=4, end_line=6))
    assert [(c.text, c.line, c.cell_index) for c in nb.shell_commands] == [("wget http://example.org/data.csv", 4, 3)]


def test_r_kernel_is_reported_and_left_verbatim():
    nb = _read("r_kernel.ipynb")
    assert nb.language == "r"
    assert nb.text == nb.raw_text == "library(ggplot2)\nx <- c(1, 2)\n"
    assert nb.shell_commands == ()


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("broken.ipynb", r"^broken\.ipynb: not a readable notebook \(NotJSONError: Notebook does not appear to be JSON: Expecting ',' delimiter"),
        ("not_a_notebook.ipynb", r"^not_a_notebook\.ipynb: not a readable notebook \(ValueError: a JSON list, not a notebook object\)$"),
    ],
)
def test_broken_notebooks_raise_notebook_error(name, message):
    with pytest.raises(NotebookError, match=message):
        _read(name)
    assert issubclass(NotebookError, AuditError)


def test_deeply_nested_json_is_a_notebook_error():
    with pytest.raises(NotebookError, match="^deep.ipynb: not a readable notebook"):
        read_notebook("[" * 100_000 + "]" * 100_000, "deep.ipynb")
    nested = '{"cells": [{"cell_type": "code", "source": "x = 1", "outputs": ' + "[" * 5000 + "]" * 5000 + "}]}"
    with pytest.raises(NotebookError, match=r"^deep.ipynb: not a readable notebook \(NotJSONError: .*nested 5003 levels deep, deeper than the 200 accepted"):
        read_notebook(nested, "deep.ipynb")


def test_empty_notebook_has_no_code():
    nb = read_notebook('{"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}', "e.ipynb")
    assert (nb.text, nb.raw_text, nb.cells, nb.language) == ("", "", (), "python")


def test_split_magics_forms():
    source = (
        "import os\n"
        "  pip install haversine\n"
        "out = !ls -la\n"
        "%pip install -q timm \\\n"
        "   lightgbm\n"
        "%system nvidia-smi\n"
        "%cd /tmp\n"
        "y = 1 % 2\n"
        "!!echo hi"
    )
    text, commands = split_magics(source)
    assert text.split("\n") == [
        "import os",
        "  # pip install haversine",
        "# out = !ls -la",
        "# %pip install -q timm \\",
        "   # lightgbm",
        "# %system nvidia-smi",
        "# %cd /tmp",
        "y = 1 % 2",
        "# !!echo hi",
    ]
    assert [(c.magic, c.line, c.text) for c in commands] == [
        ("%pip", 2, "pip install haversine"),
        ("!", 3, "ls -la"),
        ("%pip", 4, "pip install -q timm \\\n   lightgbm"),
        ("%system", 6, "nvidia-smi"),
        ("!!", 9, "echo hi"),
    ]
    for command in commands:
        assert source[command.start : command.end] == command.text
    assert not parse(text, "python").has_error


@pytest.mark.parametrize(
    ("cell", "commented", "magic"),
    [
        ("%%bash\nls\nwget x", True, "%%bash"),
        ("%%script bash\nls", True, "%%script"),
        ("%%writefile run.sh\nkaggle kernels pull a/b", True, "%%writefile"),
        ("%%html\n<b>x</b>", True, None),
        ("%%capture\nimport os", False, None),
        ("%%script python\nimport os", False, None),
    ],
)
def test_cell_magic_bodies(cell, commented, magic):
    text, commands = split_magics(cell)
    body = text.split("\n")[1:]
    assert all(line.startswith("# ") for line in body) is commented
    assert [c.magic for c in commands] == ([magic] if magic else [])


def test_plain_python_is_untouched():
    source = "a = b % c\nx = y != z\nprint('!')\n"
    assert split_magics(source) == (source, ())


def test_real_notebooks_match_golden_join_and_parse():
    """Every real notebook loads (or raises NotebookError), parses, and joins like Dolos's golden files."""
    root = shared_path("notebooks")
    golden_root = shared_path("similarity-golden")
    paths = sorted(root.glob("*/*.ipynb"))
    assert len(paths) >= 150
    read = 0
    for path in paths:
        text = path.read_text(encoding="utf-8", errors="replace")
        try:
            nb = read_notebook(text, path.name)
        except NotebookError:
            # Only files that are not notebook JSON may fail.
            try:
                data = json.loads(text)
            except ValueError:
                continue
            assert not (isinstance(data, dict) and isinstance(data.get("nbformat"), int)), path
            continue
        read += 1
        golden = golden_root / path.parent.name / (path.stem + ".py")
        if golden.exists():
            assert nb.raw_text == golden.read_text(encoding="utf-8"), path
        assert nb.text.count("\n") == nb.raw_text.count("\n"), path
        if nb.language == "python":
            parse(nb.text, "python")
            for command in nb.shell_commands:
                assert nb.raw_text[command.start : command.end] == command.text, path
                parse(command.text, "bash")
    assert read >= 150


def test_schema_invalid_agent_notebooks_are_still_read():
    # Agent-written notebooks often omit cell metadata/outputs; their code must be audited.
    import json

    v4 = {"cells": [{"cell_type": "code", "source": ["import openai\n", "openai.Client()"]}], "nbformat": 4, "nbformat_minor": 5}
    assert read_notebook(json.dumps(v4), "a.ipynb").text == "import openai\nopenai.Client()\n"
    v3 = {"worksheets": [{"cells": [{"cell_type": "code", "input": "x = 1"}]}], "nbformat": 3, "nbformat_minor": 0}
    assert read_notebook(json.dumps(v3), "b.ipynb").text == "x = 1\n"


def _code_cell(source, **extra) -> dict:
    return {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [], "source": source, **extra}


def _notebook(cells: list, **extra) -> str:
    return json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5, **extra})


def test_a_hundred_thousand_cells_are_mapped_one_range_each():
    cells = [_code_cell([f"x{i} = {i}\n", f"print(x{i})"]) for i in range(100_000)]
    cells.insert(1, {"cell_type": "markdown", "metadata": {}, "source": "# notes"})
    nb = read_notebook(_notebook(cells), "many.ipynb")
    assert len(nb.cells) == 100_000
    assert nb.cells[0] == CellRange(cell_index=0, start_line=1, end_line=2)
    assert nb.cells[1] == CellRange(cell_index=2, start_line=4, end_line=5)
    assert nb.cells[-1] == CellRange(cell_index=100_000, start_line=299_998, end_line=299_999)
    lines = nb.raw_text.split("\n")
    assert lines[299_997:299_999] == ["x99999 = 99999", "print(x99999)"]


def test_huge_sources_outputs_and_odd_values_are_read_without_failing():
    big = "y = 1\n" * 1_700_000  # one 10 MB cell
    lines = ["z = 2\n"] * 1_000_000  # a source list of a million strings
    outputs = [{"output_type": "stream", "name": "stdout", "text": ["%d\n" % i]} for i in range(100_000)]
    cells = [
        _code_cell(big),
        _code_cell(lines, outputs=outputs),
        _code_cell("a = 1\n!ls"),
        _code_cell(None),
        "not a cell",
        _code_cell(7),
    ]
    nb = read_notebook(_notebook(cells, metadata={"kernelspec": ["odd"], "language_info": 7}), "huge.ipynb")
    assert nb.language == "python"
    assert [c.cell_index for c in nb.cells] == [0, 1, 2, 3, 5]
    assert nb.cells[0].end_line == 1_700_000 and nb.cells[1].end_line - nb.cells[1].start_line == 999_999
    assert [c.text for c in nb.shell_commands] == ["ls"]
    assert nb.text.count("\n") == nb.raw_text.count("\n")


@pytest.mark.parametrize("source", [["a = ", 1, None], ["import ", ["openai"]], {"k": "import openai"}, True])
def test_a_code_cell_whose_source_is_not_text_makes_the_notebook_unread(source):
    # Made into text, such a source would hide the code it stands for from every rule.
    with pytest.raises(NotebookError, match="code cell 0 has a source that is not text"):
        read_notebook(_notebook([_code_cell(source)]), "odd.ipynb")


def test_v3_worksheets_and_inputs_are_read_beside_cells():
    text = json.dumps({"nbformat": 3, "cells": [], "metadata": {}, "worksheets": [
        {"cells": [{"cell_type": "code", "language": "python", "input": "import openai\n"}]}]})
    assert read_notebook(text, "v3.ipynb").raw_text.startswith("import openai")
    text = json.dumps({"nbformat": 4, "metadata": {}, "cells": [{"cell_type": "CODE", "input": "x = 1"}]})
    assert read_notebook(text, "v4.ipynb").raw_text.startswith("x = 1")


def test_lone_surrogates_become_replacement_characters():
    text = '{"cells": [{"cell_type": "code", "source": "s = \\"\\udfff\\"", "metadata": {}, "outputs": []}], "nbformat": 4}'
    nb = read_notebook(text, "s.ipynb")
    assert nb.raw_text == 's = "\ufffd"\n'
    nb.raw_text.encode("utf-8")


@pytest.mark.parametrize(
    ("text", "cause"),
    [
        ("", "NotJSONError: Notebook does not appear to be JSON: Expecting value"),
        ("null", "ValueError: a JSON NoneType, not a notebook object"),
        ('{"cells": {"a": 1}}', "ValueError: no 'cells' or 'worksheets' list"),
        ('{"nbformat": 1}', "ValidationError: "),
    ],
)
def test_files_that_are_not_notebooks_name_the_cause(text, cause):
    with pytest.raises(NotebookError, match="^x.ipynb: not a readable notebook \\(" + cause):
        read_notebook(text, "x.ipynb")


def test_formats_1_and_2_are_upgraded_by_nbformat():
    v2 = {
        "metadata": {"name": ""},
        "nbformat": 2,
        "worksheets": [{"cells": [{"cell_type": "code", "input": "x = 1\n!ls", "language": "python", "outputs": []}]}],
    }
    nb = read_notebook(json.dumps(v2), "v2.ipynb")
    assert (nb.raw_text, nb.nbformat, [c.text for c in nb.shell_commands]) == ("x = 1\n!ls\n", 2, ["ls"])
    v1 = {"nbformat": 1, "cells": [{"cell_type": "code", "code": "a = 1"}, {"cell_type": "text", "text": "t"}]}
    assert read_notebook(json.dumps(v1), "v1.ipynb").raw_text == "a = 1\n"
