"""A separate, bounded process that runs the validator for the validation endpoint.

Validation reads the answers and parses a file the agent wrote, so it runs outside the host
process: a long-lived :mod:`multiprocessing` process of the ``spawn`` context (no copy of the
host's memory or threads) that imports :mod:`grading` once (the modules in ``preload``, and
the validator's own ``warm()``: :meth:`mleaudit.sandbox.competition.CompetitionValidator.warm` loads the
competition's spec), then takes one submission path at a time over a pipe and sends back a plain dict (the outcome and the submission's shape, see
:mod:`mleaudit.sandbox.feedback`). Its address space is capped with ``RLIMIT_AS``, and each call has a
wall-clock bound: on a timeout, a crash or a memory error the process is killed and a fresh one
started for the next call, and the caller gets ``timeout`` or ``validator-failed``.

The validator must be picklable (a module-level function, or an object of an importable class
such as :class:`mleaudit.sandbox.competition.CompetitionValidator`): it is pickled here and unpickled in
the worker after the limits are set. As for any ``spawn`` process, the host program's main module
must be safe to import (the ``if __name__ == "__main__":`` idiom); console scripts are.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import pickle
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

__all__ = ["WorkerResult", "ValidationWorker"]

logger = logging.getLogger(__name__)

#: Seconds a fresh worker may take to import grading and report ready.
STARTUP_TIMEOUT_S = 120.0
#: Threads the numeric libraries may start in the worker (one validation at a time needs one).
_THREAD_ENV = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMEXPR_NUM_THREADS")


@dataclass(frozen=True, slots=True, kw_only=True)
class WorkerResult:
    """One call's result.

    Attributes
    ----------
    status : str
        ``"ok"`` (``outcome`` and ``shape`` set), ``"timeout"`` (over the time bound; the worker
        was killed) or ``"failed"`` (the validator raised, the worker crashed or ran out of memory).
    outcome : dict or None
        :meth:`mleaudit.sandbox.feedback.ValidationOutcome.to_dict` of the validator's result.
    shape : dict or None
        :meth:`mleaudit.sandbox.feedback.SubmissionShape.to_dict` of what :func:`mleaudit.sandbox.feedback.read_shape`
        read (header cells, row and line counts, the line of the outcome's row).
    error : str
        For ``"failed"``: the exception's type name (host-side only).
    """

    status: str
    outcome: dict[str, Any] | None = None
    shape: dict[str, Any] | None = None
    error: str = ""


def _set_memory_limit(memory_bytes: int | None) -> None:
    if not memory_bytes:
        return
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    limit = memory_bytes if hard == resource.RLIM_INFINITY else min(memory_bytes, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard if hard != resource.RLIM_INFINITY else limit))


def _worker_main(conn: Any, validator_bytes: bytes, memory_bytes: int | None, needs_shape: bool,
                 preload: tuple[str, ...] = ()) -> None:
    """The worker process: set limits, import and warm up, then answer paths until told to stop."""
    import importlib
    import warnings

    warnings.simplefilter("ignore")  # library warnings about the agent's file say nothing to the host
    for name in _THREAD_ENV:
        os.environ[name] = "1"
    try:
        _set_memory_limit(memory_bytes)
        for module in preload:  # imported once, before the first call
            importlib.import_module(module)
        from mleaudit.sandbox.feedback import as_outcome, read_shape

        validator = pickle.loads(validator_bytes)
        warm = getattr(validator, "warm", None)
        if callable(warm):
            warm()
    except BaseException as exc:  # noqa: BLE001 - report and exit; the parent restarts us
        conn.send(("failed", type(exc).__name__))
        return
    conn.send(("ready", None))
    while True:
        try:
            message = conn.recv()
        except (EOFError, OSError):
            return
        if not isinstance(message, tuple) or message[0] != "check":
            return
        path = Path(message[1])
        try:
            outcome = as_outcome(validator(path))
            shape = None
            if needs_shape and not outcome.valid:
                shape = read_shape(path, row=outcome.row).to_dict()
            conn.send(("ok", (outcome.to_dict(), shape)))
        except MemoryError:
            conn.send(("failed", "MemoryError"))
            return  # a fresh process for the next call
        except Exception as exc:  # noqa: BLE001 - the parent replies generically
            conn.send(("failed", type(exc).__name__))


class ValidationWorker:
    """Run a validator in a bounded worker process, one call at a time.

    Parameters
    ----------
    validator : callable
        ``path -> ValidationOutcome | SubmissionCheck | (valid, message)``; must be picklable.
    time_limit_s : float
        Wall-clock bound of one call (validation plus reading the file's shape), in seconds.
    memory_bytes : int or None
        ``RLIMIT_AS`` of the worker process, in bytes (``None``: no limit).
    needs_shape : bool
        Read the header cells, row and line counts of invalid submissions in the worker, and
        the line of the row an outcome names.
    preload : tuple of str
        Modules the worker imports before it reports ready (e.g. ``("mleaudit.grading.grade",)``); a
        validator with a ``warm()`` method (:class:`mleaudit.sandbox.competition.CompetitionValidator`)
        imports what it needs there.

    Raises
    ------
    TypeError
        If the validator cannot be pickled.
    """

    def __init__(self, validator: Callable[[Path], Any], *, time_limit_s: float, memory_bytes: int | None,
                 needs_shape: bool = True, preload: tuple[str, ...] = ()) -> None:
        try:
            self._validator_bytes = pickle.dumps(validator)
        except Exception as exc:  # noqa: BLE001 - pickling errors have many types
            raise TypeError(
                f"the validator {validator!r} cannot be pickled for the validation worker ({type(exc).__name__}); "
                "use a module-level function or an object of an importable class"
            ) from None
        self.time_limit_s = float(time_limit_s)
        self.memory_bytes = memory_bytes
        self.needs_shape = needs_shape
        self.preload = tuple(preload)
        self._context = multiprocessing.get_context("spawn")
        self._process: Any = None
        self._conn: Any = None
        self._ready = False
        self._lock = threading.Lock()
        self.restarts = 0

    def start(self) -> None:
        """Start the worker process (it reports ready once grading is imported)."""
        with self._lock:
            self._spawn()

    def _spawn(self) -> None:
        parent, child = self._context.Pipe(duplex=True)
        process = self._context.Process(
            target=_worker_main, args=(child, self._validator_bytes, self.memory_bytes, self.needs_shape, self.preload),
            name="validation-worker", daemon=True,
        )
        process.start()
        child.close()
        self._process, self._conn, self._ready = process, parent, False

    def _kill(self) -> None:
        process, conn = self._process, self._conn
        self._process, self._conn, self._ready = None, None, False
        if conn is not None:
            conn.close()
        if process is not None:
            if process.is_alive():
                process.kill()
            process.join(timeout=5)

    def _wait_ready(self) -> bool:
        if self._ready:
            return True
        if self._conn is None:
            self._spawn()
            self.restarts += 1
        try:
            if not self._conn.poll(STARTUP_TIMEOUT_S):
                return False
            kind, _ = self._conn.recv()
        except (EOFError, OSError):
            return False
        self._ready = kind == "ready"
        return self._ready

    def check(self, path: Path) -> WorkerResult:
        """Validate one file in the worker, within the time bound.

        Parameters
        ----------
        path : pathlib.Path
            The submission file (readable by the worker).

        Returns
        -------
        WorkerResult
            ``"ok"`` with the outcome, or ``"timeout"`` / ``"failed"``; after either of these
            the worker has been killed and the next call starts a fresh one.
        """
        with self._lock:
            if not self._wait_ready():
                self._kill()
                return WorkerResult(status="failed", error="worker did not start")
            started = time.monotonic()
            try:
                self._conn.send(("check", str(path)))
                if not self._conn.poll(self.time_limit_s):
                    logger.warning("validation of %s exceeded %.0f s; restarting the worker", path, self.time_limit_s)
                    self._kill()
                    return WorkerResult(status="timeout")
                kind, payload = self._conn.recv()
            except (EOFError, OSError, ValueError):
                self._kill()
                return WorkerResult(status="failed", error="worker exited")
            logger.debug("validation took %.2f s", time.monotonic() - started)
            if kind == "ok":
                outcome, shape = payload
                return WorkerResult(status="ok", outcome=outcome, shape=shape)
            # A failed call leaves the process in an unknown state (a MemoryError ends it).
            if kind == "failed" and payload == "MemoryError":
                self._kill()
            return WorkerResult(status="failed", error=str(payload))

    def stop(self) -> None:
        """Ask the worker to exit, then kill it if it does not.

        Does not wait for a call in progress: that call then ends as ``"failed"``.
        """
        process, conn = self._process, self._conn
        if conn is not None and self._lock.acquire(blocking=False):
            try:
                conn.send(("stop", None))
                if process is not None:
                    process.join(timeout=2)
            except (OSError, ValueError):
                pass
            finally:
                self._lock.release()
        if process is not None and process.is_alive():
            process.kill()
            process.join(timeout=5)
        if conn is not None:
            try:
                conn.close()
            except OSError:
                pass
        self._process, self._conn, self._ready = None, None, False
