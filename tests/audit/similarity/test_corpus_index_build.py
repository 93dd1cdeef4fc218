"""Corpus index builds: chunked workers, batched n-gram and postings writes, bulk SQLite mode."""

from __future__ import annotations

import random
import sqlite3
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from mleaudit.audit.similarity.index import CorpusIndex, build_corpus_index, fingerprinting, load_corpus_index, postings
from mleaudit.audit.similarity.detect import profile_code
from mleaudit.audit.units import CodeUnit

INVARIANCE = Path(__file__).resolve().parents[2] / "fixtures" / "kernels" / "invariance"


def _variants(folder: Path, n: int, seed: int = 3, name: str = "kernel") -> None:
    """``n`` scripts made from the fixture kernels: lines dropped and names renamed, so that
    files share some n-grams and fingerprints and not others."""
    sources = [(INVARIANCE / name).read_text(encoding="utf-8").splitlines()
               for name in ("base.py", "reordered.py", "unrelated.py", "kernel_with_starter.py")]
    rng = random.Random(seed)
    for i in range(n):
        lines = [line for line in rng.choice(sources) if rng.random() > 0.2]
        text = "\n".join(lines).replace("model", f"model_{i % 7}").replace("data", f"data{i % 5}")
        target = folder / f"part{i % 3}" / f"{name}-{i:03d}.py"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text + "\n", encoding="utf-8")


def _dump(path: Path) -> dict[str, list]:
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return {
            "docs": list(db.execute("SELECT id, path, sha256, text_sha256, language, segment, record FROM docs ORDER BY id")),
            "postings": list(db.execute("SELECT key, segment, n, wide, docs, counts FROM postings ORDER BY key, segment")),
            "segments": list(db.execute("SELECT id, stats FROM segments ORDER BY id")),
            "profiles": list(db.execute("SELECT id, profile FROM profiles ORDER BY id")),
            "ngrams": list(db.execute("SELECT key, df, context FROM ngrams ORDER BY key")),
            "contexts": list(db.execute("SELECT key, total, kinds FROM contexts ORDER BY key")),
        }
    finally:
        db.close()


def test_chunked_workers_write_the_same_index_as_one_process(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    _variants(corpus, 48)
    # one process reads chunks of 32 files; two workers get chunks of 6 (48 // (4 * 2))
    build_corpus_index([corpus], tmp_path / "one.index", jobs=1)
    build_corpus_index([corpus], tmp_path / "two.index", jobs=2)
    one, two = _dump(tmp_path / "one.index"), _dump(tmp_path / "two.index")
    assert one == two
    assert len(one["docs"]) == 48 and len(one["ngrams"]) > 100
    # every n-gram's document frequency is the number of files holding it
    expected: Counter[int] = Counter()
    for unit_path in sorted(corpus.rglob("*.py")):
        profile = profile_code(unit_path.read_text(encoding="utf-8"))
        expected.update(profile.grams()[0].tolist())
    assert {key: df for key, df, _ in one["ngrams"]} == dict(expected)


def test_a_build_leaves_one_file_in_rollback_journal_mode(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    _variants(corpus, 12)
    path = tmp_path / "k.index"
    build_corpus_index([corpus], path, jobs=2)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["corpus", "k.index"]  # no -wal or -shm file
    db = sqlite3.connect(path)
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
    db.close()
    # a later add (the index holds references) keeps the rollback journal throughout
    extra = tmp_path / "extra"
    _variants(extra, 3, seed=9, name="late")
    with load_corpus_index(path, writable=True) as index:
        assert index.add([extra]).added == 3
        assert index._backend.db.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
    with load_corpus_index(path) as index:
        agent = CodeUnit(path="code/a.py", language="python", text=(INVARIANCE / "renamed.py").read_text(encoding="utf-8"))
        assert index.compare([agent]).pairs


def test_a_failed_build_removes_the_index_and_its_log(tmp_path: Path, monkeypatch) -> None:
    corpus = tmp_path / "corpus"
    _variants(corpus, 12)

    def broken(self, pending):
        raise OSError("disk full")

    monkeypatch.setattr(CorpusIndex, "_write_segment", broken)
    with pytest.raises(OSError, match="disk full"):
        build_corpus_index([corpus], tmp_path / "k.index")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["corpus"]


def test_segment_postings_equal_one_entry_per_key() -> None:
    rng = np.random.default_rng(5)
    keys = np.sort(rng.integers(0, 40, size=400))
    docs = np.concatenate([np.sort(rng.choice(1000, size=int((keys == k).sum()), replace=False)) for k in np.unique(keys)])
    counts = rng.integers(1, 9, size=keys.size)
    counts[7] = 70_000  # one key needs 32-bit counts
    built = postings._segment_postings(keys, docs, counts)
    expected = []
    for key in np.unique(keys).tolist():
        at = keys == key
        expected.append((key, postings._encode_postings(docs[at], counts[at])))
    assert [(k, p.docs, p.counts, p.wide) for k, p in built] == [(k, p.docs, p.counts, p.wide) for k, p in expected]
    assert sum(p.wide for _, p in built) == 1
    assert postings._segment_postings(np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64)) == []


def test_sum_grams_adds_changes_per_key_and_drops_zeros() -> None:
    keys = [np.array([5, 1, 9], np.int64), np.array([1, 5], np.int64), np.array([9, 2], np.int64)]
    contexts = [np.array([50, 10, 90], np.int64), np.array([10, 50], np.int64), np.array([90, 20], np.int64)]
    deltas = [np.array([1, 1, 1], np.int64), np.array([2, -1], np.int64), np.array([-1, -3], np.int64)]
    unique, context, delta = fingerprinting._sum_grams(keys, contexts, deltas)
    assert unique.tolist() == [1, 2] and context.tolist() == [10, 20] and delta.tolist() == [3, -3]
    assert [a.size for a in fingerprinting._sum_grams([], [], [])] == [0, 0, 0]
