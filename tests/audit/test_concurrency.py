"""Writers running at once: reviewers recording decisions, `corpus add` calls, an interrupted batch.

Each test starts real processes at the same moment (forked workers released by one barrier, or
command-line subprocesses) and checks that nothing written by one of them is lost or doubled.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "runs"
INVARIANCE = ROOT / "tests" / "fixtures" / "kernels" / "invariance"

fork = pytest.mark.skipif("fork" not in multiprocessing.get_all_start_methods(), reason="needs fork")


def _run_after_barrier(barrier, args: list[str]) -> None:
    """Child: wait for the others, then run `mleaudit ARGS` in this process; exit with its code."""
    from audit.cli import main

    barrier.wait(timeout=60)
    try:
        main(args, standalone_mode=False)
    except SystemExit as exc:
        os._exit(exc.code if isinstance(exc.code, int) else 1)
    except BaseException:  # noqa: BLE001 - any failure is a failed child
        import traceback

        traceback.print_exc()
        os._exit(3)
    os._exit(0)


def _parallel(commands: list[list[str]]) -> list[int]:
    """Run each command in its own forked process, all released at once; their exit codes."""
    import audit.cli  # noqa: F401 - imported once, before forking, so the children start together

    context = multiprocessing.get_context("fork")
    barrier = context.Barrier(len(commands))
    children = [context.Process(target=_run_after_barrier, args=(barrier, args)) for args in commands]
    for child in children:
        child.start()
    for child in children:
        child.join(timeout=120)
    return [child.exitcode for child in children]


# -- review decide ---------------------------------------------------------------------------------


@fork
def test_parallel_review_decisions_are_all_kept(tmp_path: Path) -> None:
    baseline = tmp_path / "decisions.json"
    fingerprints = [f"{i:02x}" * 32 for i in range(20)]
    codes = _parallel([["review", "decide", fp, "--dismiss" if i % 2 else "--confirm", "--note", f"note {i}",
                        "--by", f"reviewer{i}", "--baseline", str(baseline)] for i, fp in enumerate(fingerprints)])
    assert codes == [0] * 20
    data = json.loads(baseline.read_text())
    assert sorted(d["fingerprint"] for d in data["decisions"]) == fingerprints  # 20 of 20 kept
    assert {d["note"] for d in data["decisions"]} == {f"note {i}" for i in range(20)}
    # nothing but the baseline and its lock file is left beside it
    assert sorted(p.name for p in tmp_path.iterdir()) == ["decisions.json", "decisions.json.lock"]


@fork
def test_parallel_decisions_on_one_finding_leave_one_decision(tmp_path: Path) -> None:
    baseline = tmp_path / "decisions.json"
    codes = _parallel([["review", "decide", "ab" * 32, "--dismiss", "--note", f"note {i}", "--baseline", str(baseline)]
                       for i in range(8)])
    assert codes == [0] * 8
    (decision,) = json.loads(baseline.read_text())["decisions"]
    assert decision["note"] in {f"note {i}" for i in range(8)}
