"""The copy detector: lexing, tiling, background model, score, threshold, and detection quality.

Invariances run on a small corpus of our own (``tests/fixtures/similarity/detect``: six kernels
of a made-up bike-rental competition, an agent script written in the same idioms, and an
unrelated host script). Detection quality on the shared partial copies goes through
``benchmarks/detection_quality.py`` (same ground truth as the printed figures).
"""

from __future__ import annotations

import importlib.util
import logging
import re
import sys
from pathlib import Path

import numpy as np
import pytest

from mleaudit.audit.rules.loader import find_rules_root, load_ruleset
from mleaudit.audit.similarity import (
    DEFAULT_SCORE_THRESHOLD,
    DetectionCorpus,
    FingerprintIndex,
    SimilarityOptions,
    compare,
    dolos_metrics,
    profile_code,
    score_threshold_from_rules,
    tokenize_text,
)
from mleaudit.audit.similarity.detect import (
    AgentQuery,
    NgramTable,
    bits_from_score,
    find_tiles,
    jump_bits,
    lex_code,
    score_from_bits,
    token_bits,
)
from mleaudit.audit.score_threshold import load_score_threshold
from mleaudit.audit.units import CodeUnit
from tests.conftest import REPO_ROOT, shared_path

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "similarity" / "detect"
KERNELS = FIXTURES / "kernels"


def _kernels() -> list[CodeUnit]:
    return [CodeUnit(path=p.name, language="python", text=p.read_text(encoding="utf-8"))
            for p in sorted(KERNELS.glob("*.py"))]


def _lines(name: str) -> list[str]:
    return (KERNELS / name).read_text(encoding="utf-8").split("\n")


HOST = (FIXTURES / "agent" / "host.py").read_text(encoding="utf-8").split("\n")
#: Ten lines of one kernel: its feature function (a dict, constants, bins) -- a typical paste.
SLICE = _lines("bravo-rush-hours.py")[13:23]


def _scores(agent_text: str, **kwargs) -> dict[str, tuple[float, bool]]:
    report = compare([CodeUnit(path="code/solution.py", language="python", text=agent_text)], _kernels(), **kwargs)
    return {p.reference_path: (p.score, p.flagged) for p in report.pairs}


def _rename(lines: list[str]) -> list[str]:
    return [re.sub(r"\bframe\b", "tbl", line) for line in lines]


# -- lexing -----------------------------------------------------------------------------------------


def test_lexer_ignores_names_layout_comments_and_magics() -> None:
    original = "result = model.fit(X_train, y_train)  # train\nprint(f'score {result:.3f}')\n"
    variant = ("%matplotlib inline\n!pip install lightgbm\nout  =  clf.fit(\n    feats,\n    labels\n)\n"
               'print(f"score {out:.3f}")\n')
    assert lex_code(original).tokens == lex_code(variant).tokens
    assert lex_code("a = 1").tokens != lex_code("a = 1,").tokens  # punctuation is kept


def test_lexer_keeps_literal_values() -> None:
    assert lex_code("x = f('a.csv', 0.2)").tokens != lex_code("x = f('b.csv', 0.2)").tokens
    assert lex_code("x = f('a.csv', 0.2)").tokens != lex_code("x = f('a.csv', 0.3)").tokens
    assert lex_code("x = f('a.csv')").tokens == lex_code('y = g("a.csv")').tokens


def test_lexer_is_line_local_so_a_splice_inside_a_string_changes_nothing_after_it() -> None:
    code = 'def f():\n    """Doc\n    more doc\n    """\n    return g(x, "k", 3)\n'
    spliced = "\n".join(code.split("\n")[2:])  # starts inside the docstring
    assert lex_code(code).tokens[-9:] == lex_code(spliced).tokens[-9:]


def test_token_offsets_point_at_the_tokens() -> None:
    text = "total = f(x, 'a.csv')\n"
    lexed = lex_code(text)
    assert [text[s:e] for s, e in zip(lexed.starts, lexed.ends)] == ["total", "=", "f", "(", "x", ",", "'a.csv'", ")"]


# -- tiles and score --------------------------------------------------------------------------------


def test_tiles_never_overlap_and_prefer_the_longest_run() -> None:
    kernel = "\n".join(_lines("delta-stacking.py"))
    agent = "\n".join(HOST[:8] + _lines("delta-stacking.py")[20:32] + HOST[8:] + _lines("delta-stacking.py")[24:28])
    a, r = profile_code(agent), profile_code(kernel)
    tiles = find_tiles(a, r)
    covered_a = [i for t in tiles for i in range(t.agent_start, t.agent_stop)]
    covered_r = [i for t in tiles for i in range(t.reference_start, t.reference_stop)]
    assert len(covered_a) == len(set(covered_a)) and len(covered_r) == len(set(covered_r))
    for t in tiles:
        assert a.ids[t.agent_start:t.agent_stop] == r.ids[t.reference_start:t.reference_stop]
        assert t.length >= 6
    # the pasted twelve lines come out as one tile; the repeated four lines match what is left
    assert max(t.length for t in tiles) >= 100


def test_score_maps_bits_monotonically_into_the_unit_interval() -> None:
    values = [score_from_bits(b) for b in (0, 10, 100, 160, 400)]
    assert values == sorted(values) and values[0] == 0.0 and values[2] == 0.5 and values[-1] < 1.0
    assert bits_from_score(score_from_bits(123.0)) == pytest.approx(123.0)
    assert bits_from_score(DEFAULT_SCORE_THRESHOLD) == pytest.approx(100.0)


def test_background_leaves_the_reference_and_its_forks_out() -> None:
    profiles = [profile_code(u.text, u.path) for u in _kernels()]
    fork = profile_code(_kernels()[1].text.replace("0.037", "0.04"), "fork.py")
    table = NgramTable.from_profiles(profiles + [fork])
    agent = profile_code("\n".join(SLICE))
    # the corpus alone: the shipped background of ordinary code would explain part of the slice
    with_it = token_bits(agent, table, background=None).sum()
    without = token_bits(agent, table, [profiles[1], fork], background=None).sum()
    # the slice is ordinary when its own kernel counts, surprising when it (and its fork) do not
    assert without > 3 * with_it
    corpus = DetectionCorpus(profiles + [fork])
    assert corpus.near_duplicates(1) == (1, len(profiles))
    assert 1 not in corpus.near_duplicates(0) and 0 in corpus.near_duplicates(0)


def test_leaving_files_out_equals_a_table_built_without_them() -> None:
    profiles = [profile_code(u.text, u.path) for u in _kernels()]
    agent = profile_code("\n".join(HOST[:10] + SLICE + HOST[10:]))
    full = NgramTable.from_profiles(profiles)
    without = NgramTable.from_profiles(profiles[:1] + profiles[2:])
    subtracted = token_bits(agent, full, [profiles[1]])
    rebuilt = token_bits(agent, without)
    # counts and context totals subtract exactly; only a context's number of distinct
    # continuations stays the corpus's, so the two agree closely but not bit for bit
    assert abs(subtracted.sum() - rebuilt.sum()) < 0.05 * rebuilt.sum()
    query = AgentQuery(agent)
    grams, contexts = query.keys()
    restricted = NgramTable(grams, full.count(grams), contexts, *full.context(contexts))
    assert (token_bits(agent, restricted, [profiles[1]]) == subtracted).all()


def test_scores_do_not_depend_on_the_order_of_the_references() -> None:
    profiles = [profile_code(u.text, u.path) for u in _kernels()]
    agent = profile_code("\n".join(HOST[:10] + SLICE + HOST[10:]))
    forward = dict(zip([p.path for p in profiles], DetectionCorpus(profiles).evidence_all(agent)))
    backward = dict(zip([p.path for p in profiles[::-1]], DetectionCorpus(profiles[::-1]).evidence_all(agent)))
    assert {k: e.bits for k, e in forward.items()} == {k: e.bits for k, e in backward.items()}


def test_near_duplicates_are_capped_to_the_closest_forks() -> None:
    from mleaudit.audit.similarity.detect import MAX_NEAR_DUPLICATES, near_duplicate_members

    sample = np.arange(100, dtype=np.int64)
    # file i shares the first 60 + i values with file 0 (all are near-duplicates of it)
    others = MAX_NEAR_DUPLICATES + 8
    holders = {int(v): np.array([0] + [i for i in range(1, others + 1) if v < 60 + (i % 40)], dtype=np.int64)
               for v in sample}
    members = near_duplicate_members(0, sample, lambda values: {int(v): holders[int(v)] for v in values},
                                     lambda ids: np.full(len(ids), 100))
    assert len(members) == MAX_NEAR_DUPLICATES + 1 and members[0] == 0
    shared = {i: 60 + (i % 40) for i in range(1, others + 1)}
    kept = set(members) - {0}
    assert min(shared[i] for i in kept) >= max(shared[i] for i in set(shared) - kept)


def test_agent_side_jumps_cost_a_gamma_code() -> None:
    assert jump_bits(0) == 0 and jump_bits(1) == 2 and jump_bits(3) == 4
    assert all(jump_bits(n) < jump_bits(n + 1) for n in range(1, 200))


# -- invariances on the fixture corpus --------------------------------------------------------------


def test_ten_line_slice_pasted_into_unrelated_code_is_flagged_against_its_kernel_only() -> None:
    scores = _scores("\n".join(HOST[:10] + SLICE + HOST[10:]))
    assert scores["bravo-rush-hours.py"][1], scores
    assert [name for name, (_, flagged) in scores.items() if flagged] == ["bravo-rush-hours.py"]


def test_renamed_slice_split_into_blocks_with_inserted_statements_is_flagged() -> None:
    renamed = _rename(SLICE)
    assert renamed != SLICE
    pasted = HOST[:6] + renamed[:4] + ["    log_step = 1"] + renamed[4:6] + HOST[6:14] + renamed[6:] + HOST[14:]
    assert _scores("\n".join(pasted))["bravo-rush-hours.py"][1]


def test_unrelated_code_in_the_same_pandas_and_sklearn_idioms_is_not_flagged() -> None:
    idioms = (FIXTURES / "agent" / "idioms.py").read_text(encoding="utf-8")
    scores = _scores(idioms)
    assert len(scores) == 6
    assert not any(flagged for _, flagged in scores.values()), scores
    assert max(score for score, _ in scores.values()) < DEFAULT_SCORE_THRESHOLD - 0.15
    assert not any(flagged for _, flagged in _scores("\n".join(HOST)).values())


def test_boilerplate_never_counts_as_copied() -> None:
    pasted = "\n".join(HOST[:10] + SLICE + HOST[10:])
    starter = CodeUnit(path="starter.py", language="python", text="\n".join(SLICE))
    assert not _scores(pasted, boilerplate=[starter])["bravo-rush-hours.py"][1]


def test_flagged_follows_the_threshold_option_and_keeps_dolos_figures() -> None:
    pasted = "\n".join(HOST[:10] + SLICE + HOST[10:])
    score, _ = _scores(pasted)["bravo-rush-hours.py"]
    stricter = SimilarityOptions(score_threshold=min(1.0, score + 1e-9))
    assert not _scores(pasted, options=stricter)["bravo-rush-hours.py"][1]
    report = compare([CodeUnit(path="a.py", language="python", text=pasted)], _kernels())
    index = FingerprintIndex()
    kernel = (KERNELS / "bravo-rush-hours.py").read_text(encoding="utf-8")
    metrics = dolos_metrics(index.add_agent(tokenize_text(pasted, "python", "a.py")),
                            index.add_reference(tokenize_text(kernel, "python", "bravo-rush-hours.py")))
    pair = next(p for p in report.pairs if p.reference_path == "bravo-rush-hours.py")
    assert (pair.similarity, pair.total_overlap, pair.longest_fragment) == (
        metrics.similarity, metrics.total_overlap, metrics.longest_fragment)


def test_evidence_fragments_point_at_the_pasted_lines_on_both_sides() -> None:
    pasted = "\n".join(HOST[:10] + SLICE + HOST[10:])
    report = compare([CodeUnit(path="code/solution.py", language="python", text=pasted)], _kernels())
    pair = next(p for p in report.pairs if p.reference_path == "bravo-rush-hours.py")
    longest = max(pair.evidence_fragments, key=lambda f: f.length)
    # the pasted lines are agent lines 11-20 and kernel lines 14-23 (a match may run on for a
    # few tokens where the code after the paste happens to read alike)
    assert longest.agent.start_line == 11 and 20 <= longest.agent.end_line <= 23
    assert longest.reference.start_line == 14 and 23 <= longest.reference.end_line <= 26
    assert longest.agent_location.startswith("line ")
    assert pair.to_dict()["evidence_fragments"][0]["reference"]["path"] == "bravo-rush-hours.py"


def test_non_python_pairs_keep_score_zero() -> None:
    report = compare([CodeUnit(path="run.sh", language="bash", text="echo hi\nls -la\n")],
                     [CodeUnit(path="k.sh", language="bash", text="echo hi\nls -la\n")])
    assert report.pairs[0].score == 0.0 and not report.pairs[0].flagged


# -- the policy threshold ---------------------------------------------------------------------------


def test_shipped_threshold_is_read_from_the_rule_and_equals_the_fallback() -> None:
    ruleset = load_ruleset([find_rules_root()])
    assert score_threshold_from_rules(ruleset) == DEFAULT_SCORE_THRESHOLD
    assert load_score_threshold() == DEFAULT_SCORE_THRESHOLD


def test_unreadable_rules_fall_back_to_the_default(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    (tmp_path / "broken.yaml").write_text("id: [unclosed\n", encoding="utf-8")
    with caplog.at_level(logging.WARNING):
        assert load_score_threshold(tmp_path) == DEFAULT_SCORE_THRESHOLD
    assert "default score threshold" in caplog.text


def test_a_stricter_rule_changes_flagged(tmp_path: Path) -> None:
    rules = tmp_path / "rules"
    (rules / "plagiarism").mkdir(parents=True)
    source = (REPO_ROOT / "rules" / "plagiarism" / "plag-kernel-containment.yaml").read_text(encoding="utf-8")
    (rules / "plagiarism" / "plag-kernel-containment.yaml").write_text(
        source.replace("score: {gte: 0.5}", "score: {gte: 0.9}"), encoding="utf-8")
    assert load_score_threshold(rules) == 0.9


def test_audit_flags_the_copy_with_the_rule_threshold(tmp_path: Path) -> None:
    from mleaudit.audit.pipeline import AuditOptions, audit_run
    from mleaudit.audit.run import load_run

    run = tmp_path / "run"
    (run / "code").mkdir(parents=True)
    (run / "code" / "solution.py").write_text("\n".join(HOST[:10] + SLICE + HOST[10:]), encoding="utf-8")
    report = audit_run(load_run(run), ruleset=load_ruleset([find_rules_root()]),
                       options=AuditOptions(corpus_dir=KERNELS))
    pairs = report.similarity["pairs"]
    assert all("score" in p and "flagged" in p for p in pairs)
    flagged = [p["reference_path"] for p in pairs if p["flagged"]]
    assert flagged == ["bravo-rush-hours.py"]
    findings = [f for f in report.findings if f.rule_id == "plag-kernel-containment"]
    assert len(findings) == 1 and "bravo-rush-hours" in findings[0].message


# -- detection quality on the shared partial copies -------------------------------------------------


def _benchmark():
    path = REPO_ROOT / "benchmarks" / "detection_quality.py"
    spec = importlib.util.spec_from_file_location("detection_quality", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(spec.name, module)  # dataclasses look their module up while it loads
    spec.loader.exec_module(module)
    return sys.modules[spec.name]


#: Competitions whose cases run in a few seconds (46 cases, easy and hard, 316 negatives).
FAST_COMPETITIONS = {
    "aerial-cactus-identification", "detecting-insults-in-social-commentary",
    "jigsaw-toxic-comment-classification-challenge", "leaf-classification", "random-acts-of-pizza",
    "tabular-playground-series-dec-2021", "tabular-playground-series-may-2022",
}


def _check_targets(rows, bench, max_fpr: float = 0.01) -> None:
    # Recall at FPR <= 1 %, holders of the pasted code outside the source's group left out (the
    # agreement view): >= 0.98 on easy cases, >= 0.95 on hard ones.
    for kind, target in (("easy", 0.98), ("hard", 0.95)):
        positives, negatives = bench._view([r for r in rows if r.kind == kind], "agreement")
        if positives and negatives:
            cut = bench.threshold_at_fpr([r.score for r in negatives], bench.TARGET_FPR)
            assert bench.rate([r.score for r in positives], cut) >= target, kind
    # At the shipped threshold, which also keeps real agent code unflagged: every easy source,
    # nine in ten hard ones (a 5-15 % slice in 2-3 blocks among renamed code).
    sources = [r for r in rows if r.source]
    for kind, target in (("easy", 0.98), ("hard", 0.9)):
        of_kind = [r for r in sources if r.kind == kind]
        if of_kind:
            assert sum(r.score >= DEFAULT_SCORE_THRESHOLD for r in of_kind) / len(of_kind) >= target, kind
    for view in ("content", "agreement"):
        positives, negatives = bench._view(rows, view)
        assert negatives and positives
        assert sum(r.score >= DEFAULT_SCORE_THRESHOLD for r in negatives) / len(negatives) <= max_fpr, view
        assert bench.auc([r.score for r in positives], [r.score for r in negatives]) >= 0.98, view
    positives, _ = bench._view(rows, "agreement")
    assert sum(r.score >= DEFAULT_SCORE_THRESHOLD for r in positives) / len(positives) >= 0.9


@pytest.fixture(scope="module")
def fast_rows():
    """The benchmark module and its rows for the fast subset of competitions (scored once)."""
    data = shared_path("partial-copies")
    bench = _benchmark()
    return bench, bench.score_cases(data.parent, "notebooks", DEFAULT_SCORE_THRESHOLD, FAST_COMPETITIONS)


def test_shipped_threshold_meets_the_targets_on_a_fast_subset_of_shared_cases(fast_rows) -> None:
    bench, rows = fast_rows
    assert len({r.agent for r in rows if r.source}) >= 40
    # These are the smallest corpora (2 to 15 kernels), where the background knows the least
    # about common code; 316 negatives, so one pair is 0.3 %. The 1 % bound over every case is
    # checked by the slow test below.
    _check_targets(rows, bench, max_fpr=0.02)


def test_content_truth_finds_the_agent_scripts_each_case_was_built_on() -> None:
    data = shared_path("partial-copies")
    bench = _benchmark()
    truth = bench.ContentTruth(data.parent)
    checked = 0
    for folder, scripts in (("partial-copies", 2), ("partial-copies/hard", 1)):
        for case in bench._read_tsv(data.parent / folder / "cases.tsv"):
            if case["source"].split("/")[0] not in FAST_COMPETITIONS:
                continue
            text = (data.parent / folder / case["case"]).read_text(encoding="utf-8")
            source = f"{case['source'].split('/')[0]}/{bench._stem(case['source'])}"
            # an easy case splices its slice between pieces of two agent scripts, a hard case
            # places its blocks in one
            assert len(truth._hosts(bench._lines(text), source)) == scripts, case["case"]
            pasted = [n for n, (kind, _) in enumerate(truth.line_kinds(text, source)) if kind == "pasted"]
            assert pasted, case["case"]
            if scripts == 2:
                # the slice is contiguous: no host line is taken for a pasted one
                assert pasted[-1] - pasted[0] + 1 <= int(case["copied_lines"]), case["case"]
            checked += 1
    assert checked >= 40


def test_the_chain_of_a_flagged_source_lies_on_the_pasted_lines(fast_rows) -> None:
    _, rows = fast_rows
    flagged = [r for r in rows if r.source and r.score >= DEFAULT_SCORE_THRESHOLD]
    assert len(flagged) >= 40
    assert sum(r.chain_host < 0.5 for r in flagged) / len(flagged) >= 0.95


def test_listing_names_every_miss_and_high_negative_with_a_reason(fast_rows) -> None:
    bench, rows = fast_rows
    lines = bench.list_errors(rows)
    positives, negatives = bench._view(rows, "content")
    cut = bench.threshold_at_fpr([r.score for r in negatives], bench.TARGET_FPR)
    missed = sum(r.score < cut for r in positives)
    above = sum(r.score >= cut for r in negatives)
    assert lines[1] == "missed positives:" and lines[2 + missed] == "negatives at or above:"
    assert len(lines) == 3 + missed + above
    assert all(("source;" in line or "holder of" in line) for line in lines[2 : 2 + missed])
    assert all("chain on" in line for line in lines[3 + missed :])


def test_reasons_tell_sources_from_holders_and_host_from_pasted_code() -> None:
    bench = _benchmark()

    def row(**kwargs):
        fields = dict(agent="a.py", kind="hard", competition="c", reference="c/k", score=0.4, similarity=0.1,
                      label=False, content="pos", source=False)
        return bench.Row(**{**fields, **kwargs})

    assert bench.explain(row(source=True, cover=1.0, holders=3)).startswith("source; 3 other")
    assert bench.explain(row(cover=0.62, holders=15)).startswith("holder of 62% of the pasted lines; 15 other")
    assert bench.explain(row(content="neg", chain_host=0.8, cover=0.0)).startswith("chain on host lines (80% host)")
    assert bench.explain(row(content="neg", chain_host=0.1, cover=0.05)).startswith("chain on pasted lines")


def test_leave_one_competition_out_chooses_each_threshold_without_its_competition() -> None:
    bench = _benchmark()

    def row(competition, score, content, source=False):
        return bench.Row(agent=f"{competition}-{score}", kind="easy", competition=competition, reference="r",
                         score=score, similarity=0.0, label=content == "pos", content=content, source=source)

    # "a": negatives 0.00 .. 0.99 and a source at 0.995; "b": one negative at 0.999, the others
    # below 0.1, and a source at 0.999. Each threshold comes from the other competition only.
    rows = ([row("a", s / 100, "neg") for s in range(100)] + [row("a", 0.995, "pos", source=True)]
            + [row("b", 0.999, "neg"), row("b", 0.999, "pos", source=True)] + [row("b", s / 1000, "neg") for s in range(99)])
    per_competition, (recall, fpr, sources) = bench.leave_one_competition_out(rows, 0.01)
    thresholds = {held: threshold for held, threshold, *_ in per_competition}
    assert thresholds["b"] == pytest.approx(0.98)  # "a"'s negatives: 0.99 is its allowed 1 %
    assert thresholds["a"] == pytest.approx(0.098)  # "b"'s negatives: 0.999 is its allowed 1 %
    counts = {held: (hits, n_pos, false, n_neg) for held, _, hits, n_pos, false, n_neg in per_competition}
    assert counts == {"a": (1, 1, 90, 100), "b": (1, 1, 1, 100)}
    assert (recall, sources) == (1.0, 1.0) and fpr == pytest.approx(91 / 200)


@pytest.mark.slow
def test_shipped_threshold_meets_the_targets_on_every_shared_case_and_out_of_competition() -> None:
    data = shared_path("partial-copies")
    bench = _benchmark()
    rows = bench.score_cases(data.parent, "notebooks", DEFAULT_SCORE_THRESHOLD)
    _check_targets(rows, bench)
    # leave one competition out: a threshold chosen without the competition still holds on it
    _, (recall, fpr, sources) = bench.leave_one_competition_out(rows, bench.SELECTION_FPR)
    assert fpr <= 0.01
    assert sources >= 0.95
