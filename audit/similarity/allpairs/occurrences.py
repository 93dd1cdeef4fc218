"""All files' fingerprint occurrences as numpy arrays, the input of the all-pairs figures.

:class:`_Corpus` numbers the distinct hashes densely, lays the files out one after the other and
keeps an inverted index (the occurrences of each hash); the helpers find runs in sorted arrays
and expand ranges without a Python loop.
"""

from __future__ import annotations

import numpy as np

_EMPTY = np.zeros(0, dtype=np.int64)


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
