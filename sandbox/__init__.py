"""Running agents in isolation (bubblewrap or docker) so that they produce auditable run dirs.

:func:`run_sandbox` runs a :class:`SandboxSpec` with a :class:`Runner` backend
(:class:`BubblewrapRunner` locally, :class:`DockerRunner` in a container) and writes an
MLE-bench-layout run dir: ``submission/``, ``logs/``, ``code/``, ``run.log`` and ``run.json``.
The held-out answers are never mounted; the validation endpoint is served by the host over a
Unix socket bound into the sandbox. Backends are imported on first use.

Routine Listings
----------------
errors
    :class:`SandboxError` and its kinds (each with remedies).
logsink, watchdog, cgroups, run_user, unix_service
    Host-side pieces every run uses: the capped ``run.log``, the disk watch of the output
    folders, the per-run cgroup, the uid drawn for a run, the Unix-socket HTTP service.
spec
    :class:`SandboxSpec` and its YAML form (:func:`load_sandbox_spec`), the default limits.
feedback, validation_worker, validation
    The validation endpoint: the reply templates (nothing of the answers reaches the agent),
    the worker process that runs the validator, the server on the Unix socket.
proxy
    The allow-list proxy (no network unless a host is listed).
extract
    The staging folders and the run dir made from them (hostile outputs cleaned).
runner
    The plan a backend executes (``runner.plan``) and :func:`run_sandbox`, which stages,
    serves, runs and records one run.
local, docker
    The backends: :class:`BubblewrapRunner` (and :class:`UnsafeLocalRunner`), :class:`DockerRunner`.
competition, check, cli
    A competition's validator and public facts, the environment check, the click commands.

Notes
-----
Imports point down the listing above. ``sandbox`` may use ``mleaudit.grading``, always inside
functions (``spec`` reads a spec file with ``grading.untrusted_yaml``, ``competition`` and
``cli`` set up a competition's validator, the validation worker imports the modules it is told
to preload). Of ``mleaudit.audit`` it uses only ``mleaudit.audit.run``, whose run-dir layout is
the contract between the two (``extract`` and ``runner``), except ``cli``, which runs the audit
inside ``mleaudit run --audit``; ``tests/test_imports.py`` checks the module-level imports.

The next backend is a package beside ``local`` and ``docker``: a class with ``name``,
``sandbox_owner``, ``preflight`` and ``execute`` (the
:class:`~mleaudit.sandbox.runner.plan.Runner` protocol) that imports, of the orchestration,
only ``mleaudit.sandbox.runner.plan``, plus ``spec`` and the host-side pieces; it is chosen in
``cli`` (``_runner``) and checked in ``check``, and gets a line in ``_EXPORTS`` below.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "SandboxSpec",
    "SandboxResult",
    "Runner",
    "run_sandbox",
    "load_sandbox_spec",
    "BubblewrapRunner",
    "UnsafeLocalRunner",
    "DockerRunner",
    "SandboxError",
]

_EXPORTS = {
    "SandboxSpec": "mleaudit.sandbox.spec",
    "load_sandbox_spec": "mleaudit.sandbox.spec",
    "SandboxResult": "mleaudit.sandbox.runner",
    "Runner": "mleaudit.sandbox.runner",
    "run_sandbox": "mleaudit.sandbox.runner",
    "BubblewrapRunner": "mleaudit.sandbox.local",
    "UnsafeLocalRunner": "mleaudit.sandbox.local",
    "DockerRunner": "mleaudit.sandbox.docker",
    "SandboxError": "mleaudit.sandbox.errors",
}


def __getattr__(name: str) -> Any:
    # Lazy exports (PEP 562): `import sandbox` stays cheap and never needs the docker SDK.
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'mleaudit.sandbox' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)
