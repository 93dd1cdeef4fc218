"""The run model: what an agent run directory holds, and ``load_run`` to read one.

Layout contract (MLE-bench's): ``submission/submission.csv``, ``logs/``, ``code/``, ``run.log``
and an optional ``run.json``/``metadata.json``. A bare folder of ``.py``/``.ipynb``/``.log``/
``.txt``/``.json`` files (AutoKaggle phase folders, an AIDE output dir) is read too.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from audit.model import Skipped

__all__ = ["RunLayout", "ArtifactKind", "Artifact", "Run", "load_run"]


class RunLayout:
    """Names of the run-dir contract shared by the sandbox (which writes runs) and the audit."""

    SUBMISSION_DIR = "submission"
    SUBMISSION_FILE = "submission.csv"
    LOGS_DIR = "logs"
    CODE_DIR = "code"
    RUN_LOG = "run.log"
    RUN_META = ("run.json", "metadata.json")
    #: Files larger than this are listed under ``skipped`` instead of read.
    MAX_FILE_BYTES = 20 * 1024 * 1024


class ArtifactKind(enum.Enum):
    """What a file of the run is."""

    CODE = "code"
    NOTEBOOK = "notebook"
    LOG = "log"
    SUBMISSION = "submission"
    DATA = "data"
    OTHER = "other"


@dataclass(frozen=True, slots=True, kw_only=True)
class Artifact:
    """One file of a run.

    ``path`` is POSIX relative to the run root; ``abs_path`` is where it lies on disk.
    ``language`` is the grammar name for code files, else ``None``.
    """

    path: str
    abs_path: Path
    kind: ArtifactKind
    language: str | None
    size: int
    sha256: str

    def read_text(self) -> str:
        """The file decoded as UTF-8 (invalid bytes replaced).

        Raises
        ------
        OSError
            If the file cannot be read, or is larger than ``RunLayout.MAX_FILE_BYTES``.
        """
        if self.size > RunLayout.MAX_FILE_BYTES:
            raise OSError(f"{self.path}: {self.size} bytes is over the {RunLayout.MAX_FILE_BYTES}-byte cap")
        return self.abs_path.read_bytes().decode("utf-8", errors="replace")


@dataclass(frozen=True, slots=True, kw_only=True)
class Run:
    """An agent run as read from disk (artifacts sorted by path)."""

    run_id: str
    root: Path
    competition_id: str | None
    agent_id: str | None
    artifacts: tuple[Artifact, ...]
    submission: Artifact | None
    meta: Mapping[str, Any] = field(default_factory=dict)
    skipped: tuple[Skipped, ...] = ()
