"""MLE-bench's aggregate counts over many grading reports."""

from __future__ import annotations

from typing import Any, Iterable, Mapping

from mleaudit.grading.grade.report import GradeReport


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
