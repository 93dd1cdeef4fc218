"""A control group per sandbox run: memory, process and CPU limits that hold for the whole sandbox.

Resource limits (rlimits) are per process: an agent that forks four children gets four times
its memory limit, and the pages it writes to a RAM-backed ``/tmp`` count nowhere. A control
group bounds everything its processes use together, tmpfs pages included (the kernel charges a
shmem/tmpfs page to the memory cgroup of the process that first writes it, in both cgroup
versions), and counts when a limit was hit.

:class:`RunCgroup` creates one cgroup per run wherever the host allows it:

- **cgroup v2** (the unified hierarchy) when it has the ``memory``/``pids``/``cpu`` controllers:
  under the caller's own cgroup when that is delegated to the caller (writable, with the
  controllers enabled in its ``cgroup.subtree_control``), or, for root, directly under the
  hierarchy's root (enabling the controllers there when needed);
- else **cgroup v1**: one cgroup in each of the separate ``memory``, ``pids`` and ``cpu``
  hierarchies, under the caller's own cgroup there, when that is writable;
- else none (:meth:`RunCgroup.create` returns ``None``; the caller falls back to rlimits).

Each limit is set only where its controller is available; :attr:`RunCgroup.controllers` says
which are. The sandbox's first process joins before it executes anything: :meth:`join_fn` gives
a ``preexec_fn`` that writes ``0`` (the writer itself) to ``cgroup.procs`` of every hierarchy.
After the run :meth:`usage` reads what was hit (v2: ``memory.events`` ``oom_kill``,
``pids.events`` ``max``, ``cpu.stat`` ``nr_throttled``; v1: ``memory.oom_control``
``oom_kill``, ``memory.failcnt``, ``pids.events`` ``max``, ``cpu.stat`` ``nr_throttled``) and
:meth:`remove` kills whatever is left (``cgroup.kill`` on v2, each pid on v1) and removes the
folders.

The file names and semantics are the kernel's: Documentation/admin-guide/cgroup-v2.rst and
Documentation/admin-guide/cgroup-v1/{memory,pids}.rst, Documentation/scheduler/sched-bwc.rst.
"""

from __future__ import annotations

import errno
import logging
import os
import re
import secrets
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Mapping

__all__ = ["RunCgroup", "CgroupUsage", "CONTROLLERS", "CPU_PERIOD_US", "parse_mountinfo", "own_cgroups"]

logger = logging.getLogger(__name__)

#: The controllers a run cgroup uses, in the order they are set up.
CONTROLLERS = ("memory", "pids", "cpu")
#: CFS bandwidth period in microseconds (the kernel's default, sched-bwc.rst); the quota is
#: ``cpus * CPU_PERIOD_US``.
CPU_PERIOD_US = 100_000
#: Smallest CFS quota the kernel accepts, in microseconds (sched-bwc.rst).
_MIN_QUOTA_US = 1_000
#: Seconds :meth:`RunCgroup.remove` waits for killed processes to leave the cgroup.
_DRAIN_S = 10.0
_NAME = re.compile(r"[^A-Za-z0-9_.-]+")


def parse_mountinfo(text: str) -> list[tuple[str, str, str, frozenset[str]]]:
    """The cgroup mounts listed in ``/proc/self/mountinfo``.

    Parameters
    ----------
    text : str
        The file's content (proc(5): ``id parent major:minor root mountpoint options ... - fstype
        source superoptions``).

    Returns
    -------
    list of (str, str, str, frozenset of str)
        ``(fstype, root, mount point, super options)`` for every ``cgroup`` and ``cgroup2``
        mount; for v1 the super options hold the controller names (``memory``, ``cpu`` ...).
    """
    mounts = []
    for line in text.splitlines():
        left, sep, right = line.partition(" - ")
        if not sep:
            continue
        fields, tail = left.split(), right.split()
        if len(fields) < 5 or len(tail) < 3 or tail[0] not in ("cgroup", "cgroup2"):
            continue
        root, point = (_unescape(f) for f in fields[3:5])
        mounts.append((tail[0], root, point, frozenset(tail[2].split(","))))
    return mounts


def _unescape(text: str) -> str:
    """mountinfo escapes space, tab, newline and backslash as ``\\ooo`` octal."""
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), text)


def own_cgroups(text: str) -> dict[str, str]:
    """The caller's cgroup path per hierarchy from ``/proc/self/cgroup``.

    Parameters
    ----------
    text : str
        Lines ``hierarchy-id:controllers:path`` (cgroups(7)).

    Returns
    -------
    dict of str to str
        ``""`` (the unified hierarchy) and each v1 controller name mapped to its path.
    """
    found: dict[str, str] = {}
    for line in text.splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        _, controllers, path = parts
        if not controllers:
            found[""] = path
        for name in controllers.split(","):
            if name:
                found[name] = path
    return found


def _under(mount: str, mount_root: str, path: str) -> Path:
    """The folder of cgroup ``path`` in a hierarchy mounted at ``mount`` (whose own root is ``mount_root``)."""
    rel = path
    if mount_root not in ("", "/") and (path == mount_root or path.startswith(mount_root.rstrip("/") + "/")):
        rel = path[len(mount_root):]
    return Path(mount) / rel.lstrip("/")


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="ascii", errors="replace")
    except OSError:
        return ""


def _keyed(text: str) -> dict[str, int]:
    """``key value`` lines (``memory.events``, ``pids.events``, ``cpu.stat``) as a mapping."""
    values: dict[str, int] = {}
    for line in text.splitlines():
        key, _, value = line.partition(" ")
        try:
            values[key] = int(value.strip())
        except ValueError:
            continue
    return values


def _write(path: Path, value: str) -> None:
    with open(path, "w", encoding="ascii") as handle:
        handle.write(value)


def _try_write(path: Path, value: str) -> bool:
    """Write an optional control file (absent when the kernel lacks the feature); True when written."""
    try:
        _write(path, value)
        return True
    except OSError as exc:
        logger.debug("cannot write %s: %s", path, exc)
        return False


def _controllers(path: Path) -> set[str]:
    """Controller names listed in ``cgroup.controllers`` or ``cgroup.subtree_control``."""
    return {name.lstrip("+") for name in _read(path).split()}


def _writable(folder: Path) -> bool:
    return folder.is_dir() and os.access(folder, os.W_OK | os.X_OK) and os.access(folder / "cgroup.procs", os.W_OK)


@dataclass(frozen=True, slots=True)
class CgroupUsage:
    """What a run cgroup counted (``None`` where the controller or the counter is missing).

    Attributes
    ----------
    oom_kills : int or None
        Processes the OOM killer killed at the memory limit.
    memory_limit_events : int or None
        Times usage reached the memory limit (v2 ``memory.events`` ``max``; v1
        ``memory.failcnt``): reclaim ran, not necessarily a kill.
    memory_peak_bytes : int or None
        Highest memory use (v2 ``memory.peak`` where the kernel has it; v1
        ``memory.max_usage_in_bytes``).
    forks_refused : int or None
        Forks refused at the process limit (``pids.events`` ``max``).
    cpu_throttled_periods : int or None
        CFS periods in which the group was throttled at its CPU quota (``cpu.stat``
        ``nr_throttled``).
    """

    oom_kills: int | None = None
    memory_limit_events: int | None = None
    memory_peak_bytes: int | None = None
    forks_refused: int | None = None
    cpu_throttled_periods: int | None = None

    def to_dict(self) -> dict[str, int | None]:
        return {
            "oom_kills": self.oom_kills,
            "memory_limit_events": self.memory_limit_events,
            "memory_peak_bytes": self.memory_peak_bytes,
            "forks_refused": self.forks_refused,
            "cpu_throttled_periods": self.cpu_throttled_periods,
        }


@dataclass
class RunCgroup:
    """One run's cgroup: limits, joining, counters, removal. Build it with :meth:`create`.

    Attributes
    ----------
    version : str
        ``"v1"`` or ``"v2"``.
    folders : dict of str to pathlib.Path
        The cgroup folder for each controller in use (on v2 all are the same folder).
    limits : dict of str to object
        What was written: ``memory_bytes``, ``pids``, ``cpus`` (only those set).
    """

    version: str
    folders: dict[str, Path]
    limits: dict[str, object] = field(default_factory=dict)
    _removed: bool = False

    @property
    def controllers(self) -> frozenset[str]:
        """The controllers this cgroup enforces (a subset of :data:`CONTROLLERS`)."""
        return frozenset(self.folders)

    @property
    def enforcement(self) -> str:
        """``cgroup-v1`` or ``cgroup-v2``, as recorded in ``run.json``."""
        return f"cgroup-{self.version}"

    def _dirs(self) -> list[Path]:
        return list(dict.fromkeys(self.folders.values()))

    @classmethod
    def create(
        cls,
        name: str,
        *,
        memory_bytes: int | None = None,
        pids: int | None = None,
        cpus: float | None = None,
        mountinfo: str | os.PathLike[str] = "/proc/self/mountinfo",
        self_cgroup: str | os.PathLike[str] = "/proc/self/cgroup",
        euid: int | None = None,
    ) -> "RunCgroup | None":
        """Create a cgroup for one run with the given limits, or return ``None`` when the host allows none.

        Parameters
        ----------
        name : str
            Part of the folder name (the run id); made safe and unique.
        memory_bytes : int, optional
            Memory limit in bytes, swap excluded (v2 ``memory.max`` and ``memory.swap.max = 0``;
            v1 ``memory.limit_in_bytes`` and ``memory.memsw.limit_in_bytes`` where present).
        pids : int, optional
            Process (task) limit (``pids.max``).
        cpus : float, optional
            CPU cores of CFS bandwidth per :data:`CPU_PERIOD_US` (v2 ``cpu.max``; v1
            ``cpu.cfs_quota_us``/``cpu.cfs_period_us``).
        mountinfo, self_cgroup : path-like
            Where the mounts and the caller's own cgroups are read (tests point them at a fake tree).
        euid : int, optional
            The caller's effective uid (default: :func:`os.geteuid`); root may use the v2 root.

        Returns
        -------
        RunCgroup or None
            ``None`` when neither a v2 nor a v1 cgroup with at least one of the controllers can
            be created. A limit whose controller is missing is not set (see :attr:`controllers`).
        """
        euid = os.geteuid() if euid is None else euid
        try:
            mounts = parse_mountinfo(Path(mountinfo).read_text(encoding="utf-8", errors="replace"))
            own = own_cgroups(Path(self_cgroup).read_text(encoding="utf-8", errors="replace"))
        except OSError as exc:
            logger.debug("cannot read the cgroup mounts: %s", exc)
            return None
        wanted = [c for c, v in zip(CONTROLLERS, (memory_bytes, pids, cpus)) if v is not None] or ["memory", "pids"]
        leaf = f"mleaudit-{_NAME.sub('_', name)[:64]}-{os.getpid()}-{secrets.token_hex(4)}"
        for make in (cls._create_v2, cls._create_v1):
            try:
                group = make(mounts, own, wanted, leaf, euid)
            except OSError as exc:
                logger.debug("cgroup setup failed: %s", exc)
                group = None
            if group is None:
                continue
            try:
                group._apply(memory_bytes=memory_bytes, pids=pids, cpus=cpus)
            except OSError as exc:
                logger.warning("cannot set the limits of cgroup %s: %s", group._dirs()[0], exc)
                group.remove()
                continue
            return group
        return None

    @classmethod
    def _create_v2(cls, mounts, own, wanted, leaf, euid) -> "RunCgroup | None":
        unified = [(root, point) for kind, root, point, _ in mounts if kind == "cgroup2"]
        if not unified or "" not in own:
            return None
        mount_root, point = unified[0]
        candidates: list[tuple[Path, bool]] = [(_under(point, mount_root, own[""]), False)]
        if euid == 0:
            candidates.append((Path(point), True))
        for parent, may_enable in candidates:
            if not _writable(parent):
                continue
            available = _controllers(parent / "cgroup.controllers")
            enabled = _controllers(parent / "cgroup.subtree_control")
            use = [c for c in wanted if c in available]
            missing = [c for c in use if c not in enabled]
            if missing and may_enable:
                try:
                    _write(parent / "cgroup.subtree_control", " ".join(f"+{c}" for c in missing))
                except OSError as exc:
                    logger.debug("cannot enable %s in %s: %s", missing, parent, exc)
                enabled = _controllers(parent / "cgroup.subtree_control")
            use = [c for c in use if c in enabled]
            if not use:
                continue
            folder = parent / leaf
            folder.mkdir(mode=0o755)
            return cls(version="v2", folders={c: folder for c in use})
        return None

    @classmethod
    def _create_v1(cls, mounts, own, wanted, leaf, euid) -> "RunCgroup | None":
        folders: dict[str, Path] = {}
        for controller in wanted:
            mount = next(((root, point) for kind, root, point, opts in mounts if kind == "cgroup" and controller in opts), None)
            if mount is None or controller not in own:
                continue
            parent = _under(mount[1], mount[0], own[controller])
            if not _writable(parent):
                continue
            folder = parent / leaf
            try:
                folder.mkdir(mode=0o755)
            except FileExistsError:  # two controllers sharing one hierarchy (cpu,cpuacct style)
                pass
            except OSError as exc:
                logger.debug("cannot create %s: %s", folder, exc)
                continue
            folders[controller] = folder
        if not folders:
            return None
        return cls(version="v1", folders=folders)

    def _apply(self, *, memory_bytes: int | None, pids: int | None, cpus: float | None) -> None:
        if memory_bytes is not None and "memory" in self.folders:
            folder = self.folders["memory"]
            if self.version == "v2":
                _write(folder / "memory.max", str(memory_bytes))
                # Absent without swap accounting: then there is no swap to limit.
                self.limits["swap_bytes"] = 0 if _try_write(folder / "memory.swap.max", "0") else None
            else:
                _write(folder / "memory.limit_in_bytes", str(memory_bytes))
                # memsw (memory + swap) must be >= the memory limit; equal means no swap. Absent
                # without swap accounting.
                self.limits["swap_bytes"] = 0 if _try_write(folder / "memory.memsw.limit_in_bytes", str(memory_bytes)) else None
            self.limits["memory_bytes"] = memory_bytes
        if pids is not None and "pids" in self.folders:
            _write(self.folders["pids"] / "pids.max", str(pids))
            self.limits["pids"] = pids
        if cpus is not None and "cpu" in self.folders:
            folder = self.folders["cpu"]
            quota = max(_MIN_QUOTA_US, int(round(cpus * CPU_PERIOD_US)))
            if self.version == "v2":
                _write(folder / "cpu.max", f"{quota} {CPU_PERIOD_US}")
            else:
                _write(folder / "cpu.cfs_period_us", str(CPU_PERIOD_US))
                _write(folder / "cpu.cfs_quota_us", str(quota))
            self.limits["cpus"] = cpus

    def join_fn(self) -> Callable[[], None]:
        """A ``preexec_fn`` that moves the child into this cgroup (every hierarchy) before it executes.

        Writing ``0`` to ``cgroup.procs`` moves the writing process (both versions); the child's
        own children are then born inside. The function only opens and writes files.
        """
        targets = [os.fsencode(folder / "cgroup.procs") for folder in self._dirs()]

        def join() -> None:
            for target in targets:
                fd = os.open(target, os.O_WRONLY)
                try:
                    os.write(fd, b"0")
                finally:
                    os.close(fd)

        return join

    def pids(self) -> list[int]:
        """The processes in the cgroup now (every hierarchy, each pid once)."""
        found: dict[int, None] = {}
        for folder in self._dirs():
            for line in _read(folder / "cgroup.procs").split():
                if line.isdigit():
                    found[int(line)] = None
        return list(found)

    def signal(self, signum: int, *, exclude: Iterable[int] = ()) -> int:
        """Send ``signum`` to every process in the cgroup but ``exclude``; returns how many were signalled."""
        skip = set(exclude)
        sent = 0
        for pid in self.pids():
            if pid in skip:
                continue
            try:
                os.kill(pid, signum)
                sent += 1
            except ProcessLookupError:
                pass
        return sent

    def kill(self) -> None:
        """SIGKILL every process in the cgroup (``cgroup.kill`` on v2 where the kernel has it)."""
        if self.version == "v2":
            folder = self._dirs()[0]
            if (folder / "cgroup.kill").exists():
                try:
                    _write(folder / "cgroup.kill", "1")
                    return
                except OSError as exc:
                    logger.debug("cgroup.kill failed in %s: %s", folder, exc)
        # v1: kill until none is left (a process forking meanwhile is caught on the next pass).
        for _ in range(50):
            if not self.signal(signal.SIGKILL):
                return
            time.sleep(0.01)

    def usage(self) -> CgroupUsage:
        """The counters read now (call before :meth:`remove`)."""
        oom = limit_events = peak = forks = throttled = None
        memory, pids, cpu = (self.folders.get(c) for c in CONTROLLERS)
        if memory is not None:
            if self.version == "v2":
                events = _keyed(_read(memory / "memory.events"))
                oom, limit_events = events.get("oom_kill"), events.get("max")
                peak_text = _read(memory / "memory.peak").strip()
            else:
                oom = _keyed(_read(memory / "memory.oom_control")).get("oom_kill")
                failcnt = _read(memory / "memory.failcnt").strip()
                limit_events = int(failcnt) if failcnt.isdigit() else None
                peak_text = _read(memory / "memory.max_usage_in_bytes").strip()
            peak = int(peak_text) if peak_text.isdigit() else None
        if pids is not None:
            forks = _keyed(_read(pids / "pids.events")).get("max")
        if cpu is not None:
            throttled = _keyed(_read(cpu / "cpu.stat")).get("nr_throttled")
        return CgroupUsage(oom_kills=oom, memory_limit_events=limit_events, memory_peak_bytes=peak,
                           forks_refused=forks, cpu_throttled_periods=throttled)  # fmt: skip

    def remove(self) -> None:
        """Kill whatever is left and remove the cgroup folders (idempotent; problems are logged)."""
        if self._removed:
            return
        self._removed = True
        self.kill()
        deadline = time.monotonic() + _DRAIN_S
        for folder in reversed(self._dirs()):
            while True:
                try:
                    folder.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError as exc:
                    if exc.errno != errno.EBUSY or time.monotonic() > deadline:
                        logger.warning("cannot remove cgroup %s: %s", folder, exc.strerror or exc)
                        break
                    self.kill()
                    time.sleep(0.02)

    def describe(self) -> Mapping[str, object]:
        """The cgroup as recorded in ``run.json``: version, folders, limits written."""
        return {"version": self.version, "folders": {c: str(p) for c, p in self.folders.items()}, "limits": dict(self.limits)}

