"""Kaggle medal thresholds and awards, exactly as MLE-bench computes them.

Kaggle's progression system gives medals by leaderboard position, with tiers that depend on
the number of teams ``n``:

==============  =====================  ===================  ===================
teams           gold                   silver               bronze
==============  =====================  ===================  ===================
1 - 99          top 10 %               top 20 %             top 40 %
100 - 249       top 10 (positions)     top 20 %             top 40 %
250 - 999       top 10 + 0.2 % of n    top 50               top 100
1000 and more   top 10 + 0.2 % of n    top 5 %              top 10 %
==============  =====================  ===================  ===================

Percentages are floored to a whole position and never below position 1. A threshold is the
score of the team at that position; a submission earns the best medal whose threshold it
reaches (ties count). "Above median" compares strictly with the median of all leaderboard
scores.

References
----------
Kaggle, "Kaggle Progression System", https://www.kaggle.com/progression
Chan et al., "MLE-bench: Evaluating Machine Learning Agents on Machine Learning
Engineering", 2024 (``mlebench/grade_helpers.py``, ``Grader.rank_score``).
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass

import numpy as np

from mleaudit.grading.leaderboard import Leaderboard

__all__ = ["Medal", "MedalThresholds", "medal_positions", "medal_thresholds", "award_medal", "is_above_median"]


class Medal(enum.Enum):
    """The medal a score earns; ``NONE`` when it earns none."""

    GOLD = "gold"
    SILVER = "silver"
    BRONZE = "bronze"
    NONE = "none"

    @classmethod
    def parse(cls, value: "str | Medal") -> "Medal":
        """Return the member for a lower-case name such as ``"gold"``.

        Raises
        ------
        ValueError
            If ``value`` names no medal.
        """
        if isinstance(value, cls):
            return value
        try:
            return cls(str(value).strip().lower())
        except ValueError:
            raise ValueError(f"unknown medal {value!r}; expected one of: gold, silver, bronze, none") from None

    @property
    def is_medal(self) -> bool:
        """True for gold, silver and bronze."""
        return self is not Medal.NONE


@dataclass(frozen=True, slots=True, kw_only=True)
class MedalThresholds:
    """Scores needed for each medal on one leaderboard.

    Attributes
    ----------
    gold, silver, bronze : float
        Score of the team at the tier's last medal position (reaching it earns the medal).
    median : float
        Median of all leaderboard scores (a score must beat it strictly to be above median).
    n_teams : int
        Number of teams on the leaderboard.
    higher_is_better : bool
        Direction used for comparisons.
    """

    gold: float
    silver: float
    bronze: float
    median: float
    n_teams: int
    higher_is_better: bool

    def to_dict(self) -> dict[str, float | int | bool]:
        """Plain JSON-ready mapping of the fields."""
        return {
            "gold": self.gold,
            "silver": self.silver,
            "bronze": self.bronze,
            "median": self.median,
            "n_teams": self.n_teams,
            "higher_is_better": self.higher_is_better,
        }


def medal_positions(n_teams: int) -> tuple[int, int, int]:
    """Last leaderboard position (1-based) that earns gold, silver and bronze.

    Parameters
    ----------
    n_teams : int
        Number of teams, >= 1.

    Returns
    -------
    tuple of int
        ``(gold, silver, bronze)`` positions.

    Raises
    ------
    ValueError
        If ``n_teams`` < 1.

    Examples
    --------
    >>> medal_positions(99), medal_positions(100), medal_positions(250), medal_positions(1000)
    ((9, 19, 39), (10, 20, 40), (10, 50, 100), (12, 50, 100))
    """
    if n_teams < 1:
        raise ValueError("a leaderboard needs at least one team to award medals")
    if n_teams < 100:
        return max(1, int(n_teams * 0.1)), max(1, int(n_teams * 0.2)), max(1, int(n_teams * 0.4))
    if n_teams < 250:
        return 10, max(1, int(n_teams * 0.2)), max(1, int(n_teams * 0.4))
    gold = 10 + int(n_teams * 0.002)
    if n_teams < 1000:
        return gold, 50, 100
    return gold, max(1, int(n_teams * 0.05)), max(1, int(n_teams * 0.1))


def medal_thresholds(leaderboard: Leaderboard, higher_is_better: bool) -> MedalThresholds:
    """Medal thresholds for a leaderboard (Kaggle progression tiers).

    Parameters
    ----------
    leaderboard : Leaderboard
        Best first.
    higher_is_better : bool
        The competition's declared direction.

    Returns
    -------
    MedalThresholds
        Scores at the gold, silver and bronze positions of :func:`medal_positions`, and the
        median of all scores (teams without a score skipped).

    Examples
    --------
    >>> from pathlib import Path
    >>> board = Leaderboard(path=Path("lb.csv"), scores=tuple(float(s) for s in range(10, 0, -1)))
    >>> t = medal_thresholds(board, higher_is_better=True)
    >>> t.gold, t.silver, t.bronze, t.median
    (10.0, 9.0, 7.0, 5.5)
    """
    gold, silver, bronze = medal_positions(leaderboard.n_teams)
    scored = np.array([s for s in leaderboard.scores if not math.isnan(s)], dtype=float)
    return MedalThresholds(
        gold=float(leaderboard.score_at(gold)),
        silver=float(leaderboard.score_at(silver)),
        bronze=float(leaderboard.score_at(bronze)),
        median=float(np.median(scored)),
        n_teams=leaderboard.n_teams,
        higher_is_better=higher_is_better,
    )


def _reaches(score: float, threshold: float, higher_is_better: bool) -> bool:
    return score >= threshold if higher_is_better else score <= threshold


def award_medal(score: float | None, thresholds: MedalThresholds) -> Medal:
    """The best medal ``score`` reaches.

    Parameters
    ----------
    score : float or None
        The submission's score; ``None`` for an invalid or missing submission.
    thresholds : MedalThresholds
        From :func:`medal_thresholds`.

    Returns
    -------
    Medal
        ``GOLD`` if the score reaches the gold threshold (ties count), else ``SILVER``, else
        ``BRONZE``, else ``NONE`` (always ``NONE`` for ``None`` or NaN).

    Examples
    --------
    >>> t = MedalThresholds(gold=0.9, silver=0.8, bronze=0.7, median=0.5, n_teams=50, higher_is_better=True)
    >>> award_medal(0.9, t), award_medal(0.75, t), award_medal(0.6, t)
    (<Medal.GOLD: 'gold'>, <Medal.BRONZE: 'bronze'>, <Medal.NONE: 'none'>)
    """
    if score is None or math.isnan(score):
        return Medal.NONE
    hib = thresholds.higher_is_better
    if _reaches(score, thresholds.gold, hib):
        return Medal.GOLD
    if _reaches(score, thresholds.silver, hib):
        return Medal.SILVER
    if _reaches(score, thresholds.bronze, hib):
        return Medal.BRONZE
    return Medal.NONE


def is_above_median(score: float | None, thresholds: MedalThresholds) -> bool:
    """Whether ``score`` strictly beats the leaderboard median (False for ``None``)."""
    if score is None or math.isnan(score):
        return False
    return score > thresholds.median if thresholds.higher_is_better else score < thresholds.median
