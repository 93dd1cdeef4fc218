"""Batch audits: find the runs of a source and audit them in parallel.

Four sources are read:

- a **run group** folder ``runs/<run-group>/`` with ``metadata.json`` (``{"run_group", "created_at",
  "runs": {<run-id>: {...}}}``, written by MLE-bench's ``run_agent.py``) and one folder per run,
  named ``<competition-id>_<uuid>``. The order of ``runs`` is the run-group order that MLE-bench's
  seed aggregation relies on;
- a **folder of runs** without ``metadata.json``, in any layout ``mleaudit audit`` reads: each
  sub-folder is a run (MLE-bench run folders, AIDE journals, AutoKaggle or MLAgentBench folders),
  in name order; a folder without sub-folders holds single-file runs, each code, notebook or log
  file one run (a folder of AIDE solutions, of DSBench dumps);
- a **glob pattern** (``runs/*/seed-*``): each matching folder, or code, notebook or log file, is a run;
- a **submission JSONL** as made by MLE-bench's ``experiments/make_submission.py``: one object per
  line with ``competition_id``, ``submission_path``, ``logs_path``, ``code_path`` (each may be
  ``null``); the run folder is the folder those paths share (``<run>/submission/submission.csv``,
  ``<run>/logs/...``, ``<run>/code/...``). A malformed line is listed as a run not audited, with its
  line number and why.

A run's competition comes from the JSONL line, the run's metadata or its ``<competition-id>_<uuid>``
folder name; ``competition`` (``--competition``) names it for the runs that have none.
:func:`audit_batch` audits every run with :func:`mleaudit.audit.pipeline.run_audit` in worker processes.
A run that cannot be audited (missing folder, unknown competition, unreadable files) becomes a
:class:`BatchResult` with an ``error``; it never stops the batch.

Routine Listings
----------------
entries
    :class:`BatchEntry`, :class:`BatchOptions`, :class:`BatchResult`, :class:`BatchSourceError`,
    :func:`competition_from_run_name`, :func:`looks_like_run`.
folders
    Runs of a run group, of a folder of runs and of a glob pattern; :class:`DiscoveredRuns`.
jsonl
    Runs of a submission JSONL.
discover
    :func:`discover_runs`: any source, ids unique within the batch.
reports
    :func:`report_file_name` and :func:`write_text_atomic`.
task
    Auditing one run: the task the worker processes and the dask workers run.
runner
    :func:`audit_batch`: the runs audited in worker processes (or on dask, :mod:`mleaudit.audit.batch_dask`).

Notes
-----
Every public name is re-exported here, so callers import from ``mleaudit.audit.batch``. Imports
point down the listing above: a module imports only modules listed before it, plus
``mleaudit.audit.errors``, ``mleaudit.audit.model`` and ``mleaudit.grading``; the run loader and
the pipeline are imported where a run is looked at or audited, so that listing a batch stays
cheap. A new kind of batch source is read in a module of its own beside ``folders`` and
``jsonl`` and chosen in :func:`discover_runs`; the batch summary is
:mod:`mleaudit.audit.batch_summary`.
"""

from mleaudit.audit.batch.discover import discover_runs
from mleaudit.audit.batch.entries import (
    JSONL_PATH_KEYS,
    RUN_PARTS,
    BatchEntry,
    BatchOptions,
    BatchResult,
    BatchSourceError,
    competition_from_run_name,
    looks_like_run,
)
from mleaudit.audit.batch.folders import MAX_GLOB_MATCHES, MAX_METADATA_BYTES, DiscoveredRuns
from mleaudit.audit.batch.reports import report_file_name, write_text_atomic
from mleaudit.audit.batch.runner import audit_batch

__all__ = [
    "BatchEntry",
    "BatchOptions",
    "BatchResult",
    "BatchSourceError",
    "DiscoveredRuns",
    "audit_batch",
    "discover_runs",
    "looks_like_run",
    "report_file_name",
    "write_text_atomic",
    "competition_from_run_name",
    "RUN_PARTS",
    "JSONL_PATH_KEYS",
    "MAX_METADATA_BYTES",
    "MAX_GLOB_MATCHES",
]
