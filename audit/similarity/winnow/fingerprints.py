"""Fingerprints: the selected k-gram hashes of a token stream, with their token positions.

:func:`winnow` selects them from k-gram hashes, :func:`fingerprint_tokens` from tokens (hash,
roll, winnow); the private ``_kgram_*`` functions start from token hashes, as the tokenizers
record them, for the fingerprint indexes and the all-pairs figures.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from itertools import repeat
from typing import Sequence

import numpy as np

from mleaudit.audit.similarity.winnow.hashing import _rolling_array, hash_token
from mleaudit.audit.similarity.winnow.int_pool import _int_objects
from mleaudit.audit.similarity.winnow.selection import _winnow_positions, _winnow_reference, _winnow_selected

__all__ = ["Fingerprint", "fingerprint_tokens", "winnow"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Fingerprint:
    """A selected k-gram hash.

    Attributes
    ----------
    hash : int
        The k-gram's rolling hash, in ``[0, HASH_MOD)``.
    start, stop : int
        Token indices of the k-gram's first and last token (inclusive); ``start`` is also the
        k-gram's index among all k-grams of the document.
    index : int
        Position of this fingerprint in the document's fingerprint sequence (0, 1, 2, ...).
        Dolos calls this sequence the file's "kgrams": pair totals count it and fragments are
        runs of consecutive ``index`` values.
    """

    hash: int
    start: int
    stop: int
    index: int


_new = object.__new__
#: The slot descriptors' setters, in the order of _make_fingerprints's columns.
_SETTERS = tuple(getattr(Fingerprint, name).__set__ for name in ("hash", "start", "stop", "index"))


def _make_fingerprints(hashes: list[int], starts: list[int], stops: list[int], indices: list[int]) -> list[Fingerprint]:
    """``[Fingerprint(hash=h, start=s, stop=t, index=i) ...]``, built field by field.

    The generated ``__init__`` of a frozen dataclass sets each field through
    ``object.__setattr__``; for the 10**5 fingerprints of a corpus that is a large share of
    the run time. Setting the slots column by column through their descriptors gives equal
    objects (same fields, equality, hash and repr) several times faster.
    """
    made = list(map(_new, repeat(Fingerprint, len(hashes))))
    for setter, column in zip(_SETTERS, (hashes, starts, stops, indices)):
        deque(map(setter, made, column), maxlen=0)
    return made


def _selection(kgram_hashes: np.ndarray | Sequence[int], window: int) -> tuple[list[int], list[int]]:
    """Selected positions and their hashes, through the fast walk whenever values fit int64."""
    try:
        values = np.asarray(kgram_hashes, dtype=np.int64).reshape(-1)
    except (OverflowError, TypeError, ValueError):
        values = None
    if values is None:
        hashes = list(kgram_hashes)
        positions = _winnow_reference(hashes, window)
        return positions, [hashes[p] for p in positions]
    positions = _winnow_positions(values, window)
    return positions, (values[positions].tolist() if positions else [])


def winnow(kgram_hashes: Sequence[int], window: int, k: int) -> list[Fingerprint]:
    """Select fingerprints from k-gram hashes by robust winnowing (Dolos ``WinnowFilter``).

    Parameters
    ----------
    kgram_hashes : sequence of int
        Output of :func:`rolling_hashes` (item ``i`` is the k-gram starting at token ``i``).
    window : int
        Number of consecutive k-grams per window (Dolos ``kgramsInWindow``, >= 1).
    k : int
        The k-gram length, used to fill in :attr:`Fingerprint.stop`.

    Returns
    -------
    list of Fingerprint
        In document order. A position is selected when it becomes the minimum of a window;
        documents with fewer k-grams than ``window`` still yield fingerprints.

    Raises
    ------
    ValueError
        If ``window < 1``.

    Examples
    --------
    >>> [(f.hash, f.start) for f in winnow([5, 3, 4, 3, 9, 9, 1], 3, 2)]
    [(5, 0), (3, 1), (3, 3), (1, 6)]
    """
    if window < 1:
        raise ValueError(f"window must be >= 1, got {window}")
    positions, hashes = _selection(kgram_hashes, window)
    return _fingerprints_at(positions, hashes, k)


def _fingerprints_at(positions: list[int], hashes: list[int], k: int) -> list[Fingerprint]:
    if not positions:
        return []
    starts = np.asarray(positions, dtype=np.int64)
    indices = _int_objects(np.arange(len(positions)))
    return _make_fingerprints(hashes, _int_objects(starts), _int_objects(starts + (k - 1)), indices)


def _check_kgram_parameters(k: int, window: int) -> None:
    if k < 1:
        raise ValueError(f"k-gram length must be >= 1, got {k}")
    if window < 1:
        raise ValueError(f"window must be >= 1, got {window}")


def _kgram_selection(token_hashes: np.ndarray, k: int, window: int) -> tuple[list[int], list[int]]:
    """Winnowed k-gram positions and hashes of int64 token hashes in ``[0, HASH_MOD)``.

    Raises
    ------
    ValueError
        If ``k < 1`` or ``window < 1``.
    """
    _check_kgram_parameters(k, window)
    return _selection(_rolling_array(token_hashes, k), window)


def _kgram_fingerprints(token_hashes: np.ndarray, k: int, window: int) -> np.ndarray:
    """The fingerprint hashes of :func:`_kgram_selection`, in order, as an int64 array (no
    positions, no lists: the input of all-pairs figures).

    Raises
    ------
    ValueError
        If ``k < 1`` or ``window < 1``.
    """
    _check_kgram_parameters(k, window)
    kgrams = _rolling_array(token_hashes, k)
    return kgrams[_winnow_selected(kgrams, window)]


def fingerprint_tokens(tokens: Sequence[str], k: int, window: int) -> list[Fingerprint]:
    """Hash, roll and winnow a token stream in one call.

    Parameters
    ----------
    tokens : sequence of str
        Token stream (e.g. :attr:`TokenizedFile.tokens`).
    k : int
        k-gram length (Dolos ``kgramLength``, default there 23).
    window : int
        k-grams per window (Dolos ``kgramsInWindow``, default there 17).

    Returns
    -------
    list of Fingerprint
        Empty when there are fewer than ``k`` tokens.

    Raises
    ------
    ValueError
        If ``k < 1`` or ``window < 1``.
    """
    token_hashes = np.fromiter(map(hash_token, tokens), dtype=np.int64, count=len(tokens))
    positions, hashes = _kgram_selection(token_hashes, k, window)
    return _fingerprints_at(positions, hashes, k)
