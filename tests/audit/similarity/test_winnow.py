"""Token hashes, rolling hashes and winnowing against values Dolos 3.5.1 computes."""

from __future__ import annotations

import random

import numpy as np
import pytest

from mleaudit.audit.similarity.winnow import (
    HASH_MOD,
    ROLLING_HASH_BASE,
    Fingerprint,
    fingerprint_tokens,
    hash_token,
    rolling_hashes,
    winnow,
)
from mleaudit.audit.similarity.winnow.fingerprints import _make_fingerprints
from mleaudit.audit.similarity.winnow.int_pool import _int_objects
from mleaudit.audit.similarity.winnow.selection import _winnow_reference

# Values printed by @dodona/dolos-core 1.2.1 (TokenHash.hashToken).
DOLOS_TOKEN_HASHES = {
    "(": 29891480,
    ")": 30638767,
    "module": 24767747,
    "function_definition": 23515470,
    "é": 6345906,
    "😀": 22847370,  # two UTF-16 code units
    "": 0,
}


@pytest.mark.parametrize(("token", "expected"), sorted(DOLOS_TOKEN_HASHES.items()))
def test_hash_token_matches_dolos(token: str, expected: int) -> None:
    assert hash_token(token) == expected


def test_hash_token_by_hand() -> None:
    assert hash_token("a") == (97 * 747287) % HASH_MOD
    assert hash_token("ab") == (((97 * 747287) % HASH_MOD + 98) * 747287) % HASH_MOD


def test_rolling_hashes_match_dolos() -> None:
    # RollingHash(3).nextHash over [5, 17, 33554392, 8, 1]; the first two outputs are partial.
    assert rolling_hashes([5, 17, 33554392, 8, 1], 3) == [14155808, 16252975, 4718599]


def test_rolling_hash_equals_direct_polynomial() -> None:
    rng = random.Random(7)
    values = [rng.randrange(HASH_MOD) for _ in range(60)]
    k = 5
    direct = [
        sum(values[i + j] * pow(ROLLING_HASH_BASE, k - 1 - j, HASH_MOD) for j in range(k)) % HASH_MOD
        for i in range(len(values) - k + 1)
    ]
    assert rolling_hashes(values, k) == direct


def test_rolling_hashes_short_input_and_bad_k() -> None:
    assert rolling_hashes([1, 2], 3) == []
    with pytest.raises(ValueError, match="k-gram length must be >= 1"):
        rolling_hashes([1], 0)


def test_fingerprints_match_dolos_winnow_filter() -> None:
    # WinnowFilter(4, 3).fingerprints(tokens) in Dolos: [hash, start, stop].
    tokens = "( module ( expression_statement ( call ( identifier ) ( argument_list ( integer ) ) ) ) ) ( a ) ( b ) ( c )"
    expected = [
        [8770691, 0, 3], [15251192, 1, 4], [8332367, 4, 7], [7667014, 7, 10], [4890105, 10, 13],
        [4598943, 12, 15], [27854253, 15, 18], [6133962, 16, 19], [11640626, 17, 20], [8847490, 20, 23],
        [6054354, 23, 26],
    ]
    got = fingerprint_tokens(tokens.split(" "), 4, 3)
    assert [[f.hash, f.start, f.stop] for f in got] == expected
    assert [f.index for f in got] == list(range(len(expected)))


def test_winnow_by_hand() -> None:
    # window 3 over [5, 3, 4, 3, 9, 9, 1]: 5 (first window), 3, the later 3 (rightmost), 1.
    assert [(f.hash, f.start, f.stop) for f in winnow([5, 3, 4, 3, 9, 9, 1], 3, 2)] == [
        (5, 0, 1), (3, 1, 2), (3, 3, 4), (1, 6, 7)
    ]


def test_winnow_tie_with_newest_keeps_older_on_rescan() -> None:
    # The minimum at position 0 leaves the window at position 3, where positions 2 and 3
    # both hold 2. Dolos rescans starting from the newest and moves to an older slot that is
    # lower or equal, so position 2 is selected where "rightmost minimum" would pick 3.
    assert [(f.hash, f.start) for f in winnow([1, 3, 2, 2], 3, 1)] == [(1, 0), (2, 2)]


def _naive_winnow(values: list[int], window: int) -> list[tuple[int, int]]:
    """Dolos's selection rule written without a ring buffer."""
    selected: list[tuple[int, int]] = []
    current = None
    for p, value in enumerate(values):
        if current is None or current <= p - window:
            candidate = p
            if current is not None:
                for q in range(max(0, p - window + 1), p):
                    if values[q] <= values[candidate]:
                        candidate = q
            current = candidate
            selected.append((values[current], current))
        elif value <= values[current]:
            current = p
            selected.append((value, p))
    return selected


@pytest.mark.parametrize("window", [1, 2, 3, 5, 17])
def test_winnow_agrees_with_naive_rule_and_guarantee(window: int) -> None:
    rng = random.Random(window)
    for _ in range(50):
        values = [rng.randrange(6) for _ in range(rng.randrange(0, 80))]  # many ties
        got = winnow(values, window, 1)
        assert [(f.hash, f.start) for f in got] == _naive_winnow(values, window)
        chosen = {f.start for f in got}
        # Every full window holds a selected position whose value is the window minimum.
        for start in range(0, len(values) - window + 1):
            inside = [p for p in chosen if start <= p < start + window]
            assert inside and min(values[p] for p in inside) == min(values[start : start + window])


def test_winnow_bad_window() -> None:
    with pytest.raises(ValueError, match="window must be >= 1"):
        winnow([1, 2], 0, 1)


def test_fingerprints_are_deterministic_across_calls() -> None:
    tokens = ["(", "module", ")"] * 40
    assert fingerprint_tokens(tokens, 5, 4) == fingerprint_tokens(list(tokens), 5, 4)


@pytest.mark.parametrize("window", [1, 2, 4, 17, 40])
def test_fast_winnow_equals_dolos_loop(window: int) -> None:
    # The walk over candidates must select exactly what Dolos's ring-buffer loop selects,
    # ties included (few distinct values), with huge values and with values past int64.
    rng = random.Random(100 + window)
    pools = [range(3), range(HASH_MOD), [0, 5, 2**53 - 1, 2**53, 2**62], [-2, -1, 0, 1]]
    for trial in range(300):
        pool = pools[trial % len(pools)]
        values = [rng.choice(pool) if isinstance(pool, list) else rng.randrange(pool.start, pool.stop)
                  for _ in range(rng.randrange(0, 3 * window + 40))]
        expected = _winnow_reference(values, window)
        assert [f.start for f in winnow(values, window, 1)] == expected
        assert [f.hash for f in winnow(values, window, 1)] == [values[p] for p in expected]
    beyond = [2**70, 3, 2**70, 1, 1, 2**70]
    assert [f.start for f in winnow(beyond, 2, 1)] == _winnow_reference(beyond, 2)


def test_rolling_hash_of_long_kgrams_stays_exact() -> None:
    # k above the number of products summed between two reductions
    rng = random.Random(3)
    values = [rng.randrange(HASH_MOD) for _ in range(4200)]
    k = 4150
    weights = [pow(ROLLING_HASH_BASE, k - 1 - j, HASH_MOD) for j in range(k)]
    direct = [sum(v * w for v, w in zip(values[i : i + k], weights)) % HASH_MOD for i in range(len(values) - k + 1)]
    assert rolling_hashes(values, k) == direct


def test_rolling_hashes_reduce_out_of_range_input_like_python() -> None:
    values = [-5, 2**80, HASH_MOD + 7, 3]
    reduced = [v % HASH_MOD for v in values]
    assert rolling_hashes(values, 2) == rolling_hashes(reduced, 2)


def test_fingerprints_built_field_by_field_equal_constructed_ones() -> None:
    made = _make_fingerprints([7, 2**40], [0, 5], [22, 27], [0, 1])
    expected = [Fingerprint(hash=7, start=0, stop=22, index=0), Fingerprint(hash=2**40, start=5, stop=27, index=1)]
    assert made == expected
    assert [hash(f) for f in made] == [hash(f) for f in expected]
    assert [repr(f) for f in made] == [repr(f) for f in expected]
    with pytest.raises(AttributeError):
        made[0].hash = 3  # still frozen


def test_int_objects_share_small_values() -> None:
    values = np.array([1000, 70000, 1000, 2**40], dtype=np.int64)
    assert _int_objects(values[:3]) == [1000, 70000, 1000]
    first, _, again = _int_objects(values[:3])
    assert first is again
    assert _int_objects(values) == values.tolist()  # past the pool: plain ints
    assert _int_objects(np.zeros(0, dtype=np.int64)) == []
