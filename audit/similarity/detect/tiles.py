"""Tiles: maximal runs of equal tokens shared by two files, chosen longest first and never
overlapping (greedy string tiling, Wise 1993)."""

from __future__ import annotations

import heapq
from dataclasses import dataclass

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


def _maximal_runs(agent: Profile, reference: Profile, min_tokens: int = MIN_TILE_TOKENS
                  ) -> list[tuple[int, int, int, int, int]]:
    """Maximal equal runs of at least ``min_tokens`` tokens, as ``(-length, a0, a1, r0, r1)``,
    longest first (ties: by agent start, then reference start).

    Seeds are the token 6-grams both files share (by key); a seed found more than
    :data:`MAX_SEED_OCCURRENCES` times in the reference is a repetition and seeds nothing.
    Consecutive seeds on one diagonal (the same offset between the files) make one run.
    """
    seeds_a, seeds_r = agent.seed_keys(), reference.seed_keys()
    if not seeds_a.size or not seeds_r.size:
        return []
    order = np.argsort(seeds_r, kind="stable")
    sorted_r = seeds_r[order]
    low = np.searchsorted(sorted_r, seeds_a, side="left")
    high = np.searchsorted(sorted_r, seeds_a, side="right")
    found = high - low
    keep = (found > 0) & (found <= MAX_SEED_OCCURRENCES)
    if not keep.any():
        return []
    counts = found[keep]
    agent_at = np.repeat(np.flatnonzero(keep), counts)
    # position of each pair in `sorted_r`: the group's first index plus a running offset
    firsts = np.repeat(low[keep], counts)
    offsets = np.arange(counts.sum()) - np.repeat(np.cumsum(counts) - counts, counts)
    reference_at = order[firsts + offsets]
    diagonal = agent_at - reference_at
    by = np.lexsort((agent_at, diagonal))
    agent_at, diagonal = agent_at[by], diagonal[by]
    breaks = np.flatnonzero((np.diff(diagonal) != 0) | (np.diff(agent_at) != 1)) + 1
    starts = np.concatenate(([0], breaks))
    stops = np.concatenate((breaks, [agent_at.size])) - 1
    a0 = agent_at[starts]
    a1 = agent_at[stops] + _SEED
    r0 = a0 - diagonal[starts]
    r1 = a1 - diagonal[starts]
    long_enough = (a1 - a0) >= min_tokens
    a0, a1, r0, r1 = a0[long_enough], a1[long_enough], r0[long_enough], r1[long_enough]
    # longest first; ties by agent start, then reference start
    by = np.lexsort((r1, r0, a1, a0, a0 - a1))
    return list(zip((a0 - a1)[by].tolist(), a0[by].tolist(), a1[by].tolist(), r0[by].tolist(), r1[by].tolist()))


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
    return _greedy_tiles(_maximal_runs(agent, reference, min_tokens), len(agent.ids), len(reference.ids), min_tokens)


def _greedy_tiles(runs: list[tuple[int, int, int, int, int]], n_agent: int, n_reference: int,
                  min_tokens: int = MIN_TILE_TOKENS) -> list[Tile]:
    used_a = bytearray(n_agent)
    used_r = bytearray(n_reference)
    tiles: list[Tile] = []
    pending: list[tuple[int, int, int, int, int]] = []  # free stretches of runs, a heap
    at, count = 0, len(runs)
    while at < count or pending:
        if pending and (at >= count or pending[0] < runs[at]):
            _, a0, a1, r0, r1 = heapq.heappop(pending)
        else:
            _, a0, a1, r0, r1 = runs[at]
            at += 1
        if used_a.find(1, a0, a1) < 0 and used_r.find(1, r0, r1) < 0:
            length = a1 - a0
            used_a[a0:a1] = _ONES[:length] if length <= len(_ONES) else b"\x01" * length
            used_r[r0:r1] = _ONES[:length] if length <= len(_ONES) else b"\x01" * length
            tiles.append(Tile(agent_start=a0, agent_stop=a1, reference_start=r0, reference_stop=r1))
            continue
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
