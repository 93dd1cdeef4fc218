"""The longest common substring of two integer sequences, exact whatever the repetitions.

Dolos's longest fragment is a longest common run of shared fingerprints; its own loop is
quadratic in how often a hash repeats. :func:`longest_common_substring` gives the same length
in ``O(n log^2 n)``, and is the exact fallback of both the one-pair figures
(:func:`mleaudit.audit.similarity.pair_metrics.longest_common_run`) and the all-pairs ones
(:mod:`mleaudit.audit.similarity.allpairs`) on repetitive code.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

__all__ = ["longest_common_substring"]


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
