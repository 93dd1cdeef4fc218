"""All-pairs work spread over forked processes: the same tables as in one process, errors raised.

:func:`_map_in_processes` hands task numbers out through a pipe; these tests fork real
processes (the thresholds that keep small inputs in one process are lowered where needed).
"""

from __future__ import annotations

import csv
import os
import random
import signal
import threading
import time

import numpy as np
import pytest

from mleaudit.audit.errors import AuditError
from mleaudit.audit.similarity.allpairs import fingerprints, metrics, processes
from mleaudit.audit.similarity.allpairs import (
    PairTable,
    all_pair_metrics,
    all_pair_metrics_by_group,
    all_pair_metrics_of_texts,
    fingerprint_hashes,
    fingerprint_texts,
    idle_jobs,
)
from tests.conftest import shared_path

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="forks worker processes")

FIELDS = ("left", "right", "similarity", "total_overlap", "longest_fragment", "left_covered", "right_covered",
          "left_total", "right_total", "left_ignored", "right_ignored")


def _same(one: PairTable, two: PairTable) -> bool:
    return all(np.array_equal(getattr(one, f), getattr(two, f)) for f in FIELDS)


def _snippet(rng: random.Random, n: int) -> str:
    """A small random Python program (distinct shapes, some repeated statements)."""
    lines = []
    for i in range(n):
        kind = rng.randrange(5)
        if kind == 0:
            lines.append(f"x{i} = [a * {i} for a in range({rng.randrange(9)}) if a % 2]")
        elif kind == 1:
            lines.append(f"def f{i}(p, q):\n    return p.{rng.choice('abc')}(q) + {i}")
        elif kind == 2:
            lines.append(f"for k in range({i}):\n    total += k * k\n    total -= 1")
        elif kind == 3:
            lines.append(f"frame['c{i}'] = frame['a'].map(lambda v: v ** 2).fillna({i})")
        else:
            lines.append("value = compute(value)\n" * rng.randrange(1, 4))
    return "\n".join(lines) + "\n"


@pytest.fixture
def parallel_everything(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fork for any input size."""
    monkeypatch.setattr(fingerprints, "_MIN_PARALLEL_CHARS", 0)
    monkeypatch.setattr(metrics, "_MIN_PARALLEL_CHARS", 0)
    monkeypatch.setattr(metrics, "_MIN_PARALLEL_OCCURRENCES", 0)


# -- the process map ------------------------------------------------------------------------------


def test_every_task_once_in_order_across_processes() -> None:
    def task(t: int) -> tuple[int, int]:
        time.sleep(0.002)  # long enough for every process to take some
        return t * t, os.getpid()

    results = processes._map_in_processes(task, 200, 3)
    assert [value for value, _ in results] == [t * t for t in range(200)]
    pids = {pid for _, pid in results}
    assert os.getpid() in pids and len(pids) == 3  # this process takes tasks too


def test_a_worker_exception_is_raised_here() -> None:
    parent = os.getpid()

    def task(t: int) -> int:
        if os.getpid() != parent:
            raise KeyError(f"unknown language 'cobol' (task {t})")
        time.sleep(0.002)  # leaves tasks for the forked process
        return t

    with pytest.raises(KeyError, match="cobol"):
        processes._map_in_processes(task, 40, 2)


def test_a_killed_worker_is_an_audit_error() -> None:
    parent = os.getpid()

    def task(t: int) -> int:
        if os.getpid() != parent:
            os.kill(os.getpid(), signal.SIGKILL)
        time.sleep(0.002)  # leaves tasks for the forked process
        return t

    with pytest.raises(AuditError, match="killed by signal 9|returned"):
        processes._map_in_processes(task, 50, 2)


def test_one_process_or_threads_mean_no_fork() -> None:
    parent = os.getpid()
    assert {pid for pid in processes._map_in_processes(lambda t: os.getpid(), 5, 1)} == {parent}
    release = threading.Event()
    helper = threading.Thread(target=release.wait)
    helper.start()
    try:  # a fork with another thread running could copy a held lock
        assert {pid for pid in processes._map_in_processes(lambda t: os.getpid(), 5, 4)} == {parent}
    finally:
        release.set()
        helper.join()
    with pytest.raises(ValueError, match="at most 256 tasks"):
        processes._map_in_processes(lambda t: t, 257, 2)


def test_deal_keeps_order_and_evens_out_lengths() -> None:
    runs = processes._deal(list(range(10)), 4)
    assert [x for run in runs for x in run] == list(range(10))
    assert sorted(len(run) for run in runs) == [2, 2, 3, 3]
    assert processes._deal([1, 2], 8) == [[1], [2]]


def test_idle_jobs_follow_the_load(monkeypatch: pytest.MonkeyPatch) -> None:
    import mleaudit.audit.cpus

    monkeypatch.setattr(mleaudit.audit.cpus, "usable_cpus", lambda: 8)
    for load, expected in [(0.0, 8), (2.6, 5), (7.7, 1), (40.0, 1)]:
        monkeypatch.setattr(os, "getloadavg", lambda load=load: (load, load, load))
        assert idle_jobs() == expected

    def unavailable() -> tuple[float, float, float]:
        raise OSError("no load average")

    monkeypatch.setattr(os, "getloadavg", unavailable)
    assert idle_jobs() == 1


# -- fingerprints ---------------------------------------------------------------------------------


def test_parallel_fingerprints_equal_serial_and_share_duplicates(parallel_everything: None) -> None:
    rng = random.Random(1)
    texts = [(_snippet(rng, rng.randrange(3, 40)), "python") for _ in range(30)]
    texts += [texts[3], texts[11], ("broken (\n  code", "python"), ("", "python"), ("ab\ncd", "chars")]
    serial = [fingerprint_hashes(text, language) for text, language in texts]
    for jobs in (1, 2, 3):
        got = fingerprint_texts(texts, jobs=jobs)
        assert [h.tolist() for h in got] == [h.tolist() for h in serial]
        assert got[30] is got[3] and got[31] is got[11]  # identical texts fingerprinted once


def test_bad_arguments_fail_before_forking() -> None:
    with pytest.raises(KeyError, match="unknown language 'cobol'"):
        fingerprint_texts([("x = 1", "python")] * 3 + [("x", "cobol")], jobs=2)
    with pytest.raises(ValueError, match="k-gram length"):
        fingerprint_texts([("x = 1", "python")], kgram_length=0)
    with pytest.raises(ValueError, match="window"):
        all_pair_metrics_of_texts([[("x = 1", "python")]], kgrams_in_window=0)


# -- pair tables ----------------------------------------------------------------------------------


def test_groups_in_processes_equal_one_process(parallel_everything: None) -> None:
    rng = random.Random(2)
    groups = [[[rng.randrange(9) for _ in range(rng.randrange(0, 60))] for _ in range(rng.randrange(1, 9))]
              for _ in range(7)]
    groups.append([[rng.randrange(30) for _ in range(400)] for _ in range(12)])  # one that dominates
    expected = [all_pair_metrics(group) for group in groups]
    for jobs in (1, 2, 3):
        got = all_pair_metrics_by_group(groups, jobs=jobs)
        assert len(got) == len(groups) and all(_same(a, b) for a, b in zip(got, expected))
    ignored = frozenset({1, 2})
    assert all(_same(a, all_pair_metrics(g, ignored)) for a, g in zip(all_pair_metrics_by_group(groups, ignored, jobs=2), groups))


@pytest.mark.parametrize("shape", ["many small groups", "one dominant group", "one group"])
def test_texts_to_tables_in_processes_equal_one_process(parallel_everything: None, shape: str) -> None:
    rng = random.Random(len(shape))
    sizes = {"many small groups": [5, 4, 6, 3, 5, 2, 1], "one dominant group": [25, 2, 3], "one group": [14]}[shape]
    groups = [[(_snippet(rng, rng.randrange(2, 30)), "python") for _ in range(n)] for n in sizes]
    groups[0].append(groups[0][0])  # a verbatim copy
    expected = [all_pair_metrics(fingerprint_texts(group)) for group in groups]
    for jobs in (1, 2, 3):
        got = all_pair_metrics_of_texts(groups, jobs=jobs)
        assert all(_same(a, b) for a, b in zip(got, expected)), jobs


def test_golden_pairs_in_two_processes_match_dolos() -> None:
    root = shared_path("similarity-golden")
    names = [sorted(p.name for p in d.glob("*.py")) for d in sorted(root.iterdir()) if d.is_dir()]
    folders = [d for d in sorted(root.iterdir()) if d.is_dir()]
    groups = [[((folder / name).read_bytes().decode("utf-8"), "python") for name in group]
              for folder, group in zip(folders, names)]
    tables = all_pair_metrics_of_texts(groups, jobs=2)
    checked = 0
    for folder, group, table in zip(folders, names, tables):
        with (folder / "dolos_pairs.tsv").open(newline="", encoding="utf-8") as handle:
            rows = {(r["left"], r["right"]): r for r in csv.DictReader(handle, delimiter="\t")}
        for k in range(len(table)):
            row = rows[(f"{folder.name}/{group[table.left[k]]}", f"{folder.name}/{group[table.right[k]]}")]
            assert abs(table.similarity[k] - float(row["similarity"])) <= 1e-6
            assert (table.total_overlap[k], table.longest_fragment[k], table.left_covered[k], table.right_covered[k],
                    table.left_total[k], table.right_total[k]) == tuple(
                int(row[c]) for c in ("totalOverlap", "longestFragment", "leftCovered", "rightCovered",
                                      "leftTotal", "rightTotal"))
            checked += 1
    assert checked == sum(len(g) * (len(g) - 1) // 2 for g in names) > 1000
