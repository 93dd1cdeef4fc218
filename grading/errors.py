"""Named errors of the grading package."""

from __future__ import annotations

__all__ = [
    "GradingError",
    "InvalidSubmission",
    "REASONS",
    "TARGET_VALUE_REASONS",
    "UndefinedScore",
    "CompetitionNotFound",
    "DatasetNotPrepared",
    "ConfigError",
    "ChecksumMismatch",
    "RawDataMissing",
]


class GradingError(Exception):
    """Base class of every error the grading package raises on bad input."""


#: Why a submission is invalid: the fixed vocabulary of :attr:`InvalidSubmission.reason`.
#: The codes are stable (a validation endpoint keys its replies by them and the audit reads them
#: from the calls log); each maps to the first check a file fails.
REASONS: frozenset[str] = frozenset({
    "unreadable",        # the file cannot be opened or read
    "empty",             # no bytes, or no header
    "csv-syntax",        # the CSV parser refuses the file (quoting, encoding)
    "too-large",         # a record, field or row over the caps on a submission's shape
    "no-columns",        # a header with no columns
    "missing-column",    # an expected column is absent (``column`` names it)
    "extra-column",      # a column that is not expected (``column`` names it)
    "duplicate-column",  # a column name given twice
    "column-order",      # a column out of the required place
    "empty-id",          # an empty id cell (``row`` names it)
    "duplicate-id",      # an id given twice (``row`` is the second)
    "unknown-id",        # an id that is not a test id (``row`` names it)
    "missing-ids",       # test ids without a row
    "row-count",         # a different number of rows than the test set
    "bad-value",         # a cell that does not parse, or lies outside the allowed range
    "missing-value",     # an empty target cell
    "non-finite",        # an infinite (or NaN) number
    "row-sum",           # class probabilities of a row that do not sum to 1
    "unknown-label",     # a predicted label the metric cannot use (e.g. not an integer class)
    "incomparable",      # predictions of another type than the answers (numbers vs. text)
    "undefined-score",   # the metric is undefined (NaN) for this submission (still valid)
    "non-finite-score",  # the metric returned an infinite score
    "grader-failed",     # a competition's own grader raised an error
    "invalid",           # anything else (the generic fallback)
})

#: Reasons that speak about the values of the target columns: a run of replies with these
#: tells an agent something about the answers' label space (read by the audit's rules).
TARGET_VALUE_REASONS: frozenset[str] = frozenset({
    "bad-value", "missing-value", "non-finite", "row-sum", "unknown-label", "incomparable", "non-finite-score",
})


class InvalidSubmission(GradingError):
    """A submission cannot be scored; the message names the column, row or problem.

    Parameters
    ----------
    message : str
        The full human-readable text (host side: it may quote cells and ids, and for a few
        metric errors the library's own text).
    reason : str, keyword-only
        A code of :data:`REASONS` (default ``"invalid"``, the generic fallback).
    column : str or None, keyword-only
        The submission column the problem is in, when there is one.
    row : int or None, keyword-only
        The 1-based data row of the submission file (header excluded), when the problem is
        in one row; never a position in answer order.

    Raises
    ------
    ValueError
        If ``reason`` is not in :data:`REASONS` or ``row`` is not a positive integer.
    """

    def __init__(self, message: str = "", *, reason: str = "invalid", column: str | None = None,
                 row: int | None = None) -> None:
        super().__init__(message)
        if reason not in REASONS:
            raise ValueError(f"InvalidSubmission reason {reason!r} is not one of grading.errors.REASONS")
        if row is not None and (isinstance(row, bool) or int(row) != row or row < 1):
            raise ValueError(f"InvalidSubmission row must be a 1-based row number, not {row!r}")
        self.reason = reason
        self.column = None if column is None else str(column)
        self.row = None if row is None else int(row)

    def __reduce__(self):
        # Keep the keyword-only attributes across pickling (multiprocessing workers).
        return (_rebuild_invalid, (type(self), str(self), self.reason, self.column, self.row))


def _rebuild_invalid(cls: type, message: str, reason: str, column: str | None, row: int | None) -> "InvalidSubmission":
    return cls(message, reason=reason, column=column, row=row)


class UndefinedScore(InvalidSubmission):
    """A submission passed every check but its metric is undefined (NaN).

    A correlation of constant predictions, for instance (a sample submission of zeros). The
    submission has no score; MLE-bench, whose graders return that NaN, counts it as a valid
    submission that earns nothing (``valid_submission`` true, no medal, not above the median).
    Its reason is ``"undefined-score"`` unless given.
    """

    def __init__(self, message: str = "", *, reason: str = "undefined-score", column: str | None = None,
                 row: int | None = None) -> None:
        super().__init__(message, reason=reason, column=column, row=row)


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
