"""The disk limit of the output folders: a watcher that stops the sandbox when they grow too big.

The three folders the agent writes (``submission/``, ``logs/``, ``code/``) are host folders
bound into the sandbox, so no memory or tmpfs limit bounds them; without a watch an agent can
fill the host's disk. :class:`OutputWatch` measures the space they use every few seconds
(allocated blocks, so sparse files count for what they really take; hard links once) and, past
the limit, asks the backend to stop the sandbox through the plan's
:class:`~mleaudit.sandbox.runner.StopSignal` (limit ``disk``). The walk holds directory file
descriptors on an explicit stack (no recursion, no path strings), never follows a link, and is
bounded in entries and depth; a tree it cannot measure counts as over the limit.
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
#: Deepest folder nesting measured; a deeper tree counts as over any limit (no training code
#: nests outputs hundreds of levels deep, and such trees break tools that walk recursively).
MAX_DEPTH = 256


class _Stopper(Protocol):
    def request(self, limit: str, detail: str) -> None: ...


def used_bytes(folder: Path, *, max_entries: int = MAX_ENTRIES, max_depth: int = MAX_DEPTH) -> tuple[int, int, bool]:
    """Space used under a folder, walked by file descriptor without following links or recursing.

    Parameters
    ----------
    folder : pathlib.Path
        The folder (a link there is not followed: it counts as nothing).
    max_entries : int
        Stop after this many entries.
    max_depth : int
        Folders nested deeper than this are not entered.

    Returns
    -------
    (int, int, bool)
        Bytes allocated (``st_blocks * 512``; each inode once), entries visited, and whether the
        walk was cut short (``max_entries`` reached or a folder nested past ``max_depth``): an
        output tree that cannot be measured counts as over any limit.
    """
    total, entries = 0, 0
    seen: set[tuple[int, int]] = set()
    try:
        root = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError as exc:
        logger.debug("cannot measure %s: %s", folder, exc)
        return 0, 0, False
    # An explicit stack of open folders: no recursion, no path strings, so any depth and any
    # name length is measured (os.fwalk recurses in Python 3.11).
    stack: list[tuple[int, int]] = [(root, 0)]
    try:
        while stack:
            fd, depth = stack.pop()
            try:
                with os.scandir(fd) as listing:
                    names = [entry.name for entry in listing]
            except OSError:
                os.close(fd)
                continue
            for name in names:
                entries += 1
                if entries >= max_entries:
                    os.close(fd)
                    return total, entries, True
                try:
                    info = os.stat(name, dir_fd=fd, follow_symlinks=False)
                except OSError:
                    continue
                key = (info.st_dev, info.st_ino)
                if key in seen:
                    continue
                seen.add(key)
                if stat.S_ISREG(info.st_mode) or stat.S_ISDIR(info.st_mode):
                    total += info.st_blocks * 512
                if stat.S_ISDIR(info.st_mode):
                    if depth + 1 > max_depth:
                        os.close(fd)
                        return total, entries, True
                    try:
                        child = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
                    except OSError:
                        continue
                    stack.append((child, depth + 1))
            os.close(fd)
    finally:
        for fd, _ in stack:
            os.close(fd)
    return total, entries, False


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
        Whether the limit was passed (or the folders could not be measured).
    detail : str or None
        What was measured when the limit was passed, for ``run.json``.
    """

    def __init__(self, folders: Mapping[str, Path], max_bytes: int, stop: _Stopper, *, interval_s: float = 2.0) -> None:
        self.folders = dict(folders)
        self.max_bytes = int(max_bytes)
        self.stop_signal = stop
        self.interval_s = interval_s
        self.peak_bytes = 0
        self.exceeded = False
        self.detail: str | None = None
        self._done = threading.Event()
        self._thread: threading.Thread | None = None

    def measure(self) -> int:
        """One measurement; requests the stop when over the limit. Returns the bytes used.

        A tree that cannot be measured (too many entries, nested too deep, or any failure of
        the walk) counts as over the limit: the watch fails closed.
        """
        total, entries, cut = 0, 0, False
        try:
            for folder in self.folders.values():
                used, seen, short = used_bytes(folder)
                total, entries, cut = total + used, entries + seen, cut or short
        except Exception as exc:  # noqa: BLE001 - an unmeasurable tree must stop the run, not the watch
            logger.warning("cannot measure the output folders: %r", exc)
            cut = True
            self.detail = f"the output folders could not be measured ({type(exc).__name__})"
        self.peak_bytes = max(self.peak_bytes, total)
        if not self.exceeded and (total > self.max_bytes or cut):
            self.exceeded = True
            if cut and self.detail is None:
                self.detail = (f"the output folders hold more than {MAX_ENTRIES:,} entries or folders nested more "
                               f"than {MAX_DEPTH} deep (limit {self.max_bytes:,} bytes)")  # fmt: skip
            elif self.detail is None:
                self.detail = f"the output folders reached {total:,} bytes (limit {self.max_bytes:,} bytes)"
            self.stop_signal.request("disk", self.detail)
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
