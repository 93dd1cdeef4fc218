"""Running one agent in a sandbox and turning what it leaves into an MLE-bench run dir.

:func:`run_sandbox` is the backend-independent part: it checks the spec's host paths, stages
the writable folders, serves the validation endpoint (and the allow-list proxy) on Unix sockets,
asks a :class:`Runner` backend to execute an :class:`ExecutionPlan`, then finalises the run dir
(see :mod:`mleaudit.sandbox.extract`) and writes ``run.json``. Backends (:mod:`mleaudit.sandbox.local`,
:mod:`mleaudit.sandbox.docker`) only translate the plan into bubblewrap arguments or a docker container.

The held-out answers never enter the plan: the spec's ``hidden`` paths are checked against
every bind, a bind inside one is refused, and one that contains one gets it covered by an
empty tmpfs (``ExecutionPlan.masks``).
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import shutil
import tempfile
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path, PurePosixPath
from types import MappingProxyType
from typing import Any, Mapping, Protocol, runtime_checkable

from mleaudit.audit.run import RunLayout
from mleaudit.sandbox.errors import RunDirError, SandboxError, SandboxRunError, SpecError
from mleaudit.sandbox.extract import RUN_JSON_SCHEMA_VERSION, RunDirStage, finalize_run_dir
from mleaudit.sandbox.logsink import DEFAULT_LOG_BYTES
from mleaudit.sandbox.proxy import AllowListProxy
from mleaudit.sandbox.spec import AGENT_PATHS, SandboxSpec
from mleaudit.sandbox.validation import VALIDATION_CALLS_FILE, ValidationLimits, ValidationServer, ValidationStats, Validator
from mleaudit.sandbox.watchdog import DEFAULT_DISK_BYTES, OutputWatch

__all__ = [
    "Bind",
    "StopSignal",
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
#: The sandbox's first process (``assets/init.py``), next to the forwarder.
INIT = f"{AGENT_PATHS['support']}/init.py"
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


class StopSignal:
    """A request to stop the sandbox before the agent ends by itself, and which limit asked for it.

    The run orchestrator's watchers (the disk watch of the output folders) and the backend's own
    time limit call :meth:`request`; the backend's wait loop polls :meth:`is_set` and then stops
    the sandbox (SIGTERM, the grace period, SIGKILL) and reports :attr:`limit` in
    ``Execution.limits_hit``. The first request wins; later ones are ignored.
    """

    def __init__(self) -> None:
        self._event = threading.Event()
        self._lock = threading.Lock()
        self.limit: str | None = None
        self.detail: str | None = None

    def request(self, limit: str, detail: str) -> None:
        """Ask the backend to stop the sandbox because ``limit`` (``time``, ``disk`` ...) was hit."""
        with self._lock:
            if self._event.is_set():
                return
            self.limit, self.detail = limit, detail
            self._event.set()

    def is_set(self) -> bool:
        """Whether a stop was requested."""
        return self._event.is_set()

    def wait(self, timeout: float | None = None) -> bool:
        """Block until a stop is requested or ``timeout`` seconds pass; True when requested."""
        return self._event.wait(timeout)


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
        ``run.log``: the agent's stdout and stderr, streamed through a
        :class:`~mleaudit.sandbox.logsink.CappedLog` of ``log_bytes``.
    log_bytes : int
        Cap of ``run.log`` in bytes.
    stop : StopSignal
        Set by a watcher that wants the sandbox stopped before its end (the backend polls it).
    preflight_command : tuple of str
        What the pre-flight sandbox runs: ``true`` under the same wrapper as the agent's
        command, so that a sandbox that cannot run the wrapper (no ``python3``) fails there.
    """

    spec: SandboxSpec
    run_id: str
    binds: tuple[Bind, ...]
    masks: tuple[str, ...]
    env: Mapping[str, str]
    command: tuple[str, ...]
    log_path: Path
    log_bytes: int = DEFAULT_LOG_BYTES
    stop: StopSignal = field(default_factory=StopSignal)
    preflight_command: tuple[str, ...] = ("true",)


@dataclass(frozen=True, slots=True, kw_only=True)
class Execution:
    """What a backend reports about one execution.

    Attributes
    ----------
    exit_code : int or None
        The agent's exit status, also after a stop at a limit (128 + the signal when a signal
        ended it); ``None`` only when it never started.
    timed_out : bool
        Killed at the wall-clock limit.
    limits_hit : tuple of str
        Limits known to have stopped (part of) the agent: ``time``, ``memory`` (an OOM kill),
        ``pids`` (a fork refused at the process limit), ``disk`` (the output folders' size),
        ``cpu``.
    limit_details : mapping of str to str
        For each limit hit, what the backend measured (``"2 OOM kill(s)"``).
    exit_signal : int or None
        The signal that ended the agent, when the backend can tell.
    log_kept_bytes, log_dropped_bytes : int
        Bytes of agent output written to ``run.log`` and dropped past its cap.
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
    limit_details: Mapping[str, str] = field(default_factory=dict)
    exit_signal: int | None = None
    log_kept_bytes: int = 0
    log_dropped_bytes: int = 0
    container_id: str | None = None
    image_digest: str | None = None
    gpus_visible: tuple[str, ...] = ()
    isolation: Mapping[str, Any] = field(default_factory=dict)


@runtime_checkable
class Runner(Protocol):
    """A sandbox backend.

    ``name`` is recorded in ``run.json``. :meth:`sandbox_owner` says which host uid/gid the
    agent's files will be written as (the staging folders are handed to it). :meth:`preflight`
    starts a trivial sandbox (``true``) with the plan's options and raises
    :class:`~mleaudit.sandbox.errors.SandboxUnavailable` (naming the cause and the remedies) when it
    cannot start, so that a broken sandbox never passes for an agent that failed.
    :meth:`execute` runs the plan to the end, the time limit or a :class:`StopSignal`, and
    raises :class:`~mleaudit.sandbox.errors.SandboxError` subclasses for problems it can name (no
    bubblewrap, missing image, no GPU runtime).
    """

    name: str

    def sandbox_owner(self, spec: SandboxSpec) -> tuple[int, int] | None: ...

    def preflight(self, plan: ExecutionPlan) -> None: ...

    def execute(self, plan: ExecutionPlan) -> Execution: ...


@dataclass(frozen=True, slots=True, kw_only=True)
class SandboxResult:
    """The outcome of :func:`run_sandbox`, as recorded in ``run.json``.

    Attributes
    ----------
    run_dir : pathlib.Path
        The MLE-bench-layout run dir written.
    status : str
        ``completed`` (the agent exited by itself), ``timed_out`` (stopped at the time limit),
        ``stopped`` (stopped at another limit, e.g. the output folders' disk limit),
        ``sandbox_failed`` (the sandbox could not start; the agent never ran; ``error`` says why)
        or ``error`` (the run broke after the agent started; the outputs are still cleaned and
        recorded).
    exit_code : int or None
        The agent's exit status.
    duration_s : float
        Wall-clock seconds from start to end.
    validation : ValidationStats
        Validation endpoint calls.
    events : tuple of dict
        What the host noticed (refused outputs, a spoofed calls log, denied network requests,
        limits hit, the log cap).
    exit_signal : int or None
        The signal that ended the agent, when known.
    log_dropped_bytes : int
        Bytes of agent output dropped past the ``run.log`` cap.
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
    exit_signal: int | None = None
    log_dropped_bytes: int = 0

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


#: The backend name of the runner without isolation (:class:`mleaudit.sandbox.local.UnsafeLocalRunner`).
_UNSANDBOXED = "unsafe-local"
#: ``status`` of a run whose sandbox could not start: the agent never ran.
SANDBOX_FAILED = "sandbox_failed"


def _failed_start_record(run_dir: Path) -> bool:
    """Whether a run dir holds only the record of a run whose sandbox never started."""
    names = {p.name for p in run_dir.iterdir()}
    if not names <= {RunLayout.RUN_META[0], RunLayout.RUN_LOG} or RunLayout.RUN_META[0] not in names:
        return False
    if any(p.is_symlink() or not p.is_file() for p in run_dir.iterdir()):
        return False
    try:
        record = json.loads((run_dir / RunLayout.RUN_META[0]).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(record, dict) and record.get("status") == SANDBOX_FAILED and record.get("agent_started") is False


def _prepare_run_dir(run_dir: Path) -> None:
    if run_dir.is_symlink() or (run_dir.exists() and not run_dir.is_dir()):
        raise RunDirError(f"--run-dir {run_dir}: exists and is not a folder")
    if run_dir.exists() and any(run_dir.iterdir()):
        if not _failed_start_record(run_dir):
            raise RunDirError(f"--run-dir {run_dir}: exists and is not empty; choose a new folder")
        # A rerun after a failed start: the agent never ran there, so its record is replaced.
        for name in (RunLayout.RUN_META[0], RunLayout.RUN_LOG):
            (run_dir / name).unlink(missing_ok=True)
        logger.info("replacing the failed-start record in %s", run_dir)
    try:
        run_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise RunDirError(f"--run-dir {run_dir}: cannot create it: {exc.strerror or exc}") from None


def _command(spec: SandboxSpec, *, sandboxed: bool) -> tuple[str, ...]:
    """The argv the sandbox runs: the agent's command under ``assets/init.py``.

    The init starts the loopback forwarder to the host's proxy (with an allow-list the agent
    does not start without it; under ``network: none`` it only records refused attempts) and
    keeps the sandbox alive through a stop's grace period until every process of the agent
    has ended (see its docstring). A run without a sandbox gets the command as it is.
    """
    if not sandboxed:
        return spec.command
    forward = ["--forward", str(PROXY_PORT), PROXY_SOCKET] + (["--required"] if spec.network.allow else [])
    return ("python3", INIT, *forward, "--", *spec.command)


def _environment(spec: SandboxSpec, run_id: str, *, proxied: bool) -> dict[str, str]:
    env = dict(BASE_ENV)
    env["RUN_ID"] = run_id
    if spec.competition_id:
        env["COMPETITION_ID"] = spec.competition_id
    if spec.time_limit_s:
        env["TIME_LIMIT_SECS"] = str(int(spec.time_limit_s))
    if proxied:
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
    validation_limits: ValidationLimits | None = None,
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
        The backend (:class:`~mleaudit.sandbox.local.BubblewrapRunner`, :class:`~mleaudit.sandbox.docker.DockerRunner`).
    validator : Validator, optional
        Checks posted submissions; when given, the endpoint is served at ``/home/validate.sock``.
    run_id : str, optional
        Default: the run dir's name.
    validation_limits : mleaudit.sandbox.validation.ValidationLimits, optional
        Size, time and memory bounds of the validation endpoint (default: its own).

    Returns
    -------
    SandboxResult
        Also written to ``run.json``.

    Raises
    ------
    SpecError
        If the spec names host paths that do not exist (nothing is written).
    RunDirError
        If the run dir exists and is not empty (other than the record of an earlier failed
        start, which is replaced), or cannot be created.
    SandboxError
        If the sandbox cannot run the agent (the pre-flight sandbox fails: no bubblewrap, no
        user namespaces, missing image, no GPU runtime). The run dir then holds only
        ``run.json`` with ``status: sandbox_failed``, ``agent_started: false``, the error and
        its remedies, and an empty ``run.log``; running again with the same run dir replaces them.
    SandboxRunError
        If the run broke after the agent started (``status: error``); the run dir is complete,
        its outputs cleaned, and ``run.json`` holds a ``sandbox-error`` event.
    """
    run_dir = Path(run_dir).absolute()
    # Limits not given are the documented defaults, so that run.json shows what was in force.
    spec = spec.with_defaults()
    # Bad input is refused before anything is written.
    _check_host_paths(spec)
    _prepare_run_dir(run_dir)
    run_id = run_id or run_dir.name
    stage = RunDirStage.create(run_dir)
    sockets = Path(tempfile.mkdtemp(prefix="mleaudit-"))
    started = _now()
    clock = time.monotonic()
    execution = Execution(exit_code=None)
    error: SandboxError | None = None
    teardown_errors: list[str] = []
    agent_started = False
    validation_server: ValidationServer | None = None
    proxy: AllowListProxy | None = None
    stop = StopSignal()
    limits = _resolved_limits(spec)
    # Every sandboxed run gets the host's proxy (refusing everything under `network: none`), so
    # that an attempt to reach the network through the proxy settings is recorded, and the init
    # of assets/init.py; a run on the host itself (--unsafe-no-sandbox) has the host's network,
    # none of ours, and its command as it is.
    sandboxed = runner.name != _UNSANDBOXED
    watch = OutputWatch(stage.writable, limits["disk"], stop)
    try:
        try:
            stage.hand_over(runner.sandbox_owner(spec))
            binds: list[Bind] = []
            if spec.data_dir is not None:
                binds.append(Bind(source=spec.data_dir, target=AGENT_PATHS["data"]))
            if spec.agent_dir is not None:
                binds.append(Bind(source=spec.agent_dir, target=AGENT_PATHS["agent"]))
            for name, host in stage.writable.items():
                binds.append(Bind(source=host, target=AGENT_PATHS[name], read_only=False))
            if validator is not None:
                validation_server = ValidationServer(sockets / "validate.sock", validator, stage.calls_log,
                                                     limits=validation_limits)
                validation_server.start()
                binds.append(Bind(source=validation_server.socket_path, target=AGENT_PATHS["validate_socket"]))
            binds.append(Bind(source=ASSETS_DIR / "validate_submission.sh", target=AGENT_PATHS["validate_helper"]))
            if sandboxed:
                proxy = AllowListProxy(sockets / "proxy.sock", spec.network.allow)
                proxy.start()
                binds.append(Bind(source=proxy.socket_path, target=PROXY_SOCKET))
                binds.append(Bind(source=ASSETS_DIR / "forward.py", target=FORWARDER))
                binds.append(Bind(source=ASSETS_DIR / "init.py", target=INIT))
            binds.extend(Bind(source=m.source, target=m.target, read_only=m.read_only) for m in spec.mounts)
            plan = ExecutionPlan(
                spec=spec,
                run_id=run_id,
                binds=tuple(binds),
                masks=plan_masks(binds, spec.hidden),
                env=MappingProxyType(_environment(spec, run_id, proxied=sandboxed)),
                command=_command(spec, sandboxed=sandboxed),
                log_path=run_dir / RunLayout.RUN_LOG,
                log_bytes=limits["log"],
                stop=stop,
                preflight_command=_command(dataclasses.replace(spec, command=("true",)), sandboxed=sandboxed),
            )
            preflight = getattr(runner, "preflight", None)
            if preflight is not None:
                logger.info("pre-flight of the %s sandbox for %s", runner.name, run_id)
                preflight(plan)
            logger.info("running %s with %s in %s", run_id, runner.name, run_dir)
            agent_started = True
            watch.start()
            execution = runner.execute(plan)
        except SandboxError as exc:
            error = exc
            logger.warning("sandbox run %s failed: %s", run_id, exc)
        except Exception as exc:  # noqa: BLE001 - whatever broke, the outputs are still cleaned and recorded
            logger.exception("sandbox run %s failed", run_id)
            error = SandboxRunError(f"the run failed inside mleaudit: {type(exc).__name__}: {str(exc)[:500]}")
    finally:
        # Every step runs whatever the others do: a failing one must not leave the endpoint,
        # the proxy or the agent's unchecked outputs behind.
        for step, name in ((watch.close, "the disk watch"),
                           (validation_server.stop if validation_server is not None else None, "the validation endpoint"),
                           (proxy.stop if proxy is not None else None, "the network proxy"),
                           (lambda: shutil.rmtree(sockets, ignore_errors=True), "the socket folder")):  # fmt: skip
            if step is None:
                continue
            try:
                step()
            except Exception as exc:  # noqa: BLE001 - recorded below, the teardown goes on
                logger.warning("could not stop %s: %r", name, exc)
                teardown_errors.append(f"could not stop {name}: {type(exc).__name__}")
    ended = _now()
    duration = round(time.monotonic() - clock, 3)
    stats = validation_server.stats if validation_server is not None else ValidationStats()
    network: dict[str, Any] = spec.network.to_dict()
    if proxy is not None:
        network.update(proxy.summary())
    limits_hit = list(execution.limits_hit)
    details = dict(execution.limit_details)
    if watch.exceeded and "disk" not in limits_hit:
        limits_hit.append("disk")
    if watch.exceeded:
        details.setdefault("disk", watch.detail or f"the output folders reached {watch.peak_bytes:,} bytes "
                                                   f"(limit {limits['disk']:,} bytes)")  # fmt: skip
    failed_start = error is not None and not agent_started
    if failed_start:
        status = SANDBOX_FAILED
    elif error is not None:
        status = "error"
    elif execution.timed_out:
        status = "timed_out"
    elif stop.is_set() and stop.limit != "time":
        status = "stopped"
    else:
        status = "completed"
    remedies = list(getattr(error, "remedies", ())) if error is not None else []
    record = {
        "run_id": run_id,
        "competition_id": spec.competition_id,
        "agent_id": spec.agent_id,
        "backend": runner.name,
        "status": status,
        "agent_started": agent_started,
        "error": str(error) if error is not None else None,
        "remedies": remedies,
        "started_at": started.isoformat(),
        "ended_at": ended.isoformat(),
        "duration_s": duration,
        "exit_code": execution.exit_code,
        "exit_signal": execution.exit_signal,
        "timed_out": execution.timed_out,
        "stopped_by": stop.limit,
        "limits_hit": limits_hit,
        "limits": {**limits, "enforcement": dict(execution.isolation.get("enforcement", {}))},
        "log": {"path": RunLayout.RUN_LOG, "max_bytes": limits["log"], "kept_bytes": execution.log_kept_bytes,
                "dropped_bytes": execution.log_dropped_bytes},
        "outputs": {"peak_bytes": watch.peak_bytes, "max_bytes": limits["disk"]},
        "container_id": execution.container_id,
        "image_digest": execution.image_digest,
        "gpus_visible": list(execution.gpus_visible),
        "isolation": dict(execution.isolation),
        "validation_calls": {**stats.to_dict(), "log": f"{RunLayout.LOGS_DIR}/{VALIDATION_CALLS_FILE}"},
        "network": network,
        "spec": spec.to_dict(),
    }  # fmt: skip
    extra = _events(error if failed_start else None, execution, limits_hit, details, proxy, validation_server)
    if error is not None and not failed_start:
        extra.insert(0, {"kind": "sandbox-error", "detail": str(error)[:2000]})
    extra.extend({"kind": "sandbox-error", "detail": text} for text in teardown_errors)
    if failed_start:
        events = _record_failed_start(stage, record, tuple(extra))
    else:
        events = finalize_run_dir(stage, record, validation_enabled=validator is not None, extra_events=tuple(extra))
    submission = run_dir / RunLayout.SUBMISSION_DIR / RunLayout.SUBMISSION_FILE
    result = SandboxResult(
        run_dir=run_dir,
        run_id=run_id,
        backend=runner.name,
        status=status,
        exit_code=execution.exit_code,
        timed_out=execution.timed_out,
        limits_hit=tuple(limits_hit),
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
        exit_signal=execution.exit_signal,
        log_dropped_bytes=execution.log_dropped_bytes,
    )
    if error is not None:
        raise error
    return result


def _resolved_limits(spec: SandboxSpec) -> dict[str, Any]:
    """The limits in force for a run, as recorded in ``run.json``: the spec's, else the defaults."""
    res = spec.resources
    return {
        "time_limit_s": spec.time_limit_s,
        "cpus": res.cpus,
        "memory": res.memory_bytes,
        "shm": res.shm_bytes,
        "pids": res.pids,
        "disk": res.disk_bytes or DEFAULT_DISK_BYTES,
        "log": res.log_bytes or DEFAULT_LOG_BYTES,
        "stop_grace_s": spec.stop_grace_s,
    }


def _events(error: SandboxError | None, execution: Execution, limits_hit: list[str], details: Mapping[str, str],
            proxy: AllowListProxy | None, validation_server: ValidationServer | None) -> list[Mapping[str, Any]]:
    """The host's own events for ``run.json``: failures, limits, the log cap, network and endpoint refusals."""
    events: list[Mapping[str, Any]] = []
    if error is not None:
        events.append({"kind": "sandbox-failed", "detail": str(error)[:2000],
                       "remedies": list(getattr(error, "remedies", ()))})  # fmt: skip
    if execution.isolation.get("sandbox") is False:
        events.append({"kind": "no-sandbox", "detail": "the agent ran on the host without isolation (--unsafe-no-sandbox)"})
    for limit in limits_hit:
        events.append({"kind": "limit-hit", "limit": limit,
                       "detail": details.get(limit) or f"the {limit} limit stopped (part of) the agent"})  # fmt: skip
    if execution.log_dropped_bytes:
        events.append({"kind": "log-truncated", "path": RunLayout.RUN_LOG, "kept_bytes": execution.log_kept_bytes,
                       "dropped_bytes": execution.log_dropped_bytes,
                       "detail": f"run.log capped at {execution.log_kept_bytes} bytes; "
                                 f"{execution.log_dropped_bytes} bytes dropped"})  # fmt: skip
    if proxy is not None:
        denied = getattr(proxy, "denied_events", None)
        if denied is not None:
            events.extend(denied())
        elif proxy.summary().get("denied"):
            events.append({"kind": "network-denied",
                           "detail": f"{proxy.summary()['denied']} request(s) to hosts off the allow-list"})  # fmt: skip
    if validation_server is not None and hasattr(validation_server, "events"):
        events.extend(validation_server.events())
    return events


def _record_failed_start(stage: RunDirStage, record: Mapping[str, Any], events: tuple[Mapping[str, Any], ...]) -> tuple[Mapping[str, Any], ...]:
    """Leave only ``run.json`` (and ``run.log``) for a run whose sandbox never started; a rerun replaces them."""
    shutil.rmtree(stage.root, ignore_errors=True)
    run_log = stage.run_dir / RunLayout.RUN_LOG
    if not run_log.exists():
        run_log.write_text("", encoding="utf-8")
    data = {"schema_version": RUN_JSON_SCHEMA_VERSION, **record, "events": list(events)}
    target = stage.run_dir / RunLayout.RUN_META[0]
    tmp = target.with_name(target.name + ".tmp")
    tmp.write_text(json.dumps(data, sort_keys=True, indent=2, default=str) + "\n", encoding="utf-8")
    os.replace(tmp, target)
    return events
