"""Token hashes, rolling hashes and winnowing against values Dolos 3.5.1 computes."""

from __future__ import annotations

import random

import pytest

from audit.similarity.winnow import (
    HASH_MOD,
    ROLLING_HASH_BASE,
    fingerprint_tokens,
    hash_token,
    rolling_hashes,
    winnow,
)

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
