"""Time and peak memory of ``audit`` on a large run compared with a whole notebook corpus.

Builds a run whose ``code/`` folder holds ``--files`` (200) agent-style scripts, each made from a
real AIDE solution (``runs/aide``) with, in three files out of four, a contiguous slice of one
of the public notebooks (``notebooks/``) pasted into it; the slices and their places are drawn
with a fixed seed, so every invocation builds the same run. The run is then audited against
every notebook under ``notebooks/`` (the reference corpus), as ``mleaudit audit RUN --corpus
notebooks/`` does (no grading: the run has no competition).

Each measurement runs in a fresh Python process, which reports its wall time, the peak resident
memory of the process (``ru_maxrss``; worker processes are listed apart), the time the copy
detector took (``DetectionCorpus.evidence_all``, summed over processes) and the size of the
report:

- ``capped`` (the default): every pair is measured (containment, detector score), and only the
  pairs the report lists (the run's top 10 in report order and every flagged pair:
  ``SimilarityOptions.max_pairs`` and ``max_pairs_per_agent``, set by the audit) get fragments,
  each listing its 50 longest Dolos fragments (``max_fragments_per_pair``);
- ``capped, --jobs N``: the same in N forked worker processes (``AuditOptions.similarity_jobs``);
- ``uncapped`` (``--baseline``): no cap: a full pair report with fragments for every (agent
  file, kernel) pair, as before the caps existed. Takes minutes and several GB.

The machine's load is printed too: on a shared machine, timings move with it.

Usage: ``python benchmarks/audit_scale.py [--data ../shared/data] [--files 200] [--jobs N] [--baseline]``
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]

DEFAULT_DATA = REPO_ROOT.parent / "shared" / "data"
SEED = 20240611


def build_run(data: Path, run_dir: Path, n_files: int, seed: int = SEED) -> int:
    """Write ``run_dir/code/agent_NNN.py`` (``n_files`` files); return how many carry a pasted slice."""
    from mleaudit.audit.similarity.corpus import iter_reference_files, read_reference

    hosts = [p.read_text(encoding="utf-8").splitlines() for p in sorted((data / "runs" / "aide").glob("*.py"))]
    notebooks = []
    for path, relative in iter_reference_files(data / "notebooks"):
        unit = read_reference(path, relative)
        if getattr(unit, "language", None) == "python":
            lines = unit.text.splitlines()
            if len(lines) >= 40:
                notebooks.append(lines)
    if not hosts or not notebooks:
        raise SystemExit(f"no AIDE runs or notebooks under {data}")
    rng = random.Random(seed)
    code = run_dir / "code"
    code.mkdir(parents=True, exist_ok=True)
    (run_dir / "run.json").write_text(json.dumps({"run_id": "scale", "agent_id": "bench"}), encoding="utf-8")
    pasted = 0
    for i in range(n_files):
        host = rng.choice(hosts)
        lines = list(host)
        if i % 4 != 3:
            source = rng.choice(notebooks)
            size = max(10, int(len(source) * rng.uniform(0.1, 0.5)))
            start = rng.randrange(0, max(1, len(source) - size))
            at = rng.randrange(0, len(lines) + 1)
            lines[at:at] = source[start : start + size]
            pasted += 1
        (code / f"agent_{i:03d}.py").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return pasted


def _child(run_dir: Path, corpus: Path, uncapped: bool, jobs: int) -> None:
    from mleaudit.audit.pipeline import AuditOptions, audit_run
    from mleaudit.audit.rules.loader import find_rules_root, load_ruleset
    from mleaudit.audit.run import load_run
    from mleaudit.audit.similarity import DetectionCorpus, SimilarityOptions

    detector_seconds = multiprocessing.Value("d", 0.0)
    evidence_all = DetectionCorpus.evidence_all

    def timed(self, agent, wanted=None):
        start = time.perf_counter()
        try:
            return evidence_all(self, agent, wanted)
        finally:
            with detector_seconds.get_lock():
                detector_seconds.value += time.perf_counter() - start

    DetectionCorpus.evidence_all = timed  # measured, not changed
    ruleset = load_ruleset([find_rules_root(None)])
    # uncapped: every pair kept, with all its fragments (caps past any count)
    uncapped_options = SimilarityOptions(max_pairs_per_agent=None, max_pairs=10**9, max_fragments_per_pair=10**9)
    similarity = uncapped_options if uncapped else SimilarityOptions()
    options = AuditOptions(corpus_dir=corpus, similarity=similarity, similarity_jobs=jobs)
    start = time.perf_counter()
    report = audit_run(load_run(run_dir), ruleset=ruleset, options=options)
    elapsed = time.perf_counter() - start
    text = json.dumps(report.to_dict(), sort_keys=True)
    section = report.similarity or {}
    print(json.dumps({
        "seconds": elapsed,
        "detector_seconds": detector_seconds.value,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "worker_peak_rss_mb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024,
        "report_mb": len(text) / 1e6,
        "pairs_shown": len(section.get("pairs", ())),
        "findings": len(report.findings),
        "flagged_files": len({p["agent_path"] for p in section.get("pairs", ()) if p.get("flagged")}),
    }))


def _measure(run_dir: Path, corpus: Path, uncapped: bool, jobs: int) -> dict:
    command = [sys.executable, __file__, "--child", str(run_dir), "--corpus", str(corpus), "--jobs", str(jobs)]
    if uncapped:
        command.append("--uncapped")
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"measurement failed:\n{done.stderr[-4000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="the shared data folder")
    parser.add_argument("--files", type=int, default=200, help="agent files in the generated run")
    parser.add_argument("--jobs", type=int, default=0,
                        help="also measure with this many worker processes (0: the CPUs available, 1: skip)")
    parser.add_argument("--baseline", action="store_true",
                        help="also measure the uncapped comparison (fragments for every pair; slow)")
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--corpus", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--uncapped", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child is not None:
        _child(args.child, args.corpus, args.uncapped, max(1, args.jobs))
        return
    corpus = args.data / "notebooks"
    if not corpus.is_dir():
        raise SystemExit(f"no notebook corpus at {corpus}")
    available = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    jobs = args.jobs or available
    with tempfile.TemporaryDirectory(prefix="audit-scale-") as tmp:
        run_dir = Path(tmp) / "run"
        pasted = build_run(args.data, run_dir, args.files)
        n_refs = sum(1 for p in corpus.rglob("*") if p.suffix in (".py", ".ipynb"))
        print(f"run: {args.files} agent files ({pasted} with a pasted notebook slice); corpus: {n_refs} files; "
              f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}")
        modes = [("capped", False, 1)]
        if jobs > 1:
            modes.append((f"capped, --jobs {jobs}", False, jobs))
        if args.baseline:
            modes.append(("uncapped", True, 1))
        for name, uncapped, n_jobs in modes:
            result = _measure(run_dir, corpus, uncapped, n_jobs)
            workers = f" (workers {result['worker_peak_rss_mb']:.0f} MB each)" if n_jobs > 1 else ""
            print(f"{name:18s} {result['seconds']:7.1f} s (detector {result['detector_seconds']:6.1f} s)  "
                  f"peak {result['peak_rss_mb']:6.0f} MB{workers}  report {result['report_mb']:5.1f} MB  "
                  f"pairs shown {result['pairs_shown']:4d}  findings {result['findings']:3d}  "
                  f"files flagged {result['flagged_files']:3d}  load {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
