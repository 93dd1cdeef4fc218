"""Grade a submission CSV into an MLE-bench-compatible grading report.

:func:`grade_submission` reads the submission and the private answers, validates and scores
the submission with the competition's metric, and places the score on the competition's
leaderboard. The report's :meth:`GradeReport.to_dict` has exactly the fields of MLE-bench's
``CompetitionReport`` plus ``error`` (why a submission is missing or invalid) and
``leaderboard_source``. A missing or invalid submission is a report with
``valid_submission: false`` and ``score: null``, never an exception and never a score of 0
that looks valid; only problems on the grader's side (unprepared data, a broken config or
answer key) raise.
"""

from __future__ import annotations

import functools
import logging
import math
import os
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np
import pandas as pd

from mleaudit.grading.csvscan import DEFAULT_CSV_LIMITS, TEXT_CSV_LIMITS, CsvLimits
from mleaudit.grading.errors import ConfigError, DatasetNotPrepared, InvalidSubmission, UndefinedScore
from mleaudit.grading.leaderboard import load_leaderboard
from mleaudit.grading.medals import Medal, MedalThresholds, award_medal, is_above_median, medal_thresholds
from mleaudit.grading.metrics import METRICS, Metric, PredictionError, TargetKind, describe_row
from mleaudit.grading.metrics.base import submission_row
from mleaudit.grading.mlebench_divergence import CheckedGrade, Divergence, DivergenceCheck, find_mlebench_divergences
from mleaudit.grading.spec import CompetitionSpec
from mleaudit.grading.validation import (
    ScoringOptions,
    check_arrays,
    check_frames,
    read_answers,
    read_submission,
    scoring_options,
)

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

#: Scores are rounded to this many decimals, as MLE-bench's grader does.
SCORE_DECIMALS = 5


def round_score(score: float) -> float:
    """Round a score to :data:`SCORE_DECIMALS` places as MLE-bench's grading report does.

    MLE-bench's ``Grader`` calls ``round(score, 5)`` on what its grade function returns, almost
    always a NumPy float, so NumPy's rounding applies: scale by 10**5, round half to even,
    scale back. That differs from Python's correctly rounded ``round`` on a float exactly
    half-way in its scaled binary value (an AUC of 133/320 = 0.415625 is 0.41562 there, 0.41563
    for Python's ``round``).

    Parameters
    ----------
    score : float
        The unrounded score (NaN and infinities pass through).

    Returns
    -------
    float
        The score as MLE-bench reports it.

    Examples
    --------
    >>> round_score(133 / 320)
    0.41562
    """
    return float(np.round(np.float64(score), SCORE_DECIMALS))


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


def score_submission(
    submission_path: str | os.PathLike[str], spec: CompetitionSpec, data_dir: str | os.PathLike[str]
) -> float:
    """Validate and score a submission, without medals (no leaderboard needed).

    Parameters
    ----------
    submission_path : path-like
        An existing submission CSV.
    spec : CompetitionSpec
        The competition.
    data_dir : path-like
        Prepared-data dir holding ``spec.answers``.

    Returns
    -------
    float
        The metric's score, unrounded; its direction is ``spec.metric.higher_is_better``.

    Raises
    ------
    InvalidSubmission
        If the file cannot be read or fails validation.
    DatasetNotPrepared
        If the answers file is missing.
    """
    return _score(Path(submission_path), spec, _answers_or_raise(spec, Path(data_dir)))


def _resolve(metric: Metric | str) -> Metric:
    if isinstance(metric, Metric):
        return metric
    try:
        return METRICS[metric]
    except KeyError:
        raise ConfigError(f"unknown metric {metric!r}") from None


def score_frames(
    submission: pd.DataFrame,
    answers: pd.DataFrame,
    *,
    metric: Metric | str,
    id_column: str | Sequence[str],
    target_columns: Sequence[str],
    params: Mapping[str, Any] | None = None,
) -> float:
    """Validate a submission table, align it with the answers by id, and score it.

    This is the whole scoring path after the files are read: scoring parameters
    (:data:`mleaudit.grading.metrics.SCORING_PARAMS`) choose the id columns and the scored rows,
    :func:`mleaudit.grading.validation.check_frames` (frame metrics) or
    :func:`mleaudit.grading.validation.check_arrays` (array metrics) checks every value, and the metric
    runs on the aligned frames or arrays.

    Parameters
    ----------
    submission : pandas.DataFrame
        As read by :func:`mleaudit.grading.validation.read_submission` (ids as text).
    answers : pandas.DataFrame
        As read by :func:`mleaudit.grading.validation.read_answers`.
    metric : Metric or str
        A registry entry or its name (a function name or an MLE-bench label).
    id_column : str or sequence of str
        The competition's id column(s).
    target_columns : sequence of str
        Predicted columns.
    params : mapping, optional
        ``metric.params`` of the competition config.

    Returns
    -------
    float
        The metric's score, unrounded; finite. Its direction is ``metric.higher_is_better``.

    Raises
    ------
    InvalidSubmission
        If the submission fails validation, a metric cannot parse a cell, or the score is
        infinite.
    UndefinedScore
        (An :class:`InvalidSubmission`) if the metric returns NaN for a submission that passed
        every check; MLE-bench counts such a submission as valid.
    ConfigError
        If the parameters are malformed, or the answers do not fit the metric.

    Examples
    --------
    >>> import pandas as pd
    >>> answers = pd.DataFrame({"id": ["a", "b", "c"], "y": [1.0, 2.0, 3.0]})
    >>> sub = pd.DataFrame({"id": ["c", "a", "b"], "y": [3.0, 1.0, 4.0]})
    >>> round(score_frames(sub, answers, metric="root-mean-squared-error", id_column="id", target_columns=["y"]), 4)
    1.1547
    """
    metric = _resolve(metric)
    options, own_params = scoring_options(metric, id_column=id_column, target_columns=target_columns, params=params)
    if metric.frame:
        aligned_answers, aligned = check_frames(submission, answers, metric=metric, options=options)
        describe: Callable[[int], str] = functools.partial(describe_row, aligned)
        row_of: Callable[[int], int] = functools.partial(submission_row, aligned)
        args: tuple[Any, ...] = (aligned_answers, aligned)
        kwargs = {"id_columns": options.id_columns, "target_columns": options.target_columns, **own_params}
    else:
        arrays = check_arrays(submission, answers, metric=metric, options=options)
        describe, args, kwargs = arrays.describe, (arrays.y_true, arrays.y_pred), own_params
        row_of = functools.partial(_array_row, arrays.rows)
    try:
        score = metric.fn(*args, **kwargs)
    except PredictionError as exc:
        column = options.target_columns[exc.column]
        raise InvalidSubmission(f"Submission column {column!r} has {exc.problem} at {describe(exc.position)}.",
                                reason="bad-value", column=column, row=row_of(exc.position)) from None
    except InvalidSubmission as exc:
        # An array metric knows no column names: with one target column, the error is about it.
        if exc.column is None and len(options.target_columns) == 1:
            exc.column = str(options.target_columns[0])
        raise
    return _finite(float(score))


def _array_row(rows: Any, position: int) -> int:
    """The 1-based submission row of an aligned array position (``rows`` from :class:`AlignedArrays`)."""
    return int(rows[position]) + 1


def _finite(score: float) -> float:
    """The score, checked: NaN is an undefined score, an infinity an invalid submission."""
    if math.isnan(score):
        raise UndefinedScore(
            "the metric is undefined for this submission (it returned nan, e.g. a correlation of constant "
            "predictions); MLE-bench counts it as a valid submission with no score and no medal"
        )
    if not math.isfinite(score):
        raise InvalidSubmission(f"the metric returned {score!r} for this submission", reason="non-finite-score")
    return score


def _text_columns(metric: Metric, columns: Sequence[str]) -> list[str]:
    return list(columns) if metric.target_kind is TargetKind.TEXT else []


def _csv_limits(metric: Metric | None) -> CsvLimits:
    """Caps on a submission's shape: text targets (masks, box lists, sentences) may have long cells.

    A custom grader (``metric`` ``None``) gets the text caps: what it reads is not known.
    """
    if metric is None or metric.target_kind is TargetKind.TEXT:
        return TEXT_CSV_LIMITS
    return DEFAULT_CSV_LIMITS


def score_csv(
    submission_path: str | os.PathLike[str],
    answers_path: str | os.PathLike[str],
    *,
    metric: Metric | str,
    id_column: str | Sequence[str],
    target_columns: Sequence[str],
    params: Mapping[str, Any] | None = None,
) -> float:
    """Read a submission and an answers CSV and score them with :func:`score_frames`.

    Id columns (and the target columns of text metrics) are read verbatim as text in both
    files, so ids and label lists keep their exact spelling.

    Parameters
    ----------
    submission_path, answers_path : path-like
        The two CSV files.
    metric, id_column, target_columns, params
        As for :func:`score_frames`.

    Returns
    -------
    float
        The unrounded score.

    Raises
    ------
    InvalidSubmission
        If the submission cannot be read, fails validation or cannot be scored.
    ConfigError
        If the answers file is unreadable or does not fit the metric.
    """
    metric = _resolve(metric)
    options, _ = scoring_options(metric, id_column=id_column, target_columns=target_columns, params=params)
    submission, answers = _read_frames(submission_path, answers_path, metric, options)
    return score_frames(
        submission, answers, metric=metric, id_column=id_column, target_columns=target_columns, params=params
    )


def _spec_metric(spec: CompetitionSpec) -> Metric:
    metric = spec.metric.metric
    if metric is None:  # unreachable for specs built by load_competition_spec
        raise ConfigError(f"{spec.config_path}: field 'metric.name': no built-in metric {spec.metric.name!r}")
    return metric


def read_scoring_frames(
    submission_path: str | os.PathLike[str], spec: CompetitionSpec, answers_path: str | os.PathLike[str]
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Read a submission and the answers the way the competition's scoring path reads them.

    Id columns (and the target columns of text metrics) are read verbatim as text, every other
    column as pandas infers it; the submission is checked against the caps of
    :mod:`mleaudit.grading.csvscan` first. The answers are read first, so a broken answer key is
    reported before anything about the submission.

    Parameters
    ----------
    submission_path, answers_path : path-like
        The submission CSV and the competition's answers file.
    spec : CompetitionSpec
        The competition.

    Returns
    -------
    (pandas.DataFrame, pandas.DataFrame)
        The submission and the answers, every column of each file kept.

    Raises
    ------
    InvalidSubmission
        If the submission cannot be read (too large, not a CSV, empty).
    ConfigError
        If the answers cannot be read or lack a column.
    """
    if spec.metric.grader is not None:
        answers = read_answers(answers_path, id_column=spec.id_column, target_columns=spec.target_columns)
        submission = read_submission(submission_path, id_column=spec.id_column, limits=_csv_limits(None))
        return submission, answers
    metric = _spec_metric(spec)
    options, _ = scoring_options(metric, id_column=spec.id_column, target_columns=spec.target_columns,
                                 params=spec.metric.params)
    return _read_frames(submission_path, answers_path, metric, options)


def _read_frames(
    submission_path: str | os.PathLike[str], answers_path: str | os.PathLike[str], metric: Metric, options: ScoringOptions
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Both files for a built-in metric: the answers first, then the submission within its caps."""
    answers = read_answers(
        answers_path,
        id_column=options.id_columns,
        target_columns=list(options.answer_target_columns) if metric.targets_in_answers else [],
        text_columns=_text_columns(metric, options.answer_target_columns),
        # The scoring path finds repeated answer ids in the same pass that matches the ids.
        unique_ids=False,
    )
    submission = read_submission(
        submission_path,
        id_column=options.id_columns,
        text_columns=_text_columns(metric, options.target_columns),
        limits=_csv_limits(metric),
    )
    return submission, answers


def score_spec_frames(submission: pd.DataFrame, answers: pd.DataFrame, spec: CompetitionSpec) -> float:
    """Validate and score frames read by :func:`read_scoring_frames` with the competition's metric.

    Parameters
    ----------
    submission, answers : pandas.DataFrame
        As :func:`read_scoring_frames` returns them (or built the same way).
    spec : CompetitionSpec
        The competition: its built-in metric and parameters, or its custom grader.

    Returns
    -------
    float
        The unrounded, finite score; its direction is ``spec.metric.higher_is_better``.

    Raises
    ------
    InvalidSubmission
        If the submission fails validation or cannot be scored (:class:`UndefinedScore` when
        the metric is undefined for a submission that passed every check).
    ConfigError
        If the answers do not fit the metric.
    """
    grader = spec.metric.grader
    if grader is not None:
        try:
            score = grader(submission, answers)
        except InvalidSubmission:
            raise
        except Exception as exc:  # noqa: BLE001 - a custom grader's failure must not crash a batch
            logger.warning("grader of %s failed", spec.id, exc_info=True)
            raise InvalidSubmission(f"the grader could not score the submission: {exc!r}", reason="grader-failed") from exc
        return _finite(float(score))
    return score_frames(
        submission,
        answers,
        metric=_spec_metric(spec),
        id_column=spec.id_column,
        target_columns=spec.target_columns,
        params=spec.metric.params,
    )


def _score(submission_path: Path, spec: CompetitionSpec, answers_path: Path) -> float:
    """Validate and score; raise InvalidSubmission for anything the submitter must fix."""
    submission, answers = read_scoring_frames(submission_path, spec, answers_path)
    return score_spec_frames(submission, answers, spec)


def _answers_or_raise(spec: CompetitionSpec, data_dir: Path) -> Path:
    answers = spec.answers_path(data_dir)
    if not answers.is_file():
        raise DatasetNotPrepared(
            f"Competition {spec.id!r} is not prepared: no answers file {answers}. "
            f"Run `mleaudit prepare -c {spec.id}` first."
        )
    return answers


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


@dataclass(frozen=True, slots=True, kw_only=True)
class SubmissionCheck:
    """The verdict on one submission file, without its score.

    Attributes
    ----------
    valid : bool
        Whether the file would be scored (a submission whose metric is undefined counts as
        valid, as MLE-bench counts it).
    reason : str or None
        ``None`` when valid; otherwise a code of :data:`mleaudit.grading.errors.REASONS`.
    column : str or None
        The submission column the problem is in, when there is one.
    row : int or None
        The 1-based data row of the submission file the problem is in, when there is one.
    message : str
        The full host-side text (``"Submission is valid."`` or the error's message). It may
        quote cells, ids and, for a few metric errors, text that describes the answers: it is
        for the host and ``mleaudit grade``, never for an agent as it stands.
    line : int or None
        The 1-based line of the file (the header is line 1) of a ``csv-syntax`` or
        ``too-large`` problem (:attr:`mleaudit.grading.errors.InvalidSubmission.line`).
    counts : dict of str to int
        Numbers about the file's structure or the configured caps
        (:attr:`mleaudit.grading.errors.InvalidSubmission.counts`); empty when none.
    """

    valid: bool
    reason: str | None
    column: str | None
    row: int | None
    message: str
    line: int | None = None
    counts: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """The fields as a JSON-ready dict."""
        return {"valid": self.valid, "reason": self.reason, "column": self.column, "row": self.row,
                "message": self.message, "line": self.line, "counts": dict(self.counts)}


def check_submission(
    submission_path: str | os.PathLike[str], spec: CompetitionSpec, data_dir: str | os.PathLike[str]
) -> SubmissionCheck:
    """Check a submission would be scored, without revealing its score; say why not as a code.

    Parameters
    ----------
    submission_path : path-like
        The submission file (a ``.csv``).
    spec : CompetitionSpec
        The competition.
    data_dir : path-like
        The data dir holding the prepared answers.

    Returns
    -------
    SubmissionCheck
        ``valid`` with ``reason`` ``None``, or the first failed check's reason code, column,
        row (of the submission file) and full message.

    Raises
    ------
    DatasetNotPrepared
        If the answers file is missing.
    ConfigError
        If the competition's config or answers do not fit its metric (not the submission's fault).
    """
    data_dir = Path(data_dir)
    answers_path = _answers_or_raise(spec, data_dir)
    path = Path(submission_path)
    if not path.is_file():
        return SubmissionCheck(valid=False, reason="unreadable", column=None, row=None,
                               message=f"No submission file at {path}.")
    if path.suffix.lower() != ".csv":
        return SubmissionCheck(valid=False, reason="invalid", column=None, row=None,
                               message=f"Submission file {path} is not a .csv file.")
    try:
        _score(path, spec, answers_path)
    except UndefinedScore:
        pass  # valid, as MLE-bench's validation (which only runs the grader) says
    except InvalidSubmission as exc:
        return SubmissionCheck(valid=False, reason=exc.reason, column=exc.column, row=exc.row, message=str(exc),
                               line=exc.line, counts=dict(exc.counts))
    return SubmissionCheck(valid=True, reason=None, column=None, row=None, message="Submission is valid.")


def validate_submission(
    submission_path: str | os.PathLike[str], spec: CompetitionSpec, data_dir: str | os.PathLike[str]
) -> tuple[bool, str]:
    """Check a submission would be scored, without revealing its score.

    The ``(valid, message)`` pair of :func:`check_submission`. The message is the full
    host-side text: it names columns, rows and ids, and a few metric errors quote the scoring
    library, whose text may describe the answers. A validation endpoint answering an agent
    renders its reply from the reason code instead (:mod:`mleaudit.sandbox.feedback`).

    Returns
    -------
    tuple of (bool, str)
        ``(True, "Submission is valid.")`` or ``(False, reason)``.

    Raises
    ------
    DatasetNotPrepared
        If the answers file is missing.
    """
    result = check_submission(submission_path, spec, data_dir)
    return result.valid, result.message


def grade_totals(reports: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    """MLE-bench's aggregate counts over report dicts (:meth:`GradeReport.to_dict` form).

    Parameters
    ----------
    reports : iterable of mapping
        Competition reports with the boolean fields ``submission_exists``,
        ``valid_submission``, ``gold_medal``, ``silver_medal``, ``bronze_medal`` and
        ``above_median`` (missing fields count as false).

    Returns
    -------
    dict
        ``total_runs``, ``total_runs_with_submissions``, ``total_valid_submissions``,
        ``total_medals``, ``total_gold_medals``, ``total_silver_medals``,
        ``total_bronze_medals``, ``total_above_median`` (counts; higher is better).
    """
    reports = list(reports)

    def count(key: str) -> int:
        return sum(bool(r.get(key)) for r in reports)

    gold, silver, bronze = count("gold_medal"), count("silver_medal"), count("bronze_medal")
    return {
        "total_runs": len(reports),
        "total_runs_with_submissions": count("submission_exists"),
        "total_valid_submissions": count("valid_submission"),
        "total_medals": gold + silver + bronze,
        "total_gold_medals": gold,
        "total_silver_medals": silver,
        "total_bronze_medals": bronze,
        "total_above_median": count("above_median"),
    }


def summarize_grades(reports: Iterable[GradeReport]) -> dict[str, Any]:
    """Totals over many reports, with MLE-bench's aggregate field names.

    Returns
    -------
    dict
        The counts of :func:`grade_totals` and ``competition_reports`` (the reports' dicts, in
        the given order).
    """
    dicts = [r.to_dict() for r in reports]
    return {**grade_totals(dicts), "competition_reports": dicts}
