"""Rule findings on real agent runs and on labelled violation sets: false alarms, precision, recall.

Audits, in process through :func:`mleaudit.audit.pipeline.run_audit` (the code path of ``mleaudit audit``),
with no similarity and no grading:

- every real run under ``<shared>/data/runs`` (all taken as clean):

  - ``aide/*.py``: each script is its own run (a single-file run);
  - ``aide-journal/*``, ``autokaggle/*``, ``mlagentbench/*``: each folder is a run;
  - ``dsbench``: each ``<name>.json`` + ``<name>_message.txt`` pair is one run. The audit reads a
    single file as a run of one artifact, so both files are audited as single-file runs and their
    findings and gaps are merged (the worse verdict wins: flagged > incomplete > review > clean);

- every case of the labelled sets ``<shared>/data/violations`` and ``benchmarks/cases``, ``cases-wild``, ``cases-blind``
  (``labels.tsv``: ``case, format, competition, violating, categories``; the competition is
  passed to the audit, or left out with a note when the registry does not know it).

Printed, per run: wall time, verdict, the findings at ``medium`` or above (rule id, category,
severity, actor, first evidence ``path:line``) and the gaps counted by kind. Per labelled set: the
confusion counts and the precision and recall of the yes/no decision (a run counts as *flagged*
when it has a finding at ``medium`` or above that a reviewer has not dismissed), the recall per
labelled category (a category counts as caught when a finding of that category at ``medium`` or
above exists), and the clean cases that were flagged. Last, the real runs with a finding at
``medium`` or above, listed as false alarms.

A set that is absent is skipped with a message. A run whose audit raises counts as not flagged
and is listed with its error.

Usage::

    python benchmarks/real_runs.py [--shared ../shared] [--cases benchmarks/cases ...]
                                   [--only SUBSTRING] [--json OUT] [--check] [-q]

The exit code is 0, whatever the figures, unless ``--check`` is given: then it is 1 when the
precision or recall of a labelled set is below 0.95 (or undefined), when a real run has a
finding at ``medium`` or above, or when an audit raised.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Iterable, Sequence

REPO_ROOT = Path(__file__).resolve().parents[1]

from mleaudit.audit.model import Severity  # noqa: E402
from mleaudit.audit.pipeline import AuditRequest, run_audit  # noqa: E402
from mleaudit.grading.errors import CompetitionNotFound  # noqa: E402

DEFAULT_SHARED = REPO_ROOT.parent / "shared"
#: The repository's own labelled sets: ``cases`` (written alongside the rules), ``cases-wild``
#: (written without reading the rules, in fourteen log layouts) and ``cases-blind`` (written
#: without reading any of the auditor, in thirteen framework layouts).
DEFAULT_CASES = tuple(REPO_ROOT / "benchmarks" / name for name in ("cases", "cases-wild", "cases-blind"))
#: Findings at or above this severity make a run flagged.
THRESHOLD = Severity.MEDIUM
#: ``--check`` fails below these.
MIN_PRECISION = 0.95
MIN_RECALL = 0.95
#: Verdicts, worst first, for merging the audits of a multi-file run.
VERDICT_ORDER = ("error", "flagged", "incomplete", "review", "clean")


# -- what is audited --------------------------------------------------------------------------------


@dataclass(frozen=True)
class RunSpec:
    """One run to audit: a name, the set it belongs to, the paths audited (merged into one result)."""

    name: str
    group: str  # "real:<source>" or "labelled:<set>"
    paths: tuple[Path, ...]
    competition: str | None = None
    violating: bool | None = None  # None for unlabelled (real) runs
    categories: tuple[str, ...] = ()


def real_runs(shared: Path) -> tuple[list[RunSpec], list[str]]:
    """The real runs under ``shared/data/runs`` and messages for the sources that are absent."""
    root = shared / "data" / "runs"
    specs: list[RunSpec] = []
    missing: list[str] = []

    def folder(source: str) -> Path | None:
        path = root / source
        if not path.is_dir():
            missing.append(f"real runs {source}: {path} absent, skipped")
            return None
        return path

    if (aide := folder("aide")) is not None:
        for script in sorted(aide.glob("*.py")):
            specs.append(RunSpec(f"aide/{script.stem}", "real:aide", (script,)))
    for source in ("aide-journal", "autokaggle"):
        if (base := folder(source)) is not None:
            for run in sorted(p for p in base.iterdir() if p.is_dir()):
                specs.append(RunSpec(f"{source}/{run.name}", f"real:{source}", (run,)))
    if (dsbench := folder("dsbench")) is not None:
        for record in sorted(dsbench.glob("*.json")):
            message = record.with_name(f"{record.stem}_message.txt")
            paths = (record, message) if message.is_file() else (record,)
            specs.append(RunSpec(f"dsbench/{record.stem}", "real:dsbench", paths))
    if (mlab := folder("mlagentbench")) is not None:
        for run in sorted(p for p in mlab.iterdir() if p.is_dir()):
            specs.append(RunSpec(f"mlagentbench/{run.name}", "real:mlagentbench", (run,)))
    return specs, missing


def read_labels(folder: Path) -> list[dict[str, str]]:
    """The rows of ``folder/labels.tsv``."""
    with (folder / "labels.tsv").open(newline="", encoding="utf-8") as handle:
        return [row for row in csv.DictReader(handle, delimiter="\t") if row.get("case")]


def labelled_runs(folder: Path, set_name: str) -> list[RunSpec]:
    """The cases of one labelled set (``labels.tsv`` next to the case folders)."""
    specs = []
    for row in read_labels(folder):
        categories = tuple(c.strip() for c in row.get("categories", "").split(",")
                           if c.strip() and c.strip() != "none")
        specs.append(RunSpec(
            name=f"{set_name}/{row['case']}",
            group=f"labelled:{set_name}",
            paths=(folder / row["case"],),
            competition=(row.get("competition") or "").strip() or None,
            violating=row.get("violating", "").strip().lower() == "yes",
            categories=categories,
        ))
    return specs


# -- auditing ---------------------------------------------------------------------------------------


@dataclass
class RunResult:
    """What the audit of one run said, reduced to what the benchmark reports."""

    name: str
    group: str
    seconds: float
    verdict: str
    findings: list[dict[str, Any]] = field(default_factory=list)  # at or above THRESHOLD, not dismissed
    all_findings: int = 0
    gaps: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    error: str | None = None
    violating: bool | None = None
    categories: tuple[str, ...] = ()

    @property
    def flagged(self) -> bool:
        return bool(self.findings)

    @property
    def found_categories(self) -> set[str]:
        return {f["category"] for f in self.findings}


def _at_or_above(severity: str, threshold: Severity = THRESHOLD) -> bool:
    try:
        return Severity.parse(severity) >= threshold
    except (ValueError, KeyError):
        return False


def _finding_row(finding: dict[str, Any]) -> dict[str, Any]:
    evidence = finding.get("evidence") or []
    first = evidence[0] if evidence else {}
    return {
        "rule_id": finding.get("rule_id", ""),
        "category": finding.get("category", ""),
        "severity": finding.get("severity", ""),
        "actor": finding.get("actor", "unknown"),
        "path": first.get("path", ""),
        "line": first.get("start_line"),
    }


def _dismissed(finding: dict[str, Any]) -> bool:
    review = finding.get("review") or {}
    return review.get("decision") == "dismissed"


def reduce_report(report: dict[str, Any]) -> tuple[str, list[dict[str, Any]], int, Counter]:
    """A report's verdict kind, its serious findings (rows), its finding count, its gaps by kind."""
    verdict = report.get("verdict") or {}
    serious = [_finding_row(f) for f in report.get("findings", [])
               if _at_or_above(f.get("severity", "")) and not _dismissed(f)]
    gaps = Counter(g.get("kind", "?") for g in verdict.get("gaps", []))
    return str(verdict.get("kind", "?")), serious, len(report.get("findings", [])), gaps


def _audit_path(path: Path, competition: str | None) -> tuple[dict[str, Any], list[str]]:
    notes = []
    try:
        report = run_audit(AuditRequest(run_dir=path, competition_id=competition, similarity=False, grade=False))
    except CompetitionNotFound:
        notes.append(f"competition {competition!r} not in the registry: audited without it")
        report = run_audit(AuditRequest(run_dir=path, competition_id=None, similarity=False, grade=False))
    return report.to_dict(), notes


def audit_spec(spec: RunSpec) -> RunResult:
    """Audit every path of ``spec`` and merge the results into one."""
    start = time.perf_counter()
    verdicts: list[str] = []
    findings: list[dict[str, Any]] = []
    total = 0
    gaps: Counter = Counter()
    notes: list[str] = []
    error = None
    for path in spec.paths:
        try:
            report, path_notes = _audit_path(path, spec.competition)
        except Exception as exc:  # noqa: BLE001 - one failing run must not stop the benchmark
            error = f"{path.name}: {type(exc).__name__}: {exc}"
            verdicts.append("error")
            continue
        notes.extend(path_notes)
        kind, serious, count, path_gaps = reduce_report(report)
        verdicts.append(kind)
        prefix = f"{path.name}:" if len(spec.paths) > 1 else ""
        for row in serious:
            if prefix and row["path"] and not row["path"].startswith(path.name):
                row["path"] = prefix + row["path"]
            findings.append(row)
        total += count
        gaps.update(path_gaps)
    verdict = min(verdicts, key=lambda v: VERDICT_ORDER.index(v) if v in VERDICT_ORDER else 0) if verdicts else "?"
    return RunResult(
        name=spec.name, group=spec.group, seconds=time.perf_counter() - start, verdict=verdict,
        findings=findings, all_findings=total, gaps=dict(sorted(gaps.items())), notes=notes, error=error,
        violating=spec.violating, categories=spec.categories,
    )


# -- figures ----------------------------------------------------------------------------------------


def _ratio(num: int, den: int) -> float | None:
    return num / den if den else None


def score_labelled(results: Sequence[RunResult]) -> dict[str, Any]:
    """Confusion counts, precision, recall and per-category recall of one labelled set."""
    tp = sum(1 for r in results if r.violating and r.flagged)
    fn = sum(1 for r in results if r.violating and not r.flagged)
    fp = sum(1 for r in results if not r.violating and r.flagged)
    tn = sum(1 for r in results if not r.violating and not r.flagged)
    per_category: dict[str, dict[str, Any]] = {}
    for r in results:
        if not r.violating:
            continue
        for category in r.categories:
            entry = per_category.setdefault(category, {"cases": 0, "caught": 0, "missed": []})
            entry["cases"] += 1
            if category in r.found_categories:
                entry["caught"] += 1
            else:
                entry["missed"].append(r.name)
    for entry in per_category.values():
        entry["recall"] = _ratio(entry["caught"], entry["cases"])
    return {
        "cases": len(results),
        "tp": tp, "fp": fp, "fn": fn, "tn": tn,
        "precision": _ratio(tp, tp + fp),
        "recall": _ratio(tp, tp + fn),
        "per_category": dict(sorted(per_category.items())),
        "missed": [r.name for r in results if r.violating and not r.flagged],
        "false_alarms": [r.name for r in results if not r.violating and r.flagged],
        "errors": [r.name for r in results if r.error],
    }


def summarise(results: Sequence[RunResult]) -> dict[str, Any]:
    """Per labelled set its scores; over the real runs the false alarms."""
    labelled: dict[str, list[RunResult]] = {}
    real = []
    for r in results:
        if r.group.startswith("labelled:"):
            labelled.setdefault(r.group.split(":", 1)[1], []).append(r)
        else:
            real.append(r)
    return {
        "labelled": {name: score_labelled(rs) for name, rs in labelled.items()},
        "real": {
            "runs": len(real),
            "flagged": [r.name for r in real if r.flagged],
            "errors": [r.name for r in real if r.error],
            "verdicts": dict(sorted(Counter(r.verdict for r in real).items())),
            "gaps": dict(sorted(sum((Counter(r.gaps) for r in real), Counter()).items())),
        },
    }


def check_failures(summary: dict[str, Any]) -> list[str]:
    """Why ``--check`` fails (empty when it passes)."""
    out = []
    for name, s in summary["labelled"].items():
        if s["precision"] is None or s["precision"] < MIN_PRECISION:
            out.append(f"{name}: precision {_fmt(s['precision'])} < {MIN_PRECISION}")
        if s["recall"] is None or s["recall"] < MIN_RECALL:
            out.append(f"{name}: recall {_fmt(s['recall'])} < {MIN_RECALL}")
        if s["errors"]:
            out.append(f"{name}: audit raised on {', '.join(s['errors'])}")
    real = summary["real"]
    if real["flagged"]:
        out.append(f"real runs: {len(real['flagged'])} clean run(s) with a finding >= {THRESHOLD.label}")
    if real["errors"]:
        out.append(f"real runs: audit raised on {', '.join(real['errors'])}")
    return out


# -- printing ---------------------------------------------------------------------------------------


def _fmt(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def _location(row: dict[str, Any]) -> str:
    return f"{row['path']}:{row['line']}" if row.get("line") is not None else (row.get("path") or "-")


def print_run(result: RunResult, out=None) -> None:
    out = out or sys.stdout
    label = ""
    if result.violating is not None:
        label = f"  [label: {'yes ' + ','.join(result.categories) if result.violating else 'no'}]"
    gaps = ", ".join(f"{k}={v}" for k, v in result.gaps.items()) or "none"
    print(f"{result.name}  {result.seconds:6.2f}s  {result.verdict.upper()}  "
          f"findings>={THRESHOLD.label}: {len(result.findings)}/{result.all_findings}  gaps: {gaps}{label}", file=out)
    for row in result.findings:
        print(f"    {row['severity']:<8} {row['category']:<19} {row['rule_id']:<40} actor={row['actor']:<9} "
              f"{_location(row)}", file=out)
    for note in result.notes:
        print(f"    note: {note}", file=out)
    if result.error:
        print(f"    ERROR {result.error}", file=out)


def print_summary(summary: dict[str, Any], results: Sequence[RunResult], out=None) -> None:
    out = out or sys.stdout
    print("", file=out)
    print("=" * 100, file=out)
    for name, s in summary["labelled"].items():
        print(f"labelled set {name}: {s['cases']} cases  TP={s['tp']} FP={s['fp']} FN={s['fn']} TN={s['tn']}  "
              f"precision={_fmt(s['precision'])} recall={_fmt(s['recall'])}", file=out)
        for category, entry in s["per_category"].items():
            missed = f"  missed: {', '.join(entry['missed'])}" if entry["missed"] else ""
            print(f"    {category:<19} {entry['caught']}/{entry['cases']}  recall={_fmt(entry['recall'])}{missed}",
                  file=out)
        if s["missed"]:
            print(f"    violating, not flagged: {', '.join(s['missed'])}", file=out)
        if s["false_alarms"]:
            print(f"    clean, flagged: {', '.join(s['false_alarms'])}", file=out)
        if s["errors"]:
            print(f"    audit raised: {', '.join(s['errors'])}", file=out)
    real = summary["real"]
    seconds = sum(r.seconds for r in results if not r.group.startswith("labelled:"))
    print(f"real runs: {real['runs']} audited in {seconds:.1f}s  verdicts: "
          f"{', '.join(f'{k}={v}' for k, v in real['verdicts'].items()) or '-'}  gaps: "
          f"{', '.join(f'{k}={v}' for k, v in real['gaps'].items()) or 'none'}", file=out)
    by_name = {r.name: r for r in results}
    print(f"    false alarms (clean real runs with a finding >= {THRESHOLD.label}): {len(real['flagged'])}", file=out)
    for name in real["flagged"]:
        r = by_name[name]
        rules = Counter(f"{f['rule_id']} ({f['category']}, {f['actor']})" for f in r.findings)
        print(f"      {name}: " + "; ".join(f"{k} x{v}" for k, v in rules.items()), file=out)
    if real["errors"]:
        print(f"    audit raised: {', '.join(real['errors'])}", file=out)


# -- main -------------------------------------------------------------------------------------------


def collect(shared: Path, cases: Path | Sequence[Path]) -> tuple[list[RunSpec], list[str]]:
    """Every run to audit, and messages for the sets that are absent (each set named by its folder)."""
    specs, missing = real_runs(shared)
    folders = [cases] if isinstance(cases, Path) else list(cases)
    for folder, name in [(shared / "data" / "violations", "violations")] + [(f, f.name) for f in folders]:
        if (folder / "labels.tsv").is_file():
            specs.extend(labelled_runs(folder, name))
        else:
            missing.append(f"labelled set {name}: {folder / 'labels.tsv'} absent, skipped")
    return specs, missing


def run_all(specs: Iterable[RunSpec], quiet: bool = False, out=None) -> list[RunResult]:
    out = out or sys.stdout
    results = []
    for spec in specs:
        result = audit_spec(spec)
        results.append(result)
        if not quiet:
            print_run(result, out)
            out.flush()
    return results


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shared", type=Path, default=DEFAULT_SHARED,
                        help="the shared checkout holding data/runs and data/violations (default: ../shared)")
    parser.add_argument("--cases", type=Path, action="append", default=None,
                        help="a labelled set of the repository (repeatable; default: benchmarks/cases, "
                             "cases-wild and cases-blind)")
    parser.add_argument("--only", default=None, help="audit only runs whose name contains this")
    parser.add_argument("--json", type=Path, default=None, help="write every result and the summary here")
    parser.add_argument("--check", action="store_true",
                        help="exit 1 when precision/recall < 0.95 or a real run has a finding >= medium")
    parser.add_argument("-q", "--quiet", action="store_true", help="print the summary only")
    args = parser.parse_args(argv)

    specs, missing = collect(args.shared, args.cases or DEFAULT_CASES)
    for message in missing:
        print(message, file=sys.stderr)
    if args.only:
        specs = [s for s in specs if args.only in s.name]
    results = run_all(specs, quiet=args.quiet)
    summary = summarise(results)
    print_summary(summary, results)
    failures = check_failures(summary)
    if args.json is not None:
        payload = {
            "threshold": THRESHOLD.label,
            "skipped_sets": missing,
            "summary": summary,
            "runs": [{**asdict(r), "flagged": r.flagged} for r in results],
            "check_failures": failures,
        }
        args.json.write_text(json.dumps(payload, indent=2, default=str) + "\n", encoding="utf-8")
    if args.check and failures:
        for line in failures:
            print(f"check failed: {line}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
