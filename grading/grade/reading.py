"""A submission and the answers read the way a competition's scoring path reads them."""

from __future__ import annotations

import os
from typing import Sequence

import pandas as pd

from mleaudit.grading.csvscan import DEFAULT_CSV_LIMITS, TEXT_CSV_LIMITS, CsvLimits
from mleaudit.grading.errors import ConfigError
from mleaudit.grading.metrics import Metric, TargetKind
from mleaudit.grading.spec import CompetitionSpec
from mleaudit.grading.validation import ScoringOptions, read_answers, read_submission, scoring_options


def _text_columns(metric: Metric, columns: Sequence[str]) -> list[str]:
    return list(columns) if metric.target_kind is TargetKind.TEXT else []


def _csv_limits(metric: Metric | None) -> CsvLimits:
    """Caps on a submission's shape: text targets (masks, box lists, sentences) may have long cells.

    A custom grader (``metric`` ``None``) gets the text caps: what it reads is not known.
    """
    if metric is None or metric.target_kind is TargetKind.TEXT:
        return TEXT_CSV_LIMITS
    return DEFAULT_CSV_LIMITS


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
