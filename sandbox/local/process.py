"""Running the sandbox's process to its end: output into ``run.log``, the time limit, the stop, the kill.

:func:`run_supervised` starts the command with the run's limits, pumps its output through a
:class:`~mleaudit.sandbox.logsink.CappedLog` and waits for it, polling the time limit and the
plan's stop signal; a stop is SIGTERM to every process of the agent, the spec's grace period,
then SIGKILL. :func:`report_limits` reads what the cgroup counted before it is removed.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

from mleaudit.sandbox.errors import SandboxUnavailable
from mleaudit.sandbox.local.host import namespace_remedies
from mleaudit.sandbox.local.limits import Limits
from mleaudit.sandbox.logsink import CappedLog
from mleaudit.sandbox.runner.plan import ExecutionPlan

logger = logging.getLogger(__name__)

#: Seconds between two checks of the agent, the time limit and the stop signal.
_POLL_S = 0.1
#: Seconds to wait for the killed sandbox to be reaped.
_REAP_S = 30
#: Seconds to wait for the last of the agent's output once it has exited.
_LOG_DRAIN_S = 10


def _size(number: int | None) -> str:
    if number is None:
        return "none"
    for unit, scale in (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if number >= scale:
            return f"{number / scale:g} {unit}"
    return f"{number} bytes"


def _descendants(root: int) -> list[int]:
    """Processes descending from ``root`` (from ``/proc/*/stat``), deepest last; ``root`` excluded."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as handle:
                stat = handle.read()
        except OSError:
            continue
        # The command name may hold spaces and parentheses: the fields start after the last ')'.
        fields = stat[stat.rfind(b")") + 2:].split()
        if len(fields) > 1:
            children.setdefault(int(fields[1]), []).append(int(entry))
    found: list[int] = []
    queue = [root]
    while queue:
        for child in children.get(queue.pop(), []):
            if child not in found:
                found.append(child)
                queue.append(child)
    return found


def _signal_all(pids: Iterable[int], signum: int) -> None:
    for pid in pids:
        try:
            os.kill(pid, signum)
        except (ProcessLookupError, PermissionError):
            pass


@dataclass
class Outcome:
    returncode: int | None
    stopped_by: str | None = None
    stop_detail: str | None = None


def _supervise(proc: subprocess.Popen, plan: ExecutionPlan, limits: Limits, *, spare: frozenset[int]) -> Outcome:
    """Wait for the sandbox, polling the time limit and the stop signal; stop it on either.

    Stopping: SIGTERM to the agent's processes (the cgroup's, else the descendants of ``proc``
    and its process group) except ``spare`` (bubblewrap's monitor, which would take everything
    down at once), ``stop_grace_s`` for them to end, then SIGKILL to all of them.
    """
    spec = plan.spec
    deadline = time.monotonic() + spec.time_limit_s if spec.time_limit_s else None
    while True:
        try:
            return Outcome(proc.wait(timeout=_POLL_S))
        except subprocess.TimeoutExpired:
            pass
        if deadline is not None and time.monotonic() >= deadline:
            plan.stop.request("time", f"the sandbox was stopped at its time limit of {spec.time_limit_s:g} s")
        if plan.stop.is_set():
            break
    limit, detail = plan.stop.limit or "time", plan.stop.detail

    def members() -> list[int]:
        found = limits.cgroup.pids() if limits.cgroup is not None else _descendants(proc.pid)
        if proc.pid not in spare:
            found.append(proc.pid)
        return [pid for pid in dict.fromkeys(found) if pid not in spare]

    logger.info("stopping the sandbox (%s): SIGTERM, then SIGKILL after %g s", limit, spec.stop_grace_s)
    _signal_all(members(), signal.SIGTERM)
    end = time.monotonic() + spec.stop_grace_s
    while time.monotonic() < end:
        try:
            return Outcome(proc.wait(timeout=min(_POLL_S, max(end - time.monotonic(), 0.001))), limit, detail)
        except subprocess.TimeoutExpired:
            pass
    for _ in range(3):  # a process forked meanwhile is caught on the next pass
        _signal_all(members(), signal.SIGKILL)
        try:
            return Outcome(proc.wait(timeout=2), limit, detail)
        except subprocess.TimeoutExpired:
            pass
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        return Outcome(proc.wait(timeout=_REAP_S), limit, detail)
    except subprocess.TimeoutExpired:
        proc.kill()
        return Outcome(proc.wait(), limit, detail)


def exit_status(returncode: int | None) -> tuple[int | None, int | None]:
    """(exit code, signal) from a returncode.

    bubblewrap reports a child ended by a signal as ``128 + signal`` (the shell's convention); a
    process that was itself killed (returncode ``-signal``) is recorded the same way.
    """
    if returncode is None:
        return None, None
    if returncode < 0:
        return 128 - returncode, -returncode
    if returncode > 128 and returncode - 128 < signal.NSIG:
        return returncode, returncode - 128
    return returncode, None



def run_supervised(args: list[str], plan: ExecutionPlan, limits: Limits, *, env: dict[str, str], cwd: Path | None,
                   spare_monitor: bool, pass_fds: tuple[int, ...] = ()) -> tuple[Outcome, CappedLog]:  # fmt: skip
    """Start ``args`` with the limits, stream its output into ``run.log``, supervise it to its end."""
    log = CappedLog(plan.log_path, plan.log_bytes)
    try:
        try:
            proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                    env=env, cwd=cwd, start_new_session=True, preexec_fn=limits.preexec,
                                    close_fds=True, pass_fds=pass_fds)  # fmt: skip
        except (OSError, subprocess.SubprocessError) as exc:
            raise SandboxUnavailable(f"cannot start {args[0]}: {getattr(exc, 'strerror', None) or exc}",
                                     remedies=namespace_remedies(str(exc))) from None  # fmt: skip
        assert proc.stdout is not None
        pump = log.pump(proc.stdout)
        outcome = _supervise(proc, plan, limits, spare=frozenset({proc.pid}) if spare_monitor else frozenset())
        if limits.cgroup is not None:
            limits.cgroup.kill()  # anything detached that still holds the pipe
        pump.join(timeout=_LOG_DRAIN_S)
    finally:
        log.close()
    return outcome, log


def report_limits(outcome: Outcome, limits: Limits) -> tuple[tuple[str, ...], dict[str, str], dict[str, Any]]:
    """Limits hit (with details) and the cgroup's counters, read before the cgroup is removed."""
    hit: list[str] = []
    details: dict[str, str] = {}
    if outcome.stopped_by is not None:
        hit.append(outcome.stopped_by)
        details[outcome.stopped_by] = outcome.stop_detail or f"the sandbox was stopped at its {outcome.stopped_by} limit"
    counters: dict[str, Any] = {}
    if limits.cgroup is not None:
        usage = limits.cgroup.usage()
        counters = usage.to_dict()
        if usage.oom_kills:
            hit.append("memory")
            details["memory"] = (f"{usage.oom_kills} OOM kill(s) in the sandbox at its {_size(limits.memory_bytes)} "
                                 "memory limit (tmpfs included)")  # fmt: skip
        if usage.forks_refused:
            hit.append("pids")
            details["pids"] = f"{usage.forks_refused} fork(s) refused at the {limits.pids}-process limit"
    return tuple(dict.fromkeys(hit)), details, counters
