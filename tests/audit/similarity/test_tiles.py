"""Greedy string tiling: the tiles of :func:`_greedy_tiles` equal those of the plain token-by-token
procedure on runs that overlap heavily (repetitive code), including the free stretches of runs that
longer tiles partly took."""

from __future__ import annotations

import heapq
import random

import pytest

from mleaudit.audit.similarity.detect import MIN_TILE_TOKENS, find_tiles, profile_code
from mleaudit.audit.similarity.detect.tiles import Tile, _greedy_tiles, _maximal_runs


def _plain_tiles(runs, n_agent, n_reference, min_tokens=MIN_TILE_TOKENS):
    """The procedure step by step: every token of a partly taken run is looked at."""
    used_a, used_r = [False] * n_agent, [False] * n_reference
    tiles, pending, at = [], [], 0
    while at < len(runs) or pending:
        if pending and (at >= len(runs) or pending[0] < runs[at]):
            _, a0, a1, r0, r1 = heapq.heappop(pending)
        else:
            _, a0, a1, r0, r1 = runs[at]
            at += 1
        if not any(used_a[a0:a1]) and not any(used_r[r0:r1]):
            used_a[a0:a1] = [True] * (a1 - a0)
            used_r[r0:r1] = [True] * (r1 - r0)
            tiles.append(Tile(agent_start=a0, agent_stop=a1, reference_start=r0, reference_stop=r1))
            continue
        x, length = 0, a1 - a0
        while x < length:
            if used_a[a0 + x] or used_r[r0 + x]:
                x += 1
                continue
            y = x
            while y < length and not used_a[a0 + y] and not used_r[r0 + y]:
                y += 1
            if y - x >= min_tokens:
                heapq.heappush(pending, (-(y - x), a0 + x, a0 + y, r0 + x, r0 + y))
            x = y
    return sorted(tiles, key=lambda t: (t.agent_start, t.reference_start))


def _random_runs(rng: random.Random, n_agent: int, n_reference: int, count: int):
    runs = set()
    while len(runs) < count:
        length = rng.randint(MIN_TILE_TOKENS, min(n_agent, n_reference, 40))
        a0, r0 = rng.randrange(n_agent - length + 1), rng.randrange(n_reference - length + 1)
        runs.add((-length, a0, a0 + length, r0, r0 + length))
    return sorted(runs)


@pytest.mark.parametrize("seed", range(40))
def test_random_overlapping_runs_give_the_tiles_of_the_plain_procedure(seed: int) -> None:
    rng = random.Random(seed)
    n_agent, n_reference = rng.randint(10, 120), rng.randint(10, 120)
    runs = _random_runs(rng, n_agent, n_reference, rng.randint(1, 60))
    assert _greedy_tiles(runs, n_agent, n_reference) == _plain_tiles(runs, n_agent, n_reference)


def test_repetitive_code_gives_the_tiles_of_the_plain_procedure() -> None:
    rng = random.Random(7)
    lines = [f"df['c{i % 5}'] = df['c{(i * 3) % 5}'].fillna({i % 3})\n" for i in range(60)]
    agent = profile_code("".join(rng.sample(lines, 50) + lines[:20]))
    reference = profile_code("".join(lines + rng.sample(lines, 30)))
    runs = _maximal_runs(agent, reference)
    assert len(runs) > 100, "the case must make many overlapping runs"
    tiles = find_tiles(agent, reference)
    assert tiles == _plain_tiles(runs, len(agent.ids), len(reference.ids))
    assert sum(t.length for t in tiles) > 0
