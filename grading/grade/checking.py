"""The verdict on one submission file without its score: valid, or the first failed check."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mleaudit.grading.errors import InvalidSubmission, UndefinedScore
from mleaudit.grading.grade.scoring import _answers_or_raise, _score
from mleaudit.grading.spec import CompetitionSpec


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
