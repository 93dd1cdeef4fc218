"""Figures over the repeated runs of each competition: MLE-bench's seed aggregation (mean ± SEM of
the per-seed percentages, naming every run it leaves out or pads) and medal pass@k.

Grades in, figures out: nothing here knows of audits or verdicts.
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from pathlib import PurePath
from typing import Any, Mapping, Sequence


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
