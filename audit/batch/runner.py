"""``audit_batch``: every run of a batch audited, in worker processes or on a dask cluster; a run that
cannot be audited becomes a result with an error and never stops the batch."""

from __future__ import annotations

import contextlib
import logging
import os
import sys
from concurrent.futures import ProcessPoolExecutor, as_completed
from typing import Any, Callable, Iterable, Iterator

from mleaudit.audit.batch.entries import BatchEntry, BatchOptions, BatchResult
from mleaudit.audit.batch.task import _audit_one

logger = logging.getLogger(__name__)


@contextlib.contextmanager
def _safe_spawn_path() -> Iterator[None]:
    """Keep the current directory off the path of spawned workers while they start.

    ``multiprocessing`` starts a spawned worker as ``python -c ...``, which puts the current
    directory first on ``sys.path`` and imports ``multiprocessing`` and its dependencies from
    there before the worker receives this process's (cleaned) path. The batch is often started
    from inside an audited run group, whose files must never be imported; ``PYTHONSAFEPATH=1``
    (inherited by the workers) leaves the current directory off.
    """
    before = os.environ.get("PYTHONSAFEPATH")
    os.environ["PYTHONSAFEPATH"] = "1"
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("PYTHONSAFEPATH", None)
        else:
            os.environ["PYTHONSAFEPATH"] = before


def _prepare_embedded(entries: Iterable[BatchEntry], options: BatchOptions) -> None:
    """Prepare embedded competitions once, before workers start (they would race on it)."""
    from mleaudit.grading import CompetitionRegistry, find_competitions_root, prepare_competition, resolve_data_dir
    from mleaudit.grading.errors import GradingError

    if not options.grade:
        return
    registry = CompetitionRegistry(find_competitions_root(options.competitions_root), resolve_data_dir(options.data_dir))
    for competition_id in sorted({e.competition_id for e in entries if e.competition_id}):
        try:
            spec = registry.get(competition_id)
            if not registry.is_prepared(spec.id) and spec.is_embedded:
                prepare_competition(spec, registry)
        except GradingError as exc:  # reported per run by the run's own audit
            logger.debug("not preparing %s: %s", competition_id, exc)


def audit_batch(
    entries: list[BatchEntry],
    options: BatchOptions = BatchOptions(),
    progress: Callable[[BatchResult], None] | None = None,
    *,
    scheduler: str | None = None,
) -> list[BatchResult]:
    """Audit every run of a batch, ``options.jobs`` runs at a time, or on a dask cluster.

    Parameters
    ----------
    entries : list of BatchEntry
        From :func:`discover_runs`.
    options : BatchOptions
    progress : callable, optional
        Called with each :class:`BatchResult` as soon as its run is done (completion order).
    scheduler : str, optional
        A dask.distributed scheduler's address: the runs are audited on its workers
        (:func:`mleaudit.audit.batch_dask.audit_on_dask`) instead of the local process pool.

    Returns
    -------
    list of BatchResult
        One per entry, in the entries' order. Failed audits carry ``error``; nothing is raised
        for a single run.

    Raises
    ------
    mleaudit.audit.batch_dask.DaskUnavailable
        With ``scheduler``: dask.distributed is missing or the scheduler does not answer.
    """
    _prepare_embedded(entries, options)
    results: dict[int, BatchResult] = {}

    def done(index: int, outcome: tuple[Any, ...]) -> None:
        # (report, error, seconds) or, from an audit that kept the run's code, (..., code)
        report, error, seconds, *rest = outcome
        code = rest[0] if rest and report is not None else None
        result = BatchResult(entry=entries[index], report=report, error=error, seconds=seconds, code=code)
        results[index] = result
        if progress is not None:
            progress(result)

    if scheduler is not None:
        from mleaudit.audit.batch_dask import audit_on_dask

        audit_on_dask(entries, options, scheduler, done)
        return [results[i] for i in range(len(entries))]
    jobs = options.jobs
    if jobs > 1 and sys.flags.ignore_environment and not sys.flags.safe_path:
        # -E without -P: the workers would ignore PYTHONSAFEPATH and start with the current
        # directory first on their path (see _safe_spawn_path)
        logger.warning("python -E without -P: auditing the runs one at a time in this process")
        jobs = 1
    if jobs <= 1 or len(entries) <= 1:
        for index, entry in enumerate(entries):
            try:
                outcome = _audit_one(entry, options)
            except Exception as exc:  # as in a worker: one broken run must not lose the others
                logger.debug("audit of %s crashed", entry.run_dir, exc_info=True)
                outcome = (None, f"audit crashed: {type(exc).__name__}: {exc}", 0.0)
            done(index, outcome)
    else:
        import multiprocessing

        # spawn: workers start clean (no inherited threads or parser state)
        with _safe_spawn_path():
            pool = ProcessPoolExecutor(max_workers=jobs, mp_context=multiprocessing.get_context("spawn"))
            try:
                futures = {pool.submit(_audit_one, entry, options): i for i, entry in enumerate(entries)}
                for future in as_completed(futures):
                    index = futures[future]
                    try:
                        outcome = future.result()
                    except Exception as exc:  # a crashed worker must not lose the other runs
                        outcome = (None, f"audit crashed: {type(exc).__name__}: {exc}", 0.0)
                    done(index, outcome)
            except BaseException:
                # Ctrl-C: runs not started yet are dropped instead of audited before the batch stops
                pool.shutdown(wait=False, cancel_futures=True)
                raise
            pool.shutdown(wait=True)
    return [results[i] for i in range(len(entries))]
