"""The corpus's n-gram table: document frequencies of token n-grams with per-context sums, the
background model's counts."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from mleaudit.audit.similarity.detect.profiles import Profile


class NgramTable:
    """Document frequencies of token n-grams over a corpus, with per-context sums.

    For each n-gram key: how many files contain it (its document frequency, so one notebook that
    repeats a block does not make it common). For each context key (an n-gram one token
    shorter, or :data:`EMPTY_CONTEXT`): the sum of the document frequencies of its continuations
    (``total``) and how many distinct continuations it has (``kinds``). All three are sums over
    files, which is what lets a corpus index keep them up to date and subtract any file.

    Parameters
    ----------
    keys, counts : ndarray of int64
        n-gram keys (sorted, distinct) and their document frequencies.
    context_keys, totals, kinds : ndarray of int64
        Context keys (sorted, distinct) and their sums.

    Notes
    -----
    A table may hold only the rows a query needs (the corpus index fetches those of one agent
    file): lookups of absent keys answer 0, which is right when every key the query asks for was
    fetched.
    """

    __slots__ = ("keys", "counts", "context_keys", "totals", "kinds")

    def __init__(self, keys: np.ndarray, counts: np.ndarray, context_keys: np.ndarray, totals: np.ndarray,
                 kinds: np.ndarray) -> None:
        self.keys = np.asarray(keys, dtype=np.int64)
        self.counts = np.asarray(counts, dtype=np.int64)
        self.context_keys = np.asarray(context_keys, dtype=np.int64)
        self.totals = np.asarray(totals, dtype=np.int64)
        self.kinds = np.asarray(kinds, dtype=np.int64)

    @classmethod
    def from_profiles(cls, profiles: Sequence[Profile]) -> "NgramTable":
        """The table of a corpus given as profiles."""
        return cls.from_grams([p.grams() for p in profiles])

    @classmethod
    def from_grams(cls, grams: Sequence[tuple[np.ndarray, np.ndarray]]) -> "NgramTable":
        """The table of a corpus given as each document's distinct n-gram keys and their context
        keys (:meth:`Profile.grams`, or :func:`idiom_grams`)."""
        grams = list(grams)
        if not grams or not sum(len(k) for k, _ in grams):
            empty = np.zeros(0, np.int64)
            return cls(empty, empty, empty, empty, empty)
        keys = np.concatenate([k for k, _ in grams])
        contexts = np.concatenate([c for _, c in grams])
        unique, first, counts = np.unique(keys, return_index=True, return_counts=True)
        context_of = contexts[first]
        context_keys, inverse = np.unique(context_of, return_inverse=True)
        totals = np.bincount(inverse, weights=counts, minlength=context_keys.size).astype(np.int64)
        kinds = np.bincount(inverse, minlength=context_keys.size).astype(np.int64)
        return cls(unique, counts.astype(np.int64), context_keys, totals, kinds)

    @staticmethod
    def _lookup(keys: np.ndarray, table_keys: np.ndarray, *values: np.ndarray) -> list[np.ndarray]:
        if not table_keys.size:
            return [np.zeros(len(keys), np.int64) for _ in values]
        at = np.searchsorted(table_keys, keys)
        at[at >= table_keys.size] = 0
        found = table_keys[at] == keys
        return [np.where(found, v[at], 0) for v in values]

    def count(self, keys: np.ndarray) -> np.ndarray:
        """Document frequency of each n-gram key (0 when absent)."""
        return self._lookup(keys, self.keys, self.counts)[0]

    def context(self, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(totals, kinds)`` of each context key (0 when absent)."""
        totals, kinds = self._lookup(keys, self.context_keys, self.totals, self.kinds)
        return totals, kinds
