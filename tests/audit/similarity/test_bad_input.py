"""Hostile and broken reference corpora and agent code: no crash, clear ``skipped`` entries.

Every input is generated in ``tmp_path``: empty, blank and binary files, a 50 MB file, text that
in a Windows code page (read in it), a file name that is not UTF-8, a FIFO, a symbolic link, 5,000 nested parentheses,
a notebook with 10,000 cells, broken notebook JSON, JSON nested past the interpreter's limit,
JSON that is not a notebook, a notebook without code and an R kernel. The same folder goes
through :func:`load_reference_corpus` + :func:`compare` and through a corpus index.
"""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

import pytest

from mleaudit.audit.similarity import compare, load_reference_corpus
from mleaudit.audit.similarity.corpus import MAX_REFERENCE_BYTES
from mleaudit.audit.similarity.index import build_corpus_index, load_corpus_index
from mleaudit.audit.units import CodeUnit

NESTED = "value = " + "(" * 5000 + "1" + ")" * 5000 + "\n"
#: Nested just as deep, with other node types (lists); it still shares the run of closing
#: tokens with NESTED, which costs the pair code seconds (see the slow test below).
NESTED_LISTS = "value = " + "[" * 5000 + "1" + "]" * 5000 + "\n"
#: The last of the 10,000 cells: code shaped like no other cell, so it matches in one place only.
LAST_CELL = """def summarize(rows, key):
    totals = {}
    for row in rows:
        if row[key] not in totals:
            totals[row[key]] = []
        totals[row[key]].append(row["value"] ** 2)
    return {name: sum(values) / len(values) for name, values in totals.items()}"""


def _notebook(sources: list[str], *, language: str = "python", cell_type: str = "code") -> str:
    cells = [{"cell_type": cell_type, "metadata": {}, "source": s, **({"outputs": [], "execution_count": None}
                                                                      if cell_type == "code" else {})}
             for s in sources]
    metadata = {"kernelspec": {"name": language, "language": language, "display_name": language}}
    return json.dumps({"cells": cells, "metadata": metadata, "nbformat": 4, "nbformat_minor": 4})


#: file name -> expected reason (a prefix), or None for files that must be read.
EXPECTED = {
    "empty.py": "empty file (no code)",
    "blank.py": "empty file (no code)",
    "binary.py": "binary file (NUL byte in the first 8 kB)",
    "huge.py": f"file too large (52428800 bytes > {MAX_REFERENCE_BYTES})",
    "bad\\xff.py": "file name is not valid UTF-8",
    "fifo.py": "not a regular file",
    "link.py": "symbolic link (not followed)",
    "broken.ipynb": "broken.ipynb: not a readable notebook (NotJSONError",
    "deep.ipynb": "deep.ipynb: not a readable notebook (",
    "list.ipynb": "list.ipynb: not a readable notebook (",
    "markdown.ipynb": "notebook has no code (no code cells, or only empty ones)",
    "r-kernel.ipynb": "kernel language 'r' has no grammar",
    "nested.py": None,
    "cells.ipynb": None,
    "ok.py": None,
    "latin1.py": None,  # read in the code page it was saved in (cp1252)
}


@pytest.fixture(scope="module")
def bad_corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("bad") / "corpus"
    root.mkdir()
    (root / "empty.py").write_bytes(b"")
    (root / "blank.py").write_text("\n   \n\t\n")
    (root / "binary.py").write_bytes(bytes(range(256)) * 64)
    with open(root / "huge.py", "wb") as stream:  # 50 MiB of valid code
        line = b"x = [i * 2 for i in range(10)]\n"
        stream.write(line * (50 * 1024 * 1024 // len(line)))
        stream.write(b"#" * (50 * 1024 * 1024 % len(line) - 1) + b"\n")
    (root / "latin1.py").write_bytes("name = 'caf\xe9 cr\xe8me'\n".encode("latin-1"))
    with open(os.path.join(os.fsencode(root), b"bad\xff.py"), "wb") as stream:
        stream.write(b"x = 1\n")
    os.mkfifo(root / "fifo.py")
    ok = "import pandas as pd\n\ndef load(path):\n    frame = pd.read_csv(path)\n    return frame.dropna()\n" * 4
    (root / "ok.py").write_text(ok)
    os.symlink(root / "ok.py", root / "link.py")
    (root / "nested.py").write_text(NESTED)
    cells = [f"feature_{i} = table['c{i}'] * {i} + offset" for i in range(9_999)]
    (root / "cells.ipynb").write_text(_notebook(cells + [LAST_CELL]))
    (root / "broken.ipynb").write_text(_notebook(["x = 1"])[:-20])
    (root / "deep.ipynb").write_text("[" * 100_000)
    (root / "list.ipynb").write_text("[1, 2, 3]")
    (root / "markdown.ipynb").write_text(_notebook(["# Title", "Some *text*"], cell_type="markdown"))
    (root / "r-kernel.ipynb").write_text(_notebook(["library(dplyr)"], language="R"))
    assert (root / "huge.py").stat().st_size == 50 * 1024 * 1024
    return root


def _check_skipped(skipped) -> None:
    reasons = {s.path: s.reason for s in skipped}
    expected = {name: reason for name, reason in EXPECTED.items() if reason is not None}
    assert set(reasons) == set(expected)
    for name, reason in expected.items():
        assert reasons[name].startswith(reason), (name, reasons[name])


def test_reference_corpus_skips_bad_files_with_reasons(bad_corpus: Path) -> None:
    corpus = load_reference_corpus(bad_corpus)
    assert [u.path for u in corpus.units] == ["cells.ipynb", "latin1.py", "nested.py", "ok.py"]
    assert corpus.encodings["latin1.py"] == "cp1252" and corpus.encodings["ok.py"] == "utf-8"
    _check_skipped(corpus.skipped)
    cells = corpus.units[0]
    assert len(cells.cells) == 10_000 and cells.describe(cells.cells[-1].start_line) == "cell 9999, line 1"


def test_corpus_index_skips_bad_files_with_reasons(bad_corpus: Path, tmp_path: Path) -> None:
    summary = build_corpus_index([bad_corpus], tmp_path / "bad.index", jobs=2)
    assert summary.added == 4
    _check_skipped(summary.skipped)
    with load_corpus_index(tmp_path / "bad.index") as index:
        _check_skipped(index.skipped())
        assert index.info().references == 4
        nested = CodeUnit(path="code/nested.py", language="python", text=NESTED)
        assert index.candidates(nested) == ["nested.py"]
        agent = CodeUnit(path="code/tail.py", language="python", text=LAST_CELL.replace("rows", "records") + "\n")
        report = index.compare([agent])
    (pair,) = report.pairs
    assert pair.reference_path == "cells.ipynb" and pair.agent_containment > 0.8  # module edges differ
    assert [f.reference_location for f in pair.fragments] == ["cell 9999, line 1"]


def _bad_agents() -> list[CodeUnit]:
    return [
        CodeUnit(path="code/empty.py", language="python", text=""),
        CodeUnit(path="code/nul.py", language="python", text="x = 1\x00\x00 + 2\n" * 50),
        CodeUnit(path="code/nested.py", language="python", text=NESTED_LISTS),
        CodeUnit(path="code/unclosed.py", language="python", text="x = " + "[" * 5000 + "\n"),
        CodeUnit(path="code/model.R", language="r", text="library(dplyr)\n"),
        CodeUnit(path="code/huge.py", language="python", text="x = 1\n" * (MAX_REFERENCE_BYTES // 6 + 1)),
    ]


def test_compare_and_index_compare_survive_bad_agent_code(bad_corpus: Path, tmp_path: Path) -> None:
    agents = _bad_agents()
    corpus = load_reference_corpus(bad_corpus)
    shallow = [u for u in corpus.units if u.path != "nested.py"]
    brute = compare(agents[:5], shallow)  # brute force has no size cap of its own
    assert {s.path: s.reason for s in brute.skipped}["code/model.R"] == "no grammar for language 'r'"
    assert all(p.agent_containment == 0.0 for p in brute.pairs if p.agent_path == "code/empty.py")
    assert {p.agent_path for p in brute.pairs} == {a.path for a in agents[:4]}
    build_corpus_index([bad_corpus], tmp_path / "bad.index")
    agents = [a for a in agents if a.path != "code/nested.py"]
    agents.append(CodeUnit(path="code/copy.py", language="python", text=(bad_corpus / "ok.py").read_text()))
    with load_corpus_index(tmp_path / "bad.index") as index:
        report = index.compare(agents)
    reasons = {s.path: s.reason for s in report.skipped}
    assert reasons["code/model.R"] == "no grammar for language 'r'"
    assert reasons["code/huge.py"].startswith("code too large (")
    assert [(p.agent_path, p.reference_path) for p in report.pairs] == [("code/copy.py", "ok.py")]
    brute_pair = compare(agents[-1:], shallow).pairs[0]
    # Dolos's figures match; the copy score's background differs (the index also holds nested.py)
    assert dataclasses.replace(report.pairs[0], score=0.0, flagged=False, evidence_fragments=()) == dataclasses.replace(
        brute_pair, score=0.0, flagged=False, evidence_fragments=())
    assert report.pairs[0].flagged and report.pairs[0].evidence_fragments


@pytest.mark.slow
def test_deeply_nested_code_against_itself(bad_corpus: Path, tmp_path: Path) -> None:
    # Every k-gram inside 5,000 nested parentheses has the same hash, so the pair code pairs
    # thousands of occurrences with thousands: correct, but tens of seconds.
    agent = CodeUnit(path="code/nested.py", language="python", text=NESTED)
    brute = compare([agent], [u for u in load_reference_corpus(bad_corpus).units if u.path == "nested.py"])
    build_corpus_index([bad_corpus], tmp_path / "bad.index")
    with load_corpus_index(tmp_path / "bad.index") as index:
        expected = tuple(dataclasses.replace(p, score=0.0, flagged=False, evidence_fragments=()) for p in brute.pairs
                         if p.agent_path == "code/nested.py" and p.agent_containment >= 0.5)
        # Dolos's figures only: the copy score's background is the whole index, not one file
        assert tuple(dataclasses.replace(p, score=0.0, flagged=False, evidence_fragments=())
                     for p in index.compare([agent], min_containment=0.5).pairs) == expected
    assert brute.pairs[0].agent_containment == 1.0
