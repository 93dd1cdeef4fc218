"""Reference corpora: .py and .ipynb kernels, skipped files with reasons, notebook cell locations."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from mleaudit.audit.errors import ConfigError
from mleaudit.audit.similarity import compare, load_reference_corpus
from mleaudit.audit.similarity.corpus import (
    ReferenceCorpus,
    decode_reference,
    iter_reference_files,
    read_reference,
    read_reference_bytes,
    reference_id,
    reference_sort_key,
)
from mleaudit.audit.units import CodeUnit

KERNELS = Path(__file__).resolve().parents[2] / "fixtures" / "kernels"
CORPUS = KERNELS / "corpus"


def test_loads_scripts_and_python_notebooks_in_path_order() -> None:
    corpus = load_reference_corpus(CORPUS)
    assert isinstance(corpus, ReferenceCorpus)
    assert [u.path for u in corpus.units] == ["author/titanic-forest.ipynb", "author/word-count.py"]
    notebook, script = corpus.units
    assert notebook.source == "notebook" and notebook.language == "python"
    assert [c.cell_index for c in notebook.cells] == [1, 3, 4, 6]  # markdown cells have no code
    first_line = notebook.text.splitlines()[0]
    assert "%matplotlib inline" in first_line and first_line.startswith("#")  # magics are not code
    assert script.source == "file" and script.cells == ()
    units, skipped = corpus  # unpacks as (units, skipped)
    assert units == corpus.units and skipped == corpus.skipped


def test_unusable_files_are_skipped_with_reasons() -> None:
    skipped = {s.path: s.reason for s in load_reference_corpus(CORPUS).skipped}
    assert set(skipped) == {"other/broken.ipynb", "other/r-kernel.ipynb"}
    assert skipped["other/r-kernel.ipynb"] == "kernel language 'r' has no grammar"
    assert "not a readable notebook" in skipped["other/broken.ipynb"]


def test_hidden_symlinked_large_and_binary_files(tmp_path: Path) -> None:
    shutil.copy(CORPUS / "author" / "word-count.py", tmp_path / "ok.py")
    (tmp_path / ".ipynb_checkpoints").mkdir()
    shutil.copy(CORPUS / "author" / "word-count.py", tmp_path / ".ipynb_checkpoints" / "ok-checkpoint.py")
    (tmp_path / "big.py").write_text("x = 1\n" * 100)
    (tmp_path / "latin1.py").write_bytes("s = 'caf\xe9'\n".encode("latin-1"))
    os.symlink(tmp_path / "ok.py", tmp_path / "link.py")
    corpus = load_reference_corpus(tmp_path, max_bytes=200)
    # ok.py is 1.4 kB, over the 200-byte cap as well; a Windows-saved file is read in its code page
    assert [u.path for u in corpus.units] == ["latin1.py"]
    assert corpus.units[0].text == "s = 'caf\xe9'\n" and corpus.encodings == {"latin1.py": "cp1252"}
    reasons = {s.path: s.reason for s in corpus.skipped}
    assert reasons["link.py"] == "symbolic link (not followed)"
    assert reasons["big.py"] == "file too large (600 bytes > 200)"
    assert ".ipynb_checkpoints/ok-checkpoint.py" not in reasons
    assert [u.path for u in load_reference_corpus(tmp_path).units] == ["big.py", "latin1.py", "ok.py"]


def test_missing_folder_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="is not a folder"):
        load_reference_corpus(tmp_path / "nope")


def test_compare_with_corpus_reports_notebook_cells_and_skipped() -> None:
    corpus = load_reference_corpus(CORPUS)
    agent = CodeUnit(
        path="code/solution.py",
        language="python",
        text=(KERNELS / "invariance" / "renamed.py").read_text(encoding="utf-8"),
    )
    report = compare([agent], corpus)
    assert compare([agent], corpus.units).pairs == report.pairs
    best = report.pairs[0]
    assert best.reference_id == "author/titanic-forest"
    assert best.agent_containment == 1.0
    assert best.fragments[0].reference_location.startswith("cell 1, line ")
    assert best.fragments[0].agent_location.startswith("line ")
    assert {s.path for s in report.skipped} == {"other/broken.ipynb", "other/r-kernel.ipynb"}


def test_reference_id() -> None:
    assert reference_id("owner/slug.ipynb") == "owner/slug"
    assert reference_id("noext") == "noext"
    assert reference_id("dir.v2/noext") == "dir.v2/noext"


def _write_notebook(path: Path, sources: list[str], *, language: str = "python", outputs: list | None = None) -> None:
    cells = [{"cell_type": "code", "metadata": {}, "execution_count": 1, "outputs": outputs or [], "source": s}
             for s in sources]
    path.write_text(json.dumps({"cells": cells, "nbformat": 4, "nbformat_minor": 4,
                                "metadata": {"kernelspec": {"name": language, "language": language}}}))


def test_corpus_order_is_folder_by_folder(tmp_path: Path) -> None:
    for name in ("a-c.py", "a/b.py", "a/z/y.py", "B.py"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("x = 1\n")
    assert [u.path for u in load_reference_corpus(tmp_path).units] == ["B.py", "a/b.py", "a/z/y.py", "a-c.py"]
    assert [rel for _, rel in iter_reference_files(tmp_path)] == ["B.py", "a/b.py", "a/z/y.py", "a-c.py"]
    assert sorted(["a-c.py", "a/b.py"], key=reference_sort_key) == ["a/b.py", "a-c.py"]


def test_notebook_kinds(tmp_path: Path) -> None:
    code = "import numpy as np\nvalues = np.arange(10)\nprint(values.mean())"
    _write_notebook(tmp_path / "v4.ipynb", ["%matplotlib inline\n!pip install timm", code])
    v3 = {"nbformat": 3, "nbformat_minor": 0, "metadata": {"name": ""},
          "worksheets": [{"cells": [{"cell_type": "code", "input": code, "language": "python", "outputs": [],
                                     "metadata": {}}], "metadata": {}}]}
    (tmp_path / "v3.ipynb").write_text(json.dumps(v3))
    _write_notebook(tmp_path / "shell.ipynb", ["ls -la\ncat data.csv | head"], language="bash")
    _write_notebook(tmp_path / "julia.ipynb", ["x = 1"], language="julia")
    _write_notebook(tmp_path / "empty-cells.ipynb", ["", "   "])
    corpus = load_reference_corpus(tmp_path)
    units = {u.path: u for u in corpus.units}
    assert set(units) == {"v4.ipynb", "v3.ipynb", "shell.ipynb"}
    assert units["shell.ipynb"].language == "bash"  # a kernel with a grammar is read with it
    assert units["v4.ipynb"].text.startswith("# %matplotlib inline\n# !pip install timm\n\n")
    assert units["v3.ipynb"].text == code + "\n" and units["v3.ipynb"].cells[0].cell_index == 0
    reasons = {s.path: s.reason for s in corpus.skipped}
    assert reasons == {"julia.ipynb": "kernel language 'julia' has no grammar",
                       "empty-cells.ipynb": "notebook has no code (no code cells, or only empty ones)"}


def test_outputs_do_not_change_the_code(tmp_path: Path) -> None:
    big_output = [{"output_type": "stream", "name": "stdout", "text": ["row\n"] * 5000},
                  {"output_type": "display_data", "data": {"image/png": "iVBOR" * 10000}, "metadata": {}}]
    sources = ["import pandas as pd", "frame = pd.read_csv('train.csv')\nframe.head()"]
    _write_notebook(tmp_path / "with.ipynb", sources, outputs=big_output)
    _write_notebook(tmp_path / "without.ipynb", sources)
    with_outputs, without = load_reference_corpus(tmp_path).units
    assert (with_outputs.text, with_outputs.cells) == (without.text, without.cells)


def test_decode_and_read_reference(tmp_path: Path) -> None:
    assert decode_reference(b"", "e.py").reason == "empty file (no code)"
    assert decode_reference(b"x = 1\x00", "b.py").reason == "binary file (NUL byte in the first 8 kB)"
    assert decode_reference("s = 'é'\n".encode(), "u.py").text == "s = 'é'\n"
    assert decode_reference(b"{", "n.ipynb").reason.startswith("n.ipynb: not a readable notebook")
    (tmp_path / "k.py").write_text("x = 1\n")
    assert read_reference_bytes(tmp_path / "k.py", "k.py") == b"x = 1\n"
    assert read_reference(tmp_path / "k.py", "k.py", max_bytes=3).reason == "file too large (6 bytes > 3)"
    assert read_reference(tmp_path, "dir.py").reason == "not a regular file"
