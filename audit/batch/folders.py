"""Runs of a folder: a run group with ``metadata.json``, a folder of runs in any layout, or the
matches of a glob pattern; what the source holds that is not taken as a run is listed with why."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any, Iterable

from mleaudit.audit.batch.entries import BatchEntry, BatchSourceError, competition_from_run_name, looks_like_run
from mleaudit.grading import untrusted_json


#: A run group's ``metadata.json`` larger than this is refused (real ones are a few kB per run).
MAX_METADATA_BYTES = 64 * 1024 * 1024


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
