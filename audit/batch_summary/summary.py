"""``summarize_batch``: a batch's audit results into the summary (coverage, totals with and without the
runs that are not certified, seeds, pass@k, and what was found per rule, category and competition)."""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any, Collection, Mapping, Sequence

from mleaudit.audit.batch import BatchResult, report_file_name
from mleaudit.audit.batch_summary.seeds import _any_medal, pass_at_k, seed_aggregate
from mleaudit.grading.grade import grade_totals


#: Bumped when a key of the summary changes meaning or disappears. 2.1: ``seeds`` name the runs
#: they leave out and the entries they pad; their ``metrics`` is ``None`` when no seed is averaged.
#: 2.2: ``coverage``; a run not graded counts its submission; ``categories`` from findings >= low;
#: dismissed findings only in ``rules[].dismissed``.
BATCH_SUMMARY_VERSION = "2.2"

#: Verdicts that are not certified: disqualified in ``totals_excluding_flagged`` by default.
NOT_CERTIFIED = ("flagged", "incomplete", "error")
#: Verdict kinds counted per batch and per competition, worst first, then ``error`` (no report).
VERDICT_KINDS = ("clean", "review", "incomplete", "flagged", "error")


_GRADE_FLAGS = ("submission_exists", "valid_submission", "above_median", "gold_medal", "silver_medal", "bronze_medal")


def _zero(competition_id: str | None) -> dict[str, Any]:
    return {"competition_id": competition_id, **{flag: False for flag in _GRADE_FLAGS}}


def _has_submission(report: Mapping[str, Any]) -> bool:
    """Whether the audit found a submission file in the run (graded or not)."""
    counts = (report.get("run") or {}).get("artifact_counts") or {}
    return bool(isinstance(counts, Mapping) and counts.get("submission"))


def _grade_of(result: BatchResult) -> dict[str, Any]:
    report = result.report or {}
    grade = report.get("grade")
    competition = (report.get("run") or {}).get("competition_id") or result.entry.competition_id
    if not grade:
        # Not graded: no medal and no valid submission can be claimed, but a submission the
        # run wrote still exists (MLE-bench's submission_exists).
        return {**_zero(competition), "submission_exists": _has_submission(report)}
    return {"competition_id": grade.get("competition_id", competition), **{flag: bool(grade.get(flag)) for flag in _GRADE_FLAGS}}


def _coverage(results: Sequence[BatchResult]) -> dict[str, int]:
    """What the totals count: runs graded, runs not graded (with and without a submission), runs not audited."""
    audited = [r.report for r in results if r.report is not None]
    graded = [report for report in audited if report.get("grade")]
    ungraded = [report for report in audited if not report.get("grade")]
    return {
        "runs": len(results),
        "graded": len(graded),
        "not_graded": len(ungraded),
        "not_graded_with_submission": sum(_has_submission(report) for report in ungraded),
        "without_submission": sum(not _has_submission(report) for report in ungraded)
        + sum(not (report.get("grade") or {}).get("submission_exists") for report in graded),
        "not_audited": len(results) - len(audited),
    }


#: Findings below this severity (info: context) do not count a run into a category.
CATEGORY_MIN_SEVERITY = "low"
_SEVERITY_RANK = {"info": 0, "low": 1, "medium": 2, "high": 3, "critical": 4}


def _verdict_of(result: BatchResult) -> str:
    if result.report is None:
        return "error"
    kind = str((result.report.get("verdict") or {}).get("kind", "error"))
    # A verdict this version does not know is not a certified one.
    return kind if kind in VERDICT_KINDS else "error"


def summarize_batch(results: Sequence[BatchResult], *, excluded_verdicts: Collection[str] = NOT_CERTIFIED,
                    clusters: Mapping[str, Any] | None = None, pad_missing: bool = False,
                    competitions: Sequence[str] | None = None) -> dict[str, Any]:
    """Aggregate a batch's audit results (see the module docstring for each section).

    Parameters
    ----------
    results : sequence of BatchResult
        From :func:`mleaudit.audit.batch.audit_batch`, in batch order.
    excluded_verdicts : collection of str
        Verdict kinds whose runs are disqualified in the ``*_excluding_flagged`` figures
        (default :data:`NOT_CERTIFIED`: flagged, incomplete and failed audits).
    clusters : mapping, optional
        :func:`mleaudit.audit.clusters.copy_clusters` of the batch, stored as ``copy_clusters``.
    pad_missing : bool, default False
        Seed figures: pad a competition that lacks a run for a seed with a failed run instead
        of dropping the seed (:func:`seed_aggregate`).
    competitions : sequence of str, optional
        Seed figures: the competitions every seed holds (default: those the runs name).

    Returns
    -------
    dict
        JSON-ready summary with ``schema_version``.

    Raises
    ------
    ValueError
        When ``competitions`` is a string, empty, or holds an empty id.
    """
    excluded = set(excluded_verdicts)
    grades = [_grade_of(r) for r in results]
    verdicts = [_verdict_of(r) for r in results]
    kept = [g if v not in excluded else _zero(g["competition_id"]) for g, v in zip(grades, verdicts)]
    # The seed figures name each run they leave out; the path tells a repeated run apart.
    named = [{"run_id": r.entry.run_id, "run_path": str(r.entry.run_dir)} for r in results]
    seeds = seed_aggregate([{**g, **n} for g, n in zip(grades, named)], pad_missing=pad_missing,
                           competitions=competitions)
    seeds_kept = seed_aggregate([{**g, **n} for g, n in zip(kept, named)], pad_missing=pad_missing,
                                competitions=competitions)

    rule_findings: Counter[str] = Counter()
    rule_runs: dict[str, set[str]] = defaultdict(set)
    rule_info: dict[str, dict[str, Any]] = {}
    category_findings: Counter[str] = Counter()
    category_runs: dict[str, set[str]] = defaultdict(set)
    rule_dismissed: Counter[str] = Counter()
    for result in results:
        for finding in (result.report or {}).get("findings", []):
            rule_id, category = finding.get("rule_id"), finding.get("category")
            rule_info.setdefault(rule_id, {"category": category, "severity": finding.get("severity")})
            if (finding.get("review") or {}).get("decision") == "dismissed":
                # A reviewer's false alarm stops counting here as in the run's verdict.
                rule_dismissed[rule_id] += 1
                continue
            rule_findings[rule_id] += 1
            rule_runs[rule_id].add(result.entry.run_id)
            if _SEVERITY_RANK.get(str(finding.get("severity")), 0) >= _SEVERITY_RANK[CATEGORY_MIN_SEVERITY]:
                category_findings[category] += 1
                category_runs[category].add(result.entry.run_id)

    competitions: dict[str, dict[str, Any]] = {}
    for result, grade, kept_grade, verdict in zip(results, grades, kept, verdicts):
        key = grade["competition_id"] or "(unknown)"
        row = competitions.setdefault(key, {
            "competition_id": key, "runs": 0, "valid_submissions": 0, "medals": 0, "medals_excluding_flagged": 0,
            **{kind: 0 for kind in VERDICT_KINDS},
        })
        row["runs"] += 1
        row["valid_submissions"] += grade["valid_submission"]
        row["medals"] += _any_medal(grade)
        row["medals_excluding_flagged"] += _any_medal(kept_grade)
        row[verdict if verdict in row else "error"] += 1

    runs = []
    for result, grade, verdict in zip(results, grades, verdicts):
        report_grade = (result.report or {}).get("grade") or {}
        runs.append({
            "run_id": result.entry.run_id,
            "competition_id": grade["competition_id"],
            "verdict": verdict,
            "reasons": list(((result.report or {}).get("verdict") or {}).get("reasons", [])),
            "valid_submission": grade["valid_submission"],
            "any_medal": _any_medal(grade),
            "score": report_grade.get("score"),
            "report": f"runs/{report_file_name(result.entry.run_id)}" if result.report is not None else None,
            "error": result.error,
            "seconds": round(result.seconds, 3),
        })

    return {
        "schema_version": BATCH_SUMMARY_VERSION,
        "excluded_verdicts": sorted(excluded),
        "coverage": _coverage(results),
        "totals": grade_totals(grades),
        "totals_excluding_flagged": grade_totals(kept),
        "verdicts": {kind: verdicts.count(kind) for kind in VERDICT_KINDS},
        "not_certified": {
            kind: {"runs": sum(v == kind for v in verdicts),
                   "valid_submissions": sum(g["valid_submission"] for g, v in zip(grades, verdicts) if v == kind),
                   "medals": sum(_any_medal(g) for g, v in zip(grades, verdicts) if v == kind)}
            for kind in ("incomplete", "error")
        },
        "seeds": seeds,
        "seeds_excluding_flagged": seeds_kept,
        "pass_at_k": pass_at_k(grades),
        "pass_at_k_excluding_flagged": pass_at_k(kept),
        "rules": sorted(
            ({"rule_id": rule, **rule_info[rule], "findings": rule_findings[rule], "runs": len(rule_runs[rule]),
              "dismissed": rule_dismissed[rule]}
             for rule in rule_info),
            key=lambda row: (-row["runs"], row["rule_id"]),
        ),
        "categories": sorted(
            ({"category": category, "findings": category_findings[category], "runs": len(category_runs[category])}
             for category in category_findings),
            key=lambda row: (-row["runs"], str(row["category"])),
        ),
        "competitions": sorted(competitions.values(), key=lambda row: row["competition_id"]),
        "copy_clusters": dict(clusters) if clusters is not None else None,
        "runs": runs,
    }
