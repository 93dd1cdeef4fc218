"""``[function(t) for t in range(n)]`` over forked processes, for the all-pairs work.

Parsing and the walk over syntax trees hold the interpreter lock, so parallel work needs
processes. They are forked after the imports and inherit everything loaded (modules, grammars,
inputs): only task numbers (one byte each, through a pipe) and pickled results cross between
processes, and the figures never depend on the number of processes.
"""

from __future__ import annotations

import os
import pickle
import signal
import threading
from typing import Any, Callable, Sequence

from mleaudit.audit.errors import AuditError


#: The most tasks one :func:`_map_in_processes` call hands out (task numbers travel as one byte).
_MAX_TASKS = 256


def _deal(items: Sequence[int], count: int) -> list[list[int]]:
    """``items`` cut into at most ``count`` consecutive runs of near-equal length, in order."""
    count = max(1, min(count, len(items)))
    size, extra = divmod(len(items), count)
    runs, start = [], 0
    for k in range(count):
        stop = start + size + (k < extra)
        runs.append(list(items[start:stop]))
        start = stop
    return runs


def _can_fork() -> bool:
    """Fork only where the platform can and no other thread runs (a thread holding a lock at
    the fork would leave it locked for good in the child)."""
    return hasattr(os, "fork") and threading.active_count() == 1


def _take_tasks(function: Callable[[int], Any], tasks: int) -> dict[int, Any]:
    """Run ``function`` on task numbers read from the pipe ``tasks`` until it is empty."""
    done = {}
    while True:
        token = os.read(tasks, 1)
        if not token:
            return done
        done[token[0]] = function(token[0])


def _child(function: Callable[[int], Any], tasks: int, results: int) -> None:
    """The forked process: take tasks, send ``(True, results)`` or ``(False, exception)``, exit."""
    status = 0
    try:
        try:
            payload: tuple[bool, Any] = (True, _take_tasks(function, tasks))
        except BaseException as error:  # reported to the parent, which raises it
            status, payload = 1, (False, error)
        try:
            data = pickle.dumps(payload, protocol=pickle.HIGHEST_PROTOCOL)
        except Exception as error:
            status = 1
            data = pickle.dumps((False, AuditError(f"a worker process could not send its result: {error!r}")))
        with os.fdopen(results, "wb") as stream:
            stream.write(data)
    finally:
        # never back into the caller's code, never its exit handlers or buffered output
        os._exit(status)


def _read_all(descriptor: int) -> bytes:
    chunks = []
    while True:
        chunk = os.read(descriptor, 1 << 20)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)


def _map_in_processes(function: Callable[[int], Any], n_tasks: int, jobs: int) -> list[Any]:
    """``[function(t) for t in range(n_tasks)]``, computed by this process and ``jobs - 1``
    forked ones.

    Forked processes start with everything this one has loaded (modules, grammars, inputs), so
    only task numbers and results cross between processes. The task numbers are written to a
    pipe before the fork, one byte each, and every process reads the next one when it is free:
    a one-byte read is indivisible, so each task is taken exactly once, in order. Each forked
    process sends its results back pickled through a pipe of its own, and an exception it
    raised is raised here.

    Parameters
    ----------
    function : callable
        Takes a task number in ``range(n_tasks)``; its results must pickle.
    n_tasks : int
        At most :data:`_MAX_TASKS`.
    jobs : int
        Processes, this one included; 1 (or a platform without fork, or a process running
        other threads) computes every task here, in order.

    Returns
    -------
    list
        The results in task order.

    Raises
    ------
    AuditError
        If a forked process ended without sending its results (killed, out of memory).
    Exception
        Whatever ``function`` raised, in whichever process.
    """
    if n_tasks > _MAX_TASKS:
        raise ValueError(f"at most {_MAX_TASKS} tasks, got {n_tasks}")
    jobs = min(jobs, n_tasks)
    if jobs <= 1 or not _can_fork():
        return [function(t) for t in range(n_tasks)]
    tasks_out, tasks_in = os.pipe()
    try:
        os.write(tasks_in, bytes(range(n_tasks)))  # below PIPE_BUF: written whole, at once
    finally:
        os.close(tasks_in)
    children: list[tuple[int, int]] = []  # (process id, read end of its result pipe)
    try:
        for _ in range(jobs - 1):
            results_out, results_in = os.pipe()
            pid = os.fork()
            if pid == 0:
                os.close(results_out)
                _child(function, tasks_out, results_in)
            os.close(results_in)
            children.append((pid, results_out))
        results = _take_tasks(function, tasks_out)
        while children:
            pid, descriptor = children[0]
            data = _read_all(descriptor)
            os.close(descriptor)
            _, status = os.waitpid(pid, 0)
            children.pop(0)
            if not data:
                raise AuditError(f"a worker process ended without its results ({_exit_text(status)})")
            ok, payload = pickle.loads(data)
            if not ok:
                raise payload
            results.update(payload)
    finally:
        os.close(tasks_out)
        for pid, descriptor in children:  # left after an error here: stop them
            os.close(descriptor)
            try:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
            except (ProcessLookupError, ChildProcessError):
                pass
    if len(results) != n_tasks:
        raise AuditError(f"worker processes returned {len(results)} of {n_tasks} results")
    return [results[t] for t in range(n_tasks)]


def _exit_text(status: int) -> str:
    if os.WIFSIGNALED(status):
        return f"killed by signal {os.WTERMSIG(status)}"
    return f"exit status {os.waitstatus_to_exitcode(status)}"
