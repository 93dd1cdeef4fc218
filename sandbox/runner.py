"""Running one agent in a sandbox and turning what it leaves into an MLE-bench run dir.

:func:`run_sandbox` is the backend-independent part: it checks the spec's host paths, stages
the writable folders, serves the validation endpoint (and the allow-list proxy) on Unix sockets,
asks a :class:`Runner` backend to execute an :class:`ExecutionPlan`, then finalises the run dir
(see :mod:`sandbox.extract`) and writes ``run.json``. Backends (:mod:`sandbox.local`,
:mod:`sandbox.docker`) only translate the plan into bubblewrap arguments or a docker container.

The held-out answers never enter the plan: the spec's ``hidden`` paths are checked against
every bind, a bind inside one is refused, and one that contains one gets it covered by an
empty tmpfs (``ExecutionPlan.masks``).
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path, PurePosixPath
from types import MappingProxyType
from typing import Any, Mapping, Protocol, runtime_checkable

from audit.run import RunLayout
from sandbox.errors import RunDirError, SandboxError, SpecError
from sandbox.extract import RunDirStage, finalize_run_dir
from sandbox.proxy import AllowListProxy
from sandbox.spec import AGENT_PATHS, SandboxSpec
from sandbox.validation import VALIDATION_CALLS_FILE, ValidationServer, ValidationStats, Validator

__all__ = [
    "Bind",
    "ExecutionPlan",
    "Execution",
    "Runner",
    "SandboxResult",
    "run_sandbox",
    "plan_masks",
    "ASSETS_DIR",
    "PROXY_PORT",
]

logger = logging.getLogger(__name__)

#: Files bound into every sandbox (the validation helper, the loopback forwarder).
ASSETS_DIR = Path(__file__).resolve().parent / "assets"
#: Loopback port of the in-sandbox forwarder to the allow-list proxy.
PROXY_PORT = 3128
#: Where the proxy socket appears inside the sandbox.
PROXY_SOCKET = f"{AGENT_PATHS['support']}/proxy.sock"
FORWARDER = f"{AGENT_PATHS['support']}/forward.py"
#: The environment every agent gets; the host's is never passed through (it may hold secrets).
BASE_ENV = MappingProxyType(
    {
        "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        "HOME": "/tmp",
        "LANG": "C.UTF-8",
        "PYTHONDONTWRITEBYTECODE": "1",
        "DATA_DIR": AGENT_PATHS["data"],
        "SUBMISSION_DIR": AGENT_PATHS["submission"],
        "LOGS_DIR": AGENT_PATHS["logs"],
        "CODE_DIR": AGENT_PATHS["code"],
        "AGENT_DIR": AGENT_PATHS["agent"],
        "VALIDATE_SOCKET": AGENT_PATHS["validate_socket"],
    }
)


@dataclass(frozen=True, slots=True, kw_only=True)
class Bind:
    """A host path bound into the sandbox.

    Attributes
    ----------
    source : pathlib.Path
        Host path (a folder, a file or a Unix socket).
    target : str
        Path inside the sandbox.
    read_only : bool
        Whether the sandbox may write through it.
    """

    source: Path
    target: str
    read_only: bool = True


@dataclass(frozen=True, slots=True, kw_only=True)
class ExecutionPlan:
    """What a backend must run, fully resolved.

    Attributes
    ----------
    spec : SandboxSpec
        The spec (image, GPUs, resources, user, time limit).
    run_id : str
        Names the container or process.
    binds : tuple of Bind
        Every host path to make visible, in order (data, agent, outputs, sockets, helper, extras).
    masks : tuple of str
        Sandbox paths to cover with an empty tmpfs (hidden host paths inside a bind).
    env : mapping of str to str
        The complete environment inside the sandbox.
    command : tuple of str
        The argv to execute (the spec's, wrapped to start the forwarder for an allow-list).
    log_path : pathlib.Path
        ``run.log``: the agent's stdout and stderr, streamed.
    """

    spec: SandboxSpec
    run_id: str
    binds: tuple[Bind, ...]
    masks: tuple[str, ...]
    env: Mapping[str, str]
    command: tuple[str, ...]
    log_path: Path


@dataclass(frozen=True, slots=True, kw_only=True)
class Execution:
    """What a backend reports about one execution.

    Attributes
    ----------
    exit_code : int or None
        The agent's exit status (``None`` if it never started or was killed at the time limit).
    timed_out : bool
        Killed at the wall-clock limit.
    limits_hit : tuple of str
        Limits known to have stopped the agent: ``time``, ``memory`` (docker OOM kill), ``cpu``
        (local CPU-time rlimit).
    exit_signal : int or None
        The signal that ended the agent, when the backend can tell.
    container_id, image_digest : str or None
        Docker only.
    gpus_visible : tuple of str
        GPUs handed to the sandbox (ids, or ``all``).
    isolation : mapping
        Backend details recorded in ``run.json`` (namespaces, user, limits applied).
    """

    exit_code: int | None
    timed_out: bool = False
    limits_hit: tuple[str, ...] = ()
    exit_signal: int | None = None
    container_id: str | None = None
    image_digest: str | None = None
    gpus_visible: tuple[str, ...] = ()
    isolation: Mapping[str, Any] = field(default_factory=dict)


@runtime_checkable
class Runner(Protocol):
    """A sandbox backend.

    ``name`` is recorded in ``run.json``. :meth:`sandbox_owner` says which host uid/gid the
    agent's files will be written as (the staging folders are handed to it), :meth:`execute`
    runs the plan to the end (or the time limit) and raises :class:`~sandbox.errors.SandboxError`
    subclasses for problems it can name (no bubblewrap, missing image, no GPU runtime).
    """

    name: str

    def sandbox_owner(self, spec: SandboxSpec) -> tuple[int, int] | None: ...

    def execute(self, plan: ExecutionPlan) -> Execution: ...


@dataclass(frozen=True, slots=True, kw_only=True)
class SandboxResult:
    """The outcome of :func:`run_sandbox`, as recorded in ``run.json``.

    Attributes
    ----------
    run_dir : pathlib.Path
        The MLE-bench-layout run dir written.
    status : str
        ``completed`` (the agent exited by itself), ``timed_out`` or ``error`` (the sandbox
        could not run it; ``error`` says why).
    exit_code : int or None
        The agent's exit status.
    duration_s : float
        Wall-clock seconds from start to end.
    validation : ValidationStats
        Validation endpoint calls.
    events : tuple of dict
        What the host noticed (refused outputs, a spoofed calls log, denied network requests).
    """

    run_dir: Path
    run_id: str
    backend: str
    status: str
    exit_code: int | None
    timed_out: bool
    limits_hit: tuple[str, ...]
    error: str | None
    started_at: str
    ended_at: str
    duration_s: float
    run_log: Path
    submission: Path | None
    container_id: str | None
    image_digest: str | None
    gpus_visible: tuple[str, ...]
    validation: ValidationStats
    network: Mapping[str, Any]
    events: tuple[Mapping[str, Any], ...]

    @property
    def run_json(self) -> Path:
        return self.run_dir / RunLayout.RUN_META[0]


def _within(path: str, parent: str) -> bool:
    return path == parent or path.startswith(parent.rstrip(os.sep) + os.sep)


def plan_masks(binds: tuple[Bind, ...] | list[Bind], hidden: tuple[Path, ...] | list[Path]) -> tuple[str, ...]:
    """Sandbox paths that must be covered so that no hidden host path is reachable through a bind.

    Parameters
    ----------
    binds : sequence of Bind
        Everything bound into the sandbox (a backend adds its own system binds).
    hidden : sequence of pathlib.Path
        Host paths that must stay out of reach.

    Returns
    -------
    tuple of str
        For each hidden path inside a bound folder, the matching path inside the sandbox.

    Raises
    ------
    SpecError
        If a bind's source is a hidden path or lies inside one (nothing can cover it).

    Examples
    --------
    >>> plan_masks([Bind(source=Path("/srv"), target="/mnt")], [Path("/srv/x/private")])
    ('/mnt/x/private',)
    """
    masks: list[str] = []
    real_hidden = [(h, os.path.realpath(h)) for h in hidden]
    for bind in binds:
        source = os.path.realpath(bind.source)
        for given, real in real_hidden:
            if _within(source, real):
                raise SpecError(
                    f"bind {bind.source} -> {bind.target} would expose {given}, which must stay out of the sandbox"
                )
            if _within(real, source):
                rel = os.path.relpath(real, source)
                masks.append(str(PurePosixPath(bind.target) / PurePosixPath(*Path(rel).parts)))
    return tuple(dict.fromkeys(masks))


def _check_host_paths(spec: SandboxSpec) -> None:
    problems = []
    if spec.data_dir is not None and not spec.data_dir.is_dir():
        problems.append(f"data: {spec.data_dir} is not a folder")
    if spec.agent_dir is not None and not spec.agent_dir.is_dir():
        problems.append(f"agent_dir: {spec.agent_dir} is not a folder")
    for i, mount in enumerate(spec.mounts):
        if not mount.source.exists():
            problems.append(f"mounts[{i}].source: {mount.source} does not exist")
    if problems:
        raise SpecError("sandbox spec names missing host paths:\n  " + "\n  ".join(problems))


def _prepare_run_dir(run_dir: Path) -> None:
    if run_dir.exists():
        if not run_dir.is_dir():
            raise RunDirError(f"--run-dir {run_dir}: exists and is not a folder")
        if any(run_dir.iterdir()):
            raise RunDirError(f"--run-dir {run_dir}: exists and is not empty; choose a new folder")
    try:
        run_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise RunDirError(f"--run-dir {run_dir}: cannot create it: {exc.strerror or exc}") from None


def _command(spec: SandboxSpec) -> tuple[str, ...]:
    if not spec.network.allow:
        return spec.command
    # Start the loopback forwarder (it returns once its port is bound), then become the agent.
    wrapper = f'python3 {FORWARDER} {PROXY_PORT} {PROXY_SOCKET} && exec "$@"'
    return ("/bin/sh", "-c", wrapper, "sh", *spec.command)


def _environment(spec: SandboxSpec, run_id: str) -> dict[str, str]:
    env = dict(BASE_ENV)
    env["RUN_ID"] = run_id
    if spec.competition_id:
        env["COMPETITION_ID"] = spec.competition_id
    if spec.time_limit_s:
        env["TIME_LIMIT_SECS"] = str(int(spec.time_limit_s))
    if spec.network.allow:
        proxy = f"http://127.0.0.1:{PROXY_PORT}"
        env.update({"HTTP_PROXY": proxy, "HTTPS_PROXY": proxy, "http_proxy": proxy, "https_proxy": proxy,
                    "NO_PROXY": "", "no_proxy": ""})  # fmt: skip
    env.update(spec.env)
    return env


def _now() -> datetime:
    return datetime.now(timezone.utc)


def run_sandbox(
    spec: SandboxSpec,
    run_dir: str | os.PathLike[str],
    *,
    runner: Runner,
    validator: Validator | None = None,
    run_id: str | None = None,
) -> SandboxResult:
    """Run an agent in a sandbox and write an MLE-bench-layout run dir.

    Parameters
    ----------
    spec : SandboxSpec
        What to run and the limits.
    run_dir : path-like
        A new or empty folder; it receives ``submission/``, ``logs/``, ``code/``, ``run.log``
        and ``run.json``.
    runner : Runner
        The backend (:class:`~sandbox.local.BubblewrapRunner`, :class:`~sandbox.docker.DockerRunner`).
    validator : Validator, optional
        Checks posted submissions; when given, the endpoint is served at ``/home/validate.sock``.
    run_id : str, optional
        Default: the run dir's name.

    Returns
    -------
    SandboxResult
        Also written to ``run.json``.

    Raises
    ------
    RunDirError
        If the run dir exists and is not empty, or cannot be created.
    SandboxError
        If the backend cannot run the agent (missing host paths, no bubblewrap, missing image,
        no GPU runtime). ``run.json`` is written first, with ``status: error`` and the message.
    """
    run_dir = Path(run_dir).absolute()
    _prepare_run_dir(run_dir)
    run_id = run_id or run_dir.name
    stage = RunDirStage.create(run_dir)
    sockets = Path(tempfile.mkdtemp(prefix="mleaudit-"))
    started = _now()
    clock = time.monotonic()
    execution = Execution(exit_code=None)
    error: SandboxError | None = None
    validation_server: ValidationServer | None = None
    proxy: AllowListProxy | None = None
    try:
        try:
            _check_host_paths(spec)
            stage.hand_over(runner.sandbox_owner(spec))
            binds: list[Bind] = []
            if spec.data_dir is not None:
                binds.append(Bind(source=spec.data_dir, target=AGENT_PATHS["data"]))
            if spec.agent_dir is not None:
                binds.append(Bind(source=spec.agent_dir, target=AGENT_PATHS["agent"]))
            for name, host in stage.writable.items():
                binds.append(Bind(source=host, target=AGENT_PATHS[name], read_only=False))
            if validator is not None:
                validation_server = ValidationServer(sockets / "validate.sock", validator, stage.calls_log)
                validation_server.start()
                binds.append(Bind(source=validation_server.socket_path, target=AGENT_PATHS["validate_socket"]))
            binds.append(Bind(source=ASSETS_DIR / "validate_submission.sh", target=AGENT_PATHS["validate_helper"]))
            if spec.network.allow:
                proxy = AllowListProxy(sockets / "proxy.sock", spec.network.allow)
                proxy.start()
                binds.append(Bind(source=proxy.socket_path, target=PROXY_SOCKET))
                binds.append(Bind(source=ASSETS_DIR / "forward.py", target=FORWARDER))
            binds.extend(Bind(source=m.source, target=m.target, read_only=m.read_only) for m in spec.mounts)
            plan = ExecutionPlan(
                spec=spec,
                run_id=run_id,
                binds=tuple(binds),
                masks=plan_masks(binds, spec.hidden),
                env=MappingProxyType(_environment(spec, run_id)),
                command=_command(spec),
                log_path=run_dir / RunLayout.RUN_LOG,
            )
            logger.info("running %s with %s in %s", run_id, runner.name, run_dir)
            execution = runner.execute(plan)
        except SandboxError as exc:
            error = exc
            logger.warning("sandbox run %s failed: %s", run_id, exc)
    finally:
        if validation_server is not None:
            validation_server.stop()
        if proxy is not None:
            proxy.stop()
        shutil.rmtree(sockets, ignore_errors=True)
    ended = _now()
    duration = round(time.monotonic() - clock, 3)
    stats = validation_server.stats if validation_server is not None else ValidationStats()
    network: dict[str, Any] = spec.network.to_dict()
    if proxy is not None:
        network.update(proxy.summary())
    status = "error" if error is not None else ("timed_out" if execution.timed_out else "completed")
    record = {
        "run_id": run_id,
        "competition_id": spec.competition_id,
        "agent_id": spec.agent_id,
        "backend": runner.name,
        "status": status,
        "error": str(error) if error is not None else None,
        "started_at": started.isoformat(),
        "ended_at": ended.isoformat(),
        "duration_s": duration,
        "exit_code": execution.exit_code,
        "exit_signal": execution.exit_signal,
        "timed_out": execution.timed_out,
        "limits_hit": list(execution.limits_hit),
        "limits": {**spec.resources.to_dict(), "time_limit_s": spec.time_limit_s},
        "container_id": execution.container_id,
        "image_digest": execution.image_digest,
        "gpus_visible": list(execution.gpus_visible),
        "isolation": dict(execution.isolation),
        "validation_calls": {**stats.to_dict(), "log": f"{RunLayout.LOGS_DIR}/{VALIDATION_CALLS_FILE}"},
        "network": network,
        "spec": spec.to_dict(),
    }
    extra: list[Mapping[str, Any]] = []
    if network.get("denied"):
        extra.append({"kind": "network-denied", "detail": f"{network['denied']} request(s) to hosts off the allow-list"})
    if execution.isolation.get("sandbox") is False:
        extra.append({"kind": "no-sandbox", "detail": "the agent ran on the host without isolation (--unsafe-no-sandbox)"})
    for limit in execution.limits_hit:
        extra.append({"kind": "limit-hit", "detail": f"the {limit} limit stopped the agent"})
    events = finalize_run_dir(stage, record, validation_enabled=validator is not None, extra_events=tuple(extra))
    submission = run_dir / RunLayout.SUBMISSION_DIR / RunLayout.SUBMISSION_FILE
    result = SandboxResult(
        run_dir=run_dir,
        run_id=run_id,
        backend=runner.name,
        status=status,
        exit_code=execution.exit_code,
        timed_out=execution.timed_out,
        limits_hit=tuple(execution.limits_hit),
        error=str(error) if error is not None else None,
        started_at=started.isoformat(),
        ended_at=ended.isoformat(),
        duration_s=duration,
        run_log=run_dir / RunLayout.RUN_LOG,
        submission=submission if submission.is_file() else None,
        container_id=execution.container_id,
        image_digest=execution.image_digest,
        gpus_visible=tuple(execution.gpus_visible),
        validation=stats,
        network=MappingProxyType(network),
        events=events,
    )
    if error is not None:
        raise error
    return result
