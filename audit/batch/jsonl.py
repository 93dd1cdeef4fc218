"""Runs of a submission JSONL (MLE-bench's ``make_submission.py``): each line's run folder, confined
to the list's own folder; a malformed line is a run not audited, with its line number and why."""

from __future__ import annotations

import os
from pathlib import Path

from mleaudit.audit.batch.entries import JSONL_PATH_KEYS, RUN_PARTS, BatchEntry, BatchSourceError
from mleaudit.grading.submission_list import confine_path, listed_path, read_listed_records


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
