"""The contract between :func:`~mleaudit.sandbox.runner.run_sandbox` and a backend.

The orchestrator resolves an :class:`ExecutionPlan` (binds, masks over hidden paths,
environment, command, log cap, :class:`StopSignal`); a :class:`Runner` backend executes it and
reports an :class:`Execution`. :func:`plan_masks` keeps the held-out answers out of every bind.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, Mapping, Protocol, runtime_checkable

from mleaudit.sandbox.errors import SpecError
from mleaudit.sandbox.logsink import DEFAULT_LOG_BYTES
from mleaudit.sandbox.spec import SandboxSpec


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
