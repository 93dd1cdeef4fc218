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
    import click

    from mleaudit.audit.cli import main

    barrier.wait(timeout=60)
    try:
        main(args, standalone_mode=False)
    except click.ClickException as exc:
        exc.show()
        os._exit(exc.exit_code)
    except SystemExit as exc:
        os._exit(exc.code if isinstance(exc.code, int) else 1)
    except BaseException:  # noqa: BLE001 - any failure is a failed child
        import traceback

        traceback.print_exc()
        os._exit(3)
    os._exit(0)


def _parallel(commands: list[list[str]]) -> list[int]:
    """Run each command in its own forked process, all released at once; their exit codes."""
    import mleaudit.audit.cli  # noqa: F401 - imported once, before forking, so the children start together

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


# -- corpus add --------------------------------------------------------------------------------------


from tests.audit.similarity.test_corpus_index import redis_url  # noqa: E402,F401 - the Redis server fixture


def _corpus_folders(tmp_path: Path) -> dict[str, Path]:
    folders = {"base": ["base.py", "reordered.py"], "one": ["renamed.py"], "two": ["unrelated.py"],
               "shared": ["kernel_with_starter.py", "reformatted.py"]}
    made = {}
    for name, files in folders.items():
        folder = tmp_path / name
        folder.mkdir()
        for file in files:
            shutil.copy(INVARIANCE / file, folder / file)
        made[name] = folder.resolve()
    return made


def _stored_docs(index) -> list[str]:
    """Every reference path the index stores, duplicates included."""
    return sorted(path for path, _, _ in index._backend.digest_rows())


@fork
@pytest.mark.parametrize("storage", ["sqlite", "redis"])
def test_parallel_corpus_adds_keep_every_root_once(tmp_path: Path, storage: str, request) -> None:
    from mleaudit.audit.similarity.index import build_corpus_index, load_corpus_index

    url = request.getfixturevalue("redis_url") if storage == "redis" else None
    folders = _corpus_folders(tmp_path)
    expected = sorted(p.name for folder in folders.values() for p in folder.iterdir())
    trials = 10
    for trial in range(trials):
        index_path = tmp_path / f"trial{trial}.index"
        build_corpus_index([folders["base"]], index_path, storage=url)
        codes = _parallel([["corpus", "add", str(index_path), str(folders["one"]), str(folders["shared"]), "-j", "1"],
                           ["corpus", "add", str(index_path), str(folders["two"]), str(folders["shared"]), "-j", "1"]])
        assert codes == [0, 0], f"trial {trial}"
        with load_corpus_index(index_path) as index:
            roots = list(index.info().roots)
            assert sorted(roots) == sorted(str(f) for f in folders.values()), f"trial {trial}: roots {roots}"
            assert _stored_docs(index) == expected, f"trial {trial}"
            assert index.info().references == len(expected)
    # a later update of a file both adds indexed replaces it: one entry, and the index equals a
    # fresh build of the same files
    changed = folders["shared"] / "reformatted.py"
    changed.write_text((INVARIANCE / "renamed.py").read_text(encoding="utf-8") + "\nprint('changed')\n")
    with load_corpus_index(index_path, writable=True) as index:
        summary = index.add([folders["shared"]])
        assert (summary.added, summary.replaced, summary.unchanged) == (0, 1, 1)
        assert _stored_docs(index) == expected
    fresh_path = tmp_path / "fresh.index"
    build_corpus_index(list(folders.values()), fresh_path, storage=url)
    with load_corpus_index(index_path) as index, load_corpus_index(fresh_path) as fresh:
        assert index.info().corpus_digest == fresh.info().corpus_digest != ""
        assert index.info().ngrams == fresh.info().ngrams
        from mleaudit.audit.similarity import SimilarityOptions
        from mleaudit.audit.units import CodeUnit

        agent = [CodeUnit(path="code/a.py", language="python", text=(INVARIANCE / "renamed.py").read_text(encoding="utf-8"))]
        options = SimilarityOptions(max_doc_fraction=1.0)
        assert index.compare(agent, options, min_containment=0.0, top=None).pairs == fresh.compare(
            agent, options, min_containment=0.0, top=None).pairs


@fork
def test_parallel_builds_of_one_index_leave_one_intact_index(tmp_path: Path) -> None:
    from mleaudit.audit.similarity.index import load_corpus_index

    folders = _corpus_folders(tmp_path)
    index_path = tmp_path / "k.index"
    codes = _parallel([["corpus", "build", str(folders["base"]), "-o", str(index_path), "-j", "1"]] * 4)
    assert sorted(codes) == [0, 2, 2, 2]  # one build; the others say the file exists
    with load_corpus_index(index_path) as index:
        assert index.info().references == 2


# -- an interrupted batch ------------------------------------------------------------------------------


def _mleaudit() -> list[str]:
    script = Path(sys.executable).with_name("mleaudit")
    return [str(script)] if script.is_file() else [sys.executable, "-m", "mleaudit"]


def _reports(out: Path) -> dict[str, dict]:
    """The batch's reports by file name, with the creation time masked; fails on a half-written file."""
    reports = {}
    for path in sorted((out / "runs").iterdir()):
        assert path.suffix == ".json", f"left behind: {path.name}"
        report = json.loads(path.read_text(encoding="utf-8"))
        report["meta"]["created_at"] = "<masked>"
        reports[path.name] = report
    return reports


@pytest.mark.parametrize("jobs", ["1", pytest.param("2", marks=pytest.mark.slow)])
def test_an_interrupted_batch_rerun_gives_the_reports_of_an_uninterrupted_one(tmp_path: Path, jobs: str) -> None:
    from click.testing import CliRunner

    from mleaudit.audit.cli import main

    group = tmp_path / "group"
    group.mkdir()
    examples = ["llm-digits", "honest-digits", "honest-digits", "honest-digits", "llm-digits"]
    for i, example in enumerate(examples):
        shutil.copytree(EXAMPLES / example, group / f"sklearn-digits_{i:08x}-aaaa-bbbb-cccc-dddddddddddd")
    options = ["-j", jobs, "--no-similarity", "--no-grade"]
    env = {k: v for k, v in os.environ.items() if k not in ("MLEAUDIT_RULES", "MLEAUDIT_COMPETITIONS")}

    out = tmp_path / "out"
    proc = subprocess.Popen([*_mleaudit(), "audit", "batch", str(group), "-o", str(out), *options], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    deadline = time.monotonic() + 60
    while not any((out / "runs").glob("*.json")) and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    os.killpg(proc.pid, signal.SIGINT)  # Ctrl-C at the terminal: the whole process group
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode != 0 and not (out / "summary.json").exists(), stderr.decode()[-2000:]
    partial = _reports(out)  # every report left is whole, no temporary file is left
    assert 1 <= len(partial) < len(examples)

    rerun = CliRunner().invoke(main, ["audit", "batch", str(group), "-o", str(out), "-j", "1", *options[2:]])
    assert rerun.exit_code == 1, rerun.output  # the LLM runs have high findings
    clean = tmp_path / "clean"
    uninterrupted = CliRunner().invoke(main, ["audit", "batch", str(group), "-o", str(clean), "-j", "1", *options[2:]])
    assert uninterrupted.exit_code == 1, uninterrupted.output
    expected = _reports(clean)
    assert len(expected) == len(examples) and _reports(out) == expected
    assert all(report == expected[name] for name, report in partial.items())
