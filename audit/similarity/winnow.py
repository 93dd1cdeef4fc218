"""Token hashes, rolling k-gram hashes and winnowing, exactly as Dolos 3.5.1 computes them.

A document's fingerprints are a sample of the hashes of its k-grams (runs of ``k`` consecutive
tokens): in every window of ``w`` consecutive k-gram hashes the minimum is selected, so any match
of at least ``w + k - 1`` tokens shares a fingerprint (the guarantee threshold) while matches
shorter than ``k`` tokens (the noise threshold) never do.

The constants and the arithmetic are Dolos's (``core/src/hashing``: ``TokenHash``,
``RollingHash``, ``WinnowFilter``), so the fingerprints, and every figure built on them, are the
same numbers Dolos reports:

- :func:`hash_token`: a polynomial string hash over the UTF-16 code units of the token, base
  747287, modulus 33554393 (the largest 26-bit prime, so the product of two hashes stays exact in
  the 53 bits of a double). Python's ``hash()`` is never used: it is salted per process.
- :func:`rolling_hashes`: Rabin-Karp k-gram hashes, base 4194301, the same modulus; the hash of
  tokens ``t[i..i+k-1]`` is ``sum(h(t[i+j]) * base**(k-1-j)) mod m``.
- :func:`winnow`: Schleimer et al.'s robust winnowing with Dolos's ring buffer. The rightmost
  minimum of a window is selected, with one Dolos detail kept on purpose: when the previous
  minimum leaves the window, the rescan starts from the newest hash and only replaces it by an
  *older* hash that is lower or equal, so on a tie between the newest hash and an older one the
  older is selected.

All functions are pure.

References
----------
Schleimer, S., Wilkerson, D. S., & Aiken, A. (2003). Winnowing: local algorithms for document
fingerprinting. *Proceedings of the 2003 ACM SIGMOD International Conference on Management of
Data*, 76-85. https://doi.org/10.1145/872757.872770

Dolos 3.5.1 (``@dodona/dolos-lib`` 3.5.1, ``@dodona/dolos-core`` 1.2.1),
https://github.com/dodona-edu/dolos.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Iterable, Sequence

__all__ = [
    "HASH_MOD",
    "TOKEN_HASH_BASE",
    "ROLLING_HASH_BASE",
    "Fingerprint",
    "hash_token",
    "rolling_hashes",
    "winnow",
    "fingerprint_tokens",
]

#: Modulus of both hashes: the largest prime below 2**25 (Dolos ``TokenHash.mod``/``RollingHash.mod``).
HASH_MOD = 33554393
#: Base of :func:`hash_token`: the largest prime with ``127 * base < HASH_MOD``.
TOKEN_HASH_BASE = 747287
#: Base of :func:`rolling_hashes`: the largest prime below 2**22.
ROLLING_HASH_BASE = 4194301
#: Dolos fills its window buffer with ``Number.MAX_SAFE_INTEGER`` before the first k-gram.
_EMPTY_SLOT = 2**53 - 1


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


def _mod_pow(base: int, exponent: int, modulus: int) -> int:
    # Dolos's square-and-multiply stops at exponent 1 and multiplies once more, so an exponent
    # of 0 yields ``base`` rather than 1; k >= 1 is validated, but keep the same arithmetic.
    if exponent == 0:
        return base % modulus
    return pow(base, exponent, modulus)


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
    mod = HASH_MOD
    base = ROLLING_HASH_BASE
    # Adding ``(mod - base**k) * old`` removes the token that leaves the k-gram.
    drop = mod - _mod_pow(base, k, mod)
    memory = [0] * k
    slot = 0
    value = 0
    out: list[int] = []
    for position, token in enumerate(token_hashes):
        value = (base * value + token + drop * memory[slot]) % mod
        memory[slot] = token
        slot = (slot + 1) % k
        if position >= k - 1:
            out.append(value)
    return out


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
    buffer = [_EMPTY_SLOT] * window
    newest = 0
    minimum = 0
    out: list[Fingerprint] = []
    for position, value in enumerate(kgram_hashes):
        newest = (newest + 1) % window
        buffer[newest] = value
        if minimum == newest:
            # The previous minimum just left the window: rescan from the oldest slot, keeping
            # the newest as the first candidate (Dolos's order, see the module docstring).
            slot = (newest + 1) % window
            while slot != newest:
                if buffer[slot] <= buffer[minimum]:
                    minimum = slot
                slot = (slot + 1) % window
        elif value <= buffer[minimum]:
            minimum = newest
        else:
            continue
        # Distance back from the newest slot to the selected one, in [0, window).
        start = position - (newest - minimum) % window
        out.append(Fingerprint(hash=buffer[minimum], start=start, stop=start + k - 1, index=len(out)))
    return out


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
    """
    return winnow(rolling_hashes([hash_token(t) for t in tokens], k), window, k)
