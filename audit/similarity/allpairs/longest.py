"""Dolos's longest fragment of every pair that shares a hash, from bigram matches.

Dolos's ``longestCommonSubstring`` (see
:func:`mleaudit.audit.similarity.pair_metrics.longest_common_run`) is the length of the longest
common substring of two sequences: the *long* side's shared fingerprints, in order with the others
left out, and the *short* side's whole fingerprint sequence (its unshared fingerprints never
match, so they only break runs). A run of ``r`` matches holds ``r - 1`` *bigram matches*: two
consecutive shared fingerprints of the long side equal to two consecutive fingerprints of the
short side. So per short file, the long sides' bigrams are looked up among the short file's
bigrams (:class:`_Successors`); the bigram matches are sorted by (pair, diagonal, position) and
the longest chain of consecutive ones, plus one, is the longest fragment (one when the files
share a hash but no bigram). A pair whose bigram matches exceed
:data:`MAX_BIGRAM_MATCHES_PER_OCCURRENCE` per fingerprint gets its longest fragment from
:func:`~mleaudit.audit.similarity.substring.longest_common_substring` instead.
"""

from __future__ import annotations

import numpy as np

from mleaudit.audit.similarity.allpairs.occurrences import _Corpus, _expand, _run_starts
from mleaudit.audit.similarity.substring import longest_common_substring

__all__ = ["MAX_BIGRAM_MATCHES_PER_OCCURRENCE"]

#: Above this many bigram matches per fingerprint of a pair (both files' fingerprints counted),
#: the pair's longest fragment comes from :func:`longest_common_substring` instead of the
#: bigram matches. Both give the same number; this only bounds the work on repetitive code.
MAX_BIGRAM_MATCHES_PER_OCCURRENCE = 16
#: Bigram matches are sorted as keys packing (file, diagonal, position) into this many bits of an
#: int64; wider inputs are sorted one long side at a time.
_KEY_BITS = 62


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
