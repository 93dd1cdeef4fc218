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
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import re
import sys
import tempfile
import time
import unicodedata
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable, Collection, Iterable, Iterator, Mapping

from mleaudit.audit.errors import AuditError
from mleaudit.audit.model import Severity
from mleaudit.grading import untrusted_json
from mleaudit.grading.submission_list import confine_path, listed_path, read_listed_records

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
]

logger = logging.getLogger(__name__)

#: Folder names that mark the parts of an MLE-bench run folder.
RUN_PARTS = ("submission", "logs", "code")
#: Keys of one submission JSONL line (MLE-bench's ``make_submission.py``).
JSONL_PATH_KEYS = ("submission_path", "logs_path", "code_path")
#: A run group's ``metadata.json`` larger than this is refused (real ones are a few kB per run).
MAX_METADATA_BYTES = 64 * 1024 * 1024
#: Characters of the readable part of a report file name (the hash that follows keeps names apart).
_SLUG_CHARS = 60


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
    ``error`` then says why. ``seconds`` is the wall time of that run's audit.
    """

    entry: BatchEntry
    report: Mapping[str, Any] | None
    error: str | None
    seconds: float


# -- discovering runs -----------------------------------------------------------------------------

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


def _unique_ids(entries: list[BatchEntry]) -> list[BatchEntry]:
    """Entries with ids unique within the batch: a repeated id gets ``-2``, ``-3``... (skipping
    suffixed ids that the source itself lists)."""
    taken = {entry.run_id for entry in entries}
    seen: set[str] = set()
    unique = []
    for entry in entries:
        run_id = entry.run_id
        if run_id in seen:
            count = 2
            while f"{entry.run_id}-{count}" in taken or f"{entry.run_id}-{count}" in seen:
                count += 1
            run_id = f"{entry.run_id}-{count}"
        seen.add(run_id)
        unique.append(entry if run_id == entry.run_id else replace(entry, run_id=run_id))
    return unique


def _read_metadata(metadata_path: Path) -> Any:
    try:
        with metadata_path.open("rb") as stream:
            data = stream.read(MAX_METADATA_BYTES + 1)
    except OSError as exc:
        raise BatchSourceError(f"{metadata_path}: cannot read ({exc.strerror or exc})") from exc
    if len(data) > MAX_METADATA_BYTES:
        raise BatchSourceError(f"{metadata_path}: larger than {MAX_METADATA_BYTES // (1024 * 1024)} MiB; not a run-group metadata file")
    try:
        return untrusted_json.loads_unique(data)
    except json.JSONDecodeError as exc:
        raise BatchSourceError(f"{metadata_path}: not a readable JSON file ({exc.msg})") from None


def _group_entry(folder: Path, folder_real: Path, run_id: str, listed_at: str) -> BatchEntry:
    """The entry of one run id of a run group's metadata, refused when its folder is not inside the group."""
    competition = competition_from_run_name(run_id)
    listed = folder / run_id
    try:
        real = Path(os.path.realpath(listed))
    except (OSError, ValueError) as exc:
        return BatchEntry(run_id=run_id, run_dir=listed, competition_id=competition, listed_at=listed_at,
                          refused=f"run id {run_id!r} ({listed_at}) is not a usable folder name ({exc}); not audited")
    if real == folder_real or not real.is_relative_to(folder_real):
        return BatchEntry(run_id=run_id, run_dir=listed, competition_id=competition, listed_at=listed_at,
                          refused=f"run id {run_id!r} ({listed_at}) resolves to {real}, which is not a folder inside "
                                  f"the run group {folder_real}; not audited")
    return BatchEntry(run_id=run_id, run_dir=real, competition_id=competition, listed_at=listed_at)


def _single_file_run(path: Path) -> bool:
    """Whether a file is something ``mleaudit audit`` reads as a run of its own (code, a notebook, a log)."""
    from mleaudit.audit.run import ArtifactKind, classify_path

    kind, _ = classify_path(path.name)
    return kind in (ArtifactKind.CODE, ArtifactKind.NOTEBOOK, ArtifactKind.LOG) and not _DOCUMENTATION.match(path.name)


#: A source naming no file or folder but holding these is a glob pattern.
_GLOB_MAGIC = re.compile(r"[*?[]")
#: Files of a folder of runs that describe the folder, not a run (README.md, LICENSE, CHANGELOG.txt).
_DOCUMENTATION = re.compile(r"(?i)^(readme|license|licence|changelog|notice|authors)(\.(md|txt|rst))?$")
#: Paths a glob pattern may match at most.
MAX_GLOB_MATCHES = 100_000


class DiscoveredRuns(list):
    """The runs of a source (a list of :class:`BatchEntry`) and what the source holds that was not
    taken as a run: ``skipped``, ``(path, reason)`` pairs (hidden entries, symbolic links, files
    beside run folders, folders a run group's metadata does not list ...), so that nothing the
    source holds is left out unsaid."""

    def __init__(self, entries: Iterable[BatchEntry] = (), skipped: Iterable[tuple[str, str]] = ()) -> None:
        super().__init__(entries)
        self.skipped: list[tuple[str, str]] = list(skipped)


def _entry(path: Path) -> BatchEntry:
    # A folder with no file in it is listed, not audited: nothing of a run is there to read.
    refused = None if path.is_file() or _holds_a_file(path) else f"{path} holds no file; not audited"
    return BatchEntry(run_id=path.name, run_dir=path, competition_id=competition_from_run_name(path.name),
                      listed_at=str(path), refused=refused)


def _runs_of_folder(folder: Path) -> DiscoveredRuns:
    """The runs of a folder of runs in any layout ``mleaudit audit`` reads: each sub-folder, or, in a
    folder without sub-folders, each file read as a single-file run (an AIDE solution, a log). What
    is not taken (hidden entries, symbolic links, files beside run folders, files that are neither
    code, notebooks nor logs) is listed in ``skipped``."""
    try:
        children = sorted(folder.iterdir())
    except OSError as exc:
        raise BatchSourceError(f"{folder}: cannot list ({exc.strerror or exc})") from exc
    skipped: list[tuple[str, str]] = []
    visible = []
    for child in children:
        if child.name.startswith("."):
            skipped.append((str(child), "hidden; not taken as a run"))
        elif child.is_symlink():
            skipped.append((str(child), "a symbolic link; not followed"))
        else:
            visible.append(child)
    folders = [p for p in visible if p.is_dir()]
    if folders:
        runs = folders
        skipped += [(str(p), "a file beside the run folders; not taken as a run") for p in visible if not p.is_dir()]
    else:
        runs = [p for p in visible if p.is_file() and _single_file_run(p)]
        skipped += [(str(p), "not code, a notebook or a log (or documentation); not taken as a run")
                    for p in visible if p not in runs]
    if not runs:
        raise BatchSourceError(f"{folder}: no metadata.json, no run folders and no code, notebook or log files inside")
    return DiscoveredRuns((_entry(path) for path in runs), skipped)


def _holds_a_file(folder: Path, *, limit: int = 10_000) -> bool:
    """Whether a file lies anywhere under ``folder`` (symbolic links not followed; at most ``limit`` entries looked at)."""
    seen = 0
    for _, dirs, files in os.walk(folder):
        if files:
            return True
        seen += len(dirs)
        if seen > limit:
            return True  # too many folders to look through: the audit will say what it finds
    return False


def _glob(pattern: str) -> list[Path]:
    """The paths a glob pattern matches, ``**`` included, without following symbolic links into folders
    (:meth:`pathlib.Path.glob`; :func:`glob.glob` follows them, and a link loop never ends)."""
    parts = Path(pattern).parts
    fixed = 0
    while fixed < len(parts) and not _GLOB_MAGIC.search(parts[fixed]):
        fixed += 1
    anchor = Path(*parts[:fixed]) if fixed else Path(".")
    if fixed == len(parts):
        return [anchor] if os.path.lexists(anchor) else []
    matches = []
    try:
        for match in anchor.glob(str(Path(*parts[fixed:]))):
            matches.append(match)
            if len(matches) > MAX_GLOB_MATCHES:
                raise BatchSourceError(f"{pattern}: matches more than {MAX_GLOB_MATCHES:,} paths; name the runs "
                                       "more narrowly")
    except (ValueError, OSError) as exc:  # a pattern pathlib refuses, a folder that cannot be listed
        raise BatchSourceError(f"{pattern}: not a usable glob pattern ({exc})") from exc
    return matches


def _runs_of_glob(pattern: str) -> DiscoveredRuns:
    """Each file or folder a glob pattern matches is a run (``runs/*/seed-*``, ``logs/*.jsonl``), once
    (by real path), and not again inside another matched folder; links and other files are listed."""
    skipped: list[tuple[str, str]] = []
    seen: set[str] = set()
    candidates = []
    for path in sorted(_glob(pattern)):
        if path.is_symlink():
            skipped.append((str(path), "a symbolic link; not followed"))
            continue
        real = os.path.realpath(path)
        if real in seen:
            continue
        seen.add(real)
        if path.is_dir() or _single_file_run(path):
            candidates.append(path)
        else:
            skipped.append((str(path), "not code, a notebook or a log; not taken as a run"))
    folders = [Path(os.path.realpath(p)) for p in candidates if p.is_dir()]
    runs = []
    for path in candidates:
        real = Path(os.path.realpath(path))
        outer = next((f for f in folders if f != real and real.is_relative_to(f)), None)
        if outer is not None:  # a part of a run the pattern also matched (its code/, a file in it)
            skipped.append((str(path), f"inside the matched run {outer}; audited with it"))
        else:
            runs.append(path)
    if not runs:
        raise BatchSourceError(f"{pattern}: matches no run folder and no code, notebook or log file")
    return DiscoveredRuns((_entry(path) for path in runs), skipped)


def _runs_of_group(folder: Path) -> DiscoveredRuns:
    metadata_path = folder / "metadata.json"
    if metadata_path.is_file():
        if metadata_path.is_symlink():
            raise BatchSourceError(f"{metadata_path}: a symbolic link; the run group's metadata must be a file of its own")
        metadata = _read_metadata(metadata_path)
        runs = metadata.get("runs") if isinstance(metadata, dict) else None
        if isinstance(runs, dict):
            run_ids = list(runs)
        elif isinstance(runs, list) and all(isinstance(r, str) for r in runs):
            run_ids = list(runs)
        else:
            raise BatchSourceError(f"{metadata_path}: field 'runs' must be an object keyed by run id (MLE-bench's run-group metadata)")
        if not run_ids:
            raise BatchSourceError(f"{metadata_path}: lists no runs (its 'runs' is empty)")
        folder_real = Path(os.path.realpath(folder))
        listed = {str(run_id) for run_id in run_ids}
        # Folders the metadata does not name are not runs of the group: listed, never dropped unsaid.
        unlisted = [(str(p), "a folder metadata.json does not list; not taken as a run of the group")
                    if p.is_dir() and not p.is_symlink() else (str(p), "not a run folder of the group; not taken as a run")
                    for p in sorted(folder.iterdir()) if p.name not in listed and p.name != "metadata.json"]
        return DiscoveredRuns((_group_entry(folder, folder_real, str(run_id), f"{metadata_path} runs[{i}]")
                               for i, run_id in enumerate(run_ids)), unlisted)
    if looks_like_run(folder):
        raise BatchSourceError(f"{folder}: this folder is one run (it has submission/, logs/, code/ or run.log); "
                               "to audit a single run use `mleaudit audit RUN_DIR`")
    return _runs_of_folder(folder)


def _run_folder(path: Path, base: Path) -> Path:
    """The run folder of a path inside ``<run>/submission``, ``<run>/logs`` or ``<run>/code``, looked
    for below ``base`` (the submission list's folder) only."""
    for parent in [path, *path.parents]:
        if parent == base or parent == parent.parent:
            break
        if parent.name in RUN_PARTS:
            return parent.parent
    return path.parent


def _runs_of_jsonl(path: Path, competition: str | None = None) -> list[BatchEntry]:
    try:
        records, problems = read_listed_records(path, default_competition=competition)
    except (OSError, UnicodeDecodeError) as exc:
        raise BatchSourceError(f"{path}: cannot read ({exc})") from exc
    base = path.parent
    base_real = Path(os.path.realpath(base))
    entries: list[tuple[int, BatchEntry]] = []
    for listed in records:
        paths = []
        refusal = None
        for key in JSONL_PATH_KEYS:
            resolved, problem = listed_path(listed, key, base)
            if problem:
                problems.append(problem)
                break
            if resolved is None:
                continue
            # Confined after resolution (links and '..' included): a line must not make the
            # batch audit a folder outside the submission list's own folder.
            real = confine_path(resolved, base_real)
            if real is None:
                refusal = refusal or (f"{listed.listed_at}: {key} {listed.record[key]!r} resolves outside the folder "
                                      f"of the submission list ({base_real}); not audited")
                paths.append(Path(listed.record[key]))
            else:
                paths.append(real)
        else:
            where = listed.listed_at
            if not paths:
                problems.append((listed.line, f"{where}: submission_path, logs_path and code_path are all null; "
                                              "nothing to audit"))
                continue
            folders = {_run_folder(p, base_real) for p in paths}
            if refusal is None and len(folders) > 1:
                listed_folders = ", ".join(sorted(str(f) for f in folders))
                problems.append((listed.line, f"{where}: the paths point into different run folders ({listed_folders})"))
                continue
            folder = sorted(folders)[0]
            if refusal is None and Path(os.path.realpath(folder)) == base_real:
                refusal = (f"{where}: the paths name no run folder below the submission list's folder (a file beside "
                           "the list would make its whole folder one run); not audited")
            if refusal is None and confine_path(folder, base_real) is None:
                refusal = (f"{where}: the run folder {folder} is not inside the folder of the submission list "
                           f"({base_real}); not audited")
            entries.append((listed.line, BatchEntry(run_id=folder.name or listed.competition_id, run_dir=folder,
                                                    competition_id=listed.competition_id, listed_at=where,
                                                    refused=refusal)))
    if not entries:
        messages = [message for _, message in sorted(problems)]
        if messages:
            raise BatchSourceError("; ".join(messages[:20])
                                   + (f"; and {len(messages) - 20} more" if len(messages) > 20 else ""))
        raise BatchSourceError(f"{path}: no runs listed")
    # A bad line is one run that cannot be audited, listed in its place with its reason (its
    # run path is the line, so that no two bad lines look like one run listed twice).
    for line, message in problems:
        where = f"{path}:{line}" if line else str(path)
        entries.append((line or 0, BatchEntry(run_id=f"{path.stem}-line-{line}" if line else f"{path.stem}-unreadable",
                                              run_dir=Path(where), competition_id=None, listed_at=where,
                                              refused=message)))
    return [entry for _, entry in sorted(entries, key=lambda item: item[0])]


def discover_runs(source: str | os.PathLike[str], *, competition: str | None = None,
                  known_competitions: Collection[str] | None = None) -> DiscoveredRuns:
    """The runs of a batch source, in source order.

    Parameters
    ----------
    source : path or glob pattern
        An MLE-bench run-group folder (with ``metadata.json``, or holding run folders), a
        submission JSONL file, a folder of runs in any layout ``mleaudit audit`` reads (each
        sub-folder is a run; in a folder without sub-folders each code, notebook or log file
        is a single-file run), or a glob pattern whose matches are the runs (see the module
        docstring).
    competition : str, optional
        The competition of every run for which the source names none (no metadata, no JSONL
        ``competition_id``, no ``<competition-id>_<uuid>`` folder name).
    known_competitions : collection of str, optional
        The registry's ids: a folder name's ``<prefix>_<hex>`` names a competition only when its
        prefix is one of them (``attempt_20240101`` does not), so ``competition`` applies.

    Returns
    -------
    DiscoveredRuns
        The entries (run ids unique within the list; a malformed JSONL line is an entry that is
        not audited, ``refused`` saying why, in its place) and ``skipped``: what the source
        holds that is not taken as a run, with the reason.

    Raises
    ------
    BatchSourceError
        The source does not exist, matches nothing, is a single run, or lists no run at all
        (every bad line is named, with its line number).
    """
    path = Path(source)
    if path.is_dir():
        entries = _runs_of_group(path)
    elif path.is_file():
        if path.suffix.lower() not in (".jsonl", ".json"):
            raise BatchSourceError(f"{path}: expected a run-group folder, a folder of runs or a submission .jsonl "
                                   "file (to audit a single file use `mleaudit audit FILE`)")
        entries = _runs_of_jsonl(path, competition)
    elif _GLOB_MAGIC.search(str(source)):
        entries = _runs_of_glob(str(source))
    else:
        raise BatchSourceError(f"{path}: no such file or folder")
    skipped = list(getattr(entries, "skipped", ()))
    if known_competitions is not None and not path.is_file():
        # a folder name's prefix that is no competition names none (JSONL ids are the list's own)
        entries = [replace(entry, competition_id=None) if entry.competition_id not in known_competitions
                   and entry.competition_id == competition_from_run_name(entry.run_id) else entry for entry in entries]
    if competition is not None:
        entries = [entry if entry.competition_id is not None or entry.refused is not None
                   else replace(entry, competition_id=competition) for entry in entries]
    return DiscoveredRuns(_unique_ids(list(entries)), skipped)


def report_file_name(run_id: str) -> str:
    """The file name of a run's report: ``<slug>-<hash>.json``.

    The slug is the run id without accents (NFKD), with every run of characters other than
    ASCII letters, digits, ``.``, ``_`` and ``-`` turned into one ``_`` (no leading dot or
    dash, at most 60 characters), for reading; the hash is the first 16 hex digits of the SHA-256 of the exact
    run id, so two run ids never share a file name (``a b`` and ``a_b``, ``Run`` and ``run`` on
    a case-insensitive file system, two long ids with one prefix).

    Examples
    --------
    >>> report_file_name("spaceship-titanic_0a1b")
    'spaceship-titanic_0a1b-7e7faef4cca07921.json'
    >>> report_file_name("a b") != report_file_name("a_b")
    True
    """
    digest = hashlib.sha256(run_id.encode("utf-8", errors="surrogatepass")).hexdigest()[:16]
    # accents dropped for reading ("é" -> "e"); the hash, of the exact id, keeps ids apart
    ascii_id = unicodedata.normalize("NFKD", run_id).encode("ascii", errors="ignore").decode("ascii")
    slug = re.sub(r"[^A-Za-z0-9._-]+", "_", ascii_id).lstrip(".-")[:_SLUG_CHARS] or "run"
    return f"{slug}-{digest}.json"


def _file_mode() -> int:
    """The mode a new file gets under the current umask (``mkstemp`` makes its files 0600)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return 0o666 & ~mask


def write_text_atomic(path: Path, text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` all at once: a temporary file beside it, synced, then renamed over it.

    An interrupted batch (Ctrl-C, a killed process) therefore leaves each report either as it
    was or complete, never half written; a link at ``path`` is replaced, not followed. The
    temporary file (``.<name>.<random>.tmp``) is removed when writing fails.

    Raises
    ------
    OSError
        If the folder is not writable.
    """
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name[:80]}.", suffix=".tmp", dir=path.parent)
    try:
        # backslashreplace: a run id from a file name that is not UTF-8 holds lone surrogates
        with os.fdopen(handle, "w", encoding="utf-8", errors="backslashreplace") as stream:
            stream.write(text)
            stream.flush()
            os.fsync(stream.fileno())
        os.chmod(temporary, _file_mode())
        os.replace(temporary, path)
    except BaseException:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        raise


# -- auditing -------------------------------------------------------------------------------------


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

    def done(index: int, outcome: tuple[dict[str, Any] | None, str | None, float]) -> None:
        report, error, seconds = outcome
        result = BatchResult(entry=entries[index], report=report, error=error, seconds=seconds)
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
