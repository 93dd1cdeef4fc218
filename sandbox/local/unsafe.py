"""The runner without isolation: the agent's command runs directly on the host, with the limits.

It exists only behind the CLI's explicit ``--unsafe-no-sandbox``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mleaudit.sandbox.errors import SpecError
from mleaudit.sandbox.local.limits import setup_limits
from mleaudit.sandbox.local.process import exit_status, report_limits, run_supervised
from mleaudit.sandbox.runner.plan import Execution, ExecutionPlan
from mleaudit.sandbox.spec import SandboxSpec


class UnsafeLocalRunner:
    """Run the command directly on the host, with the limits and the time limit but no isolation.

    The agent-facing paths do not exist on the host, so the environment variables that name
    them (``DATA_DIR``, ``SUBMISSION_DIR``, ``VALIDATE_SOCKET`` ...) are rewritten to the host
    paths bound there. ``run.json`` records ``isolation.sandbox: false``.

    Parameters
    ----------
    cgroups : bool
        Enforce memory, process and CPU limits with a per-run cgroup where the host allows one.
    """

    name = "unsafe-local"

    def __init__(self, *, cgroups: bool = True) -> None:
        self.cgroups = cgroups

    def sandbox_owner(self, spec: SandboxSpec) -> tuple[int, int] | None:
        return None

    def preflight(self, plan: ExecutionPlan) -> None:
        """Nothing to check beyond the hidden paths (no sandbox is started).

        Raises
        ------
        SpecError
            If the plan must hide paths, which needs a sandbox.
        """
        if plan.masks:
            raise SpecError(f"cannot hide {', '.join(plan.masks)} without a sandbox; run with a sandbox backend")

    def execute(self, plan: ExecutionPlan) -> Execution:
        """Run the plan's command in the submission folder's parent with host paths substituted."""
        self.preflight(plan)
        targets = {bind.target: str(bind.source) for bind in plan.binds}
        env = {key: targets.get(value, value) for key, value in plan.env.items()}
        env["VALIDATE_HELPER"] = targets.get("/home/validate_submission.sh", "")
        limits = setup_limits(plan.spec, plan.run_id, use_cgroup=self.cgroups, in_sandbox=False)
        cwd = Path(targets.get("/home/submission", ".")).parent
        try:
            outcome, log = run_supervised(list(plan.command), plan, limits, env=env, cwd=cwd, spare_monitor=False)
            hit, details, counters = report_limits(outcome, limits)
        finally:
            limits.release()
        exit_code, exit_signal = exit_status(outcome.returncode)
        isolation: dict[str, Any] = {"sandbox": False, "tool": None, "stop_grace_s": plan.spec.stop_grace_s,
                                     **limits.record()}  # fmt: skip
        if counters:
            isolation["cgroup"] = {**isolation.get("cgroup", {}), "usage": counters}
        return Execution(
            exit_code=exit_code,
            exit_signal=exit_signal,
            timed_out=outcome.stopped_by == "time",
            limits_hit=hit,
            limit_details=details,
            log_kept_bytes=log.kept_bytes,
            log_dropped_bytes=log.dropped_bytes,
            isolation=isolation,
        )
