"""Limits of the local backend that hold for the whole sandbox, and the record of every hit.

The cgroup tests need a host where :class:`mleaudit.sandbox.cgroups.RunCgroup` can create a cgroup with
the memory and pids controllers (root on cgroup v1 or v2, or a delegated v2 subtree); the
rlimit fallback is tested everywhere. Memory use stays modest: at most about 1 GiB is held at
once by an agent, inside its own limit.
"""

from __future__ import annotations

import json
import os
import resource

import pytest

from mleaudit.sandbox.cgroups import RunCgroup
from mleaudit.sandbox.local import MASK_TMPFS_BYTES, BubblewrapRunner
from mleaudit.sandbox.spec import Resources

from tests.sandbox.escapes import HostListener, run_escape

MiB = 1024**2
GiB = 1024**3


def _cgroup_version() -> str | None:
    group = RunCgroup.create("probe", memory_bytes=64 * MiB, pids=16)
    if group is None:
        return None
    try:
        return group.version if {"memory", "pids"} <= group.controllers else None
    finally:
        group.remove()


_VERSION = _cgroup_version()


@pytest.fixture
def cgroup_version(bwrap):
    if _VERSION is None:
        pytest.skip("no cgroup with the memory and pids controllers can be created here")
    return _VERSION


@pytest.fixture
def listener():
    host = HostListener()
    yield host
    host.close()


@pytest.fixture
def escape(run_agent, toy, listener, bwrap):
    def run(name, runner=bwrap, **fields):
        return run_escape(name, run_agent, toy, listener, runner, **fields)

    return run


def _peak_rss_bytes() -> int:
    """The test process's resident-set high-water mark (VmHWM), in bytes."""
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


@pytest.fixture
def host_peak():
    """Measure how far the host side's peak RSS grows during one test.

    The peak is a high-water mark over the whole test process, which earlier tests may already have
    raised; writing ``5`` to ``/proc/self/clear_refs`` (Linux >= 4.0) resets it, and where that is
    refused the growth over the starting peak is what is checked.
    """
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as refs:
            refs.write("5")
    except OSError:
        pass
    before = _peak_rss_bytes()

    def grown() -> int:
        os.kill(os.getpid(), 0)
        return max(0, _peak_rss_bytes() - before)

    return grown


def _host_alive(host_peak) -> None:
    # The agent's allocations stay in the sandbox: the host side grows far less than the limit.
    assert host_peak() < 256 * MiB


def test_four_children_cannot_hold_four_times_the_memory_limit(escape, cgroup_version, host_peak):
    result, log, record = escape("memory_children.py", resources=Resources(memory_bytes=GiB))
    assert "BLOCKED" in log, log
    held = int(log.split("BLOCKED: ")[1].split()[0])
    assert held <= 1
    assert "memory" in record["limits_hit"]
    event = next(e for e in record["events"] if e["kind"] == "limit-hit" and e["limit"] == "memory")
    assert "OOM kill(s) in the sandbox" in event["detail"]
    assert record["isolation"]["cgroup"]["usage"]["oom_kills"] >= 3 - held
    assert record["isolation"]["enforcement"]["memory"] == f"cgroup-{cgroup_version}"
    _host_alive(host_peak)


def test_writing_to_tmp_counts_against_the_memory_limit(escape, cgroup_version, host_peak):
    result, log, record = escape("fill_tmp.py", resources=Resources(memory_bytes=512 * MiB))
    assert "ESCAPED" not in log
    # Either the tmpfs size (ENOSPC) or the cgroup (an OOM kill) stops it before 512 MiB.
    if "BLOCKED" in log:
        assert "No space left" in log and int(log.split("after ")[1].split()[0]) <= 512
    else:
        assert "memory" in record["limits_hit"] and record["exit_signal"] == 9
    assert record["isolation"]["cgroup"]["usage"]["memory_peak_bytes"] <= 512 * MiB
    assert record["isolation"]["limits"]["tmpfs_bytes"] == 512 * MiB
    _host_alive(host_peak)


def test_a_fork_bomb_is_recorded_at_the_pids_limit(escape, cgroup_version):
    result, log, record = escape("fork_bomb.py", resources=Resources(pids=64))
    children = int(log.split("fork failed after ")[1].split()[0])
    assert children < 64
    assert "pids" in record["limits_hit"]
    event = next(e for e in record["events"] if e["kind"] == "limit-hit" and e["limit"] == "pids")
    assert "refused at the 64-process limit" in event["detail"]
    assert record["isolation"]["cgroup"]["usage"]["forks_refused"] >= 1


def test_run_json_says_which_enforcement_was_in_force(run_agent, bwrap, cgroup_version):
    script = "import resource as r; print(r.getrlimit(r.RLIMIT_AS)[0], r.getrlimit(r.RLIMIT_NPROC)[0])"
    result = run_agent(script, runner=bwrap, name="limits.py",
                       resources=Resources(cpus=1.5, memory_bytes=512 * MiB, pids=100))  # fmt: skip
    record = json.loads(result.run_json.read_text())
    tag = f"cgroup-{cgroup_version}"
    assert record["isolation"]["enforcement"] == {"memory": tag, "pids": tag, "cpu": tag, "tmpfs": "bwrap --size",
                                                  "time": "host timer"}  # fmt: skip
    assert record["limits"]["enforcement"] == record["isolation"]["enforcement"]
    cgroup = record["isolation"]["cgroup"]
    assert cgroup["version"] == cgroup_version
    assert cgroup["limits"] == {"memory_bytes": 512 * MiB, "swap_bytes": 0, "pids": 102, "cpus": 1.5}
    # No per-process rlimit stands in for the cgroup: the agent's address space is not bounded.
    address_space, nproc = (int(v) for v in result.run_log.read_text().split())
    assert address_space == resource.RLIM_INFINITY and "address_space_bytes" not in record["isolation"]["rlimits"]
    # The cgroup is gone after the run.
    assert not any(os.path.exists(p) for p in cgroup["folders"].values())


def test_without_a_cgroup_the_rlimits_stand_in_and_say_so(run_agent, bwrap):
    script = "import resource as r; print(r.getrlimit(r.RLIMIT_AS)[0], r.getrlimit(r.RLIMIT_NPROC)[0])"
    result = run_agent(script, runner=BubblewrapRunner(cgroups=False), name="limits.py",
                       resources=Resources(cpus=1, memory_bytes=512 * MiB, pids=100))  # fmt: skip
    address_space, nproc = (int(v) for v in result.run_log.read_text().split())
    assert address_space == 512 * MiB and nproc in (100, 102)
    isolation = json.loads(result.run_json.read_text())["isolation"]
    assert isolation["enforcement"] == {"memory": "rlimit (per process)", "pids": "rlimit (per user)",
                                        "cpu": "cpu affinity (advisory)", "tmpfs": "bwrap --size",
                                        "time": "host timer"}  # fmt: skip
    assert len(isolation["rlimits"]["cpu_affinity"]) == 1 and "cgroup" not in isolation
    assert any("not visible to the host" in note for note in isolation["enforcement_notes"])


def test_with_no_limits_given_the_defaults_apply(run_agent, bwrap):
    result = run_agent("df -B1 --output=size /tmp /dev/shm | tail -n 2", runner=bwrap)
    limits = json.loads(result.run_json.read_text())["isolation"]["limits"]
    total = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    assert 0.7 * total < limits["memory_bytes"] <= 0.75 * total
    assert limits["pids"] == 4096 and limits["tmpfs_bytes"] == limits["memory_bytes"]
    sizes = [int(v) for v in result.run_log.read_text().split()]
    assert all(abs(size - limits["memory_bytes"]) < 4 * MiB for size in sizes), sizes


def test_every_tmpfs_has_a_size(run_agent, bwrap, toy):
    from mleaudit.sandbox.spec import Mount

    script = "df -B1 --output=size,target /tmp /var/tmp /dev/shm /mnt/tree/private | tail -n 4"
    result = run_agent(script, runner=bwrap, resources=Resources(memory_bytes=300 * MiB, shm_bytes=100 * MiB),
                       mounts=(Mount(source=toy.root, target="/mnt/tree"),))  # fmt: skip
    sizes = {target: int(size) for size, target in (line.split() for line in result.run_log.read_text().splitlines())}
    assert abs(sizes["/tmp"] - 300 * MiB) < MiB and abs(sizes["/var/tmp"] - 300 * MiB) < MiB
    assert abs(sizes["/dev/shm"] - 100 * MiB) < MiB
    assert sizes["/mnt/tree/private"] <= MASK_TMPFS_BYTES
