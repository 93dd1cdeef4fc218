"""Named errors of the grading package."""

from __future__ import annotations

__all__ = ["GradingError", "InvalidSubmission", "CompetitionNotFound", "DatasetNotPrepared", "ConfigError"]


class GradingError(Exception):
    """Base class of every error the grading package raises on bad input."""


class InvalidSubmission(GradingError):
    """A submission cannot be scored; the message names the column, row or problem."""


class CompetitionNotFound(GradingError):
    """No competition folder has the requested id."""


class DatasetNotPrepared(GradingError):
    """The competition's prepared public/private files are missing from the data dir."""


class ConfigError(GradingError):
    """A competition's config.yaml (or its leaderboard, checksums) is malformed."""
