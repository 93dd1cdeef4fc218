"""Walking a hostile folder tree by directory descriptors only: any depth, any path length, no recursion.

:class:`DescriptorWalk` keeps a stack of :class:`Frame` (one per folder entered) and never
builds a path to reach an entry, never follows a symbolic link, and holds at most
:data:`MAX_HELD_DIR_FDS` descriptors at once: the way back up goes through ``..``, checked to
be the folder seen on the way down, else by name from the nearest held ancestor. What is done
in each folder is the subclass's (:mod:`mleaudit.sandbox.extract.sanitize`): it provides
``_open_dir(dir_fd, name)``, ``_settle_dir(fd, info)`` and ``_list()``, which queues the
subfolders in ``Frame.pending``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from mleaudit.sandbox.extract.events import new_event
from mleaudit.sandbox.extract.names import printable, strerror

#: Directory descriptors held at once while walking (the deepest ones; the others are
#: re-opened through ``..`` on the way back up).
MAX_HELD_DIR_FDS = 32
#: Event paths longer than this keep their head and tail only.
MAX_EVENT_PATH_CHARS = 1000
_PATH_HEAD_CHARS = 480
_PATH_TAIL_CHARS = 480

O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | O_CLOEXEC


class Frame:
    """A directory on the walk's stack."""

    __slots__ = ("raw", "name", "fd", "dev", "ino", "length", "head", "full", "pending", "temps")

    def __init__(self, raw: bytes, name: str, fd: int, info: os.stat_result, parent: "Frame | None") -> None:
        self.raw = raw  # the name in the parent folder
        self.name = name  # the same, printable
        self.fd = fd
        self.dev = info.st_dev
        self.ino = info.st_ino
        if parent is None:
            self.length = len(name)
            self.head = name[:_PATH_HEAD_CHARS]
            self.full: str | None = name if len(name) <= MAX_EVENT_PATH_CHARS else None
        else:
            self.length = parent.length + 1 + len(name)
            if parent.length <= _PATH_HEAD_CHARS:
                self.head = f"{parent.head}/{name}"[:_PATH_HEAD_CHARS]
            else:
                self.head = parent.head
            fits = parent.full is not None and self.length <= MAX_EVENT_PATH_CHARS
            self.full = f"{parent.full}/{name}" if fits else None
        self.pending: list[bytes] = []  # subfolders still to visit
        self.temps: set[bytes] = set()  # copies written here, skipped when listed


class DescriptorWalk:
    """One walk over a folder, with file descriptors only and no recursion; see the module docstring."""

    def __init__(self, label: str) -> None:
        self.label = label
        self.events: list[dict[str, Any]] = []
        self.frames: list[Frame] = []
        self.low = 1  # frames[1:low] have their descriptor closed

    # -- paths shown in events -------------------------------------------------------------

    def _path(self, name: bytes | None = None) -> str:
        """The event path of the top folder, or of ``name`` in it, bounded in length."""
        frames = self.frames
        top = frames[-1]
        if name is None:
            leaf, total, depth = None, top.length, len(frames) - 1
        else:
            leaf = printable(name)
            total, depth = top.length + 1 + len(leaf), len(frames)
        if total <= MAX_EVENT_PATH_CHARS and top.full is not None:
            return top.full if leaf is None else f"{top.full}/{leaf}"
        head = top.head
        if leaf is not None and top.length < _PATH_HEAD_CHARS:
            head = f"{head}/{leaf}"[:_PATH_HEAD_CHARS]
        parts = [] if leaf is None else [leaf]
        size = 0 if leaf is None else len(leaf)
        for frame in reversed(frames):
            if size >= _PATH_TAIL_CHARS:
                break
            parts.append(frame.name)
            size += len(frame.name) + 1
        tail = "/".join(reversed(parts))[-_PATH_TAIL_CHARS:]
        elided = max(total - len(head) - len(tail), 0)
        return f"{head}...[{elided} characters elided; depth {depth}]...{tail}"

    def _report(self, kind: str, detail: str, name: bytes | None = None) -> None:
        self.events.append(new_event(kind, detail, self._path(name)))

    # -- the walk ------------------------------------------------------------------------

    def run(self, folder: Path) -> list[dict[str, Any]]:
        try:
            fd = os.open(folder, DIR_FLAGS)
        except OSError as exc:
            self.events.append(new_event("unreadable-output", f"cannot open the folder: {strerror(exc)}", self.label))
            return self.events
        try:
            info = os.fstat(fd)
        except OSError as exc:
            os.close(fd)
            self.events.append(new_event("unreadable-output", f"cannot stat the folder: {strerror(exc)}", self.label))
            return self.events
        self.frames.append(Frame(b"", printable(self.label), fd, info, None))
        try:
            self._settle_dir(fd, info)
            self._list()
            while self.frames:
                top = self.frames[-1]
                if top.pending:
                    self._enter(top.pending.pop())
                elif not self._leave():
                    break
        finally:
            for frame in self.frames:
                if frame.fd >= 0:
                    os.close(frame.fd)
            self.frames.clear()
        return self.events

    def _enter(self, name: bytes) -> None:
        parent = self.frames[-1]
        try:
            fd = self._open_dir(parent.fd, name)
            info = os.fstat(fd)
        except OSError as exc:
            self._report("unreadable-output", f"cannot open folder: {strerror(exc)}", name)
            return
        self.frames.append(Frame(name, printable(name), fd, info, parent))
        if len(self.frames) - self.low > MAX_HELD_DIR_FDS:
            oldest = self.frames[self.low]
            os.close(oldest.fd)
            oldest.fd = -1
            self.low += 1
        self._settle_dir(fd, info)
        self._list()

    def _leave(self) -> bool:
        """Pop the top folder; re-open its parent when that one's descriptor was let go."""
        child = self.frames[-1]
        if len(self.frames) > 1 and self.frames[-2].fd < 0:
            fd = self._reopen_parent(child.fd)
            if fd < 0:
                self._report("unreadable-output", "the tree changed while it was walked; the walk stopped here")
                return False
            self.frames[-2].fd = fd
            self.low = len(self.frames) - 2
        self.frames.pop()
        os.close(child.fd)
        if len(self.frames) <= 1:
            self.low = 1
        return True

    def _reopen_parent(self, child_fd: int) -> int:
        frames = self.frames
        index = len(frames) - 2
        want = (frames[index].dev, frames[index].ino)
        try:
            fd = os.open(b"..", DIR_FLAGS, dir_fd=child_fd)
        except OSError:
            fd = -1
        if fd >= 0:
            try:
                info = os.fstat(fd)
            except OSError:
                info = None
            if info is not None and (info.st_dev, info.st_ino) == want:
                return fd
            os.close(fd)
        # Down from the nearest held ancestor by name, checking every folder is the one seen.
        start = max(i for i in range(index) if frames[i].fd >= 0)
        fd = frames[start].fd
        opened = -1
        for frame in frames[start + 1 : index + 1]:
            try:
                fd = os.open(frame.raw, DIR_FLAGS, dir_fd=fd)
            except OSError:
                fd = -1
            if opened >= 0:
                os.close(opened)
            opened = fd
            if fd < 0:
                return -1
            try:
                info = os.fstat(fd)
            except OSError:
                info = None
            if info is None or (info.st_dev, info.st_ino) != (frame.dev, frame.ino):
                os.close(fd)
                return -1
        return opened
