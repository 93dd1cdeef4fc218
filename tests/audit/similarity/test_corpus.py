"""Reference corpora: .py and .ipynb kernels, skipped files with reasons, notebook cell locations."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from audit.errors import ConfigError
from audit.similarity import compare, load_reference_corpus
from audit.similarity.corpus import ReferenceCorpus, reference_id
from audit.units import CodeUnit

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
    assert [u.path for u in corpus.units] == []  # ok.py is 1.4 kB, over the 200-byte cap as well
    reasons = {s.path: s.reason for s in corpus.skipped}
    assert reasons["link.py"] == "symbolic link (not followed)"
    assert reasons["big.py"] == "file too large (600 bytes > 200)"
    assert reasons["latin1.py"].startswith("not UTF-8 text")
    assert ".ipynb_checkpoints/ok-checkpoint.py" not in reasons
    assert [u.path for u in load_reference_corpus(tmp_path).units] == ["big.py", "ok.py"]


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
