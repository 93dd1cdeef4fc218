"""The run model: what an agent run directory holds, and ``load_run`` to read one.

Layout contract (MLE-bench's): ``submission/submission.csv``, ``logs/``, ``code/``, ``run.log``
and an optional ``run.json``/``metadata.json``. A bare folder of ``.py``/``.ipynb``/``.log``/
``.txt``/``.json`` files (AutoKaggle phase folders, an AIDE output dir) is read too, and the
layout found is recorded (:data:`RunLayout.LAYOUTS`).

Run contents are untrusted. Size caps (:class:`RunLayout`): a file over ``MAX_FILE_BYTES`` is
not read, except a log, of which the first ``MAX_LOG_BYTES`` are read (to the last line end)
and the rest is reported; nothing is ever read whole into memory past those caps. Text is
decoded by :func:`decode_text` (UTF-8, BOMs honoured, invalid bytes replaced and counted).
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

__all__ = [
    "RunLayout",
    "ArtifactKind",
    "Artifact",
    "Run",
    "load_run",
    "classify_path",
    "decode_text",
    "detect_layout",
]

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
    #: Files larger than this are listed under ``skipped`` instead of read (text logs excepted).
    MAX_FILE_BYTES = 20 * 1024 * 1024
    #: How much of a text log is read: a larger log is read up to here (cut back to the last
    #: line end) and the rest is listed under ``skipped``. 20 MB of text reads in seconds.
    MAX_LOG_BYTES = 20 * 1024 * 1024
    #: AutoKaggle's phase folders (``<phase>/<phase>_code.py``, ``_output.txt``, ``review.json``).
    AUTOKAGGLE_PHASES = (
        "understand_background", "pre_eda", "data_cleaning", "deep_eda", "feature_engineering", "model_build_predict",
    )  # fmt: skip
    #: Layout names :func:`detect_layout` returns.
    LAYOUTS = ("mlebench", "aide", "autokaggle", "folder", "file")


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
    ``language`` is the grammar name for code files, else ``None``. ``size`` is the file's
    size in bytes on disk. ``truncated`` marks a log larger than ``RunLayout.MAX_LOG_BYTES``, of
    which only the first part is read (``read_size`` bytes, ending at a line end); ``sha256``
    is then the digest of that part.
    """

    path: str
    abs_path: Path
    kind: ArtifactKind
    language: str | None
    size: int
    sha256: str
    truncated: bool = False
    read_size: int | None = None

    def read_bytes(self) -> bytes:
        """The file's bytes (for a truncated log: its first ``read_size`` bytes).

        Raises
        ------
        OSError
            If the file cannot be read, is a symlink, or is over the caps.
        """
        if self.truncated or (self.kind is ArtifactKind.LOG and _partly_readable(self.path)):
            return _read_prefix(self.abs_path, self.path, RunLayout.MAX_LOG_BYTES)
        if self.size > RunLayout.MAX_FILE_BYTES:
            raise OSError(f"{self.path}: {self.size} bytes is over the {RunLayout.MAX_FILE_BYTES}-byte cap")
        return _read_capped(self.abs_path, self.path)

    def read_text(self) -> str:
        """The file decoded by :func:`decode_text` (UTF-8, invalid bytes replaced).

        Raises
        ------
        OSError
            If the file cannot be read, or is larger than the caps (see :meth:`read_bytes`).
        """
        return decode_text(self.read_bytes())[0]


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


#: Extensions read as agent logs or transcripts (``.eval``: Inspect eval-log archives).
_LOG_SUFFIXES = frozenset({".log", ".txt", ".json", ".jsonl", ".ndjson", ".md", ".out", ".err", ".eval"})
#: Logs that are archives, not text: never read in part.
_ARCHIVE_SUFFIXES = frozenset({".eval"})
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


def _read_prefix(abs_path: Path, rel_path: str, limit: int) -> bytes:
    """The first ``limit`` bytes of a regular file (not following symlinks), cut back to the
    last line end when the file is longer, so no record or UTF-8 character is split.

    Raises
    ------
    OSError
        If the file is a symlink, not a regular file or unreadable.
    """
    fd = os.open(abs_path, _OPEN_FLAGS)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise OSError(f"{rel_path}: not a regular file")
        with os.fdopen(fd, "rb", closefd=True) as handle:
            fd = -1
            data = handle.read(limit + 1)
    finally:
        if fd >= 0:
            os.close(fd)
    if len(data) <= limit:
        return data
    data = data[:limit]
    line_end = data.rfind(b"\n")
    return data[: line_end + 1] if line_end >= 0 else data


#: Share of undecodable bytes above which a file counts as binary rather than mis-encoded text.
BINARY_INVALID_SHARE = 0.10
_UTF8_REPLACEMENT = "\ufffd".encode("utf-8")


def decode_text(data: bytes) -> tuple[str, str | None]:
    """Decode a run file's bytes, saying when it was not clean UTF-8.

    Parameters
    ----------
    data : bytes
        The file's bytes (untrusted).

    Returns
    -------
    (str, str or None)
        The text and a note, ``None`` for clean UTF-8. A UTF-8 byte-order mark is dropped; a
        UTF-16 one selects UTF-16 (note ``"UTF-16 text"``). Otherwise invalid bytes become
        U+FFFD and the note counts them and gives the first one's byte offset.

    Examples
    --------
    >>> decode_text(b"caf\\xe9 ok")
    ('caf\ufffd ok', 'not valid UTF-8: 1 byte(s) replaced with U+FFFD, the first at byte 3')
    """
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        return data.decode("utf-16", errors="replace"), "UTF-16 text (decoded as such)"
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    try:
        return data.decode("utf-8"), None
    except UnicodeDecodeError as exc:
        first = exc.start
    text = data.decode("utf-8", errors="replace")
    invalid = text.count("\ufffd") - data.count(_UTF8_REPLACEMENT)
    return text, f"not valid UTF-8: {invalid} byte(s) replaced with U+FFFD, the first at byte {first}"


def detect_layout(paths: set[str] | frozenset[str], single_file: bool = False) -> str:
    """Which run layout a set of run paths follows.

    Parameters
    ----------
    paths : set of str
        The run's file paths, POSIX, relative to the run root.
    single_file : bool
        Whether the run is one file given on its own.

    Returns
    -------
    str
        ``"autokaggle"`` (two or more of AutoKaggle's phase folders), ``"mlebench"``
        (``submission/``, ``logs/`` or ``code/`` folders, or ``run.log``), ``"aide"``
        (``journal.json`` at the top or ``best_solution.py`` with ``working/``), ``"file"`` for
        a single file, else ``"folder"``.

    Examples
    --------
    >>> detect_layout({"pre_eda/pre_eda_code.py", "data_cleaning/report.txt", "submission.csv"})
    'autokaggle'
    >>> detect_layout({"logs/agent.log", "submission/submission.csv"})
    'mlebench'
    """
    if single_file:
        return "file"
    folders = {p.split("/", 1)[0] for p in paths if "/" in p}
    if len(folders & set(RunLayout.AUTOKAGGLE_PHASES)) >= 2:
        return "autokaggle"
    if folders & {RunLayout.SUBMISSION_DIR, RunLayout.LOGS_DIR, RunLayout.CODE_DIR} or RunLayout.RUN_LOG in paths:
        return "mlebench"
    if "journal.json" in paths or ("best_solution.py" in paths and "working" in folders):
        return "aide"
    return "folder"


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


def _partly_readable(rel: str) -> bool:
    """Whether a file over the size cap is read in part: text logs are, archives are not."""
    kind, _ = classify_path(rel)
    return kind is ArtifactKind.LOG and PurePosixPath(rel).suffix.lower() not in _ARCHIVE_SUFFIXES


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
            if info.st_size > RunLayout.MAX_FILE_BYTES and not _partly_readable(rel):
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
        ``submission`` is the first of ``RunLayout.SUBMISSION_CANDIDATES`` that exists; when
        there is none, ``notes`` says so (a run may end without one). ``skipped`` lists
        symlinks, special files, files over ``RunLayout.MAX_FILE_BYTES``, the unread rest of
        logs over ``RunLayout.MAX_LOG_BYTES``, unreadable files and unreadable metadata.
        ``layout`` comes from :func:`detect_layout`.

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
        kind, language = classify_path(rel)
        if rel == submission_path:
            kind, language = ArtifactKind.SUBMISSION, None
        text_log = kind is ArtifactKind.LOG and _partly_readable(rel)
        truncated = text_log and size > RunLayout.MAX_LOG_BYTES
        try:
            data = _read_prefix(abs_path, rel, RunLayout.MAX_LOG_BYTES) if text_log else _read_capped(abs_path, rel)
        except OSError as exc:
            skipped.append(Skipped(path=rel, reason=f"cannot read: {exc.strerror or exc}"))
            continue
        if truncated:
            lines = data.count(b"\n")
            skipped.append(Skipped(path=rel, reason=(
                f"log of {size} bytes: only the first {len(data)} bytes ({lines} lines) were read, the "
                f"{RunLayout.MAX_LOG_BYTES}-byte log cap; the rest was not audited")))
        artifacts.append(
            Artifact(
                path=rel,
                abs_path=abs_path,
                kind=kind,
                language=language,
                size=size if truncated else len(data),
                sha256=hashlib.sha256(data).hexdigest(),
                truncated=truncated,
                read_size=len(data) if truncated else None,
            )
        )
    submission = next((a for a in artifacts if a.kind is ArtifactKind.SUBMISSION), None)
    notes: list[Skipped] = []
    if names is None and submission is None and submission_path is None and not any(
        s.path in RunLayout.SUBMISSION_CANDIDATES for s in skipped
    ):
        looked = ", ".join(RunLayout.SUBMISSION_CANDIDATES)
        notes.append(Skipped(path=RunLayout.SUBMISSION_CANDIDATES[0],
                             reason=f"no submission file (looked for {looked}): submission checks and grading not run"))
    return Run(
        run_id=_meta_str(meta, "run_id") or run_name,
        root=root,
        competition_id=_meta_str(meta, "competition_id"),
        agent_id=_meta_str(meta, "agent_id"),
        artifacts=tuple(artifacts),
        submission=submission,
        meta=meta,
        skipped=tuple(sorted(skipped, key=lambda s: s.path)),
        notes=tuple(notes),
        layout=detect_layout(paths, single_file=names is not None),
    )
