"""Big logs fast: the rules over real agent logs in MB/s, the AIDE journals with similarity, a batch.

Three figures and a scaling check, each printed with its target:

1. **Rules over logs** (target: at least 5 MB/s on one core). Every folder run of
   ``runs/mlagentbench``, ``runs/aide-journal`` and ``runs/autokaggle`` is audited in this
   process, rules only (no similarity, no grading), as ``mleaudit audit RUN --no-similarity
   --no-grade`` does: :func:`mleaudit.audit.run.load_run` then
   :func:`mleaudit.audit.pipeline.audit_run`. The megabytes are the bytes of the run's files; the
   figure is their sum over the sum of the wall times (one process, one core), with the slowest
   runs listed. The files are read once, untimed, before (the time printed): the figure is what
   the rules cost a core, not how fast the disk gives 41 MB to a process that reads them first
   (a machine that has just dropped its page cache: 1 to 2 s more).
   **Scaling** (target: the large run of each shape at least 0.8 times the MB/s of the small
   one). Runs written from the nodes of the ``runs/aide-journal`` journals, each code made
   unique: a plain-text ``agent.log`` of every step (plan, fenced code, execution output,
   analysis) of 2.5 and 20 MB; a JSONL trajectory whose one assistant message holds every step
   (code under ``----- node N code -----`` headers and in fences) of 1 and 8 MB; a notebook of
   four cells with thousands of stream outputs each, of 2 and 16 MB. A reader or rule that looks
   at the whole log again for every item shows as a drop. Each run is timed in this process after
   the others, with what they left alive frozen out of the garbage collector (``gc.freeze``). Much of these runs is unique code,
   every unit parsed and queried, so their MB/s is well below the figure above (no target on
   it).
2. **AIDE journals with similarity** (target: under 5 s each). ``mleaudit audit RUN --corpus
   notebooks/ --no-grade`` on each ``runs/aide-journal`` run, in a fresh process (start-up
   included), against every public notebook of ``notebooks/``.
3. **A batch** (target: 100 runs under 60 s on two cores). ``mleaudit audit batch DIR -j 2
   --corpus notebooks/ --no-grade`` over a folder of ``--runs`` runs copied from the shared runs
   (``aide`` single files, ``aide-journal``, ``autokaggle``, ``dsbench`` and ``mlagentbench``
   folders, taken in turn until there are enough).

With ``--index``, figures 2 and 3 compare through a corpus index of ``notebooks/`` (``mleaudit
corpus build``, its build time printed) with ``--index`` instead of ``--corpus``, as a lab
auditing many runs against one corpus would.

The package's modules are byte-compiled before figures 2 and 3 (as installing a wheel does), so
that a checkout run in place with ``PYTHONDONTWRITEBYTECODE`` set does not compile every module
in each fresh process. Figures 2 and 3 use a cache folder of their own (``MLEAUDIT_CACHE_DIR``),
filled by one untimed audit first (its time is printed): the rule documents and the notebooks'
tokens and profiles are read from it, as in every audit after a lab's first. The machine's load average is printed before and after: on a shared
machine the figures move with it. Exit status 0 when every target is met, 1 otherwise, 2 when the shared data is absent
(a benchmark, not a test).

Usage: ``python benchmarks/log_speed.py [--data ../shared/data] [--runs 100] [--skip-batch] [--index]``
"""

from __future__ import annotations

import argparse
import gc
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = REPO_ROOT.parent / "shared" / "data"
LOG_MB_PER_S = 5.0
JOURNAL_S = 5.0
BATCH_S = 60.0
SCALING_RATIO = 0.8


def _size(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file() and not p.is_symlink())


def _loads() -> str:
    return "/".join(f"{x:.1f}" for x in os.getloadavg())


def _folder_runs(data: Path) -> list[tuple[str, Path]]:
    """``(group, run folder)`` of figure 1."""
    return [(group, run) for group in ("mlagentbench", "aide-journal", "autokaggle")
            for run in sorted((data / "runs" / group).iterdir()) if run.is_dir()]


def read_once(data: Path) -> tuple[float, float]:
    """Read every file of figure 1's runs (into the page cache); ``(MB, seconds)``."""
    start = time.perf_counter()
    total = 0
    for _, run in _folder_runs(data):
        for path in sorted(run.rglob("*")):
            if path.is_file() and not path.is_symlink():
                total += len(path.read_bytes())
    return total / 1e6, time.perf_counter() - start


def rules_over_logs(data: Path) -> tuple[float, list[tuple[str, float, float]]]:
    """MB/s of the rules over every folder run; ``(overall, [(run, MB, s)])``."""
    from mleaudit.audit.pipeline import audit_run
    from mleaudit.audit.rules.loader import load_ruleset
    from mleaudit.audit.run import load_run

    ruleset = load_ruleset()
    rows = []
    for group, run in _folder_runs(data):
        megabytes = _size(run) / 1e6
        start = time.perf_counter()
        audit_run(load_run(run), ruleset=ruleset)
        rows.append((f"{group}/{run.name}", megabytes, time.perf_counter() - start))
    total_mb = sum(r[1] for r in rows)
    total_s = sum(r[2] for r in rows)
    return total_mb / total_s, rows


def _journal_nodes(data: Path) -> list[tuple[str, str, str, str]]:
    """``(plan, code, output, analysis)`` of every node of the ``runs/aide-journal`` journals."""
    import json

    nodes = []
    for journal in sorted((data / "runs" / "aide-journal").glob("*/journal.json")):
        for node in json.loads(journal.read_text(encoding="utf-8")).get("nodes", []):
            output = node.get("_term_out") or ""
            output = "".join(output) if isinstance(output, list) else str(output)
            nodes.append((str(node.get("plan") or ""), str(node.get("code") or ""), output,
                          str(node.get("analysis") or "")))
    return nodes


def _steps(data: Path, salt: str):
    """``(step, plan, code, output, analysis)`` of the journals' nodes in turn, without end, each
    code unique (``salt`` in it too: no run's code is in the caches another run filled)."""
    import itertools
    import re

    nodes = _journal_nodes(data)
    for step in itertools.count(1) if nodes else ():
        plan, code, output, analysis = nodes[(step - 1) % len(nodes)]
        yield step, plan, f"# attempt {step} of {salt}\nSEED_{step} = {step}\n" + re.sub(r"\bdf\b", f"df{step}", code), output, analysis


def _until(pieces, megabytes: float) -> list[str]:
    """The first ``pieces`` (strings) that add up to about ``megabytes`` of UTF-8."""
    kept, size = [], 0
    for piece in pieces:
        if size >= megabytes * 1e6:
            break
        kept.append(piece)
        size += len(piece.encode("utf-8"))
    return kept


def write_step_log(data: Path, run: Path, megabytes: float) -> None:
    """A plain-text ``agent.log``: each step's plan, fenced code, execution output and analysis."""
    pieces = (f"[2024-05-01 12:{step % 60:02d}:00,000] INFO: Drafting a new node (step {step})\n"
              f"[2024-05-01 12:{step % 60:02d}:00,000] INFO: Plan: {plan}\n```python\n{code}\n```\n"
              f"[2024-05-01 12:{step % 60:02d}:05,000] INFO: Execution output:\n{output}\n"
              f"[2024-05-01 12:{step % 60:02d}:06,000] INFO: Analysis: {analysis}\n\n"
              for step, plan, code, output, analysis in _steps(data, run.name))
    run.mkdir(parents=True)
    (run / "agent.log").write_text("".join(_until(pieces, megabytes)), encoding="utf-8")


def write_one_message(data: Path, run: Path, megabytes: float) -> None:
    """A JSONL trajectory whose one assistant message holds every step: code under ``----- node N
    code -----`` headers and in fences, each with its output."""
    import json

    pieces = (f"{plan}\n```python\n{code}\n```\n" if step % 2 else
              f"----- node {step:05x} code -----\n{code}\n----- node {step:05x} output -----\n{output}\n"
              for step, plan, code, output, _ in _steps(data, run.name))
    run.mkdir(parents=True)
    (run / "trajectory.jsonl").write_text(
        json.dumps({"role": "user", "content": "Solve the task."}) + "\n"
        + json.dumps({"role": "assistant", "content": "".join(_until(pieces, megabytes))}) + "\n", encoding="utf-8")


def write_stream_notebook(data: Path, run: Path, megabytes: float) -> None:
    """A notebook of four training cells, each with thousands of stdout and stderr outputs (a
    loop printing its progress), their lines taken from the steps' outputs."""
    import json

    printed = (line + "\n" for *_, output, _ in _steps(data, run.name) for line in output.splitlines()[:40]
               if line.strip())
    lines = _until(printed, megabytes / 1.15)  # the JSON of an output record adds about 15 % to its line
    cells, per_cell = [], max(1, len(lines) // 4 + 1)
    for number in range(4):
        chunk = lines[number * per_cell:(number + 1) * per_cell]
        outputs = [{"output_type": "stream", "name": "stdout" if i % 2 == 0 else "stderr", "text": [line]}
                   for i, line in enumerate(chunk)]
        cells.append({"cell_type": "code", "execution_count": number + 1, "metadata": {}, "id": f"c{number}",
                      "source": [f"for epoch in range({number + 10}):\n", "    train_one_epoch(model, epoch)\n"],
                      "outputs": outputs})
    notebook = {"cells": cells, "metadata": {"kernelspec": {"name": "python3", "language": "python"}},
                "nbformat": 4, "nbformat_minor": 5}
    run.mkdir(parents=True)
    (run / "train.ipynb").write_text(json.dumps(notebook), encoding="utf-8")


#: The shapes of the scaling check: a name, how a run of that shape is written, and the two sizes (MB).
SHAPES = (
    ("a text step log", write_step_log, (2.5, 20.0)),
    ("one JSONL message of every step", write_one_message, (1.0, 8.0)),
    ("a notebook of many stream outputs", write_stream_notebook, (2.0, 16.0)),
)


def scaling(data: Path, work: Path) -> list[tuple[str, float, float, float, float]]:
    """``[(shape, MB, s, MB, s)]``: the rules over the small and the large run of each of
    :data:`SHAPES`, after an untimed small step log (what the first audit of a process prepares
    is in neither)."""
    from mleaudit.audit.pipeline import audit_run
    from mleaudit.audit.rules.loader import load_ruleset
    from mleaudit.audit.run import load_run

    ruleset = load_ruleset()
    write_step_log(data, work / "warm-up", 0.5)
    audit_run(load_run(work / "warm-up"), ruleset=ruleset)
    rows = []
    for name, write, sizes in SHAPES:
        measured: list[float] = []
        for megabytes in sizes:
            run = work / f"{write.__name__}-{megabytes:g}"
            write(data, run, megabytes)
            measured.append(_size(run) / 1e6)
            # What earlier runs left alive (cached trees) is set aside from the collector: each run's
            # time is its own, not the cost of walking the heap of the shapes before it.
            gc.collect()
            gc.freeze()
            start = time.perf_counter()
            audit_run(load_run(run), ruleset=ruleset)
            measured.append(time.perf_counter() - start)
        rows.append((name, *measured))
    return rows


def _byte_compile() -> str:
    """Byte-compile the installed package's modules, as ``pip install`` does for a wheel.

    A checkout run in place with ``PYTHONDONTWRITEBYTECODE`` set would otherwise compile every
    module from source in each fresh process (about a second), a cost no installed tool pays.
    """
    import compileall

    import mleaudit

    roots = {Path(mleaudit.__file__).resolve().parent}
    for name in ("audit", "grading", "sandbox"):
        module = __import__(f"mleaudit.{name}", fromlist=["__file__"])
        roots.add(Path(module.__file__).resolve().parent)
    ok = all(compileall.compile_dir(str(root), quiet=2) for root in sorted(roots))
    return "done" if ok else "some modules did not compile"


def _mleaudit() -> list[str]:
    script = Path(sys.executable).with_name("mleaudit")
    return [str(script)] if script.is_file() else [sys.executable, "-m", "mleaudit"]


def journals_with_similarity(data: Path, out: Path, source: list[str]) -> list[tuple[str, float, int]]:
    """``[(run, seconds, exit code)]`` of ``audit RUN --corpus notebooks/`` (or ``source``) per AIDE journal run."""
    rows = []
    for run in sorted((data / "runs" / "aide-journal").iterdir()):
        if not run.is_dir():
            continue
        start = time.perf_counter()
        result = subprocess.run([*_mleaudit(), "audit", str(run), *source, "--no-grade",
                                 "--format", "json", "-o", str(out / f"{run.name}.json")],
                                capture_output=True, text=True, timeout=3600)
        rows.append((run.name, time.perf_counter() - start, result.returncode))
    return rows


def batch(data: Path, count: int, folder: Path, out: Path, source: list[str]) -> tuple[float, int, str]:
    """Seconds, exit code and the last lines of ``audit batch`` over ``count`` copied runs."""
    sources = sorted((data / "runs" / "aide").glob("*.py"))
    for group in ("aide-journal", "autokaggle", "mlagentbench"):
        sources += sorted(p for p in (data / "runs" / group).iterdir() if p.is_dir())
    sources += sorted((data / "runs" / "dsbench").glob("*.json"))
    folder.mkdir(parents=True)
    for i in range(count):
        origin = sources[i % len(sources)]
        target = folder / f"run{i:03d}-{origin.stem}"
        if origin.is_dir():
            shutil.copytree(origin, target)
        else:
            target.mkdir()
            shutil.copy2(origin, target / origin.name)
    start = time.perf_counter()
    result = subprocess.run([*_mleaudit(), "audit", "batch", str(folder), "-j", "2", *source,
                             "--no-grade", "-o", str(out)], capture_output=True, text=True, timeout=3600)
    seconds = time.perf_counter() - start
    return seconds, result.returncode, "\n".join((result.stdout + result.stderr).strip().splitlines()[-3:])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="the shared data folder")
    parser.add_argument("--runs", type=int, default=100, help="runs in the batch")
    parser.add_argument("--skip-batch", action="store_true", help="leave the batch figure out")
    parser.add_argument("--index", action="store_true", help="compare through a corpus index of the notebooks")
    args = parser.parse_args()
    if not (args.data / "runs" / "mlagentbench").is_dir() or not (args.data / "notebooks").is_dir():
        print(f"no shared runs and notebooks under {args.data}", file=sys.stderr)
        return 2
    met = True
    print(f"load average (1/5/15 min) before: {_loads()}")
    megabytes, seconds = read_once(args.data)
    print(f"files of the rules' runs read once before timing (not a figure): {megabytes:.1f} MB in {seconds:.1f} s")
    overall, rows = rules_over_logs(args.data)
    total_mb, total_s = sum(r[1] for r in rows), sum(r[2] for r in rows)
    ok = overall >= LOG_MB_PER_S
    met &= ok
    print(f"rules over logs: {len(rows)} runs, {total_mb:.1f} MB in {total_s:.1f} s = {overall:.2f} MB/s on one core "
          f"(target >= {LOG_MB_PER_S} MB/s: {'met' if ok else 'NOT met'})")
    for name, megabytes, seconds in sorted(rows, key=lambda r: r[1] / r[2])[:5]:
        print(f"    slowest: {name}: {megabytes:.2f} MB in {seconds:.2f} s = {megabytes / seconds:.2f} MB/s")
    with tempfile.TemporaryDirectory(prefix="log-scaling-") as tmp:
        shapes = scaling(args.data, Path(tmp))
    for name, small_mb, small_s, big_mb, big_s in shapes:
        ratio = (big_mb / big_s) / (small_mb / small_s)
        ok = ratio >= SCALING_RATIO
        met &= ok
        print(f"scaling, {name}: {small_mb:.1f} MB in {small_s:.1f} s = {small_mb / small_s:.2f} MB/s, "
              f"{big_mb:.1f} MB in {big_s:.1f} s = {big_mb / big_s:.2f} MB/s: ratio {ratio:.2f} "
              f"(target >= {SCALING_RATIO}: {'met' if ok else 'NOT met'})")
    compiled = _byte_compile()
    print(f"modules byte-compiled before the fresh processes ({compiled}), as installing a wheel does")
    with tempfile.TemporaryDirectory(prefix="log-speed-") as tmp:
        work = Path(tmp)
        source = ["--corpus", str(args.data / "notebooks")]
        if args.index:
            start = time.perf_counter()
            subprocess.run([*_mleaudit(), "corpus", "build", str(args.data / "notebooks"), "-o", str(work / "nb.index")],
                           check=True, capture_output=True, timeout=3600)
            print(f"corpus index of {args.data / 'notebooks'} built in {time.perf_counter() - start:.1f} s")
            source = ["--index", str(work / "nb.index")]
        # The user cache (rule documents, the notebooks' tokens and profiles) is this run's own:
        # one untimed audit fills it, as a lab's first audit against the corpus does.
        os.environ["MLEAUDIT_CACHE_DIR"] = str(work / "cache")
        first = next(p for p in sorted((args.data / "runs" / "aide-journal").iterdir()) if p.is_dir())
        start = time.perf_counter()
        subprocess.run([*_mleaudit(), "audit", str(first), *source, "--no-grade", "--format", "json",
                        "-o", str(work / "first.json")], capture_output=True, timeout=3600)
        print(f"first audit, empty cache (not a figure): {first.name}: {time.perf_counter() - start:.1f} s")
        for name, seconds, code in journals_with_similarity(args.data, work, source):
            ok = seconds < JOURNAL_S and code in (0, 1)
            met &= ok
            print(f"journal with similarity: {name}: {seconds:.1f} s, exit code {code} "
                  f"(target < {JOURNAL_S} s: {'met' if ok else 'NOT met'})")
        if not args.skip_batch:
            seconds, code, tail = batch(args.data, args.runs, work / "batch", work / "out", source)
            ok = seconds < BATCH_S and code in (0, 1)
            met &= ok
            print(f"batch: {args.runs} runs with similarity ({' '.join(source)}) on 2 cores: {seconds:.1f} s, "
                  f"exit code {code} (target < {BATCH_S} s: {'met' if ok else 'NOT met'})")
            print("    " + tail.replace("\n", "\n    "))
    print(f"load average (1/5/15 min) after: {_loads()}")
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
