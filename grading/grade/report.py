"""The grade of one submission, in MLE-bench's report form."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Mapping

from mleaudit.grading.medals import Medal, MedalThresholds
from mleaudit.grading.mlebench_divergence.records import Divergence


@dataclass(frozen=True, slots=True, kw_only=True)
class GradeReport:
    """The grade of one submission for one competition.

    Attributes
    ----------
    competition_id : str
        The competition.
    submission_path : str
        The submission file as given.
    submission_exists : bool
        The path is an existing ``.csv`` file (MLE-bench's rule).
    valid_submission : bool
        It passed validation (MLE-bench's ``valid_submission``); it then has a score unless its
        metric is undefined for it.
    score : float or None
        Rounded to 5 decimals; ``None`` unless ``valid_submission``, and for a valid submission
        whose metric is undefined (:class:`~mleaudit.grading.errors.UndefinedScore`).
    error : str or None
        Why the submission is missing or invalid, or why a valid one has no score; ``None``
        when it has one.
    medal : Medal
        Medal earned (``NONE`` when none or invalid).
    above_median : bool
        Strictly better than the leaderboard median.
    thresholds : MedalThresholds
        Leaderboard thresholds and direction.
    created_at : datetime.datetime
        When the report was made (UTC).
    leaderboard_source : str
        ``kaggle`` or ``reference-baselines``.
    mlebench_divergence : tuple of mleaudit.grading.mlebench_divergence.Divergence
        Where MLE-bench's own grader would grade this file differently: each looseness of its
        grader (the competition's ``mlebench_looseness``) the file triggers, with MLE-bench's
        would-be outcome against this grade. Empty when there is none.
    mlebench_divergence_skipped : str or None
        Why the file could not be checked for them (``None`` when it was, or when the
        competition's grader is strict or there is no file).
    """

    competition_id: str
    submission_path: str
    submission_exists: bool
    valid_submission: bool
    score: float | None
    error: str | None
    medal: Medal
    above_median: bool
    thresholds: MedalThresholds
    created_at: datetime
    leaderboard_source: str
    mlebench_divergence: tuple[Divergence, ...] = ()
    mlebench_divergence_skipped: str | None = None

    @property
    def gold_medal(self) -> bool:
        return self.medal is Medal.GOLD

    @property
    def silver_medal(self) -> bool:
        return self.medal is Medal.SILVER

    @property
    def bronze_medal(self) -> bool:
        return self.medal is Medal.BRONZE

    @property
    def any_medal(self) -> bool:
        return self.medal.is_medal

    @property
    def is_lower_better(self) -> bool:
        return not self.thresholds.higher_is_better

    def to_dict(self) -> dict[str, Any]:
        """MLE-bench ``CompetitionReport`` fields plus ``error``, ``leaderboard_source`` and the divergences.

        Returns
        -------
        dict
            JSON-ready: thresholds as floats, ``created_at`` in ISO 8601;
            ``mlebench_divergence`` a list of :meth:`Divergence.to_dict` records and
            ``mlebench_divergence_skipped`` why they were not looked for (or ``None``).
        """
        return {
            "competition_id": self.competition_id,
            "score": None if self.score is None else float(self.score),
            "gold_threshold": float(self.thresholds.gold),
            "silver_threshold": float(self.thresholds.silver),
            "bronze_threshold": float(self.thresholds.bronze),
            "median_threshold": float(self.thresholds.median),
            "any_medal": self.any_medal,
            "gold_medal": self.gold_medal,
            "silver_medal": self.silver_medal,
            "bronze_medal": self.bronze_medal,
            "above_median": bool(self.above_median),
            "submission_exists": bool(self.submission_exists),
            "valid_submission": bool(self.valid_submission),
            "is_lower_better": self.is_lower_better,
            "created_at": self.created_at.isoformat(),
            "submission_path": self.submission_path,
            "error": self.error,
            "leaderboard_source": self.leaderboard_source,
            "mlebench_divergence": [d.to_dict() for d in self.mlebench_divergence],
            "mlebench_divergence_skipped": self.mlebench_divergence_skipped,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, n_teams: int = 0) -> "GradeReport":
        """Rebuild a report from :meth:`to_dict` output (or an MLE-bench report dict).

        Parameters
        ----------
        data : mapping
            The report fields; ``error``, ``leaderboard_source`` and the divergence fields may be
            absent (MLE-bench reports), in which case they become ``None``, ``"kaggle"`` and empty.
        n_teams : int
            Number of leaderboard teams, which the dict form does not carry.
        """
        medal = Medal.NONE
        for candidate, key in ((Medal.GOLD, "gold_medal"), (Medal.SILVER, "silver_medal"), (Medal.BRONZE, "bronze_medal")):
            if data.get(key):
                medal = candidate
                break
        score = data.get("score")
        return cls(
            competition_id=str(data["competition_id"]),
            submission_path=str(data["submission_path"]),
            submission_exists=bool(data["submission_exists"]),
            valid_submission=bool(data["valid_submission"]),
            score=None if score is None else float(score),
            error=data.get("error"),
            medal=medal,
            above_median=bool(data["above_median"]),
            thresholds=MedalThresholds(
                gold=float(data["gold_threshold"]),
                silver=float(data["silver_threshold"]),
                bronze=float(data["bronze_threshold"]),
                median=float(data["median_threshold"]),
                n_teams=n_teams,
                higher_is_better=not bool(data["is_lower_better"]),
            ),
            created_at=datetime.fromisoformat(str(data["created_at"])),
            leaderboard_source=str(data.get("leaderboard_source", "kaggle")),
            mlebench_divergence=tuple(Divergence.from_dict(d) for d in data.get("mlebench_divergence") or ()),
            mlebench_divergence_skipped=data.get("mlebench_divergence_skipped"),
        )
