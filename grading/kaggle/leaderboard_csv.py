"""A leaderboard CSV as Kaggle serves it, turned into MLE-bench's columns."""

from __future__ import annotations

import io

import pandas as pd

from mleaudit.grading.kaggle.errors import KaggleError
from mleaudit.grading.leaderboard import LEADERBOARD_COLUMNS


def leaderboard_from_kaggle_csv(data: bytes, *, source: str = "leaderboard") -> pd.DataFrame:
    """Convert a leaderboard CSV as Kaggle serves it to MLE-bench's columns.

    Parameters
    ----------
    data : bytes
        Kaggle's CSV: ``TeamId``, ``TeamName``, ``SubmissionDate`` or ``LastSubmissionDate``,
        ``Score`` (and columns that are dropped), one row per team, best first.
    source : str
        Name for error messages.

    Returns
    -------
    pandas.DataFrame
        Columns :data:`mleaudit.grading.leaderboard.LEADERBOARD_COLUMNS`, in Kaggle's row order.

    Raises
    ------
    KaggleError
        If a needed column is missing.

    Examples
    --------
    >>> csv = b"Rank,TeamId,TeamName,LastSubmissionDate,Score\\n1,7,a,2020-01-02 03:04:05,0.9\\n"
    >>> print(leaderboard_from_kaggle_csv(csv).to_csv(index=False), end="")
    scoreNullable,teamId,hasTeamName,submissionDate,score,hasScore
    0.9,7,True,2020-01-02 03:04:05,0.9,True
    """
    frame = pd.read_csv(io.BytesIO(data), dtype={"TeamName": str})
    date_column = next((c for c in ("SubmissionDate", "LastSubmissionDate") if c in frame.columns), None)
    missing = [c for c in ("TeamId", "Score") if c not in frame.columns] + ([] if date_column else ["SubmissionDate"])
    if missing:
        raise KaggleError(f"{source}: no column(s) {', '.join(missing)} (columns: {', '.join(map(str, frame.columns))})")
    score = pd.to_numeric(frame["Score"], errors="coerce")
    names = frame["TeamName"] if "TeamName" in frame.columns else pd.Series([""] * len(frame))
    table = pd.DataFrame(
        {
            "scoreNullable": score,
            "teamId": frame["TeamId"],
            "hasTeamName": names.fillna("").astype(str).str.len() > 0,
            "submissionDate": frame[date_column].astype(str),
            "score": score,
            "hasScore": score.notna(),
        }
    )
    return table[list(LEADERBOARD_COLUMNS)]
