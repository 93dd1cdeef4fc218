"""Staging the agent-writable folders and turning them into the run dir afterwards.

During a run the agent writes only to ``<run>/.sandbox/out/{submission,logs,code}`` (bound at
``/home/submission``, ``/home/logs``, ``/home/code``); the host keeps its own files next to them
(the validation calls log), where the sandbox cannot reach. ``run.log`` is written by the host.
Afterwards :func:`finalize_run_dir`:

- removes what a host program must not follow out of the agent's folders: symbolic links
  (a ``submission.csv`` linking to the answers would make the grader read them), FIFOs, sockets
  and device nodes, and copies hard-linked files so they share no inode with anything else;
- moves the folders into place as ``submission/``, ``logs/``, ``code/`` (the
  :class:`audit.run.RunLayout` contract) and gives them back to the calling user;
- puts the host's calls log at ``logs/validation_calls.jsonl``; a file the agent wrote under
  that name is kept as ``logs/validation_calls.agent.jsonl`` and reported as a spoofing attempt;
- writes ``run.json`` with everything that happened, including these events.

The dot-folder is removed at the end (the audit never enters dot-folders anyway).
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from audit.run import RunLayout
from sandbox.validation import VALIDATION_CALLS_FILE

__all__ = ["RunDirStage", "finalize_run_dir", "sanitize_outputs", "RUN_JSON_SCHEMA_VERSION"]

logger = logging.getLogger(__name__)

#: Version of the ``run.json`` layout written here.
RUN_JSON_SCHEMA_VERSION = 1
#: Events kept in run.json; more are counted only.
MAX_EVENTS = 1000
_OUTPUTS = (RunLayout.SUBMISSION_DIR, RunLayout.LOGS_DIR, RunLayout.CODE_DIR)
_CALLS_LOG = VALIDATION_CALLS_FILE
_AGENT_CALLS_LOG = "validation_calls.agent.jsonl"


@dataclass(frozen=True, slots=True, kw_only=True)
class RunDirStage:
    """The hidden staging area of a run dir.

    Attributes
    ----------
    run_dir : pathlib.Path
        The final run dir.
    root : pathlib.Path
        ``<run_dir>/.sandbox`` (host only, mode 0700).
    writable : mapping of str to pathlib.Path
        ``submission``, ``logs``, ``code`` -> the host folders the sandbox writes to.
    calls_log : pathlib.Path
        The validation calls log the host appends to.
    """

    run_dir: Path
    root: Path
    writable: Mapping[str, Path]
    calls_log: Path

    @classmethod
    def create(cls, run_dir: Path) -> "RunDirStage":
        """Create the staging folders inside an existing, empty run dir."""
        root = run_dir / ".sandbox"
        root.mkdir(mode=0o700)
        out = root / "out"
        out.mkdir()
        writable = {}
        for name in _OUTPUTS:
            (out / name).mkdir()
            writable[name] = out / name
        return cls(run_dir=run_dir, root=root, writable=writable, calls_log=root / _CALLS_LOG)

    def hand_over(self, owner: tuple[int, int] | None) -> None:
        """Make the writable folders writable by the sandbox user ``(uid, gid)``.

        As root they are given to that user; otherwise, when the sandbox user differs from
        ours, they are opened to everyone (the staging root itself stays 0700, and binds
        reach the folders directly).
        """
        if owner is None:
            return
        uid, gid = owner
        for path in self.writable.values():
            if os.geteuid() == 0:
                os.chown(path, uid, gid)
            elif uid != os.geteuid():
                os.chmod(path, 0o777)


def _event(kind: str, detail: str, path: str | None = None) -> dict[str, Any]:
    event: dict[str, Any] = {"kind": kind, "detail": detail}
    if path is not None:
        event["path"] = path
    return event


def _break_hard_link(path: Path) -> None:
    tmp = path.with_name(f".{path.name}.copy")
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    try:
        with os.fdopen(fd, "rb", closefd=True) as src, open(tmp, "xb") as dst:
            fd = -1
            shutil.copyfileobj(src, dst, 1 << 20)
    finally:
        if fd >= 0:
            os.close(fd)
    os.replace(tmp, path)


def sanitize_outputs(folder: Path, label: str, *, owner: tuple[int, int] | None = None) -> list[dict[str, Any]]:
    """Remove links and special files from an agent-written folder; return what was done.

    Parameters
    ----------
    folder : pathlib.Path
        A folder the sandbox wrote (never followed through symlinks).
    label : str
        The folder's name in the run dir, used in event paths (``submission``).
    owner : (int, int), optional
        Give every remaining entry to this uid/gid (used as root to take the files back).

    Returns
    -------
    list of dict
        Events ``{"kind", "detail", "path"}``: ``refused-output`` for removed links and
        special files, ``hard-link-copied`` for files whose link was broken.
    """
    events: list[dict[str, Any]] = []
    stack = [(folder, label)]
    while stack:
        directory, prefix = stack.pop()
        try:
            entries = list(os.scandir(directory))
        except OSError as exc:
            events.append(_event("unreadable-output", f"cannot list: {exc.strerror or exc}", prefix))
            continue
        for entry in entries:
            rel = f"{prefix}/{entry.name}"
            path = Path(entry.path)
            try:
                info = entry.stat(follow_symlinks=False)
            except OSError as exc:
                events.append(_event("unreadable-output", f"cannot stat: {exc.strerror or exc}", rel))
                continue
            mode = info.st_mode
            if stat.S_ISLNK(mode):
                try:
                    target = os.readlink(path)
                except OSError:
                    target = "?"
                path.unlink()
                events.append(_event("refused-output", f"symbolic link to {target[:300]!r} removed", rel))
                continue
            if stat.S_ISDIR(mode):
                stack.append((path, rel))
            elif stat.S_ISREG(mode):
                if info.st_nlink > 1:
                    _break_hard_link(path)
                    events.append(_event("hard-link-copied", f"file had {info.st_nlink} links; copied", rel))
            else:
                path.unlink()
                events.append(_event("refused-output", f"special file (mode {stat.filemode(mode)}) removed", rel))
                continue
            if owner is not None:
                os.lchown(path, *owner)
    return events


def _write_json(path: Path, data: Mapping[str, Any]) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, sort_keys=True, indent=2, default=str) + "\n", encoding="utf-8")
    os.replace(tmp, path)


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
        events.extend(sanitize_outputs(folder, name, owner=owner))
        if owner is not None:
            os.chown(folder, *owner)
        os.chmod(folder, 0o755)
        os.replace(folder, run_dir / name)
    logs = run_dir / RunLayout.LOGS_DIR
    agent_copy = logs / _CALLS_LOG
    if os.path.lexists(agent_copy):
        target = logs / _AGENT_CALLS_LOG
        n = 1
        while os.path.lexists(target):
            n += 1
            target = logs / f"validation_calls.agent{n}.jsonl"
        os.replace(agent_copy, target)
        events.append(_event(
            "spoofed-validation-log",
            f"the agent wrote logs/{_CALLS_LOG} itself; kept as logs/{target.name}, the host's record replaces it",
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
    if len(events) > MAX_EVENTS:
        dropped = len(events) - MAX_EVENTS
        events = events[:MAX_EVENTS] + [_event("events-truncated", f"{dropped} more events not recorded")]
    data = {"schema_version": RUN_JSON_SCHEMA_VERSION, **record, "events": list(events)}
    _write_json(run_dir / RunLayout.RUN_META[0], data)
    shutil.rmtree(stage.root, ignore_errors=True)
    return tuple(events)
