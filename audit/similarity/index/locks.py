"""The writer lock of an SQLite index: ``<index>.lock`` beside it, held with ``flock``.

Readers take no lock; ``add``, ``remove``, ``sync`` and ``compact`` hold the writer lock from
before they read what is indexed until their last write (the Redis backend holds a lease key
instead, :meth:`~mleaudit.audit.similarity.index.redis_backend._RedisBackend.writer_lock`).
"""

from __future__ import annotations

import contextlib
import logging
import os
from pathlib import Path
from typing import Iterator

from mleaudit.audit.similarity.index.format import CorpusIndexError

logger = logging.getLogger(__name__)

def _wait_notice(where: str) -> None:
    logger.warning("%s: another process is writing to this corpus index; waiting for it to finish", where)


def _lock_file_descriptor(lock_path: str) -> int:
    """Open ``lock_path`` and hold an exclusive ``flock`` on it; the descriptor.

    The holder removes the file before it lets go (so no lock file stays beside the index). A
    waiter that then gets the lock holds it on a removed file: it sees that the path no longer
    names the file it locked and starts again on the new one.
    """
    import fcntl

    flags = os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    while True:
        fd = os.open(lock_path, flags, 0o644)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                _wait_notice(lock_path[: -len(".lock")])
                fcntl.flock(fd, fcntl.LOCK_EX)
            held = os.fstat(fd)
            try:
                current = os.stat(lock_path, follow_symlinks=False)
            except FileNotFoundError:
                current = None
            if current is not None and (current.st_dev, current.st_ino) == (held.st_dev, held.st_ino):
                return fd
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)


@contextlib.contextmanager
def _file_writer_lock(path: Path) -> Iterator[None]:
    """Hold ``<index>.lock``: an OS file lock (released if the process dies), removed when let go."""
    lock_path = f"{path}.lock"
    try:
        import fcntl  # noqa: F401 - POSIX only
    except ImportError:  # elsewhere the lock file stays in place between writers
        from filelock import FileLock

        lock = FileLock(lock_path)
        with lock:
            yield
        return
    try:
        fd = _lock_file_descriptor(lock_path)
    except OSError as exc:
        raise CorpusIndexError(f"{path}: cannot take the writer lock {lock_path} ({exc.strerror or exc})") from exc
    try:
        yield
    finally:
        try:
            os.unlink(lock_path)
        except OSError:
            pass
        os.close(fd)
