"""Corpus index: exact parity with brute-force comparison, retrieval recall, incremental add,
safe loading, Redis storage and the ``mleaudit corpus`` commands."""

from __future__ import annotations

import csv
import dataclasses
import json
import shutil
import socket
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from mleaudit.audit.similarity import SimilarityOptions, compare, load_reference_corpus
from mleaudit.audit.similarity.index import adding, blobs, fingerprinting, locks, stored_tokens
from mleaudit.audit.similarity.index import (
    CORPUS_INDEX_VERSION,
    CorpusIndexError,
    build_corpus_index,
    create_corpus_index,
    load_corpus_index,
    parse_storage,
)
from mleaudit.audit.similarity.corpus_cli import corpus as corpus_group
from mleaudit.audit.similarity.detect import profile_code
from mleaudit.audit.similarity.fingerprint_index import FingerprintIndex
from mleaudit.audit.similarity.pairs import dolos_metrics, pair_report
from mleaudit.audit.similarity.tokenize import TokenizedFile, tokenize_text
from mleaudit.audit.units import CodeUnit
from tests.conftest import shared_path

KERNELS = Path(__file__).resolve().parents[2] / "fixtures" / "kernels"
INVARIANCE = KERNELS / "invariance"


def _unit(path: str, text: str) -> CodeUnit:
    return CodeUnit(path=path, language="python", text=text)


def _agents() -> list[CodeUnit]:
    names = ["renamed.py", "reordered.py", "unrelated.py", "agent_with_starter.py"]
    return [_unit(f"code/{n}", (INVARIANCE / n).read_text(encoding="utf-8")) for n in names]


@pytest.fixture
def kernels(tmp_path: Path) -> Path:
    """The fixture corpus (a notebook, a script, a broken notebook, an R kernel) plus scripts."""
    root = tmp_path / "kernels"
    shutil.copytree(KERNELS / "corpus", root)
    (root / "README.txt").unlink()
    for name in ("base.py", "reordered.py", "kernel_with_starter.py", "unrelated.py"):
        shutil.copy(INVARIANCE / name, root / "author" / name)
    return root


@pytest.fixture
def boilerplate(tmp_path: Path) -> Path:
    folder = tmp_path / "starter"
    folder.mkdir()
    shutil.copy(INVARIANCE / "starter.py", folder / "starter.py")
    return folder


def _dolos(pair):
    """A pair without the copy detector's figures (for comparisons against a brute-force run over
    part of the corpus, whose background model is not the index's)."""
    detector = {"score": 0.0, "flagged": False, "evidence_fragments": ()}
    # the lines and pieces the detector's chain covers depend on its background too
    detector.update({name: 0 for name in ("copied_lines", "copied_fragments") if hasattr(pair, name)})
    return dataclasses.replace(pair, **detector)


def _shared_pairs(report) -> list:
    # The index lists a reference that shares no counted fingerprint with the agent only when
    # the copy detector flags it (found through the evidence bound, as brute force flags it).
    return [p for p in report.pairs if p.agent_covered > 0 or p.flagged]


@pytest.mark.parametrize(
    "options",
    [SimilarityOptions(), SimilarityOptions(max_doc_fraction=0.5, min_fragment_kgrams=2),
     SimilarityOptions(max_fragments_per_pair=1)],
    ids=["defaults", "max-doc-fraction", "one-fragment-per-pair"],
)
def test_index_compare_equals_brute_force(kernels: Path, boilerplate: Path, tmp_path: Path,
                                          options: SimilarityOptions) -> None:
    summary = build_corpus_index([kernels], tmp_path / "k.index", boilerplate=[boilerplate])
    assert summary.added == 6 and summary.replaced == summary.unchanged == 0
    assert {s.path for s in summary.skipped} == {"other/broken.ipynb", "other/r-kernel.ipynb"}
    brute = compare(_agents(), load_reference_corpus(kernels), options,
                    boilerplate=load_reference_corpus(boilerplate).units)
    with load_corpus_index(tmp_path / "k.index") as index:
        report = index.compare(_agents(), options, min_containment=0.0, top=None)
    assert report.pairs == tuple(_shared_pairs(brute))  # figures, fragments, spans, cell locations
    assert len(report.pairs) > 8
    assert report.skipped == brute.skipped
    assert report.corpus_digest == brute.corpus_digest
    assert report.options == options
    notebook_pairs = [p for p in report.pairs if p.reference_path.endswith(".ipynb") and p.fragments]
    assert notebook_pairs and notebook_pairs[0].fragments[0].reference_location.startswith("cell ")
    if options.max_fragments_per_pair is not None:
        assert max(len(p.fragments) for p in report.pairs) == options.max_fragments_per_pair


def test_display_threshold_gives_exactly_the_brute_force_pairs(kernels: Path, tmp_path: Path) -> None:
    build_corpus_index([kernels], tmp_path / "k.index")
    options = SimilarityOptions(display_threshold=0.3)
    brute = compare(_agents(), load_reference_corpus(kernels), options)
    with load_corpus_index(tmp_path / "k.index") as index:
        report = index.compare(_agents(), options, min_containment=0.0, top=None)
    # brute force also keeps flagged pairs below the threshold; the index retrieves candidates
    # above it (the copy detector's figures are the same)
    expected = [p for p in brute.pairs if max(p.agent_containment, p.reference_containment) >= 0.3]
    assert list(report.pairs) == expected
    assert 0 < len(expected) < 6 * 4


def test_boilerplate_only_overlap_is_not_a_candidate(kernels: Path, boilerplate: Path, tmp_path: Path) -> None:
    agent = _unit("code/agent.py", (INVARIANCE / "agent_with_starter.py").read_text(encoding="utf-8"))
    build_corpus_index([kernels], tmp_path / "plain.index")
    build_corpus_index([kernels], tmp_path / "bp.index", boilerplate=[boilerplate])
    with load_corpus_index(tmp_path / "plain.index") as plain, load_corpus_index(tmp_path / "bp.index") as bp:
        assert "author/kernel_with_starter.py" in plain.candidates(agent, min_containment=0.01)
        assert "author/kernel_with_starter.py" not in bp.candidates(agent, min_containment=0.01)
        assert bp.info().boilerplate == ("starter.py",)


def test_top_scores_the_first_pairs_in_report_order(kernels: Path, tmp_path: Path) -> None:
    build_corpus_index([kernels], tmp_path / "k.index")
    agent = _unit("code/renamed.py", (INVARIANCE / "renamed.py").read_text(encoding="utf-8"))
    brute = _shared_pairs(compare([agent], load_reference_corpus(kernels)))
    with load_corpus_index(tmp_path / "k.index") as index:
        # the first two pairs in report order, and every pair the copy detector flags
        expected = tuple(p for n, p in enumerate(brute) if n < 2 or p.flagged)
        assert index.compare([agent], min_containment=0.0, top=2).pairs == expected
        assert len(expected) > 2
        with pytest.raises(CorpusIndexError, match="top must be >= 1"):
            index.compare([agent], top=0)
        for bad in (-1, True, 1.5):
            with pytest.raises(CorpusIndexError, match="sources must be an integer >= 0"):
                index.compare([agent], sources=bad)
            with pytest.raises(CorpusIndexError, match="bound_budget must be an integer >= 0"):
                index.compare([agent], bound_budget=bad)
        with pytest.raises(CorpusIndexError, match=r"min_containment must be a number in \[0, 1\], got 1.5"):
            index.candidates(agent, min_containment=1.5)


def test_candidates_recall_on_real_notebooks(tmp_path: Path) -> None:
    notebooks = shared_path("notebooks", "spaceship-titanic")
    cases_dir = shared_path("partial-copies")
    build_corpus_index([notebooks], tmp_path / "st.index", jobs=2)
    corpus = load_reference_corpus(notebooks)
    with open(cases_dir / "cases.tsv", encoding="utf-8") as stream:
        cases = [row for row in csv.DictReader(stream, delimiter="\t") if row["source"].startswith("spaceship-titanic/")]
    agents = [_unit(row["case"], (cases_dir / row["case"]).read_text(encoding="utf-8")) for row in cases[:4]]
    assert len(agents) == 4
    # Brute-force agent containment of every pair (Dolos figures only: fragments are not needed here).
    brute = FingerprintIndex()
    references = [(unit.path, brute.add_reference(tokenize_text(unit.text, unit.language, unit.path)))
                  for unit in corpus.units]
    with load_corpus_index(tmp_path / "st.index") as index:
        for agent in agents:
            entry = brute.add_agent(tokenize_text(agent.text, "python", agent.path))
            containment = {path: dolos_metrics(entry, ref).left_covered / len(entry.fingerprints)
                           for path, ref in references}
            for threshold in (0.05, 0.3):
                expected = {path for path, value in containment.items() if value >= threshold}
                found = index.candidates(agent, min_containment=threshold)
                assert expected <= set(found), (agent.path, threshold)
            assert len(expected) >= 1
        # the first two candidates of each agent file, and every pair the copy detector flags
        wider = index.compare(agents, min_containment=0.3, top=2)
    brute_pairs = {(p.agent_path, p.reference_path): p
                   for p in compare(agents, corpus, SimilarityOptions(max_pairs_per_agent=None)).pairs}
    first = {(p.agent_path, p.reference_path) for p in wider.pairs}
    for agent in agents:
        assert len([p for p in wider.pairs if p.agent_path == agent.path and not p.flagged]) <= 2
    extra = [p for p in wider.pairs if p.flagged]
    assert extra and all(p == brute_pairs[(p.agent_path, p.reference_path)] for p in extra)
    assert {key for key, p in brute_pairs.items() if p.flagged} <= first
    chosen = {p.reference_path for p in wider.pairs}
    exact = compare(agents, [u for u in corpus.units if u.path in chosen])
    by_key = {(p.agent_path, p.reference_path): _dolos(p) for p in exact.pairs}
    assert all(_dolos(p) == by_key[(p.agent_path, p.reference_path)] for p in wider.pairs)


def test_jobs_do_not_change_the_index(kernels: Path, tmp_path: Path) -> None:
    build_corpus_index([kernels], tmp_path / "one.index", jobs=1)
    build_corpus_index([kernels], tmp_path / "two.index", jobs=2)
    with load_corpus_index(tmp_path / "one.index") as one, load_corpus_index(tmp_path / "two.index") as two:
        assert one.info().corpus_digest == two.info().corpus_digest
        assert one.compare(_agents(), min_containment=0.0) == two.compare(_agents(), min_containment=0.0)


def test_incremental_add_replace_and_noop(kernels: Path, tmp_path: Path) -> None:
    extra = kernels / "late" / "late.py"
    extra.parent.mkdir()
    shutil.move(kernels / "author" / "base.py", extra)
    index_path = tmp_path / "k.index"
    build_corpus_index([kernels / "author"], index_path)
    renamed = _unit("code/renamed.py", (INVARIANCE / "renamed.py").read_text(encoding="utf-8"))
    with load_corpus_index(index_path, writable=True) as index:
        assert "late.py" not in index.candidates(renamed)
        before = index.info()
        # A file outside the recorded root is keyed by its folder (here: its parent).
        summary = index.add([extra])
        assert (summary.added, summary.unchanged) == (1, 0)
        assert index.candidates(renamed)[0] == "late.py"
        assert index.info().references == before.references + 1
        # Re-adding unchanged files is a no-op: nothing written, same digest.
        again = index.add([extra, kernels / "author"])
        assert (again.added, again.replaced, again.unchanged) == (0, 0, before.references + 1)
        assert index.info().corpus_digest == index.info().corpus_digest
        digest = index.info().corpus_digest
        segments = index.info().segments
        # A changed file replaces its entry; the old fingerprints are gone from the postings.
        extra.write_text((INVARIANCE / "unrelated.py").read_text(encoding="utf-8"), encoding="utf-8")
        changed = index.add([extra])
        assert (changed.added, changed.replaced) == (0, 1)
        candidates = index.candidates(renamed, min_containment=0.01)
        assert candidates[0] != "late.py" and ("late.py" in candidates) == ("unrelated.py" in candidates)
        assert index.info().references == before.references + 1
        assert index.info().corpus_digest != digest and index.info().segments == segments + 1
        # Document frequencies stay exact after a replacement: brute-force parity with max_doc_fraction.
        options = SimilarityOptions(max_doc_fraction=0.2)
        references = list(load_reference_corpus(kernels / "author").units) + [
            _unit("late.py", extra.read_text(encoding="utf-8"))]
        references.sort(key=lambda u: u.path)
        brute = compare(_agents(), references, options)
        assert index.compare(_agents(), options, min_containment=0.0, top=None).pairs == tuple(_shared_pairs(brute))
        assert index.info().corpus_digest == brute.corpus_digest
        # A file that turns unusable leaves the index and is listed as skipped.
        extra.write_bytes(b"\x00\x01binary")
        broken = index.add([extra])
        assert broken.removed == 1 and [s.reason for s in broken.skipped] == ["binary file (NUL byte in the first 8 kB)"]
        assert index.info().references == before.references
        assert "late.py" in {s.path for s in index.skipped()}


def test_add_keys_paths_by_recorded_root(kernels: Path, tmp_path: Path) -> None:
    build_corpus_index([kernels], tmp_path / "k.index")
    new = kernels / "author" / "copy.py"
    shutil.copy(INVARIANCE / "renamed.py", new)
    with load_corpus_index(tmp_path / "k.index", writable=True) as index:
        assert index.add([new]).added == 1
        assert "author/copy.py" in index.candidates(_unit("a.py", new.read_text(encoding="utf-8")))
        with pytest.raises(CorpusIndexError, match="no such file or folder"):
            index.add([tmp_path / "missing.py"])
        with pytest.raises(CorpusIndexError, match="is not inside --root"):
            index.add([new], root=tmp_path / "kernels" / "other")


def test_same_path_under_two_roots_is_indexed_once(kernels: Path, tmp_path: Path) -> None:
    second = tmp_path / "second"
    (second / "author").mkdir(parents=True)
    shutil.copy(INVARIANCE / "unrelated.py", second / "author" / "base.py")
    summary = build_corpus_index([kernels, second], tmp_path / "k.index")
    duplicate = [s for s in summary.skipped if s.path == "author/base.py"]
    assert len(duplicate) == 1 and duplicate[0].reason.startswith("duplicate corpus path (already taken by ")
    with load_corpus_index(tmp_path / "k.index") as index:
        assert "author/base.py" not in {s.path for s in index.skipped()}  # indexed, from the first root
        agent = _unit("code/base.py", (INVARIANCE / "base.py").read_text(encoding="utf-8"))
        assert index.candidates(agent)[0] == "author/base.py"
        assert len(index.info().roots) == 2


def test_read_only_index_refuses_add(kernels: Path, tmp_path: Path) -> None:
    build_corpus_index([kernels], tmp_path / "k.index")
    with load_corpus_index(tmp_path / "k.index") as index:
        with pytest.raises(CorpusIndexError, match="opened read-only"):
            index.add([kernels])


def test_unordered_token_regions_are_stored_in_full(kernels: Path, tmp_path: Path, monkeypatch) -> None:
    # Trees recovered from syntax errors may give token regions out of document order; the
    # index then keeps every token's offsets so fragment spans still equal brute force.
    real = tokenize_text

    def shuffled(text: str, language: str, path: str) -> TokenizedFile:
        tokens = real(text, language, path)
        starts = list(tokens.starts)
        starts[5], starts[6] = starts[6] + 3, starts[5]
        return TokenizedFile(path=tokens.path, language=tokens.language, text=tokens.text, tokens=tokens.tokens,
                             starts=tuple(starts), ends=tokens.ends, has_error=tokens.has_error)

    monkeypatch.setattr(fingerprinting, "tokenize_text", shuffled)
    folder = tmp_path / "one"
    folder.mkdir()
    shutil.copy(INVARIANCE / "base.py", folder / "base.py")
    build_corpus_index([folder], tmp_path / "u.index", jobs=1)
    agent = _unit("code/base.py", (INVARIANCE / "base.py").read_text(encoding="utf-8"))
    reference = _unit("base.py", agent.text)
    index = FingerprintIndex()
    expected = pair_report(index.add_agent(real(agent.text, "python", agent.path)),
                           index.add_reference(shuffled(reference.text, "python", "base.py")),
                           reference_id="base", agent_unit=agent, reference_unit=reference)
    with load_corpus_index(tmp_path / "u.index") as corpus_index:
        (pair,) = corpus_index.compare([agent]).pairs
    assert pair.fragments == expected.fragments
    assert pair.fragments[0].reference.start_byte == 0


def test_spans_of_many_token_ranges_equal_one_by_one(tmp_path: Path) -> None:
    # pair reports look up the spans of all fragments of a pair at once
    text = (INVARIANCE / "base.py").read_text(encoding="utf-8")
    tokens = tokenize_text(text, "python", "base.py")
    firsts = [0, 3, 40, 41, len(tokens) - 30]
    lasts = [22, 30, 40, 90, len(tokens) - 1]
    assert tokens.tokens_spans(firsts, lasts) == [tokens.tokens_span(f, l) for f, l in zip(firsts, lasts)]
    assert tokens.tokens_spans([], []) == []
    with pytest.raises(IndexError):
        tokens.tokens_spans([5], [len(tokens)])
    folder = tmp_path / "one"
    folder.mkdir()
    (folder / "base.py").write_text(text, encoding="utf-8")
    build_corpus_index([folder], tmp_path / "b.index")
    with load_corpus_index(tmp_path / "b.index") as index:
        (unit, entry), = index._references([0]).values()
    bounds = [(f.start, f.stop) for f in entry.fingerprints[::7]]
    stored = entry.file.tokens_spans([b[0] for b in bounds], [b[1] for b in bounds])
    assert stored == [tokens.tokens_span(first, last) for first, last in bounds]
    with pytest.raises(CorpusIndexError, match="is not a stored k-gram bound"):
        entry.file.tokens_spans([1], [2])


# -- errors and safe loading -------------------------------------------------------------------


def test_not_an_index(tmp_path: Path) -> None:
    text = tmp_path / "notes.txt"
    text.write_text("hello")
    empty = tmp_path / "empty.index"
    empty.write_bytes(b"")
    for path in (text, empty):
        with pytest.raises(CorpusIndexError, match="not a corpus index"):
            load_corpus_index(path)
    other = tmp_path / "other.sqlite"
    with sqlite3.connect(other) as db:
        db.execute("CREATE TABLE things (x)")
    with pytest.raises(CorpusIndexError, match="without the 'meta' table"):
        load_corpus_index(other)
    with pytest.raises(CorpusIndexError, match="no such corpus index file"):
        load_corpus_index(tmp_path / "missing.index")


def _edit(path: Path, sql: str, *params) -> None:
    db = sqlite3.connect(path)
    db.execute(sql, params)
    db.commit()
    db.close()


def test_schema_with_executable_objects_is_refused(kernels: Path, tmp_path: Path) -> None:
    path = tmp_path / "k.index"
    build_corpus_index([kernels], path)
    _edit(path, "CREATE TRIGGER t AFTER INSERT ON skipped BEGIN DELETE FROM docs; END")
    with pytest.raises(CorpusIndexError, match="unexpected schema objects: trigger t"):
        load_corpus_index(path)


def test_other_format_version_and_fingerprint_scheme(kernels: Path, tmp_path: Path) -> None:
    path = tmp_path / "k.index"
    build_corpus_index([kernels], path)
    _edit(path, "UPDATE meta SET value = ? WHERE key = 'format_version'", json.dumps(CORPUS_INDEX_VERSION + 1))
    with pytest.raises(CorpusIndexError, match=f"format version {CORPUS_INDEX_VERSION + 1}, this mleaudit reads"):
        load_corpus_index(path)
    _edit(path, "UPDATE meta SET value = ? WHERE key = 'format_version'", json.dumps(CORPUS_INDEX_VERSION))
    db = sqlite3.connect(path)
    meta = json.loads(db.execute("SELECT value FROM meta WHERE key = 'index'").fetchone()[0])
    db.close()
    meta["fingerprint_scheme"]["grammars"]["python"] = "0.0.1"
    _edit(path, "UPDATE meta SET value = ? WHERE key = 'index'", json.dumps(meta))
    with pytest.raises(CorpusIndexError, match="rebuild the index"):
        load_corpus_index(path)
    _edit(path, "UPDATE meta SET value = ? WHERE key = 'format'", json.dumps("something-else"))
    with pytest.raises(CorpusIndexError, match="format 'something-else'"):
        load_corpus_index(path)


def test_other_options_are_an_error(kernels: Path, tmp_path: Path) -> None:
    build_corpus_index([kernels], tmp_path / "k.index", options=SimilarityOptions(kgram_length=12, kgrams_in_window=5))
    with load_corpus_index(tmp_path / "k.index") as index:
        assert (index.options.kgram_length, index.options.kgrams_in_window) == (12, 5)
        with pytest.raises(CorpusIndexError, match="index built with kgram_length=12, kgrams_in_window=5"):
            index.compare(_agents(), SimilarityOptions())
        assert index.compare(_agents(), SimilarityOptions(kgram_length=12, kgrams_in_window=5)).pairs


def test_corrupt_record_is_reported_not_trusted(kernels: Path, tmp_path: Path) -> None:
    path = tmp_path / "k.index"
    build_corpus_index([kernels], path)
    _edit(path, "UPDATE docs SET record = ? WHERE path = 'author/base.py'", b"\x80\x04garbage")
    with load_corpus_index(path) as index:
        with pytest.raises(CorpusIndexError, match="author/base.py: corrupt record"):
            index.compare(_agents(), min_containment=0.0)


def _set_profile(path: Path, kernel: str, blob: bytes) -> None:
    _edit(path, "UPDATE profiles SET profile = ? WHERE id = (SELECT id FROM docs WHERE path = ?)", blob, kernel)


def test_corrupt_detector_profile_is_reported_not_trusted(kernels: Path, tmp_path: Path) -> None:
    path = tmp_path / "k.index"
    build_corpus_index([kernels], path)
    _set_profile(path, "author/base.py", b"MLDP\x01garbage")
    with load_corpus_index(path) as index:
        with pytest.raises(CorpusIndexError, match="author/base.py: corrupt detector profile"):
            index.compare(_agents(), min_containment=0.0)
    # read first as a left-out or bounded reference (its tokens only): named all the same
    with load_corpus_index(path) as index:
        with pytest.raises(CorpusIndexError, match="author/base.py: corrupt detector profile"):
            index._token_profiles.clear()
            index.compare(_agents(), min_containment=0.9, top=1, bound_budget=None)


def test_a_profile_header_with_an_infinite_size_is_reported_not_a_traceback(kernels: Path, tmp_path: Path) -> None:
    import zlib

    path = tmp_path / "k.index"
    build_corpus_index([kernels], path)
    head = json.dumps({"chars": 10, "n": float("inf"), "vocabulary": 1}).encode()
    blob = b"MLDP\x01" + zlib.compress(len(head).to_bytes(4, "little") + head)
    with sqlite3.connect(path) as db:
        magic = db.execute("SELECT profile FROM profiles LIMIT 1").fetchone()[0][:5]
    assert magic == b"MLDP\x01"  # the layout this test writes
    _set_profile(path, "author/base.py", blob)
    with load_corpus_index(path) as index:
        with pytest.raises(CorpusIndexError, match="author/base.py: corrupt detector profile"):
            index.compare(_agents(), min_containment=0.0)


@pytest.mark.parametrize(("damage", "message", "options"), [
    # an impossible document frequency would make copied code look common: reported, never a clean comparison
    ("UPDATE ngrams SET df = 1000000", "corrupt n-gram table", {}),
    # a reference without its record: reported, not a traceback
    ("DELETE FROM docs WHERE path = 'author/base.py'", "corrupt index: reference id .* has no record", {"top": None}),
], ids=["impossible-document-frequency", "reference-without-record"])
def test_a_damaged_table_is_reported_as_a_corrupt_index(kernels: Path, tmp_path: Path, damage: str, message: str,
                                                       options: dict) -> None:
    path = tmp_path / "k.index"
    build_corpus_index([kernels], path)
    _edit(path, damage)
    with load_corpus_index(path) as index:
        with pytest.raises(CorpusIndexError, match=message):
            index.compare(_agents(), min_containment=0.0, **options)


def test_a_version_1_index_is_refused_with_a_rebuild_message(kernels: Path, tmp_path: Path) -> None:
    path = tmp_path / "k.index"
    build_corpus_index([kernels], path)
    _edit(path, "UPDATE meta SET value = ? WHERE key = 'format_version'", json.dumps(1))
    with pytest.raises(CorpusIndexError, match=r"version 1 holds no copy-detector data.*rebuild the index"):
        load_corpus_index(path)


def test_detector_profiles_round_trip() -> None:
    text = (INVARIANCE / "base.py").read_text(encoding="utf-8")
    profile = profile_code(text, "author/base.py")
    decoded, chars = blobs._decode_profile(
        blobs._encode_profile(profile, len(text)), "author/base.py", "here")
    assert chars == len(text)
    assert (decoded.ids, decoded.starts, decoded.ends, dict(decoded.priors)) == (
        profile.ids, profile.starts, profile.ends, dict(profile.priors))
    skeleton = stored_tokens._line_skeleton(
        [0] + [i + 1 for i, c in enumerate(text) if c == "\n"], len(text))
    assert len(skeleton) == len(text) and [i for i, c in enumerate(skeleton) if c == "\n"] == [
        i for i, c in enumerate(text) if c == "\n"]


def _tables(path: Path) -> tuple[list, list]:
    db = sqlite3.connect(path)
    grams = list(db.execute("SELECT key, df, context FROM ngrams ORDER BY key"))
    contexts = list(db.execute("SELECT key, total, kinds FROM contexts WHERE total > 0 ORDER BY key"))
    db.close()
    return grams, contexts


def test_incremental_add_keeps_the_ngram_table_of_a_fresh_build(kernels: Path, tmp_path: Path) -> None:
    index_path = tmp_path / "k.index"
    build_corpus_index([kernels], index_path)
    late = kernels / "late"
    late.mkdir()
    with load_corpus_index(index_path, writable=True) as index:
        # add a file, change it, add another copy, then make one unusable (removed)
        (late / "copy.py").write_text((INVARIANCE / "renamed.py").read_text(encoding="utf-8"), encoding="utf-8")
        assert index.add([late]).added == 1
        (late / "copy.py").write_text((INVARIANCE / "unrelated.py").read_text(encoding="utf-8"), encoding="utf-8")
        assert index.add([late]).replaced == 1
        (kernels / "author" / "base.py").write_bytes(b"\x00binary")
        assert index.add([kernels / "author"]).removed == 1
    (kernels / "author" / "base.py").unlink()
    build_corpus_index([kernels], tmp_path / "fresh.index")
    assert _tables(index_path) == _tables(tmp_path / "fresh.index")
    grams, contexts = _tables(index_path)
    assert grams and contexts and all(df > 0 for _, df, _ in grams)
    # and the copy detector's figures equal brute force over the same files
    brute = compare(_agents(), load_reference_corpus(kernels))
    with load_corpus_index(index_path) as index:
        assert index.compare(_agents(), min_containment=0.0, top=None).pairs == tuple(_shared_pairs(brute))


def test_index_flags_a_partial_copy_with_the_brute_force_score(tmp_path: Path) -> None:
    notebooks = shared_path("notebooks", "aerial-cactus-identification")
    cases = shared_path("partial-copies")
    with open(cases / "cases.tsv", encoding="utf-8") as stream:
        row = next(r for r in csv.DictReader(stream, delimiter="\t")
                   if r["source"].startswith("aerial-cactus-identification/"))
    agent = _unit(row["case"], (cases / row["case"]).read_text(encoding="utf-8"))
    build_corpus_index([notebooks], tmp_path / "ac.index")
    options = SimilarityOptions(max_pairs_per_agent=None)
    brute = compare([agent], load_reference_corpus(notebooks), options)
    with load_corpus_index(tmp_path / "ac.index") as index:
        report = index.compare([agent], options, min_containment=0.0, top=None)
    assert report.pairs == tuple(_shared_pairs(brute))
    source = Path(row["source"]).stem
    flagged = [p for p in report.pairs if p.flagged]
    assert any(Path(p.reference_path).stem == source for p in flagged)
    assert all(p.evidence_fragments for p in flagged)


def test_build_refuses_existing_file_and_missing_folder(kernels: Path, tmp_path: Path) -> None:
    existing = tmp_path / "k.index"
    existing.write_text("keep me")
    with pytest.raises(CorpusIndexError, match="already exists"):
        build_corpus_index([kernels], existing)
    assert existing.read_text() == "keep me"
    with pytest.raises(Exception, match="not a folder"):
        build_corpus_index([tmp_path / "nope"], tmp_path / "new.index")
    assert not (tmp_path / "new.index").exists()


def test_parse_storage() -> None:
    assert parse_storage(None) is None and parse_storage("sqlite") is None
    config = parse_storage("redis://example.org:6390/3")
    assert config["redis"]["host"] == "example.org" and config["redis"]["db"] == 3
    assert config["redis"]["password"] == {"env": "MLEAUDIT_REDIS_PASSWORD", "default": None}
    with pytest.raises(CorpusIndexError, match="do not put credentials in the URL"):
        parse_storage("redis://:secret@host:6379/0")
    with pytest.raises(CorpusIndexError, match="expected 'sqlite' or redis://"):
        parse_storage("mysql://host/db")


# -- Redis storage -----------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def redis_url(tmp_path: Path):
    binary = shutil.which("redis-server")
    if binary is None:
        pytest.skip("redis-server is not installed (apt-get install redis-server)")
    redis = pytest.importorskip("redis", reason="the 'redis' package is not installed (pip install 'mleaudit[redis]')")
    port = _free_port()
    server = subprocess.Popen(
        [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", str(tmp_path)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        client = redis.Redis(host="127.0.0.1", port=port)
        for _ in range(200):
            try:
                client.ping()
                break
            except redis.ConnectionError:
                time.sleep(0.025)
        else:
            pytest.fail("redis-server did not start")
        client.close()
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        server.terminate()
        server.wait(timeout=10)


def test_redis_storage_matches_sqlite(kernels: Path, boilerplate: Path, tmp_path: Path, redis_url: str) -> None:
    build_corpus_index([kernels], tmp_path / "local.index", boilerplate=[boilerplate])
    summary = build_corpus_index([kernels], tmp_path / "shared.index", boilerplate=[boilerplate],
                                 storage=redis_url, jobs=2)
    assert summary.added == 6
    # The local file only says where the data is.
    db = sqlite3.connect(tmp_path / "shared.index")
    assert {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")} == {"meta"}
    db.close()
    options = SimilarityOptions(max_doc_fraction=0.5)
    with load_corpus_index(tmp_path / "local.index") as local, load_corpus_index(tmp_path / "shared.index") as shared:
        assert shared.storage == redis_url
        assert shared.compare(_agents(), options, min_containment=0.0, top=None) == local.compare(
            _agents(), options, min_containment=0.0, top=None)
        assert shared.info().corpus_digest == local.info().corpus_digest
        assert shared.skipped() == local.skipped()
        assert shared.info().references == 6 and shared.info().size_bytes is None
    # A second machine opens the same index (a copy of the small file) and adds to it.
    copy = tmp_path / "copy.index"
    shutil.copy(tmp_path / "shared.index", copy)
    new = kernels / "author" / "copy.py"
    shutil.copy(INVARIANCE / "renamed.py", new)
    with load_corpus_index(copy, writable=True) as other:
        assert other.add([new]).added == 1
        new.write_text((INVARIANCE / "unrelated.py").read_text(encoding="utf-8"), encoding="utf-8")
        assert other.add([new]).replaced == 1
        assert other.add([new]).unchanged == 1
    with load_corpus_index(tmp_path / "shared.index") as shared:
        assert shared.info().references == 7
        agent = _unit("code/unrelated.py", (INVARIANCE / "unrelated.py").read_text(encoding="utf-8"))
        assert "author/copy.py" in shared.candidates(agent)
        references = sorted(load_reference_corpus(kernels).units, key=lambda u: u.path)
        brute = compare(_agents(), references, options, boilerplate=load_reference_corpus(boilerplate).units)
        assert shared.compare(_agents(), options, min_containment=0.0, top=None).pairs == tuple(_shared_pairs(brute))


def test_unreachable_redis_is_a_clear_error(tmp_path: Path) -> None:
    pytest.importorskip("redis", reason="the 'redis' package is not installed")
    with pytest.raises(CorpusIndexError, match="cannot reach Redis at redis://127.0.0.1:"):
        create_corpus_index(tmp_path / "x.index", storage=f"redis://127.0.0.1:{_free_port()}/0")
    assert not (tmp_path / "x.index").exists()


# -- command line --------------------------------------------------------------------------------


def test_cli_build_add_info(kernels: Path, boilerplate: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    index_path = tmp_path / "k.index"
    result = runner.invoke(corpus_group, ["build", str(kernels), "-o", str(index_path), "--boilerplate",
                                          str(boilerplate), "--jobs", "1"])
    assert result.exit_code == 0, result.output
    assert "6 added, 0 replaced, 0 unchanged, 0 removed, 2 skipped" in result.output
    result = runner.invoke(corpus_group, ["add", str(index_path), str(kernels)])
    assert result.exit_code == 0, result.output
    assert "0 added, 0 replaced, 6 unchanged" in result.output
    result = runner.invoke(corpus_group, ["info", str(index_path), "--format", "json", "--skipped"])
    assert result.exit_code == 0, result.output
    info = json.loads(result.output)
    assert info["references"] == 6 and info["format_version"] == CORPUS_INDEX_VERSION
    assert info["options"] == {"kgram_length": 23, "kgrams_in_window": 17}
    assert {s["path"] for s in info["skipped_files"]} == {"other/broken.ipynb", "other/r-kernel.ipynb"}
    result = runner.invoke(corpus_group, ["info", str(index_path)])
    assert result.exit_code == 0 and "references:     6 (python)" in result.output


@pytest.mark.parametrize(
    "args, message",
    [
        (["info", "{tmp}/notes.txt"], "not a corpus index"),
        (["build", "{tmp}/nope", "-o", "{tmp}/x.index"], "not a folder"),
        (["build", "{tmp}", "-o", "{tmp}/notes.txt"], "already exists"),
        (["build", "{tmp}", "-o", "{tmp}/y.index", "--storage", "ftp://x"], "expected 'sqlite' or redis://"),
        (["add", "{tmp}/notes.txt", "{tmp}"], "not a corpus index"),
        (["compact", "{tmp}/notes.txt"], "not a corpus index"),
    ],
)
def test_cli_errors_exit_2_without_traceback(tmp_path: Path, args: list[str], message: str) -> None:
    (tmp_path / "notes.txt").write_text("not an index")
    result = CliRunner().invoke(corpus_group, [a.format(tmp=tmp_path) for a in args])
    assert result.exit_code == 2, result.output
    assert message in result.output and "Traceback" not in result.output
    assert not isinstance(result.exception, CorpusIndexError)


def test_cli_commands_have_examples() -> None:
    for command in [corpus_group, *corpus_group.commands.values()]:
        assert "Example:" in (command.help or ""), command.name


# -- writers -------------------------------------------------------------------------------------


def test_interrupted_add_leaves_a_consistent_index_that_the_next_add_completes(tmp_path: Path, monkeypatch) -> None:
    from filelock import FileLock

    folders = {}
    for name, files in {"base": ["base.py"], "more": ["renamed.py", "unrelated.py", "reordered.py", "reformatted.py"]}.items():
        folders[name] = tmp_path / name
        folders[name].mkdir()
        for file in files:
            shutil.copy(INVARIANCE / file, folders[name] / file)
    index_path = tmp_path / "k.index"
    build_corpus_index([folders["base"]], index_path)
    # one file per chunk and per segment, so segments are committed before the interruption
    monkeypatch.setattr(adding, "SEGMENT_DOCS", 1)
    monkeypatch.setattr(adding, "_CHUNK_FILES", 1)
    real_index_chunk = adding._index_chunk
    calls = []

    def interrupted(task):
        calls.append(task)
        if len(calls) == 3:
            raise KeyboardInterrupt  # Ctrl-C while the third file is read
        return real_index_chunk(task)

    monkeypatch.setattr(adding, "_index_chunk", interrupted)
    with load_corpus_index(index_path, writable=True) as index:
        with pytest.raises(KeyboardInterrupt):
            index.add([folders["more"]])
    # the writer lock was released (its file removed), and what was committed is consistent
    assert not Path(f"{index_path}.lock").exists()
    with load_corpus_index(index_path) as index:
        info = index.info()
        assert info.references == 3 and info.corpus_digest == ""  # unknown, not stale
        assert info.posting_entries == info.segments == 3
    monkeypatch.undo()
    with load_corpus_index(index_path, writable=True) as index:
        summary = index.add([folders["more"]])
        assert (summary.added, summary.unchanged) == (2, 2)
    build_corpus_index([folders["base"], folders["more"]], tmp_path / "fresh.index")
    with load_corpus_index(index_path) as index, load_corpus_index(tmp_path / "fresh.index") as fresh:
        assert index.info().corpus_digest == fresh.info().corpus_digest
        assert index.info().ngrams == fresh.info().ngrams
        assert sorted(index.info().roots) == sorted(str(f.resolve()) for f in folders.values())
        options = SimilarityOptions(max_doc_fraction=1.0)
        assert index.compare(_agents(), options, min_containment=0.0, top=None).pairs == fresh.compare(
            _agents(), options, min_containment=0.0, top=None).pairs


def test_a_writer_waits_for_the_writer_lock(tmp_path: Path, kernels: Path) -> None:
    import threading

    index_path = tmp_path / "k.index"
    build_corpus_index([kernels / "author"], index_path)
    held = locks._file_writer_lock(index_path)
    held.__enter__()
    done = threading.Event()

    def add() -> None:
        with load_corpus_index(index_path, writable=True) as index:
            index.add([kernels / "other"])
        done.set()

    writer = threading.Thread(target=add)
    writer.start()
    assert not done.wait(0.5)  # blocked by the lock another writer holds
    held.__exit__(None, None, None)
    writer.join(timeout=30)
    assert done.is_set()
    with load_corpus_index(index_path) as index:
        assert len(index.info().roots) == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["k.index", "kernels"]


def test_writer_locks_exclude_each_other_across_removals(tmp_path: Path) -> None:
    # many threads (each its own open file) take and release the lock of one index: never two at once
    import threading

    index_path = tmp_path / "k.index"
    inside = []
    overlaps = []

    def writer() -> None:
        for _ in range(20):
            with locks._file_writer_lock(index_path):
                inside.append(1)
                if len(inside) > 1:
                    overlaps.append(len(inside))
                time.sleep(0.0005)
                inside.pop()

    threads = [threading.Thread(target=writer) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert overlaps == [] and not Path(f"{index_path}.lock").exists()


@pytest.mark.parametrize("storage", ["sqlite", "redis"])
def test_writers_opened_together_start_from_the_stored_meta(tmp_path: Path, storage: str, request) -> None:
    # two handles opened before either writes (two processes started at once): each writer reads
    # the roots and postings entries as stored when it takes the lock, not as they were at open
    url = request.getfixturevalue("redis_url") if storage == "redis" else None
    folders = {}
    for name, file in {"base": "base.py", "one": "renamed.py", "two": "unrelated.py", "three": "reordered.py"}.items():
        folders[name] = tmp_path / name
        folders[name].mkdir()
        shutil.copy(INVARIANCE / file, folders[name] / file)
    index_path = tmp_path / "k.index"
    build_corpus_index([folders["base"]], index_path, storage=url)
    with load_corpus_index(index_path, writable=True) as first, load_corpus_index(index_path, writable=True) as second, \
            load_corpus_index(index_path, writable=True) as third:
        first.add([folders["one"]])
        second.add([folders["two"]])
        third.compact()
        first.add([folders["three"]])
    with load_corpus_index(index_path) as index:
        info = index.info()
        assert sorted(info.roots) == sorted(str(f.resolve()) for f in folders.values())
        assert info.references == 4 and info.posting_entries == 2  # merged to 1, then one more segment
    build_corpus_index(list(folders.values()), tmp_path / "fresh.index", storage=url)
    with load_corpus_index(index_path) as index, load_corpus_index(tmp_path / "fresh.index") as fresh:
        assert index.info().corpus_digest == fresh.info().corpus_digest
