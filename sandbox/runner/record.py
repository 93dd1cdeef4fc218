"""What a run leaves in ``run.json`` besides the outputs: the result, the limits in force, the host's events."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from mleaudit.audit.run import RunLayout
from mleaudit.sandbox.errors import SandboxError
from mleaudit.sandbox.logsink import DEFAULT_LOG_BYTES
from mleaudit.sandbox.proxy import AllowListProxy
from mleaudit.sandbox.runner.plan import Execution
from mleaudit.sandbox.spec import SandboxSpec
from mleaudit.sandbox.validation import ValidationServer, ValidationStats
from mleaudit.sandbox.watchdog import DEFAULT_DISK_BYTES


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


def resolved_limits(spec: SandboxSpec) -> dict[str, Any]:
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


def host_events(error: SandboxError | None, execution: Execution, limits_hit: list[str], details: Mapping[str, str],
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
