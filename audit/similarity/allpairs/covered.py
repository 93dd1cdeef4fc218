"""Covered counts of every ordered pair of files (Dolos's ``leftCovered`` / ``rightCovered``).

Occurrences are grouped by (hash, file) into *blocks*; every two blocks of one hash in two files
add their sizes to the two files' covered counts. Work: one sort of all fingerprints, plus one
step per (pair, shared distinct hash).
"""

from __future__ import annotations

import numpy as np

from mleaudit.audit.similarity.allpairs.occurrences import _Corpus, _expand, _run_starts

#: Block pairs listed at a time while counting covered fingerprints (bounds the memory).
_BLOCK_PAIRS = 1 << 22


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
