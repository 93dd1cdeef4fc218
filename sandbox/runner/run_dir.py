"""The run dir before and after a run whose sandbox never started.

A run dir must be new or empty; the one exception is the record of an earlier run whose
sandbox never started (only ``run.json`` with ``status: sandbox_failed`` and ``run.log``),
which a rerun replaces. :func:`record_failed_start` leaves exactly such a record.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
from pathlib import Path
from typing import Any, Mapping

from mleaudit.audit.run import RunLayout
from mleaudit.sandbox.errors import RunDirError, SpecError
from mleaudit.sandbox.extract import RUN_JSON_SCHEMA_VERSION, RunDirStage
from mleaudit.sandbox.spec import SandboxSpec

logger = logging.getLogger(__name__)

#: ``status`` of a run whose sandbox could not start: the agent never ran.
SANDBOX_FAILED = "sandbox_failed"


def check_host_paths(spec: SandboxSpec) -> None:
    problems = []
    if spec.data_dir is not None and not spec.data_dir.is_dir():
        problems.append(f"data: {spec.data_dir} is not a folder")
    if spec.agent_dir is not None and not spec.agent_dir.is_dir():
        problems.append(f"agent_dir: {spec.agent_dir} is not a folder")
    for i, mount in enumerate(spec.mounts):
        if not mount.source.exists():
            problems.append(f"mounts[{i}].source: {mount.source} does not exist")
    if problems:
        raise SpecError("sandbox spec names missing host paths:\n  " + "\n  ".join(problems))



def _failed_start_record(run_dir: Path) -> bool:
    """Whether a run dir holds only the record of a run whose sandbox never started."""
    names = {p.name for p in run_dir.iterdir()}
    if not names <= {RunLayout.RUN_META[0], RunLayout.RUN_LOG} or RunLayout.RUN_META[0] not in names:
        return False
    if any(p.is_symlink() or not p.is_file() for p in run_dir.iterdir()):
        return False
    try:
        record = json.loads((run_dir / RunLayout.RUN_META[0]).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(record, dict) and record.get("status") == SANDBOX_FAILED and record.get("agent_started") is False


def prepare_run_dir(run_dir: Path) -> None:
    if run_dir.is_symlink() or (run_dir.exists() and not run_dir.is_dir()):
        raise RunDirError(f"--run-dir {run_dir}: exists and is not a folder")
    if run_dir.exists() and any(run_dir.iterdir()):
        if not _failed_start_record(run_dir):
            raise RunDirError(f"--run-dir {run_dir}: exists and is not empty; choose a new folder")
        # A rerun after a failed start: the agent never ran there, so its record is replaced.
        for name in (RunLayout.RUN_META[0], RunLayout.RUN_LOG):
            (run_dir / name).unlink(missing_ok=True)
        logger.info("replacing the failed-start record in %s", run_dir)
    try:
        run_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise RunDirError(f"--run-dir {run_dir}: cannot create it: {exc.strerror or exc}") from None


def record_failed_start(stage: RunDirStage, record: Mapping[str, Any], events: tuple[Mapping[str, Any], ...]) -> tuple[Mapping[str, Any], ...]:
    """Leave only ``run.json`` (and ``run.log``) for a run whose sandbox never started; a rerun replaces them."""
    shutil.rmtree(stage.root, ignore_errors=True)
    run_log = stage.run_dir / RunLayout.RUN_LOG
    if not run_log.exists():
        run_log.write_text("", encoding="utf-8")
    data = {"schema_version": RUN_JSON_SCHEMA_VERSION, **record, "events": list(events)}
    target = stage.run_dir / RunLayout.RUN_META[0]
    tmp = target.with_name(target.name + ".tmp")
    tmp.write_text(json.dumps(data, sort_keys=True, indent=2, default=str) + "\n", encoding="utf-8")
    os.replace(tmp, target)
    return events
