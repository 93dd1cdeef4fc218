"""Fragments: the stretches of code two files share, as Dolos chains them.

Fragments are Dolos's: every pair of occurrences of one shared hash (one in each file) is a
*paired occurrence*; paired occurrences whose fingerprint indices are consecutive on both sides
chain into a fragment; a fragment contained (on both sides) in a bigger one is dropped. Fragments
carry no figure of Dolos's report (its ``longest_fragment`` comes from its own run count), so they
are built with an exact containment check where Dolos uses a one-pass approximation. Repetitive
code has millions of paired occurrences; fragments are built from at most
:data:`MAX_FRAGMENT_PAIRINGS` of them (see :func:`build_fragments`), so that a pathological file
costs a fraction of a second, with every figure still exact.

:func:`build_fragments` gives them in fingerprint coordinates (:class:`KgramMatch`); a
:class:`Fragment` is one as a reviewer reads it, with a span and a location on each side (also
the form of the copy detector's evidence, :mod:`mleaudit.audit.similarity.evidence`).
"""

from __future__ import annotations

import logging
from bisect import insort
from dataclasses import dataclass
from itertools import chain
from typing import Any

import numpy as np

from mleaudit.audit.model import Span
from mleaudit.audit.similarity.fingerprint_index import IndexedFile

logger = logging.getLogger(__name__)

__all__ = [
    "MAX_FRAGMENT_PAIRINGS",
    "Fragment",
    "KgramMatch",
    "build_fragments",
]

#: :func:`build_fragments` pairs at most this many occurrences (see its Notes).
MAX_FRAGMENT_PAIRINGS = 100_000


@dataclass(frozen=True, slots=True, kw_only=True)
class KgramMatch:
    """A fragment in fingerprint coordinates: ``left`` and ``right`` are half-open ranges of
    fingerprint indices of equal length (one paired occurrence per step)."""

    left: range
    right: range

    @property
    def length(self) -> int:
        return len(self.left)


#: A fragment while fragments are built: (left start, left stop, right start, right stop).
_Run = tuple[int, int, int, int]


def _left_stop(run: _Run) -> int:
    return run[1]


def _squash(runs: list[_Run]) -> list[_Run]:
    """Drop every fragment that lies inside another one on both sides.

    Dolos's ``squash`` does this in one pass over the fragments sorted by start and by end,
    which misses a fragment that starts where its container starts; here the check is exact.
    Walking by left start (longest first), only fragments whose left range still reaches the
    current start can contain what follows, and a dropped fragment never needs checking
    against (whatever it would contain, its container contains too).
    """
    order = sorted(runs, key=lambda r: (r[0], -r[1], r[2], -r[3]))
    active: list[_Run] = []
    kept: list[_Run] = []
    for run in order:
        left_start, left_stop, right_start, right_stop = run
        if active and active[0][1] <= left_start:
            active = [a for a in active if a[1] > left_start]
        contained = False
        for a in active:
            if a[1] >= left_stop and a[2] <= right_start and right_stop <= a[3]:
                contained = True
                break
        if contained:
            continue
        insort(active, run, key=_left_stop)  # kept ordered by left stop for the pruning above
        kept.append(run)
    return kept


#: Fragment comparisons :func:`_longest_kept` makes at most before it leaves the work to
#: :func:`_squash` (about 0.1 s).
_LONGEST_CELLS = 20_000_000


def _longest_kept(runs: list[_Run], count: int, min_kgrams: int) -> list[_Run] | None:
    """The ``count`` longest of ``sorted(r for r in _squash(runs) if r[1] - r[0] >= min_kgrams)``
    (ties: the earlier in that order), in that order; ``None`` when finding them would take
    longer than squashing every fragment.

    A fragment survives :func:`_squash` exactly when no other fragment contains it on both
    sides (its container's container contains it too), and a container is at least as long:
    so the fragments are tested longest first against all others, until ``count`` survive.
    """
    if count <= 0:
        return []
    unique = sorted(set(runs))
    table = np.array(unique, dtype=np.int64).reshape(-1, 4)
    lengths = table[:, 1] - table[:, 0]
    eligible = np.flatnonzero(lengths >= min_kgrams)
    order = eligible[np.lexsort((eligible, -lengths[eligible]))]
    found: list[int] = []
    # each test compares with every fragment: past a budget of such comparisons (when most
    # of the longest are contained in others), squashing them all is cheaper
    most = max(4 * count + 64, _LONGEST_CELLS // max(len(unique), 1))
    for tested, i in enumerate(order.tolist()):
        if tested >= most:
            return None
        left_start, left_stop, right_start, right_stop = unique[i]
        holders = ((table[:, 0] <= left_start) & (table[:, 1] >= left_stop)
                   & (table[:, 2] <= right_start) & (table[:, 3] >= right_stop))
        if np.count_nonzero(holders) == 1:  # itself only (the tuples are distinct)
            found.append(i)
            if len(found) == count:
                break
    return [unique[i] for i in sorted(found)]


def _pairings(left: IndexedFile, right: IndexedFile, values: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """Every paired occurrence of the hashes ``values``: fingerprint indices ``(a, b)``."""
    left_counts = np.array([len(left.occurrences[v]) for v in values], dtype=np.int64)
    right_counts = np.array([len(right.occurrences[v]) for v in values], dtype=np.int64)
    left_at = np.fromiter(chain.from_iterable(left.occurrences[v] for v in values), dtype=np.int64,
                          count=int(left_counts.sum()))
    right_at = np.fromiter(chain.from_iterable(right.occurrences[v] for v in values), dtype=np.int64,
                           count=int(right_counts.sum()))
    right_first = np.cumsum(right_counts) - right_counts
    # each left occurrence pairs with every right occurrence of its hash
    times = np.repeat(right_counts, left_counts)
    a = np.repeat(left_at, times)
    starts = np.repeat(np.repeat(right_first, left_counts), times)
    within = np.arange(len(a), dtype=np.int64) - np.repeat(np.cumsum(times) - times, times)
    return a, right_at[starts + within]


def _diagonal_runs(a: np.ndarray, b: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Maximal runs of paired occurrences consecutive on both sides: ``(start, stop, offset)``
    with left indices ``start..stop-1`` paired with ``start + offset..stop - 1 + offset``."""
    offset = b - a
    keys = (offset + size) * (size + 1) + a  # by diagonal, then by left index
    keys.sort()
    breaks = np.flatnonzero(np.diff(keys) != 1)
    first = keys[np.concatenate(([0], breaks + 1))]
    last = keys[np.append(breaks, len(keys) - 1)]
    offsets = first // (size + 1) - size
    return first % (size + 1), last % (size + 1) + 1, offsets


#: At most this many runs are extended along their diagonal when the pairings are capped.
_MAX_EXTENDED_RUNS = 1_000


def _extend_runs(starts: np.ndarray, stops: np.ndarray, offsets: np.ndarray, left: np.ndarray, right: np.ndarray,
                 budget: int) -> tuple[np.ndarray, np.ndarray]:
    """Grow runs along their diagonals while the fingerprints on both sides are equal
    (``left``/``right``: hashes, ignored ones replaced by values that never match), longest
    runs first, comparing at most ``budget`` fingerprints in all."""
    starts, stops = starts.copy(), stops.copy()
    n_left, n_right = len(left), len(right)
    for run in np.argsort(stops - starts, kind="stable")[::-1][:_MAX_EXTENDED_RUNS].tolist():
        if budget <= 0:
            break
        offset = int(offsets[run])
        for direction in (1, -1):
            position = int(stops[run]) if direction == 1 else int(starts[run]) - 1
            step = 8
            while budget > 0:
                if direction == 1:
                    end = min(position + step, n_left, n_right - offset)
                    if end <= position:
                        break
                    same = left[position:end] == right[position + offset : end + offset]
                else:
                    end = max(position - step, -1, -1 - offset)
                    if end >= position:
                        break
                    same = (left[end + 1 : position + 1] == right[end + 1 + offset : position + 1 + offset])[::-1]
                budget -= len(same)
                differ = np.flatnonzero(~same)
                if len(differ):
                    position += direction * int(differ[0])
                    break
                position = end
                step *= 2
            if direction == 1:
                stops[run] = position
            else:
                starts[run] = position + 1
    return starts, stops


def _merge_runs(starts: np.ndarray, stops: np.ndarray, offsets: np.ndarray) -> list[_Run]:
    """Runs of one diagonal that overlap or touch, merged; as (left start, left stop, right
    start, right stop)."""
    order = np.lexsort((starts, offsets))
    merged: list[_Run] = []
    previous_offset = None
    for start, stop, offset in zip(starts[order].tolist(), stops[order].tolist(), offsets[order].tolist()):
        if merged and offset == previous_offset and start <= merged[-1][1]:
            if stop > merged[-1][1]:
                first = merged[-1][0]
                merged[-1] = (first, stop, first + offset, stop + offset)
            continue
        merged.append((start, stop, start + offset, stop + offset))
        previous_offset = offset
    return merged


def build_fragments(
    left: IndexedFile,
    right: IndexedFile,
    ignored: frozenset[int] = frozenset(),
    min_kgrams: int = 1,
    longest: int | None = None,
) -> list[KgramMatch]:
    """Chain paired occurrences into fragments (Dolos ``Pair.buildFragments``).

    Parameters
    ----------
    left, right : IndexedFile
    ignored : frozenset of int
        Hashes that never pair.
    min_kgrams : int, default 1
        Drop fragments of fewer paired occurrences (Dolos ``minFragmentLength``).
    longest : int, optional
        Only the ``longest`` longest fragments (ties: the earlier in the order below), found
        without squashing the others: the same fragments as cutting the whole list.

    Returns
    -------
    list of KgramMatch
        Maximal runs, consecutive on both sides, not contained in a longer run; sorted by left
        range, then right range.

    Notes
    -----
    Every occurrence of a shared hash pairs with every other occurrence of it, so code that
    repeats one statement thousands of times (5,000 nested parentheses: one hash at nearly
    every fingerprint) has millions of pairings. They are capped at
    :data:`MAX_FRAGMENT_PAIRINGS`: past it, the hashes with the most pairings are left out
    until the rest fits (ties by hash value), and the runs of the remaining pairings are then
    grown along their diagonals over equal fingerprints (comparing at most
    :data:`MAX_FRAGMENT_PAIRINGS` more fingerprints, longest runs first, at most 1,000 runs),
    which restores every fragment that also contains a rarer shared hash, such as a whole
    copied file. A run made only of the left-out hashes is not reported then. Fragments
    carry no figure of Dolos's report, so the cap never changes a figure
    (:func:`dolos_metrics` counts every occurrence).
    """
    shared = (left.occurrences.keys() & right.occurrences.keys()) - ignored
    if not shared:
        return []
    values = sorted(shared)
    pairings = np.array([len(left.occurrences[v]) * len(right.occurrences[v]) for v in values], dtype=np.int64)
    capped = int(pairings.sum()) > MAX_FRAGMENT_PAIRINGS
    if capped:
        # rarest first: the hashes that place a fragment; ties by hash value, for determinism
        order = np.lexsort((np.array(values, dtype=np.int64), pairings))
        fits = np.cumsum(pairings[order]) <= MAX_FRAGMENT_PAIRINGS
        chosen = np.sort(order[fits])
        logger.debug("%s x %s: %d pairings of %d shared hashes; fragments built from the %d rarest",
                     left.path, right.path, int(pairings.sum()), len(values), len(chosen))
        values = [values[i] for i in chosen.tolist()]
    size = max(len(left.fingerprints), len(right.fingerprints))
    if values:
        starts, stops, offsets = _diagonal_runs(*_pairings(left, right, values), size)
    else:
        starts = stops = offsets = np.zeros(0, dtype=np.int64)
    if capped and len(starts):
        left_hashes = np.fromiter((f.hash for f in left.fingerprints), dtype=np.int64, count=len(left.fingerprints))
        right_hashes = np.fromiter((f.hash for f in right.fingerprints), dtype=np.int64,
                                   count=len(right.fingerprints))
        if ignored:
            # ignored hashes never pair: make them unequal to everything
            never = np.fromiter(ignored, dtype=np.int64, count=len(ignored))
            left_hashes[np.isin(left_hashes, never)] = -1
            right_hashes[np.isin(right_hashes, never)] = -2
        starts, stops = _extend_runs(starts, stops, offsets, left_hashes, right_hashes, MAX_FRAGMENT_PAIRINGS)
        runs = _merge_runs(starts, stops, offsets)
    else:
        runs = list(zip(starts.tolist(), stops.tolist(), (starts + offsets).tolist(), (stops + offsets).tolist()))
    kept = (_longest_kept(runs, longest, min_kgrams)
            if longest is not None and (len(runs) > longest or longest <= 0) else None)
    if kept is None:
        kept = sorted(r for r in _squash(runs) if r[1] - r[0] >= min_kgrams)
        if longest is not None and len(kept) > longest:
            top = sorted(range(len(kept)), key=lambda i: (kept[i][0] - kept[i][1], i))[:longest]
            kept = [kept[i] for i in sorted(top)]
    return [KgramMatch(left=range(r[0], r[1]), right=range(r[2], r[3])) for r in kept]


@dataclass(frozen=True, slots=True, kw_only=True)
class Fragment:
    """A stretch of agent code that matches a stretch of reference code.

    Attributes
    ----------
    agent, reference : Span
        The matched regions (from the first token of the first k-gram to the last token of the
        last one), in the host file of each side.
    agent_kgrams, reference_kgrams : range
        The fingerprint indices on each side (half-open).
    length : int
        Number of paired fingerprints (k-grams) in the fragment.
    agent_location, reference_location : str
        Where the fragment starts, for people: ``"cell 3, line 2"`` in a notebook, else ``"line 12"``.
    """

    agent: Span
    reference: Span
    agent_kgrams: range
    reference_kgrams: range
    length: int
    agent_location: str = ""
    reference_location: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "agent": self.agent.to_dict(),
            "reference": self.reference.to_dict(),
            "agent_kgrams": [self.agent_kgrams.start, self.agent_kgrams.stop],
            "reference_kgrams": [self.reference_kgrams.start, self.reference_kgrams.stop],
            "length": self.length,
            "agent_location": self.agent_location,
            "reference_location": self.reference_location,
        }


def _host(unit: Any, span: Span) -> Span:
    return unit.host_span(span) if unit is not None else span


def _describe(unit: Any, span: Span) -> str:
    if unit is None:
        return f"line {span.start_line}"
    if unit.cells:
        return unit.describe(span.start_line)
    return f"line {unit.host_span(span).start_line}"
