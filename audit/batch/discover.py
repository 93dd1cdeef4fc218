"""``discover_runs``: the runs of any batch source, in source order, with ids unique within the batch."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from typing import Collection

from mleaudit.audit.batch.entries import BatchEntry, BatchSourceError, competition_from_run_name
from mleaudit.audit.batch.folders import _GLOB_MAGIC, DiscoveredRuns, _runs_of_glob, _runs_of_group
from mleaudit.audit.batch.jsonl import _runs_of_jsonl


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
