"""The hidden staging area of a run dir: the folders the sandbox writes to, and the host's calls log beside them."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

from mleaudit.audit.run import RunLayout
from mleaudit.sandbox.validation import VALIDATION_CALLS_FILE

_OUTPUTS = (RunLayout.SUBMISSION_DIR, RunLayout.LOGS_DIR, RunLayout.CODE_DIR)


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
        return cls(run_dir=run_dir, root=root, writable=writable, calls_log=root / VALIDATION_CALLS_FILE)

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
