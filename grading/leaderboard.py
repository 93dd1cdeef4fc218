"""Competition leaderboards in MLE-bench's ``leaderboard.csv`` format.

The file has one row per team, best first, with the columns of Kaggle's leaderboard API as
MLE-bench stores them: ``scoreNullable,teamId,hasTeamName,submissionDate,score,hasScore``.
Only ``score`` is used for medals; the number of teams is the number of rows (teams without
a score still count, as in MLE-bench). The direction of a score is declared by the
competition's config; :func:`check_direction` only cross-checks it against the order here.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from mleaudit.grading.errors import ConfigError

__all__ = ["LEADERBOARD_COLUMNS", "Leaderboard", "load_leaderboard", "check_direction"]

#: Column order of MLE-bench's leaderboard.csv files.
LEADERBOARD_COLUMNS = ("scoreNullable", "teamId", "hasTeamName", "submissionDate", "score", "hasScore")


@dataclass(frozen=True, slots=True, kw_only=True)
class Leaderboard:
    """A competition's final leaderboard.

    Attributes
    ----------
    path : pathlib.Path
        The file it was read from.
    scores : tuple of float
        ``score`` column, in file order (best first); ``nan`` for a team without a score.
    """

    path: Path
    scores: tuple[float, ...]

    @property
    def n_teams(self) -> int:
        """Number of teams (rows), the quantity Kaggle's medal tiers are based on."""
        return len(self.scores)

    def score_at(self, position: int) -> float:
        """The score of the team at 1-based ``position``.

        Raises
        ------
        IndexError
            If ``position`` is outside ``1 .. n_teams``.
        """
        if position < 1 or position > len(self.scores):
            raise IndexError(f"position {position} is outside the leaderboard (1..{len(self.scores)})")
        return self.scores[position - 1]


def load_leaderboard(path: str | os.PathLike[str]) -> Leaderboard:
    """Read a ``leaderboard.csv``.

    Parameters
    ----------
    path : path-like
        A CSV with at least a ``score`` column (MLE-bench's columns are expected but only
        ``score`` is required).

    Returns
    -------
    Leaderboard
        Scores in file order.

    Raises
    ------
    ConfigError
        If the file is missing or unreadable, has no ``score`` column, has no rows, or holds
        a score that is not a number (the message names the file and row).
    """
    path = Path(path)
    try:
        frame = pd.read_csv(path, dtype={"score": str})
    except (OSError, pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        raise ConfigError(f"leaderboard {path}: cannot be read: {exc}") from None
    if "score" not in frame.columns:
        raise ConfigError(f"leaderboard {path}: no 'score' column (columns: {', '.join(map(str, frame.columns))})")
    if frame.empty:
        raise ConfigError(f"leaderboard {path}: no teams")
    scores: list[float] = []
    for row, text in enumerate(frame["score"].tolist(), start=1):
        if text is None or (isinstance(text, float) and math.isnan(text)):
            scores.append(math.nan)
            continue
        try:
            scores.append(float(text))
        except ValueError:
            raise ConfigError(f"leaderboard {path}: row {row}: score {text!r} is not a number") from None
    if all(math.isnan(s) for s in scores):
        raise ConfigError(f"leaderboard {path}: no team has a score")
    return Leaderboard(path=path, scores=tuple(scores))


def check_direction(leaderboard: Leaderboard, higher_is_better: bool) -> None:
    """Cross-check a declared score direction against the leaderboard's order.

    The leaderboard is listed best first, so its first scored team should not be worse
    than its last one. This is a sanity check on the config only; the direction used for
    medals always comes from the config (MLE-bench infers it from this order instead).

    Parameters
    ----------
    leaderboard : Leaderboard
        Best first.
    higher_is_better : bool
        The direction the competition's config declares.

    Raises
    ------
    ConfigError
        If the first and last scores are ordered the other way.
    """
    scored = [s for s in leaderboard.scores if not math.isnan(s)]
    top, bottom = scored[0], scored[-1]
    if (higher_is_better and top < bottom) or (not higher_is_better and top > bottom):
        declared = "higher_is_better: true" if higher_is_better else "higher_is_better: false"
        raise ConfigError(
            f"leaderboard {leaderboard.path}: first score {top!r} and last score {bottom!r} contradict "
            f"the declared {declared}"
        )
