"""The docker backend: the agent runs in a container created with the docker SDK.

Isolation
---------
The container runs as a non-root user: the spec's ``user`` when given; else, when the caller
is root, a uid/gid drawn at random for the run from
:data:`~mleaudit.sandbox.run_user.RUN_UID_RANGE` (2,000,000-2,999,999; no account, no process, no
keys, outside every subordinate range), held for the whole run (the staging folders, the
pre-flight container and the agent's container share it) and released when the run ends, its
user keyrings cleared first if it owns any (docker's default seccomp profile refuses the key
system calls, so it normally owns none); see :mod:`mleaudit.sandbox.run_user`. The kernel keeps limits
and state per uid that a container without a user namespace shares with every process of that
uid on the host (inotify instances and watches, ``RLIMIT_NPROC``, message-queue bytes, pipe
buffers, keys): one uid for every container, such as the agent image's ``1000``, made them a
channel between concurrent runs and a way for one run to exhaust another's, or a host user's
of the same uid. The drawn uid has no passwd entry: ``HOME`` is the image's (``/tmp`` in the
agent image) and ``USER``/``LOGNAME`` are set to ``sandbox``. A non-root caller's containers
run as the caller's own uid, so its files stay the caller's. The orchestrator gives the output
folders to that uid before the run and takes what the agent wrote back afterwards.

Every capability is dropped and ``no-new-privileges`` set; ``network_mode="none"`` (an
allow-list is served through the Unix-socket proxy, see :mod:`mleaudit.sandbox.proxy`, so the container
still has no interface); the plan's binds (public data and agent files read-only at
``/home/data`` and ``/home/agent``; ``/home/submission``, ``/home/logs``, ``/home/code``; the
validation socket and helper) and GPUs through ``device_requests`` (a count or device ids with
capability ``gpu``). The host's docker socket is never mounted. Images are never pulled: a
missing image is an error (build it from ``images/``).

Limits
------
Every limit holds for the whole container, i.e. for all of the agent's processes together:

* memory: the container's memory cgroup (``mem_limit``, and ``memswap_limit`` equal to it, so
  no swap on top). OOM kills are counted from three sources, because ``State.OOMKilled`` only
  reflects the main process on some docker versions: the daemon's ``oom`` events for the
  container, the ``oom_kill`` counter of the container's memory cgroup read on this host
  (``memory.oom_control`` under cgroup v1, ``memory.events`` under v2; best effort, polled while
  the container runs) and ``State.OOMKilled``.
* processes: the pids cgroup (``pids_limit``); forks refused at the limit are counted from the
  cgroup's ``pids.events`` (``max``), polled while the container runs (best effort: a fork
  refused in the last fraction of a second before the container exits can go uncounted).
* CPU: a CFS quota (``nano_cpus``).
* open files: ``RLIMIT_NOFILE`` of :data:`NOFILE_LIMIT` (soft and hard) for every process of the
  container, instead of the daemon's own (often a million or more). Each connection to the
  validation endpoint or the network proxy holds a descriptor on the host as well, so this
  bounds what one process of the agent can make the host hold open (the process limit bounds
  the number of processes). A daemon that runs with a lower limit of its own and may not raise
  it (no ``CAP_SYS_RESOURCE``, as in some nested setups) refuses to start such a container;
  its containers inherit its lower limit, so the container is started without the ulimit
  and ``isolation.ulimits`` says so.
* file systems: the root file system is read-only (``read_only=True``), so the container's
  writable layer, which lives on the daemon's disk, is never written and needs no
  ``storage_opt`` (which only overlay2 on xfs with project quotas supports). What the agent can
  write is the three output folders (host binds, bounded by the run's disk watch of the output
  folders, see :mod:`mleaudit.sandbox.watchdog`), ``/tmp`` and ``/var/tmp`` and ``/dev/shm``. Those are
  tmpfs file systems, each sized: ``/tmp`` and ``/var/tmp`` at the memory limit (half of this
  machine's memory without one, the kernel's own default written out), ``/dev/shm`` at the
  spec's ``shm`` or :data:`DEFAULT_SHM_BYTES` (never above the memory limit). Pages of a tmpfs
  are charged to the memory cgroup of the process that writes them, so everything the agent
  keeps there counts against the container's memory limit: filling ``/tmp`` ends in an OOM kill,
  recorded as the memory limit.
* time: a timer on the host. At the time limit, or when the run asks for a stop through the
  plan's :class:`~mleaudit.sandbox.runner.StopSignal` (the disk watch), the container is stopped:
  ``SIGTERM``, the spec's grace period (``stop_grace_s``, default
  :data:`mleaudit.sandbox.spec.DEFAULT_STOP_GRACE_S`), then ``SIGKILL``. The container's first process is docker's
  init (``init=True``), which forwards the signal to the agent's process group
  (``TINI_KILL_PROCESS_GROUP``) and reaps orphaned processes, so that zombies never hold the
  process limit. The exit code (and the signal, for ``128 + n``) is recorded in every case.

``run.json`` records the mechanism of each limit in ``limits.enforcement``
(``isolation.enforcement``) and what was measured for each limit hit.

Logs are streamed from the daemon chunk by chunk into ``run.log`` through a
:class:`~mleaudit.sandbox.logsink.CappedLog` of the plan's ``log_bytes``; the daemon's own copy is a
``json-file`` log bounded at two files of :data:`_LOG_MAX_SIZE`.

Before the agent, :meth:`DockerRunner.preflight` creates and starts a container running
``true`` with the same configuration (image, user, mounts, tmpfs, limits, GPUs, no network) and
removes it, so that a sandbox that cannot start is reported as such (with remedies) rather
than as an agent that failed. No container is left behind on any path unless ``keep`` is set.

The docker SDK is an optional extra (``pip install 'mleaudit[sandbox]'``) imported on first use.
"""

from __future__ import annotations

import logging
import math
import os
import re
import threading
import time
from pathlib import Path
from typing import Any, Mapping

from mleaudit.sandbox.errors import GpuUnavailable, ImageNotFound, SandboxError, SandboxUnavailable
from mleaudit.sandbox.logsink import CappedLog
from mleaudit.sandbox.run_user import RunUsers
from mleaudit.sandbox.runner import Execution, ExecutionPlan
from mleaudit.sandbox.spec import GpuRequest, SandboxSpec

__all__ = [
    "DockerRunner",
    "docker_client",
    "device_requests",
    "DEFAULT_IMAGE",
    "NOFILE_LIMIT",
    "DEFAULT_SHM_BYTES",
    "ENFORCEMENT",
    "IMAGE_REMEDIES",
    "DAEMON_REMEDIES",
    "GPU_REMEDIES",
]

logger = logging.getLogger(__name__)

#: The image built from ``images/agent/Dockerfile``.
DEFAULT_IMAGE = "mleaudit/agent:local"
#: ``RLIMIT_NOFILE`` (soft and hard) of every process in the container: enough for data loaders
#: and many open files, far below the daemon's default, which is often 1,048,576 or more.
NOFILE_LIMIT = 65536
#: Size of ``/dev/shm`` when the spec sets none (capped at the memory limit): docker's own
#: default of 64 MiB breaks data loaders that pass batches between processes through it.
DEFAULT_SHM_BYTES = 1024**3
#: How each limit is enforced, as recorded in ``run.json``.
ENFORCEMENT = {
    "memory": "docker (cgroup)",
    "pids": "docker (cgroup)",
    "cpu": "docker (cgroup)",
    "tmpfs": "docker tmpfs size",
    "shm": "docker tmpfs size",
    "time": "host timer",
    "disk": "host watch of the output folders",
    "log": "host cap of run.log",
}
#: Writable tmpfs file systems of the otherwise read-only root (sized at the memory limit).
WRITABLE_TMPFS = ("/tmp", "/var/tmp")
#: Options of the empty tmpfs laid over each hidden path.
_MASK_TMPFS = "ro,noexec,nosuid,nodev,size=4k"
_LOG_MAX_SIZE = "50m"
_REMOVE_TIMEOUT_S = 60
_PREFLIGHT_TIMEOUT_S = 60
#: Seconds between two looks at the container, the stop signal and the cgroup counters.
_POLL_S = 0.2

_BUILD_COMMANDS = (
    "images/build-rootfs.sh | docker import - mleaudit/rootfs:local",
    "docker build --network none --build-arg BASE=mleaudit/rootfs:local -t mleaudit/agent:local images/agent",
)
#: What to do when the image is missing.
IMAGE_REMEDIES = (
    f"build the agent image offline from this repository: {_BUILD_COMMANDS[0]} && {_BUILD_COMMANDS[1]}",
    "or name an image that is present locally (docker images lists them) with --image or the spec's image:",
)
#: What to do when the daemon cannot be reached.
DAEMON_REMEDIES = (
    "start the docker daemon (systemctl start docker), or point DOCKER_HOST at a running one "
    "(export DOCKER_HOST=unix:///path/to/docker.sock)",
    "make sure this user may use the daemon's socket (root, or a member of the docker group)",
    "or use the local backend (--backend local, bubblewrap)",
)
#: What to do when GPUs are requested and the daemon cannot provide them.
GPU_REMEDIES = (
    "install the NVIDIA Container Toolkit (apt-get install nvidia-container-toolkit), configure docker's "
    "runtime (nvidia-ctk runtime configure --runtime=docker) and restart the daemon (systemctl restart docker)",
    "or run without GPUs: drop --gpus (or the spec's gpus:)",
)


def docker_client(timeout: int = 120) -> Any:
    """A docker SDK client for the daemon in the environment (``DOCKER_HOST`` or the local socket).

    Parameters
    ----------
    timeout : int
        Seconds the client waits for an answer to one request.

    Returns
    -------
    docker.DockerClient
        A client whose daemon answered a ping.

    Raises
    ------
    SandboxUnavailable
        If the docker SDK is not installed or the daemon does not answer (with remedies).
    """
    try:
        import docker
    except ImportError:
        raise SandboxUnavailable(
            "the docker backend needs the docker SDK: pip install 'mleaudit[sandbox]'",
            remedies=("pip install 'mleaudit[sandbox]'", "or use the local backend (--backend local, bubblewrap)"),
        ) from None
    try:
        client = docker.from_env(timeout=timeout)
        client.ping()
    except Exception as exc:  # noqa: BLE001 - the SDK raises several unrelated types for "no daemon"
        raise SandboxUnavailable(
            f"cannot reach the docker daemon ({os.environ.get('DOCKER_HOST') or 'local socket'}): {exc}",
            remedies=DAEMON_REMEDIES,
        ) from None
    return client


def device_requests(gpus: GpuRequest | None) -> list[Any]:
    """The ``device_requests`` for a GPU request: a count (``-1`` for all) or device ids, capability ``gpu``.

    Parameters
    ----------
    gpus : GpuRequest or None
        The spec's GPU request.

    Returns
    -------
    list of docker.types.DeviceRequest
        Empty when no GPUs are requested.

    Examples
    --------
    >>> [r["Count"] for r in device_requests(GpuRequest())]        # doctest: +SKIP
    [-1]
    """
    if gpus is None:
        return []
    from docker.types import DeviceRequest

    if gpus.device_ids:
        return [DeviceRequest(device_ids=list(gpus.device_ids), capabilities=[["gpu"]])]
    return [DeviceRequest(count=-1 if gpus.count is None else gpus.count, capabilities=[["gpu"]])]


def _host_memory_bytes() -> int:
    try:
        return int(os.sysconf("SC_PHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError):
        return 8 * 1024**3


def tmpfs_bytes(spec: SandboxSpec) -> int:
    """Size of each writable tmpfs (``/tmp``, ``/var/tmp``): the memory limit, else half the machine's memory.

    Parameters
    ----------
    spec : SandboxSpec
        The spec (its ``resources.memory_bytes``).

    Returns
    -------
    int
        Bytes.
    """
    memory = spec.resources.memory_bytes
    return int(memory) if memory is not None else _host_memory_bytes() // 2


def shm_bytes(spec: SandboxSpec) -> int:
    """Size of ``/dev/shm``: the spec's, else :data:`DEFAULT_SHM_BYTES`, never above the memory limit.

    Parameters
    ----------
    spec : SandboxSpec
        The spec (its ``resources.shm_bytes`` and ``resources.memory_bytes``).

    Returns
    -------
    int
        Bytes.
    """
    res = spec.resources
    if res.shm_bytes is not None:
        return int(res.shm_bytes)
    return min(DEFAULT_SHM_BYTES, res.memory_bytes) if res.memory_bytes is not None else DEFAULT_SHM_BYTES


def _exit_status(code: int | None) -> tuple[int | None, int | None]:
    """(exit code, signal): docker reports a process ended by signal ``n`` as ``128 + n``."""
    if code is None:
        return None, None
    if 128 < code < 128 + 65:
        return code, code - 128
    return code, None


class _CgroupCounters:
    """The container's OOM-kill and refused-fork counters, read on this host while it runs (best effort).

    The cgroup folders are found through ``/proc/<pid>/cgroup`` of the container's first
    process, or under the usual docker parents (``docker/<id>``, ``system.slice/docker-<id>.scope``),
    for cgroup v1 (``memory.oom_control``, ``pids.events``) and v2 (``memory.events``,
    ``pids.events``). A folder counts only if its path holds the container id, so a daemon on
    another machine (whose pids mean nothing here) reads as "not measured".
    """

    def __init__(self, container_id: str, pid: int | None, root: Path = Path("/sys/fs/cgroup")) -> None:
        self.container_id = container_id
        self.root = root
        self.oom_kills = 0
        self.pids_refused = 0
        self.memory_peak = 0
        self.files: dict[str, Path] = {}
        self._find(pid)

    def _candidates(self, pid: int | None) -> list[tuple[str, Path]]:
        found: list[tuple[str, Path]] = []
        unified = (self.root / "cgroup.controllers").exists()
        if pid:
            try:
                lines = Path(f"/proc/{pid}/cgroup").read_text().splitlines()
            except OSError:
                lines = []
            for line in lines:
                _, controllers, path = (line.split(":", 2) + ["", ""])[:3]
                rel = path.lstrip("/")
                if self.container_id not in rel:
                    continue
                names = controllers.split(",") if controllers else []
                for name in ("memory", "pids"):
                    if name in names:
                        found.append((name, self.root / name / rel))
                if not controllers and unified:
                    found += [("memory", self.root / rel), ("pids", self.root / rel)]
        cid = self.container_id
        for rel in (f"docker/{cid}", f"system.slice/docker-{cid}.scope"):
            found += [("memory", self.root / "memory" / rel), ("pids", self.root / "pids" / rel)]
            if unified:
                found += [("memory", self.root / rel), ("pids", self.root / rel)]
        return found

    def _find(self, pid: int | None) -> None:
        for controller, folder in self._candidates(pid):
            if controller == "memory" and "oom" not in self.files:
                for name in ("memory.oom_control", "memory.events"):
                    if (folder / name).is_file():
                        self.files["oom"] = folder / name
                        break
                for name in ("memory.max_usage_in_bytes", "memory.peak"):
                    if "memory_peak" not in self.files and (folder / name).is_file():
                        self.files["memory_peak"] = folder / name
            if controller == "pids" and "pids" not in self.files and (folder / "pids.events").is_file():
                self.files["pids"] = folder / "pids.events"

    @staticmethod
    def _field(path: Path, key: str) -> int | None:
        try:
            text = path.read_text()
        except OSError:
            return None
        match = re.search(rf"^{re.escape(key)}\s+(\d+)\s*$", text, re.M)
        return int(match.group(1)) if match else None

    def poll(self) -> None:
        """Read the counters and keep the highest values seen (the files vanish with the container)."""
        if "oom" in self.files:
            value = self._field(self.files["oom"], "oom_kill")
            if value is not None:
                self.oom_kills = max(self.oom_kills, value)
        if "pids" in self.files:
            value = self._field(self.files["pids"], "max")
            if value is not None:
                self.pids_refused = max(self.pids_refused, value)
        if "memory_peak" in self.files:
            try:
                self.memory_peak = max(self.memory_peak, int(self.files["memory_peak"].read_text().split()[0]))
            except (OSError, ValueError, IndexError):
                pass

    def describe(self) -> dict[str, str]:
        """The files read, by counter (``not found on this host`` when none)."""
        return {key: str(self.files[key]) if key in self.files else "not found on this host"
                for key in ("oom", "pids", "memory_peak")}  # fmt: skip


class _RlimitRefused(SandboxUnavailable):
    """The container's runtime may not set an rlimit asked for (above its own, without ``CAP_SYS_RESOURCE``)."""


class DockerRunner:
    """Run plans in docker containers; see the module docstring.

    Parameters
    ----------
    client : docker.DockerClient, optional
        Default: :func:`docker_client` when a run starts.
    keep : bool
        Leave the agent's container in place after the run (for inspection); it is removed
        otherwise. The pre-flight container is always removed.
    nofile : int
        ``RLIMIT_NOFILE`` (soft and hard) of the container's processes (default
        :data:`NOFILE_LIMIT`). A daemon whose own limit is lower and that may not raise it
        cannot apply it: its containers then keep its lower limit, recorded as such.
    """

    name = "docker"

    def __init__(self, client: Any = None, *, keep: bool = False, nofile: int = NOFILE_LIMIT) -> None:
        self._client = client
        self.keep = keep
        self.nofile = int(nofile)
        # False once the daemon refused the nofile ulimit (it cannot raise its own, lower one).
        self._nofile_settable = True
        # The uid drawn for each run in progress (run_sandbox passes one spec object to
        # sandbox_owner, preflight and execute, and a new one for every run).
        self.run_users = RunUsers()

    @property
    def client(self) -> Any:
        """The docker SDK client (connected on first use).

        Raises
        ------
        SandboxUnavailable
            If the daemon cannot be reached.
        """
        if self._client is None:
            self._client = docker_client()
        return self._client

    def sandbox_owner(self, spec: SandboxSpec) -> tuple[int, int]:
        """The uid/gid the container runs as (the staging folders are given to it).

        A non-root caller's own; for a root caller the spec's ``user``, else a uid/gid drawn
        for this run (:func:`mleaudit.sandbox.run_user.choose_run_user`). The first call for a spec
        object draws it; later calls with the same object (the staging folders' owner, the
        pre-flight container, the agent's container) get the same ids until :meth:`execute`
        has finished with it, or :meth:`preflight` has failed; a call after that draws a new
        one (:class:`mleaudit.sandbox.run_user.RunUsers`).

        Parameters
        ----------
        spec : SandboxSpec
            The run's spec.

        Returns
        -------
        (int, int)
            uid and gid.

        Raises
        ------
        SandboxUnavailable
            If no free uid can be drawn.
        """
        return self.run_users.owner(spec)

    def container_config(self, plan: ExecutionPlan) -> dict[str, Any]:
        """Keyword arguments for ``client.containers.create`` (inspected by the tests).

        Parameters
        ----------
        plan : ExecutionPlan
            The resolved plan.

        Returns
        -------
        dict
            Image, command, user (:meth:`sandbox_owner`, drawn for the run on the first call
            for a root caller's spec without a ``user``), environment, mounts, tmpfs, limits
            and security options.

        Raises
        ------
        SandboxError
            If the plan has no image.
        """
        from docker.types import LogConfig, Mount, Ulimit

        spec = plan.spec
        if not spec.image:
            raise SandboxError("the docker backend needs an image (--image or the spec's image:)")
        mounts = [Mount(target=b.target, source=str(b.source), type="bind", read_only=b.read_only) for b in plan.binds]
        bound = {b.target.rstrip("/") for b in plan.binds}
        writable = tmpfs_bytes(spec)
        tmpfs: dict[str, str] = {}
        for target in WRITABLE_TMPFS:
            if target not in bound:
                tmpfs[target] = f"rw,exec,nosuid,nodev,size={writable},mode=1777"
        # An empty, read-only tmpfs over every hidden path that a bind would otherwise expose.
        for mask in plan.masks:
            tmpfs[mask] = _MASK_TMPFS
        env = dict(plan.env)
        # docker's init (tini) then sends a stop's SIGTERM to the agent's whole process group.
        env.setdefault("TINI_KILL_PROCESS_GROUP", "1")
        uid, gid = self.sandbox_owner(spec)
        if self.run_users.drawn(spec):
            # The uid drawn for the run has no passwd entry; getpass.getuser() and the tools
            # that name their caches after the user read these first.
            env.setdefault("USER", "sandbox")
            env.setdefault("LOGNAME", "sandbox")
        config: dict[str, Any] = {
            "image": spec.image,
            "command": list(plan.command),
            "user": f"{uid}:{gid}",
            "working_dir": spec.workdir,
            "environment": env,
            "network_mode": "none",
            "mounts": mounts,
            "tmpfs": tmpfs,
            "read_only": True,
            "init": True,
            "cap_drop": ["ALL"],
            "security_opt": ["no-new-privileges"],
            "ipc_mode": "private",
            "hostname": "sandbox",
            "labels": {"mleaudit.run": plan.run_id},
            "log_config": LogConfig(type="json-file", config={"max-size": _LOG_MAX_SIZE, "max-file": "2"}),
            "shm_size": shm_bytes(spec),
            "detach": True,
            "stdin_open": False,
            "tty": False,
        }
        if self._nofile_settable:
            config["ulimits"] = [Ulimit(name="nofile", soft=self.nofile, hard=self.nofile)]
        res = spec.resources
        if res.cpus is not None:
            config["nano_cpus"] = int(res.cpus * 1e9)
        if res.memory_bytes is not None:
            config["mem_limit"] = res.memory_bytes
            config["memswap_limit"] = res.memory_bytes  # no swap beyond the memory limit
        if res.pids is not None:
            config["pids_limit"] = res.pids
        requests = device_requests(spec.gpus)
        if requests:
            config["device_requests"] = requests
        return config

    def enforcement(self, spec: SandboxSpec) -> dict[str, str]:
        """How each limit of ``spec`` is enforced (``not limited`` for limits the spec leaves open)."""
        res = spec.resources
        record = dict(ENFORCEMENT)
        if res.memory_bytes is None:
            record["memory"] = "not limited"
        if res.pids is None:
            record["pids"] = "not limited"
        if res.cpus is None:
            record["cpu"] = "not limited"
        if not spec.time_limit_s:
            record["time"] = "not limited"
        return record

    # --- talking to the daemon ---------------------------------------------------------------

    def _image(self, spec: SandboxSpec) -> Any:
        import docker.errors

        try:
            return self.client.images.get(spec.image)
        except docker.errors.ImageNotFound:
            raise ImageNotFound(
                f"docker image {spec.image!r} is not present locally (images are never pulled); build it: "
                f"{_BUILD_COMMANDS[0]} && {_BUILD_COMMANDS[1]}",
                remedies=IMAGE_REMEDIES,
            ) from None
        except docker.errors.APIError as exc:
            raise SandboxUnavailable(f"docker could not look up image {spec.image!r}: {exc.explanation or exc}",
                                     remedies=DAEMON_REMEDIES) from None  # fmt: skip
        except Exception as exc:  # noqa: BLE001 - a dropped connection surfaces as requests' errors
            raise SandboxUnavailable(f"the docker daemon did not answer: {exc}", remedies=DAEMON_REMEDIES) from None

    def _create_and_start(self, spec: SandboxSpec, config: dict[str, Any], on_created: Any) -> Any:
        """Create and start a container; ``on_created(container)`` runs for each container created (for cleanup).

        A daemon that may not raise its own ``RLIMIT_NOFILE`` (no ``CAP_SYS_RESOURCE``) and
        holds less than the ``nofile`` ulimit asked for cannot start the container; its
        containers inherit its own, lower limit, so the container is created again without
        the ulimit (``config`` loses its ``ulimits``), and so are this runner's later ones.
        """
        attempt: list[Any] = []
        try:
            container = self._create_and_start_once(spec, config, attempt.append)
        except _RlimitRefused as exc:
            for refused in attempt:
                self._remove(refused)
            if "ulimits" not in config:
                raise SandboxUnavailable(str(exc), remedies=exc.remedies) from None
            logger.warning("the docker daemon cannot set an open-files limit of %d (its own is lower, which its "
                           "containers inherit): %s", self.nofile, exc)  # fmt: skip
            self._nofile_settable = False
            del config["ulimits"]
            return self._create_and_start_once(spec, config, on_created)
        except BaseException:
            for created in attempt:
                on_created(created)
            raise
        for created in attempt:
            on_created(created)
        return container

    def _create_and_start_once(self, spec: SandboxSpec, config: Mapping[str, Any], on_created: Any) -> Any:
        """One attempt of :meth:`_create_and_start`; ``on_created(container)`` runs before the start."""
        import docker.errors

        try:
            container = self.client.containers.create(**config)
        except docker.errors.ImageNotFound:
            raise ImageNotFound(f"docker image {spec.image!r} is not present locally (images are never pulled)",
                                remedies=IMAGE_REMEDIES) from None  # fmt: skip
        except docker.errors.APIError as exc:
            raise SandboxUnavailable(f"docker refused to create the container: {exc.explanation or exc}",
                                     remedies=DAEMON_REMEDIES) from None  # fmt: skip
        except Exception as exc:  # noqa: BLE001
            raise SandboxUnavailable(f"the docker daemon did not answer: {exc}", remedies=DAEMON_REMEDIES) from None
        on_created(container)
        try:
            container.start()
        except docker.errors.APIError as exc:
            message = str(exc.explanation or exc)
            if spec.gpus is not None and ("device driver" in message or "gpu" in message.lower() or "nvidia" in message.lower()):
                raise GpuUnavailable(f"GPUs were requested but the docker daemon has no GPU runtime: {message}",
                                     remedies=GPU_REMEDIES) from None  # fmt: skip
            remedies = DAEMON_REMEDIES
            if "setting rlimit" in message and "operation not permitted" in message:
                raise _RlimitRefused(f"docker could not start the container: {message}", remedies=remedies) from None
            if "docker-init" in message or "init binary" in message:
                remedies = ("install docker's init (Debian/Ubuntu: apt-get install tini; it provides docker-init) "
                            "and restart the daemon", *DAEMON_REMEDIES)
            raise SandboxUnavailable(f"docker could not start the container: {message}", remedies=remedies) from None
        except Exception as exc:  # noqa: BLE001
            raise SandboxUnavailable(f"the docker daemon did not answer: {exc}", remedies=DAEMON_REMEDIES) from None
        return container

    @staticmethod
    def _remove(container: Any) -> None:
        try:
            container.remove(force=True)
        except Exception as exc:  # noqa: BLE001 - removal is best effort; the label names the run
            logger.warning("could not remove container %s (label mleaudit.run): %s", getattr(container, "short_id", "?"), exc)

    # --- the runner protocol -----------------------------------------------------------------

    def preflight(self, plan: ExecutionPlan) -> None:
        """Create, start and remove a container running ``true`` with the plan's configuration.

        Parameters
        ----------
        plan : ExecutionPlan
            The plan the agent will run with (image, user, mounts, tmpfs, limits, GPUs).

        Raises
        ------
        SandboxUnavailable
            If the daemon cannot be reached or the container cannot start or does not exit 0.
        ImageNotFound
            If the image is not present locally.
        GpuUnavailable
            If GPUs are requested and the daemon has no GPU runtime.

        Notes
        -----
        When it fails, the run ends here: a uid drawn for it (:meth:`sandbox_owner`) is released.
        """
        spec = plan.spec
        created: list[Any] = []
        failed = True
        try:
            config = self.container_config(plan)
            config["command"] = list(plan.preflight_command)
            config["labels"] = {"mleaudit.run": plan.run_id, "mleaudit.preflight": "1"}
            self._image(spec)
            container = self._create_and_start(spec, config, created.append)
            try:
                status = container.wait(timeout=_PREFLIGHT_TIMEOUT_S)
            except Exception as exc:  # noqa: BLE001 - a timeout or a dropped connection
                raise SandboxUnavailable(f"a container running `true` did not exit within {_PREFLIGHT_TIMEOUT_S} s: {exc}",
                                         remedies=DAEMON_REMEDIES) from None  # fmt: skip
            code = int(status.get("StatusCode", -1))
            if code != 0:
                try:
                    output = container.logs(stdout=True, stderr=True)[-2000:].decode("utf-8", "replace").strip()
                except Exception:  # noqa: BLE001
                    output = ""
                raise SandboxUnavailable(
                    f"a container of {spec.image!r} running `true` exited with {code}" + (f": {output}" if output else ""),
                    remedies=("check that the image has /bin/sh, `true` and python3 (build it from images/: "
                              f"{_BUILD_COMMANDS[0]} && {_BUILD_COMMANDS[1]})", *DAEMON_REMEDIES[1:]),
                )
            failed = False
        finally:
            for container in created:
                self._remove(container)
            if failed:  # the run ends here: no execute() will release the uid drawn for it
                self.run_users.end(spec)

    def execute(self, plan: ExecutionPlan) -> Execution:
        """Run the container to its end, the time limit or a stop; stream its logs to ``run.log``; remove it.

        Parameters
        ----------
        plan : ExecutionPlan
            The resolved plan.

        Returns
        -------
        Execution
            Exit code and signal, limits hit and what was measured, log counts, the container and
            image ids, and the isolation and enforcement record.

        Raises
        ------
        ImageNotFound
            If the image is not present locally.
        GpuUnavailable
            If GPUs are requested and the daemon has no GPU runtime.
        SandboxUnavailable
            If the daemon cannot be reached, or refuses or cannot start the container.

        Notes
        -----
        A uid drawn for the run (:meth:`sandbox_owner`) is released once the container is
        gone (or has exited, with ``keep``), its keyrings cleared first if it owns any.
        """
        try:
            return self._run(plan)
        finally:
            self.run_users.end(plan.spec)

    def _run(self, plan: ExecutionPlan) -> Execution:
        """:meth:`execute` without the release of the run's uid."""
        spec = plan.spec
        config = self.container_config(plan)
        image = self._image(spec)
        digest = (image.attrs.get("RepoDigests") or [None])[0] or image.id
        grace = float(spec.stop_grace_s)
        created: list[Any] = []
        log = CappedLog(plan.log_path, plan.log_bytes)
        limits: list[str] = []
        details: dict[str, str] = {}
        exit_code: int | None = None
        timed_out = False
        counters: _CgroupCounters | None = None
        oom_killed = False
        oom_events = 0
        started = False
        try:
            since = int(time.time()) - 1
            container = self._create_and_start(spec, config, created.append)
            started = True
            streamer = threading.Thread(target=self._stream_logs, args=(container, log), name="container-logs", daemon=True)
            streamer.start()
            exited = threading.Event()
            outcome: dict[str, Any] = {}
            waiter = threading.Thread(target=self._wait, args=(container, exited, outcome), name="container-wait", daemon=True)
            waiter.start()
            try:
                container.reload()
                pid = container.attrs.get("State", {}).get("Pid") or None
            except Exception:  # noqa: BLE001
                pid = None
            counters = _CgroupCounters(container.id, pid)
            clock = time.monotonic()
            while True:
                counters.poll()
                if exited.wait(_POLL_S):
                    break
                if spec.time_limit_s and time.monotonic() - clock >= spec.time_limit_s:
                    plan.stop.request("time", f"the wall-clock limit of {spec.time_limit_s:g} s was reached")
                if plan.stop.is_set():
                    break
            counters.poll()
            if plan.stop.is_set():
                limit = plan.stop.limit or "stop"
                timed_out = limit == "time"
                limits.append(limit)
                running = not exited.is_set()
                if running:
                    started_stop = time.monotonic()
                    self._stop(container, grace)
                    exited.wait(_REMOVE_TIMEOUT_S)
                    how = f"SIGTERM, the agent ended {time.monotonic() - started_stop:.1f} s later (grace {grace:g} s, then SIGKILL)"
                else:
                    how = "the container had already exited"
                details[limit] = f"{plan.stop.detail or limit}; {how}"
            exited.wait(_REMOVE_TIMEOUT_S)
            streamer.join(timeout=30)
            state: dict[str, Any] = {}
            try:
                container.reload()
                state = container.attrs.get("State", {})
            except Exception as exc:  # noqa: BLE001
                logger.warning("could not inspect container %s after its end: %s", container.short_id, exc)
            code = state.get("ExitCode", outcome.get("StatusCode"))
            if code is not None and not state.get("Running", False):
                exit_code = int(code)
            oom_killed = bool(state.get("OOMKilled"))
            oom_events = self._oom_events(container.id, since)
        finally:
            log.close()
            # ``keep`` keeps a container that ran; one that never started is of no use and goes.
            if not (self.keep and started):
                for container in created:
                    self._remove(container)
        if counters is not None:
            memory = spec.resources.memory_bytes
            if oom_killed or oom_events or counters.oom_kills:
                limits.append("memory")
                seen = [f"{counters.oom_kills} OOM kill(s) in the container's memory cgroup"] if "oom" in counters.files else []
                seen.append(f"{oom_events} oom notification(s) from the daemon")
                seen.append(f"docker's State.OOMKilled {str(oom_killed).lower()}")
                if counters.memory_peak:
                    seen.append(f"peak usage {counters.memory_peak:,} bytes")
                limit_text = f" (limit {memory:,} bytes)" if memory is not None else ""
                details["memory"] = "; ".join(seen) + limit_text
            if counters.pids_refused:
                limits.append("pids")
                details["pids"] = (f"{counters.pids_refused} fork(s) refused at the process limit of "
                                   f"{spec.resources.pids} (pids cgroup)")  # fmt: skip
        exit_code, exit_signal = _exit_status(exit_code)
        gpus: tuple[str, ...] = ()
        if spec.gpus is not None:
            gpus = spec.gpus.device_ids or (("all",) if spec.gpus.count is None else (f"count={spec.gpus.count}",))
        container_id = created[0].id if created else None
        return Execution(
            exit_code=exit_code,
            exit_signal=exit_signal,
            timed_out=timed_out,
            limits_hit=tuple(dict.fromkeys(limits)),
            limit_details=details,
            log_kept_bytes=log.kept_bytes,
            log_dropped_bytes=log.dropped_bytes,
            container_id=container_id,
            image_digest=digest,
            gpus_visible=gpus,
            isolation={
                "sandbox": True,
                "tool": "docker",
                "user": config["user"],
                "ulimits": ({u["Name"]: {"soft": u["Soft"], "hard": u["Hard"]} for u in config["ulimits"]}
                            if "ulimits" in config else
                            {"nofile": f"the daemon's own, below {self.nofile} (it may not raise it)"}),
                "network_mode": config["network_mode"],
                "cap_drop": config["cap_drop"],
                "security_opt": config["security_opt"],
                "read_only_root": True,
                "init": "docker-init (process-group signals, orphans reaped)",
                "tmpfs_bytes": {**{t: tmpfs_bytes(spec) for t in WRITABLE_TMPFS if t in config["tmpfs"]},
                                "/dev/shm": config["shm_size"]},
                "memory_bytes": config.get("mem_limit"),
                "memswap_bytes": config.get("memswap_limit"),
                "pids_limit": config.get("pids_limit"),
                "nano_cpus": config.get("nano_cpus"),
                "stop_grace_s": grace,
                "enforcement": self.enforcement(spec),
                "counters": counters.describe() if counters is not None else {},
                "kept": self.keep,
            },
        )

    # --- helpers of execute ------------------------------------------------------------------

    @staticmethod
    def _wait(container: Any, exited: threading.Event, outcome: dict[str, Any]) -> None:
        """Block until the container exits (or the daemon drops the connection); then set ``exited``."""
        try:
            outcome.update(container.wait())
        except Exception as exc:  # noqa: BLE001 - the container was removed, or the daemon went away
            outcome["error"] = str(exc)
        finally:
            exited.set()

    @staticmethod
    def _stop(container: Any, grace: float) -> None:
        """SIGTERM through docker's stop, SIGKILL after ``grace`` seconds; a kill if the stop call fails."""
        try:
            container.stop(timeout=max(0, math.ceil(grace)))  # docker takes whole seconds; never shorten the grace
        except Exception as exc:  # noqa: BLE001
            logger.warning("docker stop of %s failed (%s); killing it", container.short_id, exc)
            try:
                container.kill()
            except Exception as kill_exc:  # noqa: BLE001
                logger.warning("could not kill container %s: %s", container.short_id, kill_exc)

    def _oom_events(self, container_id: str, since: int) -> int:
        """Number of ``oom`` events the daemon reported for the container since ``since``."""
        try:
            # ``until`` in the past, as seconds.nanoseconds: the query returns at once (the container has exited).
            stream = self.client.events(since=since, until=f"{time.time():.9f}", decode=True,
                                        filters={"container": container_id, "event": "oom"})  # fmt: skip
            return sum(1 for event in stream if event.get("status") == "oom" or event.get("Action") == "oom")
        except Exception as exc:  # noqa: BLE001 - best effort; the cgroup counter and State.OOMKilled remain
            logger.debug("docker events for %s unavailable: %s", container_id, exc)
            return 0

    @staticmethod
    def _stream_logs(container: Any, log: CappedLog) -> None:
        try:
            for chunk in container.logs(stream=True, follow=True, stdout=True, stderr=True):
                log.write(chunk)
        except Exception as exc:  # noqa: BLE001 - a broken log stream must not hide the run's result
            logger.warning("log stream of container %s ended: %s", getattr(container, "short_id", "?"), exc)
