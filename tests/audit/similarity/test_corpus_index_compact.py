"""Corpus index compaction: merged postings entries (id lists and bitmaps) give the same results
as the per-segment entries a build writes, stay exact through add, replace and remove, and upgrade
a version-2 index."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from mleaudit.audit.similarity import SimilarityOptions, compare, load_reference_corpus
from mleaudit.audit.similarity.corpus_cli import corpus as corpus_group
from mleaudit.audit.similarity.index import (
    CORPUS_INDEX_VERSION,
    CorpusIndexError,
    adding,
    build_corpus_index,
    load_corpus_index,
    postings,
)
from mleaudit.audit.units import CodeUnit
from tests.audit.similarity.test_corpus_index import redis_url  # noqa: F401 - a fixture
from tests.audit.similarity.test_corpus_index_build import _variants

INVARIANCE = Path(__file__).resolve().parents[2] / "fixtures" / "kernels" / "invariance"


def _agents() -> list[CodeUnit]:
    names = ["renamed.py", "reordered.py", "unrelated.py", "agent_with_starter.py"]
    return [CodeUnit(path=f"code/{n}", language="python", text=(INVARIANCE / n).read_text(encoding="utf-8"))
            for n in names]


def _entries(path: Path) -> tuple[int, int, int]:
    """Postings rows, distinct keys and bitmap entries of an SQLite index."""
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        rows, keys = db.execute("SELECT COUNT(*), COUNT(DISTINCT key) FROM postings").fetchone()
        bitmaps = db.execute("SELECT COUNT(*) FROM postings WHERE wide & 2").fetchone()[0]
    finally:
        db.close()
    return rows, keys, bitmaps


def _results(index, agents: list[CodeUnit], options: SimilarityOptions) -> tuple:
    report = index.compare(agents, options, min_containment=0.0, top=None)
    ranked = index.compare(agents, options, top=2, sources=1)
    candidates = [index.candidates(unit, min_containment=0.05, options=options) for unit in agents]
    return report.pairs, ranked.pairs, candidates


@pytest.fixture
def segmented(tmp_path: Path, monkeypatch) -> tuple[Path, Path]:
    """A corpus of 40 scripts indexed in segments of 8 (5 entries per common key), not compacted;
    bitmaps allowed for entries of any size, so that both layouts occur."""
    corpus = tmp_path / "corpus"
    _variants(corpus, 40)
    monkeypatch.setattr(adding, "SEGMENT_DOCS", 8)
    monkeypatch.setattr(adding, "MAX_POSTING_ENTRIES", 100)
    monkeypatch.setattr(postings, "_BITMAP_MIN_IDS", 1)
    summary = build_corpus_index([corpus], tmp_path / "k.index")
    assert summary.compacted is None
    return corpus, tmp_path / "k.index"


# brute force lists every pair (no cap per agent file), as the index does with top=None
@pytest.mark.parametrize("options", [SimilarityOptions(max_pairs_per_agent=None),
                                     SimilarityOptions(max_doc_fraction=0.3, max_pairs_per_agent=None)],
                         ids=["defaults", "max-doc-fraction"])
def test_compaction_changes_no_result(segmented: tuple[Path, Path], tmp_path: Path,
                                      options: SimilarityOptions) -> None:
    corpus, path = segmented
    with load_corpus_index(path) as index:
        before = _results(index, _agents(), options)
        assert index.info().posting_entries == 5 and index.info().segments == 5
    rows, keys, bitmaps = _entries(path)
    assert rows > keys and bitmaps == 0
    with load_corpus_index(path, writable=True) as index:
        summary = index.compact()
        assert summary.keys > 0 and summary.entries > summary.keys and summary.bitmaps > 0
        assert index.info().posting_entries == 1 and index.info().format_version == CORPUS_INDEX_VERSION
        assert index.compact().keys == 0  # nothing left to merge
    rows, keys, bitmaps = _entries(path)
    assert rows == keys and 0 < bitmaps < keys
    with load_corpus_index(path) as index:
        assert _results(index, _agents(), options) == before
        # and the exact pairs are brute force's
        brute = compare(_agents(), load_reference_corpus(corpus), options)
        assert before[0] == tuple(p for p in brute.pairs if p.agent_covered > 0)


def test_add_replace_and_remove_stay_exact_after_compaction(segmented: tuple[Path, Path], tmp_path: Path) -> None:
    corpus, path = segmented
    with load_corpus_index(path, writable=True) as index:
        index.compact()
        # replace a file (its old ids leave merged entries, bitmaps included), add one, make one unusable
        first = sorted(corpus.rglob("*.py"))[0]
        first.write_text((INVARIANCE / "unrelated.py").read_text(encoding="utf-8"), encoding="utf-8")
        shutil.copy(INVARIANCE / "renamed.py", corpus / "part0" / "late.py")
        summary = index.add([corpus])
        assert (summary.added, summary.replaced) == (1, 1)
        (corpus / "part1" / "kernel-001.py").write_bytes(b"\x00binary")
        assert index.add([corpus]).removed == 1
        assert index.info().posting_entries == 2  # one segment written since the compaction
    (corpus / "part1" / "kernel-001.py").unlink()
    options = SimilarityOptions(max_doc_fraction=0.3, max_pairs_per_agent=None)
    brute = compare(_agents(), load_reference_corpus(corpus), options)
    with load_corpus_index(path) as index:
        assert index.compare(_agents(), options, min_containment=0.0, top=None).pairs == tuple(
            p for p in brute.pairs if p.agent_covered > 0)
        assert index.info().corpus_digest == brute.corpus_digest


def test_a_build_compacts_when_a_key_has_too_many_entries(tmp_path: Path, monkeypatch) -> None:
    corpus = tmp_path / "corpus"
    _variants(corpus, 30)
    monkeypatch.setattr(adding, "SEGMENT_DOCS", 5)  # 6 segments > MAX_POSTING_ENTRIES
    summary = build_corpus_index([corpus], tmp_path / "k.index")
    assert summary.compacted is not None and summary.compacted.keys > 0
    assert summary.to_dict()["compacted"]["keys"] == summary.compacted.keys
    rows, keys, _ = _entries(tmp_path / "k.index")
    assert rows == keys
    with load_corpus_index(tmp_path / "k.index", writable=True) as index:
        assert (index.info().segments, index.info().posting_entries) == (6, 1)
        # a later add writes one more entry per key; compaction waits until there are too many
        shutil.copy(INVARIANCE / "renamed.py", corpus / "part0" / "late.py")
        assert index.add([corpus]).compacted is None
        assert index.info().posting_entries == 2
    # the build left the file in rollback journal mode, with no write-ahead log beside it
    assert sorted(p.name for p in tmp_path.iterdir()) == ["corpus", "k.index"]


def test_a_version_2_index_is_read_and_upgraded_by_compaction(segmented: tuple[Path, Path]) -> None:
    _, path = segmented
    db = sqlite3.connect(path)
    meta = json.loads(db.execute("SELECT value FROM meta WHERE key = 'index'").fetchone()[0])
    meta["format_version"] = 2
    del meta["posting_entries"]  # version 2 did not record it
    db.execute("UPDATE meta SET value = ? WHERE key = 'index'", (json.dumps(meta, sort_keys=True),))
    db.execute("UPDATE meta SET value = '2' WHERE key = 'format_version'")
    db.commit()
    db.close()
    with load_corpus_index(path) as index:
        assert index.info().format_version == 2 and index.info().posting_entries == 5
        before = _results(index, _agents(), SimilarityOptions())
        with pytest.raises(CorpusIndexError, match="opened read-only"):
            index.compact()
    result = CliRunner().invoke(corpus_group, ["compact", str(path)])
    assert result.exit_code == 0, result.output
    assert "at most 1 entry per fingerprint" in result.output
    with load_corpus_index(path) as index:
        assert index.info().format_version == 3
        assert _results(index, _agents(), SimilarityOptions()) == before


def test_postings_layouts_round_trip(monkeypatch) -> None:
    monkeypatch.setattr(postings, "_BITMAP_MIN_IDS", 1)
    rng = np.random.default_rng(7)
    dense = np.sort(rng.choice(np.arange(1000, 1400), size=300, replace=False))
    sparse = np.sort(rng.choice(10**6, size=50, replace=False))
    for docs, bitmap in ((dense, True), (sparse, False)):
        # most references hold a hash once; a bitmap lists the others with their counts
        counts = np.where(rng.random(docs.size) < 0.2, rng.integers(2, 5, size=docs.size), 1)
        counts[3] = 80_000  # 32-bit counts
        posting = postings._encode_postings(docs, counts, bitmap=True)
        assert posting.bitmap == bitmap and posting.wide and posting.size == docs.size
        if bitmap:
            listed, listed_counts = posting.exceptions("x")
            assert listed.tolist() == docs[counts > 1].tolist() and listed_counts.tolist() == counts[counts > 1].tolist()
        for copy in (posting, postings._unpack_posting(postings._pack_posting(posting), "x")):
            ids, stored = copy.arrays("x")
            assert ids.tolist() == docs.tolist() and stored.tolist() == counts.tolist()
    # when most references hold the hash more than once, listing them costs more than the id list
    assert not postings._encode_postings(dense, np.full(dense.size, 3), bitmap=True).bitmap
    # merging entries of one key: ids ascending whatever the entries' order; a reference listed
    # twice is corruption
    low = postings._encode_postings(dense[:100], np.ones(100, np.int64))
    high = postings._encode_postings(dense[100:], np.full(200, 2, np.int64), bitmap=True)
    merged = postings._merge_postings([high, low], "x")
    assert merged.bitmap and merged.arrays("x")[0].tolist() == dense.tolist()
    assert merged.arrays("x")[1].tolist() == [1] * 100 + [2] * 200
    with pytest.raises(CorpusIndexError, match="listed twice"):
        postings._merge_postings([low, low], "x")
    truncated = postings._Posting(token=None, docs=high.docs[:-2], counts=high.counts, wide=False,
                                             bitmap=True, size=high.size)
    with pytest.raises(CorpusIndexError, match="corrupt postings entry"):
        truncated.ids("x")


def test_counting_ids_equals_weighted_membership(monkeypatch) -> None:
    monkeypatch.setattr(postings, "_BITMAP_MIN_IDS", 1)
    rng = np.random.default_rng(11)
    size = 500
    groups, expected = [], np.zeros(size, np.int64)
    for weight in (1, 1, 2, 3, 7):
        entries = []
        for _ in range(3):
            docs = np.sort(rng.choice(size + 40, size=int(rng.integers(1, 400)), replace=False))
            entries.append(postings._encode_postings(docs, np.ones(docs.size, np.int64),
                                                                bitmap=bool(rng.integers(2))))
            inside = docs[docs < size]  # ids past the statistics are not live
            expected[inside] += weight
        groups.append((entries, weight))
    assert {p.bitmap for entries, _ in groups for p in entries} == {True, False}
    assert postings._count_ids(groups, size, "x").tolist() == expected.tolist()


def test_redis_compaction_matches_sqlite(tmp_path: Path, redis_url: str, monkeypatch) -> None:
    corpus = tmp_path / "corpus"
    _variants(corpus, 24)
    monkeypatch.setattr(adding, "SEGMENT_DOCS", 6)
    monkeypatch.setattr(postings, "_BITMAP_MIN_IDS", 1)
    local = build_corpus_index([corpus], tmp_path / "local.index")
    shared = build_corpus_index([corpus], tmp_path / "shared.index", storage=redis_url)
    assert local.compacted is None and shared.compacted is None  # 4 entries per key at most
    options = SimilarityOptions(max_doc_fraction=0.4)
    with load_corpus_index(tmp_path / "local.index", writable=True) as one, \
            load_corpus_index(tmp_path / "shared.index", writable=True) as two:
        before = _results(two, _agents(), options)
        assert one.compact().to_dict() | {"seconds": 0} == two.compact().to_dict() | {"seconds": 0}
        assert _results(two, _agents(), options) == before == _results(one, _agents(), options)
        assert two.info().posting_entries == 1 and two.info().format_version == CORPUS_INDEX_VERSION
        # a replaced file leaves the merged entries
        first = sorted(corpus.rglob("*.py"))[0]
        first.write_text((INVARIANCE / "unrelated.py").read_text(encoding="utf-8"), encoding="utf-8")
        assert one.add([corpus]).replaced == two.add([corpus]).replaced == 1
        assert _results(two, _agents(), options) == _results(one, _agents(), options)
