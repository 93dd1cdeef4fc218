"""Batch audits past one machine: each run audited on a worker of a dask.distributed cluster.

``mleaudit audit batch SOURCE --executor dask --scheduler tcp://HOST:8786`` sends the same per-run
function the local process pool runs (:func:`mleaudit.audit.batch.task._audit_one`) to the cluster's workers, one
task per run, and receives each result as soon as its run is done (the progress bar moves as
they come back). The workers need ``mleaudit`` installed and must see the paths the batch names:
the run folders, the corpus folder (``--corpus``), the competitions and prepared data, the
rules and the baseline (a shared file system, or the same paths on every machine).

A task whose worker is lost (the machine or process died, the scheduler gave up on it:
``KilledWorker``, a closed connection) is submitted once more; when the second attempt fails as
well the run is listed with the reason, and the batch goes on. When the cluster has had no
worker at all for :data:`NO_WORKER_TIMEOUT_S` seconds, the runs still waiting are listed as not
audited and the batch ends. The scheduler's own
``distributed.scheduler.allowed-failures`` decides how often it reschedules a task by itself
before reporting it lost.

dask.distributed is optional: ``pip install 'mleaudit[dask]'``.
"""

from __future__ import annotations

import logging
import time
import uuid
from typing import TYPE_CHECKING, Any, Callable, Sequence

from mleaudit.audit.errors import AuditError

if TYPE_CHECKING:  # pragma: no cover - types only
    from mleaudit.audit.batch.entries import BatchEntry, BatchOptions

__all__ = ["DASK_INSTALL_HINT", "DaskUnavailable", "audit_on_dask"]

logger = logging.getLogger(__name__)

DASK_INSTALL_HINT = "pip install 'mleaudit[dask]'"
#: Seconds to wait for the scheduler to answer before giving up.
CONNECT_TIMEOUT_S = 30
#: Seconds the cluster may have no worker while runs wait before they are listed as not audited.
NO_WORKER_TIMEOUT_S = 60
#: Seconds between looks at the cluster while no result comes.
POLL_S = 0.2

#: ``(report, error, seconds)``, and the run's code for the copy clusters where the task kept it
#: (see :data:`mleaudit.audit.batch.task.Outcome`).
Outcome = tuple[Any, ...]


class DaskUnavailable(AuditError):
    """dask.distributed is not installed, or its scheduler cannot be reached."""


def audit_on_dask(entries: Sequence[BatchEntry], options: BatchOptions, scheduler: str,
                  done: Callable[[int, Outcome], None], *,
                  task: Callable[[BatchEntry, BatchOptions], Outcome] | None = None) -> None:
    """Audit every entry on the cluster behind ``scheduler``; ``done`` receives each outcome.

    Parameters
    ----------
    entries : sequence of BatchEntry
        The runs (from :func:`mleaudit.audit.batch.discover_runs`).
    options : BatchOptions
        As for the local pool; ``options.jobs`` is not used (the cluster's workers decide).
    scheduler : str
        The scheduler's address (``tcp://10.0.0.5:8786``).
    done : callable
        Called in this process as ``done(index, (report, error, seconds[, code]))`` for each run,
        in the order the runs finish.
    task : callable, optional
        The per-run function (default :func:`mleaudit.audit.batch.task._audit_one`); it must be importable by
        name on the workers.

    Raises
    ------
    DaskUnavailable
        dask.distributed is not installed, or the scheduler does not answer within
        :data:`CONNECT_TIMEOUT_S` seconds.
    """
    try:
        from distributed import Client, as_completed
    except ImportError:
        raise DaskUnavailable(f"--executor dask needs dask.distributed; install it with: {DASK_INSTALL_HINT}") from None
    if task is None:
        from mleaudit.audit.batch.task import _audit_one as task
    try:
        client = Client(scheduler, timeout=CONNECT_TIMEOUT_S, set_as_default=False)
    except (OSError, TimeoutError, ValueError) as exc:
        raise DaskUnavailable(f"cannot reach the dask scheduler at {scheduler}: {type(exc).__name__}: {exc}") from None
    batch = uuid.uuid4().hex[:12]
    try:
        attempts: dict[Any, tuple[int, int]] = {}

        def submit(index: int, attempt: int) -> Any:
            future = client.submit(task, entries[index], options, key=f"mleaudit-audit-{batch}-{index}-{attempt}",
                                   pure=False)
            attempts[future] = (index, attempt)
            return future

        pending = as_completed([submit(index, 0) for index in range(len(entries))], loop=client.loop)
        idle_since: float | None = None
        while not pending.is_empty():
            ready = pending.next_batch(block=False)
            if not ready:
                # No result yet: a cluster left without workers would keep the batch waiting forever.
                if client.scheduler_info().get("workers"):
                    idle_since = None
                elif idle_since is None:
                    idle_since = time.monotonic()
                elif time.monotonic() - idle_since > NO_WORKER_TIMEOUT_S:
                    for future, (index, _) in list(attempts.items()):
                        future.cancel()
                        done(index, (None, f"not audited: the dask cluster had no worker for {NO_WORKER_TIMEOUT_S} s",
                                     0.0))
                    attempts.clear()
                    return
                time.sleep(POLL_S)
                continue
            for future in ready:
                index, attempt = attempts.pop(future)
                try:
                    outcome = future.result()
                except Exception as exc:  # noqa: BLE001 - a lost worker, a task that raised: the run, not the batch
                    if attempt == 0:
                        logger.info("run %s: %s on the cluster; submitted once more", entries[index].run_id,
                                    type(exc).__name__)
                        pending.add(submit(index, 1))
                        continue
                    outcome = (None, f"audit failed twice on the dask cluster ({type(exc).__name__}: "
                                     f"{_first_sentence(exc)})", 0.0)
                finally:
                    future.release()
                done(index, outcome)
    finally:
        client.close()


def _first_sentence(exc: BaseException) -> str:
    """The first sentence of an exception's message (dask's KilledWorker explains itself at length)."""
    text = " ".join(str(exc).split())
    end = text.find(". ")
    return (text[: end + 1] if end >= 0 else text)[:300]
