"""A batch's runs: :class:`BatchEntry` before the audit, :class:`BatchResult` after it, the
:class:`BatchOptions` every run is audited with, and what a run folder's name and parts say."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from mleaudit.audit.errors import AuditError
from mleaudit.audit.model import Severity


#: Folder names that mark the parts of an MLE-bench run folder.
RUN_PARTS = ("submission", "logs", "code")
#: Keys of one submission JSONL line (MLE-bench's ``make_submission.py``).
JSONL_PATH_KEYS = ("submission_path", "logs_path", "code_path")


class BatchSourceError(AuditError):
    """A batch source (run-group folder or submission JSONL) cannot be read."""


@dataclass(frozen=True, slots=True, kw_only=True)
class BatchEntry:
    """One run of a batch, before it is audited.

    Parameters
    ----------
    run_id : str
        Unique within the batch (the run folder's name, de-duplicated with ``-2``, ``-3``...).
    run_dir : Path
        The run folder (may not exist: the run's result then carries the error).
    competition_id : str or None
        From the JSONL line, the run's own metadata, or the ``<competition-id>_<uuid>`` folder
        name; ``None`` lets :func:`mleaudit.audit.pipeline.run_audit` read the run's metadata.
    listed_at : str
        Where the source lists the run (``metadata.json runs[3]``, ``submission.jsonl:4``), for
        error messages.
    refused : str or None
        Why the run is not audited although the source lists it (its folder resolves outside the
        run group or the submission list's folder); the batch reports it as the run's error and
        never reads ``run_dir``.
    """

    run_id: str
    run_dir: Path
    competition_id: str | None
    listed_at: str
    refused: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class BatchOptions:
    """How each run of a batch is audited (the same switches as ``mleaudit audit``).

    ``jobs`` is the number of worker processes (1 = audit in this process).
    """

    jobs: int = 1
    similarity: bool = True
    grade: bool = True
    corpus_dir: Path | None = None
    corpus_index: Path | None = None
    index_exhaustive: bool = False
    include_experimental: bool = False
    competitions_root: Path | None = None
    data_dir: Path | None = None
    rules_root: Path | None = None
    baseline_path: Path | None = None
    fail_on: Severity = Severity.HIGH


@dataclass(frozen=True, slots=True, kw_only=True)
class BatchResult:
    """The outcome of auditing one run.

    ``report`` is :meth:`mleaudit.audit.report.AuditReport.to_dict` or ``None`` when the audit failed;
    ``error`` then says why. ``seconds`` is the wall time of that run's audit. ``code`` is the
    run's code for the batch's copy clusters (a :class:`mleaudit.audit.clusters.RunCode` without
    ``host_text``), handed back by the audit when similarity is on; ``None`` otherwise.
    """

    entry: BatchEntry
    report: Mapping[str, Any] | None
    error: str | None
    seconds: float
    code: Any = None


_UUID_TAIL = re.compile(r"_[0-9a-f]{8}(?:-[0-9a-f]{4}){0,3}(?:-[0-9a-f]{12})?$", re.IGNORECASE)


def competition_from_run_name(name: str) -> str | None:
    """The competition id of an MLE-bench run folder name ``<competition-id>_<uuid>``.

    Returns ``None`` when the name does not end in ``_<hex uuid>`` (then the run's own metadata
    must say which competition it is).
    """
    match = _UUID_TAIL.search(name)
    if match is None or match.start() == 0:
        return None
    return name[: match.start()]


def looks_like_run(folder: Path) -> bool:
    """Whether ``folder`` has the parts of an MLE-bench run folder (``submission/``, ``logs/``, ``code/`` or ``run.log``)."""
    return any((folder / part).is_dir() for part in RUN_PARTS) or (folder / "run.log").is_file()
