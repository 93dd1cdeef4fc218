"""Grade a submission JSONL the way ``mlebench grade`` does, without stopping at a bad line.

The input is MLE-bench's submission list: one JSON object per line with ``competition_id`` and
``submission_path`` (other keys, such as ``logs_path`` and ``code_path``, are ignored; blank
lines and lines starting with ``#`` or ``//`` are skipped). Each submission is graded with
:func:`mleaudit.grading.grade.grade_submission`; the output is MLE-bench's aggregate report,
``<timestamp>_grading_report.json``: the counts of :func:`mleaudit.grading.grade.grade_totals`
followed by ``competition_reports`` in input order.

Unlike MLE-bench, which aborts the whole batch when one competition's data is missing, a
submission that cannot be graded on the grader's side (unknown competition, data not prepared,
a broken leaderboard) gets a report with ``valid_submission: false``, no medal and the reason
in ``error``, so the totals still count it as a run. Its medal thresholds come from the
leaderboard when it can be read and are ``null`` otherwise.
"""

from __future__ import annotations

import json
import logging
import math
import os
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from mleaudit.grading.errors import GradingError
from mleaudit.grading.grade import grade_submission, grade_totals
from mleaudit.grading.leaderboard import load_leaderboard
from mleaudit.grading.medals import medal_thresholds
from mleaudit.grading.registry import CompetitionRegistry
from mleaudit.grading.submission_list import confine_path, listed_path, read_listed_records

__all__ = [
    "REPORT_SUFFIX",
    "SubmissionListError",
    "SubmissionEntry",
    "read_submission_list",
    "grade_submission_list",
    "grade_jsonl",
    "report_timestamp",
]

logger = logging.getLogger(__name__)

#: File-name suffix of the aggregate report (after MLE-bench's timestamp).
REPORT_SUFFIX = "_grading_report.json"


class SubmissionListError(GradingError):
    """The submission JSONL cannot be read or has malformed lines (each is named)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class SubmissionEntry:
    """One line of a submission JSONL.

    Attributes
    ----------
    competition_id : str
        The competition.
    submission_path : pathlib.Path or None
        The submission CSV, resolved (see :func:`read_submission_list`); ``None`` when the line
        gives ``null`` (the run made no submission).
    listed_at : str
        ``<file>:<line>``.
    """

    competition_id: str
    submission_path: Path | None
    listed_at: str


def read_submission_list(path: str | os.PathLike[str]) -> list[SubmissionEntry]:
    """Read MLE-bench's submission JSONL.

    Parameters
    ----------
    path : path-like
        One object per line with ``competition_id`` (str) and ``submission_path`` (str or
        null). A relative path is taken from the JSONL's folder when the file exists there,
        else from the current directory.

    Returns
    -------
    list of SubmissionEntry
        In file order. A null ``submission_path`` is kept as ``None`` and graded as a missing
        submission.

    Raises
    ------
    SubmissionListError
        If the file cannot be read, has no entries, or has malformed lines; every bad line is
        named with its line number.
    """
    path = Path(path)
    try:
        records, problems = read_listed_records(path)
    except (OSError, UnicodeDecodeError) as exc:
        raise SubmissionListError(f"{path}: cannot be read ({exc})") from None
    entries: list[SubmissionEntry] = []
    for listed in records:
        if "submission_path" not in listed.record:
            problems.append((listed.line, f"{listed.listed_at}: field 'submission_path' is missing"))
            continue
        resolved, problem = listed_path(listed, "submission_path", path.parent)
        if problem:
            problems.append(problem)
            continue
        if resolved is not None and confine_path(resolved, path.parent) is None:
            # A list may come from anywhere: it grades only what lies beside it.
            problems.append((listed.line, f"{listed.listed_at}: submission_path resolves outside the folder of the "
                                          "submission list"))
            continue
        entries.append(SubmissionEntry(competition_id=listed.competition_id, submission_path=resolved,
                                       listed_at=listed.listed_at))
    if problems:
        messages = [message for _, message in sorted(problems)]
        more = f"\n... and {len(messages) - 20} more" if len(messages) > 20 else ""
        raise SubmissionListError("\n".join(messages[:20]) + more)
    if not entries:
        raise SubmissionListError(f"{path}: no submissions listed")
    return entries


def _float_or_none(value: float) -> float | None:
    return None if value is None or math.isnan(value) else float(value)


def _ungraded(
    entry: SubmissionEntry, registry: CompetitionRegistry, reason: str, created_at: datetime
) -> dict[str, Any]:
    """A report for a submission the grader could not grade: no score, no medal, the reason."""
    thresholds: dict[str, float | None] = {"gold": None, "silver": None, "bronze": None, "median": None}
    is_lower_better: bool | None = None
    source: str | None = None
    try:
        spec = registry.get(entry.competition_id)
        is_lower_better = not spec.metric.higher_is_better
        source = spec.leaderboard_source
        if spec.has_leaderboard:
            found = medal_thresholds(load_leaderboard(spec.leaderboard_path), spec.metric.higher_is_better)
            thresholds = {k: _float_or_none(getattr(found, k)) for k in thresholds}
    except GradingError as exc:
        logger.debug("no thresholds for %s: %s", entry.competition_id, exc)
    path = entry.submission_path
    exists = path is not None and path.is_file() and path.suffix.lower() == ".csv"
    return {
        "competition_id": entry.competition_id,
        "score": None,
        "gold_threshold": thresholds["gold"],
        "silver_threshold": thresholds["silver"],
        "bronze_threshold": thresholds["bronze"],
        "median_threshold": thresholds["median"],
        "any_medal": False,
        "gold_medal": False,
        "silver_medal": False,
        "bronze_medal": False,
        "above_median": False,
        "submission_exists": exists,
        "valid_submission": False,
        "is_lower_better": is_lower_better,
        "created_at": created_at.isoformat(),
        "submission_path": None if path is None else str(path),
        "error": reason,
        "leaderboard_source": source,
        # Nothing graded, so nothing to compare with MLE-bench's grader (the same keys as a graded report).
        "mlebench_divergence": [],
        "mlebench_divergence_skipped": None,
    }


def grade_submission_list(
    entries: list[SubmissionEntry], registry: CompetitionRegistry, *, created_at: datetime | None = None
) -> list[dict[str, Any]]:
    """Grade every entry; grader-side problems become reports, never exceptions.

    Parameters
    ----------
    entries : list of SubmissionEntry
        From :func:`read_submission_list`.
    registry : CompetitionRegistry
        Competitions and prepared data.
    created_at : datetime, optional
        Timestamp of every report (default: now, UTC).

    Returns
    -------
    list of dict
        One :meth:`mleaudit.grading.grade.GradeReport.to_dict` per entry, in order. A competition
        that is unknown, not prepared (only its private answers are needed) or whose
        leaderboard or answers are broken gives ``valid_submission: false`` and the reason in
        ``error``.
    """
    created_at = created_at or datetime.now(timezone.utc)
    reports = []
    for entry in entries:
        try:
            spec = registry.get(entry.competition_id)
            if not registry.is_prepared(spec.id, grading_only=True):
                reason = (
                    f"competition {spec.id!r} is not prepared in {registry.data_dir} (no answers file "
                    f"{spec.answers_path(registry.data_dir)}); run `mleaudit prepare -c {spec.id}`"
                )
                reports.append(_ungraded(entry, registry, reason, created_at))
                continue
            if not spec.has_leaderboard:
                reason = f"competition {spec.id!r} has no leaderboard: {spec.leaderboard_note}"
                reports.append(_ungraded(entry, registry, reason, created_at))
                continue
            if entry.submission_path is None:
                reports.append(_ungraded(entry, registry, f"No submission: submission_path is null at {entry.listed_at}.", created_at))
                continue
            report = grade_submission(entry.submission_path, spec, registry.data_dir, created_at=created_at)
            reports.append(report.to_dict())
        except GradingError as exc:
            logger.info("%s: %s not graded: %s", entry.listed_at, entry.competition_id, exc)
            reports.append(_ungraded(entry, registry, f"not graded: {exc}", created_at))
    return reports


def report_timestamp(moment: datetime) -> str:
    """MLE-bench's file-name timestamp, ``YYYY-MM-DDTHH-MM-SS-<zone>``, in UTC.

    Examples
    --------
    >>> from datetime import datetime, timezone
    >>> report_timestamp(datetime(2024, 5, 1, 12, 3, 4, tzinfo=timezone.utc))
    '2024-05-01T12-03-04-UTC'
    """
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%dT%H-%M-%S-%Z")


def grade_jsonl(
    submissions: str | os.PathLike[str],
    registry: CompetitionRegistry,
    output_dir: str | os.PathLike[str],
    *,
    now: datetime | None = None,
) -> tuple[Path, dict[str, Any]]:
    """Grade a submission JSONL and write MLE-bench's aggregate report.

    Parameters
    ----------
    submissions : path-like
        The JSONL (see :func:`read_submission_list`).
    registry : CompetitionRegistry
        Competitions and prepared data.
    output_dir : path-like
        Folder for ``<timestamp>_grading_report.json`` (created if needed).
    now : datetime, optional
        Time used for the file name and the reports' ``created_at`` (default: now, UTC).

    Returns
    -------
    tuple of (pathlib.Path, dict)
        The report file and its content: ``total_runs``, ``total_runs_with_submissions``,
        ``total_valid_submissions``, ``total_medals``, ``total_gold_medals``,
        ``total_silver_medals``, ``total_bronze_medals``, ``total_above_median`` and
        ``competition_reports``.

    Raises
    ------
    SubmissionListError
        If the JSONL is unreadable or malformed.
    OSError
        If the output folder cannot be created or written.
    """
    now = now or datetime.now(timezone.utc)
    entries = read_submission_list(submissions)
    reports = grade_submission_list(entries, registry, created_at=now)
    aggregate = {**grade_totals(reports), "competition_reports": reports}
    output = Path(output_dir)
    output.mkdir(parents=True, exist_ok=True)
    target = output / f"{report_timestamp(now)}{REPORT_SUFFIX}"
    # MLE-bench's key order (totals, then the reports), indented like its report.
    target.write_text(json.dumps(aggregate, indent=2) + "\n", encoding="utf-8")
    return target, aggregate
