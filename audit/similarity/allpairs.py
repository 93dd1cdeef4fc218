"""Dolos's pair figures for every pair of a set of files at once, with numpy.

:func:`audit.similarity.pairs.dolos_metrics` computes one pair in Python; an all-pairs analysis
(Dolos's ``analyze`` over a folder, ``mleaudit similarity pairs``) has ``F (F - 1) / 2`` pairs,
and the per-pair work dominates. :func:`all_pair_metrics` computes the same figures, to the
last bit, for all pairs together:

- **Covered counts.** Occurrences are grouped by (hash, file) into *blocks*; every two blocks
  of one hash in two files add their sizes to the two files' covered counts (Dolos's
  ``leftCovered`` / ``rightCovered``). Work: one sort of all fingerprints, plus one step per
  (pair, shared distinct hash).
- **Longest fragment.** Dolos's ``longestCommonSubstring`` (see
  :func:`audit.similarity.pairs.longest_common_run`) is the length of the longest common
  substring of two sequences: the *long* side's shared fingerprints, in order with the others
  left out, and the *short* side's whole fingerprint sequence (its unshared fingerprints never
  match, so they only break runs). A run of ``r`` matches holds ``r - 1`` *bigram matches*: two
  consecutive shared fingerprints of the long side equal to two consecutive fingerprints of the
  short side. So per short file, the long sides' bigrams are looked up among the short file's
  bigrams; the bigram matches are sorted by (pair, diagonal, position) and the longest chain of
  consecutive ones, plus one, is the longest fragment (one when the files share a hash but no
  bigram). Dolos instead pairs every occurrence of a shared hash with every other, which is
  quadratic in a hash's repetitions; bigram matches are far fewer.
- **Repetitive pairs.** A pair whose bigram matches still exceed
  :data:`MAX_BIGRAM_MATCHES_PER_OCCURRENCE` per fingerprint (code repeating one statement
  thousands of times) gets its longest fragment from :func:`longest_common_substring`, exact in
  ``O(n log^2 n)`` whatever the repetitions.

Exactness is tested against Dolos 3.5.1's output on every golden pair and against
:func:`~audit.similarity.pairs.dolos_metrics` on random sequences.

Naming: a file's *fingerprints* are its winnowed k-gram hashes in document order (Dolos's
"kgrams"); a *pair* is two files ``left`` < ``right`` in input order.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterator, Sequence

import numpy as np

if TYPE_CHECKING:  # imported lazily: the all-pairs path needs neither at import time
    from audit.similarity.index import IndexedFile
    from audit.similarity.pairs import DolosMetrics

__all__ = [
    "MAX_BIGRAM_MATCHES_PER_OCCURRENCE",
    "PairTable",
    "all_pair_metrics",
    "default_jobs",
    "fingerprint_hashes",
    "fingerprint_texts",
    "longest_common_substring",
]

logger = logging.getLogger(__name__)

#: Above this many bigram matches per fingerprint of a pair (both files' fingerprints counted),
#: the pair's longest fragment comes from :func:`longest_common_substring` instead of the
#: bigram matches. Both give the same number; this only bounds the work on repetitive code.
MAX_BIGRAM_MATCHES_PER_OCCURRENCE = 16
#: Bigram matches are sorted as keys packing (file, diagonal, position) into this many bits of an
#: int64; wider inputs are sorted one long side at a time.
_KEY_BITS = 62
#: Block pairs listed at a time while counting covered fingerprints (bounds the memory).
_BLOCK_PAIRS = 1 << 22

_EMPTY = np.zeros(0, dtype=np.int64)


# -- fingerprints ---------------------------------------------------------------------------------


def fingerprint_hashes(text: str, language: str, *, kgram_length: int = 23, kgrams_in_window: int = 17) -> np.ndarray:
    """A text's fingerprint hashes in document order, as :class:`FingerprintIndex` selects them.

    Parameters
    ----------
    text : str
        Source code (untrusted: parsed, never run).
    language : str
        A grammar name from :data:`audit.parsing.LANGUAGES`, or ``"chars"``.
    kgram_length, kgrams_in_window : int
        Dolos's ``kgramLength`` (k, in tokens) and ``kgramsInWindow`` (the winnowing window).

    Returns
    -------
    numpy.ndarray
        int64 hashes, equal to ``[f.hash for f in FingerprintIndex(k, w).add_reference(
        tokenize_text(text, language, path)).fingerprints]``, without building the token
        strings, regions or :class:`~audit.similarity.winnow.Fingerprint` records.

    Raises
    ------
    KeyError
        If ``language`` is neither a known grammar nor ``"chars"``.
    ValueError
        If ``kgram_length`` or ``kgrams_in_window`` is below 1.
    """
    from audit.similarity.tokenize import tokenize_hashes
    from audit.similarity.winnow import _kgram_selection

    tokens = tokenize_hashes(text, language).astype(np.int64)
    _, hashes = _kgram_selection(tokens, kgram_length, kgrams_in_window)
    return np.asarray(hashes, dtype=np.int64)


def _fingerprint_item(item: tuple[str, str, int, int]) -> np.ndarray:
    text, language, k, window = item
    return fingerprint_hashes(text, language, kgram_length=k, kgrams_in_window=window)


def fingerprint_texts(
    texts: Sequence[tuple[str, str]],
    *,
    jobs: int = 1,
    kgram_length: int = 23,
    kgrams_in_window: int = 17,
) -> list[np.ndarray]:
    """:func:`fingerprint_hashes` of many ``(text, language)`` items, optionally in parallel.

    Parameters
    ----------
    texts : sequence of (str, str)
        ``(source text, language)`` per file.
    jobs : int, default 1
        Worker processes. Parsing and walking syntax trees is CPU-bound work that holds the
        interpreter lock (py-tree-sitter parses without releasing it), so parallel tokenizing
        needs processes; a pool costs a fork and the transfer of texts and results (some 20-30
        ms), which pays off from a few dozen files on (204 notebooks: 0.54 s in one process,
        0.31 s in two). ``1`` tokenizes in this process.
    kgram_length, kgrams_in_window : int
        As for :func:`fingerprint_hashes`.

    Returns
    -------
    list of numpy.ndarray
        In the order of ``texts``.

    Raises
    ------
    KeyError
        If a language is neither a known grammar nor ``"chars"``.
    ValueError
        If ``jobs < 1``.
    """
    if jobs < 1:
        raise ValueError(f"jobs must be >= 1, got {jobs}")
    items = [(text, language, kgram_length, kgrams_in_window) for text, language in texts]
    jobs = min(jobs, len(items))
    if jobs <= 1:
        return [_fingerprint_item(item) for item in items]
    import multiprocessing

    # fork: the workers start with the grammar and numpy already loaded (spawn would import
    # them again, which costs more than tokenizing a small corpus)
    method = "fork" if "fork" in multiprocessing.get_all_start_methods() else None
    with multiprocessing.get_context(method).Pool(jobs) as pool:
        # interleaved chunks keep the workers busy to the end when file sizes vary
        return pool.map(_fingerprint_item, items, chunksize=max(1, len(items) // (8 * jobs)))


def _hash_array(file: Any) -> np.ndarray:
    """int64 fingerprint hashes of an :class:`IndexedFile` or of a sequence of ints."""
    fingerprints = getattr(file, "fingerprints", None)
    if fingerprints is not None:
        return np.fromiter((f.hash for f in fingerprints), dtype=np.int64, count=len(fingerprints))
    array = np.asarray(file, dtype=np.int64)
    if array.ndim != 1:
        raise ValueError(f"fingerprint hashes must be one-dimensional, got shape {array.shape}")
    return array


# -- the longest common substring -----------------------------------------------------------------


def _dense_rank(values: np.ndarray) -> np.ndarray:
    """``np.unique(values, return_inverse=True)[1]`` without a stable sort (equal values need
    no order among themselves), as int64."""
    order = np.argsort(values)
    ordered = values[order]
    rank = np.empty(len(values), dtype=np.int64)
    rank[order] = np.cumsum(np.concatenate(([0], ordered[1:] != ordered[:-1])))
    return rank


def longest_common_substring(a: Sequence[int] | np.ndarray, b: Sequence[int] | np.ndarray) -> int:
    """Length of the longest run of equal consecutive values in both ``a`` and ``b``.

    Exact for any input, in ``O(n log^2 n)`` for ``n = len(a) + len(b)``: prefix doubling
    (Manber & Myers' suffix-array ranks) gives every window of length ``2**k`` of the
    concatenation a class number, equal exactly when the windows are equal; a window of any
    length ``L`` is then named by the classes of its first and last ``2**k`` values
    (``2**k <= L < 2**(k+1)``), and a binary search on ``L`` finds the longest length whose
    names occur in both sequences.

    Parameters
    ----------
    a, b : sequence of int
        Values (fingerprint hashes).

    Returns
    -------
    int
        0 when no value is shared.

    References
    ----------
    Manber, U. & Myers, G. (1993). Suffix arrays: a new method for on-line string searches.
    *SIAM Journal on Computing*, 22(5), 935-948.

    Examples
    --------
    >>> longest_common_substring([1, 2, 3, 4, 5], [9, 2, 3, 4, 8, 1, 2])
    3
    >>> longest_common_substring([7, 7, 7], [7, 7])
    2
    >>> longest_common_substring([1], [2])
    0
    """
    a = np.asarray(a, dtype=np.int64).reshape(-1)
    b = np.asarray(b, dtype=np.int64).reshape(-1)
    if not len(a) or not len(b):
        return 0
    n_a, n = len(a), len(a) + len(b)
    rank = _dense_rank(np.concatenate((a, b)))
    if not np.isin(rank[:n_a], rank[n_a:]).any():
        return 0
    base = n + 1  # class numbers are below n, so pairs of them stay far inside int64
    tables = [rank]  # tables[k][i]: class of the window of 2**k values starting at i

    def names(length: int) -> np.ndarray:
        k = length.bit_length() - 1
        while len(tables) <= k:
            half = 1 << (len(tables) - 1)
            previous = tables[-1]
            tables.append(_dense_rank(previous[:-half] * base + previous[half:]))
        table, count = tables[k], n - length + 1
        shift = length - (1 << k)
        return table[:count] * base + table[shift : shift + count]

    def shared(length: int) -> bool:
        windows = names(length)
        # windows of a end inside a; windows of b start inside b (neither straddles the seam)
        return bool(np.isin(windows[: n_a - length + 1], windows[n_a:]).any())

    low, high = 1, min(n_a, n - n_a)
    while low < high:
        middle = (low + high + 1) // 2
        if shared(middle):
            low = middle
        else:
            high = middle - 1
    return low


# -- the table of all pairs -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class PairTable:
    """Dolos's figures of every pair of files, as columns.

    Row ``r`` is the pair ``(left[r], right[r])`` of input positions, ``left < right``, in the
    order of a nested loop (left ascending, then right). Every column is a numpy array of one
    value per pair; the figures mean what they mean on
    :class:`~audit.similarity.pairs.DolosMetrics`.

    Attributes
    ----------
    left, right : numpy.ndarray of int64
        Positions of the two files in the input sequence.
    similarity : numpy.ndarray of float64
        ``total_overlap / (left_total + right_total - left_ignored - right_ignored)``, in [0, 1].
    total_overlap, longest_fragment, left_covered, right_covered, left_total, right_total,
    left_ignored, right_ignored : numpy.ndarray of int64
        As on :class:`~audit.similarity.pairs.DolosMetrics`.
    """

    left: np.ndarray
    right: np.ndarray
    similarity: np.ndarray
    total_overlap: np.ndarray
    longest_fragment: np.ndarray
    left_covered: np.ndarray
    right_covered: np.ndarray
    left_total: np.ndarray
    right_total: np.ndarray
    left_ignored: np.ndarray
    right_ignored: np.ndarray

    def __len__(self) -> int:
        return len(self.left)

    def metrics(self, row: int) -> "DolosMetrics":
        """Row ``row`` as a :class:`~audit.similarity.pairs.DolosMetrics`."""
        from audit.similarity.pairs import DolosMetrics

        return DolosMetrics(
            similarity=float(self.similarity[row]),
            total_overlap=int(self.total_overlap[row]),
            longest_fragment=int(self.longest_fragment[row]),
            left_covered=int(self.left_covered[row]),
            right_covered=int(self.right_covered[row]),
            left_total=int(self.left_total[row]),
            right_total=int(self.right_total[row]),
            left_ignored=int(self.left_ignored[row]),
            right_ignored=int(self.right_ignored[row]),
        )

    def __iter__(self) -> Iterator["DolosMetrics"]:
        return (self.metrics(row) for row in range(len(self)))

    def rows(self) -> list[dict[str, Any]]:
        """Every pair as a dict of Python numbers (``left``, ``right``, then the figures)."""
        names = ("left", "right", "similarity", "total_overlap", "longest_fragment", "left_covered",
                 "right_covered", "left_total", "right_total", "left_ignored", "right_ignored")
        columns = [getattr(self, name).tolist() for name in names]
        return [dict(zip(names, values)) for values in zip(*columns)]


def _pair_rows(n_files: int) -> tuple[np.ndarray, np.ndarray]:
    """``(left, right)`` of every pair ``left < right`` in nested-loop order."""
    left, right = np.triu_indices(n_files, k=1)
    return left.astype(np.int64), right.astype(np.int64)


def _run_starts(sorted_values: np.ndarray) -> np.ndarray:
    """Indices where a run of equal values begins in a sorted array."""
    if not len(sorted_values):
        return _EMPTY
    return np.flatnonzero(np.concatenate(([True], sorted_values[1:] != sorted_values[:-1])))


def _expand(starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """``concatenate([arange(s, s + c) for s, c in zip(starts, counts)])``, vectorised."""
    total = int(counts.sum())
    if not total:
        return _EMPTY
    ends = np.cumsum(counts)
    return np.arange(total, dtype=np.int64) + np.repeat(starts - (ends - counts), counts)


class _Corpus:
    """All files' fingerprints as one array of dense hash ids, with the per-file layout."""

    def __init__(self, sequences: list[np.ndarray], ignored: frozenset[int]) -> None:
        self.n_files = len(sequences)
        self.sizes = np.array([len(s) for s in sequences], dtype=np.int64)
        self.offsets = np.concatenate(([0], np.cumsum(self.sizes))).astype(np.int64)
        values = np.concatenate(sequences) if sequences else _EMPTY
        unique, inverse = np.unique(values, return_inverse=True)
        self.hid = inverse.astype(np.int64).reshape(-1)  # dense hash id per occurrence
        self.n_hashes = len(unique)
        self.file_of = np.repeat(np.arange(self.n_files, dtype=np.int64), self.sizes)
        self.ignored_id = np.zeros(self.n_hashes, dtype=bool)
        if ignored and len(unique):
            self.ignored_id = np.isin(unique, np.fromiter(ignored, dtype=np.int64, count=len(ignored)))
        ignored_at = self.ignored_id[self.hid]
        self.ignored_counts = np.bincount(self.file_of[ignored_at], minlength=self.n_files).astype(np.int64)
        self.countable = ~ignored_at
        # inverted index: the occurrences of hash h are by_hash[first[h] : first[h] + count[h]]
        self.by_hash = np.argsort(self.hid, kind="stable")
        self.hash_count = np.bincount(self.hid, minlength=self.n_hashes).astype(np.int64)
        self.hash_count[self.ignored_id] = 0
        self.hash_first = np.searchsorted(self.hid[self.by_hash], np.arange(self.n_hashes))

    def segment(self, file: int) -> slice:
        return slice(int(self.offsets[file]), int(self.offsets[file + 1]))


def _covered(corpus: _Corpus) -> np.ndarray:
    """``covered[x, y]``: occurrences in file ``x`` of hashes that file ``y`` has (ignored
    hashes left out), for every ordered pair; the diagonal is unused."""
    n = corpus.n_files
    covered = np.zeros((n, n), dtype=np.int64)
    positions = np.flatnonzero(corpus.countable)
    if not len(positions):
        return covered
    # blocks: the occurrences of one hash in one file
    keys = corpus.hid[positions] * n + corpus.file_of[positions]
    keys.sort()
    starts = _run_starts(keys)
    block_key = keys[starts]
    block_size = np.diff(np.append(starts, len(keys)))
    block_hash, block_file = block_key // n, block_key % n
    # every two blocks of one hash (files ascending within a hash)
    group_starts = _run_starts(block_hash)
    group_sizes = np.diff(np.append(group_starts, len(block_hash)))
    group_end = np.repeat(group_starts + group_sizes, group_sizes)
    partners = group_end - np.arange(len(block_hash)) - 1
    # A hash found in g files makes g (g - 1) / 2 block pairs (a line every kernel has, in
    # thousands of files: millions); they are listed a slice of blocks at a time.
    flat = np.zeros(n * n, dtype=np.float64)
    bounds = np.searchsorted(np.cumsum(partners), np.arange(1, int(partners.sum()) // _BLOCK_PAIRS + 1) * _BLOCK_PAIRS)
    for low, high in zip([0, *bounds.tolist()], [*bounds.tolist(), len(partners)]):
        blocks = np.arange(low, high, dtype=np.int64)
        first = np.repeat(blocks, partners[low:high])
        second = _expand(blocks + 1, partners[low:high])
        a, b = block_file[first], block_file[second]
        flat += np.bincount(a * n + b, weights=block_size[first], minlength=n * n)
        flat += np.bincount(b * n + a, weights=block_size[second], minlength=n * n)
    return np.rint(flat).astype(np.int64).reshape(n, n)


class _Successors:
    """Per short file: where each bigram of its fingerprints occurs, for fast lookups.

    The file's bigrams are sorted as keys ``head * n_hashes + tail``. For a head hash whose
    bigrams all have one tail (most do, repeated or not), ``after[head]`` is that tail and
    ``first[head]``, ``count[head]`` the range of its keys, so that a bigram is found with two
    array reads; a head followed by several different tails has ``after[head] == -2`` and its
    bigrams are looked up in the sorted keys; ``-1`` marks hashes that head no bigram. The
    arrays are sized by the number of distinct hashes and reset after each file, so that each
    file costs its own size.
    """

    def __init__(self, n_hashes: int) -> None:
        self.n_hashes = n_hashes
        self.after = np.full(n_hashes, -1, dtype=np.int64)
        self.first = np.zeros(n_hashes, dtype=np.int64)
        self.count = np.zeros(n_hashes, dtype=np.int64)

    def match_keys(self, short_hid: np.ndarray, first: np.ndarray, second: np.ndarray, owner: np.ndarray,
                   budget: np.ndarray, base: np.ndarray, step: int) -> tuple[np.ndarray, np.ndarray]:
        """Keys ``base[i] - step * a`` of the bigram matches: every ``i`` and every fingerprint
        index ``a`` of the short file with ``(short_hid[a], short_hid[a + 1]) == (first[i],
        second[i])``, in no particular order; and the *heavy* owners, those (``owner[i]``, a
        file number) whose matches would outnumber ``budget[owner]``: their matches are left
        out (counted, never listed)."""
        n_hashes = self.n_hashes
        keys = short_hid[:-1] * n_hashes + short_hid[1:]
        order = np.argsort(keys)  # equal keys in any order: matches are unordered
        keys = keys[order]
        heads = keys // n_hashes
        starts = _run_starts(heads)
        ends = np.append(starts[1:], len(heads))
        uniform = keys[starts] == keys[ends - 1]
        one_tail = starts[uniform]
        self.after[heads[one_tail]] = keys[one_tail] - heads[one_tail] * n_hashes
        self.first[heads[one_tail]] = one_tail
        self.count[heads[one_tail]] = (ends - starts)[uniform]
        self.after[heads[starts[~uniform]]] = -2
        try:
            follows = self.after[first]
            hit = np.flatnonzero(follows == second)
            low, counts = self.first[first[hit]], self.count[first[hit]]
            mixed = np.flatnonzero(follows == -2)
        finally:
            self.after[heads[starts]] = -1
        if len(mixed):
            query = first[mixed] * n_hashes + second[mixed]
            by_query = np.argsort(query)  # searchsorted is several times faster on ascending queries
            mixed, query = mixed[by_query], query[by_query]
            mixed_low = np.searchsorted(keys, query)
            mixed_counts = np.searchsorted(keys, query, side="right") - mixed_low
            found = mixed_counts > 0
            hit = np.concatenate((hit, mixed[found]))
            low = np.concatenate((low, mixed_low[found]))
            counts = np.concatenate((counts, mixed_counts[found]))
        per_owner = np.bincount(owner[hit], weights=counts, minlength=len(budget))
        heavy = np.flatnonzero(per_owner > budget)
        if len(heavy):
            light = np.ones(len(budget), dtype=bool)
            light[heavy] = False
            keep = light[owner[hit]]
            hit, low, counts = hit[keep], low[keep], counts[keep]
        if len(counts) and counts.max() == 1:
            return base[hit] - step * order[low], heavy
        return np.repeat(base[hit], counts) - step * order[_expand(low, counts)], heavy


def _longest_with_short(corpus: _Corpus, successors: _Successors, short: int, partners: np.ndarray) -> np.ndarray:
    """Dolos's longest fragment of every pair of file ``short`` (the short side) with the files
    ``partners`` (the long sides, each sharing a hash with it), in the order of ``partners``.
    """
    longest = np.zeros(corpus.n_files, dtype=np.int64)
    _longest_into(corpus, successors, short, partners, longest)
    return longest[partners]


def _longest_into(corpus: _Corpus, successors: _Successors, short: int, partners: np.ndarray,
                  longest: np.ndarray) -> None:
    """:func:`_longest_with_short`, written to ``longest[partner]``."""
    hid = corpus.hid
    short_hid = hid[corpus.segment(short)]
    is_partner = np.zeros(corpus.n_files, dtype=bool)
    is_partner[partners] = True
    # The long sides' shared fingerprints, in order (file by file, by position): the
    # occurrences of the short file's hashes, from the inverted index.
    distinct = np.unique(short_hid)
    shared = corpus.by_hash[_expand(corpus.hash_first[distinct], corpus.hash_count[distinct])]
    shared = shared[is_partner[corpus.file_of[shared]]]
    shared.sort()
    file_of = corpus.file_of[shared]
    starts = _run_starts(file_of)
    longest[file_of[starts]] = 1  # every partner shares at least one fingerprint
    has_next = np.flatnonzero(file_of[1:] == file_of[:-1])  # index i: shared[i] and shared[i + 1]
    if len(short_hid) < 2 or not len(has_next):
        return
    # Bigram matches: two consecutive shared fingerprints of a long side equal to two
    # consecutive fingerprints of the short file.
    shared_hid = hid[shared]
    # Pairs with too many bigram matches (long runs of one repeated statement) are left to the
    # exact fallback before the matches are listed.
    budget = MAX_BIGRAM_MATCHES_PER_OCCURRENCE * (corpus.sizes + len(short_hid))
    owner = file_of[has_next]
    counts = np.diff(np.append(starts, len(shared)))
    j = has_next - np.repeat(starts, counts)[has_next]  # Dolos's list position on the long side
    # A bigram match (j, a) of file f gets the key (f, j - a + span, j) in mixed radix: sorted,
    # consecutive j on one diagonal of one pair differ by exactly 1.
    span = int(max(corpus.sizes.max(), 1))
    width, height = span + 1, 2 * span + 1
    first, second = shared_hid[has_next], shared_hid[has_next + 1]
    if corpus.n_files * height * width < 1 << _KEY_BITS:
        parts = [(np.arange(len(has_next)), True)]
    else:  # too wide to pack the file number too: one long side at a time
        parts = [(np.flatnonzero(owner == f), False) for f in np.unique(owner).tolist()]
    for rows, with_file in parts:
        base = ((owner[rows] if with_file else 0) * height + j[rows] + span) * width + j[rows]
        keys, heavy = successors.match_keys(short_hid, first[rows], second[rows], owner[rows], budget, base, width)
        for other in heavy.tolist():
            longest[other] = longest_common_substring(shared_hid[file_of == other], short_hid)
        if not len(keys):
            continue
        keys.sort()
        run_starts = np.concatenate(([0], np.flatnonzero(np.diff(keys) != 1) + 1))
        run_lengths = np.diff(np.append(run_starts, len(keys)))
        run_file = keys[run_starts] // (height * width) if with_file else np.repeat(owner[rows[0]], len(run_starts))
        # a chain of c bigram matches is a run of c + 1 matching fingerprints
        np.maximum.at(longest, run_file, run_lengths + 1)


#: The corpus and groups that forked workers read (set only while a pool runs).
_shared_work: tuple[_Corpus, list[tuple[int, np.ndarray]]] | None = None
#: Parallel pair computation only pays off from about this many fingerprint occurrences.
_MIN_PARALLEL_OCCURRENCES = 20_000


def _longest_of_chunk(chunk: list[int]) -> list[np.ndarray]:
    assert _shared_work is not None  # set by _longest_of_groups before forking
    corpus, groups = _shared_work
    successors = _Successors(corpus.n_hashes)
    return [_longest_with_short(corpus, successors, *groups[g]) for g in chunk]


def _longest_of_groups(corpus: _Corpus, groups: list[tuple[int, np.ndarray]], jobs: int) -> list[np.ndarray]:
    """:func:`_longest_with_short` of every ``(short, partners)`` group, in ``jobs`` processes."""
    global _shared_work
    jobs = min(jobs, len(groups))
    if jobs <= 1 or len(corpus.hid) < _MIN_PARALLEL_OCCURRENCES or "fork" not in _start_methods():
        successors = _Successors(corpus.n_hashes)
        return [_longest_with_short(corpus, successors, one, partners) for one, partners in groups]
    import multiprocessing

    # Work per group grows with the long sides' sizes: deal the groups out, largest first, to
    # 4 chunks per process so that no process waits long for the last one.
    cost = np.array([int(corpus.sizes[partners].sum()) + len(partners) for _, partners in groups])
    n_chunks = 4 * jobs
    chunks: list[list[int]] = [[] for _ in range(n_chunks)]
    for rank, g in enumerate(np.argsort(-cost, kind="stable").tolist()):
        turn, step = divmod(rank, n_chunks)
        chunks[step if turn % 2 == 0 else n_chunks - 1 - step].append(g)
    chunks = [c for c in chunks if c]
    # fork: the workers read the corpus from this process's memory instead of a pickled copy
    _shared_work = (corpus, groups)
    try:
        with multiprocessing.get_context("fork").Pool(jobs) as pool:
            results = pool.map(_longest_of_chunk, chunks, chunksize=1)
    finally:
        _shared_work = None
    out: list[np.ndarray] = [_EMPTY] * len(groups)
    for chunk, values in zip(chunks, results):
        for g, value in zip(chunk, values):
            out[g] = value
    return out


def _start_methods() -> list[str]:
    import multiprocessing

    return multiprocessing.get_all_start_methods()


def all_pair_metrics(
    files: Sequence["IndexedFile"] | Sequence[Sequence[int]] | Sequence[np.ndarray],
    ignored: frozenset[int] = frozenset(),
    *,
    jobs: int = 1,
) -> PairTable:
    """Dolos's figures for every pair of ``files``, as :func:`dolos_metrics` computes them one by one.

    Parameters
    ----------
    files : sequence of IndexedFile, or of fingerprint hash sequences
        Each file's fingerprints in document order: an
        :class:`~audit.similarity.index.IndexedFile`, or its hashes (a 1-D int sequence, as
        :func:`fingerprint_hashes` returns them). The left file of a pair is the earlier one.
    ignored : frozenset of int
        Hashes that never count as shared (``FingerprintIndex.ignored_hashes``).
    jobs : int, default 1
        Processes for the longest fragments (forked, so only where the platform forks; small
        inputs stay in this process).

    Returns
    -------
    PairTable
        ``F * (F - 1) / 2`` rows for ``F`` files; row ``r`` equals
        ``dolos_metrics(files[table.left[r]], files[table.right[r]], ignored)`` field by field
        (``similarity`` as the same double).

    Raises
    ------
    ValueError
        If a hash sequence is not one-dimensional or holds values outside int64, or if
        ``jobs < 1``.

    Notes
    -----
    Memory: a few arrays of one entry per fingerprint, ``F x F`` int64 counts, and the bigram
    matches of one short file at a time. Time: about linear in the covered fingerprints of all
    pairs (see the module docstring).

    Examples
    --------
    >>> table = all_pair_metrics([[1, 2, 3, 4, 2], [2, 3, 9], [5]])
    >>> table.left.tolist(), table.right.tolist()
    ([0, 0, 1], [1, 2, 2])
    >>> table.total_overlap.tolist(), table.longest_fragment.tolist()
    ([5, 0, 0], [2, 0, 0])
    """
    if jobs < 1:
        raise ValueError(f"jobs must be >= 1, got {jobs}")
    sequences = [_hash_array(f) for f in files]
    corpus = _Corpus(sequences, ignored)
    n = corpus.n_files
    covered = _covered(corpus)
    left, right = _pair_rows(n)
    left_covered, right_covered = covered[left, right], covered[right, left]
    # Dolos's short side: the left file when it has strictly fewer shared occurrences.
    longest = np.zeros((n, n), dtype=np.int64)  # [short, long]
    short_is_left = left_covered < right_covered
    short = np.where(short_is_left, left, right)
    long = np.where(short_is_left, right, left)
    sharing = left_covered > 0
    short, long = short[sharing], long[sharing]
    if len(short):
        order = np.argsort(short, kind="stable")
        short, long = short[order], long[order]
        starts = _run_starts(short)
        groups = [(int(short[b]), long[b:e]) for b, e in zip(starts.tolist(), np.append(starts[1:], len(short)).tolist())]
        for (one, partners), values in zip(groups, _longest_of_groups(corpus, groups, jobs)):
            longest[one, partners] = values
    left_total, right_total = corpus.sizes[left], corpus.sizes[right]
    left_ignored, right_ignored = corpus.ignored_counts[left], corpus.ignored_counts[right]
    overlap = left_covered + right_covered
    denominator = left_total + right_total - left_ignored - right_ignored
    with np.errstate(divide="ignore", invalid="ignore"):
        similarity = np.where(denominator > 0, overlap / np.maximum(denominator, 1), 0.0)
    return PairTable(
        left=left,
        right=right,
        similarity=similarity.astype(np.float64),
        total_overlap=overlap,
        longest_fragment=np.where(short_is_left, longest[left, right], longest[right, left]),
        left_covered=left_covered,
        right_covered=right_covered,
        left_total=left_total,
        right_total=right_total,
        left_ignored=left_ignored,
        right_ignored=right_ignored,
    )


def default_jobs() -> int:
    """The number of CPUs this process may run on (``-j 0`` of ``mleaudit similarity pairs``).

    Returns
    -------
    int
        At least 1.
    """
    return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1))
