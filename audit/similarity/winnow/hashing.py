"""Dolos's token hash and rolling k-gram hashes (``core/src/hashing``: ``TokenHash``, ``RollingHash``).

- :func:`hash_token`: a polynomial string hash over the UTF-16 code units of the token, base
  747287, modulus 33554393 (the largest 26-bit prime, so the product of two hashes stays exact in
  the 53 bits of a double). Python's ``hash()`` is never used: it is salted per process.
- :func:`rolling_hashes`: Rabin-Karp k-gram hashes, base 4194301, the same modulus; the hash of
  tokens ``t[i..i+k-1]`` is ``sum(h(t[i+j]) * base**(k-1-j)) mod m``, computed for all k-grams at
  once as a sum of ``k`` shifted, weighted copies of the token hashes.
"""

from __future__ import annotations

import functools
from typing import Iterable, Sequence

import numpy as np

__all__ = ["HASH_MOD", "TOKEN_HASH_BASE", "ROLLING_HASH_BASE", "hash_token", "rolling_hashes"]

#: Modulus of both hashes: the largest prime below 2**25 (Dolos ``TokenHash.mod``/``RollingHash.mod``).
HASH_MOD = 33554393
#: Base of :func:`hash_token`: the largest prime with ``127 * base < HASH_MOD``.
TOKEN_HASH_BASE = 747287
#: Base of :func:`rolling_hashes`: the largest prime below 2**22.
ROLLING_HASH_BASE = 4194301


@functools.lru_cache(maxsize=4096)
def hash_token(token: str) -> int:
    """Dolos's ``TokenHash`` of one token.

    ``h = 0; for each UTF-16 code unit c: h = ((h + c) * 747287) mod 33554393``.

    Parameters
    ----------
    token : str
        A token (a node type, ``"("``, ``")"``, or one character).

    Returns
    -------
    int
        In ``[0, HASH_MOD)``; 0 for the empty string.

    Examples
    --------
    >>> hash_token("(")
    29891480
    >>> hash_token("")
    0
    """
    if token.isascii():
        units: Iterable[int] = token.encode("ascii")
    else:
        # JavaScript's charCodeAt yields UTF-16 code units (surrogate pairs for astral chars).
        data = token.encode("utf-16-le", errors="surrogatepass")
        units = (data[i] | (data[i + 1] << 8) for i in range(0, len(data), 2))
    value = 0
    for unit in units:
        value = ((value + unit) * TOKEN_HASH_BASE) % HASH_MOD
    return value


#: Products of two values below HASH_MOD stay below 2**50, so this many of them add up
#: without leaving int64 before a reduction.
_TERMS_PER_REDUCTION = 4096


@functools.lru_cache(maxsize=64)
def _kgram_weights(k: int) -> tuple[int, ...]:
    """``ROLLING_HASH_BASE ** (k - 1 - j) mod HASH_MOD`` for ``j`` in ``0..k-1``."""
    return tuple(pow(ROLLING_HASH_BASE, k - 1 - j, HASH_MOD) for j in range(k))


def _reduced(values: Sequence[int]) -> np.ndarray:
    """``values`` mod :data:`HASH_MOD` as int64 (Python's non-negative remainder)."""
    try:
        array = np.asarray(values, dtype=np.int64)
    except (OverflowError, TypeError, ValueError):
        array = np.asarray([int(v) % HASH_MOD for v in values], dtype=np.int64)
    if array.ndim != 1:
        array = array.reshape(-1)
    if len(array) and (array.min() < 0 or array.max() >= HASH_MOD):
        array = array % HASH_MOD
    return array


def _rolling_array(token_hashes: np.ndarray, k: int) -> np.ndarray:
    """k-gram hashes of int64 token hashes in ``[0, HASH_MOD)``, as int64.

    Dolos's rolling update ``(base * h + token + (mod - base**k) * oldest) mod m`` is exact in
    doubles (every term stays below 2**53), so it equals the polynomial
    ``sum(t[i + j] * base**(k - 1 - j)) mod m``, computed here for all k-grams at once.
    """
    count = len(token_hashes) - k + 1
    if count <= 0:
        return np.zeros(0, dtype=np.int64)
    weights = _kgram_weights(k)
    total = token_hashes[:count] * weights[0]
    term = np.empty(count, dtype=np.int64)
    for j in range(1, k):
        np.multiply(token_hashes[j : j + count], weights[j], out=term)
        total += term
        if j % _TERMS_PER_REDUCTION == 0:
            total %= HASH_MOD
    total %= HASH_MOD
    return total


def rolling_hashes(token_hashes: Sequence[int], k: int) -> list[int]:
    """Rabin-Karp hashes of every k-gram of a token-hash sequence (Dolos ``RollingHash``).

    Parameters
    ----------
    token_hashes : sequence of int
        :func:`hash_token` of each token, in order.
    k : int
        k-gram length in tokens (>= 1).

    Returns
    -------
    list of int
        ``len(token_hashes) - k + 1`` hashes (empty when there are fewer than ``k`` tokens);
        item ``i`` is the hash of tokens ``i`` to ``i + k - 1``.

    Raises
    ------
    ValueError
        If ``k < 1``.

    Examples
    --------
    >>> rolling_hashes([1, 2, 3], 2) == [(1 * 4194301 + 2) % 33554393, (2 * 4194301 + 3) % 33554393]
    True
    """
    if k < 1:
        raise ValueError(f"k-gram length must be >= 1, got {k}")
    return _rolling_array(_reduced(token_hashes), k).tolist()
