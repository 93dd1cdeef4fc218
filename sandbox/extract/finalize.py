"""Turning the staged outputs into the run dir: the MLE-bench layout, the host's calls log, ``run.json``."""

from __future__ import annotations

import json
import os
import shutil
import stat
from pathlib import Path
from typing import Any, Mapping

from mleaudit.audit.run import RunLayout
from mleaudit.sandbox.extract.events import bounded_events, new_event
from mleaudit.sandbox.extract.sanitize import DIR_MODE, sanitize_outputs
from mleaudit.sandbox.extract.stage import RunDirStage
from mleaudit.sandbox.validation import VALIDATION_CALLS_FILE

#: Version of the ``run.json`` layout written here.
RUN_JSON_SCHEMA_VERSION = 1
#: Events kept in run.json; more are counted only.
_AGENT_CALLS_LOG = "validation_calls.agent.jsonl"


def _write_json(path: Path, data: Mapping[str, Any]) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, sort_keys=True, indent=2, default=str) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def _ensure_folder(folder: Path, label: str) -> list[dict[str, Any]]:
    """Make sure a staged output folder is a real directory (not a link) before it is walked.

    Parameters
    ----------
    folder : pathlib.Path
        The staged folder.
    label : str
        Its name in the run dir.

    Returns
    -------
    list of dict
        A ``refused-output`` event when something else stood in its place and was replaced
        by an empty folder.
    """
    try:
        info = os.lstat(folder)
    except FileNotFoundError:
        folder.mkdir(mode=DIR_MODE)
        return []
    if stat.S_ISDIR(info.st_mode):
        return []
    os.unlink(folder)
    folder.mkdir(mode=DIR_MODE)
    return [new_event("refused-output", f"{stat.filemode(info.st_mode)} entry in place of the folder removed", label)]


def finalize_run_dir(
    stage: RunDirStage,
    record: Mapping[str, Any],
    *,
    validation_enabled: bool,
    extra_events: tuple[Mapping[str, Any], ...] = (),
) -> tuple[Mapping[str, Any], ...]:
    """Move the staged outputs into the MLE-bench layout and write ``run.json``.

    Parameters
    ----------
    stage : RunDirStage
        The staging area of the run.
    record : mapping
        The run record (spec, timings, exit status, limits, validation calls, network);
        ``schema_version`` and ``events`` are added.
    validation_enabled : bool
        Whether the endpoint was served (then ``logs/validation_calls.jsonl`` is always
        written, empty when there were no calls).
    extra_events : tuple of mapping
        Events noticed elsewhere (denied network requests), recorded first.

    Returns
    -------
    tuple of mapping
        Every event recorded in ``run.json``.
    """
    run_dir = stage.run_dir
    owner = (os.geteuid(), os.getegid()) if os.geteuid() == 0 else None
    events: list[Mapping[str, Any]] = list(extra_events)
    for name, folder in stage.writable.items():
        events.extend(_ensure_folder(folder, name))
        events.extend(sanitize_outputs(folder, name, owner=owner))
        os.replace(folder, run_dir / name)
    logs = run_dir / RunLayout.LOGS_DIR
    agent_copy = logs / VALIDATION_CALLS_FILE
    if os.path.lexists(agent_copy):
        target = logs / _AGENT_CALLS_LOG
        n = 1
        while os.path.lexists(target):
            n += 1
            target = logs / f"validation_calls.agent{n}.jsonl"
        os.replace(agent_copy, target)
        events.append(new_event(
            "spoofed-validation-log",
            f"the agent wrote logs/{VALIDATION_CALLS_FILE} itself; kept as logs/{target.name}, the host's record replaces it",
            f"{RunLayout.LOGS_DIR}/{target.name}",
        ))  # fmt: skip
    if validation_enabled:
        if stage.calls_log.is_file():
            shutil.copyfile(stage.calls_log, agent_copy)
        else:
            agent_copy.write_text("", encoding="utf-8")
    run_log = run_dir / RunLayout.RUN_LOG
    if not run_log.exists():
        run_log.write_text("", encoding="utf-8")
    events = bounded_events(events)
    data = {"schema_version": RUN_JSON_SCHEMA_VERSION, **record, "events": list(events)}
    _write_json(run_dir / RunLayout.RUN_META[0], data)
    shutil.rmtree(stage.root, ignore_errors=True)
    return tuple(events)
