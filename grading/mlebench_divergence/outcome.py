"""Outcomes compared: the checked grade, scores rounded, medals awarded, outcomes in words."""

from __future__ import annotations

import logging
import math

import pandas as pd

from mleaudit.grading.errors import GradingError, InvalidSubmission, UndefinedScore
from mleaudit.grading.medals import Medal, MedalThresholds, award_medal
from mleaudit.grading.mlebench_divergence.records import CheckedGrade
from mleaudit.grading.spec import CompetitionSpec

# The package's logger, under the package's name.
logger = logging.getLogger(__package__)


def _rounded(score: float) -> float:
    from mleaudit.grading.grade.scoring import round_score  # grade's __init__ imports this package

    return round_score(score)


def _outcome_text(valid: bool | None, score: float | None, medal: Medal | None, *, raw: float | None = None) -> str:
    if valid is None:
        return "not computed"
    if not valid:
        return "invalid"
    if score is None:
        if raw is not None and math.isinf(raw):
            return f"valid, score {'+' if raw > 0 else '-'}inf, no medal"
        return "valid, no score (undefined), no medal"
    medal_text = "" if medal is None else (f", {medal.value} medal" if medal.is_medal else ", no medal")
    return f"valid, score {score}{medal_text}"


def _medal(score: float | None, thresholds: MedalThresholds | None) -> Medal | None:
    if thresholds is None:
        return None
    return award_medal(score, thresholds)


def _checked_grade(submission: pd.DataFrame, answers: pd.DataFrame, spec: CompetitionSpec) -> CheckedGrade:
    from mleaudit.grading.grade.scoring import score_spec_frames

    try:
        return CheckedGrade(valid=True, score=_rounded(score_spec_frames(submission.copy(), answers.copy(), spec)))
    except UndefinedScore as exc:
        return CheckedGrade(valid=True, score=None, error=str(exc))
    except InvalidSubmission as exc:
        return CheckedGrade(valid=False, score=None, error=str(exc))


def _thresholds(spec: CompetitionSpec) -> MedalThresholds | None:
    if not spec.has_leaderboard:
        return None
    from mleaudit.grading.leaderboard import load_leaderboard
    from mleaudit.grading.medals import medal_thresholds

    try:
        return medal_thresholds(load_leaderboard(spec.leaderboard_path), spec.metric.higher_is_better)
    except GradingError as exc:
        logger.info("no medal thresholds for %s: %s", spec.id, exc)
        return None
