"""Running one agent in a sandbox: :func:`run_sandbox`, from the spec to the finished run dir.

See :mod:`mleaudit.sandbox.runner` for the steps and what they guarantee.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import shutil
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path
from types import MappingProxyType
from typing import Any

from mleaudit.audit.run import RunLayout
from mleaudit.sandbox.errors import SandboxError, SandboxRunError
from mleaudit.sandbox.extract import RunDirStage, finalize_run_dir
from mleaudit.sandbox.proxy import AllowListProxy
from mleaudit.sandbox.runner.agent import ASSETS_DIR, FORWARDER, INIT, PROXY_SOCKET, agent_command, agent_environment
from mleaudit.sandbox.runner.plan import Bind, Execution, ExecutionPlan, Runner, StopSignal, plan_masks
from mleaudit.sandbox.runner.record import SandboxResult, host_events, resolved_limits
from mleaudit.sandbox.runner.run_dir import SANDBOX_FAILED, check_host_paths, prepare_run_dir, record_failed_start
from mleaudit.sandbox.spec import AGENT_PATHS, SandboxSpec
from mleaudit.sandbox.validation import VALIDATION_CALLS_FILE, ValidationLimits, ValidationServer, ValidationStats, Validator
from mleaudit.sandbox.watchdog import OutputWatch

logger = logging.getLogger(__name__)

#: The backend name of the runner without isolation (:class:`mleaudit.sandbox.local.UnsafeLocalRunner`).
_UNSANDBOXED = "unsafe-local"


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
    check_host_paths(spec)
    prepare_run_dir(run_dir)
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
    limits = resolved_limits(spec)
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
                env=MappingProxyType(agent_environment(spec, run_id, proxied=sandboxed)),
                command=agent_command(spec, sandboxed=sandboxed),
                log_path=run_dir / RunLayout.RUN_LOG,
                log_bytes=limits["log"],
                stop=stop,
                preflight_command=agent_command(dataclasses.replace(spec, command=("true",)), sandboxed=sandboxed),
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
    extra = host_events(error if failed_start else None, execution, limits_hit, details, proxy, validation_server)
    if error is not None and not failed_start:
        extra.insert(0, {"kind": "sandbox-error", "detail": str(error)[:2000]})
    extra.extend({"kind": "sandbox-error", "detail": text} for text in teardown_errors)
    if failed_start:
        events = record_failed_start(stage, record, tuple(extra))
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
