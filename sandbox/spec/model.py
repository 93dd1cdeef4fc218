"""The spec itself: :class:`SandboxSpec`, its plain form both ways, and the checks every spec passes.

A spec built in code is checked when it is created (``__post_init__``); one read from YAML or
JSON (:meth:`SandboxSpec.from_dict`) has every key's type and value checked first, and every
problem is listed in one :class:`~mleaudit.sandbox.errors.SpecError`.
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from types import MappingProxyType
from typing import Any, Mapping

from mleaudit.sandbox.errors import SpecError
from mleaudit.sandbox.spec.defaults import AGENT_PATHS, DEFAULT_LIMITS, DEFAULT_STOP_GRACE_S, MIN_MEMORY_BYTES
from mleaudit.sandbox.spec.parts import GpuRequest, Mount, NetworkPolicy, Resources
from mleaudit.sandbox.spec.values import parse_duration, parse_size, show_value

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
#: Longest host path accepted (Linux's PATH_MAX).
_MAX_PATH = 4096


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
            The keys listed in :mod:`mleaudit.sandbox.spec`.
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
                    problems.append(f"{key}: not a usable value ({type(exc).__name__}), got {show_value(data[key])}")

        def host_path(value: object, name: str) -> Path:
            if not isinstance(value, (str, os.PathLike)) or not str(value):
                raise SpecError(f"{name}: expected a path, got {show_value(value)}")
            if "\0" in str(value) or len(str(value)) > _MAX_PATH:
                raise SpecError(f"{name}: expected a path (no NUL byte, at most {_MAX_PATH} characters), got {show_value(value)}")
            try:
                path = Path(value).expanduser()
            except RuntimeError:  # ~user with no such user
                raise SpecError(f"{name}: cannot expand the home folder in {show_value(value)}") from None
            return (path if path.is_absolute() else base / path).absolute()

        def command(value: object) -> tuple[str, ...]:
            if isinstance(value, str) and value.strip() and "\0" not in value:
                return ("/bin/sh", "-c", value)
            if isinstance(value, list) and value and all(isinstance(v, str) and "\0" not in v for v in value):
                return tuple(value)
            raise SpecError(f"command: expected a non-empty string or list of strings (no NUL byte), got {show_value(value)}")

        def text(name: str):
            def convert(value: object) -> str:
                if not isinstance(value, str) or not value.strip() or "\0" in value:
                    raise SpecError(f"{name}: expected a non-empty string, got {show_value(value)}")
                return value.strip()

            return convert

        def mounts(value: object) -> tuple[Mount, ...]:
            if not isinstance(value, list):
                raise SpecError(f"mounts: expected a list, got {type(value).__name__}")
            found = []
            for i, item in enumerate(value):
                name = f"mounts[{i}]"
                if not isinstance(item, Mapping):
                    raise SpecError(f"{name}: expected a mapping with source and target, got {show_value(item)}")
                extra = sorted(set(map(str, item)) - _MOUNT_KEYS)
                if extra:
                    raise SpecError(f"{name}: unknown keys {extra}; allowed: {sorted(_MOUNT_KEYS)}")
                if "source" not in item or "target" not in item:
                    raise SpecError(f"{name}: needs source and target")
                target = item["target"]
                if not isinstance(target, str) or "\0" in target or len(target) > _MAX_PATH:
                    raise SpecError(f"{name}.target: expected an absolute path, got {show_value(target)}")
                read_only = item.get("read_only", True)
                if not isinstance(read_only, bool):
                    raise SpecError(f"{name}.read_only: expected true or false, got {show_value(read_only)}")
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
                    raise SpecError(f"env.{show_value(key)}: expected a string, got {show_value(val)}")
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
                raise SpecError(f"{name}: expected {what}, got {show_value(number)}")

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
                    raise SpecError(f"network.allow: expected a list of host names, got {show_value(allow)}")
                mode = value.get("mode", "allowlist" if allow else "none")
                if not isinstance(mode, str) or mode not in ("none", "allowlist") or (mode == "none") != (not allow):
                    raise SpecError(
                        f"network.mode: {show_value(mode)} does not fit allow={show_value(allow)} (none: no hosts; allowlist: some)"
                    )
                return NetworkPolicy(allow=tuple(a.strip() for a in allow))
            raise SpecError(f"network: expected 'none' or {{allow: [hosts]}}, got {show_value(value)}")

        def user(value: object) -> str:
            if isinstance(value, bool) or not isinstance(value, (str, int)) or not _USER.match(str(value)):
                raise SpecError(f"user: expected uid or uid:gid (numbers), got {show_value(value)}")
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
            problems.append(f"mounts[{i}].target: expected an absolute path without '..', got {show_value(mount.target)}")
        elif str(target) in reserved or str(target) in ("/", "/home", "/proc", "/dev", "/tmp"):
            problems.append(f"mounts[{i}].target: {mount.target} is reserved by the sandbox")
        if not mount.source.is_absolute():
            problems.append(f"mounts[{i}].source: expected an absolute host path, got {mount.source}")
    for name in spec.env:
        if not _ENV_NAME.match(name):
            problems.append(f"env: {show_value(name)} is not a valid variable name")
    for entry in spec.network.allow:
        port = entry.partition(":")[2]
        if not _ALLOW.match(entry) or (port and not 0 < int(port) < 65536):
            problems.append(f"network.allow: {show_value(entry)} is not a host name, *.domain or host:port")
    if spec.gpus is not None and spec.gpus.count is not None and spec.gpus.count <= 0:
        problems.append(f"gpus: the GPU count must be positive, got {spec.gpus.count}")
    if spec.user is not None and not _USER.match(spec.user):
        problems.append(f"user: expected uid or uid:gid (numbers), got {show_value(spec.user)}")
    if not PurePosixPath(spec.workdir).is_absolute():
        problems.append(f"workdir: expected an absolute path, got {show_value(spec.workdir)}")
    if spec.time_limit_s is not None and not (spec.time_limit_s > 0 and math.isfinite(spec.time_limit_s)):
        problems.append(f"time_limit: must be positive, got {show_value(spec.time_limit_s)}")
    grace = spec.stop_grace_s
    if isinstance(grace, bool) or not isinstance(grace, (int, float)) or not (grace >= 0 and math.isfinite(grace)):
        problems.append(f"stop_grace: expected seconds (zero or more), got {show_value(grace)}")
    res = spec.resources
    for name, number in (("memory", res.memory_bytes), ("shm", res.shm_bytes), ("pids", res.pids),
                         ("disk", res.disk_bytes), ("log", res.log_bytes)):  # fmt: skip
        if number is not None and (isinstance(number, bool) or not isinstance(number, int) or number <= 0):
            problems.append(f"resources.{name}: expected a positive integer, got {show_value(number)}")
    if res.cpus is not None and (isinstance(res.cpus, bool) or not isinstance(res.cpus, (int, float))
                                 or not (res.cpus > 0 and math.isfinite(res.cpus))):  # fmt: skip
        problems.append(f"resources.cpus: expected a positive number, got {show_value(res.cpus)}")
    if isinstance(res.memory_bytes, int) and 0 < res.memory_bytes < MIN_MEMORY_BYTES:
        problems.append(f"resources.memory: {res.memory_bytes} bytes is too little to start a sandbox "
                        f"(at least {MIN_MEMORY_BYTES // 1024**2} MiB; sizes take units: 4g, 512m)")  # fmt: skip
    return problems
