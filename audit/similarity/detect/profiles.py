"""Profiles: what the detector keeps of one file (token ids, offsets, priors, literals, prose
positions), and the 64-bit keys of its token n-grams."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

import numpy as np

from mleaudit.audit.similarity.detect.constants import (
    EMPTY_CONTEXT,
    MODEL_ORDER,
    _NEAR_DUP_N,
    _SAMPLE_BITS,
    _SAMPLE_MODULUS,
    _SEED,
)
from mleaudit.audit.similarity.detect.lexing import (
    LexedCode,
    _CLOSED_BITS,
    _NAME_LITERAL,
    _prior_bits,
    _token_id,
    lex_code,
)


# -- n-gram keys -----------------------------------------------------------------------------------

_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


def _mix(x: np.ndarray) -> np.ndarray:
    """SplitMix64's finaliser on a uint64 array (wrapping arithmetic)."""
    x = x ^ (x >> np.uint64(30))  # a new array: the caller's is left as it is
    x *= _M1
    x ^= x >> np.uint64(27)
    x *= _M2
    x ^= x >> np.uint64(31)
    return x


def gram_keys(ids: np.ndarray, order: int) -> list[np.ndarray]:
    """Keys of the token n-grams ending at each position, for n = 1 .. ``order``.

    Parameters
    ----------
    ids : ndarray of uint64
        Token ids of a file (see :func:`profile_code`).
    order : int

    Returns
    -------
    list of ndarray of int64
        ``keys[n - 1][i]`` is the key of ``ids[i - n + 1 : i + 1]``; positions ``i < n - 1``
        hold no n-gram (their values are meaningless). The context of that n-gram is
        ``keys[n - 2][i - 1]`` (:data:`EMPTY_CONTEXT` for a unigram). Keys are 64-bit hashes
        (SplitMix64 over the previous order's key and the token id), the same in every process.
    """
    out: list[np.ndarray] = []
    with np.errstate(over="ignore"):
        current = _mix(ids ^ _GOLDEN)
        out.append(current.view(np.int64))
        for n in range(2, order + 1):
            # (previous key) * golden + id + n, the previous key of the first token 0
            shifted = np.empty_like(current)
            shifted[0] = 0
            np.multiply(current[:-1], _GOLDEN, out=shifted[1:])
            shifted += ids
            shifted += np.uint64(n)
            current = _mix(shifted)
            out.append(current.view(np.int64))
    return out


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class Profile:
    """What the detector keeps of one file: its token ids and where each token is.

    Attributes
    ----------
    path : str
    ids : tuple of int
        Stable ids of the lexical tokens (see :func:`lex_code`), 63-bit.
    starts, ends : tuple of int
        Character offsets of each token in the file's text.
    priors : Mapping[int, float]
        Prior bits of each distinct token id (literals by length).
    literals : frozenset of int
        Ids of the string-literal tokens (empty for a profile read back from a corpus index,
        where only the agent side needs them).
    names : frozenset of int
        Ids of the string literals that read as a name (:data:`_NAME_LITERAL`: a column or key
        such as ``'GarageArea'`` or ``"pickup_latitude"``), a subset of ``literals``.
    prose : frozenset of int
        Positions of the tokens on prose lines (a docstring's text, lexed as words): they carry
        no evidence.
    """

    path: str
    ids: tuple[int, ...]
    starts: tuple[int, ...]
    ends: tuple[int, ...]
    priors: Mapping[int, float]
    literals: frozenset = frozenset()
    names: frozenset = frozenset()
    prose: frozenset = frozenset()
    _cache: dict = field(default_factory=dict, repr=False)

    def __len__(self) -> int:
        return len(self.ids)

    def content_key(self) -> tuple:
        """What the detector's evidence against a reference depends on: the tokens and what is
        known of them, not the path nor where each token lies in the text (two files that differ
        only in comments, blank lines or spacing have one key)."""
        key = self._cache.get("content_key")
        if key is None:
            key = (self.ids, frozenset(self.priors.items()), self.literals, self.names, self.prose)
            self._cache["content_key"] = key
        return key

    def id_array(self) -> np.ndarray:
        """The token ids as a uint64 array (built once)."""
        array = self._cache.get("ids")
        if array is None:
            array = np.array(self.ids, dtype=np.uint64)
            self._cache["ids"] = array
        return array

    def prior_array(self) -> np.ndarray:
        """Prior bits of each token, aligned with ``ids`` (built once)."""
        array = self._cache.get("priors")
        if array is None:
            array = np.array([self.priors.get(i, _CLOSED_BITS) for i in self.ids], dtype=np.float64)
            self._cache["priors"] = array
        return array

    def literal_array(self) -> np.ndarray:
        """Whether each token is a string literal, aligned with ``ids`` (built once)."""
        array = self._cache.get("literals")
        if array is None:
            array = np.array([i in self.literals for i in self.ids], dtype=bool)
            self._cache["literals"] = array
        return array

    def name_array(self) -> np.ndarray:
        """Whether each token is a name-like string literal, aligned with ``ids`` (built once)."""
        array = self._cache.get("names")
        if array is None:
            array = np.array([i in self.names for i in self.ids], dtype=bool)
            self._cache["names"] = array
        return array

    def keys(self) -> list[np.ndarray]:
        """:func:`gram_keys` of the file up to :data:`MODEL_ORDER` (built once)."""
        keys = self._cache.get("keys")
        if keys is None:
            keys = gram_keys(self.id_array(), MODEL_ORDER) if self.ids else [np.zeros(0, np.int64)] * MODEL_ORDER
            self._cache["keys"] = keys
        return keys

    def grams(self) -> tuple[np.ndarray, np.ndarray]:
        """The file's distinct n-grams of orders 1 to :data:`MODEL_ORDER`: sorted keys and their
        context keys (what the file adds to an :class:`NgramTable`)."""
        grams = self._cache.get("grams")
        if grams is None:
            keys = self.keys()
            parts, contexts = [], []
            for n in range(1, MODEL_ORDER + 1):
                if len(self.ids) < n:
                    continue
                parts.append(keys[n - 1][n - 1 :])
                if n == 1:
                    contexts.append(np.full(len(self.ids), EMPTY_CONTEXT, dtype=np.int64))
                else:
                    contexts.append(keys[n - 2][n - 2 : -1])
            if parts:
                all_keys = np.concatenate(parts)
                all_contexts = np.concatenate(contexts)
                unique, first = np.unique(all_keys, return_index=True)
                grams = (unique, all_contexts[first])
            else:
                grams = (np.zeros(0, np.int64), np.zeros(0, np.int64))
            self._cache["grams"] = grams
        return grams

    def context_counts(self) -> tuple[np.ndarray, np.ndarray]:
        """Sorted context keys of the file's distinct n-grams and how many n-grams each has."""
        counts = self._cache.get("contexts")
        if counts is None:
            counts = np.unique(self.grams()[1], return_counts=True)
            self._cache["contexts"] = counts
        return counts

    def sample(self) -> np.ndarray:
        """A fixed sample of the file's token 8-grams, as sorted distinct 25-bit values, for
        near-duplicate detection (the same for a file in every process and corpus)."""
        sample = self._cache.get("sample")
        if sample is None:
            if len(self.ids) < _NEAR_DUP_N:
                sample = np.zeros(0, np.int64)
            else:
                keys = gram_keys(self.id_array(), _NEAR_DUP_N)[-1][_NEAR_DUP_N - 1 :].view(np.uint64)
                kept = keys[keys % np.uint64(_SAMPLE_MODULUS) == 0] >> np.uint64(64 - _SAMPLE_BITS)
                sample = np.unique(kept.astype(np.int64))
            self._cache["sample"] = sample
        return sample

    def seed_keys(self) -> np.ndarray:
        """Keys of the token :data:`MIN_TILE_TOKENS`-grams, by start position (built once)."""
        keys = self._cache.get("seeds")
        if keys is None:
            if len(self.ids) < _SEED:
                keys = np.zeros(0, np.int64)
            else:
                keys = gram_keys(self.id_array(), _SEED)[-1][_SEED - 1 :]
            self._cache["seeds"] = keys
        return keys


def profile_code(text: str, path: str = "") -> Profile:
    """The detector's :class:`Profile` of a code text.

    Parameters
    ----------
    text : str
        Python code (a file, or a notebook's joined code cells).
    path : str
        Recorded on the profile.

    Returns
    -------
    Profile
    """
    lexed = lex_code(text)
    ids = tuple(_token_id(t) for t in lexed.tokens)
    priors = {i: _prior_bits(t) for i, t in zip(ids, lexed.tokens)}
    prose = frozenset(_prose_positions(lexed, text))
    literals = frozenset(i for i, t in zip(ids, lexed.tokens) if t.startswith("S"))
    names = frozenset(i for i, t in zip(ids, lexed.tokens) if t.startswith("S") and _NAME_LITERAL.fullmatch(t, 1))
    return Profile(path=path, ids=ids, starts=lexed.starts, ends=lexed.ends, priors=priors, literals=literals,
                   names=names, prose=prose)


#: A line with at least this many pairs of adjacent identifiers is prose, not code.
PROSE_PAIRS = 2


def _prose_positions(lexed: LexedCode, text: str) -> list[int]:
    """Positions of the tokens on prose lines: lines of a docstring or multi-line string that the
    line-by-line lexer reads as words. Two identifiers in a row are not Python (soft keywords
    such as ``match x:`` make one such pair), so a line with :data:`PROSE_PAIRS` of them is text."""
    if not lexed.tokens:
        return []
    newlines = np.flatnonzero(np.frombuffer(text.encode("utf-32-le", errors="surrogatepass"), dtype=np.uint32) == 10)
    lines = np.searchsorted(newlines, np.asarray(lexed.starts), side="right")
    word = np.array([t == "ID" for t in lexed.tokens], dtype=bool)
    pairs = word[:-1] & word[1:] & (lines[:-1] == lines[1:])
    per_line = np.bincount(lines[:-1][pairs], minlength=int(lines[-1]) + 1) if pairs.any() else None
    if per_line is None:
        return []
    prose_lines = per_line >= PROSE_PAIRS
    return np.flatnonzero(prose_lines[lines]).tolist()
