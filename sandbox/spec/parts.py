"""The parts of a spec: extra mounts, the GPU request, the resource limits and the network policy."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from mleaudit.sandbox.errors import SpecError
from mleaudit.sandbox.spec.defaults import DEFAULT_LIMITS, default_memory_bytes
from mleaudit.sandbox.spec.values import show_value


@dataclass(frozen=True, slots=True, kw_only=True)
class Mount:
    """A host folder or file made visible inside the sandbox.

    Attributes
    ----------
    source : pathlib.Path
        Absolute host path.
    target : str
        Absolute POSIX path inside the sandbox.
    read_only : bool
        Mounted read-only (the default).
    """

    source: Path
    target: str
    read_only: bool = True

    def to_dict(self) -> dict[str, Any]:
        return {"source": str(self.source), "target": self.target, "read_only": self.read_only}


@dataclass(frozen=True, slots=True, kw_only=True)
class GpuRequest:
    """Which GPUs the agent gets: all of them, a count, or explicit device ids.

    Attributes
    ----------
    count : int or None
        Number of GPUs; ``None`` with no ``device_ids`` means all.
    device_ids : tuple of str
        Device indices or UUIDs (``nvidia-smi -L``); exclusive with ``count``.
    """

    count: int | None = None
    device_ids: tuple[str, ...] = ()

    @property
    def all(self) -> bool:
        """Whether every GPU is requested."""
        return self.count is None and not self.device_ids

    @classmethod
    def parse(cls, value: object, *, field_name: str = "gpus") -> "GpuRequest":
        """A request from ``"all"``, a count (``2``, ``"2"``), ids (``["0", "1"]``, ``"0,1"``) or a mapping.

        Raises
        ------
        SpecError
            If the value is none of those, or the count is not positive.

        Examples
        --------
        >>> GpuRequest.parse("all").all
        True
        >>> GpuRequest.parse(2).count
        2
        >>> GpuRequest.parse("device=0,1").device_ids
        ('0', '1')
        """
        if isinstance(value, Mapping):
            unknown = set(map(str, value)) - {"count", "device_ids"}
            if unknown:
                raise SpecError(f"{field_name}: unknown keys {sorted(unknown)}; expected count or device_ids")
            if "device_ids" in value:
                if "count" in value:
                    raise SpecError(f"{field_name}: give count or device_ids, not both")
                ids = value["device_ids"]
                if not isinstance(ids, (list, tuple, str)):
                    raise SpecError(f"{field_name}.device_ids: expected a list of device ids, got {show_value(ids)}")
                return cls.parse(list(ids) if not isinstance(ids, str) else ids.split(","), field_name=field_name)
            count = value.get("count", "all")
            if not isinstance(count, (int, str)):
                raise SpecError(f"{field_name}.count: expected a number or 'all', got {show_value(count)}")
            return cls.parse(count, field_name=field_name)
        if isinstance(value, bool):
            raise SpecError(f"{field_name}: expected 'all', a count or device ids, got {show_value(value)}")
        if isinstance(value, int):
            if value <= 0:
                raise SpecError(f"{field_name}: the GPU count must be positive, got {value}")
            return cls(count=value)
        if isinstance(value, (list, tuple)):
            if not all(isinstance(v, (str, int)) and not isinstance(v, bool) for v in value):
                raise SpecError(f"{field_name}: device ids must be numbers or strings, got {show_value(value)}")
            ids = tuple(str(v).strip() for v in value)
            if not ids or any(not v or "\0" in v for v in ids):
                raise SpecError(f"{field_name}: device ids must be non-empty, got {show_value(list(value))}")
            return cls(device_ids=ids)
        if isinstance(value, str):
            text = value.strip()
            if text.lower() == "all":
                return cls()
            if text.isdigit():
                return cls.parse(int(text), field_name=field_name)
            if text.startswith("device="):
                return cls.parse([v for v in text[len("device="):].split(",")], field_name=field_name)
            if "," in text:
                return cls.parse(text.split(","), field_name=field_name)
        raise SpecError(f"{field_name}: expected 'all', a count or device ids, got {show_value(value)}")

    def to_dict(self) -> dict[str, Any]:
        if self.device_ids:
            return {"device_ids": list(self.device_ids)}
        return {"count": "all" if self.count is None else self.count}


@dataclass(frozen=True, slots=True, kw_only=True)
class Resources:
    """Resource limits; ``None`` means "not given": :meth:`with_defaults` fills in :data:`DEFAULT_LIMITS`.

    Attributes
    ----------
    cpus : float or None
        CPU cores (docker: CFS quota; local: the run cgroup's CFS quota, else a CPU affinity to
        that many cores, rounded up). ``None``: every core.
    memory_bytes : int or None
        Memory in bytes for the whole sandbox, swap excluded, tmpfs pages (``/tmp``,
        ``/dev/shm``) included (docker: cgroup limit; local: the run cgroup, else an
        address-space rlimit per process). Also the default size of the local sandbox's tmpfs
        folders.
    shm_bytes : int or None
        Size of ``/dev/shm`` in bytes (default: docker's 64 MiB; local: the memory limit).
    pids : int or None
        Maximum number of processes and threads (docker: pids cgroup; local: the run cgroup,
        else RLIMIT_NPROC for the sandbox user).
    disk_bytes : int or None
        Space the output folders (``submission/``, ``logs/``, ``code/``) may use, in bytes; the
        run is stopped past it (:class:`mleaudit.sandbox.watchdog.OutputWatch`).
    log_bytes : int or None
        Cap of ``run.log`` in bytes (:class:`mleaudit.sandbox.logsink.CappedLog`).
    """

    cpus: float | None = None
    memory_bytes: int | None = None
    shm_bytes: int | None = None
    pids: int | None = None
    disk_bytes: int | None = None
    log_bytes: int | None = None

    def with_defaults(self) -> "Resources":
        """These limits with every one not given set from :data:`DEFAULT_LIMITS`.

        ``cpus`` stays ``None`` (every core) and ``shm_bytes`` stays ``None`` (each backend's
        own default) when not given.

        Examples
        --------
        >>> Resources(memory_bytes=1024**3).with_defaults().pids
        4096
        """
        return Resources(
            cpus=self.cpus if self.cpus is not None else DEFAULT_LIMITS["cpus"],
            memory_bytes=self.memory_bytes if self.memory_bytes is not None else default_memory_bytes(),
            shm_bytes=self.shm_bytes,
            pids=self.pids if self.pids is not None else DEFAULT_LIMITS["pids"],
            disk_bytes=self.disk_bytes if self.disk_bytes is not None else DEFAULT_LIMITS["disk_bytes"],
            log_bytes=self.log_bytes if self.log_bytes is not None else DEFAULT_LIMITS["log_bytes"],
        )

    def to_dict(self) -> dict[str, Any]:
        return {"cpus": self.cpus, "memory": self.memory_bytes, "shm": self.shm_bytes, "pids": self.pids,
                "disk": self.disk_bytes, "log": self.log_bytes}  # fmt: skip


@dataclass(frozen=True, slots=True, kw_only=True)
class NetworkPolicy:
    """Network access: none at all, or HTTP(S) to an allow-list of hosts through a host-side proxy.

    With an allow-list the sandbox still has no network interface; ``HTTP_PROXY``/``HTTPS_PROXY``
    point at a loopback forwarder inside the sandbox that reaches the host's filtering proxy
    through a Unix socket, so nothing but the listed hosts can be reached.

    Attributes
    ----------
    allow : tuple of str
        ``host``, ``host:port`` or ``*.domain[:port]`` entries; empty means no network.
    """

    allow: tuple[str, ...] = ()

    @property
    def mode(self) -> str:
        """``"none"`` or ``"allowlist"``."""
        return "allowlist" if self.allow else "none"

    def to_dict(self) -> dict[str, Any]:
        return {"mode": self.mode, "allow": list(self.allow)}
