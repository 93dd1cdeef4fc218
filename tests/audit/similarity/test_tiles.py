"""Greedy string tiling: the tiles of :func:`_greedy_tiles` equal those of the plain token-by-token
procedure on runs that overlap heavily (repetitive code), including the free stretches of runs that
longer tiles partly took."""

from __future__ import annotations

import heapq
import random

import numpy as np
import pytest

from mleaudit.audit.similarity.detect import MIN_TILE_TOKENS, find_tiles, profile_code
from mleaudit.audit.similarity.detect import tiles as tiles_module
from mleaudit.audit.similarity.detect.constants import MAX_SEED_OCCURRENCES
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


@pytest.mark.parametrize("seed", range(12))
def test_many_runs_screened_in_bulk_give_the_tiles_of_the_plain_procedure(seed: int, monkeypatch) -> None:
    """Hundreds of heavily overlapping runs: the bulk screening of runs that can no longer yield a
    tile runs (counted) and changes nothing."""
    screened = []
    real = tiles_module._screen
    monkeypatch.setattr(tiles_module, "_screen", lambda *args: screened.append(1) or real(*args))
    rng = random.Random(1000 + seed)
    n_agent, n_reference = rng.randint(60, 300), rng.randint(60, 300)
    runs = _random_runs(rng, n_agent, n_reference, rng.randint(200, 400))
    assert _greedy_tiles(runs, n_agent, n_reference) == _plain_tiles(runs, n_agent, n_reference)
    assert screened, "the case must reach the bulk screening"


def test_repeated_blocks_screened_in_bulk_give_the_tiles_of_the_plain_procedure(monkeypatch) -> None:
    screened = []
    real = tiles_module._screen
    monkeypatch.setattr(tiles_module, "_screen", lambda *args: screened.append(1) or real(*args))
    block = "".join(f"x{i} = model.fit(X[{i}], y, epochs={i % 4})\n" for i in range(8))
    agent = profile_code(block * 6 + "print(x3)\n" + block[: len(block) // 2] * 3)
    reference = profile_code(block * 9 + block[len(block) // 3 :] * 4)
    runs = _maximal_runs(agent, reference)
    assert find_tiles(agent, reference) == _plain_tiles(runs, len(agent.ids), len(reference.ids))
    assert screened


def test_maximal_runs_are_the_diagonals_of_shared_seeds() -> None:
    """Every shared seed (6-gram held at most MAX_SEED_OCCURRENCES times by the reference) lies in
    exactly one run, on its diagonal; runs are maximal, longest first."""
    rng = random.Random(3)
    words = [f"v{i}" for i in range(6)]
    agent = profile_code("".join(f"{rng.choice(words)} = {rng.choice(words)} + 1\n" for _ in range(80)))
    reference = profile_code("".join(f"{rng.choice(words)} = {rng.choice(words)} + 1\n" for _ in range(90)))
    runs = _maximal_runs(agent, reference)
    seeds_a, seeds_r = agent.seed_keys().tolist(), reference.seed_keys().tolist()
    held = {key: [j for j, k in enumerate(seeds_r) if k == key] for key in set(seeds_r)}
    expected = set()
    for i, key in enumerate(seeds_a):
        places = held.get(key, [])
        if 0 < len(places) <= MAX_SEED_OCCURRENCES:
            expected.update((i, j) for j in places)
    covered = set()
    for negative, a0, a1, r0, r1 in runs:
        assert -negative == a1 - a0 == r1 - r0 >= MIN_TILE_TOKENS
        covered.update((a0 + x, r0 + x) for x in range(a1 - a0 - MIN_TILE_TOKENS + 1))
    assert covered == expected
    assert runs == sorted(runs)


def _same_columns(found, expected) -> bool:
    if found is None or expected is None:
        return found is None and expected is None
    return all(a.dtype == b.dtype and np.array_equal(a, b) for a, b in zip(found, expected))


@pytest.mark.parametrize("max_pairs", [1 << 20, 50])
def test_runs_against_many_references_equal_one_search_per_reference(max_pairs: int, monkeypatch) -> None:
    """One lookup for a block of references gives each reference's runs as its own search does,
    including seeds a reference repeats past MAX_SEED_OCCURRENCES, references without a shared
    seed, and (with a tiny budget) the fallback to one search per reference."""
    monkeypatch.setattr(tiles_module.RunFinder, "MAX_PAIRS", max_pairs)
    rng = random.Random(21)
    lines = [f"df['c{i % 7}'] = df['c{(i * 3) % 7}'].fillna({i % 4})\n" for i in range(40)]
    references = [profile_code("".join(rng.choice(lines) for _ in range(rng.randint(0, 60))), f"r{i}.py")
                  for i in range(14)]
    references.append(profile_code(lines[0] * 80, "repeats.py"))  # one seed far past the cap
    references.append(profile_code("print('nothing shared')\n", "alone.py"))
    finder = tiles_module.RunFinder(references)
    for agent_text in ("".join(rng.sample(lines, 25)), lines[0] * 5 + "".join(lines[5:9]), "x = 1\n", ""):
        agent = profile_code(agent_text, "agent.py")
        for ids in (list(range(len(references))), [15, 3, 14, 0], [7], [15]):
            found = finder.columns(agent, ids)
            assert len(found) == len(ids)
            for i, columns in zip(ids, found):
                assert _same_columns(columns, tiles_module._maximal_run_columns(agent, references[i]))
