"""Auditing one run of a batch (:func:`_audit_one`): the task the local worker processes and the
dask workers (:mod:`mleaudit.audit.batch_dask`) run, importable by name; errors become a message."""

from __future__ import annotations

import time
from typing import Any

from mleaudit.audit.batch.entries import BatchEntry, BatchOptions
from mleaudit.audit.batch.folders import _single_file_run
from mleaudit.audit.errors import AuditError


def _audit_one(entry: BatchEntry, options: BatchOptions) -> tuple[dict[str, Any] | None, str | None, float]:
    """Audit one run; errors become a message (this runs in a worker process)."""
    from mleaudit.grading.errors import GradingError

    from mleaudit.audit.pipeline import AuditRequest, run_audit

    started = time.perf_counter()
    if entry.refused is not None:
        return None, entry.refused, 0.0
    try:
        # a folder, or one file read as a run of its own (a folder of AIDE solutions)
        is_run = entry.run_dir.is_dir() or (entry.run_dir.is_file() and _single_file_run(entry.run_dir))
    except OSError as exc:  # a name too long, a folder that cannot be searched
        return None, f"run folder {entry.run_dir} cannot be read ({exc.strerror or exc}; listed at {entry.listed_at})", 0.0
    if not is_run:
        return None, f"run folder {entry.run_dir} does not exist (listed at {entry.listed_at})", 0.0
    request = AuditRequest(
        run_dir=entry.run_dir,
        competition_id=entry.competition_id,
        corpus_dir=options.corpus_dir,
        corpus_index=options.corpus_index,
        index_exhaustive=options.index_exhaustive,
        similarity=options.similarity,
        grade=options.grade,
        include_experimental=options.include_experimental,
        competitions_root=options.competitions_root,
        data_dir=options.data_dir,
        rules_root=options.rules_root,
        baseline_path=options.baseline_path,
        fail_on=options.fail_on,
    )
    try:
        report = run_audit(request).to_dict()
    except (AuditError, GradingError) as exc:
        return None, str(exc), time.perf_counter() - started
    except OSError as exc:
        return None, f"{exc.filename or entry.run_dir}: {exc.strerror or exc}", time.perf_counter() - started
    report["run"]["run_id"] = entry.run_id  # the batch's id, unique within the batch
    return report, None, time.perf_counter() - started
