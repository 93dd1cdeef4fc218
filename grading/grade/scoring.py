"""Scores: a submission validated, aligned with the answers and scored, without medals."""

from __future__ import annotations

import functools
import logging
import math
import os
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import numpy as np
import pandas as pd

from mleaudit.grading.errors import ConfigError, DatasetNotPrepared, InvalidSubmission, UndefinedScore
from mleaudit.grading.grade.reading import _read_frames, _spec_metric, read_scoring_frames
from mleaudit.grading.metrics import METRICS, Metric, PredictionError, describe_row
from mleaudit.grading.metrics.base import submission_row
from mleaudit.grading.spec import CompetitionSpec
from mleaudit.grading.validation import check_arrays, check_frames, scoring_options

# The package's logger, under the package's name.
logger = logging.getLogger(__package__)


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
