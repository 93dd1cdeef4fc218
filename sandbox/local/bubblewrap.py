"""The bubblewrap runner: :class:`BubblewrapRunner` builds bubblewrap's argv and runs the sandbox.

See :mod:`mleaudit.sandbox.local` for what the sandbox sees and how its limits hold.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import shutil
import subprocess
from pathlib import Path, PurePosixPath
from typing import Any, Iterable

from mleaudit.sandbox.errors import SandboxUnavailable, SpecError
from mleaudit.sandbox.local.gpus import gpu_bind_args
from mleaudit.sandbox.local.host import find_bwrap, namespace_remedies
from mleaudit.sandbox.local.limits import Limits, setup_limits
from mleaudit.sandbox.local.process import exit_status, report_limits, run_supervised
from mleaudit.sandbox.run_user import RunUsers, parse_user, session_keyring_preexec
from mleaudit.sandbox.runner.plan import Bind, Execution, ExecutionPlan, plan_masks
from mleaudit.sandbox.spec import SandboxSpec, default_memory_bytes

logger = logging.getLogger(__name__)

#: The uid/gid of the host's unprivileged account. No longer used by default: it is shared by
#: every run (and by other programs), so per-uid kernel state would carry over between runs.
NOBODY = (65534, 65534)
#: Read-only system folders bound into the sandbox when present (from the host or ``rootfs``).
SYSTEM_DIRS = ("/usr", "/etc", "/opt")
#: Top-level links (merged /usr) or folders recreated in the sandbox.
SYSTEM_LINKS = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
#: Processes bubblewrap itself keeps in the sandbox's cgroup (its monitor and the PID
#: namespace's init); added to the process limit so that the agent gets the number asked for.
BWRAP_PROCESSES = 2
#: Size of each empty tmpfs that covers a hidden path, in bytes: nothing is meant to be written there.
MASK_TMPFS_BYTES = 1024**2
#: Seconds the pre-flight sandbox (``true``) may take.
PREFLIGHT_TIMEOUT_S = 30


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


class BubblewrapRunner:
    """Run plans with bubblewrap; see :mod:`mleaudit.sandbox.local`.

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
        gpu_args, gpus = gpu_bind_args(spec)
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

    def _limits(self, plan: ExecutionPlan, name: str) -> Limits:
        # bubblewrap's monitor and init are in the cgroup; they run as the sandbox user (and
        # count against its RLIMIT_NPROC) only when the caller is not root.
        limits = setup_limits(plan.spec, name, use_cgroup=self.cgroups, cgroup_extra_procs=BWRAP_PROCESSES,
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
                    outcome, log = run_supervised(argv, plan, limits, env=self._env(plan, gpus), cwd=None,
                                                  spare_monitor=True, pass_fds=(options_fd,))  # fmt: skip
                finally:
                    os.close(options_fd)
                hit, details, counters = report_limits(outcome, limits)
            finally:
                limits.release()
        finally:
            self.run_users.end(spec)
        exit_code, exit_signal = exit_status(outcome.returncode)
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
