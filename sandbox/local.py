"""The local backend: the agent runs on this machine inside bubblewrap.

The sandbox gets new mount, PID, network, IPC, UTS and cgroup namespaces: only loopback exists,
the host's processes are invisible, and the file system is a fresh tmpfs root holding
read-only binds of the system folders (``/usr``, ``/etc``, the ``/bin``/``/lib`` links), a
private ``/tmp``, a new ``/proc`` and a minimal ``/dev``, plus the plan's binds (public data
and agent files read-only; the three output folders, the validation socket and helper). Nothing
else of the host is visible, in particular neither the data dir's ``private/`` folders nor any
home directory.

The agent never runs as root. A non-root caller gets bubblewrap's ``--unshare-all`` (a user
namespace too) and keeps its own uid. A root caller cannot rely on a user namespace for that
(a uid-0 owner bypasses the process-count limit), so bubblewrap sets up the namespaces without
one and ``setpriv`` then switches to an unprivileged uid (65534 unless the spec's ``user``
says otherwise) with no capabilities and ``no_new_privs``.

Limits are rlimits set before bubblewrap starts and inherited by every process of the agent:
``RLIMIT_AS`` (memory, per process), ``RLIMIT_NPROC`` (processes of the sandbox user),
``RLIMIT_CORE`` = 0, and a CPU affinity of ``ceil(cpus)`` cores (advisory: a process may widen
its own affinity). The wall-clock limit kills the whole sandbox: bubblewrap's process group is
killed and ``--die-with-parent`` takes the PID namespace, and every process in it, down with it.

:class:`UnsafeLocalRunner` runs the command with the same limits but no isolation at all; it
exists only behind the CLI's explicit ``--unsafe-no-sandbox``.
"""

from __future__ import annotations

import glob
import logging
import math
import os
import resource
import shutil
import signal
import subprocess
from pathlib import Path, PurePosixPath
from typing import Any, Callable

from sandbox.errors import GpuUnavailable, SandboxUnavailable, SpecError
from sandbox.runner import Bind, Execution, ExecutionPlan, plan_masks
from sandbox.spec import SandboxSpec

__all__ = ["BubblewrapRunner", "UnsafeLocalRunner", "find_bwrap", "bwrap_works", "NOBODY"]

logger = logging.getLogger(__name__)

#: The uid/gid a root caller's agents run as unless the spec says otherwise.
NOBODY = (65534, 65534)
#: Read-only system folders bound into the sandbox when present.
SYSTEM_DIRS = ("/usr", "/etc", "/opt")
#: Top-level links (merged /usr) or folders recreated in the sandbox.
SYSTEM_LINKS = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
_NVIDIA_CONTROL = ("/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools", "/dev/nvidia-modeset")
#: Seconds to wait for the killed sandbox to be reaped.
_REAP_S = 30

_INSTALL_HINT = (
    "install it (Debian/Ubuntu: apt-get install bubblewrap), use --backend docker, "
    "or pass --unsafe-no-sandbox to run the agent without any isolation"
)


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
    """Whether bubblewrap can create its namespaces here, with the reason when not.

    Returns
    -------
    (bool, str)
        ``(True, version)`` or ``(False, the error)``.
    """
    try:
        bwrap = find_bwrap()
    except SandboxUnavailable as exc:
        return False, str(exc)
    runner = BubblewrapRunner(bwrap=bwrap)
    args = runner._namespace_args(None) + runner._system_args() + ["--proc", "/proc", "--dev", "/dev", "--", "true"]
    try:
        proc = subprocess.run([bwrap, *args], capture_output=True, text=True, timeout=30, env={"PATH": "/usr/bin:/bin"})
    except (OSError, subprocess.TimeoutExpired) as exc:
        return False, f"bwrap did not run: {exc}"
    if proc.returncode != 0:
        return False, f"bwrap cannot create namespaces here: {proc.stderr.strip() or proc.returncode}"
    version = subprocess.run([bwrap, "--version"], capture_output=True, text=True).stdout.strip()
    return True, version or "bubblewrap"


def _within_posix(path: str, parent: str) -> bool:
    return path == parent or path.startswith(parent.rstrip("/") + "/")


def _parse_user(user: str | None) -> tuple[int, int] | None:
    if not user:
        return None
    uid, _, gid = user.partition(":")
    return int(uid), int(gid or uid)


def _limits(spec: SandboxSpec, *, extra_procs: int = 0) -> tuple[Callable[[], None], dict[str, Any]]:
    """A ``preexec_fn`` applying the spec's rlimits and CPU affinity, and a record of them."""
    res = spec.resources
    applied: dict[str, Any] = {"core": 0}
    cpus: list[int] | None = None
    if res.cpus is not None:
        available = sorted(os.sched_getaffinity(0))
        cpus = available[: max(1, min(len(available), math.ceil(res.cpus)))]
        applied["cpu_affinity"] = cpus
    if res.memory_bytes is not None:
        applied["address_space_bytes"] = res.memory_bytes
    if res.pids is not None:
        applied["processes"] = res.pids + extra_procs

    def apply() -> None:  # runs in the child between fork and exec: no logging, no allocation-heavy work
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        if res.memory_bytes is not None:
            resource.setrlimit(resource.RLIMIT_AS, (res.memory_bytes, res.memory_bytes))
        if res.pids is not None:
            resource.setrlimit(resource.RLIMIT_NPROC, (res.pids + extra_procs, res.pids + extra_procs))
        if cpus is not None:
            os.sched_setaffinity(0, cpus)

    return apply, applied


def _wait(proc: subprocess.Popen, timeout: float | None) -> tuple[int | None, bool]:
    """Wait for the sandbox; at the time limit kill its process group. Returns (returncode, timed_out)."""
    try:
        return proc.wait(timeout=timeout), False
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        try:
            proc.wait(timeout=_REAP_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        return None, True


def _exit_status(returncode: int | None) -> tuple[int | None, int | None]:
    """(exit code, signal) from a returncode; bubblewrap reports a signalled child as 128 + signal."""
    if returncode is None:
        return None, None
    if returncode < 0:
        return returncode, -returncode
    if returncode > 128 and returncode - 128 < signal.NSIG:
        return returncode, returncode - 128
    return returncode, None


class BubblewrapRunner:
    """Run plans with bubblewrap; see the module docstring.

    Parameters
    ----------
    bwrap : str, optional
        The bubblewrap executable (default: found on PATH when a run starts).
    extra_ro_paths : sequence of str
        More host folders to bind read-only at the same path (a Python installation outside
        ``/usr``, for example).
    """

    name = "bubblewrap"

    def __init__(self, bwrap: str | None = None, extra_ro_paths: tuple[str, ...] = ()) -> None:
        self.bwrap = bwrap
        self.extra_ro_paths = tuple(extra_ro_paths)

    def sandbox_owner(self, spec: SandboxSpec) -> tuple[int, int]:
        """The host uid/gid the agent's processes and files have."""
        if os.geteuid() == 0:
            return _parse_user(spec.user) or NOBODY
        return os.geteuid(), os.getegid()

    def _namespace_args(self, spec: SandboxSpec | None) -> list[str]:
        common = ["--die-with-parent", "--new-session"]
        if os.geteuid() == 0:
            return ["--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts", "--unshare-cgroup-try", *common]
        args = ["--unshare-all", *common, "--cap-drop", "ALL"]
        user = _parse_user(spec.user) if spec is not None else None
        if user is not None:
            args += ["--uid", str(user[0]), "--gid", str(user[1])]
        return args

    def _system_binds(self) -> list[Bind]:
        binds = [Bind(source=Path(d), target=d) for d in SYSTEM_DIRS if os.path.isdir(d) and not os.path.islink(d)]
        binds += [Bind(source=Path(d), target=d) for d in SYSTEM_LINKS if os.path.isdir(d) and not os.path.islink(d)]
        binds += [Bind(source=Path(p), target=p) for p in self.extra_ro_paths]
        return binds

    def _system_args(self) -> list[str]:
        args: list[str] = []
        for link in SYSTEM_LINKS:
            if os.path.islink(link):
                args += ["--symlink", os.readlink(link), link]
        for bind in self._system_binds():
            args += ["--ro-bind", str(bind.source), bind.target]
        return args

    def _gpu_args(self, spec: SandboxSpec) -> tuple[list[str], tuple[str, ...]]:
        if spec.gpus is None:
            return [], ()
        devices = sorted(glob.glob("/dev/nvidia[0-9]*"), key=lambda p: int(p[len("/dev/nvidia"):]))
        if not devices or not os.path.exists("/dev/nvidiactl"):
            raise GpuUnavailable("GPUs were requested but this machine has no NVIDIA devices (/dev/nvidia*)")
        request = spec.gpus
        if request.device_ids:
            wanted = []
            for dev_id in request.device_ids:
                path = f"/dev/nvidia{dev_id}"
                if not dev_id.isdigit() or path not in devices:
                    raise GpuUnavailable(f"gpus: device {dev_id!r} is not one of {', '.join(devices)} "
                                         "(the local backend takes device indices)")  # fmt: skip
                wanted.append(path)
            devices = wanted
        elif request.count is not None:
            if request.count > len(devices):
                raise GpuUnavailable(f"gpus: {request.count} requested but this machine has {len(devices)}")
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

    def build_args(self, plan: ExecutionPlan) -> tuple[list[str], tuple[str, ...]]:
        """The full bubblewrap argv for a plan and the GPU indices it exposes.

        Raises
        ------
        SandboxUnavailable
            If bubblewrap, or ``setpriv`` for a root caller, is missing.
        GpuUnavailable
            If GPUs are requested and cannot be provided.
        SpecError
            If a system bind would expose a hidden path that cannot be covered.
        """
        bwrap = self.bwrap or find_bwrap()
        spec = plan.spec
        args = [bwrap, *self._namespace_args(spec), "--hostname", "sandbox", *self._system_args()]
        args += ["--proc", "/proc", "--dev", "/dev", "--perms", "01777", "--tmpfs", "/tmp", "--dir", "/var",
                 "--perms", "01777", "--tmpfs", "/var/tmp", "--dir", "/home"]  # fmt: skip
        gpu_args, gpus = self._gpu_args(spec)
        args += gpu_args
        # bubblewrap creates missing parents of a mount point as 0700 root, which the
        # (unprivileged) agent could not traverse; create them 0755 first.
        system = [b.target for b in self._system_binds()] + list(SYSTEM_LINKS)
        parents: list[str] = []
        for bind in plan.binds:
            for parent in reversed(PurePosixPath(bind.target).parents):
                text = str(parent)
                if text != "/" and not any(_within_posix(text, s) for s in system):
                    parents.append(text)
        for parent in dict.fromkeys(parents):
            args += ["--perms", "0755", "--dir", parent]
        for bind in plan.binds:
            args += ["--ro-bind" if bind.read_only else "--bind", str(bind.source), bind.target]
        masks = list(plan.masks) + list(plan_masks(self._system_binds(), spec.hidden))
        for mask in dict.fromkeys(masks):
            args += ["--tmpfs", mask]
        # The sandbox's own root (a tmpfs holding the mount points) becomes read-only too; only
        # the output binds, /tmp and /var/tmp stay writable.
        args += ["--remount-ro", "/", "--chdir", spec.workdir, "--"]
        if os.geteuid() == 0:
            setpriv = shutil.which("setpriv")
            if setpriv is None:
                raise SandboxUnavailable("setpriv (util-linux) is needed to run agents as a non-root user when the caller is root")
            uid, gid = self.sandbox_owner(spec)
            args += [setpriv, "--reuid", str(uid), "--regid", str(gid), "--clear-groups", "--inh-caps=-all",
                     "--bounding-set=-all", "--no-new-privs", "--"]  # fmt: skip
        args += list(plan.command)
        return args, gpus

    def execute(self, plan: ExecutionPlan) -> Execution:
        """Run the plan to its end or its time limit; stdout and stderr stream to ``run.log``."""
        args, gpus = self.build_args(plan)
        spec = plan.spec
        # The bwrap monitor process runs as the sandbox user too when we are not root.
        preexec, applied = _limits(spec, extra_procs=0 if os.geteuid() == 0 else 2)
        env = dict(plan.env)
        if gpus:
            env.setdefault("NVIDIA_VISIBLE_DEVICES", ",".join(gpus))
        uid, gid = self.sandbox_owner(spec)
        logger.debug("bwrap argv: %s", args)
        with plan.log_path.open("ab") as log:
            try:
                proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=env,
                                        start_new_session=True, preexec_fn=preexec, close_fds=True)  # fmt: skip
            except OSError as exc:
                raise SandboxUnavailable(f"cannot start bubblewrap ({args[0]}): {exc.strerror or exc}") from None
            returncode, timed_out = _wait(proc, spec.time_limit_s)
        exit_code, exit_signal = _exit_status(returncode)
        return Execution(
            exit_code=exit_code,
            exit_signal=exit_signal,
            timed_out=timed_out,
            limits_hit=("time",) if timed_out else (),
            gpus_visible=gpus,
            isolation={
                "sandbox": True,
                "tool": "bubblewrap",
                "namespaces": ["mount", "pid", "net", "ipc", "uts", "cgroup"] + ([] if os.geteuid() == 0 else ["user"]),
                "user": f"{uid}:{gid}",
                "read_only_root": True,
                "rlimits": applied,
            },
        )


class UnsafeLocalRunner:
    """Run the command directly on the host, with rlimits and the time limit but no isolation.

    The agent-facing paths do not exist on the host, so the environment variables that name
    them (``DATA_DIR``, ``SUBMISSION_DIR``, ``VALIDATE_SOCKET`` ...) are rewritten to the host
    paths bound there. ``run.json`` records ``isolation.sandbox: false``.
    """

    name = "unsafe-local"

    def sandbox_owner(self, spec: SandboxSpec) -> tuple[int, int] | None:
        return None

    def execute(self, plan: ExecutionPlan) -> Execution:
        """Run the plan's command in the submission folder's parent with host paths substituted."""
        if plan.masks:
            raise SpecError(f"cannot hide {', '.join(plan.masks)} without a sandbox; run with a sandbox backend")
        targets = {bind.target: str(bind.source) for bind in plan.binds}
        env = {key: targets.get(value, value) for key, value in plan.env.items()}
        env["VALIDATE_HELPER"] = targets.get("/home/validate_submission.sh", "")
        preexec, applied = _limits(plan.spec)
        cwd = Path(targets.get("/home/submission", ".")).parent
        with plan.log_path.open("ab") as log:
            proc = subprocess.Popen(list(plan.command), stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                    env=env, cwd=cwd, start_new_session=True, preexec_fn=preexec)  # fmt: skip
            returncode, timed_out = _wait(proc, plan.spec.time_limit_s)
        exit_code, exit_signal = _exit_status(returncode)
        return Execution(
            exit_code=exit_code,
            exit_signal=exit_signal,
            timed_out=timed_out,
            limits_hit=("time",) if timed_out else (),
            isolation={"sandbox": False, "tool": None, "rlimits": applied},
        )
