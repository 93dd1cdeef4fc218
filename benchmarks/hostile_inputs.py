"""Time and memory of reading hostile inputs: submission CSVs, notebooks and sandbox specs.

Each case runs in a child process of its own, so that its peak memory (max RSS) is its own;
the wall time is the child's whole call, after its imports.

- *submissions*: :func:`mleaudit.grading.validation.read_submission` (the pre-scan of
  :mod:`mleaudit.grading.csvscan`, then pandas) on files built to make pandas slow or to fill memory: a
  160 KB line of commas, a header of a million columns, a 50 MB line, a 48 MB quoted field, 50
  million empty lines. Each is expected rejected by a cap, in milliseconds, except the empty
  lines, which are within every cap and read in linear time. Then the pre-scan alone against
  pandas alone on legitimate million-row submissions (``--rows``), the cost the caps add;
- *notebooks*: :func:`mleaudit.audit.notebooks.read_notebook` on a notebook of 100,000 small code cells,
  one cell of 10 MB, a cell whose source is a list of a million strings with 100,000 outputs,
  and JSON nested 100,000 deep; then ``mleaudit audit RUN --no-similarity --no-grade`` on a run
  folder holding the 100,000-cell notebook (``--no-audit`` skips it);
- *specs*: :func:`mleaudit.sandbox.spec.load_sandbox_spec` on a "billion laughs" YAML file and on YAML
  nested 100,000 deep.

Usage: ``python benchmarks/hostile_inputs.py [--rows 1000000] [--cells 100000] [--no-audit] [--keep DIR]``
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


# -- inputs ------------------------------------------------------------------------------------


def _write_submissions(folder: Path, rows: int) -> dict[str, Path]:
    import numpy as np
    import pandas as pd

    files = {
        "160 KB line of commas": b"id,label\n1,2\n" + b"," * 160_000 + b"\n",
        "header of 1e6 columns": b",".join(b"c%d" % i for i in range(1_000_000)) + b"\n1\n",
        "50 MB single line": b"id,label\n1," + b"x" * 50_000_000 + b"\n",
        "48 MB quoted field": b'id,label\n1,"' + b"x,\n" * 16_000_000 + b'"\n',
        "50 million empty lines": b"id,label\n" + b"\n" * 50_000_000 + b"1,2\n",
    }
    paths = {}
    for i, (name, data) in enumerate(files.items()):
        paths[name] = folder / f"hostile{i}.csv"
        paths[name].write_bytes(data)
    rng = np.random.default_rng(0)
    ids = np.char.add("id", np.char.zfill(np.arange(rows).astype(str), 7))
    legit = {
        f"{rows:,} rows: id, label": pd.DataFrame({"id": ids, "label": rng.integers(0, 10, rows)}),
        f"{rows:,} rows: id, 10 probabilities": pd.DataFrame(
            {"id": ids, **{f"class_{k}": rng.dirichlet(np.ones(10), rows)[:, k] for k in range(10)}}
        ),
    }
    for i, (name, frame) in enumerate(legit.items()):
        paths[name] = folder / f"legit{i}.csv"
        frame.to_csv(paths[name], index=False, lineterminator="\n")
    return paths


def _write_notebooks(folder: Path, cells: int) -> dict[str, Path]:
    def code(source, **extra):
        return {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [], "source": source, **extra}

    def notebook(cell_list):
        return json.dumps({"cells": cell_list, "metadata": {"kernelspec": {"language": "python", "name": "python3"}},
                           "nbformat": 4, "nbformat_minor": 5})

    outputs = [{"output_type": "stream", "name": "stdout", "text": [f"{i}\n"]} for i in range(100_000)]
    texts = {
        f"{cells:,} small code cells": notebook([code([f"x{i} = {i}\n", f"print(x{i})"]) for i in range(cells)]),
        "one cell of 10 MB": notebook([code("y = 1\n" * 1_700_000)]),
        "source of 1e6 strings, 100k outputs": notebook([code(["z = 2\n"] * 1_000_000, outputs=outputs)]),
        "JSON nested 100,000 deep": "[" * 100_000 + "]" * 100_000,
    }
    paths = {}
    for i, (name, text) in enumerate(texts.items()):
        paths[name] = folder / f"notebook{i}.ipynb"
        paths[name].write_text(text, encoding="utf-8")
    run = folder / "run" / "code"
    run.mkdir(parents=True)
    shutil.copy(paths[f"{cells:,} small code cells"], run / "notebook.ipynb")
    return paths


def _write_specs(folder: Path) -> dict[str, Path]:
    laughs = b"a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n" + b"".join(
        b"%s: &%s [%s]\n" % (chr(98 + i).encode(), chr(98 + i).encode(), b", ".join([b"*" + chr(97 + i).encode()] * 9))
        for i in range(8)
    ) + b"command: *i\n"
    specs = {"billion laughs": laughs, "YAML nested 100,000 deep": b"command: " + b"[" * 100_000 + b"]" * 100_000}
    paths = {}
    for i, (name, data) in enumerate(specs.items()):
        paths[name] = folder / f"spec{i}.yaml"
        paths[name].write_bytes(data)
    return paths


# -- one case in a child process -----------------------------------------------------------------


def _case(kind: str, path: str) -> None:
    """Run one case here (the child) and print its outcome as one JSON line."""
    if kind == "submission":
        from mleaudit.grading.errors import InvalidSubmission
        from mleaudit.grading.validation import read_submission

        call = lambda: read_submission(path, id_column="id")  # noqa: E731
        expected: tuple[type[BaseException], ...] = (InvalidSubmission,)
    elif kind == "prescan":
        from mleaudit.grading.csvscan import check_csv_limits

        call, expected = (lambda: check_csv_limits(path)), ()
    elif kind == "pandas":
        import pandas as pd

        call, expected = (lambda: pd.read_csv(path, dtype={"id": str})), ()
    elif kind == "notebook":
        from mleaudit.audit.notebooks import NotebookError, read_notebook

        text = Path(path).read_text(encoding="utf-8")
        call, expected = (lambda: read_notebook(text, path)), (NotebookError,)
    elif kind == "spec":
        from mleaudit.sandbox.errors import SpecError
        from mleaudit.sandbox.spec import load_sandbox_spec

        call, expected = (lambda: load_sandbox_spec(path)), (SpecError,)
    else:
        raise SystemExit(f"unknown case kind {kind!r}")
    before = _memory("VmRSS")
    started = time.perf_counter()
    try:
        result = call()
        outcome = "read" if kind != "notebook" else f"read: {len(result.cells):,} code cells"
    except expected as exc:
        outcome = "rejected: " + str(exc).replace(path, "FILE").replace("\n", " ")
    seconds = time.perf_counter() - started
    print(json.dumps({"seconds": seconds, "added_mib": max(0.0, _memory("VmHWM") - before), "outcome": outcome}))


def _memory(field: str) -> float:
    """A memory figure of this process from ``/proc/self/status``, in MiB (``VmHWM``: peak RSS since exec)."""
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    return float("nan")


def _timed_child(argv: list[str]) -> tuple[float, float, str]:
    """Run one case in a fresh process: seconds, memory the call added to the peak RSS (MiB), outcome."""
    done = subprocess.run([sys.executable, *argv], capture_output=True, text=True, cwd=ROOT)
    line = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""
    try:
        data = json.loads(line)
    except ValueError:
        last = done.stderr.strip().splitlines()[-1] if done.stderr.strip() else f"exit {done.returncode}, no output"
        return float("nan"), float("nan"), f"failed: {last}"
    return data["seconds"], data["added_mib"], data["outcome"]


def _row(name: str, seconds: float, mib: float, outcome: str) -> None:
    print(f"  {name:46s} {seconds:8.3f} s {mib:7.0f} MiB  {outcome[:100]}", flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000, help="rows of the legitimate submissions")
    parser.add_argument("--cells", type=int, default=100_000, help="code cells of the large notebook")
    parser.add_argument("--no-audit", action="store_true", help="skip the whole audit of the large notebook")
    parser.add_argument("--keep", type=Path, help="write the inputs here and keep them (default: a temporary dir)")
    parser.add_argument("--case", nargs=2, metavar=("KIND", "PATH"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.case:
        _case(*args.case)
        return 0
    folder = args.keep or Path(tempfile.mkdtemp(prefix="hostile-"))
    folder.mkdir(parents=True, exist_ok=True)
    me = str(Path(__file__).resolve())
    try:
        print(f"{os.cpu_count()} CPUs; load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}; "
              "per case: wall time of the call in a fresh process (imports excluded) and the memory it added to "
              "the process's peak RSS")
        submissions = _write_submissions(folder, args.rows)
        print("submissions: read_submission (pre-scan, then pandas)")
        for name, path in submissions.items():
            if name[0].isdigit() and "rows" in name:
                continue
            _row(name, *_timed_child([me, "--case", "submission", str(path)]))
        print("legitimate submissions: the pre-scan alone, and pandas alone")
        for name, path in submissions.items():
            if "rows" in name:
                _row(name + " (pre-scan)", *_timed_child([me, "--case", "prescan", str(path)]))
                _row(name + " (pandas)", *_timed_child([me, "--case", "pandas", str(path)]))
        notebooks = _write_notebooks(folder, args.cells)
        print("notebooks: read_notebook")
        for name, path in notebooks.items():
            _row(name, *_timed_child([me, "--case", "notebook", str(path)]))
        specs = _write_specs(folder)
        print("sandbox specs: load_sandbox_spec")
        for name, path in specs.items():
            _row(name, *_timed_child([me, "--case", "spec", str(path)]))
        if not args.no_audit:
            print(f"whole audit: mleaudit audit run RUN --no-similarity --no-grade ({args.cells:,}-cell notebook)")
            started = time.perf_counter()
            command = [sys.executable, "-m", "mleaudit", "audit", "run", str(folder / "run"), "--no-similarity",
                       "--no-grade", "-o", str(folder / "report.json")]
            done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT)
            seconds = time.perf_counter() - started
            report = folder / "report.json"
            verdict = json.loads(report.read_text()).get("verdict") if report.exists() else None
            status = verdict.get("kind") if isinstance(verdict, dict) else verdict
            print(f"  {'audit (whole process, imports included)':46s} {seconds:8.3f} s           "
                  f"exit {done.returncode}, verdict {status}", flush=True)
    finally:
        if args.keep is None:
            shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
