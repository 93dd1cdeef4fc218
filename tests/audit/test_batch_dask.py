"""Batch audits on a dask.distributed cluster the test starts (LocalCluster): same reports as the local
pool, results as runs finish, a lost worker's run retried once and then listed as an error."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

distributed = pytest.importorskip("distributed", reason="dask.distributed is not installed (pip install 'mleaudit[dask]')")

from mleaudit.audit.batch import BatchOptions, audit_batch, discover_runs  # noqa: E402
from mleaudit.audit.batch.task import _audit_one  # noqa: E402
from mleaudit.audit.batch_dask import audit_on_dask  # noqa: E402
from mleaudit.audit.cli import main  # noqa: E402

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "runs"


@pytest.fixture(scope="module")
def cluster():
    import dask

    # The scheduler gives a lost task up at once, so the batch's own single retry is what is tested.
    with dask.config.set({"distributed.scheduler.allowed-failures": 0}):
        with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                      worker_dashboard_address=None) as local:
            yield local


def _runs(tmp_path: Path, names: list[str]) -> Path:
    folder = tmp_path / "runs"
    folder.mkdir()
    for i, name in enumerate(names):
        shutil.copytree(EXAMPLES / name, folder / f"run-{i}")
    return folder


def _strip_times(report: dict) -> dict:
    """The report without the times it was made at (the only fields two audits of one run differ in)."""
    data = json.loads(json.dumps(report))
    for part in (data.get("meta") or {}, data.get("grade") or {}):
        part.pop("created_at", None)
    return data


def test_the_cluster_gives_the_reports_the_local_pool_gives(tmp_path: Path, cluster) -> None:
    entries = discover_runs(_runs(tmp_path, ["honest-digits", "llm-digits", "handwritten-digits"]),
                            competition="sklearn-digits")
    options = BatchOptions(jobs=1, similarity=False, data_dir=tmp_path / "data")
    seen: list[str] = []
    remote = audit_batch(entries, options, progress=lambda result: seen.append(result.entry.run_id),
                         scheduler=cluster.scheduler_address)
    local = audit_batch(entries, options)
    assert sorted(seen) == ["run-0", "run-1", "run-2"]
    assert [r.error for r in remote] == [None, None, None]
    for on_cluster, here in zip(remote, local):
        a, b = _strip_times(on_cluster.report), _strip_times(here.report)
        assert {k: v for k, v in a.items() if k != "run"} == {k: v for k, v in b.items() if k != "run"}
        assert {k: v for k, v in a["run"].items() if k != "root"} == {k: v for k, v in b["run"].items() if k != "root"}


def die_until_marked(entry, options):
    """A per-run task whose worker dies: once for run-0 (a marker file says it died), always for run-1."""
    marker = Path(str(entry.run_dir) + ".died")
    if entry.run_id == "run-1" or not marker.exists():
        marker.touch()
        os._exit(1)
    return _audit_one(entry, options)


def test_a_lost_worker_is_retried_once_then_listed(tmp_path: Path, cluster) -> None:
    entries = discover_runs(_runs(tmp_path, ["honest-digits", "honest-digits"]), competition="sklearn-digits")
    options = BatchOptions(jobs=1, similarity=False, grade=False)
    # One batch at a time: a dying worker also fails the tasks waiting on it.
    for entry in entries:
        outcomes: dict[int, tuple] = {}
        audit_on_dask([entry], options, cluster.scheduler_address,
                      lambda index, outcome: outcomes.__setitem__(index, outcome), task=die_until_marked)
        report, error, *_ = outcomes[0]
        if entry.run_id == "run-0":  # died once, audited on the second attempt
            assert error is None and report["run"]["run_id"] == "run-0"
        else:  # died both times: listed with the reason
            assert report is None and error.startswith("audit failed twice on the dask cluster")


def test_the_command_runs_on_the_cluster_and_refuses_contradictions(tmp_path: Path, cluster) -> None:
    runs = _runs(tmp_path, ["honest-digits", "llm-digits"])
    out = tmp_path / "out"
    result = CliRunner().invoke(main, ["audit", "batch", str(runs), "-o", str(out), "--no-similarity",
                                       "--competition", "sklearn-digits", "--data-dir", str(tmp_path / "data"),
                                       "--executor", "dask", "--scheduler", cluster.scheduler_address])
    assert result.exit_code == 1, result.output  # the llm run has a high finding
    summary = json.loads((out / "summary.json").read_text())
    assert summary["coverage"]["graded"] == 2 and summary["verdicts"]["flagged"] == 1
    missing = CliRunner().invoke(main, ["audit", "batch", str(runs), "-o", str(out), "--executor", "dask"],
                                 env={"MLEAUDIT_DASK_SCHEDULER": ""})
    assert missing.exit_code == 2 and "--executor dask needs --scheduler" in missing.output
    both = CliRunner().invoke(main, ["audit", "batch", str(runs), "-o", str(out), "--scheduler", "tcp://x:1"])
    assert both.exit_code == 2 and "--scheduler is for --executor dask" in both.output
    gone = CliRunner().invoke(main, ["audit", "batch", str(runs), "-o", str(out), "--executor", "dask",
                                     "--scheduler", "tcp://127.0.0.1:9"])
    assert gone.exit_code == 2 and "cannot reach the dask scheduler" in gone.output


def test_runs_waiting_on_a_cluster_without_workers_are_listed_not_left_hanging(tmp_path: Path, monkeypatch) -> None:
    from mleaudit.audit import batch_dask

    monkeypatch.setattr(batch_dask, "NO_WORKER_TIMEOUT_S", 1)
    entries = discover_runs(_runs(tmp_path, ["honest-digits", "llm-digits"]), competition="sklearn-digits")
    outcomes: dict[int, tuple] = {}
    with distributed.LocalCluster(n_workers=0, processes=False, dashboard_address=None) as empty:
        audit_on_dask(entries, BatchOptions(jobs=1, similarity=False, grade=False), empty.scheduler_address,
                      lambda index, outcome: outcomes.__setitem__(index, outcome))
    assert sorted(outcomes) == [0, 1]
    assert all(report is None and "had no worker for 1 s" in error for report, error, *_ in outcomes.values())
