"""``compare`` at scale: the pairs kept per agent file, the figures measured for every pair, the
detector's candidate references, and bad input on the ``similarity compare`` and ``audit`` paths.

The corpora are made from the six kernels of ``tests/fixtures/similarity/detect`` (a made-up
bike-rental competition): whole, or cut into overlapping twelve-line pieces when a test needs
more references than a cap.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from mleaudit.audit.errors import ConfigError
from mleaudit.audit.similarity import (
    DEFAULT_MAX_PAIRS_PER_AGENT,
    CoverageTable,
    DetectionCorpus,
    FingerprintIndex,
    IndexedFile,
    Role,
    SimilarityOptions,
    TokenizedFile,
    compare,
    dolos_metrics,
    tokenize_unit,
)
from mleaudit.audit.similarity.cli import similarity
from mleaudit.audit.units import CodeUnit

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "similarity" / "detect"
KERNELS = FIXTURES / "kernels"
HOST = (FIXTURES / "agent" / "host.py").read_text(encoding="utf-8").split("\n")
IDIOMS = (FIXTURES / "agent" / "idioms.py").read_text(encoding="utf-8")


def _kernel_lines(name: str) -> list[str]:
    return (KERNELS / name).read_text(encoding="utf-8").split("\n")


def _kernels() -> list[CodeUnit]:
    return [CodeUnit(path=p.name, language="python", text=p.read_text(encoding="utf-8"))
            for p in sorted(KERNELS.glob("*.py"))]


def _pieces(width: int = 12, step: int = 6) -> list[CodeUnit]:
    """Overlapping pieces of every kernel: a corpus of 30 references."""
    out = []
    for path in sorted(KERNELS.glob("*.py")):
        lines = path.read_text(encoding="utf-8").split("\n")
        for start in range(0, max(1, len(lines) - width + step), step):
            text = "\n".join(lines[start:start + width])
            if text.strip():
                out.append(CodeUnit(path=f"{path.stem}/part{start:02d}.py", language="python", text=text))
    return out


def _agent(path: str = "code/solution.py", kernel: str = "bravo-rush-hours.py", lines: slice = slice(13, 23)) -> CodeUnit:
    pasted = _kernel_lines(kernel)[lines]
    return CodeUnit(path=path, language="python", text="\n".join(HOST[:10] + pasted + HOST[10:]))


def _agents() -> list[CodeUnit]:
    return [
        _agent(),
        _agent("code/stack.py", "delta-stacking.py", slice(18, 34)),
        CodeUnit(path="code/idioms.py", language="python", text=IDIOMS),
        CodeUnit(path="code/host.py", language="python", text="\n".join(HOST)),
    ]


def _key(pair) -> tuple[str, str]:
    return pair.agent_path, pair.reference_path


def _expected_kept(pairs, n: int, display_threshold: float = 0.0) -> set[tuple[str, str]]:
    """The documented rule applied to a full (uncapped) report."""
    kept: set[tuple[str, str]] = set()
    for agent in {p.agent_path for p in pairs}:
        mine = [p for p in pairs if p.agent_path == agent]
        kept |= {_key(p) for p in mine if p.flagged}
        by_score = sorted(mine, key=lambda p: (-p.score, -p.agent_containment, p.reference_path))
        kept |= {_key(p) for p in by_score[:n]}
        shown = [p for p in mine if max(p.agent_containment, p.reference_containment) >= display_threshold]
        by_containment = sorted(shown, key=lambda p: (-p.agent_containment, p.reference_path))
        kept |= {_key(p) for p in by_containment[:n]}
    return kept


# -- options ------------------------------------------------------------------------------------------


def test_new_option_defaults_validates_and_round_trips() -> None:
    assert SimilarityOptions().max_pairs_per_agent == DEFAULT_MAX_PAIRS_PER_AGENT == 10
    for bad in (-1, 2.5, True, "all"):
        with pytest.raises(ConfigError, match=f"max_pairs_per_agent must be None or an integer >= 0, got {bad!r}"):
            SimilarityOptions(max_pairs_per_agent=bad)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="max_pairs must be None or an integer >= 0, got -1"):
        SimilarityOptions(max_pairs=-1)
    with pytest.raises(ConfigError, match="max_fragments_per_pair must be None or an integer >= 1, got 0"):
        SimilarityOptions(max_fragments_per_pair=0)
    unbounded = SimilarityOptions(max_pairs_per_agent=None, max_pairs=None)
    assert SimilarityOptions.from_dict(unbounded.to_dict()) == unbounded


# -- figures for every pair ---------------------------------------------------------------------------


@pytest.mark.parametrize("max_doc_fraction", [None, 0.5])
def test_coverage_table_counts_equal_dolos_covered_counts(max_doc_fraction: float | None) -> None:
    index = FingerprintIndex(max_doc_fraction=max_doc_fraction)
    index.add_boilerplate(tokenize_unit(CodeUnit(path="starter.py", language="python",
                                                 text="\n".join(_kernel_lines("alpha-baseline.py")[:12]))))
    references = [index.add_reference(tokenize_unit(u)) for u in _pieces()]
    agents = [index.add_agent(tokenize_unit(u)) for u in _agents()]
    ignored = index.ignored_hashes
    table = CoverageTable([r.hash_counts(ignored) for r in references])
    for agent in agents:
        agent_covered, reference_covered = table.shared_counts(*agent.hash_counts(ignored))
        for k, reference in enumerate(references):
            metrics = dolos_metrics(agent, reference, ignored)
            assert (agent_covered[k], reference_covered[k]) == (metrics.left_covered, metrics.right_covered)
    assert table.document_frequency(np.array([-1])).tolist() == [0]


def test_indexed_file_from_hashes_equals_the_indexed_one() -> None:
    index = FingerprintIndex()
    entry = index.add_reference(tokenize_unit(_kernels()[1]))
    rebuilt = IndexedFile.from_hashes(id=entry.id, role=Role.REFERENCE, file=entry.file,
                                      hashes=[f.hash for f in entry.fingerprints],
                                      kgram_starts=np.array([f.start for f in entry.fingerprints]), kgram_length=23)
    assert rebuilt.fingerprints == entry.fingerprints
    assert list(rebuilt.occurrences.items()) == list(entry.occurrences.items())
    with pytest.raises(ValueError, match="3 fingerprint hashes but 2 k-gram starts"):
        IndexedFile.from_hashes(id=0, role=Role.AGENT, file=entry.file, hashes=[1, 2, 3], kgram_starts=[0, 1],
                                kgram_length=23)


def test_tokenized_file_from_arrays() -> None:
    tokenized = tokenize_unit(_kernels()[0])
    copy = TokenizedFile.from_arrays(path=tokenized.path, language="python", text=tokenized.text,
                                     tokens=tokenized.tokens, starts=tokenized.starts, ends=tokenized.ends)
    assert copy.line_offsets == tokenized.line_offsets and copy.ordered_regions
    assert np.array_equal(copy.token_hashes, tokenized.token_hashes)
    assert copy.tokens_span(3, 40) == tokenized.tokens_span(3, 40)
    stand_in = TokenizedFile.from_arrays(path=tokenized.path, language="python", text="",
                                         line_offsets=tokenized.line_offsets)
    assert stand_in.offsets_span(100, 140) == tokenized.offsets_span(100, 140)
    with pytest.raises(ValueError, match="line offsets must start at 0"):
        TokenizedFile.from_arrays(path="k.py", language="python", text="", line_offsets=(3, 1))
    with pytest.raises(ValueError, match="2 tokens but 1 starts"):
        TokenizedFile.from_arrays(path="k.py", language="python", text="ab", tokens=("a", "b"), starts=(0,), ends=(1,))


# -- which pairs are kept -----------------------------------------------------------------------------


def test_capped_report_keeps_the_documented_pairs_unchanged() -> None:
    references = _pieces()
    full = compare(_agents(), references, SimilarityOptions(max_pairs_per_agent=None))
    assert len(full.pairs) == len(_agents()) * len(references)
    capped = compare(_agents(), references, SimilarityOptions(max_pairs_per_agent=3))
    assert {_key(p) for p in capped.pairs} == _expected_kept(full.pairs, 3)
    by_key = {_key(p): p for p in full.pairs}
    assert all(p == by_key[_key(p)] for p in capped.pairs)  # figures, fragments, score: the same
    assert [_key(p) for p in capped.pairs] == [_key(p) for p in full.pairs if _key(p) in {_key(q) for q in capped.pairs}]
    for agent in {p.agent_path for p in full.pairs}:
        flagged = sum(p.flagged for p in full.pairs if p.agent_path == agent)
        assert sum(p.agent_path == agent for p in capped.pairs) <= 2 * 3 + flagged
    assert any(p.flagged for p in capped.pairs)


def test_overall_cap_keeps_the_first_pairs_in_report_order_and_every_flagged_one() -> None:
    references = _pieces()
    full = compare(_agents(), references, SimilarityOptions(max_pairs_per_agent=None)).pairs
    capped = compare(_agents(), references, SimilarityOptions(max_pairs_per_agent=3, max_pairs=3)).pairs
    assert capped[:3] == full[:3]
    assert {_key(p) for p in capped} == {_key(p) for p in full[:3]} | {_key(p) for p in full if p.flagged}


def test_fragment_cap_keeps_the_longest_fragments_in_agent_order() -> None:
    full = compare(_agents(), _kernels()).pairs
    trimmed = compare(_agents(), _kernels(), SimilarityOptions(max_fragments_per_pair=3)).pairs
    assert any(len(p.fragments) > 3 for p in full)
    for before, after in zip(full, trimmed):
        assert dataclasses.replace(after, fragments=before.fragments) == before
        assert len(after.fragments) == min(3, len(before.fragments))
        assert list(after.fragments) == [f for f in before.fragments if f in after.fragments]
        lengths = sorted((f.length for f in before.fragments), reverse=True)
        assert sorted((f.length for f in after.fragments), reverse=True) == lengths[:3]


def test_small_corpora_keep_every_pair() -> None:
    full = compare(_agents(), _kernels(), SimilarityOptions(max_pairs_per_agent=None))
    assert compare(_agents(), _kernels()).pairs == full.pairs


def test_flagged_pairs_are_kept_past_the_cap_and_the_display_threshold() -> None:
    report = compare([_agent()], _pieces(), SimilarityOptions(max_pairs_per_agent=1, display_threshold=1.0))
    flagged = [p for p in report.pairs if p.flagged]
    assert flagged and all(p.reference_path.startswith("bravo-rush-hours/") for p in flagged)
    full = compare([_agent()], _pieces(), SimilarityOptions(max_pairs_per_agent=None, display_threshold=1.0))
    assert {_key(p) for p in full.pairs if p.flagged} == {_key(p) for p in flagged}
    assert {_key(p) for p in report.pairs} == _expected_kept(full.pairs, 1, display_threshold=1.0)


def test_caps_of_zero_keep_the_flagged_pairs_only() -> None:
    full = compare(_agents(), _pieces(), SimilarityOptions(max_pairs_per_agent=None))
    flagged = [p for p in full.pairs if p.flagged]
    only = compare(_agents(), _pieces(), SimilarityOptions(max_pairs_per_agent=0, max_pairs=0)).pairs
    assert flagged and list(only) == flagged


def test_select_chooses_the_reported_pairs_among_the_measured() -> None:
    seen = []

    def best_only(measured):
        seen.extend(measured)
        return [max(range(len(measured)), key=lambda i: measured[i].score)]

    full = compare(_agents(), _pieces(), SimilarityOptions(max_pairs_per_agent=None))
    chosen = compare(_agents(), _pieces(), SimilarityOptions(max_pairs_per_agent=None), select=best_only).pairs
    assert len(seen) == len(full.pairs) and len(chosen) == 1
    best = max(full.pairs, key=lambda p: p.score)
    assert chosen[0] == best and seen[[m.score for m in seen].index(best.score)].reference.path == best.reference_path


def test_code_blocks_of_one_log_are_capped_together() -> None:
    blocks = [dataclasses.replace(unit, path="logs/journal.json") for unit in _agents()]
    report = compare(blocks, _pieces(), SimilarityOptions(max_pairs_per_agent=2))
    flagged = sum(p.flagged for p in report.pairs)
    assert len(report.pairs) <= 2 * 2 + flagged
    full = compare(blocks, _pieces(), SimilarityOptions(max_pairs_per_agent=None))
    assert max(p.agent_containment for p in report.pairs) == max(p.agent_containment for p in full.pairs)


# -- the detector and worker processes ----------------------------------------------------------------


def test_every_pair_is_scored_once_and_only_kept_pairs_get_fragments(monkeypatch) -> None:
    import mleaudit.audit.similarity.comparison as similarity_api

    scored, reported = [], []
    evidence_all, pair_report = DetectionCorpus.evidence_all, similarity_api.pair_report
    monkeypatch.setattr(DetectionCorpus, "evidence_all",
                        lambda self, agent, wanted=None: scored.append(agent.path) or evidence_all(self, agent, wanted))
    monkeypatch.setattr(similarity_api, "pair_report", lambda *a, **k: reported.append(1) or pair_report(*a, **k))
    report = compare(_agents(), _pieces(), SimilarityOptions(max_pairs_per_agent=2))
    assert sorted(scored) == sorted(u.path for u in _agents())
    assert len(reported) == len(report.pairs) < len(_agents()) * len(_pieces())


def test_worker_processes_give_the_same_report() -> None:
    agents = _agents() + [dataclasses.replace(u, path="logs/journal.json") for u in _agents()[:2]]
    serial = compare(agents, _pieces(), SimilarityOptions(max_pairs_per_agent=2))
    assert compare(agents, _pieces(), SimilarityOptions(max_pairs_per_agent=2), jobs=2) == serial


# -- mleaudit similarity compare: bad input -----------------------------------------------------------


@pytest.fixture(scope="module")
def rules(tmp_path_factory) -> str:
    """A rules folder holding only the plagiarism rule (loading the whole set is slow)."""
    folder = tmp_path_factory.mktemp("rules")
    shipped = Path(__file__).resolve().parents[3] / "rules" / "plagiarism" / "plag-kernel-containment.yaml"
    (folder / shipped.name).write_text(shipped.read_text(encoding="utf-8"), encoding="utf-8")
    return str(folder)


def _run(*args: str):
    return CliRunner().invoke(similarity, list(args))


def test_compare_command_reference_folder_without_kernels(tmp_path: Path) -> None:
    agent = tmp_path / "solution.py"
    agent.write_text(_agent().text, encoding="utf-8")
    empty = tmp_path / "kernels"
    empty.mkdir()
    result = _run("compare", str(agent), "--reference", str(empty))
    assert result.exit_code == 2 and f"{empty}: no readable .py/.ipynb reference kernel" in result.output
    (empty / "broken.ipynb").write_text("{not json", encoding="utf-8")
    (empty / "notes.txt").write_text("hello", encoding="utf-8")
    result = _run("compare", str(agent), "--reference", str(empty))
    assert result.exit_code == 2 and "(1 skipped: broken.ipynb: " in result.output
    result = _run("compare", str(agent), "--reference", str(tmp_path / "missing"))
    assert result.exit_code == 2 and "missing" in result.output and "not a folder" in result.output
    assert "Traceback" not in result.output


def test_compare_command_missing_agent_path(tmp_path: Path) -> None:
    result = _run("compare", str(tmp_path / "nope.py"), "--reference", str(KERNELS))
    assert result.exit_code == 2 and f"{tmp_path / 'nope.py'}: no such file or folder" in result.output


def test_compare_command_skips_empty_agent_files(tmp_path: Path, rules: str) -> None:
    agent = tmp_path / "solution.py"
    agent.write_text(_agent().text, encoding="utf-8")
    (tmp_path / "empty.py").write_text("", encoding="utf-8")
    (tmp_path / "blank.py").write_text("\n  \n", encoding="utf-8")
    result = _run("compare", str(tmp_path), "--reference", str(KERNELS), "--format", "json", "--rules", rules)
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert {p["agent"] for p in data["pairs"]} == {f"{tmp_path}/solution.py"}
    assert {(s["path"], s["reason"]) for s in data["skipped"]} == {
        (f"{tmp_path}/empty.py", "empty file (no code)"), (f"{tmp_path}/blank.py", "empty file (no code)")}
    result = _run("compare", str(tmp_path), "--reference", str(KERNELS), "--rules", rules)
    assert f"skipped {tmp_path}/empty.py: empty file (no code)" in result.stderr
    result = _run("compare", str(tmp_path / "empty.py"), "--reference", str(KERNELS))
    assert result.exit_code == 2
    assert f"no readable .py/.ipynb agent file (1 skipped: {tmp_path}/empty.py: empty file (no code))" in result.output


def test_compare_command_lists_the_kept_pairs_top_n_or_all(tmp_path: Path, rules: str) -> None:
    corpus = tmp_path / "kernels"
    for unit in _pieces():
        (corpus / unit.path).parent.mkdir(parents=True, exist_ok=True)
        (corpus / unit.path).write_text(unit.text, encoding="utf-8")
    agent = tmp_path / "solution.py"
    agent.write_text(_agent().text, encoding="utf-8")
    rows = lambda *extra: json.loads(_run("compare", str(agent), "--reference", str(corpus),  # noqa: E731
                                          "--format", "json", "--rules", rules, *extra).stdout)["pairs"]
    every = rows("--all")
    assert len(every) == len(_pieces())
    kept = rows()
    flagged = sum(p["flagged"] for p in every)
    assert DEFAULT_MAX_PAIRS_PER_AGENT < len(kept) <= 2 * DEFAULT_MAX_PAIRS_PER_AGENT + flagged
    assert [p["reference"] for p in kept] == [p["reference"] for p in every if p["reference"] in {q["reference"] for q in kept}]
    assert [p["reference"] for p in rows("--top", "4")] == [p["reference"] for p in every[:4]]
    assert rows("--jobs", "2") == kept
    result = _run("compare", str(agent), "--reference", str(corpus), "--top", "2", "--all")
    assert result.exit_code == 2 and "at most one of --top N and --all" in result.output


# -- mleaudit audit: the similarity section -----------------------------------------------------------


@pytest.fixture(scope="module")
def ruleset():
    from mleaudit.audit.rules.loader import find_rules_root, load_ruleset

    return load_ruleset([find_rules_root(None)])


def _audit(ruleset, run_dir: Path, corpus: Path, **options):
    from mleaudit.audit.pipeline import AuditOptions, audit_run
    from mleaudit.audit.run import load_run

    return audit_run(load_run(run_dir), ruleset=ruleset, options=AuditOptions(corpus_dir=corpus, **options))


def test_audit_keeps_the_top_pairs_of_an_uncapped_comparison(tmp_path: Path, ruleset) -> None:
    corpus = tmp_path / "kernels"
    for unit in _pieces():
        (corpus / unit.path).parent.mkdir(parents=True, exist_ok=True)
        (corpus / unit.path).write_text(unit.text, encoding="utf-8")
    run = tmp_path / "run"
    (run / "code").mkdir(parents=True)
    for unit in _agents():
        (run / unit.path).write_text(unit.text, encoding="utf-8")
    capped = _audit(ruleset, run, corpus, similarity=SimilarityOptions(max_pairs_per_agent=1), top_pairs=4)
    uncapped = SimilarityOptions(max_pairs_per_agent=None, max_pairs=len(_agents()) * len(_pieces()))
    full = _audit(ruleset, run, corpus, similarity=uncapped, top_pairs=4)
    assert capped.similarity["options"]["max_pairs_per_agent"] == 4  # raised to top_pairs
    assert capped.similarity["options"]["max_pairs"] == 4
    assert capped.similarity["pairs"] == full.similarity["pairs"]
    assert [f.to_dict() for f in capped.findings] == [f.to_dict() for f in full.findings]
    assert any(f.rule_id == "plag-kernel-containment" for f in capped.findings)


def test_audit_with_a_corpus_without_kernels_says_so(tmp_path: Path, ruleset) -> None:
    corpus = tmp_path / "kernels"
    corpus.mkdir()
    (corpus / "model.ipynb").write_text(json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": []}),
                                        encoding="utf-8")
    run = tmp_path / "run"
    (run / "code").mkdir(parents=True)
    (run / "code" / "train.py").write_text(_agent().text, encoding="utf-8")
    report = _audit(ruleset, run, corpus)
    assert report.similarity["reference_count"] == 0 and report.similarity["pairs"] == []
    reasons = {s.path: s.reason for s in report.skipped}
    assert reasons[str(corpus)].startswith("no readable reference notebook")
    assert reasons["model.ipynb"].startswith("notebook has no code")


@pytest.mark.parametrize("display_threshold", [1.0, 0.25, 0.0])
def test_pairs_the_evidence_bound_excludes_are_never_scored_and_the_report_is_unchanged(monkeypatch, display_threshold):
    import mleaudit.audit.similarity.measuring as measuring

    agents, references = _agents(), _pieces()
    kernels = [CodeUnit(path=f"kernels/{p.name}", language="python", text=p.read_text(encoding="utf-8"))
               for p in sorted(KERNELS.glob("*.py"))]
    references = references + kernels  # whole kernels too, so that some pairs are flagged
    options = SimilarityOptions(display_threshold=display_threshold, max_pairs_per_agent=3)
    scored: list[int] = []
    evidence_all = DetectionCorpus.evidence_all

    def counting(self, agent, wanted=None):
        found = evidence_all(self, agent, wanted)
        scored.append(sum(1 for e in found if e is not None))
        return found

    monkeypatch.setattr(DetectionCorpus, "evidence_all", counting)
    bounded = compare(agents, references, options)
    bounded_scored = sum(scored)
    scored.clear()
    monkeypatch.setattr(measuring, "_worth_scoring", lambda agent, visible, shared: None)
    everything = compare(agents, references, options)
    assert bounded == everything
    assert any(p.flagged for p in everything.pairs)
    assert sum(scored) == len(agents) * len(references)
    if display_threshold == 1.0:  # nothing is shown by containment alone: only possible copies are scored
        assert bounded_scored < sum(scored) / 2


@pytest.mark.parametrize("threshold", [0.63, 1 - 2 ** -52, 1.0])
def test_needed_bits_is_where_the_score_as_computed_reaches_the_threshold(threshold):
    from mleaudit.audit.similarity.bounds import needed_bits
    from mleaudit.audit.similarity.detect import score_from_bits

    needed = needed_bits(threshold)
    assert score_from_bits(needed + 1e-5) >= threshold  # past it: flagged
    assert score_from_bits(needed - 1e-3) < threshold  # well before it: not


def test_a_pair_whose_score_rounds_to_one_is_flagged_at_threshold_one_with_or_without_the_bound(monkeypatch):
    import argparse
    import shlex
    import textwrap

    import mleaudit.audit.similarity.measuring as measuring

    def source(module) -> str:
        with open(module.__file__, encoding="utf-8") as handle:
            return handle.read()

    copied = source(argparse)
    agent = CodeUnit(path="agent/a.py", language="python", text=source(shlex) + "\n" + copied[: int(len(copied) * 0.9)])
    reference = CodeUnit(path="ref/k.py", language="python", text=source(textwrap) + "\n" + copied)
    options = SimilarityOptions(score_threshold=1.0, display_threshold=1.0)
    bounded = compare([agent], [reference], options)
    monkeypatch.setattr(measuring, "_worth_scoring", lambda agent, visible, shared: None)
    assert compare([agent], [reference], options) == bounded
    assert [(p.score, p.flagged) for p in bounded.pairs] == [(1.0, True)]
