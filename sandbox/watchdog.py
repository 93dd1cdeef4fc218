"""The disk limit of the output folders: a watcher that stops the sandbox when they grow too big.

The three folders the agent writes (``submission/``, ``logs/``, ``code/``) are host folders
bound into the sandbox, so no memory or tmpfs limit bounds them; without a watch an agent can
fill the host's disk. :class:`OutputWatch` measures the space they use every few seconds
(allocated blocks, so sparse files count for what they really take; hard links once) and, past
the limit, asks the backend to stop the sandbox through the plan's
:class:`~sandbox.runner.StopSignal` (limit ``disk``). The walk uses directory file descriptors
(:func:`os.fwalk`), never follows a link, and is bounded in the entries it visits per pass.
"""

from __future__ import annotations

import logging
import os
import stat
import threading
from pathlib import Path
from typing import Mapping, Protocol

__all__ = ["OutputWatch", "used_bytes", "DEFAULT_DISK_BYTES"]

logger = logging.getLogger(__name__)

#: Default limit on the output folders (bytes): submissions, logs and code are small; model
#: checkpoints belong in the sandbox's /tmp or working folders, which the memory limit bounds.
DEFAULT_DISK_BYTES = 20 * 1024**3
#: Entries visited per measurement; past it the folders count as over any limit (an agent that
#: makes millions of files is filling the host's inode table).
MAX_ENTRIES = 2_000_000


class _Stopper(Protocol):
    def request(self, limit: str, detail: str) -> None: ...


def used_bytes(folder: Path, *, max_entries: int = MAX_ENTRIES) -> tuple[int, int]:
    """Space used under a folder, walked by file descriptor without following links.

    Parameters
    ----------
    folder : pathlib.Path
        The folder (a link there is not followed: it counts as nothing).
    max_entries : int
        Stop after this many entries.

    Returns
    -------
    (int, int)
        Bytes allocated (``st_blocks * 512``; each inode once) and entries visited. When the
        walk stopped at ``max_entries`` the entry count equals it.
    """
    total, entries = 0, 0
    seen: set[tuple[int, int]] = set()
    try:
        walker = os.fwalk(folder, follow_symlinks=False)
        for _, dirs, files, dir_fd in walker:
            for name in [*dirs, *files]:
                entries += 1
                if entries >= max_entries:
                    return total, entries
                try:
                    info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
                except OSError:
                    continue
                key = (info.st_dev, info.st_ino)
                if key in seen:
                    continue
                seen.add(key)
                if stat.S_ISREG(info.st_mode) or stat.S_ISDIR(info.st_mode):
                    total += info.st_blocks * 512
    except OSError as exc:
        logger.debug("cannot measure %s: %s", folder, exc)
    return total, entries


class OutputWatch:
    """Stop the sandbox when the output folders use more than ``max_bytes`` of disk.

    Parameters
    ----------
    folders : mapping of str to pathlib.Path
        The staged output folders (name -> host path).
    max_bytes : int
        The limit, in bytes.
    stop : StopSignal
        Asked to stop with limit ``disk`` once the limit is passed.
    interval_s : float
        Seconds between measurements.

    Attributes
    ----------
    peak_bytes : int
        The largest total measured.
    exceeded : bool
        Whether the limit was passed.
    """

    def __init__(self, folders: Mapping[str, Path], max_bytes: int, stop: _Stopper, *, interval_s: float = 2.0) -> None:
        self.folders = dict(folders)
        self.max_bytes = int(max_bytes)
        self.stop_signal = stop
        self.interval_s = interval_s
        self.peak_bytes = 0
        self.exceeded = False
        self._done = threading.Event()
        self._thread: threading.Thread | None = None

    def measure(self) -> int:
        """One measurement; requests the stop when over the limit. Returns the bytes used."""
        total, entries = 0, 0
        for folder in self.folders.values():
            used, seen = used_bytes(folder)
            total, entries = total + used, entries + seen
        self.peak_bytes = max(self.peak_bytes, total)
        if not self.exceeded and (total > self.max_bytes or entries >= MAX_ENTRIES):
            self.exceeded = True
            what = f"{entries:,} entries" if entries >= MAX_ENTRIES else f"{total:,} bytes"
            self.stop_signal.request("disk", f"the output folders reached {what} (limit {self.max_bytes:,} bytes)")
        return total

    def _loop(self) -> None:
        while not self._done.wait(self.interval_s):
            self.measure()

    def start(self) -> None:
        """Measure in a daemon thread until :meth:`close`."""
        self._thread = threading.Thread(target=self._loop, name="output-watch", daemon=True)
        self._thread.start()

    def close(self) -> None:
        """Stop watching, then measure once more (a last burst before the end counts too)."""
        self._done.set()
        if self._thread is not None:
            self._thread.join(timeout=30)
            self._thread = None
        self.measure()
