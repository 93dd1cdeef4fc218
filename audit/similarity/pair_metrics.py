"""Dolos's pair figures for two files, one pair at a time.

Dolos's figures (``core/src/algorithm/pair.ts``, Dolos 3.5.1), for files L and R with fingerprint
sequences (their "kgrams") and the set S of hashes found in both and not ignored:

- ``left_total`` / ``right_total``: length of each fingerprint sequence (every occurrence counts);
- ``left_covered`` / ``right_covered``: occurrences in L (in R) whose hash is in S;
- ``total_overlap`` = ``left_covered + right_covered``;
- ``similarity`` = ``total_overlap / (left_total + right_total)`` (ignored occurrences are taken
  out of the denominator, see :func:`dolos_metrics`);
- ``longest_fragment``: Dolos's longest common run of shared fingerprints (see
  :func:`longest_common_run`; computed exactly as Dolos does, quirks included). Dolos's loop
  takes one step per pair of occurrences of a shared hash, which is quadratic in how often a
  hash repeats (5,000 nested parentheses: 10**8 steps); past :data:`MAX_RUN_VISITS` steps the
  same number comes from a longest common substring in ``O(n log^2 n)``.

For every pair of many files at once, :func:`mleaudit.audit.similarity.allpairs.all_pair_metrics`
computes the same figures with numpy.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from mleaudit.audit.similarity.substring import longest_common_substring

if TYPE_CHECKING:  # annotations only: the all-pairs path imports this module without the index
    from mleaudit.audit.similarity.fingerprint_index import IndexedFile

__all__ = [
    "MAX_RUN_VISITS",
    "DolosMetrics",
    "dolos_metrics",
    "longest_common_run",
]


#: :func:`longest_common_run` follows Dolos's loop (one step per pair of occurrences of a shared
#: hash) up to this many steps, then computes the same number as a longest common substring.
MAX_RUN_VISITS = 20_000


@dataclass(frozen=True, slots=True, kw_only=True)
class DolosMetrics:
    """Dolos's pair figures for files ``left`` and ``right`` (see the module docstring).

    ``left_ignored`` / ``right_ignored`` count fingerprint occurrences whose hash is ignored.
    """

    similarity: float
    total_overlap: int
    longest_fragment: int
    left_covered: int
    right_covered: int
    left_total: int
    right_total: int
    left_ignored: int = 0
    right_ignored: int = 0


def longest_common_run(left: list[tuple[int, int]], right: list[tuple[int, int]]) -> int:
    """Dolos's ``longestCommonSubstring`` over the shared occurrences of two files.

    Parameters
    ----------
    left, right : list of (index, hash)
        Each file's occurrences of shared hashes, sorted by fingerprint index.

    Returns
    -------
    int
        The length of the longest run, counted the way Dolos counts it: the shorter list (``left``
        when strictly shorter, else ``right``) must have consecutive fingerprint *indices*, the
        longer list consecutive *list positions* (its non-shared fingerprints are skipped). This
        asymmetry is Dolos's, kept so that ``longest_fragment`` equals Dolos's number.

    Examples
    --------
    The lists are equally long, so ``right`` is the short side and needs consecutive indices:

    >>> longest_common_run([(0, 7), (1, 8), (2, 9)], [(4, 7), (5, 8), (9, 9)])
    2

    ``left`` is shorter: its indices are consecutive, the gap between 3 and 8 on the right is
    not seen:

    >>> longest_common_run([(0, 7), (1, 8)], [(3, 7), (8, 8), (9, 5)])
    2
    """
    if len(left) < len(right):
        short, long = left, right
    else:
        short, long = right, left
    by_hash: dict[int, list[int]] = defaultdict(list)
    for index, value in short:
        by_hash[value].append(index)
    longest = 0
    visits = 0
    previous: dict[int, int] = {}
    for _, value in long:
        current: dict[int, int] = {}
        indices = by_hash.get(value, ())
        # Dolos's loop visits every (long occurrence, short occurrence) of one hash: quadratic
        # in a hash's repetitions. Past a bound, the same number comes from a longest common
        # substring.
        visits += len(indices)
        if visits > MAX_RUN_VISITS:
            return _longest_run_by_substring(short, long)
        for index in indices:
            run = previous.get(index - 1, 0) + 1
            current[index] = run
            if run > longest:
                longest = run
        previous = current
    return longest


def _longest_run_by_substring(short: list[tuple[int, int]], long: list[tuple[int, int]]) -> int:
    """:func:`longest_common_run` as a longest common substring (exact, ``O(n log^2 n)``).

    A run pairs consecutive list positions of ``long`` with consecutive fingerprint indices of
    ``short``, so it is a common substring of ``long``'s hashes and ``short``'s fingerprint
    sequence, in which the indices missing from ``short`` (fingerprints that are not shared)
    hold values that match nothing.
    """
    size = short[-1][0] + 1 if short else 0
    sequence = -1 - np.arange(size, dtype=np.int64)  # distinct negative values: never equal to a hash
    sequence[[index for index, _ in short]] = [value for _, value in short]
    return longest_common_substring(np.array([value for _, value in long], dtype=np.int64), sequence)


def _shared_occurrences(side: IndexedFile, shared: set[int]) -> list[tuple[int, int]]:
    return [(f.index, f.hash) for f in side.fingerprints if f.hash in shared]


def _ignored_count(side: IndexedFile, ignored: frozenset[int]) -> int:
    if not ignored:
        return 0
    return sum(len(positions) for value, positions in side.occurrences.items() if value in ignored)


def dolos_metrics(left: IndexedFile, right: IndexedFile, ignored: frozenset[int] = frozenset()) -> DolosMetrics:
    """Dolos's pair figures for two indexed files.

    Parameters
    ----------
    left, right : IndexedFile
        The two files; ``longest_fragment`` depends on which is left (Dolos's asymmetry).
    ignored : frozenset of int
        Hashes that never count as shared (boilerplate, too common).

    Returns
    -------
    DolosMetrics
        With no ignored hashes every figure equals Dolos 3.5.1's. With ignored hashes the
        similarity's denominator drops each side's ignored *occurrences*; Dolos 3.5.1 drops the
        number of distinct ignored hashes of the left file twice (``leftIgnored`` is used for
        both sides in ``pair.ts``), which can push its similarity above 1.
    """
    shared = (left.occurrences.keys() & right.occurrences.keys()) - ignored
    left_occ = _shared_occurrences(left, shared) if shared else []
    right_occ = _shared_occurrences(right, shared) if shared else []
    left_ignored = _ignored_count(left, ignored)
    right_ignored = _ignored_count(right, ignored)
    left_total = len(left.fingerprints)
    right_total = len(right.fingerprints)
    denominator = left_total + right_total - left_ignored - right_ignored
    overlap = len(left_occ) + len(right_occ)
    return DolosMetrics(
        similarity=overlap / denominator if denominator > 0 else 0.0,
        total_overlap=overlap,
        longest_fragment=longest_common_run(left_occ, right_occ) if shared else 0,
        left_covered=len(left_occ),
        right_covered=len(right_occ),
        left_total=left_total,
        right_total=right_total,
        left_ignored=left_ignored,
        right_ignored=right_ignored,
    )
