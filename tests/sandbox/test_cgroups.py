"""RunCgroup: v2 and v1 layouts on a fake cgroup tree, and for real where this host allows it.

The fake trees are plain folders with the control files a kernel would show; they check which
hierarchy is chosen, what is written and how the counters are read. The real tests run where
:meth:`RunCgroup.create` succeeds on the host (root on cgroup v1 or v2).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mleaudit.sandbox.cgroups import CPU_PERIOD_US, RunCgroup, own_cgroups, parse_mountinfo

MiB = 1024**2


def _files(folder: Path, **files: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (folder / name.replace("__", ".")).write_text(text)


def _v2_tree(tmp_path: Path, *, delegated: bool) -> tuple[Path, Path, Path]:
    """A unified hierarchy with the caller in /user.slice/app; delegated: controllers enabled there."""
    root = tmp_path / "cg2"
    _files(root, cgroup__controllers="cpuset cpu io memory pids\n", cgroup__subtree_control="", cgroup__procs="")
    own = root / "user.slice" / "app"
    _files(own, cgroup__controllers="cpu memory pids\n", cgroup__procs="4242\n",
           cgroup__subtree_control="cpu memory pids\n" if delegated else "")  # fmt: skip
    mountinfo = tmp_path / "mountinfo"
    mountinfo.write_text(
        f"25 30 0:22 / /proc rw,nosuid - proc proc rw\n41 23 0:38 / {root} rw,relatime - cgroup2 cgroup2 rw\n"
    )
    self_cgroup = tmp_path / "self-cgroup"
    self_cgroup.write_text("0::/user.slice/app\n")
    return root, mountinfo, self_cgroup


def _v1_tree(tmp_path: Path) -> tuple[Path, Path, Path]:
    """Separate memory, pids and cpu,cpuacct hierarchies; the caller at /job in memory, / elsewhere."""
    base = tmp_path / "cg1"
    lines = []
    for n, name in enumerate(("memory", "pids", "cpu,cpuacct")):
        _files(base / name, cgroup__procs="")
        lines.append(f"{32 + n} 31 0:{29 + n} / {base / name} rw,relatime - cgroup cgroup rw,{name}")
    _files(base / "memory" / "job", cgroup__procs="4242\n")
    mountinfo = tmp_path / "mountinfo"
    mountinfo.write_text("\n".join(lines) + "\n")
    self_cgroup = tmp_path / "self-cgroup"
    self_cgroup.write_text("4:memory:/job\n8:pids:/\n1:cpu,cpuacct:/\n0::/\n")
    return base, mountinfo, self_cgroup


def test_mountinfo_and_own_cgroups_are_parsed():
    text = ("32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu,cpuacct\n"
            "41 31 0:38 /docker/abc /sys/fs/cgroup/my\\040tree rw - cgroup2 cgroup2 rw,nsdelegate\n"
            "22 1 8:1 / / rw - ext4 /dev/sda1 rw\n")  # fmt: skip
    assert parse_mountinfo(text) == [
        ("cgroup", "/", "/sys/fs/cgroup/cpu", frozenset({"rw", "cpu", "cpuacct"})),
        ("cgroup2", "/docker/abc", "/sys/fs/cgroup/my tree", frozenset({"rw", "nsdelegate"})),
    ]
    assert own_cgroups("4:memory:/a/b\n1:cpu,cpuacct:/\n0::/user.slice\n") == {
        "memory": "/a/b", "cpu": "/", "cpuacct": "/", "": "/user.slice"}  # fmt: skip


def test_v2_in_a_delegated_subtree(tmp_path):
    root, mountinfo, self_cgroup = _v2_tree(tmp_path, delegated=True)
    group = RunCgroup.create("run 1/x", memory_bytes=512 * MiB, pids=66, cpus=1.5, mountinfo=mountinfo,
                             self_cgroup=self_cgroup, euid=1000)  # fmt: skip
    assert group is not None and group.version == "v2" and group.enforcement == "cgroup-v2"
    assert group.controllers == {"memory", "pids", "cpu"}
    folder = group.folders["memory"]
    assert folder.parent == root / "user.slice" / "app" and folder.name.startswith("mleaudit-run_1_x-")
    assert (folder / "memory.max").read_text() == str(512 * MiB)
    assert (folder / "memory.swap.max").read_text() == "0"
    assert (folder / "pids.max").read_text() == "66"
    assert (folder / "cpu.max").read_text() == f"150000 {CPU_PERIOD_US}"
    assert group.limits == {"memory_bytes": 512 * MiB, "swap_bytes": 0, "pids": 66, "cpus": 1.5}
    # Joining writes "0" (the writer itself) to cgroup.procs.
    (folder / "cgroup.procs").write_text("")
    group.join_fn()()
    assert (folder / "cgroup.procs").read_text() == "0"
    # The counters.
    (folder / "memory.events").write_text("low 0\nhigh 0\nmax 7\noom 2\noom_kill 2\noom_group_kill 0\n")
    (folder / "memory.peak").write_text(f"{511 * MiB}\n")
    (folder / "pids.events").write_text("max 12\n")
    (folder / "cpu.stat").write_text("usage_usec 100\nnr_periods 40\nnr_throttled 5\nthrottled_usec 900\n")
    usage = group.usage()
    assert (usage.oom_kills, usage.memory_limit_events, usage.memory_peak_bytes, usage.forks_refused,
            usage.cpu_throttled_periods) == (2, 7, 511 * MiB, 12, 5)  # fmt: skip
    # Leftovers are killed through cgroup.kill; the folder is removed.
    (folder / "cgroup.kill").write_text("")
    group.kill()
    assert (folder / "cgroup.kill").read_text() == "1"
    for child in folder.iterdir():
        child.unlink()
    group.remove()
    assert not folder.exists()


def test_v2_not_delegated_is_not_used_by_an_unprivileged_caller(tmp_path):
    _, mountinfo, self_cgroup = _v2_tree(tmp_path, delegated=False)
    assert RunCgroup.create("r", memory_bytes=MiB, pids=8, mountinfo=mountinfo, self_cgroup=self_cgroup, euid=1000) is None


def test_v2_root_uses_the_hierarchy_root_and_enables_the_controllers(tmp_path):
    root, mountinfo, self_cgroup = _v2_tree(tmp_path, delegated=False)
    group = RunCgroup.create("r", memory_bytes=MiB, pids=8, mountinfo=mountinfo, self_cgroup=self_cgroup, euid=0)
    assert group is not None and group.version == "v2"
    assert group.folders["memory"].parent == root and group.controllers == {"memory", "pids"}
    assert set((root / "cgroup.subtree_control").read_text().split()) == {"+memory", "+pids"}


def test_v1_hierarchies_each_get_a_cgroup(tmp_path):
    base, mountinfo, self_cgroup = _v1_tree(tmp_path)
    # The memory hierarchy's files as the kernel shows them in every memory cgroup.
    group = RunCgroup.create("r", memory_bytes=256 * MiB, pids=10, cpus=0.5, mountinfo=mountinfo,
                             self_cgroup=self_cgroup, euid=0)  # fmt: skip
    assert group is not None and group.version == "v1" and group.enforcement == "cgroup-v1"
    memory, pids, cpu = group.folders["memory"], group.folders["pids"], group.folders["cpu"]
    assert memory.parent == base / "memory" / "job" and pids.parent == base / "pids" and cpu.parent == base / "cpu,cpuacct"
    assert (memory / "memory.limit_in_bytes").read_text() == str(256 * MiB)
    assert (memory / "memory.memsw.limit_in_bytes").read_text() == str(256 * MiB)
    assert (pids / "pids.max").read_text() == "10"
    assert (cpu / "cpu.cfs_period_us").read_text() == str(CPU_PERIOD_US)
    assert (cpu / "cpu.cfs_quota_us").read_text() == "50000"
    (memory / "memory.oom_control").write_text("oom_kill_disable 0\nunder_oom 0\noom_kill 3\n")
    (memory / "memory.failcnt").write_text("17\n")
    (memory / "memory.max_usage_in_bytes").write_text(f"{256 * MiB}\n")
    (pids / "pids.events").write_text("max 4\n")
    usage = group.usage()
    assert (usage.oom_kills, usage.memory_limit_events, usage.memory_peak_bytes, usage.forks_refused) == (3, 17, 256 * MiB, 4)
    assert usage.cpu_throttled_periods is None  # no cpu.stat written
    for folder in group.folders.values():
        for child in folder.iterdir():
            child.unlink()
    group.remove()
    assert not any(folder.exists() for folder in group.folders.values())


def test_v2_is_preferred_when_it_has_the_controllers(tmp_path):
    root, mountinfo, self_cgroup = _v2_tree(tmp_path / "a", delegated=True)
    base, mountinfo1, _ = _v1_tree(tmp_path / "b")
    mountinfo.write_text(mountinfo.read_text() + mountinfo1.read_text())
    self_cgroup.write_text("4:memory:/job\n8:pids:/\n0::/user.slice/app\n")
    group = RunCgroup.create("r", memory_bytes=MiB, mountinfo=mountinfo, self_cgroup=self_cgroup, euid=0)
    assert group is not None and group.version == "v2"


def test_a_hybrid_host_with_an_empty_unified_hierarchy_uses_v1(tmp_path):
    base, mountinfo, self_cgroup = _v1_tree(tmp_path)
    unified = tmp_path / "unified"
    _files(unified, cgroup__controllers="", cgroup__subtree_control="", cgroup__procs="")
    mountinfo.write_text(mountinfo.read_text() + f"41 31 0:38 / {unified} rw - cgroup2 cgroup2 rw\n")
    group = RunCgroup.create("r", memory_bytes=MiB, pids=4, mountinfo=mountinfo, self_cgroup=self_cgroup, euid=0)
    assert group is not None and group.version == "v1" and group.controllers == {"memory", "pids"}


def test_no_cgroup_mounts_or_no_own_folder_means_none(tmp_path):
    mountinfo = tmp_path / "mountinfo"
    mountinfo.write_text("22 1 8:1 / / rw - ext4 /dev/sda1 rw\n")
    self_cgroup = tmp_path / "self-cgroup"
    self_cgroup.write_text("0::/\n")
    assert RunCgroup.create("r", memory_bytes=MiB, mountinfo=mountinfo, self_cgroup=self_cgroup, euid=0) is None
    base, mountinfo, self_cgroup = _v1_tree(tmp_path / "v1")
    self_cgroup.write_text("4:memory:/gone\n8:pids:/gone\n")
    assert RunCgroup.create("r", memory_bytes=MiB, pids=4, mountinfo=mountinfo, self_cgroup=self_cgroup, euid=0) is None
    assert RunCgroup.create("r", mountinfo=tmp_path / "missing", self_cgroup=self_cgroup) is None


# Real cgroups on this host -------------------------------------------------------------------


@pytest.fixture
def real():
    group = RunCgroup.create("test", memory_bytes=64 * MiB, pids=8, cpus=0.5)
    if group is None or not {"memory", "pids"} <= group.controllers:
        if group is not None:
            group.remove()
        pytest.skip("this host gives no cgroup with the memory and pids controllers")
    yield group
    group.remove()


def test_real_cgroup_limits_join_counters_and_removal(real):
    memory, pids = real.folders["memory"], real.folders["pids"]
    limit_file = "memory.max" if real.version == "v2" else "memory.limit_in_bytes"
    assert int((memory / limit_file).read_text()) == 64 * MiB
    assert (pids / "pids.max").read_text().strip() == "8"
    # A child joins before it executes: its /proc/self/cgroup names the run cgroup.
    shown = subprocess.run(["cat", "/proc/self/cgroup"], preexec_fn=real.join_fn(), capture_output=True, text=True).stdout
    assert shown.count(memory.name) >= 1
    # Past the memory limit the kernel kills (OOM) inside the cgroup only.
    hog = "b = bytearray(200 * 1024 * 1024)\nfor i in range(0, len(b), 4096): b[i] = 1"
    proc = subprocess.run([sys.executable, "-c", hog], preexec_fn=real.join_fn(), capture_output=True)
    assert proc.returncode == -signal.SIGKILL
    # Past the process limit forks are refused.
    forks = "import os, time\nfor _ in range(20):\n    if os.fork() == 0:\n        os.close(1); os.close(2); time.sleep(5); os._exit(0)"
    proc = subprocess.run([sys.executable, "-c", forks], preexec_fn=real.join_fn(), capture_output=True, text=True)
    assert "BlockingIOError" in proc.stderr or "Resource temporarily unavailable" in proc.stderr
    usage = real.usage()
    assert usage.oom_kills == 1 and usage.forks_refused and usage.forks_refused >= 1
    # The sleeping children are still there; removal kills them and removes the folders.
    assert real.pids()
    started = time.monotonic()
    real.remove()
    assert time.monotonic() - started < 5
    assert not any(folder.exists() for folder in real.folders.values())


def test_real_cgroup_signals_reach_every_member_but_the_spared(real):
    sleeper = subprocess.Popen(["sleep", "30"], preexec_fn=real.join_fn())
    spared = subprocess.Popen(["sleep", "30"], preexec_fn=real.join_fn())
    try:
        assert set(real.pids()) == {sleeper.pid, spared.pid}
        assert real.signal(signal.SIGTERM, exclude=(spared.pid,)) == 1
        assert sleeper.wait(timeout=5) == -signal.SIGTERM and spared.poll() is None
    finally:
        real.remove()
    assert spared.wait(timeout=5) == -signal.SIGKILL
    assert os.path.exists(f"/proc/{spared.pid}") is False
