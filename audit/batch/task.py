"""Auditing one run of a batch (:func:`_audit_one`): the task the local worker processes and the
dask workers (:mod:`mleaudit.audit.batch_dask`) run, importable by name; errors become a message.

With similarity on, the task also hands back the run's code for the batch's copy clusters
(:class:`mleaudit.audit.clusters.RunCode`, from the expansion the audit made), so that the batch
never loads and expands a run a second time; the run's files are read again only where a flagged
run — run pair names a log record.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any

from mleaudit.audit.batch.entries import BatchEntry, BatchOptions
from mleaudit.audit.batch.folders import _single_file_run
from mleaudit.audit.errors import AuditError

if TYPE_CHECKING:  # pragma: no cover - types only
    from mleaudit.audit.clusters import RunCode

logger = logging.getLogger(__name__)

#: What a worker hands back for one run: its report (or ``None``), the error, the seconds it took
#: and its code for the copy clusters (``None`` without similarity or report).
Outcome = tuple[dict[str, Any] | None, str | None, float, "RunCode | None"]


def _audit_one(entry: BatchEntry, options: BatchOptions) -> Outcome:
    """Audit one run; errors become a message (this runs in a worker process)."""
    from mleaudit.grading.errors import GradingError

    from mleaudit.audit.pipeline import AuditRequest, run_audit

    started = time.perf_counter()
    if entry.refused is not None:
        return None, entry.refused, 0.0, None
    try:
        # a folder, or one file read as a run of its own (a folder of AIDE solutions)
        is_run = entry.run_dir.is_dir() or (entry.run_dir.is_file() and _single_file_run(entry.run_dir))
    except OSError as exc:  # a name too long, a folder that cannot be searched
        return None, f"run folder {entry.run_dir} cannot be read ({exc.strerror or exc}; listed at {entry.listed_at})", 0.0, None
    if not is_run:
        return None, f"run folder {entry.run_dir} does not exist (listed at {entry.listed_at})", 0.0, None
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
    expansion: list[tuple[Any, Any]] = []

    def keep(run: Any, expanded: Any) -> None:
        expansion.append((run, expanded))

    try:
        report = run_audit(request, on_expanded=keep if options.similarity else None).to_dict()
    except (AuditError, GradingError) as exc:
        return None, str(exc), time.perf_counter() - started, None
    except OSError as exc:
        return None, f"{exc.filename or entry.run_dir}: {exc.strerror or exc}", time.perf_counter() - started, None
    report["run"]["run_id"] = entry.run_id  # the batch's id, unique within the batch
    code = None
    if expansion:
        try:
            code = _run_code(entry.run_id, *expansion[0])
        except Exception:  # noqa: BLE001 - the batch reads the run itself then, as it always could
            logger.debug("no copy-cluster code from the audit of %s", entry.run_dir, exc_info=True)
    return report, None, time.perf_counter() - started, code


def _run_code(run_id: str, run: Any, expanded: Any) -> RunCode:
    """The run's code for the copy clusters, from the run and its expansion before attribution:
    what :func:`mleaudit.audit.batch_cli` would read again (its ``host_text`` is left to the batch)."""
    from functools import partial

    from mleaudit.audit.clusters import RunCode
    from mleaudit.audit.pipeline import artifact_text
    from mleaudit.audit.report_similarity import record_locations
    from mleaudit.audit.starter import starter_units

    return RunCode(run_id=run_id, units=expanded.code_units, locations=record_locations(expanded.log_events),
                   starter=starter_units(expanded.code_units, partial(artifact_text, run), expanded.log_events))
