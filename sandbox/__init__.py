"""Running agents in isolation (bubblewrap or docker) so that they produce auditable run dirs.

:func:`run_sandbox` runs a :class:`SandboxSpec` with a :class:`Runner` backend
(:class:`BubblewrapRunner` locally, :class:`DockerRunner` in a container) and writes an
MLE-bench-layout run dir: ``submission/``, ``logs/``, ``code/``, ``run.log`` and ``run.json``.
The held-out answers are never mounted; the validation endpoint is served by the host over a
Unix socket bound into the sandbox. Backends are imported on first use.
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
