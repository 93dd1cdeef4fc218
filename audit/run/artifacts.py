"""The run model: :class:`Artifact` (one file of a run) and :class:`Run` (a run as read from disk)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from mleaudit.audit.model import Skipped
from mleaudit.audit.run.decoding import decode_text
from mleaudit.audit.run.kinds import ArtifactKind, _partly_readable
from mleaudit.audit.run.layout import RunLayout
from mleaudit.audit.run.reading import _read_capped, _read_prefix


@dataclass(frozen=True, slots=True, kw_only=True)
class Artifact:
    """One file of a run.

    ``path`` is POSIX relative to the run root, printable: a name that is not valid UTF-8 is
    written with ``\\xNN`` escapes (:func:`display_name`); ``abs_path`` is where the file lies
    on disk. ``language`` is the grammar name for code files, else ``None``. ``size`` is the
    file's size in bytes on disk. ``truncated`` marks a log larger than
    ``RunLayout.MAX_LOG_BYTES``, of which only the first part is read (``read_size`` bytes,
    ending at a line end); ``sha256`` is then the digest of that part. ``root`` is the run root
    the file was found under (set by :func:`load_run`): reads then open every folder between
    the root and the file without following symbolic links. ``sniffed`` says how the kind was
    told from the file's content when its name says nothing (:func:`classify_content`), else
    ``None``.
    """

    path: str
    abs_path: Path
    kind: ArtifactKind
    language: str | None
    size: int
    sha256: str
    truncated: bool = False
    read_size: int | None = None
    root: Path | None = None
    sniffed: str | None = None

    def read_bytes(self) -> bytes:
        """The file's bytes (for a truncated log: its first ``read_size`` bytes).

        Raises
        ------
        OSError
            If the file cannot be read, is a symlink, lies under a symlinked folder (when
            ``root`` is set), or is over the caps.
        """
        if self.truncated or (self.kind is ArtifactKind.LOG
                              and (self.sniffed is not None or _partly_readable(self.path))):
            return _read_prefix(self.abs_path, self.path, RunLayout.MAX_LOG_BYTES, root=self.root)
        if self.size > RunLayout.MAX_FILE_BYTES:
            raise OSError(f"{self.path}: {self.size} bytes is over the {RunLayout.MAX_FILE_BYTES}-byte cap")
        return _read_capped(self.abs_path, self.path, root=self.root)

    def read_text(self) -> str:
        """The file decoded by :func:`decode_text` (UTF-8, invalid bytes replaced).

        Raises
        ------
        OSError
            If the file cannot be read, or is larger than the caps (see :meth:`read_bytes`).
        """
        return decode_text(self.read_bytes(), code=self.kind is ArtifactKind.CODE)[0]


@dataclass(frozen=True, slots=True, kw_only=True)
class Run:
    """An agent run as read from disk (artifacts sorted by path).

    ``skipped`` lists what could not be read (it keeps a run from a clean verdict); ``notes``
    lists what the audit could not do but that is no sign of anything (no submission file);
    ``layout`` is one of :data:`RunLayout.LAYOUTS` (:func:`detect_layout`).
    """

    run_id: str
    root: Path
    competition_id: str | None
    agent_id: str | None
    artifacts: tuple[Artifact, ...]
    submission: Artifact | None
    meta: Mapping[str, Any] = field(default_factory=dict)
    skipped: tuple[Skipped, ...] = ()
    notes: tuple[Skipped, ...] = ()
    layout: str = "folder"
