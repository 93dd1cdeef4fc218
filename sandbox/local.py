"""The local backend: the agent runs on this machine inside bubblewrap.

The sandbox gets new mount, PID, network, IPC, UTS and cgroup namespaces: only loopback exists,
the host's processes are invisible, and the file system is a fresh tmpfs root holding
read-only binds of the system folders (``/usr``, ``/etc``, ``/opt``, the ``/bin``/``/lib`` links;
the host's, or those of a root file system given as ``rootfs``), a private ``/tmp``,
``/var/tmp`` and ``/dev/shm``, a new ``/proc`` and a minimal ``/dev``, plus the plan's binds
(public data and agent files read-only; the three output folders, the validation socket and
helper) and any extra read-only folders (a virtual environment). Nothing else of the host is
visible, in particular neither the data dir's ``private/`` folders nor any home directory.

The agent never runs as root. A non-root caller gets bubblewrap's ``--unshare-all`` (a user
namespace too) and keeps its own uid. A root caller cannot rely on a user namespace for that
(a uid-0 owner bypasses the process-count limit), so bubblewrap sets up the namespaces without
one and ``setpriv`` then switches to an unprivileged uid with no capabilities and
``no_new_privs``: the spec's ``user`` when given, otherwise a uid/gid chosen at random for the
run in :data:`~mleaudit.sandbox.run_user.RUN_UID_RANGE` (see :mod:`mleaudit.sandbox.run_user`). The kernel keeps
state per uid that no namespace of a root caller's sandbox separates (the user keyrings, the
key quota, the ``RLIMIT_NPROC`` count); a uid shared by every run, as 65534 once was, let one
run leave data there for a later one. A fresh uid per run cannot reach what an earlier run
left, and after the run its user keyrings are emptied and invalidated
(:func:`~mleaudit.sandbox.run_user.clear_user_keys`). Each sandbox also starts in a new, empty session
keyring, so that it neither reads nor writes the caller's (a caller started by a login or a
service manager has one, and every run would inherit it).
A non-root caller's sandbox has its own user keyrings already: since Linux 5.3 they belong to
the user namespace. There is no seccomp filter: the key system calls stay available inside,
with nothing of an earlier run's to find.

Limits hold for the whole sandbox where the host allows a per-run control group
(:class:`mleaudit.sandbox.cgroups.RunCgroup`, v2 or v1): memory (tmpfs pages included, no swap),
processes and CPU bandwidth; bubblewrap joins the cgroup before it executes, and the OOM kills
and refused forks counted there are reported in ``Execution.limits_hit``. Without a cgroup the
limits fall back to rlimits inherited by every process: ``RLIMIT_AS`` (memory, per process),
``RLIMIT_NPROC`` (processes of the sandbox user) and a CPU affinity of ``ceil(cpus)`` cores
(advisory); their hits are seen only by the agent. ``run.json`` records which enforcement was
in force for each limit (``isolation.enforcement``). Every tmpfs has a size (``--size``): the
memory limit for ``/tmp``, ``/var/tmp`` and (without a ``shm`` limit) ``/dev/shm``.
``RLIMIT_CORE`` is 0 always. A memory or process limit not given is that of
:data:`mleaudit.sandbox.spec.DEFAULT_LIMITS`; a time limit not given means none (the CLI resolves it with
:meth:`mleaudit.sandbox.spec.SandboxSpec.with_defaults`).

Stopping (the time limit, or the plan's :class:`~mleaudit.sandbox.runner.StopSignal`): SIGTERM to every
process of the agent, the spec's ``stop_grace_s`` to finish (write the submission), then
SIGKILL to all of them; bubblewrap's ``--die-with-parent`` and the PID namespace take down
anything left. The agent's stdout and stderr go to ``run.log`` through a
:class:`~mleaudit.sandbox.logsink.CappedLog`.

Before the agent, :meth:`BubblewrapRunner.preflight` starts ``true`` with the same arguments and
limits, so that a host where bubblewrap cannot create its namespaces is reported as such
(:class:`~mleaudit.sandbox.errors.SandboxUnavailable` with the remedies) instead of as an agent that
failed.

:class:`UnsafeLocalRunner` runs the command with the same limits but no isolation at all; it
exists only behind the CLI's explicit ``--unsafe-no-sandbox``.
"""

from __future__ import annotations

import dataclasses
import glob
import logging
import math
import os
import resource
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, Callable, Iterable

from mleaudit.sandbox.cgroups import RunCgroup
from mleaudit.sandbox.errors import GpuUnavailable, SandboxUnavailable, SpecError
from mleaudit.sandbox.logsink import CappedLog
from mleaudit.sandbox.run_user import RunUsers, parse_user, session_keyring_preexec
from mleaudit.sandbox.runner import Bind, Execution, ExecutionPlan, plan_masks
from mleaudit.sandbox.spec import DEFAULT_LIMITS, SandboxSpec, default_memory_bytes

__all__ = [
    "BubblewrapRunner",
    "UnsafeLocalRunner",
    "find_bwrap",
    "bwrap_works",
    "namespace_remedies",
    "NOBODY",
    "BWRAP_PROCESSES",
    "MASK_TMPFS_BYTES",
]

logger = logging.getLogger(__name__)

#: The uid/gid of the host's unprivileged account. No longer used by default: it is shared by
#: every run (and by other programs), so per-uid kernel state would carry over between runs.
NOBODY = (65534, 65534)
#: What to do when the GPUs asked for are not there.
GPU_REMEDIES = (
    "run without --gpus (or ask for fewer, by index: --gpus 0,1)",
    "install the NVIDIA driver so that /dev/nvidiactl and /dev/nvidia0... exist (check with nvidia-smi)",
    "use --backend docker on a host whose daemon has the NVIDIA container runtime",
)
#: Read-only system folders bound into the sandbox when present (from the host or ``rootfs``).
SYSTEM_DIRS = ("/usr", "/etc", "/opt")
#: Top-level links (merged /usr) or folders recreated in the sandbox.
SYSTEM_LINKS = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
_NVIDIA_CONTROL = ("/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools", "/dev/nvidia-modeset")
#: Processes bubblewrap itself keeps in the sandbox's cgroup (its monitor and the PID
#: namespace's init); added to the process limit so that the agent gets the number asked for.
BWRAP_PROCESSES = 2
#: Size of each empty tmpfs that covers a hidden path, in bytes: nothing is meant to be written there.
MASK_TMPFS_BYTES = 1024**2
#: Seconds between two checks of the agent, the time limit and the stop signal.
_POLL_S = 0.1
#: Seconds to wait for the killed sandbox to be reaped.
_REAP_S = 30
#: Seconds to wait for the last of the agent's output once it has exited.
_LOG_DRAIN_S = 10
#: Seconds the pre-flight sandbox (``true``) may take.
PREFLIGHT_TIMEOUT_S = 30

_INSTALL_HINT = (
    "install it (Debian/Ubuntu: apt-get install bubblewrap), use --backend docker, "
    "or pass --unsafe-no-sandbox to run the agent without any isolation"
)
#: bubblewrap's messages when it cannot create namespaces (user namespaces refused or limited).
_NAMESPACE_ERRORS = ("namespace", "uid map", "gid map", "setting up", "unshare", "clone", "operation not permitted",
                     "permission denied", "creating new")  # fmt: skip


def _sysctl(name: str) -> str | None:
    try:
        return Path("/proc/sys", *name.split(".")).read_text(encoding="ascii").strip()
    except OSError:
        return None


def namespace_remedies(error: str = "") -> list[str]:
    """What can make bubblewrap work on a host where it cannot create its namespaces.

    Parameters
    ----------
    error : str
        bubblewrap's message; remedies for user namespaces are given when it names a namespace
        or permission problem (or is empty), the general ones always.

    Returns
    -------
    list of str
        One remedy per item, the current value of each setting shown where this host has it.
    """
    remedies: list[str] = []
    lowered = error.lower()
    if not error or any(word in lowered for word in _NAMESPACE_ERRORS):

        def now(name: str) -> str:
            value = _sysctl(name)
            return f" (now {value})" if value is not None else ""

        remedies += [
            "allow unprivileged user namespaces where AppArmor restricts them (Ubuntu 23.10 and later): "
            "sysctl -w kernel.apparmor_restrict_unprivileged_userns=0"
            f"{now('kernel.apparmor_restrict_unprivileged_userns')}, or give bwrap an AppArmor profile "
            "that allows userns (/etc/apparmor.d/bwrap: abi <abi/4.0>, profile bwrap /usr/bin/bwrap "
            "flags=(unconfined) { userns, })",
            "allow unprivileged user namespaces on Debian-patched kernels: "
            f"sysctl -w kernel.unprivileged_userns_clone=1{now('kernel.unprivileged_userns_clone')}",
            f"allow user namespaces at all: sysctl -w user.max_user_namespaces=15000 (must be above 0)"
            f"{now('user.max_user_namespaces')}",
            "run mleaudit as root: bubblewrap then needs no user namespace (the agent still runs as an "
            "unprivileged user)",
            "inside a container: bubblewrap needs CAP_SYS_ADMIN there (docker run --cap-add SYS_ADMIN "
            "--security-opt seccomp=unconfined --security-opt apparmor=unconfined), or run mleaudit on the host",
        ]
    remedies.append("use --backend docker (the agent runs in a container instead)")
    return remedies


def find_bwrap() -> str:
    """The bubblewrap executable.

    Raises
    ------
    SandboxUnavailable
        If ``bwrap`` is not on PATH.
    """
    path = shutil.which("bwrap")
    if path is None:
        raise SandboxUnavailable(f"bubblewrap (bwrap) is not installed: {_INSTALL_HINT}")
    return path


def bwrap_works() -> tuple[bool, str]:
    """Whether bubblewrap can create its namespaces here, with the reason and remedies when not.

    Returns
    -------
    (bool, str)
        ``(True, version)`` or ``(False, the error followed by one "  - remedy" line per remedy)``
        (the remedies of :func:`namespace_remedies`, as ``mleaudit run`` gives them).
    """
    try:
        bwrap = find_bwrap()
    except SandboxUnavailable as exc:
        return False, str(exc)
    runner = BubblewrapRunner(bwrap=bwrap)
    args = runner._namespace_args(None) + runner._system_args() + ["--proc", "/proc", "--dev", "/dev", "--", "true"]
    try:
        proc = subprocess.run([bwrap, *args], capture_output=True, text=True, timeout=PREFLIGHT_TIMEOUT_S,
                              env={"PATH": "/usr/bin:/bin"})  # fmt: skip
    except (OSError, subprocess.TimeoutExpired) as exc:
        error = SandboxUnavailable(f"bwrap did not run: {exc}", remedies=namespace_remedies(str(exc)))
        return False, error.describe()
    if proc.returncode != 0:
        stderr = proc.stderr.strip()
        error = SandboxUnavailable(f"bwrap cannot create namespaces here: {stderr or f'exit code {proc.returncode}'}",
                                   remedies=namespace_remedies(stderr))  # fmt: skip
        return False, error.describe()
    version = subprocess.run([bwrap, "--version"], capture_output=True, text=True).stdout.strip()
    return True, version or "bubblewrap"


def _within_posix(path: str, parent: str) -> bool:
    return path == parent or path.startswith(parent.rstrip("/") + "/")


def _size(number: int | None) -> str:
    if number is None:
        return "none"
    for unit, scale in (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if number >= scale:
            return f"{number / scale:g} {unit}"
    return f"{number} bytes"


@dataclass
class _Limits:
    """The limits of one run as enforced: values, the cgroup (if any), rlimits, and what enforces each."""

    memory_bytes: int
    pids: int
    cpus: float | None
    tmpfs_bytes: int
    shm_bytes: int
    cgroup: RunCgroup | None
    rlimits: dict[str, Any]
    enforcement: dict[str, str]
    preexec: Callable[[], None]
    notes: list[str] = field(default_factory=list)

    def record(self) -> dict[str, Any]:
        """The ``isolation`` entries of ``run.json`` for these limits."""
        record: dict[str, Any] = {
            "enforcement": dict(self.enforcement),
            "limits": {"memory_bytes": self.memory_bytes, "pids": self.pids, "cpus": self.cpus,
                       "tmpfs_bytes": self.tmpfs_bytes, "shm_bytes": self.shm_bytes},  # fmt: skip
            "rlimits": dict(self.rlimits),
        }
        if self.cgroup is not None:
            record["cgroup"] = dict(self.cgroup.describe())
        if self.notes:
            record["enforcement_notes"] = list(self.notes)
        return record

    def release(self) -> None:
        if self.cgroup is not None:
            self.cgroup.remove()


def _setup_limits(spec: SandboxSpec, name: str, *, use_cgroup: bool, cgroup_extra_procs: int = 0,
                  rlimit_extra_procs: int = 0, in_sandbox: bool = True) -> _Limits:  # fmt: skip
    """Resolve the spec's limits (defaults where not given), create the run cgroup, build the ``preexec_fn``.

    Parameters
    ----------
    spec : SandboxSpec
        Its ``resources``.
    name : str
        Names the cgroup (the run id).
    use_cgroup : bool
        Try a per-run cgroup; the rlimits stand in for each limit whose controller is missing.
    cgroup_extra_procs, rlimit_extra_procs : int
        Processes the tool itself runs besides the agent, added to the process limit: those in
        the cgroup, and those running as the sandbox user (RLIMIT_NPROC counts per user).
    in_sandbox : bool
        Whether the tmpfs sizes apply (bubblewrap) or not (no sandbox).
    """
    res = spec.resources
    memory = res.memory_bytes if res.memory_bytes is not None else default_memory_bytes()
    pids = res.pids if res.pids is not None else int(DEFAULT_LIMITS["pids"])
    cpus = res.cpus
    cgroup = RunCgroup.create(name, memory_bytes=memory, pids=pids + cgroup_extra_procs, cpus=cpus) if use_cgroup else None
    in_cgroup = cgroup.controllers if cgroup is not None else frozenset()
    enforcement: dict[str, str] = {}
    rlimits: dict[str, Any] = {"core": 0}
    notes: list[str] = []
    affinity: list[int] | None = None
    if "memory" in in_cgroup:
        enforcement["memory"] = cgroup.enforcement  # type: ignore[union-attr]
        address_space = None
    else:
        enforcement["memory"] = "rlimit (per process)"
        address_space = memory
        rlimits["address_space_bytes"] = memory
        notes.append("memory: RLIMIT_AS bounds each process, not the sandbox; an allocation past it fails "
                     "inside the agent (MemoryError, ENOMEM) and is not visible to the host")  # fmt: skip
    if "pids" in in_cgroup:
        enforcement["pids"] = cgroup.enforcement  # type: ignore[union-attr]
        nproc = None
    else:
        enforcement["pids"] = "rlimit (per user)"
        nproc = pids + rlimit_extra_procs
        rlimits["processes"] = nproc
        notes.append("pids: RLIMIT_NPROC counts every process of the sandbox user on the host; a refused fork "
                     "fails inside the agent (EAGAIN) and is not visible to the host")  # fmt: skip
    if cpus is None:
        enforcement["cpu"] = "none (all cores)"
    elif "cpu" in in_cgroup:
        enforcement["cpu"] = cgroup.enforcement  # type: ignore[union-attr]
    else:
        available = sorted(os.sched_getaffinity(0))
        affinity = available[: max(1, min(len(available), math.ceil(cpus)))]
        rlimits["cpu_affinity"] = affinity
        enforcement["cpu"] = "cpu affinity (advisory)"
    enforcement["tmpfs"] = "bwrap --size" if in_sandbox else "none (no sandbox)"
    enforcement["time"] = "host timer"
    join = cgroup.join_fn() if cgroup is not None else None

    def apply() -> None:  # runs in the child between fork and exec: no logging, no allocation-heavy work
        if join is not None:
            join()
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        if address_space is not None:
            resource.setrlimit(resource.RLIMIT_AS, (address_space, address_space))
        if nproc is not None:
            resource.setrlimit(resource.RLIMIT_NPROC, (nproc, nproc))
        if affinity is not None:
            os.sched_setaffinity(0, affinity)

    return _Limits(memory_bytes=memory, pids=pids, cpus=cpus, tmpfs_bytes=memory,
                   shm_bytes=res.shm_bytes if res.shm_bytes is not None else memory, cgroup=cgroup,
                   rlimits=rlimits, enforcement=enforcement, preexec=apply, notes=notes)  # fmt: skip


def _descendants(root: int) -> list[int]:
    """Processes descending from ``root`` (from ``/proc/*/stat``), deepest last; ``root`` excluded."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as handle:
                stat = handle.read()
        except OSError:
            continue
        # The command name may hold spaces and parentheses: the fields start after the last ')'.
        fields = stat[stat.rfind(b")") + 2:].split()
        if len(fields) > 1:
            children.setdefault(int(fields[1]), []).append(int(entry))
    found: list[int] = []
    queue = [root]
    while queue:
        for child in children.get(queue.pop(), []):
            if child not in found:
                found.append(child)
                queue.append(child)
    return found


def _signal_all(pids: Iterable[int], signum: int) -> None:
    for pid in pids:
        try:
            os.kill(pid, signum)
        except (ProcessLookupError, PermissionError):
            pass


@dataclass
class _Outcome:
    returncode: int | None
    stopped_by: str | None = None
    stop_detail: str | None = None


def _supervise(proc: subprocess.Popen, plan: ExecutionPlan, limits: _Limits, *, spare: frozenset[int]) -> _Outcome:
    """Wait for the sandbox, polling the time limit and the stop signal; stop it on either.

    Stopping: SIGTERM to the agent's processes (the cgroup's, else the descendants of ``proc``
    and its process group) except ``spare`` (bubblewrap's monitor, which would take everything
    down at once), ``stop_grace_s`` for them to end, then SIGKILL to all of them.
    """
    spec = plan.spec
    deadline = time.monotonic() + spec.time_limit_s if spec.time_limit_s else None
    while True:
        try:
            return _Outcome(proc.wait(timeout=_POLL_S))
        except subprocess.TimeoutExpired:
            pass
        if deadline is not None and time.monotonic() >= deadline:
            plan.stop.request("time", f"the sandbox was stopped at its time limit of {spec.time_limit_s:g} s")
        if plan.stop.is_set():
            break
    limit, detail = plan.stop.limit or "time", plan.stop.detail

    def members() -> list[int]:
        found = limits.cgroup.pids() if limits.cgroup is not None else _descendants(proc.pid)
        if proc.pid not in spare:
            found.append(proc.pid)
        return [pid for pid in dict.fromkeys(found) if pid not in spare]

    logger.info("stopping the sandbox (%s): SIGTERM, then SIGKILL after %g s", limit, spec.stop_grace_s)
    _signal_all(members(), signal.SIGTERM)
    end = time.monotonic() + spec.stop_grace_s
    while time.monotonic() < end:
        try:
            return _Outcome(proc.wait(timeout=min(_POLL_S, max(end - time.monotonic(), 0.001))), limit, detail)
        except subprocess.TimeoutExpired:
            pass
    for _ in range(3):  # a process forked meanwhile is caught on the next pass
        _signal_all(members(), signal.SIGKILL)
        try:
            return _Outcome(proc.wait(timeout=2), limit, detail)
        except subprocess.TimeoutExpired:
            pass
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        return _Outcome(proc.wait(timeout=_REAP_S), limit, detail)
    except subprocess.TimeoutExpired:
        proc.kill()
        return _Outcome(proc.wait(), limit, detail)


def _exit_status(returncode: int | None) -> tuple[int | None, int | None]:
    """(exit code, signal) from a returncode.

    bubblewrap reports a child ended by a signal as ``128 + signal`` (the shell's convention); a
    process that was itself killed (returncode ``-signal``) is recorded the same way.
    """
    if returncode is None:
        return None, None
    if returncode < 0:
        return 128 - returncode, -returncode
    if returncode > 128 and returncode - 128 < signal.NSIG:
        return returncode, returncode - 128
    return returncode, None


def _options_through_fd(args: list[str]) -> tuple[list[str], int]:
    """bubblewrap's argv with its options moved into a memory file read through ``--args FD``.

    Inside the sandbox, process 1 is bubblewrap itself and ``/proc/1/cmdline`` shows its argv:
    every bind's host path (the data dir next to the held-out answers, the run dir). With the
    options in a file only ``bwrap --args N -- COMMAND`` shows. Returns the argv and the file's
    descriptor (inherited by bubblewrap; the caller closes its own copy).
    """
    cut = args.index("--")
    fd = os.memfd_create("bwrap-options", os.MFD_CLOEXEC)
    data = b"".join(os.fsencode(a) + b"\0" for a in args[1:cut])
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]
    os.lseek(fd, 0, os.SEEK_SET)
    return [args[0], "--args", str(fd), *args[cut:]], fd


def _run(args: list[str], plan: ExecutionPlan, limits: _Limits, *, env: dict[str, str], cwd: Path | None,
         spare_monitor: bool, pass_fds: tuple[int, ...] = ()) -> tuple[_Outcome, CappedLog]:  # fmt: skip
    """Start ``args`` with the limits, stream its output into ``run.log``, supervise it to its end."""
    log = CappedLog(plan.log_path, plan.log_bytes)
    try:
        try:
            proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                    env=env, cwd=cwd, start_new_session=True, preexec_fn=limits.preexec,
                                    close_fds=True, pass_fds=pass_fds)  # fmt: skip
        except (OSError, subprocess.SubprocessError) as exc:
            raise SandboxUnavailable(f"cannot start {args[0]}: {getattr(exc, 'strerror', None) or exc}",
                                     remedies=namespace_remedies(str(exc))) from None  # fmt: skip
        assert proc.stdout is not None
        pump = log.pump(proc.stdout)
        outcome = _supervise(proc, plan, limits, spare=frozenset({proc.pid}) if spare_monitor else frozenset())
        if limits.cgroup is not None:
            limits.cgroup.kill()  # anything detached that still holds the pipe
        pump.join(timeout=_LOG_DRAIN_S)
    finally:
        log.close()
    return outcome, log


def _report(outcome: _Outcome, limits: _Limits) -> tuple[tuple[str, ...], dict[str, str], dict[str, Any]]:
    """Limits hit (with details) and the cgroup's counters, read before the cgroup is removed."""
    hit: list[str] = []
    details: dict[str, str] = {}
    if outcome.stopped_by is not None:
        hit.append(outcome.stopped_by)
        details[outcome.stopped_by] = outcome.stop_detail or f"the sandbox was stopped at its {outcome.stopped_by} limit"
    counters: dict[str, Any] = {}
    if limits.cgroup is not None:
        usage = limits.cgroup.usage()
        counters = usage.to_dict()
        if usage.oom_kills:
            hit.append("memory")
            details["memory"] = (f"{usage.oom_kills} OOM kill(s) in the sandbox at its {_size(limits.memory_bytes)} "
                                 "memory limit (tmpfs included)")  # fmt: skip
        if usage.forks_refused:
            hit.append("pids")
            details["pids"] = f"{usage.forks_refused} fork(s) refused at the {limits.pids}-process limit"
    return tuple(dict.fromkeys(hit)), details, counters


class BubblewrapRunner:
    """Run plans with bubblewrap; see the module docstring.

    Parameters
    ----------
    bwrap : str, optional
        The bubblewrap executable (default: found on PATH when a run starts).
    extra_ro_paths : sequence of str
        More host folders to bind read-only at the same path (a virtual environment or a Python
        installation outside ``/usr``, for example).
    rootfs : str, optional
        A root file system (an unpacked image) whose ``usr``, ``etc``, ``opt`` and top-level
        ``bin``/``lib`` links or folders replace the host's, read-only.
    cgroups : bool
        Enforce memory, process and CPU limits with a per-run cgroup where the host allows one
        (default); ``False`` uses rlimits only.
    """

    name = "bubblewrap"

    def __init__(self, bwrap: str | None = None, extra_ro_paths: Iterable[str] = (), *, rootfs: str | os.PathLike[str] | None = None,
                 cgroups: bool = True) -> None:  # fmt: skip
        self.bwrap = bwrap
        self.extra_ro_paths = tuple(str(p) for p in extra_ro_paths)
        self.rootfs = str(Path(rootfs).absolute()) if rootfs is not None else None
        self.cgroups = cgroups
        # The uid drawn for each run in progress (run_sandbox passes one spec object to
        # sandbox_owner, preflight and execute, and a new one for every run).
        self.run_users = RunUsers()

    def sandbox_owner(self, spec: SandboxSpec) -> tuple[int, int]:
        """The host uid/gid the agent's processes and files have.

        A non-root caller's own; for a root caller the spec's ``user``, else a uid/gid drawn
        for this run (:func:`mleaudit.sandbox.run_user.choose_run_user`). The first call for a spec
        object draws it; later calls with the same object (the staging folders' owner, the
        pre-flight sandbox, the run) get the same ids until :meth:`execute` has finished with
        it, or :meth:`preflight` has failed; a call after that draws a new one
        (:class:`mleaudit.sandbox.run_user.RunUsers`).
        """
        return self.run_users.owner(spec)

    def _namespace_args(self, spec: SandboxSpec | None) -> list[str]:
        common = ["--die-with-parent", "--new-session"]
        if os.geteuid() == 0:
            return ["--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts", "--unshare-cgroup-try", *common]
        args = ["--unshare-all", *common, "--cap-drop", "ALL"]
        user = parse_user(spec.user) if spec is not None else None
        if user is not None:
            args += ["--uid", str(user[0]), "--gid", str(user[1])]
        return args

    def _system_source(self, target: str) -> str:
        return os.path.join(self.rootfs, target.lstrip("/")) if self.rootfs else target

    def _system_binds(self) -> list[Bind]:
        """The system folders bound read-only (from the host or the rootfs)."""
        binds = []
        for target in SYSTEM_DIRS:
            source = self._system_source(target)
            if os.path.isdir(source) and (self.rootfs is not None or not os.path.islink(source)):
                binds.append(Bind(source=Path(source), target=target))
        for target in SYSTEM_LINKS:
            source = self._system_source(target)
            if os.path.isdir(source) and not os.path.islink(source):
                binds.append(Bind(source=Path(source), target=target))
        return binds

    def _extra_binds(self) -> list[Bind]:
        return [Bind(source=Path(p), target=p) for p in self.extra_ro_paths]

    def _system_args(self) -> list[str]:
        if self.rootfs is not None and not os.path.isdir(os.path.join(self.rootfs, "usr")):
            raise SandboxUnavailable(f"rootfs {self.rootfs}: has no usr/ folder; expected an unpacked root file system")
        args: list[str] = []
        for link in SYSTEM_LINKS:
            source = self._system_source(link)
            if os.path.islink(source):
                args += ["--symlink", os.readlink(source), link]
        for bind in self._system_binds():
            args += ["--ro-bind", str(bind.source), bind.target]
        return args

    def _gpu_args(self, spec: SandboxSpec) -> tuple[list[str], tuple[str, ...]]:
        if spec.gpus is None:
            return [], ()
        devices = sorted(glob.glob("/dev/nvidia[0-9]*"), key=lambda p: int(p[len("/dev/nvidia"):]))
        if not devices or not os.path.exists("/dev/nvidiactl"):
            raise GpuUnavailable("GPUs were requested but this machine has no NVIDIA devices (/dev/nvidia*)",
                                 remedies=GPU_REMEDIES)
        request = spec.gpus
        if request.device_ids:
            wanted = []
            for dev_id in request.device_ids:
                path = f"/dev/nvidia{dev_id}"
                if not dev_id.isdigit() or path not in devices:
                    raise GpuUnavailable(f"gpus: device {dev_id!r} is not one of {', '.join(devices)} "
                                         "(the local backend takes device indices)", remedies=GPU_REMEDIES)  # fmt: skip
                wanted.append(path)
            devices = wanted
        elif request.count is not None:
            if request.count > len(devices):
                raise GpuUnavailable(f"gpus: {request.count} requested but this machine has {len(devices)}",
                                     remedies=GPU_REMEDIES)
            devices = devices[: request.count]
        args: list[str] = []
        for dev in [*_NVIDIA_CONTROL, *devices]:
            if os.path.exists(dev):
                args += ["--dev-bind", dev, dev]
        if os.path.isdir("/dev/nvidia-caps"):
            args += ["--dev-bind", "/dev/nvidia-caps", "/dev/nvidia-caps"]
        # NVML reads the PCI tree.
        args += ["--ro-bind", "/sys", "/sys"]
        return args, tuple(d[len("/dev/nvidia"):] for d in devices)

    def build_args(self, plan: ExecutionPlan, *, tmpfs_bytes: int | None = None,
                   shm_bytes: int | None = None) -> tuple[list[str], tuple[str, ...]]:  # fmt: skip
        """The full bubblewrap argv for a plan and the GPU indices it exposes.

        Parameters
        ----------
        plan : ExecutionPlan
            What to run.
        tmpfs_bytes, shm_bytes : int, optional
            Sizes of ``/tmp`` and ``/var/tmp``, and of ``/dev/shm`` (default: the spec's memory
            limit, else :func:`mleaudit.sandbox.spec.default_memory_bytes`; ``shm`` when given).

        Raises
        ------
        SandboxUnavailable
            If bubblewrap, or ``setpriv`` for a root caller, is missing, or the rootfs has no ``usr/``.
        GpuUnavailable
            If GPUs are requested and cannot be provided.
        SpecError
            If a system bind would expose a hidden path that cannot be covered.
        """
        bwrap = self.bwrap or find_bwrap()
        spec = plan.spec
        res = spec.resources
        if tmpfs_bytes is None:
            tmpfs_bytes = res.memory_bytes if res.memory_bytes is not None else default_memory_bytes()
        if shm_bytes is None:
            shm_bytes = res.shm_bytes if res.shm_bytes is not None else tmpfs_bytes
        args = [bwrap, *self._namespace_args(spec), "--hostname", "sandbox", *self._system_args()]
        args += ["--proc", "/proc", "--dev", "/dev",
                 "--perms", "01777", "--size", str(shm_bytes), "--tmpfs", "/dev/shm",
                 "--perms", "01777", "--size", str(tmpfs_bytes), "--tmpfs", "/tmp", "--dir", "/var",
                 "--perms", "01777", "--size", str(tmpfs_bytes), "--tmpfs", "/var/tmp", "--dir", "/home"]  # fmt: skip
        gpu_args, gpus = self._gpu_args(spec)
        args += gpu_args
        # bubblewrap creates missing parents of a mount point as 0700 root, which the
        # (unprivileged) agent could not traverse; create them 0755 first. Extra read-only
        # folders come after the tmpfs folders, so that one under /tmp is not covered.
        extra = self._extra_binds()
        system = [b.target for b in self._system_binds()] + list(SYSTEM_LINKS)
        parents: list[str] = []
        for bind in [*extra, *plan.binds]:
            for parent in reversed(PurePosixPath(bind.target).parents):
                text = str(parent)
                if text != "/" and not any(_within_posix(text, s) for s in system):
                    parents.append(text)
        for parent in dict.fromkeys(parents):
            args += ["--perms", "0755", "--dir", parent]
        for bind in plan.binds:
            # A mount point inside a read-only system folder must already exist there.
            inside = next((t for t in system if _within_posix(bind.target, t) and bind.target != t), None)
            if inside is not None and not os.path.lexists(self._system_source(inside) + bind.target[len(inside):]):
                raise SpecError(f"mount target {bind.target} is inside the read-only system folder {inside}, where "
                                "it does not exist; choose a target outside /usr, /etc, /opt and /lib (e.g. /mnt/...)")
        for bind in extra:
            args += ["--ro-bind", str(bind.source), bind.target]
        for bind in plan.binds:
            args += ["--ro-bind" if bind.read_only else "--bind", str(bind.source), bind.target]
        masks = list(plan.masks) + list(plan_masks(self._system_binds() + extra, spec.hidden))
        for mask in dict.fromkeys(masks):
            args += ["--size", str(MASK_TMPFS_BYTES), "--tmpfs", mask]
        # The sandbox's own root (a tmpfs holding the mount points) becomes read-only too; only
        # the output binds, /tmp, /var/tmp and /dev/shm stay writable.
        args += ["--remount-ro", "/", "--chdir", spec.workdir, "--"]
        if os.geteuid() == 0:
            setpriv = self._setpriv()
            uid, gid = self.sandbox_owner(spec)
            args += [setpriv, "--reuid", str(uid), "--regid", str(gid), "--clear-groups", "--inh-caps=-all",
                     "--bounding-set=-all", "--no-new-privs", "--"]  # fmt: skip
        args += list(plan.command)
        return args, gpus

    def _setpriv(self) -> str:
        """``setpriv`` as the sandbox sees it: the host's, or the rootfs's own."""
        if self.rootfs is None:
            found = shutil.which("setpriv")
        else:
            found = next((p for p in ("/usr/bin/setpriv", "/bin/setpriv", "/usr/sbin/setpriv", "/sbin/setpriv")
                          if os.path.exists(self._system_source(p))), None)  # fmt: skip
        if found is None:
            where = f"in the rootfs {self.rootfs}" if self.rootfs else "on PATH"
            raise SandboxUnavailable(f"setpriv (util-linux) is needed {where} to run agents as a non-root user "
                                     "when the caller is root")  # fmt: skip
        return found

    def _limits(self, plan: ExecutionPlan, name: str) -> _Limits:
        # bubblewrap's monitor and init are in the cgroup; they run as the sandbox user (and
        # count against its RLIMIT_NPROC) only when the caller is not root.
        limits = _setup_limits(plan.spec, name, use_cgroup=self.cgroups, cgroup_extra_procs=BWRAP_PROCESSES,
                               rlimit_extra_procs=0 if os.geteuid() == 0 else BWRAP_PROCESSES)  # fmt: skip
        apply, join_keyring = limits.preexec, session_keyring_preexec()

        def preexec() -> None:
            apply()
            join_keyring()

        limits.preexec = preexec
        return limits

    def _env(self, plan: ExecutionPlan, gpus: tuple[str, ...]) -> dict[str, str]:
        env = dict(plan.env)
        if gpus:
            env.setdefault("NVIDIA_VISIBLE_DEVICES", ",".join(gpus))
        if os.geteuid() == 0 and plan.spec.user is None:
            # The uid drawn for the run has no passwd entry; getpass.getuser() and the tools
            # that name their caches after the user read these first.
            env.setdefault("USER", "sandbox")
            env.setdefault("LOGNAME", "sandbox")
        return env

    def preflight(self, plan: ExecutionPlan) -> None:
        """Start ``true`` in a sandbox with the plan's arguments, binds and limits.

        Raises
        ------
        SandboxUnavailable
            If it does not exit 0 within :data:`PREFLIGHT_TIMEOUT_S` seconds; the message
            quotes bubblewrap's error and the remedies say how to make it work.
        GpuUnavailable, SpecError
            As :meth:`build_args`.
        """
        trial = dataclasses.replace(plan, command=plan.preflight_command)
        limits = self._limits(plan, f"{plan.run_id}-preflight")
        failed = True
        try:
            args, gpus = self.build_args(trial, tmpfs_bytes=limits.tmpfs_bytes, shm_bytes=limits.shm_bytes)
            try:
                proc = subprocess.run(args, stdin=subprocess.DEVNULL, capture_output=True, env=self._env(plan, gpus),
                                      start_new_session=True, preexec_fn=limits.preexec, timeout=PREFLIGHT_TIMEOUT_S)  # fmt: skip
            except subprocess.TimeoutExpired:
                raise SandboxUnavailable(f"the pre-flight sandbox (true) did not finish within {PREFLIGHT_TIMEOUT_S} s",
                                         remedies=namespace_remedies()) from None  # fmt: skip
            except (OSError, subprocess.SubprocessError) as exc:
                raise SandboxUnavailable(f"cannot start bubblewrap ({args[0]}): {getattr(exc, 'strerror', None) or exc}",
                                         remedies=namespace_remedies(str(exc))) from None  # fmt: skip
            failed = proc.returncode != 0
        finally:
            limits.release()
            if failed:  # the run ends here: no execute() will release the uid drawn for it
                self.run_users.end(plan.spec)
        if proc.returncode != 0:
            stderr = proc.stderr.decode("utf-8", errors="replace").strip()[-2000:]
            raise SandboxUnavailable(
                f"bubblewrap cannot start the sandbox here (exit code {proc.returncode}): {stderr or 'no message'}",
                remedies=namespace_remedies(stderr),
            )

    def execute(self, plan: ExecutionPlan) -> Execution:
        """Run the plan to its end, its time limit or its stop signal; output streams to ``run.log``.

        A root caller's sandbox user drawn for the run (:meth:`sandbox_owner`) has its keyrings
        cleared afterwards (:func:`mleaudit.sandbox.run_user.clear_user_keys`) and is released.
        """
        spec = plan.spec
        try:
            uid, gid = self.sandbox_owner(spec)
            limits = self._limits(plan, plan.run_id)
            try:
                args, gpus = self.build_args(plan, tmpfs_bytes=limits.tmpfs_bytes, shm_bytes=limits.shm_bytes)
                logger.debug("bwrap argv: %s", args)
                argv, options_fd = _options_through_fd(args)
                try:
                    outcome, log = _run(argv, plan, limits, env=self._env(plan, gpus), cwd=None, spare_monitor=True,
                                        pass_fds=(options_fd,))  # fmt: skip
                finally:
                    os.close(options_fd)
                hit, details, counters = _report(outcome, limits)
            finally:
                limits.release()
        finally:
            self.run_users.end(spec)
        exit_code, exit_signal = _exit_status(outcome.returncode)
        isolation: dict[str, Any] = {
            "sandbox": True,
            "tool": "bubblewrap",
            "namespaces": ["mount", "pid", "net", "ipc", "uts", "cgroup"] + ([] if os.geteuid() == 0 else ["user"]),
            "user": f"{uid}:{gid}",
            "read_only_root": True,
            "rootfs": self.rootfs or "/",
            "extra_ro_paths": list(self.extra_ro_paths),
            "stop_grace_s": spec.stop_grace_s,
            **limits.record(),
        }
        if counters:
            isolation["cgroup"] = {**isolation.get("cgroup", {}), "usage": counters}
        return Execution(
            exit_code=exit_code,
            exit_signal=exit_signal,
            timed_out=outcome.stopped_by == "time",
            limits_hit=hit,
            limit_details=details,
            log_kept_bytes=log.kept_bytes,
            log_dropped_bytes=log.dropped_bytes,
            gpus_visible=gpus,
            isolation=isolation,
        )


class UnsafeLocalRunner:
    """Run the command directly on the host, with the limits and the time limit but no isolation.

    The agent-facing paths do not exist on the host, so the environment variables that name
    them (``DATA_DIR``, ``SUBMISSION_DIR``, ``VALIDATE_SOCKET`` ...) are rewritten to the host
    paths bound there. ``run.json`` records ``isolation.sandbox: false``.

    Parameters
    ----------
    cgroups : bool
        Enforce memory, process and CPU limits with a per-run cgroup where the host allows one.
    """

    name = "unsafe-local"

    def __init__(self, *, cgroups: bool = True) -> None:
        self.cgroups = cgroups

    def sandbox_owner(self, spec: SandboxSpec) -> tuple[int, int] | None:
        return None

    def preflight(self, plan: ExecutionPlan) -> None:
        """Nothing to check beyond the hidden paths (no sandbox is started).

        Raises
        ------
        SpecError
            If the plan must hide paths, which needs a sandbox.
        """
        if plan.masks:
            raise SpecError(f"cannot hide {', '.join(plan.masks)} without a sandbox; run with a sandbox backend")

    def execute(self, plan: ExecutionPlan) -> Execution:
        """Run the plan's command in the submission folder's parent with host paths substituted."""
        self.preflight(plan)
        targets = {bind.target: str(bind.source) for bind in plan.binds}
        env = {key: targets.get(value, value) for key, value in plan.env.items()}
        env["VALIDATE_HELPER"] = targets.get("/home/validate_submission.sh", "")
        limits = _setup_limits(plan.spec, plan.run_id, use_cgroup=self.cgroups, in_sandbox=False)
        cwd = Path(targets.get("/home/submission", ".")).parent
        try:
            outcome, log = _run(list(plan.command), plan, limits, env=env, cwd=cwd, spare_monitor=False)
            hit, details, counters = _report(outcome, limits)
        finally:
            limits.release()
        exit_code, exit_signal = _exit_status(outcome.returncode)
        isolation: dict[str, Any] = {"sandbox": False, "tool": None, "stop_grace_s": plan.spec.stop_grace_s,
                                     **limits.record()}  # fmt: skip
        if counters:
            isolation["cgroup"] = {**isolation.get("cgroup", {}), "usage": counters}
        return Execution(
            exit_code=exit_code,
            exit_signal=exit_signal,
            timed_out=outcome.stopped_by == "time",
            limits_hit=hit,
            limit_details=details,
            log_kept_bytes=log.kept_bytes,
            log_dropped_bytes=log.dropped_bytes,
            isolation=isolation,
        )
