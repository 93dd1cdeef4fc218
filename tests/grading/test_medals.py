"""Kaggle medal tiers at their boundaries, directions, ties and the strict median."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from mleaudit.grading.leaderboard import Leaderboard
from mleaudit.grading.medals import Medal, MedalThresholds, award_medal, is_above_median, medal_positions, medal_thresholds


def board(n: int, *, higher_is_better: bool = True) -> Leaderboard:
    """n teams whose score at position p is n + 1 - p (higher better) or p (lower better)."""
    scores = [float(n + 1 - p) if higher_is_better else float(p) for p in range(1, n + 1)]
    return Leaderboard(path=Path("leaderboard.csv"), scores=tuple(scores))


# (teams, gold position, silver position, bronze position), worked out from kaggle.com/progression.
BOUNDARIES = [
    (1, 1, 1, 1),
    (5, 1, 1, 2),
    (99, 9, 19, 39),
    (100, 10, 20, 40),
    (249, 10, 49, 99),
    (250, 10, 50, 100),
    (999, 11, 50, 100),
    (1000, 12, 50, 100),
    (2288, 14, 114, 228),
]


@pytest.mark.parametrize(("n", "gold", "silver", "bronze"), BOUNDARIES)
def test_positions_at_tier_boundaries(n: int, gold: int, silver: int, bronze: int) -> None:
    assert medal_positions(n) == (gold, silver, bronze)


@pytest.mark.parametrize(("n", "gold", "silver", "bronze"), BOUNDARIES)
@pytest.mark.parametrize("higher_is_better", [True, False])
def test_thresholds_are_scores_at_positions(n: int, gold: int, silver: int, bronze: int, higher_is_better: bool) -> None:
    lb = board(n, higher_is_better=higher_is_better)
    t = medal_thresholds(lb, higher_is_better)
    assert (t.gold, t.silver, t.bronze) == (lb.scores[gold - 1], lb.scores[silver - 1], lb.scores[bronze - 1])
    assert t.median == (n + 1) / 2
    assert t.n_teams == n
    assert t.higher_is_better is higher_is_better


@pytest.mark.parametrize(("n", "gold", "silver", "bronze"), BOUNDARIES)
def test_award_at_and_just_past_each_threshold(n: int, gold: int, silver: int, bronze: int) -> None:
    t = medal_thresholds(board(n), True)
    assert award_medal(t.gold, t) is Medal.GOLD  # a tie earns the medal
    if silver > gold:
        assert award_medal(t.gold - 0.5, t) is Medal.SILVER
        assert award_medal(t.silver, t) is Medal.SILVER
    if bronze > silver:
        assert award_medal(t.silver - 0.5, t) is Medal.BRONZE
        assert award_medal(t.bronze, t) is Medal.BRONZE
    assert award_medal(t.bronze - 0.5, t) is Medal.NONE


@pytest.mark.parametrize("n", [1, 99, 100, 249, 250, 999, 1000])
def test_lower_is_better_mirrors(n: int) -> None:
    t = medal_thresholds(board(n, higher_is_better=False), False)
    assert award_medal(t.gold, t) is Medal.GOLD
    assert award_medal(t.gold - 1, t) is Medal.GOLD
    assert award_medal(t.bronze + 0.5, t) is Medal.NONE
    assert is_above_median(t.median - 0.5, t)
    assert not is_above_median(t.median + 0.5, t)


def test_above_median_is_strict() -> None:
    t = medal_thresholds(board(10), True)
    assert t.median == 5.5
    assert not is_above_median(5.5, t)
    assert is_above_median(5.50001, t)
    assert not is_above_median(None, t)


def test_none_and_nan_earn_nothing() -> None:
    t = MedalThresholds(gold=0.9, silver=0.8, bronze=0.7, median=0.5, n_teams=50, higher_is_better=True)
    assert award_medal(None, t) is Medal.NONE
    assert award_medal(math.nan, t) is Medal.NONE
    assert not is_above_median(math.nan, t)


def test_teams_without_score_count_but_are_left_out_of_the_median() -> None:
    scores = (10.0, 9.0, 8.0, 7.0, 6.0, 5.0, 4.0, 3.0, 2.0, math.nan)
    t = medal_thresholds(Leaderboard(path=Path("lb.csv"), scores=scores), True)
    assert t.n_teams == 10
    assert (t.gold, t.silver, t.bronze) == (10.0, 9.0, 7.0)
    assert t.median == 6.0


def test_zero_teams_is_an_error() -> None:
    with pytest.raises(ValueError, match="at least one team"):
        medal_positions(0)


def test_medal_parse() -> None:
    assert Medal.parse("Gold") is Medal.GOLD
    assert Medal.parse(Medal.NONE) is Medal.NONE
    assert Medal.GOLD.is_medal and not Medal.NONE.is_medal
    with pytest.raises(ValueError, match="unknown medal 'platinum'"):
        Medal.parse("platinum")
