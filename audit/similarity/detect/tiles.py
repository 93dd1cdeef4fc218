"""Tiles: maximal runs of equal tokens shared by two files, chosen longest first and never
overlapping (greedy string tiling, Wise 1993)."""

from __future__ import annotations

import heapq
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from mleaudit.audit.similarity.detect.constants import MAX_SEED_OCCURRENCES, MIN_TILE_TOKENS, _SEED
from mleaudit.audit.similarity.detect.profiles import Profile


@dataclass(frozen=True, slots=True, kw_only=True)
class Tile:
    """Equal token runs ``agent[agent_start:agent_stop]`` and ``reference[reference_start:reference_stop]``."""

    agent_start: int
    agent_stop: int
    reference_start: int
    reference_stop: int

    @property
    def length(self) -> int:
        return self.agent_stop - self.agent_start


_ONES = b"\x01" * 4096


def _sorted_seeds(reference: Profile) -> tuple[np.ndarray, np.ndarray]:
    """The reference's seed keys sorted (stable) and the order that sorts them, kept with the
    profile: a reference meets every agent file of a comparison."""
    found = reference._cache.get("seed_order")
    if found is None:
        seeds = reference.seed_keys()
        order = np.argsort(seeds, kind="stable")
        found = reference._cache["seed_order"] = (order, seeds[order])
    return found


def _maximal_run_columns(agent: Profile, reference: Profile, min_tokens: int = MIN_TILE_TOKENS
                         ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None:
    """:func:`_maximal_runs` as four aligned arrays ``(a0, a1, r0, r1)`` in the same order, or
    ``None`` when there is none."""
    seeds_a = agent.seed_keys()
    order, sorted_r = _sorted_seeds(reference)
    if not seeds_a.size or not sorted_r.size:
        return None
    low = np.searchsorted(sorted_r, seeds_a, side="left")
    high = np.searchsorted(sorted_r, seeds_a, side="right")
    found = high - low
    keep = (found > 0) & (found <= MAX_SEED_OCCURRENCES)
    if not keep.any():
        return None
    counts = found[keep]
    agent_at = np.repeat(np.flatnonzero(keep), counts)
    # position of each pair in `sorted_r`: the group's first index plus a running offset
    firsts = np.repeat(low[keep], counts)
    offsets = np.arange(counts.sum()) - np.repeat(np.cumsum(counts) - counts, counts)
    reference_at = order[firsts + offsets]
    # One integer per seed pair, by diagonal (the offset between the files) then agent position:
    # a plain sort of it orders the pairs as a two-key lexsort would, for less.
    span = seeds_a.size + 1
    key = np.sort((agent_at - reference_at + sorted_r.size) * span + agent_at)
    agent_at = key % span
    diagonal = key // span
    breaks = np.flatnonzero((np.diff(diagonal) != 0) | (np.diff(agent_at) != 1)) + 1
    starts = np.concatenate(([0], breaks))
    stops = np.concatenate((breaks, [agent_at.size])) - 1
    a0 = agent_at[starts]
    a1 = agent_at[stops] + _SEED
    long_enough = (a1 - a0) >= min_tokens
    if not long_enough.any():
        return None
    a0, a1 = a0[long_enough], a1[long_enough]
    r0 = a0 - (diagonal[starts][long_enough] - sorted_r.size)
    # longest first; ties by agent start, then reference start (the stop follows from those)
    by = np.lexsort((r0, a0, a0 - a1))
    a0, a1, r0 = a0[by], a1[by], r0[by]
    return a0, a1, r0, r0 + (a1 - a0)


class RunFinder:
    """:func:`_maximal_run_columns` of one agent file against many references, from one search.

    The references' sorted seeds are joined into one table (built on first use); an agent's seeds
    are looked up once, and the runs of every reference come from one sort of the seed pairs
    keyed by reference, diagonal and agent position: the same runs, in the same order, as one
    search per reference.

    Parameters
    ----------
    references : sequence of Profile
        Numbered by their place in the sequence.
    """

    #: Seed pairs (agent seed x reference occurrence) past which a block of references is
    #: searched one reference at a time instead (bounded memory on repetitive code).
    MAX_PAIRS = 1 << 20

    def __init__(self, references: Sequence[Profile]) -> None:
        self._references = list(references)
        self._table: tuple[np.ndarray, ...] | None = None

    def _joined(self) -> tuple[np.ndarray, ...]:
        if self._table is None:
            parts = [_sorted_seeds(r) for r in self._references]
            sizes = np.array([keys.size for _, keys in parts], dtype=np.int64)
            keys = np.concatenate([k for _, k in parts]) if parts else np.zeros(0, np.int64)
            positions = np.concatenate([o for o, _ in parts]).astype(np.int64) if parts else np.zeros(0, np.int64)
            # how often each seed occurs in its own reference
            within = np.concatenate([np.searchsorted(k, k, side="right") - np.searchsorted(k, k, side="left")
                                     for _, k in parts]) if parts else np.zeros(0, np.int64)
            files = np.repeat(np.arange(len(parts), dtype=np.int64), sizes)
            order = np.argsort(keys, kind="stable")
            self._table = (keys[order], files[order], positions[order], within[order], sizes)
        return self._table

    def columns(self, agent: Profile, ids: Sequence[int], min_tokens: int = MIN_TILE_TOKENS
                ) -> list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None]:
        """:func:`_maximal_run_columns` of ``agent`` against each reference of ``ids``, in that order."""
        seeds_a = agent.seed_keys()
        if not seeds_a.size or not ids:
            return [None] * len(ids)
        keys, files, positions, within, sizes = self._joined()
        low = np.searchsorted(keys, seeds_a, side="left")
        counts = np.searchsorted(keys, seeds_a, side="right") - low
        total = int(counts.sum())
        chosen = np.asarray(ids, dtype=np.int64)
        span = seeds_a.size + 1
        stride = (seeds_a.size + int(sizes[chosen].max()) + 2) * span
        if total > self.MAX_PAIRS or len(self._references) * stride >= 1 << 62:
            return [_maximal_run_columns(agent, self._references[i], min_tokens) for i in ids]
        agent_at = np.repeat(np.arange(seeds_a.size, dtype=np.int64), counts)
        at = np.repeat(low, counts) + (np.arange(total) - np.repeat(np.cumsum(counts) - counts, counts))
        wanted = np.zeros(len(self._references), dtype=bool)
        wanted[chosen] = True
        file = files[at]
        # a seed found more than MAX_SEED_OCCURRENCES times in a reference seeds nothing there
        keep = wanted[file] & (within[at] <= MAX_SEED_OCCURRENCES)
        agent_at, file, reference_at = agent_at[keep], file[keep], positions[at[keep]]
        if not agent_at.size:
            return [None] * len(ids)
        # one integer per seed pair: reference, then diagonal (shifted positive as for one
        # reference), then agent position
        key = np.sort(file * stride + (agent_at - reference_at + sizes[file]) * span + agent_at)
        file = key // stride
        rest = key - file * stride
        diagonal = rest // span
        agent_at = rest - diagonal * span
        breaks = np.flatnonzero((np.diff(file) != 0) | (np.diff(diagonal) != 0) | (np.diff(agent_at) != 1)) + 1
        starts = np.concatenate(([0], breaks)).astype(np.int64)
        stops = np.concatenate((breaks, [agent_at.size])).astype(np.int64) - 1
        a0 = agent_at[starts]
        a1 = agent_at[stops] + _SEED
        owner = file[starts]
        long_enough = (a1 - a0) >= min_tokens
        a0, a1, owner = a0[long_enough], a1[long_enough], owner[long_enough]
        r0 = a0 - (diagonal[starts][long_enough] - sizes[owner])
        # per reference: longest first; ties by agent start, then reference start
        by = np.lexsort((r0, a0, a0 - a1, owner))
        a0, a1, r0, owner = a0[by], a1[by], r0[by], owner[by]
        r1 = r0 + (a1 - a0)
        first = np.searchsorted(owner, chosen, side="left")
        last = np.searchsorted(owner, chosen, side="right")
        return [(a0[lo:hi], a1[lo:hi], r0[lo:hi], r1[lo:hi]) if hi > lo else None
                for lo, hi in zip(first.tolist(), last.tolist())]


def _maximal_runs(agent: Profile, reference: Profile, min_tokens: int = MIN_TILE_TOKENS
                  ) -> list[tuple[int, int, int, int, int]]:
    """Maximal equal runs of at least ``min_tokens`` tokens, as ``(-length, a0, a1, r0, r1)``,
    longest first (ties: by agent start, then reference start).

    Seeds are the token 6-grams both files share (by key); a seed found more than
    :data:`MAX_SEED_OCCURRENCES` times in the reference is a repetition and seeds nothing.
    Consecutive seeds on one diagonal (the same offset between the files) make one run.
    """
    columns = _maximal_run_columns(agent, reference, min_tokens)
    return [] if columns is None else _run_tuples(columns)


def _run_tuples(columns: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]) -> list[tuple[int, int, int, int, int]]:
    a0, a1, r0, r1 = columns
    return list(zip((a0 - a1).tolist(), a0.tolist(), a1.tolist(), r0.tolist(), r1.tolist()))


def find_tiles(agent: Profile, reference: Profile, min_tokens: int = MIN_TILE_TOKENS) -> list[Tile]:
    """Greedy string tiling of two token streams.

    Parameters
    ----------
    agent, reference : Profile
    min_tokens : int
        Shortest tile kept (at least :data:`MIN_TILE_TOKENS`, the seed length).

    Returns
    -------
    list of Tile
        Maximal equal runs, longest first when they compete for tokens (ties: the earlier in the
        agent file, then in the reference), no token of either side in two tiles; sorted by
        agent position.

    Examples
    --------
    >>> from mleaudit.audit.similarity.detect.profiles import profile_code
    >>> a = profile_code("x = f(a, 'k')\\ny = 1\\nz = g(b, 'k') + 2\\n")
    >>> r = profile_code("q = f(c, 'k')\\nz = g(d, 'k') + 2\\n")
    >>> [(t.agent_start, t.length) for t in find_tiles(a, r)]
    [(0, 10), (13, 8)]
    """
    columns = _maximal_run_columns(agent, reference, min_tokens)
    if columns is None:
        return []
    return tile_runs(columns, len(agent.ids), len(reference.ids), min_tokens)


#: Runs looked at without taking a tile before the runs left are screened (:func:`_screen`);
#: doubled each time a screening keeps most of them.
_SCREEN_AFTER = 16
#: Runs turned into tuples at a time (most runs of repetitive code are screened out unseen).
_CHUNK = 64


def _greedy_tiles(runs: list[tuple[int, int, int, int, int]], n_agent: int, n_reference: int,
                  min_tokens: int = MIN_TILE_TOKENS) -> list[Tile]:
    """:func:`tile_runs` of runs given as :func:`_maximal_runs` tuples."""
    if not runs:
        return []
    _, a0, a1, r0, r1 = (np.array(c, dtype=np.int64) for c in zip(*runs))
    return tile_runs((a0, a1, r0, r1), n_agent, n_reference, min_tokens)


def tile_runs(columns: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray], n_agent: int, n_reference: int,
              min_tokens: int = MIN_TILE_TOKENS) -> list[Tile]:
    """Greedy string tiling of maximal runs (Wise 1993): the tiles of :func:`find_tiles`.

    Parameters
    ----------
    columns : tuple of four ndarray of int64
        The runs ``(a0, a1, r0, r1)``, longest first (:func:`_maximal_run_columns`).
    n_agent, n_reference : int
        Tokens of each file.
    min_tokens : int
        Shortest tile kept.

    Returns
    -------
    list of Tile
        Sorted by agent position, then reference position.
    """
    used_a = bytearray(n_agent)
    used_r = bytearray(n_reference)
    tiles: list[Tile] = []
    pending: list[tuple[int, int, int, int, int]] = []  # free stretches of runs, a heap
    runs: list[tuple[int, int, int, int, int]] = []  # the next runs as tuples, from `done` on
    done, at, count = 0, 0, int(columns[0].size)
    misses, screen_after = 0, _SCREEN_AFTER
    while done + at < count or pending:
        if misses >= screen_after and count - done - at > screen_after:
            # Most runs of repetitive code end up inside tiles taken before them: drop, in one
            # pass over the arrays, the runs that can no longer yield a tile.
            left = _screen(columns, done + at, used_a, used_r, min_tokens)
            if left.size * 4 > (count - done - at) * 3:
                screen_after *= 2
            columns = tuple(c[left] for c in columns)  # type: ignore[assignment]
            runs, done, at, count, misses = [], 0, 0, int(left.size), 0
            continue
        if at >= len(runs) and done + at < count:
            done += at
            runs = _run_tuples(tuple(c[done : done + _CHUNK] for c in columns))  # type: ignore[arg-type]
            at = 0
        if pending and (at >= len(runs) or pending[0] < runs[at]):
            _, a0, a1, r0, r1 = heapq.heappop(pending)
        else:
            _, a0, a1, r0, r1 = runs[at]
            at += 1
        if used_a.find(1, a0, a1) < 0 and used_r.find(1, r0, r1) < 0:
            length = a1 - a0
            used_a[a0:a1] = _ONES[:length] if length <= len(_ONES) else b"\x01" * length
            used_r[r0:r1] = _ONES[:length] if length <= len(_ONES) else b"\x01" * length
            tiles.append(Tile(agent_start=a0, agent_stop=a1, reference_start=r0, reference_stop=r1))
            misses = 0
            continue
        misses += 1
        if used_a.find(0, a0, a1) < 0 or used_r.find(0, r0, r1) < 0:
            continue  # wholly taken on one side: nothing of it competes again
        # Part of the run is taken by a longer tile: its free stretches compete again. The
        # stretches are found with `find` on both sides (repetitive code yields thousands of
        # mostly covered runs; stepping over their tokens one by one cost most of the time).
        x, length = 0, a1 - a0
        while x < length:
            x = _next_free(used_a, used_r, a0, r0, x, length)
            if x >= length:
                break
            taken_a = used_a.find(1, a0 + x, a1)
            taken_r = used_r.find(1, r0 + x, r1)
            y = min(length if taken_a < 0 else taken_a - a0, length if taken_r < 0 else taken_r - r0)
            if y - x >= min_tokens:
                heapq.heappush(pending, (-(y - x), a0 + x, a0 + y, r0 + x, r0 + y))
            x = y
    tiles.sort(key=lambda t: (t.agent_start, t.reference_start))
    return tiles


def _free_windows(used: bytearray, width: int) -> np.ndarray:
    """``out[i]``: how many of the positions ``0 .. i - 1`` start ``width`` tokens in a row free."""
    taken = np.concatenate(([0], np.cumsum(np.frombuffer(used, dtype=np.uint8), dtype=np.int64)))
    free = (taken[width:] - taken[:-width]) == 0
    return np.concatenate(([0], np.cumsum(free, dtype=np.int64)))


def _screen(columns: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray], at: int, used_a: bytearray,
            used_r: bytearray, min_tokens: int) -> np.ndarray:
    """Indices (``>= at``, in order) of the runs that may still yield a tile.

    A run yields a tile, now or from one of its free stretches later, only where ``min_tokens``
    tokens in a row are free on both sides; tokens once taken stay taken, so a run whose agent
    range or reference range holds no ``min_tokens`` free tokens in a row now never will, and
    looking at it later would change nothing. Those runs are dropped; the others keep their order.
    """
    a0, a1, r0, r1 = (c[at:] for c in columns)
    windows_a = _free_windows(used_a, min_tokens)
    windows_r = _free_windows(used_r, min_tokens)
    # a window starting at s lies in [start, stop) when start <= s <= stop - min_tokens
    alive = (windows_a[a1 - min_tokens + 1] > windows_a[a0]) & (windows_r[r1 - min_tokens + 1] > windows_r[r0])
    return np.flatnonzero(alive) + at


def _next_free(used_a: bytearray, used_r: bytearray, a0: int, r0: int, x: int, length: int) -> int:
    """The first offset ``>= x`` (below ``length``) free on both sides of a run starting at
    ``a0``/``r0``, or ``length`` when there is none."""
    while x < length:
        free_a = used_a.find(0, a0 + x, a0 + length)
        if free_a < 0:
            return length
        free_r = used_r.find(0, r0 + free_a - a0, r0 + length)
        if free_r < 0:
            return length
        if free_r - r0 == free_a - a0:
            return free_a - a0
        x = free_r - r0
    return length
