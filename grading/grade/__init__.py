"""Grade a submission CSV into an MLE-bench-compatible grading report.

:func:`grade_submission` reads the submission and the private answers, validates and scores
the submission with the competition's metric, and places the score on the competition's
leaderboard. The report's :meth:`GradeReport.to_dict` has exactly the fields of MLE-bench's
``CompetitionReport`` plus ``error`` (why a submission is missing or invalid) and
``leaderboard_source``. A missing or invalid submission is a report with
``valid_submission: false`` and ``score: null``, never an exception and never a score of 0
that looks valid; only problems on the grader's side (unprepared data, a broken config or
answer key) raise.

Routine Listings
----------------
reading
    :func:`read_scoring_frames`: a submission and the answers read as the scoring path reads them.
scoring
    :data:`SCORE_DECIMALS`, :func:`round_score`, :func:`score_frames`, :func:`score_csv`,
    :func:`score_spec_frames`, :func:`score_submission`: validated scores, without medals.
report
    :class:`GradeReport`: one submission's grade, in MLE-bench's report form.
checking
    :class:`SubmissionCheck`, :func:`check_submission`, :func:`validate_submission`: the verdict
    on a file without its score.
totals
    :func:`grade_totals`, :func:`summarize_grades`: MLE-bench's aggregate counts.

:func:`grade_submission` itself lives here, in the package's ``__init__``, so that its
``__module__`` stays ``mleaudit.grading.grade``.

Notes
-----
Every name is re-exported here, so callers import from ``mleaudit.grading.grade``. Imports point
down the listing above: a module imports only modules listed before it, plus
``mleaudit.grading.validation``, ``metrics``, ``spec``, ``medals``, ``leaderboard``,
``mlebench_divergence``, ``csvscan`` and ``errors``; never ``mleaudit.audit`` or
``mleaudit.sandbox``, and no submodule imports this ``__init__``. A new field of the report goes
in ``report``; a new way to score goes in ``scoring``.
"""

from __future__ import annotations

import logging
import os
from datetime import datetime, timezone
from pathlib import Path

from mleaudit.grading.errors import InvalidSubmission, UndefinedScore
from mleaudit.grading.grade.checking import SubmissionCheck, check_submission, validate_submission
from mleaudit.grading.grade.reading import read_scoring_frames
from mleaudit.grading.grade.report import GradeReport
from mleaudit.grading.grade.scoring import (
    SCORE_DECIMALS,
    _answers_or_raise,
    _score,
    round_score,
    score_csv,
    score_frames,
    score_spec_frames,
    score_submission,
)
from mleaudit.grading.grade.totals import grade_totals, summarize_grades
from mleaudit.grading.leaderboard import load_leaderboard
from mleaudit.grading.medals import award_medal, is_above_median, medal_thresholds
from mleaudit.grading.mlebench_divergence import CheckedGrade, DivergenceCheck, find_mlebench_divergences
from mleaudit.grading.spec import CompetitionSpec

__all__ = [
    "SCORE_DECIMALS",
    "round_score",
    "GradeReport",
    "grade_submission",
    "score_submission",
    "score_frames",
    "score_csv",
    "read_scoring_frames",
    "score_spec_frames",
    "validate_submission",
    "check_submission",
    "SubmissionCheck",
    "grade_totals",
    "summarize_grades",
]

logger = logging.getLogger(__name__)


def grade_submission(
    submission_path: str | os.PathLike[str],
    spec: CompetitionSpec,
    data_dir: str | os.PathLike[str],
    *,
    created_at: datetime | None = None,
    divergences: bool = True,
) -> GradeReport:
    """Grade one submission CSV.

    Parameters
    ----------
    submission_path : path-like
        The submission; it need not exist (then ``submission_exists`` is false).
    spec : CompetitionSpec
        The competition.
    data_dir : path-like
        Prepared-data dir holding ``spec.answers``.
    created_at : datetime, optional
        Timestamp for the report (defaults to now, UTC); tests pass a fixed one.
    divergences : bool
        Also look for where MLE-bench's own grader would grade the file differently
        (:func:`mleaudit.grading.mlebench_divergence.find_mlebench_divergences`; it reads the file once
        more, and scores it once more when the file triggers a looseness of that grader).

    Returns
    -------
    GradeReport
        ``valid_submission`` and a rounded ``score`` when it scores; otherwise
        ``score=None`` and ``error`` saying why. Medals use the competition's leaderboard
        and declared direction. ``mlebench_divergence`` lists the looseness of MLE-bench's
        grader the file triggers.

    Raises
    ------
    DatasetNotPrepared
        If the answers file is missing (the message says to run ``mleaudit prepare -c ID``).
    ConfigError
        If the leaderboard or the answers file is broken.
    """
    data_dir = Path(data_dir)
    answers_path = _answers_or_raise(spec, data_dir)
    thresholds = medal_thresholds(load_leaderboard(spec.leaderboard_path), spec.metric.higher_is_better)
    path = Path(submission_path)
    exists = path.is_file() and path.suffix.lower() == ".csv"
    score: float | None = None
    error: str | None = None
    valid = False
    divergence = DivergenceCheck()
    if not path.exists():
        error = f"No submission file at {path}."
    elif not path.is_file():
        error = f"Submission path {path} is not a file."
    elif not exists:
        error = f"Submission file {path} is not a .csv file."
    else:
        try:
            score = round_score(_score(path, spec, answers_path))
            valid = True
        except UndefinedScore as exc:
            error, valid = str(exc), True
        except InvalidSubmission as exc:
            error = str(exc)
            logger.info("invalid submission %s for %s: %s", path, spec.id, error)
        if divergences:
            divergence = find_mlebench_divergences(path, spec, answers_path, thresholds=thresholds,
                                                   checked=CheckedGrade(valid=valid, score=score, error=error))
    return GradeReport(
        competition_id=spec.id,
        submission_path=str(submission_path),
        submission_exists=exists,
        valid_submission=valid,
        score=score,
        error=error,
        medal=award_medal(score, thresholds),
        above_median=is_above_median(score, thresholds),
        thresholds=thresholds,
        created_at=created_at or datetime.now(timezone.utc),
        leaderboard_source=spec.leaderboard_source,
        mlebench_divergence=divergence.records,
        mlebench_divergence_skipped=divergence.skipped,
    )


# Examples of the functions re-exported here run with this module's (``doctest.testmod``).
__test__ = {"round_score": round_score, "score_frames": score_frames}
