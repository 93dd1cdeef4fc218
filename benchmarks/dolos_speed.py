"""Speed and peak memory of the similarity engine against Dolos 3.5.1 itself, with identical figures.

Installs ``@dodona/dolos-lib@3.5.1`` with npm into a temporary folder (the tree-sitter parsers are
built with ``npm rebuild --nodedir=/usr``), writes a small Node.js runner there, and computes all
pairs over the ``.py`` files of ``similarity-golden`` twice: with Dolos (default options, language
python) and with this engine, through the library calls of ``mleaudit similarity pairs``
(:func:`~mleaudit.audit.similarity.allpairs.all_pair_metrics_of_texts`: parse, Dolos tokens, winnowing,
then :func:`~mleaudit.audit.similarity.allpairs.all_pair_metrics` per group). Two groupings are measured:

- ``per-competition``: every pair within each competition, as the golden ``dolos_pairs.tsv`` files
  hold them (one analysis per competition, all competitions in one process);
- ``all``: every pair among all files together (one analysis).

Each side runs as its own subprocess, so both timings include interpreter / runtime start-up,
module loading and reading the files; npm's install is not timed. Wall time is the subprocess's
elapsed time (best of ``--repeat`` runs); peak memory is the largest resident set size the kernel
recorded for the process (``wait4``'s ``ru_maxrss``, worst of the runs), or the largest memory of
the whole process tree seen by sampling (proportional set sizes, so that pages shared by forked
worker processes count once), whichever is larger.

Processes. Dolos runs in one Node.js process: its main thread does the analysis, while V8's
helper threads (compiler, garbage collector) add CPU time on other cores (measured: about 15 % of
its CPU time per competition, 6 to 8 % on all files), so it uses a little more than one core. The
benchmark prints its CPU time, the share of its main thread, and CPU over wall time (the cores
it used). The engine runs once per ``--jobs`` entry (default 1 and 2), with that many processes
(it forks after its imports, so the extra processes start with everything loaded). One engine
process is the like-for-like comparison of work (CPU time); two are what a user of a 2-core
machine waits for (wall time), where Dolos, written to run on one thread, cannot use the second
core. Both are printed, each with its wall-time and CPU-time ratio to Dolos. Every wall figure
comes with the machine's one-minute load average when its run started (the runs themselves add
to it: about 1 for Dolos, about the process count for the engine); judge wall figures taken on a
busy machine by the CPU figures and the stage table.

Stage table: the engine prints where its time went (CPU seconds of the process and of its
worker processes, and wall seconds, of the best run). With one process the stages are
``tokenize + fingerprint`` (parsing, the walk over the syntax trees, k-gram hashes and
winnowing) and ``pairs``; with several, the two run interleaved in the worker processes (each
takes a competition at a time in ``per-competition`` mode) and form one stage. The rest of the
wall time is interpreter start-up. The engine side's command line imports this module from its
bytecode cache (``python -c``, see :data:`ENGINE_ENTRY`), as an installed command's modules
are, rather than compiling the benchmark script on every start. It may write Python bytecode
caches (under a temporary ``PYTHONPYCACHEPREFIX``, never into the checkout) even where
``PYTHONDONTWRITEBYTECODE`` is set, as an installed package has them: the first run fills the
cache and the best-of-``--repeat`` figure is a run that uses it.

The pairs come out in the same orientation on both sides (files are analysed in sorted path
order, left = earlier file) and are compared field by field: ``similarity`` as the same
double-precision number, the six counts exactly. In ``per-competition`` mode Dolos's output is
also checked against the golden ``dolos_pairs.tsv`` files.

Exit status: 0 when every pair is identical, 1 when some differ, 2 when npm, Node.js or the
registry is unavailable (this is a benchmark, not a test).

Usage: ``python benchmarks/dolos_speed.py [--data ../shared/data] [--mode both] [--repeat 3]
[--dolos-dir DIR] [--jobs 1 2]`` (``--dolos-dir`` reuses or creates a persistent install instead
of a temporary one). ``python benchmarks/dolos_speed.py --engine MANIFEST [--jobs N]`` runs the
engine side alone (the manifest: ``{"groups": [[path, ...], ...]}``; pairs as TSV on stdout,
stages on stderr).
"""

from __future__ import annotations

import json
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

# Only the modules the engine side needs are imported here: it runs in a fresh interpreter for
# every measurement, where the measuring side's modules (argparse, subprocess, tempfile, csv,
# threading, shutil) would only add start-up time. Those are imported where they are used.

REPO_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = REPO_ROOT.parent / "shared" / "data"
DOLOS_PACKAGE = "@dodona/dolos-lib@3.5.1"
FIELDS = ("similarity", "totalOverlap", "longestFragment", "leftCovered", "rightCovered", "leftTotal", "rightTotal")
MODES = ("per-competition", "all")

# The Node.js side: read the files named in a manifest, run Dolos with its default options per
# group, print every pair (same columns as the engine side) and the runner's own wall time.
NODE_RUNNER = """\
import fs from "fs/promises";
import { Dolos, File } from "@dodona/dolos-lib";

const started = performance.now();
const manifest = JSON.parse(await fs.readFile(process.argv[2], "utf8"));
const lines = [];
for (const group of manifest.groups) {
  const files = [];
  for (const path of group) {
    // as Dolos's own reader does: the bytes decoded as UTF-8, BOM and line ends kept
    files.push(new File(path, (await fs.readFile(path)).toString()));
  }
  const dolos = new Dolos({ language: "python" });
  const report = await dolos.analyze(files);
  for (const pair of report.allPairs()) {
    lines.push([pair.leftFile.path, pair.rightFile.path, pair.similarity, pair.overlap, pair.longest,
      pair.leftCovered, pair.rightCovered, pair.leftTotal, pair.rightTotal].join("\\t"));
  }
}
process.stdout.write(lines.join("\\n") + "\\n");
process.stderr.write(`inner wall ${((performance.now() - started) / 1000).toFixed(3)} s\\n`);
"""


#: The engine side's command line (``python -c ENGINE_ENTRY BENCHMARKS_DIR MANIFEST JOBS``): this
#: module imported from its bytecode cache, as an installed command's modules are, rather than run
#: as a script, which Python compiles afresh on every start.
ENGINE_ENTRY = ("import sys; sys.path.insert(0, sys.argv[1]); import dolos_speed; "
                "dolos_speed.engine_main(sys.argv[2], int(sys.argv[3]))")


class Unavailable(Exception):
    """npm, Node.js or the npm registry cannot be used."""


# -- the engine side (runs in a subprocess: ``dolos_speed.py --engine MANIFEST``) -----------------


def _read(path: str) -> str:
    with open(path, "rb") as handle:
        return handle.read().decode("utf-8", errors="replace")  # as Node's Buffer.toString()


def engine_main(manifest_path: str, jobs: int) -> None:
    """Compute every pair of every group of the manifest with this engine; print them as TSV.

    The library path of ``mleaudit similarity pairs``: :func:`all_pair_metrics_of_texts` in
    ``jobs`` processes; with one process, its two halves (:func:`fingerprint_texts`, then
    :func:`all_pair_metrics_by_group`) are called one after the other and timed apart. Stage
    times (CPU seconds of this process and its workers, and wall seconds) go to stderr.
    """
    started, started_cpu = time.perf_counter(), _cpu()
    stages: dict[str, list[float]] = {}

    def lap(name: str, since: tuple[float, float]) -> tuple[float, float]:
        now = (time.perf_counter(), _cpu())
        total = stages.setdefault(name, [0.0, 0.0])
        total[0] += now[0] - since[0]
        total[1] += now[1] - since[1]
        return now

    # As the mleaudit command starts (mleaudit.audit.cli._load_numpy_with_one_blas_thread): numpy with
    # a one-thread BLAS, whose thread pool would otherwise start with it and spin on the CPUs
    # the engine's processes use.
    if "numpy" not in sys.modules and "OPENBLAS_NUM_THREADS" not in os.environ:
        os.environ["OPENBLAS_NUM_THREADS"] = "1"
        try:
            import numpy  # noqa: F401
        finally:
            del os.environ["OPENBLAS_NUM_THREADS"]
    from mleaudit.audit.similarity.allpairs import all_pair_metrics_by_group, all_pair_metrics_of_texts, fingerprint_texts

    mark = lap("import", (started, started_cpu))
    with open(manifest_path, encoding="utf-8") as handle:
        groups = json.load(handle)["groups"]
    texts = [[(_read(path), "python") for path in group] for group in groups]
    mark = lap("read", mark)
    # Dolos's defaults: k = 23, window 17
    if jobs == 1:
        # the same work as all_pair_metrics_of_texts in one process, timed stage by stage
        fingerprints = iter(fingerprint_texts([item for group in texts for item in group]))
        mark = lap("tokenize + fingerprint", mark)
        tables = all_pair_metrics_by_group([[next(fingerprints) for _ in group] for group in groups])
        mark = lap("pairs", mark)
    else:
        tables = all_pair_metrics_of_texts(texts, jobs=jobs)
        mark = lap("tokenize, fingerprint, pairs", mark)
    out = []
    for group, table in zip(groups, tables):
        columns = (table.left.tolist(), table.right.tolist(), table.similarity.tolist(),
                   table.total_overlap.tolist(), table.longest_fragment.tolist(), table.left_covered.tolist(),
                   table.right_covered.tolist(), table.left_total.tolist(), table.right_total.tolist())
        out.extend(f"{group[l]}\t{group[r]}\t{s!r}\t{o}\t{f}\t{lc}\t{rc}\t{lt}\t{rt}"
                   for l, r, s, o, f, lc, rc, lt, rt in zip(*columns))
    sys.stdout.write("\n".join(out) + "\n")
    lap("output", mark)
    for name, (wall, cpu) in stages.items():
        sys.stderr.write(f"stage\t{name}\t{wall:.4f}\t{cpu:.4f}\n")
    sys.stderr.write(f"inner wall {time.perf_counter() - started:.3f} s\n")


def _cpu() -> float:
    """CPU seconds of this process and of its children that have ended (the worker processes)."""
    own = os.times()
    return own.user + own.system + own.children_user + own.children_system


# -- measuring ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class Measurement:
    """One subprocess run.

    ``wall_s``: elapsed seconds; ``cpu_s``: user + system CPU seconds of the process and the
    children it waited for; ``maxrss_kib``: the kernel's peak resident set size of the process
    (``wait4``); ``tree_peak_kib``: the largest sum of memory over the process and its
    descendants seen by sampling: proportional set sizes where the kernel reports them (a page
    shared by the processes of a fork counts once in all), else resident set sizes;
    ``load_1min``: the machine's one-minute load average when the run started;
    ``main_thread_cpu_s``: CPU seconds of the process's main thread, as last sampled (the rest
    of ``cpu_s`` ran on its other threads and in its child processes).
    """

    wall_s: float
    cpu_s: float
    maxrss_kib: int
    tree_peak_kib: int
    stdout: str
    stderr: str
    load_1min: float = 0.0
    main_thread_cpu_s: float = 0.0

    @property
    def peak_kib(self) -> int:
        return max(self.maxrss_kib, self.tree_peak_kib)


_PAGE_KIB = os.sysconf("SC_PAGE_SIZE") // 1024


def _memory_kib(pid: int) -> int:
    """Proportional set size of a process (``smaps_rollup``), else its resident set size."""
    try:
        with open(f"/proc/{pid}/smaps_rollup", encoding="ascii") as handle:
            for line in handle:
                if line.startswith("Pss:"):
                    return int(line.split()[1])
    except OSError:
        pass
    with open(f"/proc/{pid}/statm", encoding="ascii") as handle:
        return int(handle.read().split()[1]) * _PAGE_KIB


def _tree_rss_kib(root: int) -> int:
    """Memory of ``root`` and its descendants, from /proc (0 when gone; see :func:`_memory_kib`)."""
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        try:
            total += _memory_kib(pid)
            for task in os.listdir(f"/proc/{pid}/task"):
                with open(f"/proc/{pid}/task/{task}/children", encoding="ascii") as handle:
                    todo.extend(int(child) for child in handle.read().split())
        except (OSError, ValueError):
            continue
    return total


def measure(command: list[str], cwd: Path, env: dict[str, str] | None = None) -> Measurement:
    """Run ``command`` to completion; its output goes to temporary files, not pipes, so that
    reading it costs the child nothing. A thread samples the process tree's memory every 20 ms
    (a few small /proc reads, so the sampling barely competes with the child for the CPUs)."""
    import subprocess
    import tempfile
    import threading

    load = os.getloadavg()[0]
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        started = time.perf_counter()
        process = subprocess.Popen(command, cwd=cwd, stdout=out, stderr=err, env=env)
        peak = 0
        main_thread_cpu = 0.0
        done = threading.Event()

        def sample() -> None:
            nonlocal peak, main_thread_cpu
            while not done.wait(0.02):
                peak = max(peak, _tree_rss_kib(process.pid))
                main_thread_cpu = max(main_thread_cpu, _thread_cpu_s(process.pid))

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        _, status, usage = os.wait4(process.pid, 0)
        wall = time.perf_counter() - started
        done.set()
        sampler.join()
        process.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read().decode("utf-8"), err.read().decode("utf-8", errors="replace")
    if process.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} exited with {process.returncode}:\n{stderr[-2000:]}")
    return Measurement(
        wall_s=wall,
        cpu_s=usage.ru_utime + usage.ru_stime,
        maxrss_kib=usage.ru_maxrss,
        tree_peak_kib=peak,
        stdout=stdout,
        stderr=stderr,
        load_1min=load,
        main_thread_cpu_s=main_thread_cpu,
    )


def _thread_cpu_s(pid: int) -> float:
    """CPU seconds (user + system) of the main thread of process ``pid`` so far (0 when gone)."""
    try:
        with open(f"/proc/{pid}/task/{pid}/stat", encoding="ascii") as handle:
            fields = handle.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def parse_pairs(text: str) -> dict[tuple[str, str], tuple[float, ...]]:
    """TSV rows (left, right, similarity, five counts...) keyed by (left, right)."""
    pairs = {}
    for line in text.splitlines():
        if not line:
            continue
        left, right, similarity, *counts = line.split("\t")
        pairs[(left, right)] = (float(similarity), *(int(c) for c in counts))
    return pairs


def differences(ours: dict, theirs: dict) -> list[str]:
    """Human-readable differences between two pair tables (empty when identical)."""
    problems = [f"only Dolos has {key}" for key in theirs.keys() - ours.keys()]
    problems += [f"only the engine has {key}" for key in ours.keys() - theirs.keys()]
    for key in sorted(ours.keys() & theirs.keys()):
        if ours[key] != theirs[key]:
            fields = [f"{f} ours {a} dolos {b}" for f, a, b in zip(FIELDS, ours[key], theirs[key]) if a != b]
            problems.append(f"{key[0]} x {key[1]}: " + ", ".join(fields))
    return problems


def golden_differences(golden: Path, theirs: dict) -> list[str]:
    """Where Dolos's output differs from the golden ``dolos_pairs.tsv`` files (to 1e-6)."""
    import csv

    problems = []
    for tsv in sorted(golden.glob("*/dolos_pairs.tsv")):
        with tsv.open(newline="", encoding="utf-8") as handle:
            for row in csv.DictReader(handle, delimiter="\t"):
                got = theirs.get((row["left"], row["right"]))
                want = (float(row["similarity"]), *(int(row[f]) for f in FIELDS[1:]))
                if got is None or abs(got[0] - want[0]) > 1e-6 or got[1:] != want[1:]:
                    problems.append(f"{row['left']} x {row['right']}: run {got} golden {want}")
    return problems


# -- installing Dolos -----------------------------------------------------------------------------


def _run_npm(arguments: list[str], cwd: Path, timeout: float) -> None:
    import subprocess

    try:
        result = subprocess.run(["npm", *arguments], cwd=cwd, capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired) as error:
        raise Unavailable(f"npm {' '.join(arguments)}: {error}") from error
    if result.returncode != 0:
        raise Unavailable(f"npm {' '.join(arguments)} failed ({result.returncode}):\n{result.stderr[-2000:]}")


def install_dolos(directory: Path) -> None:
    """Install Dolos into ``directory`` (skipped when an earlier install there is complete)."""
    import shutil
    import subprocess

    for tool in ("node", "npm"):
        if shutil.which(tool) is None:
            raise Unavailable(f"{tool} not found on PATH")
    marker = directory / ".dolos-ready"
    if marker.is_file():
        print(f"reusing the Dolos install in {directory}")
        return
    directory.mkdir(parents=True, exist_ok=True)
    if not (directory / "package.json").is_file():
        (directory / "package.json").write_text('{"name": "dolos-speed", "private": true}\n', encoding="utf-8")
    print(f"installing {DOLOS_PACKAGE} into {directory} (not timed) ...", flush=True)
    try:
        _run_npm(["install", "--no-audit", "--no-fund", DOLOS_PACKAGE], directory, 1800)
    except Unavailable as error:
        raise Unavailable(f"{error}\n(is the npm registry reachable from this machine?)") from error
    # npm may skip the packages' install scripts; the native parsers are built here.
    _run_npm(["rebuild", "--nodedir=/usr"], directory, 1800)
    # A failed native build only shows when the parser is loaded: check before timing anything.
    probe = directory / "probe.mjs"
    probe.write_text(
        'import { Dolos, File } from "@dodona/dolos-lib";\n'
        'const r = await new Dolos({ language: "python" }).analyze([new File("a.py", "x = 1\\n"), '
        'new File("b.py", "y = 2\\n")]);\n'
        "console.log(r.allPairs().length);\n",
        encoding="utf-8",
    )
    result = subprocess.run(["node", str(probe)], cwd=directory, capture_output=True, text=True, timeout=300)
    if result.returncode != 0 or result.stdout.strip() != "1":
        raise Unavailable(f"Dolos does not run after installing:\n{result.stderr[-2000:]}")
    marker.write_text(DOLOS_PACKAGE + "\n", encoding="utf-8")


# -- the benchmark --------------------------------------------------------------------------------


def groups_for(golden: Path, mode: str) -> list[list[str]]:
    """Paths relative to ``golden``, sorted, grouped per competition or all in one group."""
    per = [
        sorted(f"{d.name}/{f.name}" for f in d.glob("*.py"))
        for d in sorted(golden.iterdir())
        if d.is_dir()
    ]
    per = [g for g in per if len(g) >= 2]  # Dolos refuses fewer than two files
    return per if mode == "per-competition" else [sorted(p for g in per for p in g)]


def _mib(kib: int) -> str:
    return f"{kib / 1024:7.1f} MiB"


def print_stages(side: str, run: Measurement) -> None:
    """The engine's stage table (from its stderr): wall and CPU seconds per stage."""
    rows = [line.split("\t")[1:] for line in run.stderr.splitlines() if line.startswith("stage\t")]
    if not rows:
        return
    print(f"  {side}, stages of the fastest run (CPU includes worker processes):")
    for name, wall, cpu in rows:
        print(f"    {name:30} wall {float(wall):6.3f} s  cpu {float(cpu):6.3f} s")
    start_up = run.wall_s - sum(float(wall) for _, wall, _ in rows)
    start_up_cpu = run.cpu_s - sum(float(cpu) for _, _, cpu in rows)
    print(f"    {'interpreter start-up':30} wall {start_up:6.3f} s  cpu {start_up_cpu:6.3f} s  "
          "(the subprocess's figures minus the stages)")


def run_mode(mode: str, golden: Path, workdir: Path, dolos_dir: Path, repeat: int, jobs: list[int]) -> bool:
    """Measure Dolos and the engine (once per entry of ``jobs``) on one grouping; print the
    figures and whether every pair is identical. Returns True when all pairs are identical."""
    groups = groups_for(golden, mode)
    n_files = sum(len(g) for g in groups)
    n_pairs = sum(len(g) * (len(g) - 1) // 2 for g in groups)
    manifest = workdir / f"{mode}.json"
    manifest.write_text(json.dumps({"groups": groups}), encoding="utf-8")
    commands = {"dolos": ["node", str(dolos_dir / "runner.mjs"), str(manifest)]}
    for count in jobs:
        side = "engine" if count == 1 else f"engine, {count} processes"
        commands[side] = [sys.executable, "-c", ENGINE_ENTRY, str(Path(__file__).resolve().parent), str(manifest),
                          str(count)]
    runs: dict[str, list[Measurement]] = {side: [] for side in commands}
    engine_env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    engine_env["PYTHONPYCACHEPREFIX"] = str(workdir / "pycache")
    load_before = os.getloadavg()
    for _ in range(repeat):
        for side, command in commands.items():  # interleaved, so drifting machine load hits every side
            runs[side].append(measure(command, golden, None if side == "dolos" else engine_env))

    print(f"\n== {mode}: {n_files} files in {len(groups)} group(s), {n_pairs} pairs; best of {repeat} runs ==")
    print(f"load average before the runs: {load_before[0]:.2f} (1 min), {load_before[1]:.2f} (5 min) on "
          f"{os.cpu_count()} CPUs; the runs themselves add about 1 (Dolos) to the engine's process count")
    wall = {side: min(m.wall_s for m in ms) for side, ms in runs.items()}
    cpu = {side: min(m.cpu_s for m in ms) for side, ms in runs.items()}
    peak = {side: max(m.peak_kib for m in ms) for side, ms in runs.items()}
    width = max(len(side) for side in commands)
    for side, ms in runs.items():
        walls = ", ".join(f"{m.wall_s:.2f}" for m in ms)
        best = min(ms, key=lambda m: m.wall_s)
        loads = sorted(m.load_1min for m in ms)
        print(f"{side:{width}}  wall {wall[side]:7.3f} s (load {best.load_1min:.2f})  cpu {cpu[side]:7.3f} s  "
              f"cores used {best.cpu_s / best.wall_s:4.2f}  peak memory {_mib(peak[side])}"
              f"  (wall of each run: {walls}; 1-min load at their starts {loads[0]:.2f}-{loads[-1]:.2f}; "
              f"kernel peak RSS {_mib(max(m.maxrss_kib for m in ms))}, "
              f"sampled process tree (PSS) {_mib(max(m.tree_peak_kib for m in ms))})")
    for side in list(commands)[1:]:
        print_stages(side, min(runs[side], key=lambda m: m.wall_s))
    ok = True
    theirs = parse_pairs(runs["dolos"][-1].stdout)
    dolos = min(runs["dolos"], key=lambda m: m.wall_s)
    print(f"Dolos used {dolos.cpu_s / dolos.wall_s:.2f} cores on average (CPU over wall time of its fastest run): "
          f"{dolos.cpu_s:.2f} s of CPU, {dolos.main_thread_cpu_s:.2f} s of them on its main thread, the rest on "
          "Node.js's helper threads")
    for side in list(commands)[1:]:
        speedup, cpu_ratio, memory = wall["dolos"] / wall[side], cpu["dolos"] / cpu[side], peak[side] / peak["dolos"]
        print(f"{side}: {speedup:.1f}x faster than Dolos in wall time, {cpu_ratio:.1f}x in CPU time (target >= 10x "
              f"wall: {'met' if speedup >= 10 else 'NOT met'}); peak memory {memory:.2f} of Dolos's "
              f"(target <= 0.5: {'met' if memory <= 0.5 else 'NOT met'})")
        ours = parse_pairs(runs[side][-1].stdout)
        problems = differences(ours, theirs)
        if len(theirs) != n_pairs:
            problems.append(f"Dolos reported {len(theirs)} pairs, expected {n_pairs}")
        if problems:
            ok = False
            print(f"  DIFFERENT: {len(problems)} problem(s); first ones:")
            for line in problems[:10]:
                print("    " + line)
        else:
            print(f"  identical: all {len(ours)} pairs, every field (similarity as the same double)")
    if mode == "per-competition":
        golden_problems = golden_differences(golden, theirs)
        print("Dolos vs golden dolos_pairs.tsv: "
              + ("identical" if not golden_problems else f"{len(golden_problems)} differ, e.g. {golden_problems[0]}"))
    return ok


def main() -> int:
    import argparse
    import subprocess
    import tempfile

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="the shared data folder")
    parser.add_argument("--mode", choices=(*MODES, "both"), default="both")
    parser.add_argument("--repeat", type=int, default=3, help="runs per side; the best wall time is reported")
    parser.add_argument("--dolos-dir", type=Path, help="install Dolos here and keep it (default: a temporary folder)")
    parser.add_argument("--jobs", type=int, nargs="+", default=[1, 2],
                        help="engine runs to measure, by number of processes (default: 1 and 2)")
    parser.add_argument("--engine", metavar="MANIFEST", help=argparse.SUPPRESS)  # the engine-side subprocess
    args = parser.parse_args()
    if any(count < 1 for count in args.jobs):
        parser.error("--jobs takes counts >= 1")
    if args.engine:
        engine_main(args.engine, args.jobs[0])
        return 0

    golden = (args.data / "similarity-golden").resolve()
    if not golden.is_dir():
        print(f"no golden corpus at {golden}", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="dolos-speed-") as scratch:
        workdir = Path(scratch)
        dolos_dir = args.dolos_dir.resolve() if args.dolos_dir else workdir / "dolos"
        try:
            install_dolos(dolos_dir)
        except Unavailable as error:
            print(f"cannot benchmark against Dolos: {error}", file=sys.stderr)
            return 2
        (dolos_dir / "runner.mjs").write_text(NODE_RUNNER, encoding="utf-8")
        print(f"node {subprocess.run(['node', '--version'], capture_output=True, text=True).stdout.strip()}, "
              f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs")
        modes = MODES if args.mode == "both" else (args.mode,)
        ok = all([run_mode(mode, golden, workdir, dolos_dir, args.repeat, args.jobs) for mode in modes])
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
