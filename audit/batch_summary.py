"""The summary of a batch audit: MLE-bench's totals with and without the flagged runs, and what was found.

A compliance lead's question after a sweep is "what is the medal table once the runs that broke
the rules are taken out?". :func:`summarize_batch` answers it from the runs' audit reports:

- ``totals``: MLE-bench's aggregate fields (``total_runs``, ``total_runs_with_submissions``,
  ``total_valid_submissions``, ``total_medals``, ``total_gold_medals``, ...) over every run; a
  run without a grade (not graded, audit failed) counts as MLE-bench's zero report;
- ``totals_excluding_flagged``: the same after **disqualifying** the runs whose verdict is in
  ``excluded_verdicts`` — by default every run that is not certified: ``flagged`` (rule-breaking
  evidence), ``incomplete`` (something was not checked) and ``error`` (no audit at all); they
  stay in ``total_runs`` but count as zero reports, as a disqualified attempt scores nothing;
- ``not_certified``: the incomplete and the failed audits counted separately (runs, valid
  submissions and the medals they would have had), so a reviewer sees what a rerun or a
  human check could still restore;
- ``seeds``: MLE-bench's seed aggregation (``experiments/aggregate_grading_reports.py``): the runs
  of each competition are taken in batch order, seed *i* holds the *i*-th run of every
  competition, only complete seeds are kept, each seed's percentages are computed over its
  competitions, and the mean, standard error of the mean (``ddof=1``) and a 95 % interval
  (mean ± 1.96 SEM) are reported, with and without the flagged runs;
- ``pass_at_k``: the share of competitions with a medal in at least one of *k* attempts, with the
  unbiased estimator ``1 - C(n-c, k) / C(n, k)`` per competition of *n* runs and *c* medals (Chen
  et al., 2021, "Evaluating Large Language Models Trained on Code"), averaged over the
  competitions with ``n >= k``;
- ``verdicts``, ``rules``, ``categories``, ``competitions``: counts a reviewer sorts by;
- ``copy_clusters``: runs and notebooks linked by flagged similarity pairs (:mod:`audit.clusters`).
"""

from __future__ import annotations

import math
import statistics
from collections import Counter, defaultdict
from typing import Any, Collection, Mapping, Sequence

from grading.grade import grade_totals

from audit.batch import BatchResult, report_file_name

__all__ = ["BATCH_SUMMARY_VERSION", "NOT_CERTIFIED", "VERDICT_KINDS", "SEED_METRICS", "pass_at_k", "seed_aggregate", "summarize_batch"]

#: Bumped when a key of the summary changes meaning or disappears.
BATCH_SUMMARY_VERSION = "2.0"

#: Verdicts that are not certified: disqualified in ``totals_excluding_flagged`` by default.
NOT_CERTIFIED = ("flagged", "incomplete", "error")
#: Verdict kinds counted per batch and per competition, worst first, then ``error`` (no report).
VERDICT_KINDS = ("clean", "review", "incomplete", "flagged", "error")

#: Per-seed percentages, as MLE-bench names them, and the report field each counts.
SEED_METRICS = {
    "submission_exists_percentage": ("submission_exists",),
    "valid_submissions_percentage": ("valid_submission",),
    "above_median_percentage": ("above_median",),
    "gold_medal_percentage": ("gold_medal",),
    "silver_medal_percentage": ("silver_medal",),
    "bronze_medal_percentage": ("bronze_medal",),
    "any_medal_percentage": ("gold_medal", "silver_medal", "bronze_medal"),
}

_GRADE_FLAGS = ("submission_exists", "valid_submission", "above_median", "gold_medal", "silver_medal", "bronze_medal")


def _zero(competition_id: str | None) -> dict[str, Any]:
    return {"competition_id": competition_id, **{flag: False for flag in _GRADE_FLAGS}}


def _grade_of(result: BatchResult) -> dict[str, Any]:
    report = result.report or {}
    grade = report.get("grade")
    competition = (report.get("run") or {}).get("competition_id") or result.entry.competition_id
    if not grade:
        return _zero(competition)
    return {"competition_id": grade.get("competition_id", competition), **{flag: bool(grade.get(flag)) for flag in _GRADE_FLAGS}}


def _verdict_of(result: BatchResult) -> str:
    if result.report is None:
        return "error"
    kind = str((result.report.get("verdict") or {}).get("kind", "error"))
    # A verdict this version does not know is not a certified one.
    return kind if kind in VERDICT_KINDS else "error"


def _any_medal(grade: Mapping[str, Any]) -> bool:
    return bool(grade["gold_medal"] or grade["silver_medal"] or grade["bronze_medal"])


def seed_aggregate(grades: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
    """MLE-bench's mean ± SEM over seeds of the per-seed percentages.

    Parameters
    ----------
    grades : sequence of mapping
        One grade per run, in batch order, each with ``competition_id`` and the boolean fields
        of :data:`SEED_METRICS`.

    Returns
    -------
    dict or None
        ``num_seeds_averaged``, ``num_competitions_per_seed`` and ``metrics`` (name →
        ``mean``, ``standard_error``, ``ci_lower``, ``ci_upper``, in percent; higher is better);
        ``None`` when no run names its competition.
    """
    by_competition: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for grade in grades:
        if grade.get("competition_id"):
            by_competition[str(grade["competition_id"])].append(grade)
    if not by_competition:
        return None
    seeds = min(len(runs) for runs in by_competition.values())  # complete seeds only, as MLE-bench
    values: dict[str, list[float]] = {name: [] for name in SEED_METRICS}
    for seed in range(seeds):
        reports = [runs[seed] for runs in by_competition.values()]
        for name, flags in SEED_METRICS.items():
            hits = sum(any(r[flag] for flag in flags) for r in reports)
            values[name].append(100.0 * hits / len(reports))
    metrics = {}
    for name, series in values.items():
        mean = statistics.fmean(series)
        sem = statistics.stdev(series) / math.sqrt(len(series)) if len(series) > 1 else 0.0
        metrics[name] = {"mean": mean, "standard_error": sem, "ci_lower": mean - 1.96 * sem, "ci_upper": mean + 1.96 * sem}
    return {"num_seeds_averaged": seeds, "num_competitions_per_seed": len(by_competition), "metrics": metrics}


def pass_at_k(grades: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Medal pass@k for every k from 1 to the largest number of runs of one competition.

    Parameters
    ----------
    grades : sequence of mapping
        One grade per run with ``competition_id`` and the medal fields.

    Returns
    -------
    list of dict
        ``{"k", "percentage", "competitions"}``: the unbiased estimate (in percent, higher is
        better) averaged over the ``competitions`` that have at least ``k`` runs.
    """
    counts: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for grade in grades:
        if grade.get("competition_id"):
            entry = counts[str(grade["competition_id"])]
            entry[0] += 1
            entry[1] += _any_medal(grade)
    if not counts:
        return []
    rows = []
    for k in range(1, max(n for n, _ in counts.values()) + 1):
        estimates = [1.0 - math.comb(n - c, k) / math.comb(n, k) for n, c in counts.values() if n >= k]
        rows.append({"k": k, "percentage": 100.0 * statistics.fmean(estimates), "competitions": len(estimates)})
    return rows


def summarize_batch(results: Sequence[BatchResult], *, excluded_verdicts: Collection[str] = NOT_CERTIFIED,
                    clusters: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Aggregate a batch's audit results (see the module docstring for each section).

    Parameters
    ----------
    results : sequence of BatchResult
        From :func:`audit.batch.audit_batch`, in batch order.
    excluded_verdicts : collection of str
        Verdict kinds whose runs are disqualified in the ``*_excluding_flagged`` figures
        (default :data:`NOT_CERTIFIED`: flagged, incomplete and failed audits).
    clusters : mapping, optional
        :func:`audit.clusters.copy_clusters` of the batch, stored as ``copy_clusters``.

    Returns
    -------
    dict
        JSON-ready summary with ``schema_version``.
    """
    excluded = set(excluded_verdicts)
    grades = [_grade_of(r) for r in results]
    verdicts = [_verdict_of(r) for r in results]
    kept = [g if v not in excluded else _zero(g["competition_id"]) for g, v in zip(grades, verdicts)]

    rule_findings: Counter[str] = Counter()
    rule_runs: dict[str, set[str]] = defaultdict(set)
    rule_info: dict[str, dict[str, Any]] = {}
    category_findings: Counter[str] = Counter()
    category_runs: dict[str, set[str]] = defaultdict(set)
    for result in results:
        for finding in (result.report or {}).get("findings", []):
            rule_id, category = finding.get("rule_id"), finding.get("category")
            rule_findings[rule_id] += 1
            rule_runs[rule_id].add(result.entry.run_id)
            rule_info.setdefault(rule_id, {"category": category, "severity": finding.get("severity")})
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
        "totals": grade_totals(grades),
        "totals_excluding_flagged": grade_totals(kept),
        "verdicts": {kind: verdicts.count(kind) for kind in VERDICT_KINDS},
        "not_certified": {
            kind: {"runs": sum(v == kind for v in verdicts),
                   "valid_submissions": sum(g["valid_submission"] for g, v in zip(grades, verdicts) if v == kind),
                   "medals": sum(_any_medal(g) for g, v in zip(grades, verdicts) if v == kind)}
            for kind in ("incomplete", "error")
        },
        "seeds": seed_aggregate(grades),
        "seeds_excluding_flagged": seed_aggregate(kept),
        "pass_at_k": pass_at_k(grades),
        "pass_at_k_excluding_flagged": pass_at_k(kept),
        "rules": sorted(
            ({"rule_id": rule, **rule_info[rule], "findings": rule_findings[rule], "runs": len(rule_runs[rule])}
             for rule in rule_findings),
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
