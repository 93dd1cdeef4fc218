"""What to run and under which limits: :class:`SandboxSpec` and the YAML form it is loaded from.

A spec names the agent command, the image (docker) or none (the local bubblewrap backend), the
public data and agent folders, extra mounts, environment, GPUs, resource limits, the network
policy (``none`` unless an allow-list of hosts is given) and the wall-clock time limit. Host
paths listed under ``hide`` (the competition's held-out answers) must never be reachable from
inside the sandbox: a mount whose source lies inside one is refused, and one that contains one
gets the hidden part covered by an empty tmpfs.

YAML form (every key but ``command`` is optional; unknown keys are an error)::

    command: python /home/agent/solve.py      # a string runs under /bin/sh -c; a list is argv
    image: mleaudit/agent:local               # docker backend only
    competition: sklearn-digits
    agent: my-agent
    data: /data/sklearn-digits/prepared/public  # read-only at /home/data
    agent_dir: ./agents/baseline              # read-only at /home/agent
    mounts: [{source: /opt/models, target: /mnt/models, read_only: true}]   # not under /usr, /etc, /opt
    hide: [/data/sklearn-digits/prepared/private]
    env: {OMP_NUM_THREADS: "2"}
    gpus: all                                 # or a count (2) or device ids ["0", "1"]
    resources: {cpus: 2, memory: 4g, shm: 1g, pids: 256, disk: 20g, log: 256m}
    network: none                             # or {allow: ["pypi.org", "*.pythonhosted.org:443"]}
    time_limit: 2h                            # seconds, or a number with s/m/h
    stop_grace: 30s                           # SIGTERM, then this long, then SIGKILL
    user: "1000:1000"
    workdir: /home
"""

from __future__ import annotations

import math
import os
import re
import reprlib
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from types import MappingProxyType
from typing import Any, Mapping

import yaml

from mleaudit.sandbox.errors import SpecError
from mleaudit.sandbox.logsink import DEFAULT_LOG_BYTES
from mleaudit.sandbox.watchdog import DEFAULT_DISK_BYTES

__all__ = [
    "AGENT_PATHS",
    "Mount",
    "GpuRequest",
    "Resources",
    "NetworkPolicy",
    "SandboxSpec",
    "DEFAULT_LIMITS",
    "DEFAULT_STOP_GRACE_S",
    "DEFAULT_TIME_LIMIT_S",
    "default_memory_bytes",
    "parse_size",
    "parse_duration",
    "load_sandbox_spec",
]

#: The agent-facing paths every backend provides (MLE-bench's container layout).
AGENT_PATHS = MappingProxyType(
    {
        "data": "/home/data",
        "submission": "/home/submission",
        "logs": "/home/logs",
        "code": "/home/code",
        "agent": "/home/agent",
        "validate_socket": "/home/validate.sock",
        "validate_helper": "/home/validate_submission.sh",
        "support": "/home/.sandbox",
    }
)

_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)i?b?\s*$", re.IGNORECASE)
_SIZE_UNITS = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3, "t": 1024**4}
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhd]?)\s*$", re.IGNORECASE)
_DURATION_UNITS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}
#: An allow-list entry: a host name or IPv4 address, ``*.`` for any sub-domain, optional port.
_ALLOW = re.compile(r"^(\*\.)?[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?(:\d{1,5})?$")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_USER = re.compile(r"^\d+(:\d+)?$")
_KEYS = frozenset(
    {"command", "image", "competition", "agent", "data", "agent_dir", "mounts", "hide", "env", "gpus",
     "resources", "network", "time_limit", "user", "workdir", "stop_grace"}
)  # fmt: skip
_RESOURCE_KEYS = frozenset({"cpus", "memory", "shm", "pids", "disk", "log"})
_MOUNT_KEYS = frozenset({"source", "target", "read_only"})

#: Largest spec file read, in bytes: a spec is a few lines.
MAX_SPEC_BYTES = 1 << 20
#: Deepest nesting of YAML collections in a spec (a real spec nests three levels).
MAX_SPEC_DEPTH = 32
#: Most YAML nodes a spec may hold once aliases are expanded: bounds the work of reading,
#: checking and quoting it (an alias of an alias of ... is the "billion laughs" attack).
MAX_SPEC_NODES = 10_000
#: Longest host path accepted (Linux's PATH_MAX).
_MAX_PATH = 4096

#: Seconds between the SIGTERM that asks the agent to stop (time limit, disk limit) and the
#: SIGKILL that ends it: long enough to write a submission file from a signal handler.
DEFAULT_STOP_GRACE_S = 30.0
#: Wall-clock limit of a run when none is given, in seconds: MLE-bench gives an agent 24 hours
#: per competition (Chan et al. 2024, "MLE-bench", sec. 2.2).
DEFAULT_TIME_LIMIT_S = 24 * 3600.0
#: Share of the host's physical memory an agent may use when no memory limit is given: the
#: rest is left to the host (the orchestrator, the validation endpoint, the page cache).
DEFAULT_MEMORY_FRACTION = 0.75

#: The limits in force when none is given (``mleaudit run`` with no flag, a spec without the
#: key), as :meth:`Resources.with_defaults` and :meth:`SandboxSpec.with_defaults` resolve them:
#:
#: - ``time_limit_s``: 24 hours, MLE-bench's limit per competition run (Chan et al. 2024, sec. 2.2);
#: - ``memory_fraction``: :data:`DEFAULT_MEMORY_FRACTION` of the host's physical memory
#:   (:func:`default_memory_bytes`);
#: - ``pids``: 4096 processes and threads (docker's ``--pids-limit`` has no default; 4096 is far
#:   above what a training job with data-loader workers starts, and far below a host's limit);
#: - ``disk_bytes``: :data:`mleaudit.sandbox.watchdog.DEFAULT_DISK_BYTES` for the output folders;
#: - ``log_bytes``: :data:`mleaudit.sandbox.logsink.DEFAULT_LOG_BYTES` for ``run.log``;
#: - ``cpus``: ``None``, every core of the host;
#: - ``stop_grace_s``: :data:`DEFAULT_STOP_GRACE_S`.
DEFAULT_LIMITS = MappingProxyType(
    {
        "time_limit_s": DEFAULT_TIME_LIMIT_S,
        "memory_fraction": DEFAULT_MEMORY_FRACTION,
        "pids": 4096,
        "disk_bytes": DEFAULT_DISK_BYTES,
        "log_bytes": DEFAULT_LOG_BYTES,
        "cpus": None,
        "stop_grace_s": DEFAULT_STOP_GRACE_S,
    }
)


#: Smallest memory limit accepted: below it not even the sandbox's own first processes start, and
#: the failure would look like a broken sandbox (``--memory 4`` meant as 4 GiB, say).
MIN_MEMORY_BYTES = 32 * 1024**2


def default_memory_bytes() -> int:
    """The default memory limit: ``DEFAULT_LIMITS["memory_fraction"]`` of the host's physical memory.

    Returns
    -------
    int
        Bytes (physical pages times the page size, from :func:`os.sysconf`), rounded down to
        a MiB; 4 GiB when the host does not say.
    """
    try:
        total = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError):
        total = 0
    if total <= 0:
        return 4 * 1024**3
    share = int(total * DEFAULT_LIMITS["memory_fraction"])
    return max(share - share % (1024**2), 1024**2)


_SHOWN = reprlib.Repr()
_SHOWN.maxlevel, _SHOWN.maxstring, _SHOWN.maxother = 3, 80, 80
_SHOWN.maxlist = _SHOWN.maxtuple = _SHOWN.maxdict = _SHOWN.maxset = 8


def _show(value: object) -> str:
    """``repr(value)`` for a message, cut short for long or deeply nested values."""
    try:
        return _SHOWN.repr(value)
    except Exception:  # noqa: BLE001 - a value that cannot be shown is named by its type
        return f"<{type(value).__name__}>"


def parse_size(value: object, *, field_name: str = "size") -> int:
    """Bytes from an integer or a string such as ``"512m"``, ``"4g"``, ``"1.5GiB"``.

    Parameters
    ----------
    value : int or str
        A byte count, or a number with a binary unit (k, m, g, t; powers of 1024).
    field_name : str
        Named in the error message.

    Returns
    -------
    int
        The size in bytes (> 0).

    Raises
    ------
    SpecError
        If the value is not a positive size.

    Examples
    --------
    >>> parse_size("512m")
    536870912
    >>> parse_size(1024)
    1024
    """
    if isinstance(value, bool):
        raise SpecError(f"{field_name}: expected a size such as 512m or 4g, got {_show(value)}")
    try:
        if isinstance(value, int):
            number = float(value)
        elif isinstance(value, str) and (match := _SIZE.match(value)):
            number = float(match.group(1)) * _SIZE_UNITS[match.group(2).lower()]
        else:
            raise SpecError(f"{field_name}: expected a size such as 512m or 4g, got {_show(value)}")
    except OverflowError:
        number = math.inf
    if number <= 0 or not math.isfinite(number):
        raise SpecError(f"{field_name}: must be positive and finite, got {_show(value)}")
    return int(number)


def parse_duration(value: object, *, field_name: str = "time_limit") -> float:
    """Seconds from a number or a string such as ``"90s"``, ``"30m"``, ``"2h"``.

    Raises
    ------
    SpecError
        If the value is not a positive duration.

    Examples
    --------
    >>> parse_duration("2h")
    7200.0
    >>> parse_duration(1.5)
    1.5
    """
    if isinstance(value, bool):
        raise SpecError(f"{field_name}: expected seconds or a duration such as 30m, got {_show(value)}")
    try:
        if isinstance(value, (int, float)):
            seconds = float(value)
        elif isinstance(value, str) and (match := _DURATION.match(value)):
            seconds = float(match.group(1)) * _DURATION_UNITS[match.group(2).lower()]
        else:
            raise SpecError(f"{field_name}: expected seconds or a duration such as 30m, got {_show(value)}")
    except OverflowError:
        seconds = math.inf
    if seconds <= 0 or not math.isfinite(seconds):
        raise SpecError(f"{field_name}: must be positive and finite, got {_show(value)}")
    return seconds


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
                    raise SpecError(f"{field_name}.device_ids: expected a list of device ids, got {_show(ids)}")
                return cls.parse(list(ids) if not isinstance(ids, str) else ids.split(","), field_name=field_name)
            count = value.get("count", "all")
            if not isinstance(count, (int, str)):
                raise SpecError(f"{field_name}.count: expected a number or 'all', got {_show(count)}")
            return cls.parse(count, field_name=field_name)
        if isinstance(value, bool):
            raise SpecError(f"{field_name}: expected 'all', a count or device ids, got {_show(value)}")
        if isinstance(value, int):
            if value <= 0:
                raise SpecError(f"{field_name}: the GPU count must be positive, got {value}")
            return cls(count=value)
        if isinstance(value, (list, tuple)):
            if not all(isinstance(v, (str, int)) and not isinstance(v, bool) for v in value):
                raise SpecError(f"{field_name}: device ids must be numbers or strings, got {_show(value)}")
            ids = tuple(str(v).strip() for v in value)
            if not ids or any(not v or "\0" in v for v in ids):
                raise SpecError(f"{field_name}: device ids must be non-empty, got {_show(list(value))}")
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
        raise SpecError(f"{field_name}: expected 'all', a count or device ids, got {_show(value)}")

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


@dataclass(frozen=True, slots=True, kw_only=True)
class SandboxSpec:
    """Everything a backend needs to run one agent.

    Attributes
    ----------
    command : tuple of str
        The agent's argv inside the sandbox.
    image : str or None
        Docker image (local tag or id); unused by the local backend.
    competition_id, agent_id : str or None
        Recorded in ``run.json`` (the audit reads ``competition_id`` from there).
    data_dir : pathlib.Path or None
        Host folder with the public competition data, read-only at ``/home/data``.
    agent_dir : pathlib.Path or None
        Host folder with the agent's files, read-only at ``/home/agent``.
    mounts : tuple of Mount
        Extra mounts.
    hidden : tuple of pathlib.Path
        Host paths that must stay unreachable (held-out answers).
    env : mapping of str to str
        Extra environment; the host environment is never passed through.
    gpus : GpuRequest or None
        GPUs to expose; ``None`` for none.
    resources : Resources
        Limits.
    network : NetworkPolicy
        ``none`` by default.
    time_limit_s : float or None
        Wall-clock limit in seconds; the sandbox is stopped when it passes (``None``: none;
        :meth:`with_defaults` sets MLE-bench's 24 hours).
    stop_grace_s : float
        Seconds between the SIGTERM sent to the agent's processes when the sandbox is stopped
        (time limit, disk limit) and the SIGKILL (YAML ``stop_grace``; default
        :data:`DEFAULT_STOP_GRACE_S`).
    user : str or None
        ``uid[:gid]`` the agent runs as (default, both backends: the calling user, or, when the
        caller is root, a uid drawn for the run from :data:`mleaudit.sandbox.run_user.RUN_UID_RANGE`).
    workdir : str
        Working directory inside the sandbox.
    """

    command: tuple[str, ...]
    image: str | None = None
    competition_id: str | None = None
    agent_id: str | None = None
    data_dir: Path | None = None
    agent_dir: Path | None = None
    mounts: tuple[Mount, ...] = ()
    hidden: tuple[Path, ...] = ()
    env: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    gpus: GpuRequest | None = None
    resources: Resources = field(default_factory=Resources)
    network: NetworkPolicy = field(default_factory=NetworkPolicy)
    time_limit_s: float | None = None
    user: str | None = None
    workdir: str = "/home"
    stop_grace_s: float = DEFAULT_STOP_GRACE_S

    def with_defaults(self) -> "SandboxSpec":
        """This spec with its resources resolved (:meth:`Resources.with_defaults`) and, when none
        was given, MLE-bench's 24-hour time limit (``DEFAULT_LIMITS["time_limit_s"]``)."""
        import dataclasses

        return dataclasses.replace(
            self,
            resources=self.resources.with_defaults(),
            time_limit_s=self.time_limit_s if self.time_limit_s is not None else DEFAULT_LIMITS["time_limit_s"],
        )

    def __post_init__(self) -> None:
        object.__setattr__(self, "env", MappingProxyType(dict(self.env)))
        problems = _check_spec(self)
        if problems:
            raise SpecError("invalid sandbox spec:\n  " + "\n  ".join(problems))

    def to_dict(self) -> dict[str, Any]:
        """The spec as plain JSON data (recorded in ``run.json``)."""
        return {
            "command": list(self.command),
            "image": self.image,
            "competition": self.competition_id,
            "agent": self.agent_id,
            "data": str(self.data_dir) if self.data_dir else None,
            "agent_dir": str(self.agent_dir) if self.agent_dir else None,
            "mounts": [m.to_dict() for m in self.mounts],
            "hide": [str(p) for p in self.hidden],
            "env": dict(sorted(self.env.items())),
            "gpus": self.gpus.to_dict() if self.gpus else None,
            "resources": self.resources.to_dict(),
            "network": self.network.to_dict(),
            "time_limit": self.time_limit_s,
            "user": self.user,
            "workdir": self.workdir,
            "stop_grace": self.stop_grace_s,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, source: str = "sandbox spec", base_dir: Path | None = None) -> "SandboxSpec":
        """Build a spec from its YAML/JSON form, collecting every problem before raising.

        Parameters
        ----------
        data : mapping
            The keys listed in the module docstring.
        source : str
            Named in error messages (the spec file).
        base_dir : pathlib.Path, optional
            Relative host paths are resolved against it (the spec file's folder); default the
            current directory.

        Raises
        ------
        SpecError
            On unknown keys, wrong types or invalid values; the message lists all of them.
        """
        if not isinstance(data, Mapping):
            raise SpecError(f"{source}: expected a mapping at the top level, got {type(data).__name__}")
        base = base_dir or Path.cwd()
        problems: list[str] = []
        unknown = sorted(set(map(str, data)) - _KEYS)
        if unknown:
            problems.append(f"unknown keys {unknown}; allowed: {sorted(_KEYS)}")
        kwargs: dict[str, Any] = {}

        def attempt(key: str, convert) -> None:
            if key in data and data[key] is not None:
                try:
                    kwargs[key] = convert(data[key])
                except SpecError as exc:
                    problems.append(str(exc))
                except (TypeError, ValueError, OverflowError, RecursionError, RuntimeError) as exc:  # unforeseen values
                    problems.append(f"{key}: not a usable value ({type(exc).__name__}), got {_show(data[key])}")

        def host_path(value: object, name: str) -> Path:
            if not isinstance(value, (str, os.PathLike)) or not str(value):
                raise SpecError(f"{name}: expected a path, got {_show(value)}")
            if "\0" in str(value) or len(str(value)) > _MAX_PATH:
                raise SpecError(f"{name}: expected a path (no NUL byte, at most {_MAX_PATH} characters), got {_show(value)}")
            try:
                path = Path(value).expanduser()
            except RuntimeError:  # ~user with no such user
                raise SpecError(f"{name}: cannot expand the home folder in {_show(value)}") from None
            return (path if path.is_absolute() else base / path).absolute()

        def command(value: object) -> tuple[str, ...]:
            if isinstance(value, str) and value.strip() and "\0" not in value:
                return ("/bin/sh", "-c", value)
            if isinstance(value, list) and value and all(isinstance(v, str) and "\0" not in v for v in value):
                return tuple(value)
            raise SpecError(f"command: expected a non-empty string or list of strings (no NUL byte), got {_show(value)}")

        def text(name: str):
            def convert(value: object) -> str:
                if not isinstance(value, str) or not value.strip() or "\0" in value:
                    raise SpecError(f"{name}: expected a non-empty string, got {_show(value)}")
                return value.strip()

            return convert

        def mounts(value: object) -> tuple[Mount, ...]:
            if not isinstance(value, list):
                raise SpecError(f"mounts: expected a list, got {type(value).__name__}")
            found = []
            for i, item in enumerate(value):
                name = f"mounts[{i}]"
                if not isinstance(item, Mapping):
                    raise SpecError(f"{name}: expected a mapping with source and target, got {_show(item)}")
                extra = sorted(set(map(str, item)) - _MOUNT_KEYS)
                if extra:
                    raise SpecError(f"{name}: unknown keys {extra}; allowed: {sorted(_MOUNT_KEYS)}")
                if "source" not in item or "target" not in item:
                    raise SpecError(f"{name}: needs source and target")
                target = item["target"]
                if not isinstance(target, str) or "\0" in target or len(target) > _MAX_PATH:
                    raise SpecError(f"{name}.target: expected an absolute path, got {_show(target)}")
                read_only = item.get("read_only", True)
                if not isinstance(read_only, bool):
                    raise SpecError(f"{name}.read_only: expected true or false, got {_show(read_only)}")
                found.append(Mount(source=host_path(item["source"], f"{name}.source"), target=target, read_only=read_only))
            return tuple(found)

        def hide(value: object) -> tuple[Path, ...]:
            if not isinstance(value, list):
                raise SpecError(f"hide: expected a list of paths, got {type(value).__name__}")
            return tuple(host_path(v, f"hide[{i}]") for i, v in enumerate(value))

        def env(value: object) -> dict[str, str]:
            if not isinstance(value, Mapping):
                raise SpecError(f"env: expected a mapping of names to strings, got {type(value).__name__}")
            out = {}
            for key, val in value.items():
                if isinstance(val, bool) or not isinstance(val, (str, int, float)) or "\0" in str(val):
                    raise SpecError(f"env.{_show(key)}: expected a string, got {_show(val)}")
                out[str(key)] = str(val)
            return out

        def positive(name: str, number: object, kinds: tuple[type, ...], what: str) -> None:
            if number is None:
                return
            ok = not isinstance(number, bool) and isinstance(number, kinds)
            try:
                ok = ok and number > 0 and math.isfinite(number)
            except OverflowError:
                ok = False
            if not ok:
                raise SpecError(f"{name}: expected {what}, got {_show(number)}")

        def resources(value: object) -> Resources:
            if not isinstance(value, Mapping):
                raise SpecError(f"resources: expected a mapping, got {type(value).__name__}")
            extra = sorted(set(map(str, value)) - _RESOURCE_KEYS)
            if extra:
                raise SpecError(f"resources: unknown keys {extra}; allowed: {sorted(_RESOURCE_KEYS)}")
            cpus = value.get("cpus")
            positive("resources.cpus", cpus, (int, float), "a positive number")
            pids = value.get("pids")
            positive("resources.pids", pids, (int,), "a positive integer")
            def size(key: str) -> int | None:
                return parse_size(value[key], field_name=f"resources.{key}") if value.get(key) is not None else None

            return Resources(
                cpus=float(cpus) if cpus is not None else None,
                memory_bytes=size("memory"),
                shm_bytes=size("shm"),
                pids=pids,
                disk_bytes=size("disk"),
                log_bytes=size("log"),
            )

        def network(value: object) -> NetworkPolicy:
            if value == "none":
                return NetworkPolicy()
            if isinstance(value, Mapping):
                extra = sorted(set(map(str, value)) - {"allow", "mode"})
                if extra:
                    raise SpecError(f"network: unknown keys {extra}; allowed: ['allow', 'mode']")
                allow = value.get("allow") or []
                if not isinstance(allow, list) or not all(isinstance(a, str) for a in allow):
                    raise SpecError(f"network.allow: expected a list of host names, got {_show(allow)}")
                mode = value.get("mode", "allowlist" if allow else "none")
                if not isinstance(mode, str) or mode not in ("none", "allowlist") or (mode == "none") != (not allow):
                    raise SpecError(
                        f"network.mode: {_show(mode)} does not fit allow={_show(allow)} (none: no hosts; allowlist: some)"
                    )
                return NetworkPolicy(allow=tuple(a.strip() for a in allow))
            raise SpecError(f"network: expected 'none' or {{allow: [hosts]}}, got {_show(value)}")

        def user(value: object) -> str:
            if isinstance(value, bool) or not isinstance(value, (str, int)) or not _USER.match(str(value)):
                raise SpecError(f"user: expected uid or uid:gid (numbers), got {_show(value)}")
            return str(value)

        attempt("command", command)
        attempt("image", text("image"))
        attempt("competition", text("competition"))
        attempt("agent", text("agent"))
        attempt("data", lambda v: host_path(v, "data"))
        attempt("agent_dir", lambda v: host_path(v, "agent_dir"))
        attempt("mounts", mounts)
        attempt("hide", hide)
        attempt("env", env)
        attempt("gpus", lambda v: GpuRequest.parse(v))
        attempt("resources", resources)
        attempt("network", network)
        attempt("time_limit", lambda v: parse_duration(v))
        attempt("stop_grace", lambda v: parse_duration(v, field_name="stop_grace"))
        attempt("user", user)
        attempt("workdir", text("workdir"))
        if "command" not in data:
            problems.append("command: required")
        elif data["command"] is None:
            problems.append("command: required, got null")
        if problems:
            raise SpecError(f"{source}: invalid sandbox spec:\n  " + "\n  ".join(problems))
        renamed = {"competition": "competition_id", "agent": "agent_id", "data": "data_dir", "hide": "hidden",
                   "time_limit": "time_limit_s", "stop_grace": "stop_grace_s"}  # fmt: skip
        try:
            return cls(**{renamed.get(k, k): v for k, v in kwargs.items()})
        except SpecError as exc:
            raise SpecError(f"{source}: {exc}") from None
        except (TypeError, ValueError, OverflowError) as exc:  # a value no check foresaw
            raise SpecError(f"{source}: invalid sandbox spec: {type(exc).__name__}: {str(exc)[:200]}") from None


def _check_spec(spec: SandboxSpec) -> list[str]:
    """Every problem of a spec built in code (``from_dict`` has already checked types)."""
    problems = []
    if not spec.command or not all(isinstance(a, str) and a for a in spec.command):
        problems.append("command: expected a non-empty argv of non-empty strings")
    reserved = set(AGENT_PATHS.values())
    for i, mount in enumerate(spec.mounts):
        target = PurePosixPath(mount.target)
        if not target.is_absolute() or ".." in target.parts:
            problems.append(f"mounts[{i}].target: expected an absolute path without '..', got {_show(mount.target)}")
        elif str(target) in reserved or str(target) in ("/", "/home", "/proc", "/dev", "/tmp"):
            problems.append(f"mounts[{i}].target: {mount.target} is reserved by the sandbox")
        if not mount.source.is_absolute():
            problems.append(f"mounts[{i}].source: expected an absolute host path, got {mount.source}")
    for name in spec.env:
        if not _ENV_NAME.match(name):
            problems.append(f"env: {_show(name)} is not a valid variable name")
    for entry in spec.network.allow:
        port = entry.partition(":")[2]
        if not _ALLOW.match(entry) or (port and not 0 < int(port) < 65536):
            problems.append(f"network.allow: {_show(entry)} is not a host name, *.domain or host:port")
    if spec.gpus is not None and spec.gpus.count is not None and spec.gpus.count <= 0:
        problems.append(f"gpus: the GPU count must be positive, got {spec.gpus.count}")
    if spec.user is not None and not _USER.match(spec.user):
        problems.append(f"user: expected uid or uid:gid (numbers), got {_show(spec.user)}")
    if not PurePosixPath(spec.workdir).is_absolute():
        problems.append(f"workdir: expected an absolute path, got {_show(spec.workdir)}")
    if spec.time_limit_s is not None and not (spec.time_limit_s > 0 and math.isfinite(spec.time_limit_s)):
        problems.append(f"time_limit: must be positive, got {_show(spec.time_limit_s)}")
    grace = spec.stop_grace_s
    if isinstance(grace, bool) or not isinstance(grace, (int, float)) or not (grace >= 0 and math.isfinite(grace)):
        problems.append(f"stop_grace: expected seconds (zero or more), got {_show(grace)}")
    res = spec.resources
    for name, number in (("memory", res.memory_bytes), ("shm", res.shm_bytes), ("pids", res.pids),
                         ("disk", res.disk_bytes), ("log", res.log_bytes)):  # fmt: skip
        if number is not None and (isinstance(number, bool) or not isinstance(number, int) or number <= 0):
            problems.append(f"resources.{name}: expected a positive integer, got {_show(number)}")
    if res.cpus is not None and (isinstance(res.cpus, bool) or not isinstance(res.cpus, (int, float))
                                 or not (res.cpus > 0 and math.isfinite(res.cpus))):  # fmt: skip
        problems.append(f"resources.cpus: expected a positive number, got {_show(res.cpus)}")
    if isinstance(res.memory_bytes, int) and 0 < res.memory_bytes < MIN_MEMORY_BYTES:
        problems.append(f"resources.memory: {res.memory_bytes} bytes is too little to start a sandbox "
                        f"(at least {MIN_MEMORY_BYTES // 1024**2} MiB; sizes take units: 4g, 512m)")  # fmt: skip
    return problems


def load_sandbox_spec(path: str | os.PathLike[str]) -> SandboxSpec:
    """Read a spec from a YAML file (``yaml.safe_load``); relative paths are resolved against its folder.

    The file is untrusted input: at most :data:`MAX_SPEC_BYTES` bytes of UTF-8 text, YAML
    nested at most :data:`MAX_SPEC_DEPTH` deep and holding at most :data:`MAX_SPEC_NODES`
    values once aliases are expanded. An empty file is a spec without a command.

    Raises
    ------
    SpecError
        If the file cannot be read, is not UTF-8 text or YAML within those bounds, or the spec
        is invalid; the message names the file and, for a bad value, the key.
    """
    path = Path(path)
    try:
        with path.open("rb") as handle:
            raw = handle.read(MAX_SPEC_BYTES + 1)
    except OSError as exc:
        raise SpecError(f"{path}: cannot read the sandbox spec: {exc.strerror or exc}") from None
    if len(raw) > MAX_SPEC_BYTES:
        raise SpecError(f"{path}: not a sandbox spec: larger than {MAX_SPEC_BYTES:,} bytes")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise SpecError(f"{path}: not UTF-8 text (byte {exc.start}: {raw[exc.start:exc.start + 1]!r})") from None
    from mleaudit.grading.untrusted_yaml import check_yaml_shape

    try:
        # Depth, alias expansion and repeated keys first (PyYAML's own recursion and "billion laughs").
        problem = check_yaml_shape(text, max_depth=MAX_SPEC_DEPTH, max_nodes=MAX_SPEC_NODES)
        data = yaml.safe_load(text) if problem is None else None
    except yaml.YAMLError as exc:
        raise SpecError(f"{path}: not valid YAML: {str(exc)[:500]}") from None
    except Exception as exc:  # noqa: BLE001 - PyYAML's constructors fail in many ways on hostile
        # scalars (an integer of 5,000 digits, `!!timestamp nope`); all are a spec that cannot be read.
        raise SpecError(f"{path}: not a usable sandbox spec: {type(exc).__name__}: {str(exc)[:200]}") from None
    if problem is not None:
        raise SpecError(f"{path}: not a usable sandbox spec: YAML with {problem}")
    return SandboxSpec.from_dict(data if data is not None else {}, source=str(path), base_dir=path.parent.absolute())
