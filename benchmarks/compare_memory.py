"""Peak memory of ``mleaudit similarity compare --all --format json`` as the number of agent files grows.

Copies the first N scripts of the shared partial-copy cases (``partial-copies/``) into a temporary
folder for each N of ``--files`` (8 and 32 by default), runs ``mleaudit similarity compare FOLDER
--reference notebooks/ --all --format json`` in a child process with its output sent to a
temporary file, and prints the child's peak resident memory (``ru_maxrss``), its wall time and the
size of the output. With the output written batch by batch the peak stays flat as N grows (0.41 GB
for 8 and for 32 files against the 204 shared notebooks); when the whole document was built in
memory it grew with N (3.8 GB for 8 files).

Usage: ``python benchmarks/compare_memory.py [--data ../shared/data] [--files 8 32]``
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def measure(data: Path, files: int, workdir: Path) -> dict[str, float]:
    """Run one comparison of ``files`` agent files in a fresh process; its peak RSS, time and output size."""
    agents = workdir / f"agents-{files}"
    agents.mkdir()
    for path in sorted((data / "partial-copies").glob("case*.py"))[:files]:
        shutil.copyfile(path, agents / path.name)
    out = workdir / f"compare-{files}.json"
    code = ("import sys, resource\n"
            "from mleaudit.audit.cli import main\n"
            "try:\n"
            "    main(sys.argv[1:], standalone_mode=False)\n"
            "finally:\n"
            "    print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)\n")
    start = time.perf_counter()
    with out.open("wb") as stream:
        result = subprocess.run([sys.executable, "-c", code, "similarity", "compare", str(agents), "--reference",
                                 str(data / "notebooks"), "--all", "--format", "json"],
                                stdout=stream, stderr=subprocess.PIPE, text=False, cwd=ROOT)
    took = time.perf_counter() - start
    if result.returncode != 0:
        raise SystemExit(result.stderr.decode("utf-8", "replace")[-2000:])
    peak_kb = int(result.stderr.decode("utf-8", "replace").strip().splitlines()[-1])
    size = out.stat().st_size
    out.unlink()
    return {"files": files, "peak_rss_mb": peak_kb / 1024, "seconds": took, "output_mb": size / 1e6}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--files", type=int, nargs="+", default=[8, 32])
    args = parser.parse_args(argv)
    if not (args.data / "partial-copies").is_dir() or not (args.data / "notebooks").is_dir():
        print(f"no partial-copy cases or notebooks under {args.data}", file=sys.stderr)
        return 2
    print(f"load average {os.getloadavg()[0]:.2f}")
    with tempfile.TemporaryDirectory() as tmp:
        for files in args.files:
            row = measure(args.data, files, Path(tmp))
            print(f"{row['files']:4d} agent files: peak RSS {row['peak_rss_mb']:8.0f} MB, {row['seconds']:7.1f} s, "
                  f"output {row['output_mb']:9.1f} MB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
