"""What a container is given: its tmpfs sizes, GPUs and limits, and how each limit is enforced.

The keyword arguments themselves are built by
:meth:`mleaudit.sandbox.docker.backend.DockerRunner.container_config` (they need the run's uid);
this module holds the sizes and records they are built from, and the ``isolation`` record of
``run.json`` that describes them afterwards.
"""

from __future__ import annotations

import os
from typing import Any

from mleaudit.sandbox.docker.counters import CgroupCounters
from mleaudit.sandbox.spec import GpuRequest, SandboxSpec

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
MASK_TMPFS = "ro,noexec,nosuid,nodev,size=4k"
#: Size of each of the two files of the daemon's own ``json-file`` log of a container.
LOG_MAX_SIZE = "50m"


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


def isolation_record(config: dict[str, Any], spec: SandboxSpec, *, grace: float, enforcement: dict[str, str],
                     counters: CgroupCounters | None, keep: bool, nofile: int) -> dict[str, Any]:  # fmt: skip
    """The ``isolation`` record of ``run.json`` for a container created with ``config``."""
    return {
        "sandbox": True,
        "tool": "docker",
        "user": config["user"],
        "ulimits": ({u["Name"]: {"soft": u["Soft"], "hard": u["Hard"]} for u in config["ulimits"]}
                    if "ulimits" in config else
                    {"nofile": f"the daemon's own, below {nofile} (it may not raise it)"}),
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
        "enforcement": enforcement,
        "counters": counters.describe() if counters is not None else {},
        "kept": keep,
    }
