"""The summary of a batch audit: MLE-bench's totals with and without the flagged runs, and what was found.

A compliance lead's question after a sweep is "what is the medal table once the runs that broke
the rules are taken out?". :func:`summarize_batch` answers it from the runs' audit reports:

- ``coverage``: what the totals count: runs graded, not graded (with a submission, or without
  one) and not audited at all;
- ``totals``: MLE-bench's aggregate fields (``total_runs``, ``total_runs_with_submissions``,
  ``total_valid_submissions``, ``total_medals``, ``total_gold_medals``, ...) over every run; a
  run without a grade (not graded, audit failed) counts as MLE-bench's zero report, except that
  a submission it holds counts in ``total_runs_with_submissions``;
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
  (mean ± 1.96 SEM) are reported, with and without the flagged runs. When competitions have
  uneven numbers of runs, ``left_out`` names every run of a dropped seed (competition, run id,
  path and why: ``"seed 3 incomplete: 4 of 22 competitions have a 3rd run"``); with
  ``pad_missing`` (MLE-bench's ``--pad-missing``) every seed is kept instead and a missing run
  counts as a failed one, each listed in ``padded``;
- ``pass_at_k``: the share of competitions with a medal in at least one of *k* attempts, with the
  unbiased estimator ``1 - C(n-c, k) / C(n, k)`` per competition of *n* runs and *c* medals (Chen
  et al., 2021, "Evaluating Large Language Models Trained on Code"), averaged over the
  competitions with ``n >= k``;
- ``verdicts``, ``rules``, ``categories``, ``competitions``: counts a reviewer sorts by (a run
  counts into a category for a finding of severity ``low`` or above, not for context at ``info``;
  a finding a reviewer dismissed counts nowhere but in its rule's ``dismissed``);
- ``copy_clusters``: runs and notebooks linked by flagged similarity pairs (:mod:`mleaudit.audit.clusters`).
"""

from __future__ import annotations

import math
import statistics
from collections import Counter, defaultdict
from pathlib import PurePath
from typing import Any, Collection, Mapping, Sequence

from mleaudit.grading.grade import grade_totals

from mleaudit.audit.batch import BatchResult, report_file_name

__all__ = ["BATCH_SUMMARY_VERSION", "NOT_CERTIFIED", "VERDICT_KINDS", "SEED_METRICS", "describe_seeds", "pass_at_k",
           "seed_aggregate", "summarize_batch"]

#: Bumped when a key of the summary changes meaning or disappears. 2.1: ``seeds`` name the runs
#: they leave out and the entries they pad; their ``metrics`` is ``None`` when no seed is averaged.
#: 2.2: ``coverage``; a run not graded counts its submission; ``categories`` from findings >= low;
#: dismissed findings only in ``rules[].dismissed``.
BATCH_SUMMARY_VERSION = "2.2"

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


def _any_medal(grade: Mapping[str, Any]) -> bool:
    return bool(grade["gold_medal"] or grade["silver_medal"] or grade["bronze_medal"])


def _ordinal(number: int) -> str:
    """``1st``, ``2nd``, ``3rd``, ``4th``, ``11th``, ``21st``..."""
    suffix = "th" if 10 <= number % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(number % 10, "th")
    return f"{number}{suffix}"


def _run_label(grade: Mapping[str, Any], position: int) -> dict[str, Any]:
    run_id, run_path = grade.get("run_id"), grade.get("run_path")
    return {"position": position, "run_id": None if run_id is None else str(run_id),
            "run_path": None if run_path is None else str(run_path),
            "competition_id": None if not grade.get("competition_id") else str(grade["competition_id"])}


def _expected_competitions(competitions: Sequence[str] | None) -> list[str] | None:
    if competitions is None:
        return None
    if isinstance(competitions, (str, bytes)):
        raise ValueError(f"competitions must be a list of competition ids, not the single string {competitions!r}")
    expected = list(dict.fromkeys(str(c) for c in competitions))
    if not expected:
        raise ValueError("competitions is empty: give the competition ids every seed holds, "
                         "or None to take them from the runs")
    if any(not c.strip() for c in expected):
        raise ValueError("competitions holds an empty competition id")
    return expected


def seed_aggregate(grades: Sequence[Mapping[str, Any]], *, pad_missing: bool = False,
                   competitions: Sequence[str] | None = None) -> dict[str, Any] | None:
    """MLE-bench's mean ± SEM over seeds of the per-seed percentages, naming every run it leaves out.

    The runs of each competition are taken in batch order and seed *i* holds the *i*-th run of
    every competition. By default only complete seeds are averaged, as MLE-bench's
    ``experiments/aggregate_grading_reports.py`` does: the runs of a seed that some competition
    lacks are left out, each listed in ``left_out`` with the reason (``"seed 3 incomplete: 4 of
    22 competitions have a 3rd run"``). With ``pad_missing`` (that script's ``--pad-missing``)
    every seed up to the largest number of runs of one competition is kept and a competition
    without a run for it counts as a failed run there (no submission, no valid submission, no
    medal); each padded competition and its seeds are listed in ``padded``.

    A run is also left out when it names no competition, when it is a repeat of an earlier run
    (same ``run_path``, or same ``run_id`` when no path is given; the first counts once) or when
    ``competitions`` is given and does not list its competition.

    Parameters
    ----------
    grades : sequence of mapping
        One grade per run, in batch order, each with ``competition_id`` and the boolean fields
        of :data:`SEED_METRICS`; optional ``run_id`` and ``run_path`` name the run in
        ``left_out`` and tell repeats apart (a grade without them is named by its position).
    pad_missing : bool, default False
        Keep incomplete seeds, padding the competitions that lack a run with a failed one.
    competitions : sequence of str, optional
        The competitions every seed holds (MLE-bench's split), in order. Default: those the
        runs name. A listed competition without any run leaves no seed complete unless
        ``pad_missing`` pads it in every seed.

    Returns
    -------
    dict or None
        ``None`` when there are no grades and no ``competitions``; otherwise:

        - ``num_seeds_averaged``, ``num_competitions_per_seed``, ``pad_missing``;
        - ``metrics``: name → ``mean``, ``standard_error`` (``ddof=1``), ``ci_lower``,
          ``ci_upper`` (mean ± 1.96 SEM), in percent, higher is better; ``None`` when no seed
          could be averaged;
        - ``runs_per_competition``: ``min`` and ``max``;
        - ``runs_averaged``: the runs that count in some averaged seed;
        - ``incomplete_seeds``: ``seed``, ``competitions_with_run``, ``competitions``,
          ``padded`` (kept with padding, else dropped) and ``reason``;
        - ``left_out``: the runs not averaged, each with ``position`` (1-based, in ``grades``),
          ``run_id``, ``run_path``, ``competition_id``, ``seed`` (``None`` when it was never
          placed in one) and ``reason``;
        - ``padded``: per padded competition ``competition_id``, ``runs``, ``seeds`` (first and
          last padded seed) and ``entries``; ``padded_entries`` counts them all;
        - ``competitions_without_runs``: listed competitions that no run names.

    Raises
    ------
    ValueError
        When ``competitions`` is a string, empty, or holds an empty id.
    """
    grades = list(grades)
    expected = _expected_competitions(competitions)
    if not grades and expected is None:
        return None
    by_competition: dict[str, list[tuple[int, Mapping[str, Any]]]] = {c: [] for c in expected or ()}
    left_out: list[dict[str, Any]] = []
    first_seen: dict[str, int] = {}
    for position, grade in enumerate(grades, start=1):
        key = grade.get("run_path") or grade.get("run_id")
        if key is not None:
            key = str(key)
            if key in first_seen:
                left_out.append({**_run_label(grade, position), "seed": None,
                                 "reason": f"repeat of the run at position {first_seen[key]} (a run counts once in the seeds)"})
                continue
            first_seen[key] = position
        competition = grade.get("competition_id")
        if not competition:
            left_out.append({**_run_label(grade, position), "seed": None,
                             "reason": "no competition id: the run cannot be placed in a seed"})
            continue
        competition = str(competition)
        if expected is not None and competition not in by_competition:
            left_out.append({**_run_label(grade, position), "seed": None,
                             "reason": f"competition {competition} is not one of the {len(expected)} competitions "
                                       "the seeds hold"})
            continue
        by_competition.setdefault(competition, []).append((position, grade))

    total = len(by_competition)
    counts = [len(runs) for runs in by_competition.values()]
    most, fewest = (max(counts), min(counts)) if counts else (0, 0)
    incomplete: list[dict[str, Any]] = []
    # Seed s (0-based) is complete when every competition has more than s runs.
    with_run = [0] * most
    for count in counts:
        for seed in range(count):
            with_run[seed] += 1
    for seed in range(fewest, most):
        reason = (f"seed {seed + 1} incomplete: {with_run[seed]} of {total} competition{'s' if total != 1 else ''} "
                  f"{'have' if total != 1 else 'has'} a {_ordinal(seed + 1)} run")
        incomplete.append({"seed": seed + 1, "competitions_with_run": with_run[seed], "competitions": total,
                           "padded": pad_missing, "reason": reason})
    num_seeds = most if pad_missing else fewest

    hits = {name: [0] * num_seeds for name in SEED_METRICS}
    runs_averaged = 0
    for runs in by_competition.values():
        for seed, (position, grade) in enumerate(runs):
            if seed >= num_seeds:
                left_out.append({**_run_label(grade, position), "seed": seed + 1,
                                 "reason": incomplete[seed - fewest]["reason"]})
                continue
            runs_averaged += 1
            for name, flags in SEED_METRICS.items():
                hits[name][seed] += any(grade.get(flag) for flag in flags)
    left_out.sort(key=lambda row: row["position"])

    metrics = None
    if num_seeds:
        metrics = {}
        for name, series in hits.items():
            percentages = [100.0 * count / total for count in series]  # padded entries count as misses
            mean = statistics.fmean(percentages)
            sem = statistics.stdev(percentages) / math.sqrt(len(percentages)) if len(percentages) > 1 else 0.0
            metrics[name] = {"mean": mean, "standard_error": sem, "ci_lower": mean - 1.96 * sem,
                             "ci_upper": mean + 1.96 * sem}
    padded = []
    if pad_missing:
        padded = [{"competition_id": competition, "runs": len(runs), "seeds": [len(runs) + 1, most],
                   "entries": most - len(runs)}
                  for competition, runs in by_competition.items() if len(runs) < most]
    return {
        "num_seeds_averaged": num_seeds,
        "num_competitions_per_seed": total,
        "pad_missing": pad_missing,
        "metrics": metrics,
        "runs_per_competition": {"min": fewest, "max": most},
        "runs_averaged": runs_averaged,
        "incomplete_seeds": incomplete,
        "left_out": left_out,
        "padded": padded,
        "padded_entries": sum(row["entries"] for row in padded),
        "competitions_without_runs": [competition for competition, runs in by_competition.items() if not runs],
    }


def _named(run: Mapping[str, Any]) -> str:
    """A run's id, with its path when the path's last part is not the id (a repeated or renamed run)."""
    name = str(run.get("run_id") or f"run #{run.get('position')}")
    path = run.get("run_path")
    if not path or path == name or PurePath(str(path)).name == name:
        return name
    return f"{name} ({path})"


def _listed(items: Sequence[str], limit: int, more: str) -> str:
    shown = ", ".join(items[:limit])
    return shown + (f", … and {len(items) - limit} more {more}" if len(items) > limit else "")


def describe_seeds(seeds: Mapping[str, Any] | None, *, limit: int = 10) -> list[str]:
    """Sentences that say what the seed aggregation averaged, left out and padded.

    Parameters
    ----------
    seeds : mapping or None
        :func:`seed_aggregate`'s result (the summary's ``seeds``).
    limit : int, default 10
        Most runs, competitions and seeds named in one sentence; the rest are counted (every
        one of them stays in ``seeds``).

    Returns
    -------
    list of str
        Plain text, one sentence per item: first an overview, then one sentence per reason for
        leaving runs out (naming the runs: competition, run id and path) and per padded
        competition. Empty when ``seeds`` is ``None`` or nothing was left out or padded.
    """
    if not seeds:
        return []
    lines: list[str] = []
    left_out, padded = seeds.get("left_out") or [], seeds.get("padded") or []
    incomplete = seeds.get("incomplete_seeds") or []
    without = seeds.get("competitions_without_runs") or []
    if not (left_out or padded or incomplete or without):
        return lines
    averaged = seeds.get("num_seeds_averaged", 0)
    if without:
        lines.append(f"competitions without any run: {_listed(without, limit, 'competitions')}"
                     + (" (padded as failed in every seed)" if seeds.get("pad_missing") else
                        " (no seed is complete)"))
    if seeds.get("pad_missing"):
        lines.append(f"seeds padded: {averaged} seed(s) averaged; {seeds.get('padded_entries', 0)} missing run(s) "
                     "counted as failed (no submission, no valid submission, no medal)")
    else:
        lines.append(f"seeds: {averaged} complete seed(s) averaged; {len(left_out)} run(s) left out"
                     + (" (--pad-missing counts a missing run as failed instead of dropping its seed)"
                        if incomplete else ""))
    by_reason: dict[str, list[str]] = {}
    for run in left_out:
        label = _named(run)
        if run.get("competition_id") and run.get("seed") is not None:
            label = f"{run['competition_id']}: {label}"
        by_reason.setdefault(str(run.get("reason")), []).append(label)
    reasons = list(by_reason.items())
    for reason, runs in reasons[:limit]:
        lines.append(f"{reason}; left out: {_listed(runs, limit, 'runs')}")
    if len(reasons) > limit:
        lines.append(f"… and {sum(len(runs) for _, runs in reasons[limit:])} more run(s) left out for "
                     f"{len(reasons) - limit} more reason(s)")
    if seeds.get("pad_missing"):
        for seed in incomplete[:limit]:
            lines.append(f"{seed['reason']}; padded")
        if len(incomplete) > limit:
            lines.append(f"… and {len(incomplete) - limit} more padded seed(s)")
        for row in padded[:limit]:
            first, last = row["seeds"]
            where = f"seed {first}" if first == last else f"seeds {first}–{last}"
            lines.append(f"padded as failed: {row['competition_id']} ({row['runs']} run(s)) in {where}")
        if len(padded) > limit:
            lines.append(f"… and {len(padded) - limit} more padded competition(s)")
    return lines


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
