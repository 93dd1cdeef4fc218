"""Running one agent in a sandbox and turning what it leaves into an MLE-bench run dir.

:func:`run_sandbox` is the backend-independent part: it checks the spec's host paths, stages
the writable folders, serves the validation endpoint (and the allow-list proxy) on Unix sockets,
asks a :class:`Runner` backend to execute an :class:`ExecutionPlan`, then finalises the run dir
(see :mod:`mleaudit.sandbox.extract`) and writes ``run.json``. Backends (:mod:`mleaudit.sandbox.local`,
:mod:`mleaudit.sandbox.docker`) only translate the plan into bubblewrap arguments or a docker container.

The held-out answers never enter the plan: the spec's ``hidden`` paths are checked against
every bind, a bind inside one is refused, and one that contains one gets it covered by an
empty tmpfs (``ExecutionPlan.masks``).

Routine Listings
----------------
plan
    The contract with a backend: :class:`Bind`, :class:`StopSignal`, :class:`ExecutionPlan`,
    :class:`Execution`, the :class:`Runner` protocol, and :func:`plan_masks`.
agent
    What every agent is given: :data:`BASE_ENV`, the command under ``assets/init.py``,
    :data:`ASSETS_DIR`, :data:`PROXY_PORT`.
record
    :class:`SandboxResult`, the limits in force and the host's own events for ``run.json``.
run_dir
    The run dir's checks before a run (:data:`SANDBOX_FAILED` records may be replaced) and the
    record of a run whose sandbox never started.
orchestrator
    :func:`run_sandbox`: stage, serve, pre-flight, execute, tear down, finalise, record.

Notes
-----
The names above are re-exported here, so callers import from ``mleaudit.sandbox.runner``.
Imports point down the listing: a module imports only modules listed before it, plus
``mleaudit.sandbox.errors``, ``extract``, ``logsink``, ``proxy``, ``spec``, ``validation``,
``watchdog`` and ``mleaudit.audit.run`` (the run-dir layout, the one contract with the audit);
never a backend. A backend imports only ``plan`` of this package. A new field of ``run.json``
is written in ``run_sandbox``'s record (and the audit's reader told); a new host event goes in
``record.host_events``.
"""

from __future__ import annotations

from mleaudit.sandbox.runner.agent import ASSETS_DIR, BASE_ENV, PROXY_PORT
from mleaudit.sandbox.runner.orchestrator import run_sandbox
from mleaudit.sandbox.runner.plan import Bind, Execution, ExecutionPlan, Runner, StopSignal, plan_masks
from mleaudit.sandbox.runner.record import SandboxResult
from mleaudit.sandbox.runner.run_dir import SANDBOX_FAILED

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
    "BASE_ENV",
    "SANDBOX_FAILED",
]
