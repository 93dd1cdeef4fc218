"""Named errors of the grading package."""

from __future__ import annotations

__all__ = [
    "GradingError",
    "InvalidSubmission",
    "UndefinedScore",
    "CompetitionNotFound",
    "DatasetNotPrepared",
    "ConfigError",
    "ChecksumMismatch",
    "RawDataMissing",
]


class GradingError(Exception):
    """Base class of every error the grading package raises on bad input."""


class InvalidSubmission(GradingError):
    """A submission cannot be scored; the message names the column, row or problem."""


class UndefinedScore(InvalidSubmission):
    """A submission passed every check but its metric is undefined (NaN).

    A correlation of constant predictions, for instance (a sample submission of zeros). The
    submission has no score; MLE-bench, whose graders return that NaN, counts it as a valid
    submission that earns nothing (``valid_submission`` true, no medal, not above the median).
    """


class CompetitionNotFound(GradingError):
    """No competition folder has the requested id."""


class DatasetNotPrepared(GradingError):
    """The competition's prepared public/private files are missing from the data dir."""


class ConfigError(GradingError):
    """A competition's config.yaml (or its leaderboard, checksums) is malformed."""


class ChecksumMismatch(GradingError):
    """Prepared (or raw) files do not have the MD5 checksums recorded in checksums.yaml."""


class RawDataMissing(GradingError):
    """A competition needs raw Kaggle files for ``prepare`` and they are not in the raw dir."""
