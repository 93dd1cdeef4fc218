"""The run model: what an agent run directory holds, and ``load_run`` to read one.

Layout contract (MLE-bench's): ``submission/submission.csv``, ``logs/``, ``code/``, ``run.log``
and an optional ``run.json``/``metadata.json``. A bare folder of ``.py``/``.ipynb``/``.log``/
``.txt``/``.json`` files (AutoKaggle phase folders, an AIDE output dir) is read too.
"""

from __future__ import annotations

import enum
import hashlib
import json
import logging
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, Mapping

from audit.errors import RunLayoutError
from audit.model import Skipped
from audit.parsing import language_for_path

__all__ = ["RunLayout", "ArtifactKind", "Artifact", "Run", "load_run", "classify_path"]

logger = logging.getLogger(__name__)


class RunLayout:
    """Names of the run-dir contract shared by the sandbox (which writes runs) and the audit."""

    SUBMISSION_DIR = "submission"
    SUBMISSION_FILE = "submission.csv"
    LOGS_DIR = "logs"
    CODE_DIR = "code"
    RUN_LOG = "run.log"
    RUN_META = ("run.json", "metadata.json")
    #: Where the submission may sit, first match wins: the MLE-bench layout, a bare folder
    #: (AutoKaggle writes it at the top), AIDE's working directory.
    SUBMISSION_CANDIDATES = ("submission/submission.csv", "submission.csv", "working/submission.csv")
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
        return _read_capped(self.abs_path, self.path).decode("utf-8", errors="replace")


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


#: Extensions read as agent logs or transcripts.
_LOG_SUFFIXES = frozenset({".log", ".txt", ".json", ".jsonl", ".ndjson", ".md", ".out", ".err"})
#: Extensions of tabular or binary data files (inputs, predictions, model dumps).
_DATA_SUFFIXES = frozenset(
    {
        ".csv", ".tsv", ".parquet", ".feather", ".arrow", ".npy", ".npz", ".pkl", ".pickle",
        ".joblib", ".h5", ".hdf5", ".zip", ".gz", ".tar", ".bz2", ".xz", ".7z",
    }
)  # fmt: skip
#: Directories never entered: version control, caches, editor state. Any other dot-directory
#: is skipped too (``.git``, ``.ipynb_checkpoints``, ``.venv``).
_SKIP_DIRS = frozenset({"__pycache__", "node_modules"})
#: ``O_NOFOLLOW`` makes ``open`` fail on a symlink swapped in after the walk saw a regular file.
_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_BINARY", 0)


def _read_capped(abs_path: Path, rel_path: str) -> bytes:
    """Read a regular file without following symlinks, at most ``MAX_FILE_BYTES`` bytes.

    Raises
    ------
    OSError
        If the file is a symlink, not a regular file, unreadable, or grew past the cap.
    """
    fd = os.open(abs_path, _OPEN_FLAGS)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise OSError(f"{rel_path}: not a regular file")
        with os.fdopen(fd, "rb", closefd=True) as handle:
            fd = -1
            data = handle.read(RunLayout.MAX_FILE_BYTES + 1)
    finally:
        if fd >= 0:
            os.close(fd)
    if len(data) > RunLayout.MAX_FILE_BYTES:
        raise OSError(f"{rel_path}: over the {RunLayout.MAX_FILE_BYTES}-byte cap")
    return data


def classify_path(path: str) -> tuple[ArtifactKind, str | None]:
    """The artifact kind and grammar name of a run file, from its name alone.

    Parameters
    ----------
    path : str
        POSIX path relative to the run root.

    Returns
    -------
    (ArtifactKind, str or None)
        ``CODE`` with ``"python"``/``"bash"`` for ``.py``/``.sh`` files, ``NOTEBOOK`` for
        ``.ipynb``, ``LOG`` for ``.log``/``.txt``/``.json``/``.jsonl``/``.md``, ``DATA`` for
        tables and binary dumps, else ``OTHER``; the language is ``None`` except for code.
        The submission is recognised by :func:`load_run`, not here.

    Examples
    --------
    >>> classify_path("code/train.py")
    (<ArtifactKind.CODE: 'code'>, 'python')
    >>> classify_path("logs/agent.log")
    (<ArtifactKind.LOG: 'log'>, None)
    """
    pure = PurePosixPath(path)
    suffix = pure.suffix.lower()
    language = language_for_path(path)
    if language is not None:
        return ArtifactKind.CODE, language
    if suffix == ".ipynb":
        return ArtifactKind.NOTEBOOK, None
    if len(pure.parts) == 1 and pure.name in RunLayout.RUN_META:
        # Run metadata describes the run; it is not something the agent logged.
        return ArtifactKind.OTHER, None
    if suffix in _LOG_SUFFIXES:
        return ArtifactKind.LOG, None
    if suffix in _DATA_SUFFIXES:
        return ArtifactKind.DATA, None
    return ArtifactKind.OTHER, None


def _inside(root_real: str, path: str) -> bool:
    real = os.path.realpath(path)
    return real == root_real or real.startswith(root_real.rstrip(os.sep) + os.sep)


def _walk(root: Path, names: list[str] | None, skipped: list[Skipped]) -> list[tuple[str, Path, int]]:
    """Regular files under ``root`` as ``(relative POSIX path, absolute path, size)``, sorted.

    ``names`` restricts the top level to those entries (a single-file run). Symlinks, special
    files, hidden and cache directories, files over the size cap and anything whose real path
    leaves ``root`` are not returned; all but the skipped directories are recorded in ``skipped``.
    """
    root_real = os.path.realpath(root)
    found: list[tuple[str, Path, int]] = []
    stack: list[tuple[Path, str]] = [(root, "")]
    while stack:
        directory, prefix = stack.pop()
        try:
            with os.scandir(directory) as handle:
                entries = sorted(handle, key=lambda e: e.name)
        except OSError as exc:
            reason = f"cannot list directory: {exc.strerror or exc}"
            skipped.append(Skipped(path=prefix.rstrip("/") or ".", reason=reason))
            continue
        subdirs: list[tuple[Path, str]] = []
        for entry in entries:
            if names is not None and not prefix and entry.name not in names:
                continue
            rel = prefix + entry.name
            try:
                if entry.is_symlink():
                    skipped.append(Skipped(path=rel, reason="symbolic link (not followed)"))
                    continue
                info = entry.stat(follow_symlinks=False)
            except OSError as exc:
                skipped.append(Skipped(path=rel, reason=f"cannot stat: {exc.strerror or exc}"))
                continue
            if stat.S_ISDIR(info.st_mode):
                if entry.name.startswith(".") or entry.name in _SKIP_DIRS:
                    logger.debug("not entering %s", rel)
                    continue
                if not _inside(root_real, entry.path):
                    skipped.append(Skipped(path=rel, reason="directory resolves outside the run root"))
                    continue
                subdirs.append((Path(entry.path), rel + "/"))
                continue
            if not stat.S_ISREG(info.st_mode):
                skipped.append(Skipped(path=rel, reason="not a regular file"))
                continue
            if not _inside(root_real, entry.path):
                skipped.append(Skipped(path=rel, reason="file resolves outside the run root"))
                continue
            if info.st_size > RunLayout.MAX_FILE_BYTES:
                skipped.append(
                    Skipped(path=rel, reason=f"{info.st_size} bytes is over the {RunLayout.MAX_FILE_BYTES}-byte cap")
                )
                continue
            found.append((rel, Path(entry.path), info.st_size))
        # Depth-first in name order; reversed because the stack pops from the end.
        stack.extend(reversed(subdirs))
    found.sort(key=lambda item: item[0])
    return found


def _read_meta(root: Path, paths: set[str], skipped: list[Skipped]) -> dict[str, Any]:
    """Merge ``run.json`` then ``metadata.json`` (earlier names win) from the run root."""
    meta: dict[str, Any] = {}
    for name in reversed(RunLayout.RUN_META):
        if name not in paths:
            continue
        try:
            data = json.loads(_read_capped(root / name, name).decode("utf-8", errors="replace"))
        except (OSError, ValueError, RecursionError) as exc:
            skipped.append(Skipped(path=name, reason=f"run metadata not read: {exc}"))
            continue
        if not isinstance(data, dict):
            skipped.append(Skipped(path=name, reason=f"run metadata is a JSON {type(data).__name__}, not an object"))
            continue
        meta.update(data)
    return meta


def _meta_str(meta: Mapping[str, Any], key: str) -> str | None:
    value = meta.get(key)
    if isinstance(value, str) and value.strip():
        return value.strip()
    return None


def load_run(path: str | os.PathLike[str]) -> Run:
    """Read an agent run from disk.

    Parameters
    ----------
    path : str or path-like
        An MLE-bench run directory (``submission/submission.csv``, ``logs/``, ``code/``,
        ``run.log``, optional ``run.json``/``metadata.json``), a bare folder of code, notebooks
        and logs (AutoKaggle phase folders, an AIDE output dir), or a single file (a run of one
        artifact, rooted at the file's folder).

    Returns
    -------
    Run
        Artifacts sorted by path, each with its kind, language, size (bytes) and sha256.
        ``run_id``, ``competition_id`` and ``agent_id`` come from the run metadata; ``run_id``
        falls back to the folder name (the file stem for a single file) and ``competition_id``
        is ``None`` when the metadata does not say it (no guess is made from names).
        ``submission`` is the first of ``RunLayout.SUBMISSION_CANDIDATES`` that exists.
        ``skipped`` lists symlinks, special files, files over ``RunLayout.MAX_FILE_BYTES``,
        unreadable files and unreadable metadata.

    Raises
    ------
    RunLayoutError
        If ``path`` does not exist or is neither a directory nor a regular file.

    Notes
    -----
    Run contents are untrusted: symlinks are never followed, nothing outside the run root is
    read, files are opened with ``O_NOFOLLOW`` and read up to the size cap, and dot-directories
    (``.git``) and ``__pycache__`` are not entered.
    """
    given = Path(path)
    if not os.path.lexists(given):
        raise RunLayoutError(f"run path does not exist: {given}")
    names: list[str] | None = None
    if given.is_dir():
        root = given.resolve()
        run_name = root.name
    elif given.is_file() or given.is_symlink():
        root = given.parent.resolve()
        names = [given.name]
        run_name = given.stem
    else:
        raise RunLayoutError(f"run path is neither a directory nor a regular file: {given}")

    skipped: list[Skipped] = []
    files = _walk(root, names, skipped)
    paths = {rel for rel, _, _ in files}
    meta = _read_meta(root, paths, skipped) if names is None else {}
    submission_path = next((c for c in RunLayout.SUBMISSION_CANDIDATES if c in paths), None)

    artifacts: list[Artifact] = []
    for rel, abs_path, size in files:
        try:
            data = _read_capped(abs_path, rel)
        except OSError as exc:
            skipped.append(Skipped(path=rel, reason=f"cannot read: {exc.strerror or exc}"))
            continue
        kind, language = classify_path(rel)
        if rel == submission_path:
            kind, language = ArtifactKind.SUBMISSION, None
        artifacts.append(
            Artifact(
                path=rel,
                abs_path=abs_path,
                kind=kind,
                language=language,
                size=len(data),
                sha256=hashlib.sha256(data).hexdigest(),
            )
        )
    submission = next((a for a in artifacts if a.kind is ArtifactKind.SUBMISSION), None)
    return Run(
        run_id=_meta_str(meta, "run_id") or run_name,
        root=root,
        competition_id=_meta_str(meta, "competition_id"),
        agent_id=_meta_str(meta, "agent_id"),
        artifacts=tuple(artifacts),
        submission=submission,
        meta=meta,
        skipped=tuple(sorted(skipped, key=lambda s: s.path)),
    )
