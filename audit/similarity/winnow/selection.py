"""Which k-grams Dolos's ``WinnowFilter`` selects: robust winnowing, ties as Dolos breaks them.

In every window of ``w`` consecutive k-gram hashes the minimum is selected (Schleimer et al.'s
robust winnowing with Dolos's ring buffer). The rightmost minimum of a window is selected, with
one Dolos detail kept on purpose: when the previous minimum leaves the window, the rescan starts
from the newest hash and only replaces it by an *older* hash that is lower or equal, so on a tie
between the newest hash and an older one the older is selected.

Winnowing runs as the changes of the rightmost window minimum on numpy arrays, with Dolos's
loop followed only around the rare ties where its selection differs (see
:func:`_winnow_selected`). The results are those of Dolos's position-by-position loop, which
:func:`_winnow_reference` keeps for checking.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

#: Dolos fills its window buffer with ``Number.MAX_SAFE_INTEGER`` before the first k-gram.
_EMPTY_SLOT = 2**53 - 1


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
