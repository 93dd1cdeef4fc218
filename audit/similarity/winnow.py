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

The arithmetic runs on numpy arrays (a corpus has millions of k-grams): the k-gram hashes as a
sum of ``k`` shifted, weighted copies of the token hashes, and winnowing as the changes of the
rightmost window minimum, with Dolos's loop followed only around the rare ties where its
selection differs (see :func:`_winnow_positions`). The results are those of Dolos's
position-by-position loop, which :func:`_winnow_reference` keeps for checking.

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
from collections import deque
from dataclasses import dataclass
from itertools import repeat
from typing import Iterable, Sequence

import numpy as np

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


# -- shared int objects -----------------------------------------------------------------------

#: Offsets and token indices below this share one int object per value (see :func:`_int_objects`).
_POOL_LIMIT = 1 << 18
_pool: np.ndarray = np.array(range(1 << 12), dtype=object)


def _int_objects(values: np.ndarray) -> list[int]:
    """``values.tolist()``, with each value in ``[0, _POOL_LIMIT)`` one shared int object.

    Token streams keep two offsets per token and fingerprints three token indices; as separate
    int objects those dominate the memory of a corpus. Values from the shared pool cost one
    pointer each. The pool grows to the largest value seen (at most :data:`_POOL_LIMIT` ints,
    about 9 MB, kept for the life of the process).
    """
    global _pool
    if len(values) == 0:
        return []
    top = int(values.max())
    if top >= len(_pool) and len(_pool) < _POOL_LIMIT:
        size = len(_pool)
        while size <= top and size < _POOL_LIMIT:
            size *= 2
        _pool = np.array(range(min(size, _POOL_LIMIT)), dtype=object)
    pool = _pool
    bottom = int(values.min())
    if bottom >= 0 and top < len(pool):
        return pool[values].tolist()
    if bottom >= len(pool) or top < 0:
        return values.tolist()
    # partly inside the pool: shared objects where possible, new ints elsewhere
    outside = (values < 0) | (values >= len(pool))
    objects = pool[np.where(outside, 0, values)]
    objects[outside] = values[outside].tolist()
    return objects.tolist()


# -- rolling hashes -----------------------------------------------------------------------------

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


# -- winnowing ----------------------------------------------------------------------------------


def _min_of_previous(values: np.ndarray, span: int, padding: int = _EMPTY_SLOT) -> np.ndarray:
    """``out[p] = min(values[p - span : p])``, positions before 0 holding ``padding``.

    A sparse-table minimum: ``log2(span)`` passes of pairwise minima, then two overlapping
    blocks per position.
    """
    n = len(values)
    table = np.concatenate((np.full(span, padding, dtype=np.int64), values))
    width = 1  # table[i] = min of the ``width`` padded values from i
    while 2 * width <= span:
        table = np.minimum(table[:-width], table[width:])
        width *= 2
    return np.minimum(table[:n], table[span - width : span - width + n])


#: Bits for a position in a (hash, position) key; hashes below 2**31 leave the key in int64.
_KEY_BITS = 31
_POSITION_MASK = (1 << _KEY_BITS) - 1
_KEY_PADDING = np.iinfo(np.int64).max


def _winnow_positions(values: np.ndarray, window: int) -> list[int]:
    """:func:`_winnow_selected` as a list."""
    return _winnow_selected(values, window).tolist()


def _winnow_selected(values: np.ndarray, window: int) -> np.ndarray:
    """Positions Dolos's ``WinnowFilter`` selects, in order (``values``: int64 k-gram hashes).

    Dolos's selection ``m`` is always a minimum of the window ``[p - w + 1, p]``, and it is the
    *rightmost* minimum except after one kind of step: when ``m`` leaves the window and the
    newest hash ties with the minimum of the older ones, Dolos's rescan keeps the older hash.
    So, with ``R[p]`` the rightmost minimum of window ``p`` (vectorised: the minimum of keys that
    pack each hash with its position reversed):

    - as long as no such tie occurs, Dolos selects ``R[p]`` at step ``p`` whenever it differs
      from ``R[p - 1]`` (a new minimum arrived, or the old one left and the rescan found the
      rightmost remaining one), and nothing otherwise;
    - at a tie (step ``p`` where ``R[p - 1] == p - w`` and ``values[p]`` equals the minimum of
      ``[p - w + 1, p - 1]``) Dolos's loop is followed position by position until its
      selection equals ``R`` again, after which the two agree until the next tie.

    Ties need a repeated k-gram within one window (a run of near-identical statements); real
    files have a few, so nearly all positions take the vectorised path. Values outside
    ``[0, 2**31)`` take :func:`_winnow_walk`.
    """
    n = len(values)
    if n == 0 or window == 1:
        return np.arange(n, dtype=np.int64)
    if n >= 1 << _KEY_BITS or values.min() < 0 or values.max() >= 1 << _KEY_BITS:
        return np.array(_winnow_walk(values, window), dtype=np.int64)
    index = np.arange(n, dtype=np.int64)
    # smaller key: smaller value, then larger position
    keys = (values << _KEY_BITS) | (_POSITION_MASK - index)
    older = _min_of_previous(keys, window - 1, _KEY_PADDING)  # the key minimum of [p - w + 1, p - 1]
    rightmost = np.where(keys < older, index, _POSITION_MASK - (older & _POSITION_MASK))
    changed = np.empty(n, dtype=bool)
    changed[0] = True
    np.not_equal(rightmost[1:], rightmost[:-1], out=changed[1:])
    steps = np.arange(window, n, dtype=np.int64)
    ties = np.flatnonzero((rightmost[window - 1 : n - 1] == steps - window)
                          & (values[window:] == older[window:] >> _KEY_BITS)) + window
    if not len(ties):
        return rightmost[changed]
    return _winnow_with_ties(values, window, rightmost, changed, ties.tolist())


def _winnow_with_ties(values: np.ndarray, window: int, rightmost: np.ndarray, changed: np.ndarray,
                      ties: list[int]) -> np.ndarray:
    """:func:`_winnow_positions` where ties occur: Dolos's loop from each tie until its
    selection is ``rightmost`` again; ``changed`` (the vectorised steps) is cleared there."""
    # element by element: the loop visits a few per cent of the positions, so converting
    # whole arrays to lists would cost more than the loop
    hash_at, agreed_at = values.item, rightmost.item
    n = len(values)
    loop_steps: list[int] = []
    loop_selected: list[int] = []
    record_step, record = loop_steps.append, loop_selected.append
    next_tie = 0
    while next_tie < len(ties):
        step = ties[next_tie]
        current = -1  # the selection left the window at ``step``: rescan
        while step < n:
            value = hash_at(step)
            if current < step - window + 1:
                # rescan from the oldest hash; the newest only wins when strictly lower
                older = values[step - window + 1 : step].tolist()
                lowest = min(older)
                current = step if value < lowest else step - 1 - older[::-1].index(lowest)
            elif value <= hash_at(current):
                current = step
            else:
                if current == agreed_at(step):
                    break
                step += 1
                continue
            record_step(step)
            record(current)
            if current == agreed_at(step):
                break
            step += 1
        changed[ties[next_tie] : step + 1] = False
        while next_tie < len(ties) and ties[next_tie] <= step:
            next_tie += 1
    vector_steps = np.flatnonzero(changed)
    all_steps = np.concatenate((vector_steps, np.array(loop_steps, dtype=np.int64)))
    selected = np.concatenate((rightmost[vector_steps], np.array(loop_selected, dtype=np.int64)))
    return selected[np.argsort(all_steps, kind="stable")]


def _winnow_walk(values: np.ndarray, window: int) -> list[int]:
    """:func:`_winnow_positions` for any int64 values: a walk from selection to selection.

    At step ``p`` Dolos's selection ``m`` changes in two ways only. With ``L[p]`` the minimum
    of the ``w - 1`` hashes before ``p``:

    - ``m`` still in the window and ``values[p] <= L[p]``: ``p`` is selected (so ``p`` is a
      *candidate* when ``values[p] <= L[p]``);
    - ``m == p - w`` (it just left): ``p`` when ``values[p] < L[p]``, else the rightmost
      minimum of ``[p - w + 1, p - 1]`` (Dolos's rescan, ties to the older hash).

    So the walk jumps from selection to selection: to the next candidate if it comes before the
    current selection leaves the window, else to that rescan.
    """
    n = len(values)
    before = _min_of_previous(values, window - 1)
    candidates = np.flatnonzero(values <= before).tolist()
    candidates.append(n)  # sentinel: no candidate left
    strict = values < before
    selected: list[int] = []
    append = selected.append
    # Dolos starts with an empty window whose minimum sits at position -1 and leaves at w - 1.
    current = -1
    step = -1
    next_index = 0  # into candidates: the first candidate after ``step``
    while True:
        while candidates[next_index] <= step:
            next_index += 1
        candidate = candidates[next_index]
        leaves = current + window
        if candidate < leaves:
            if candidate >= n:
                break
            current = step = candidate
        else:
            if leaves >= n:
                break
            if strict.item(leaves):
                current = leaves
            else:
                older = values[leaves - window + 1 : leaves].tolist()
                current = leaves - 1 - older[::-1].index(min(older))
            step = leaves
        append(current)
    return selected


def _winnow_reference(kgram_hashes: Sequence[int], window: int) -> list[int]:
    """Dolos's ``WinnowFilter`` loop, position by position (slow; the specification of
    :func:`_winnow_positions`, used in tests and for values outside int64)."""
    buffer = [_EMPTY_SLOT] * window
    newest = 0
    minimum = 0
    selected: list[int] = []
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
        selected.append(position - (newest - minimum) % window)
    return selected


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
