"""Corpus index = brute force for the copy detector: the evidence bound, exhaustive where it
cannot exclude a reference, on an invented corpus where the source of a copy ranks below a
popular kernel's forks, and on the shared partial copies; ``corpus remove`` and ``corpus sync``."""

from __future__ import annotations

import dataclasses
import glob
import json
import os
import random
import sqlite3
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from mleaudit.audit.schemas import check_report
from mleaudit.audit.similarity import SimilarityOptions, compare, load_reference_corpus
from mleaudit.audit.similarity.corpus_cli import corpus as corpus_group
from mleaudit.audit.similarity.bounds import evidence_bounds, upper_token_bits, window_bound
from mleaudit.audit.similarity.index import CorpusIndexError, build_corpus_index, load_corpus_index
from mleaudit.audit.similarity.index.fingerprinting import _seed_values
from mleaudit.audit.similarity.detect import (
    MAX_NEAR_DUPLICATES,
    DetectionCorpus,
    NgramTable,
    profile_code,
    reference_evidence,
)
from mleaudit.audit.score_threshold import load_score_threshold
from mleaudit.audit.units import CodeUnit
from tests.conftest import shared_path

POPULAR = '''import numpy as np
import pandas as pd
from sklearn.model_selection import StratifiedKFold
from sklearn.metrics import roc_auc_score
import lightgbm as lgb

train = pd.read_csv('../input/train.csv')
test = pd.read_csv('../input/test.csv')
features = [c for c in train.columns if c not in ('id', 'target')]
for column in features:
    if train[column].dtype == 'object':
        codes = {value: i for i, value in enumerate(sorted(train[column].dropna().unique()))}
        train[column] = train[column].map(codes).fillna(-1)
        test[column] = test[column].map(codes).fillna(-1)
folds = StratifiedKFold(n_splits=5, shuffle=True, random_state=42)
oof = np.zeros(len(train))
predictions = np.zeros(len(test))
for fold, (trn_idx, val_idx) in enumerate(folds.split(train, train['target'])):
    trn_data = lgb.Dataset(train.iloc[trn_idx][features], label=train['target'].iloc[trn_idx])
    val_data = lgb.Dataset(train.iloc[val_idx][features], label=train['target'].iloc[val_idx])
    model = lgb.train({'objective': 'binary', 'metric': 'auc', 'learning_rate': 0.05}, trn_data, 1000,
                      valid_sets=[trn_data, val_data], verbose_eval=200, early_stopping_rounds=100)
    oof[val_idx] = model.predict(train.iloc[val_idx][features], num_iteration=model.best_iteration)
    predictions += model.predict(test[features], num_iteration=model.best_iteration) / folds.n_splits
print('CV score: {:<8.5f}'.format(roc_auc_score(train['target'], oof)))
submission = pd.DataFrame({'id': test['id'], 'target': predictions})
submission.to_csv('submission.csv', index=False)
'''

#: The block an agent takes from the source: short, but full of values found nowhere else.
SOURCE_BLOCK = '''WHALE_PARAMS = {'objective': 'multiclass', 'num_leaves': 187, 'learning_rate': 0.0137,
                'feature_fraction': 0.613, 'bagging_seed': 20190731, 'lambda_l1': 3.917}
sightings = pd.read_csv('../input/whale-sightings-2019/cleaned_train_v7_final_merged.csv')
sightings['pod_ratio'] = sightings['pod_size_estimate'] / (sightings['vessel_distance_km'] + 0.731)
'''


def _filler(rng: random.Random, n: int, tag: str) -> str:
    lines = []
    for i in range(n):
        a, b = rng.randint(1, 9999), rng.randint(1, 9999)
        kind = rng.randrange(4)
        if kind == 0:
            lines.append(f"frame_{i} = data.groupby('{tag}_{a}')['{tag}_v{b}'].agg(['mean', 'std'])")
        elif kind == 1:
            lines.append(f"plt.hist(data['{tag}_{a}'], bins={b % 97 + 3}, alpha=0.{b % 9 + 1})")
        elif kind == 2:
            lines.append(f"for k in range({a % 50 + 2}):\n    data['{tag}_lag_{b}_' + str(k)] = data['{tag}_{a}'].shift(k)")
        else:
            lines.append(f"print(data['{tag}_{a}'].describe(), {b})")
    return "\n".join(lines) + "\n"


def write_corpus(root: Path, seed: int = 0) -> tuple[Path, str]:
    """Kernels: a popular kernel and its forks, a long source notebook holding a short block with
    rare values, independent kernels; returns the corpus folder and an agent file copying the
    popular kernel almost whole and the source's block."""
    rng = random.Random(seed)
    (root / "popular").mkdir(parents=True)
    (root / "source").mkdir()
    (root / "other").mkdir()
    (root / "popular" / "kernel.py").write_text(POPULAR, encoding="utf-8")
    lines = POPULAR.split("\n")
    for k in range(8):
        fork = list(lines)
        fork.insert(rng.randrange(5, len(fork)), f"print('fork {k}', {rng.randint(0, 999)})")
        (root / "popular" / f"fork{k}.py").write_text("\n".join(fork), encoding="utf-8")
    source = "import pandas as pd\nimport matplotlib.pyplot as plt\ndata = pd.read_csv('x.csv')\n"
    source += _filler(rng, 120, "s") + SOURCE_BLOCK + _filler(rng, 120, "t")
    (root / "source" / "whales.py").write_text(source, encoding="utf-8")
    for k in range(5):
        text = "import pandas as pd\ndata = pd.read_csv('y.csv')\n" + _filler(rng, 60, f"o{k}")
        (root / "other" / f"k{k}.py").write_text(text, encoding="utf-8")
    agent = POPULAR.replace("submission.to_csv", SOURCE_BLOCK + "submission.to_csv")
    return root, agent


def _unit(path: str, text: str) -> CodeUnit:
    return CodeUnit(path=path, language="python", text=text)


def _flagged(report) -> set[tuple[str, str]]:
    return {(p.agent_path, p.reference_path) for p in report.pairs if p.flagged}


def _best(report) -> dict[str, str]:
    best: dict[str, tuple[float, str]] = {}
    for p in report.pairs:
        if p.flagged and (p.agent_path not in best or (-p.score, p.reference_path) < (-best[p.agent_path][0],
                                                                                       best[p.agent_path][1])):
            best[p.agent_path] = (p.score, p.reference_path)
    return {agent: path for agent, (_, path) in best.items()}


def _check_bound(agents: list[CodeUnit], corpus_dir: Path) -> None:
    """Every pair's exact evidence is at most its bound (what the index computes, here from the
    profiles in memory)."""
    corpus = load_reference_corpus(corpus_dir)
    references = [profile_code(u.text, u.path) for u in corpus.units if u.language == "python"]
    detector = DetectionCorpus(references)
    holders: dict[int, list[int]] = {}
    for i, profile in enumerate(references):
        for value in _seed_values(profile).tolist():
            holders.setdefault(value, []).append(i)
    arrays = {value: np.array(ids, dtype=np.int64) for value, ids in holders.items()}
    for unit in agents:
        agent = profile_code(unit.text, unit.path)
        upper = upper_token_bits(agent, detector.table)
        keys = agent.seed_keys()
        values = (keys.view(np.uint64) >> np.uint64(39)).astype(np.int64)
        common, docs, bounds = evidence_bounds(upper, values, arrays)
        bound_of = dict(zip(docs.tolist(), bounds.tolist()))
        plain = dataclasses.replace(agent, literals=frozenset(), _cache={})
        lowered = NgramTable(detector.table.keys, np.maximum(detector.table.counts - MAX_NEAR_DUPLICATES - 1, 0),
                             detector.table.context_keys, detector.table.totals, detector.table.kinds)
        for i, reference in enumerate(references):
            exact = detector.evidence(agent, i).bits
            tiles = reference_evidence(plain, reference, lowered, ()).bits
            window = window_bound(upper, keys, reference.seed_keys(), len(reference.ids))
            # each bound holds, and the tighter ones lie within the looser ones
            assert exact <= tiles + 1e-6 <= window + 2e-6, (unit.path, reference.path, exact, tiles, window)
            assert exact <= bound_of.get(i, common) + 1e-6, (unit.path, reference.path)


def test_index_flags_a_low_containment_source_as_brute_force_does(tmp_path: Path) -> None:
    corpus, agent_text = write_corpus(tmp_path / "kernels")
    agent = _unit("agent.py", agent_text)
    options = SimilarityOptions(max_pairs_per_agent=None)
    brute = compare([agent], load_reference_corpus(corpus), options)
    assert ("agent.py", "source/whales.py") in _flagged(brute)
    build_corpus_index([corpus], tmp_path / "k.index")
    with load_corpus_index(tmp_path / "k.index") as index:
        # the source ranks below the popular kernel's nine copies
        assert index.candidates(agent).index("source/whales.py") >= 9
        for top, sources in ((1, 0), (5, 3), (None, 0)):
            report = index.compare([agent], options, top=top, sources=sources)
            assert _flagged(report) == _flagged(brute), (top, sources)
            assert _best(report) == _best(brute)
            flagged = {p.reference_path: p for p in report.pairs if p.flagged}
            for p in brute.pairs:
                if p.flagged:
                    assert flagged[p.reference_path].score == pytest.approx(p.score, abs=1e-12)
    _check_bound([agent], corpus)


def test_bound_excludes_unrelated_kernels(tmp_path: Path) -> None:
    corpus, agent_text = write_corpus(tmp_path / "kernels")
    build_corpus_index([corpus], tmp_path / "k.index")
    with load_corpus_index(tmp_path / "k.index") as index:
        index.compare([_unit("agent.py", agent_text)], top=1, sources=0)
        # the forks past the first and the source: not the five independent kernels
        assert 0 < index.last_bound_scored[0]["scored"] <= index.last_bound_scored[0]["bounded"] < 15


def test_a_cut_search_scores_best_bound_first_until_the_best_is_certain(tmp_path: Path, monkeypatch) -> None:
    from mleaudit.audit.similarity.index import comparing, search

    rng = random.Random(3)
    root = tmp_path / "kernels"
    corpus, agent_text = write_corpus(root)
    # more forks of the popular kernel, each a little further from it: their scores differ
    lines = POPULAR.split("\n")
    for k in range(8, 30):
        fork = list(lines)
        for _ in range(k % 6):
            fork.insert(rng.randrange(5, len(fork)), f"print('more {k}', {rng.randint(0, 999)})")
        (root / "popular" / f"fork{k}.py").write_text("\n".join(fork), encoding="utf-8")
    build_corpus_index([corpus], tmp_path / "k.index")
    seen: list[tuple] = []
    original = search._score_candidates

    def spy(detector, agent, candidates, paths, mask, threshold, bounds=None):
        seen.append((detector, agent, list(candidates), dict(paths), mask, threshold))
        return original(detector, agent, candidates, paths, mask, threshold, bounds)

    monkeypatch.setattr(comparing, "_score_candidates", spy)
    counts = {}
    for name, text in (("agent", agent_text), ("popular", POPULAR), ("block", SOURCE_BLOCK * 3)):
        seen.clear()
        with load_corpus_index(tmp_path / "k.index") as index:
            index.compare([_unit("agent.py", text)], top=1, bound_budget=None)
            detector, position, candidates, paths, mask, threshold = seen[0]
            bounds = detector.tile_bounds(position, candidates)
            every, scored_all = original(detector, position, candidates, paths, mask, threshold)
            first, scored = original(detector, position, candidates, paths, mask, threshold, bounds)
        assert scored_all == len(candidates) and scored <= scored_all
        counts[name] = (scored, scored_all)
        # the pairs it scores are scored as when all are
        assert all(every[doc][0].bits == found[0].bits for doc, found in first.items())
        assert set(first) <= set(every) and bool(first) == bool(every)
        if every:
            best = max(found[0].score for found in every.values())
            assert max(found[0].score for found in first.values()) == best
            # every kernel with the best score is listed (scores tie at 1.0 past ~5,000 bits)
            assert {doc for doc, found in every.items() if found[0].score == best} <= set(first)
    # the popular kernel copied whole: its 30 forks pass the bounds, not all are scored
    scored, scored_all = counts["popular"]
    assert scored_all == 30 and scored < scored_all, counts
    assert counts["block"] == (0, 0)  # nothing passes: nothing scored


def _shared_cases(count: int) -> list[CodeUnit]:
    cases = shared_path("partial-copies")
    files = sorted(glob.glob(str(cases / "case*.py")))[::12] + sorted(glob.glob(str(cases / "hard" / "*.py")))[::12]
    return [_unit(os.path.relpath(f, cases), Path(f).read_text(encoding="utf-8")) for f in files[:count]]


def test_index_equals_brute_force_on_shared_partial_copies(tmp_path: Path) -> None:
    notebooks = shared_path("notebooks")
    agents = _shared_cases(8)
    options = SimilarityOptions(score_threshold=load_score_threshold(), max_pairs_per_agent=None)
    brute = compare(agents, load_reference_corpus(notebooks), options)
    build_corpus_index([notebooks], tmp_path / "shared.index", jobs=2)
    with load_corpus_index(tmp_path / "shared.index") as index:
        default = index.compare(agents, dataclasses.replace(options, max_pairs_per_agent=10))
        everything = index.compare(agents, options, top=None)
    assert _flagged(brute)
    assert _flagged(default) == _flagged(brute) == _flagged(everything)
    assert _best(default) == _best(brute)
    _check_bound(agents[:4], notebooks)


# -- corpus remove / corpus sync -------------------------------------------------------------------


def _tables(path: Path) -> tuple[list, list, list]:
    db = sqlite3.connect(path)
    grams = list(db.execute("SELECT key, df, context FROM ngrams ORDER BY key"))
    contexts = list(db.execute("SELECT key, total, kinds FROM contexts WHERE total > 0 ORDER BY key"))
    paths = sorted(row[0] for row in db.execute("SELECT path FROM docs"))
    db.close()
    return grams, contexts, paths


def _same_results(index_path: Path, fresh_path: Path, agents: list[CodeUnit]) -> None:
    assert _tables(index_path) == _tables(fresh_path)
    with load_corpus_index(index_path) as index, load_corpus_index(fresh_path) as fresh:
        assert index.info().corpus_digest == fresh.info().corpus_digest
        mine = index.compare(agents, top=None, min_containment=0.0)
        theirs = fresh.compare(agents, top=None, min_containment=0.0)
        assert [(p.reference_path, p.score, p.flagged) for p in mine.pairs] == \
            [(p.reference_path, p.score, p.flagged) for p in theirs.pairs]
        for agent in agents:
            assert index.candidates(agent, min_containment=0.0) == fresh.candidates(agent, min_containment=0.0)


def test_remove_takes_kernels_out_as_a_fresh_build_without_them(tmp_path: Path) -> None:
    corpus, agent_text = write_corpus(tmp_path / "kernels")
    agents = [_unit("agent.py", agent_text)]
    build_corpus_index([corpus], tmp_path / "k.index")
    with load_corpus_index(tmp_path / "k.index", writable=True) as index:
        summary = index.remove(["source/whales.py", "popular/fork3.py", str(corpus / "other")])
        assert summary.removed == 7
        assert index.info().references == 8
        report = index.compare(agents, top=None)
        assert "source/whales.py" not in {p.reference_path for p in report.pairs}
    (corpus / "source" / "whales.py").unlink()
    (corpus / "popular" / "fork3.py").unlink()
    for file in (corpus / "other").iterdir():
        file.unlink()
    build_corpus_index([corpus], tmp_path / "fresh.index")
    _same_results(tmp_path / "k.index", tmp_path / "fresh.index", agents)


@pytest.mark.parametrize("hostile", ["../../etc/passwd", "/etc/passwd", "popular/\0kernel.py", "popular/kernel.py/..",
                                     "\udcffbad.py", "", ".", "..", "popular/kernel.py' OR 1=1 --", "*"])
def test_remove_refuses_paths_that_name_nothing_indexed(tmp_path: Path, hostile: str) -> None:
    corpus, _ = write_corpus(tmp_path / "kernels")
    build_corpus_index([corpus], tmp_path / "k.index")
    with load_corpus_index(tmp_path / "k.index", writable=True) as index:
        before = index.info()
        with pytest.raises(CorpusIndexError, match="not in the index"):
            index.remove(["popular/kernel.py", hostile])
        after = index.info()
        assert after.references == before.references and after.corpus_digest == before.corpus_digest


def test_remove_needs_a_writable_index(tmp_path: Path) -> None:
    corpus, _ = write_corpus(tmp_path / "kernels")
    build_corpus_index([corpus], tmp_path / "k.index")
    with load_corpus_index(tmp_path / "k.index") as index:
        with pytest.raises(CorpusIndexError, match="read-only"):
            index.remove(["popular/kernel.py"])


def test_sync_follows_the_folder(tmp_path: Path) -> None:
    corpus, agent_text = write_corpus(tmp_path / "kernels")
    agents = [_unit("agent.py", agent_text)]
    build_corpus_index([corpus], tmp_path / "k.index")
    outside = tmp_path / "secret.py"
    outside.write_text("password = 'hunter2'\nprint(password)\n", encoding="utf-8")
    # gone, changed, new, a link to a file outside the corpus, a hidden file
    (corpus / "popular" / "fork0.py").unlink()
    (corpus / "other" / "k1.py").write_text("import os\nprint(os.listdir('.'))\n", encoding="utf-8")
    (corpus / "new").mkdir()
    (corpus / "new" / "late.py").write_text(agent_text, encoding="utf-8")
    (corpus / "other" / "link.py").symlink_to(outside)
    (corpus / ".hidden.py").write_text("x = 1\n", encoding="utf-8")
    with load_corpus_index(tmp_path / "k.index", writable=True) as index:
        summary = index.sync(corpus)
        assert (summary.added, summary.replaced, summary.removed) == (1, 1, 1)
        assert "other/link.py" in {s.path for s in summary.skipped}
        again = index.sync(corpus)
        assert (again.added, again.replaced, again.removed) == (0, 0, 0)
    (corpus / "other" / "link.py").unlink()
    build_corpus_index([corpus], tmp_path / "fresh.index")
    _same_results(tmp_path / "k.index", tmp_path / "fresh.index", agents)


def test_sync_of_a_subfolder_leaves_the_rest(tmp_path: Path) -> None:
    corpus, agent_text = write_corpus(tmp_path / "kernels")
    build_corpus_index([corpus], tmp_path / "k.index")
    (corpus / "other" / "k2.py").unlink()
    (corpus / "popular" / "fork1.py").unlink()  # outside the synced folder: stays indexed
    with load_corpus_index(tmp_path / "k.index", writable=True) as index:
        summary = index.sync(corpus / "other")
        assert summary.removed == 1 and summary.added == 0
        keys = set(index.candidates(_unit("agent.py", agent_text), min_containment=0.0))
        assert "popular/fork1.py" in keys and "other/k2.py" not in keys
        with pytest.raises(CorpusIndexError, match="not a folder"):
            index.sync(corpus / "missing")


def test_remove_and_sync_commands(tmp_path: Path) -> None:
    corpus, _ = write_corpus(tmp_path / "kernels")
    index_path = tmp_path / "k.index"
    build_corpus_index([corpus], index_path)
    runner = CliRunner()
    result = runner.invoke(corpus_group, ["remove", str(index_path), "source/whales.py"])
    assert result.exit_code == 0, result.output
    assert "1 removed" in result.output
    result = runner.invoke(corpus_group, ["remove", str(index_path), "source/whales.py"])
    assert result.exit_code == 2 and "not in the index" in result.output
    (corpus / "popular" / "fork2.py").unlink()
    result = runner.invoke(corpus_group, ["sync", str(index_path), str(corpus), "-j", "1"])
    assert result.exit_code == 0, result.output
    assert "1 added" in result.output and "1 removed" in result.output  # the source is back, fork2 gone
    result = runner.invoke(corpus_group, ["sync", str(index_path), str(tmp_path / "nowhere")])
    assert result.exit_code == 2 and "not a folder" in result.output


def test_an_index_without_tile_seeds_falls_back_to_further_sources(tmp_path: Path) -> None:
    corpus, agent_text = write_corpus(tmp_path / "kernels")
    index_path = tmp_path / "k.index"
    build_corpus_index([corpus], index_path)
    db = sqlite3.connect(index_path)
    (raw,) = db.execute("SELECT value FROM meta WHERE key = 'index'").fetchone()
    meta = json.loads(raw)
    del meta["seed_postings"]  # as written before tile seeds were stored
    db.execute("UPDATE meta SET value = ? WHERE key = 'index'", (json.dumps(meta),))
    db.commit()
    db.close()
    agent = _unit("agent.py", agent_text)
    with load_corpus_index(index_path) as index:
        report = index.compare([agent], top=1, sources=0)
        # the search is a heuristic there, never exhaustive
        assert index.last_bound_scored == [{"path": "agent.py", "start_line": None, "seed_bound": False,
                                            "exhaustive": False}]
    # only the first candidate is scored: the source below the forks is not found
    assert {p.reference_path for p in report.pairs} == {"popular/kernel.py"}
    # and an audit through it says so: never a clean verdict on that search
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "solution.py").write_text(agent_text, encoding="utf-8")
    for extra in ((), ("--index-exhaustive",)):
        _, audited = _audit_json(tmp_path, "old", *extra)
        (gap,) = [g for g in audited["verdict"]["gaps"] if g["kind"] == "similarity-incomplete"]
        assert "no tile seeds" in gap["reason"] and "rebuild" in gap["reason"]
        assert audited["similarity"]["search_incomplete"][0]["bounded"] is None


def test_similarity_compare_index_lists_the_reference_flagged_pairs(tmp_path: Path) -> None:
    from mleaudit.audit.similarity.cli import similarity

    corpus, agent_text = write_corpus(tmp_path / "kernels")
    agent = tmp_path / "agent.py"
    agent.write_text(agent_text, encoding="utf-8")
    build_corpus_index([corpus], tmp_path / "k.index")
    runner = CliRunner()
    rows = {}
    for name, args in (("reference", ["--reference", str(corpus)]), ("index", ["--index", str(tmp_path / "k.index")]),
                       ("index-all", ["--index", str(tmp_path / "k.index"), "--all"])):
        result = runner.invoke(similarity, ["compare", str(agent), *args])
        assert result.exit_code == 0, result.output
        table = [line.split("\t") for line in result.output.splitlines() if line.strip()]
        header = table[0]
        found = [dict(zip(header, row)) for row in table[1:] if len(row) == len(header)]
        rows[name] = {(r["reference"], r["score"]) for r in found if r["flagged"] == "true"}
    assert rows["reference"] and any(ref == "source/whales.py" for ref, _ in rows["reference"])
    assert rows["index"] == rows["reference"] == rows["index-all"]


def test_similarity_compare_names_the_files_whose_search_was_cut(tmp_path: Path, monkeypatch) -> None:
    from mleaudit.audit.similarity.index import search
    from mleaudit.audit.similarity.cli import similarity

    corpus, agent_text = write_corpus(tmp_path / "kernels")
    agent = tmp_path / "agent.py"
    agent.write_text(agent_text, encoding="utf-8")
    build_corpus_index([corpus], tmp_path / "k.index")
    monkeypatch.setattr(search, "_WINDOW_BUDGET_FACTOR", 0)
    cut = CliRunner().invoke(similarity, ["compare", str(agent), "--index", str(tmp_path / "k.index")])
    assert cut.exit_code == 0 and "1 of these 1 agent file(s)" in cut.stderr and str(agent) in cut.stderr
    whole = CliRunner().invoke(similarity, ["compare", str(agent), "--index", str(tmp_path / "k.index"), "--all"])
    assert whole.exit_code == 0 and "note:" not in whole.stderr


def test_references_the_seed_bound_cannot_tell_apart_are_checked_in_containment_order(tmp_path, monkeypatch) -> None:
    from mleaudit.audit.similarity.index import detector_query, search

    corpus, agent_text = write_corpus(tmp_path / "kernels")
    build_corpus_index([corpus], tmp_path / "k.index")
    # every seed counts as held by every reference (as widely held code does on a large corpus):
    # all references get the same seed bound
    monkeypatch.setattr(detector_query, "_SEED_HOLDERS", 0)
    monkeypatch.setattr(search, "_WINDOW_BUDGET_FACTOR", 1)
    windowed: list[list[int]] = []
    tiled: list[list[int]] = []
    windows: dict[int, float] = {}
    original_window, original_tile = detector_query._DetectorQuery.window_bounds, detector_query._DetectorQuery.tile_bounds

    def spy_window(self, agent, docs):
        found = original_window(self, agent, docs)
        if not tiled:  # the search's own call, not the tile bound's
            windowed.append(list(docs))
            windows.update(found)
        return found

    def spy_tile(self, agent, docs, needed=0.0):
        tiled.append(list(docs))
        return original_tile(self, agent, docs, needed)

    monkeypatch.setattr(detector_query._DetectorQuery, "window_bounds", spy_window)
    monkeypatch.setattr(detector_query._DetectorQuery, "tile_bounds", spy_tile)
    agent = _unit("agent.py", agent_text)
    with load_corpus_index(tmp_path / "k.index") as index:
        ranked = index.candidates(agent, min_containment=0.0)
        index.compare([agent], top=1, sources=3, bound_budget=4)
        stage = index.last_bound_scored[0]
        paths = index._open_backend().paths(windowed[0])
    order = [paths[doc] for doc in windowed[0]]
    # the window bound's budget goes to the next candidates by agent containment, not the lowest ids
    assert order == [path for path in ranked[1:] if path in order][:4] and len(order) == 4
    # the tile bound's to the highest window bounds among them, best first
    assert tiled[0] == sorted((doc for doc in windowed[0] if windows[doc] >= stage_needed(index)),
                              key=lambda doc: -windows[doc])[:4]
    assert not stage["exhaustive"] and stage["windowed"] == 4


def stage_needed(index) -> float:
    from mleaudit.audit.similarity.detect import bits_from_score

    return bits_from_score(index.options.score_threshold) - 1e-6


def test_window_bounds_of_many_references_equal_the_bound_of_each() -> None:
    from mleaudit.audit.similarity.bounds import SeedLocations, seed_table, window_bounds

    rng = np.random.default_rng(7)
    for _ in range(300):
        agent_keys = rng.integers(0, 30, rng.integers(0, 60))
        upper = rng.random(agent_keys.size + 5) * rng.choice([1.0, 20.0, 60.0])
        table = seed_table(upper, agent_keys)
        references = []
        for _ in range(rng.integers(0, 8)):
            m = int(rng.integers(0, 50))
            references.append((rng.integers(0, 40, m), m + 5 + int(rng.integers(0, 6)) if m else int(rng.integers(0, 3))))
        wanted = rng.random(len(references)) < 0.7
        expected = np.array([window_bound(upper, agent_keys, keys, tokens, table=table) for keys, tokens in references])
        for many_lookups in (True, False):
            locations = SeedLocations(references, many_lookups=many_lookups)
            assert locations.sorted is many_lookups
            assert np.allclose(window_bounds(table, locations), expected, rtol=0, atol=1e-9)
            assert np.allclose(window_bounds(table, locations, wanted), np.where(wanted, expected, 0.0),
                               rtol=0, atol=1e-9)
            # the two ways find the same hits, so the same floats
            assert np.array_equal(window_bounds(table, locations, wanted),
                                  window_bounds(table, SeedLocations(references, many_lookups=not many_lookups), wanted))
    # a long reference before short ones: no sum of one reference carries another's rounding
    agent_keys = rng.integers(0, 30, 60)
    upper = rng.random(65) * 20
    table = seed_table(upper, agent_keys)
    references = [(rng.integers(0, 40, 400_000), 400_005)] + [(rng.integers(0, 40, 50), 55) for _ in range(300)]
    expected = [window_bound(upper, agent_keys, keys, tokens, table=table) for keys, tokens in references[-20:]]
    for many_lookups in (True, False):
        got = window_bounds(table, SeedLocations(references, many_lookups=many_lookups))
        assert np.allclose(got[-20:], expected, rtol=0, atol=1e-9)
    # seeds that do not fit in their reference are refused, never spread into the next one
    for many_lookups in (True, False):
        with pytest.raises(ValueError, match="do not fit"):
            SeedLocations([(np.arange(10), 5), (np.arange(3), 8)], many_lookups=many_lookups)


def _audit_json(tmp_path: Path, name: str, *extra: str) -> tuple[int, dict]:
    from mleaudit.audit.cli import main

    out = tmp_path / f"{name}.json"
    result = CliRunner().invoke(main, ["audit", str(tmp_path / "run"), "--index", str(tmp_path / "k.index"),
                                       "--no-grade", "--format", "json", "-o", str(out), *extra])
    assert result.exit_code in (0, 1, 3), result.output
    report = json.loads(out.read_text(encoding="utf-8"))
    check_report(report, source=str(out))
    return result.exit_code, report


def test_a_copy_search_cut_by_its_budget_is_a_gap_never_a_clean_audit(tmp_path: Path, monkeypatch) -> None:
    from mleaudit.audit.similarity.index import search

    corpus, agent_text = write_corpus(tmp_path / "kernels")
    build_corpus_index([corpus], tmp_path / "k.index")
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "solution.py").write_text(agent_text, encoding="utf-8")
    # the window bound's budget is 0 references: nothing past the first candidates is checked
    monkeypatch.setattr(search, "_WINDOW_BUDGET_FACTOR", 0)
    _, cut = _audit_json(tmp_path, "cut")
    gaps = [g for g in cut["verdict"]["gaps"] if g["kind"] == "similarity-incomplete"]
    assert [g["path"] for g in gaps] == ["solution.py"] and "--index-exhaustive" in gaps[0]["reason"]
    assert "solution.py" not in gaps[0]["reason"]  # the gap names the file once
    # the comparison ran: nothing says it was skipped, and the report says how it searched
    assert "similarity_skipped" not in cut["meta"] and cut["similarity"]["index_exhaustive"] is False
    incomplete = cut["similarity"]["search_incomplete"]
    assert incomplete[0]["path"] == "solution.py" and 0 < incomplete[0]["unchecked"] <= incomplete[0]["bounded"]
    # the budget does not apply with --index-exhaustive: every reference is checked, as brute force does
    _, whole = _audit_json(tmp_path, "whole", "--index-exhaustive")
    assert not [g for g in whole["verdict"]["gaps"] if g["kind"] == "similarity-incomplete"]
    assert whole["similarity"]["search_incomplete"] == [] and whole["similarity"]["index_exhaustive"] is True
    flagged = {p["reference_path"] for p in whole["similarity"]["pairs"] if p["flagged"]}
    assert "source/whales.py" in flagged and flagged >= {p["reference_path"] for p in cut["similarity"]["pairs"]
                                                         if p["flagged"]}
    # and by default on this corpus the budget is enough: the same pairs, no gap
    monkeypatch.setattr(search, "_WINDOW_BUDGET_FACTOR", 4)
    _, default = _audit_json(tmp_path, "default")
    assert default["similarity"]["search_incomplete"] == []
    assert {p["reference_path"] for p in default["similarity"]["pairs"] if p["flagged"]} == flagged


def test_index_exhaustive_without_an_index_is_refused(tmp_path: Path) -> None:
    from mleaudit.audit.cli import main

    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "solution.py").write_text("x = 1\n", encoding="utf-8")
    for command in (["audit", str(tmp_path / "run")], ["audit", "batch", str(tmp_path), "-o", str(tmp_path / "out")]):
        result = CliRunner().invoke(main, [*command, "--index-exhaustive", "--no-grade"])
        assert result.exit_code == 2 and "--index-exhaustive" in result.output and "--index INDEX" in result.output
        # with --no-similarity, adding --index would be refused too: the message says to drop the flag
        result = CliRunner().invoke(main, [*command, "--index-exhaustive", "--no-similarity", "--no-grade"])
        assert result.exit_code == 2 and "leave --index-exhaustive out" in result.output


def test_best_windows_of_many_segments_are_those_of_one_at_a_time() -> None:
    from mleaudit.audit.similarity import bounds

    rng = np.random.default_rng(1)
    for case in range(300):
        lengths = rng.integers(1, int(rng.choice([3, 50, 3000])), int(rng.integers(1, 30)))
        if case % 60 == 0:
            lengths[0] = 300_000  # past one matrix's cells
        heads = np.concatenate(([0], np.cumsum(lengths)[:-1]))
        value = rng.random(int(lengths.sum())) * float(rng.choice([1.0, 30.0]))
        step = value - 3.0 * rng.integers(0, 5, value.size) * (rng.random(value.size) < 0.5)
        expected = []
        for head, length in zip(heads.tolist(), lengths.tolist()):
            running = np.cumsum(step[head : head + length])
            expected.append(float((running - np.minimum.accumulate(running - value[head : head + length])).max()))
        # the same additions in the same order: equal floats, not merely close ones
        assert np.array_equal(bounds._segment_best_windows(step, value, heads, lengths), np.array(expected))
