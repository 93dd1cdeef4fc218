"""Exact parity with Dolos 3.5.1 on notebook exports holding IPython lines.

Magics, shell escapes and help lines are syntax errors to tree-sitter-python, and the tree that
tree-sitter recovers from them depends on the tree-sitter runtime, not only on the grammar:
Dolos 3.5.1 runs the 0.25 runtime, and the 0.26 runtime recovers differently from some of these
lines (one token stream in six of the cases below, and one fingerprint more or fewer in a file).
The engine therefore runs the tree-sitter 0.25 runtime too.

Two checks: the figures Dolos gave for the cases of :mod:`tests.audit.similarity.ipython_cases`,
recorded there as data (always run); and Dolos itself on the same texts through Node.js, when an
install of it is found (``MLEAUDIT_DOLOS_DIR``, see ``benchmarks/dolos_node.py``), else skipped
with the reason.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import sys
from pathlib import Path

import pytest

from mleaudit.audit.similarity.fingerprint_index import FingerprintIndex
from mleaudit.audit.similarity.pairs import dolos_metrics
from mleaudit.audit.similarity.tokenize import tokenize_hashes, tokenize_text
from tests.audit.similarity.ipython_cases import CASES, DOLOS

REPO_ROOT = Path(__file__).resolve().parents[3]
FIELDS = ("similarity", "totalOverlap", "longestFragment", "leftCovered", "rightCovered", "leftTotal", "rightTotal")


def _figures(metrics) -> tuple:
    return (metrics.similarity, metrics.total_overlap, metrics.longest_fragment, metrics.left_covered,
            metrics.right_covered, metrics.left_total, metrics.right_total)


@pytest.fixture(scope="module")
def indexed():
    index = FingerprintIndex()  # Dolos's defaults: k = 23, window 17
    return {name: index.add_reference(tokenize_text(text, "python", name)) for name, text in CASES.items()}


def test_tree_sitter_runtime_is_dolos_s() -> None:
    # node tree-sitter 0.25.1 (Dolos 3.5.1's) vendors the same C runtime as py-tree-sitter 0.25.2
    version = importlib.metadata.version("tree-sitter")
    assert version.startswith("0.25."), (
        f"tree-sitter {version} is installed; Dolos 3.5.1 parses with the 0.25 runtime, whose error "
        "recovery (IPython lines, broken code) other runtimes do not reproduce")


def test_cases_cover_every_way_of_writing_ipython_lines() -> None:
    joined = "".join(CASES.values())
    for form in ("%matplotlib inline", "%%time", "! mkdir", "!pip", "!   pip", "files = !ls", "train?",
                 "??np.mean", "get_ipython().system", "    %time", "\t!ls", "\r\n", "\ufeff"):
        assert form in joined, form
    assert any(not text.endswith("\n") for text in CASES.values())
    assert set(DOLOS) == set(CASES)


@pytest.mark.parametrize("name", sorted(CASES))
def test_tokens_equal_dolos_s(name: str) -> None:
    tokens = tokenize_text(CASES[name], "python", name).tokens
    expected = DOLOS[name]
    assert len(tokens) == expected["tokens"]
    assert hashlib.sha256(" ".join(tokens).encode("utf-8")).hexdigest() == expected["sha256"]
    # the hashes-only path of ``similarity pairs`` parses the same way
    assert len(tokenize_hashes(CASES[name], "python")) == expected["tokens"]


@pytest.mark.parametrize("name", sorted(set(CASES) - {"plain"}))
def test_pair_figures_equal_dolos_s(name: str, indexed) -> None:
    ours = _figures(dolos_metrics(indexed[name], indexed["plain"]))
    expected = DOLOS[name]["pair"]
    assert ours[0] == pytest.approx(expected[0], abs=1e-12)
    assert ours[1:] == tuple(expected[1:]), dict(zip(FIELDS[1:], zip(ours[1:], expected[1:])))
    assert ours[5] == DOLOS[name]["fingerprints"]
    assert ours[6] == DOLOS["plain"]["fingerprints"]


def _dolos_node():
    path = REPO_ROOT / "benchmarks" / "dolos_node.py"
    spec = importlib.util.spec_from_file_location("dolos_node", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("dolos_node", module)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def dolos_run():
    node = _dolos_node()
    try:
        node.find_dolos()
    except node.DolosUnavailable as exc:
        pytest.skip(f"Dolos itself not available: {exc}")
    return node.run_dolos(CASES)


def test_recorded_figures_are_dolos_s(dolos_run) -> None:
    for name in CASES:
        tokens = dolos_run.tokens[name]
        assert len(tokens) == DOLOS[name]["tokens"], name
        assert hashlib.sha256(" ".join(tokens).encode("utf-8")).hexdigest() == DOLOS[name]["sha256"], name
        assert dolos_run.fingerprints[name] == DOLOS[name]["fingerprints"], name


def test_every_pair_equals_dolos_itself(dolos_run, indexed) -> None:
    for name, text in CASES.items():
        assert list(tokenize_text(text, "python", name).tokens) == dolos_run.tokens[name], name
    assert len(dolos_run.pairs) == len(CASES) * (len(CASES) - 1) // 2
    differing = []
    for (left, right), theirs in dolos_run.pairs.items():
        ours = dict(zip(FIELDS, _figures(dolos_metrics(indexed[left], indexed[right]))))
        if abs(ours["similarity"] - theirs["similarity"]) > 1e-12 or any(ours[f] != theirs[f] for f in FIELDS[1:]):
            differing.append(f"{left} x {right}: ours {ours}, Dolos {theirs}")
    assert not differing, "\n".join(differing)
