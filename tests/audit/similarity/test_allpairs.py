"""All pairs at once: :func:`all_pair_metrics` equals Dolos 3.5.1 and :func:`dolos_metrics` exactly."""

from __future__ import annotations

import csv
import random
import time
from pathlib import Path

import numpy as np
import pytest

import mleaudit.audit.similarity.allpairs as allpairs
from mleaudit.audit.similarity.allpairs import covered, longest, metrics
import mleaudit.audit.similarity.pair_metrics as pair_metrics
from mleaudit.audit.similarity.allpairs import (
    PairTable,
    all_pair_metrics,
    fingerprint_hashes,
    fingerprint_texts,
    longest_common_substring,
)
from mleaudit.audit.similarity.fingerprint_index import FingerprintIndex, IndexedFile, Role
from mleaudit.audit.similarity.pair_metrics import DolosMetrics, dolos_metrics
from mleaudit.audit.similarity.tokenize import TokenizedFile, tokenize_text
from mleaudit.audit.similarity.winnow import Fingerprint
from tests.conftest import SHARED_DATA, shared_path

GOLDEN = "similarity-golden"
INT_FIELDS = {"totalOverlap": "total_overlap", "longestFragment": "longest_fragment", "leftCovered": "left_covered",
              "rightCovered": "right_covered", "leftTotal": "left_total", "rightTotal": "right_total"}


def make_file(path: str, hashes: list[int]) -> IndexedFile:
    """An indexed file with the given fingerprint hashes (token regions are placeholders)."""
    text = "x" * (len(hashes) + 1)
    tokenized = TokenizedFile(path=path, language="chars", text=text, tokens=tuple(text),
                              starts=tuple(range(len(text))), ends=tuple(range(1, len(text) + 1)))
    fingerprints = tuple(Fingerprint(hash=h, start=i, stop=i + 1, index=i) for i, h in enumerate(hashes))
    occurrences: dict[int, list[int]] = {}
    for f in fingerprints:
        occurrences.setdefault(f.hash, []).append(f.index)
    return IndexedFile(id=0, role=Role.REFERENCE, file=tokenized, fingerprints=fingerprints,
                       occurrences={h: tuple(p) for h, p in occurrences.items()})


def dolos_loop_longest(left: list[int], right: list[int], ignored: frozenset[int] = frozenset()) -> int:
    """Dolos's ``longestCommonSubstring`` loop, written out independently of the package."""
    shared = (set(left) & set(right)) - ignored
    left_occ = [(i, h) for i, h in enumerate(left) if h in shared]
    right_occ = [(i, h) for i, h in enumerate(right) if h in shared]
    short, long = (left_occ, right_occ) if len(left_occ) < len(right_occ) else (right_occ, left_occ)
    best, previous = 0, {}
    for _, value in long:
        current = {}
        for index, other in short:
            if other == value:
                current[index] = previous.get(index - 1, 0) + 1
                best = max(best, current[index])
        previous = current
    return best


def _table_as_metrics(table: PairTable) -> dict[tuple[int, int], DolosMetrics]:
    return {(int(l), int(r)): table.metrics(k) for k, (l, r) in enumerate(zip(table.left, table.right))}


# -- Dolos's own output ---------------------------------------------------------------------------


def _competitions() -> list[str]:
    root = SHARED_DATA / GOLDEN
    if not root.is_dir():
        return ["(shared data absent)"]
    return sorted(p.name for p in root.iterdir() if (p / "dolos_pairs.tsv").is_file())


@pytest.mark.parametrize("competition", _competitions())
def test_every_golden_pair_matches_dolos(competition: str) -> None:
    directory = shared_path(GOLDEN, competition)
    with (directory / "dolos_pairs.tsv").open(newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle, delimiter="\t"))
    names = sorted(f"{competition}/{p.name}" for p in directory.glob("*.py"))
    texts = [((directory.parent / name).read_bytes().decode("utf-8"), "python") for name in names]
    table = all_pair_metrics(fingerprint_texts(texts))
    assert len(table) == len(rows) == len(names) * (len(names) - 1) // 2
    got = {(names[l], names[r]): table.metrics(k) for k, (l, r) in enumerate(zip(table.left, table.right))}
    bad = []
    for row in rows:
        m = got[(row["left"], row["right"])]
        if abs(m.similarity - float(row["similarity"])) > 1e-6 or any(
                getattr(m, ours) != int(row[theirs]) for theirs, ours in INT_FIELDS.items()):
            bad.append((row["left"], row["right"], m))
    assert not bad, f"{len(bad)} of {len(rows)} pairs differ from Dolos, e.g. {bad[:2]}"


# -- the same numbers as dolos_metrics ------------------------------------------------------------


@pytest.mark.parametrize("seed", range(6))
def test_equals_dolos_metrics_on_random_repetitive_files(seed: int) -> None:
    rng = random.Random(seed)
    alphabet = rng.choice([3, 6, 40])
    hashes = [[rng.randrange(alphabet) for _ in range(rng.randrange(0, 60))] for _ in range(9)]
    # copies with edits: long shared runs, gaps on one side only, equal covered counts
    hashes.append(hashes[0][:])
    hashes.append(hashes[1][:10] + [99] + hashes[1][10:] + [98, 97])
    ignored = frozenset({rng.randrange(alphabet)}) if seed % 2 else frozenset()
    files = [make_file(f"f{i}", h) for i, h in enumerate(hashes)]
    table = all_pair_metrics(files, ignored)
    assert len(table) == len(files) * (len(files) - 1) // 2
    for (i, j), got in _table_as_metrics(table).items():
        assert got == dolos_metrics(files[i], files[j], ignored), (i, j)
        assert got.longest_fragment == dolos_loop_longest(hashes[i], hashes[j], ignored)


def test_accepts_hash_arrays_and_indexed_files_alike() -> None:
    hashes = [[1, 2, 3, 4, 2], [2, 3, 9], [5]]
    by_array = all_pair_metrics([np.array(h) for h in hashes])
    by_file = all_pair_metrics([make_file(str(i), h) for i, h in enumerate(hashes)])
    assert list(by_array) == list(by_file)
    first = by_array.metrics(0)
    assert (first.left_covered, first.right_covered, first.longest_fragment) == (3, 2, 2)
    assert by_array.rows()[0] == {"left": 0, "right": 1, "similarity": 5 / 8, "total_overlap": 5,
                                  "longest_fragment": 2, "left_covered": 3, "right_covered": 2, "left_total": 5,
                                  "right_total": 3, "left_ignored": 0, "right_ignored": 0}


def test_no_pairs_and_empty_files() -> None:
    assert len(all_pair_metrics([])) == 0
    assert len(all_pair_metrics([[1, 2, 3]])) == 0
    (empty,) = list(all_pair_metrics([[], []]))
    assert (empty.similarity, empty.total_overlap, empty.longest_fragment) == (0.0, 0, 0)
    with pytest.raises(ValueError, match="one-dimensional"):
        all_pair_metrics([[[1, 2]], [1]])
    with pytest.raises(ValueError, match="jobs"):
        all_pair_metrics([[1], [1]], jobs=0)


def test_repetitive_pair_takes_the_exact_fallback(monkeypatch: pytest.MonkeyPatch) -> None:
    # 400 x one hash on both sides: 160,000 bigram matches for 800 fingerprints
    left = [1, 2] + [7] * 400 + [3]
    right = [5] + [7] * 300 + [8, 7, 7, 9] + [7] * 100
    calls = []
    original = longest.longest_common_substring
    monkeypatch.setattr(longest, "longest_common_substring", lambda a, b: calls.append(1) or original(a, b))
    started = time.perf_counter()
    (got,) = list(all_pair_metrics([left, right]))
    assert time.perf_counter() - started < 1.0
    assert calls, "the repetitive pair should use the longest-common-substring fallback"
    # Dolos's quirk: the long side (right) skips its unshared 8 and 9, so its 402 shared 7s
    # are one run; the short side's 400 consecutive 7s bound it
    assert got.longest_fragment == dolos_loop_longest(left, right) == 400
    assert got == dolos_metrics(make_file("l", left), make_file("r", right))


def test_parallel_processes_give_the_same_table(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(metrics, "_MIN_PARALLEL_OCCURRENCES", 0)
    rng = random.Random(5)
    hashes = [[rng.randrange(12) for _ in range(rng.randrange(5, 80))] for _ in range(12)]
    one, two = all_pair_metrics(hashes), all_pair_metrics(hashes, jobs=2)
    assert list(one) == list(two)
    assert np.array_equal(one.left, two.left) and np.array_equal(one.right, two.right)


# -- the longest common substring -----------------------------------------------------------------


def _brute_lcs(a: list[int], b: list[int]) -> int:
    best = 0
    for i in range(len(a)):
        for j in range(len(b)):
            n = 0
            while i + n < len(a) and j + n < len(b) and a[i + n] == b[j + n]:
                n += 1
            best = max(best, n)
    return best


def test_longest_common_substring_agrees_with_brute_force() -> None:
    rng = random.Random(11)
    for _ in range(300):
        a = [rng.randrange(3) for _ in range(rng.randrange(0, 30))]
        b = [rng.randrange(3) for _ in range(rng.randrange(0, 30))]
        assert longest_common_substring(a, b) == _brute_lcs(a, b), (a, b)
    assert longest_common_substring([7] * 5000, [7] * 4000) == 4000
    assert longest_common_substring([-3, 2**62, 5], [2**62, 5, -3]) == 2


# -- fingerprints without the token records -------------------------------------------------------


CODE = {
    "plain": "import numpy as np\n\ndef f(x):\n    return [i * x for i in range(10) if i % 2]\n" * 4,
    "non_ascii": "s = 'héllo wörld 😀'\nprint(s.upper())  # ünïcode\n" * 6,
    "broken": "!pip install x\nfor i in range(3)\n    print(i\n" * 5,
    "empty": "",
}


@pytest.mark.parametrize("name", sorted(CODE))
@pytest.mark.parametrize("language", ["python", "chars"])
def test_fingerprint_hashes_equal_the_index(name: str, language: str) -> None:
    text = CODE[name]
    expected = [f.hash for f in FingerprintIndex(kgram_length=7, kgrams_in_window=4).add_reference(
        tokenize_text(text, language, "a.py")).fingerprints]
    got = fingerprint_hashes(text, language, kgram_length=7, kgrams_in_window=4)
    assert got.dtype == np.int64 and got.tolist() == expected


def test_fingerprint_texts_in_processes_and_errors() -> None:
    texts = [(CODE[name], "python") for name in sorted(CODE)] * 3
    assert [h.tolist() for h in fingerprint_texts(texts, jobs=2)] == [h.tolist() for h in fingerprint_texts(texts)]
    with pytest.raises(KeyError, match="unknown language"):
        fingerprint_texts([("x = 1", "cobol")])
    with pytest.raises(ValueError, match="jobs"):
        fingerprint_texts([("x = 1", "python")], jobs=0)


def test_pathological_code_against_itself_is_fast_and_exact() -> None:
    nested = "value = " + "(" * 5000 + "1" + ")" * 5000 + "\n"
    lists = "value = " + "[" * 5000 + "1" + "]" * 5000 + "\n"
    started = time.perf_counter()
    hashes = fingerprint_texts([(nested, "python"), (nested, "python"), (lists, "python")])
    table = all_pair_metrics(hashes)
    assert time.perf_counter() - started < 5.0  # Dolos's own loop: minutes
    same = table.metrics(0)
    assert same.longest_fragment == same.left_total == len(hashes[0])
    index = FingerprintIndex()
    files = [index.add_reference(tokenize_text(text, "python", str(i))) for i, text in enumerate((nested, lists))]
    assert table.metrics(1) == dolos_metrics(files[0], files[1])


def test_module_exports() -> None:
    assert set(allpairs.__all__) <= set(dir(allpairs))
    assert pair_metrics.MAX_RUN_VISITS > 0


def test_keys_too_wide_to_pack_are_sorted_per_file(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(2)
    hashes = [[rng.randrange(5) for _ in range(rng.randrange(10, 50))] for _ in range(7)]
    packed = list(all_pair_metrics(hashes))
    monkeypatch.setattr(longest, "_KEY_BITS", 1)
    assert list(all_pair_metrics(hashes)) == packed


def test_covered_counts_listed_in_slices(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(4)
    hashes = [[rng.randrange(6) for _ in range(rng.randrange(5, 40))] for _ in range(9)]
    whole = list(all_pair_metrics(hashes))
    monkeypatch.setattr(covered, "_BLOCK_PAIRS", 3)
    assert list(all_pair_metrics(hashes)) == whole
