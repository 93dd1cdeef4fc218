"""Wall time of the rules stage of an audit, run by run, over the real agent runs.

Each run is audited as ``mleaudit audit RUN --no-similarity`` does it, without grading: the run is
loaded (:func:`mleaudit.audit.run.load_run`) and audited by :func:`mleaudit.audit.pipeline.audit_run` with no
reference corpus, so the similarity stage is skipped. The time is split into the stages of the
pipeline (wrapping the functions :mod:`mleaudit.audit.pipeline` calls, so nothing is measured twice):

- ``load``: walking the run dir, reading and hashing its files;
- ``expand``: notebooks, log adapters and here-documents into code units and log events;
- ``parse``: tree-sitter parses of the code units (cached by content afterwards);
- ``rules``: every rule of the ruleset (queries, regexes, built-in checks) and the findings;
- ``total``: load plus the whole of ``audit_run`` (report assembly included).

Runs: every folder of ``runs/autokaggle`` and ``violations/case-*``, and every file of
``runs/aide`` and ``runs/dsbench`` as a run of one file. ``--generated-mb N`` adds a run made of
one generated ``.py`` file of N MB (the real AIDE solutions concatenated, functions renamed),
the size at which some rules' queries stop scaling linearly.

The target is a ``total`` under one second per real run (``--target``). Exit status: 0 when
every run meets it, 1 when one does not, 2 when the shared data folder is missing (this is a
benchmark, not a test).

Usage: ``python benchmarks/rules_speed.py [--data ../shared/data] [--rules rules] [--repeat 1]
[--generated-mb 0] [--target 1.0]``
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from contextlib import contextmanager
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = REPO_ROOT.parent / "shared" / "data"
STAGES = ("load", "expand", "parse", "rules")


def find_runs(data: Path) -> list[tuple[str, Path]]:
    """``(label, path)`` of every real run, in a fixed order."""
    runs: list[tuple[str, Path]] = []
    for folder in sorted((data / "runs" / "autokaggle").iterdir()):
        if folder.is_dir():
            runs.append((f"autokaggle/{folder.name}", folder))
    for case in sorted((data / "violations").glob("case-*")):
        runs.append((f"violations/{case.name}", case))
    for group in ("aide", "dsbench"):
        for path in sorted((data / "runs" / group).iterdir()):
            if path.is_file():
                runs.append((f"{group}/{path.name}", path))
    return runs


def generated_run(folder: Path, data: Path, megabytes: float) -> Path:
    """A run dir holding one ``train.py`` of about ``megabytes`` MB of real agent code."""
    parts = [p.read_text(encoding="utf-8") for p in sorted((data / "runs" / "aide").glob("*.py"))]
    blob = "\n\n".join(parts)
    chunks, size, copy = [], 0, 0
    while size < megabytes * 1024 * 1024:
        chunk = blob.replace("def ", f"def v{copy}_")
        chunks.append(chunk)
        size += len(chunk)
        copy += 1
    run_dir = folder / f"generated-{megabytes:g}mb"
    run_dir.mkdir()
    (run_dir / "train.py").write_text("".join(chunks), encoding="utf-8")
    return run_dir


class StageClock:
    """Accumulates the wall time spent in the functions :mod:`mleaudit.audit.pipeline` calls."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = defaultdict(float)

    def wrap(self, stage: str, function):
        def timed(*args, **kwargs):
            start = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                self.seconds[stage] += time.perf_counter() - start

        return timed

    @contextmanager
    def installed(self):
        import mleaudit.audit.pipeline.orchestration as pipeline

        names = {"expand": "expand_run", "parse": "parse", "rules": "evaluate_ruleset"}
        saved = {name: getattr(pipeline, name) for name in names.values() if hasattr(pipeline, name)}
        for stage, name in names.items():
            if name in saved:
                setattr(pipeline, name, self.wrap(stage, saved[name]))
        try:
            yield
        finally:
            for name, function in saved.items():
                setattr(pipeline, name, function)


def audit_once(path: Path, ruleset) -> tuple[dict[str, float], int, int, int]:
    """Stage seconds, code units, log events and findings of one audit of ``path``."""
    from mleaudit.audit.pipeline import AuditOptions, audit_run
    from mleaudit.audit.run import load_run

    clock = StageClock()
    start = time.perf_counter()
    run = load_run(path)
    clock.seconds["load"] = time.perf_counter() - start
    with clock.installed():
        report = audit_run(run, ruleset=ruleset, options=AuditOptions(no_similarity_reason="benchmark"))
    clock.seconds["total"] = time.perf_counter() - start
    return dict(clock.seconds), report.run.code_units, report.run.log_events, len(report.findings)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="the shared data folder")
    parser.add_argument("--rules", type=Path, default=None, help="rules folder (default: the checkout's rules/)")
    parser.add_argument("--repeat", type=int, default=1, help="audits per run; the best total is shown")
    parser.add_argument("--generated-mb", type=float, default=0.0, help="also audit a generated .py of this many MB")
    parser.add_argument("--target", type=float, default=1.0, help="seconds per real run")
    args = parser.parse_args(argv)
    if not (args.data / "runs").is_dir() or not (args.data / "violations").is_dir():
        print(f"no runs under {args.data} (pass --data)", file=sys.stderr)
        return 2

    from mleaudit.audit.rules.loader import find_rules_root, load_ruleset

    start = time.perf_counter()
    ruleset = load_ruleset([find_rules_root(args.rules)])
    print(f"ruleset: {len(ruleset.rules)} rules loaded in {time.perf_counter() - start:.2f}s")
    with tempfile.TemporaryDirectory(prefix="rules-speed-") as scratch:
        runs = find_runs(args.data)
        if args.generated_mb > 0:
            runs.append((f"generated/{args.generated_mb:g} MB .py", generated_run(Path(scratch), args.data, args.generated_mb)))
        header = f"{'run':44s} {'units':>5s} {'events':>6s} {'finds':>5s} " + " ".join(f"{s:>7s}" for s in (*STAGES, "total"))
        print(header)
        print("-" * len(header))
        totals: list[float] = []
        over: list[str] = []
        for label, path in runs:
            best = None
            for _ in range(max(1, args.repeat)):
                result = audit_once(path, ruleset)
                if best is None or result[0]["total"] < best[0]["total"]:
                    best = result
            seconds, units, events, findings = best
            cells = " ".join(f"{seconds.get(s, 0.0):7.3f}" for s in (*STAGES, "total"))
            flag = "" if seconds["total"] < args.target else "  over target"
            print(f"{label:44s} {units:5d} {events:6d} {findings:5d} {cells}{flag}", flush=True)
            if not label.startswith("generated/"):
                totals.append(seconds["total"])
                if seconds["total"] >= args.target:
                    over.append(label)
    print("-" * len(header))
    print(f"real runs: {len(totals)}; total seconds per run: median {statistics.median(totals):.3f}, "
          f"max {max(totals):.3f}, sum {sum(totals):.2f}; over the {args.target:g}s target: {len(over)}")
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
