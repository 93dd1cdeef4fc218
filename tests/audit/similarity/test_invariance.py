"""Invariances a code-similarity measure must keep (after Dolos's test suite), on tiny kernels."""

from __future__ import annotations

from pathlib import Path

import pytest

from mleaudit.audit.similarity import SimilarityOptions, compare
from mleaudit.audit.units import CodeUnit

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "kernels" / "invariance"


def unit(name: str, path: str | None = None) -> CodeUnit:
    return CodeUnit(path=path or name, language="python", text=(FIXTURES / name).read_text(encoding="utf-8"))


def only_pair(agent: str, reference: str, **kwargs):
    report = compare([unit(agent, f"code/{agent}")], [unit(reference)], **kwargs)
    assert len(report.pairs) == 1
    return report.pairs[0]


def test_identical_is_full_containment() -> None:
    pair = only_pair("base.py", "base.py")
    assert pair.agent_containment == pair.reference_containment == pair.similarity == 1.0
    assert pair.agent_total > 100  # the fixture is large enough to mean something
    assert pair.longest_fragment == pair.agent_total
    assert len(pair.fragments) == 1 and pair.fragments[0].length == pair.agent_total


@pytest.mark.parametrize("variant", ["renamed.py", "reformatted.py"])
def test_renaming_and_reformatting_keep_full_containment(variant: str) -> None:
    # the fixture really differs from the base text
    assert (FIXTURES / variant).read_text() != (FIXTURES / "base.py").read_text()
    pair = only_pair(variant, "base.py")
    assert pair.agent_containment == 1.0
    assert pair.reference_containment == 1.0
    assert pair.similarity == 1.0


def test_reordered_functions_stay_mostly_contained() -> None:
    pair = only_pair("reordered.py", "base.py")
    assert pair.agent_containment >= 0.7
    assert pair.reference_containment >= 0.7
    assert pair.agent_containment < 1.0  # the seams between moved functions do not match


def test_unrelated_code_is_not_contained() -> None:
    pair = only_pair("unrelated.py", "base.py")
    assert pair.agent_containment <= 0.1
    assert pair.reference_containment <= 0.1
    assert pair.similarity <= 0.1


def test_overlap_only_in_boilerplate_counts_zero() -> None:
    without = only_pair("agent_with_starter.py", "kernel_with_starter.py")
    assert without.agent_containment > 0.2  # the starter code alone makes them look alike
    pair = only_pair("agent_with_starter.py", "kernel_with_starter.py", boilerplate=[unit("starter.py")])
    assert pair.agent_containment == 0.0
    assert pair.reference_containment == 0.0
    assert pair.similarity == 0.0
    assert pair.total_overlap == 0 and pair.fragments == ()
    assert pair.agent_ignored > 0 and pair.reference_ignored > 0


@pytest.mark.parametrize("side", ["agent", "reference"])
def test_empty_file_scores_zero(side: str) -> None:
    agent, reference = ("empty.py", "base.py") if side == "agent" else ("base.py", "empty.py")
    pair = only_pair(agent, reference)
    assert (pair.agent_containment, pair.reference_containment, pair.similarity) == (0.0, 0.0, 0.0)
    assert pair.longest_fragment == 0 and pair.fragments == ()


def test_empty_against_empty() -> None:
    pair = only_pair("empty.py", "empty.py")
    assert (pair.agent_total, pair.reference_total, pair.similarity) == (0, 0, 0.0)


def test_shorter_kgrams_keep_invariances_but_add_noise() -> None:
    options = SimilarityOptions(kgram_length=12, kgrams_in_window=8)
    assert only_pair("renamed.py", "base.py", options=options).agent_containment == 1.0
    assert only_pair("reordered.py", "base.py", options=options).agent_containment >= 0.7
    # k-grams of a dozen tokens are common structure (calls, subscripts), which is why the
    # default k (Dolos's 23) is longer: unrelated code matches more with short k-grams.
    short = only_pair("unrelated.py", "base.py", options=options).agent_containment
    assert short > only_pair("unrelated.py", "base.py").agent_containment
