"""Named errors of the grading package."""

from __future__ import annotations

from typing import Mapping

__all__ = [
    "GradingError",
    "InvalidSubmission",
    "ANSWER_REASONS",
    "COUNT_KEYS",
    "REASONS",
    "TARGET_VALUE_REASONS",
    "UndefinedScore",
    "CompetitionNotFound",
    "competition_not_found",
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

#: Reasons that speak about the values of the target columns (numbers, labels, probabilities):
#: what a reply with one of these is about, whatever decides it.
TARGET_VALUE_REASONS: frozenset[str] = frozenset({
    "bad-value", "missing-value", "non-finite", "row-sum", "unknown-label", "incomparable", "non-finite-score",
})

#: Reasons whose verdict may depend on the answers themselves, not only on the submission file
#: and the public competition data (config, sample submission, test ids). The audit counts
#: replies with these (a run of them may be an agent learning the label space through the
#: endpoint):
#:
#: - ``incomparable``: predictions of another type than the answers hold;
#: - ``unknown-label``: a label the metric cannot use (its meaning covers a label outside the
#:   answers' label set; the built-in raise site, a class id that is not an integer, is decided
#:   by the file);
#: - ``non-finite-score``: the metric's value on these predictions and these answers;
#: - ``grader-failed``: a competition's own grader, which reads the answers, raised.
#:
#: The other target-value reasons (``bad-value``, ``missing-value``, ``non-finite``,
#: ``row-sum``) are decided by the file and the metric's public rules; the column, id and
#: row-count reasons by the file and the public data.
ANSWER_REASONS: frozenset[str] = frozenset({"incomparable", "unknown-label", "non-finite-score", "grader-failed"})

#: Keys of :attr:`InvalidSubmission.counts`: numbers about the submission file's own structure
#: or the caps the host configured, never about the answers.
#:
#: - ``fields``: the fields on the offending line (``csv-syntax``);
#: - ``expected_fields``: the fields the parser expected there (``csv-syntax``; the header's
#:   count, or one more when the parser took the first column as an index);
#: - ``max_columns``, ``max_field_bytes``, ``max_line_bytes``: the cap a ``too-large`` line
#:   broke (:class:`mleaudit.grading.csvscan.CsvLimits`); exactly one of them.
COUNT_KEYS: frozenset[str] = frozenset({"fields", "expected_fields", "max_columns", "max_field_bytes", "max_line_bytes"})


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
    line : int or None, keyword-only
        The 1-based line of the submission file (the header is line 1; lines end at ``\n``,
        ``\r\n`` or a lone ``\r``) where the problem is, for problems the parser or the
        pre-scan find before there are rows (``csv-syntax``, ``too-large``).
    counts : mapping of str to int, optional, keyword-only
        Numbers about the file's own structure or the configured caps, keyed by
        :data:`COUNT_KEYS` (e.g. ``{"fields": 3, "expected_fields": 2}``); never a number
        taken from the answers.

    Raises
    ------
    ValueError
        If ``reason`` is not in :data:`REASONS`, ``row`` or ``line`` is not a positive
        integer, or ``counts`` has a key outside :data:`COUNT_KEYS` or a value that is not a
        non-negative integer.
    """

    def __init__(self, message: str = "", *, reason: str = "invalid", column: str | None = None,
                 row: int | None = None, line: int | None = None, counts: Mapping[str, int] | None = None) -> None:
        super().__init__(message)
        if reason not in REASONS:
            raise ValueError(f"InvalidSubmission reason {reason!r} is not one of mleaudit.grading.errors.REASONS")
        if row is not None and (isinstance(row, bool) or int(row) != row or row < 1):
            raise ValueError(f"InvalidSubmission row must be a 1-based row number, not {row!r}")
        if line is not None and (isinstance(line, bool) or int(line) != line or line < 1):
            raise ValueError(f"InvalidSubmission line must be a 1-based line number, not {line!r}")
        counts = dict(counts or {})
        for key, value in counts.items():
            if key not in COUNT_KEYS:
                raise ValueError(f"InvalidSubmission count {key!r} is not one of mleaudit.grading.errors.COUNT_KEYS")
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"InvalidSubmission count {key!r} must be a non-negative integer, not {value!r}")
        self.reason = reason
        self.column = None if column is None else str(column)
        self.row = None if row is None else int(row)
        self.line = None if line is None else int(line)
        self.counts: dict[str, int] = counts

    def __reduce__(self):
        # Keep the keyword-only attributes across pickling (multiprocessing workers).
        return (_rebuild_invalid, (type(self), str(self), self.reason, self.column, self.row, self.line,
                                   dict(self.counts)))


def _rebuild_invalid(cls: type, message: str, reason: str, column: str | None, row: int | None,
                     line: int | None = None, counts: Mapping[str, int] | None = None) -> "InvalidSubmission":
    return cls(message, reason=reason, column=column, row=row, line=line, counts=counts)


class UndefinedScore(InvalidSubmission):
    """A submission passed every check but its metric is undefined (NaN).

    A correlation of constant predictions, for instance (a sample submission of zeros). The
    submission has no score; MLE-bench, whose graders return that NaN, counts it as a valid
    submission that earns nothing (``valid_submission`` true, no medal, not above the median).
    Its reason is ``"undefined-score"`` unless given.
    """

    def __init__(self, message: str = "", *, reason: str = "undefined-score", column: str | None = None,
                 row: int | None = None, line: int | None = None, counts: Mapping[str, int] | None = None) -> None:
        super().__init__(message, reason=reason, column=column, row=row, line=line, counts=counts)


class CompetitionNotFound(GradingError):
    """No competition folder has the requested id."""


def competition_not_found(exc: CompetitionNotFound) -> str:
    """The error's first sentence and its suggestion, without the list of every known competition.

    Examples
    --------
    >>> competition_not_found(CompetitionNotFound("No competition 'x' in /c. Known competitions: a, b."))
    "No competition 'x' in /c (`mleaudit competitions list` shows the known ones)."
    >>> competition_not_found(CompetitionNotFound("No competition 'dem' in /c. Did you mean: demo?"))
    "No competition 'dem' in /c. Did you mean: demo?"
    """
    text = str(exc).split(" Known competitions:")[0].strip()
    if "Did you mean" in text:
        return text
    return f"{text.rstrip('.')} (`mleaudit competitions list` shows the known ones)."


class DatasetNotPrepared(GradingError):
    """The competition's prepared public/private files are missing from the data dir."""


class ConfigError(GradingError):
    """A competition's config.yaml (or its leaderboard, checksums) is malformed."""


class ChecksumMismatch(GradingError):
    """Prepared (or raw) files do not have the MD5 checksums recorded in checksums.yaml."""


class RawDataMissing(GradingError):
    """A competition needs raw Kaggle files for ``prepare`` and they are not in the raw dir."""
