"""Kernel files on disk: which files of a corpus folder are kernels, in which order, their bytes
within the size cap, and how a file read before is known to be unchanged without reading it.

Never follows a symbolic link, never reads past the cap; a file that cannot be used is returned
as a :class:`~mleaudit.audit.model.Skipped` with the reason. :mod:`mleaudit.audit.similarity.corpus`
decodes what is read here.
"""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path
from typing import Iterator

from mleaudit.audit.errors import ConfigError
from mleaudit.audit.model import Skipped

__all__ = ["MAX_REFERENCE_BYTES", "REFERENCE_SUFFIXES", "SETTLED_NS", "file_signature", "iter_reference_files",
           "read_reference_bytes", "reference_sort_key"]

#: Files above this size are skipped (notebooks with embedded outputs reach several MB).
MAX_REFERENCE_BYTES = 32 * 1024 * 1024
#: File suffixes read as kernels.
REFERENCE_SUFFIXES = (".py", ".ipynb")
#: A file changed this recently (nanoseconds) is read again at the next load: the coarsest time
#: step of common file systems (FAT's two seconds) with room for a file server's clock.
SETTLED_NS = 5_000_000_000
_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
_now_ns = time.time_ns

def reference_sort_key(path: str) -> tuple[str, ...]:
    """Corpus order of a relative POSIX path: folder by folder (``a/b.py`` before ``a-c.py``).

    Examples
    --------
    >>> sorted(["a-c.py", "a/b.py"], key=reference_sort_key)
    ['a/b.py', 'a-c.py']
    """
    return tuple(path.split("/"))


def read_reference_bytes(path: str | Path, relative: str, *, max_bytes: int = MAX_REFERENCE_BYTES) -> bytes | Skipped:
    """The bytes of one kernel file, or why it was not read (symbolic link, not a regular file, over the cap).

    Parameters
    ----------
    path : str or Path
        The file on disk.
    relative : str
        Its POSIX path relative to the corpus root (recorded on a :class:`Skipped`).
    max_bytes : int, optional
        Files larger than this are not read.

    Returns
    -------
    bytes or Skipped
    """
    path = Path(path)
    try:
        relative.encode("utf-8")
    except UnicodeEncodeError:
        # os.walk hands undecodable name bytes over as lone surrogates, which no report or
        # index can store; the escaped name still tells a person which file it is.
        escaped = relative.encode("utf-8", errors="surrogateescape").decode("utf-8", errors="backslashreplace")
        return Skipped(path=escaped, reason="file name is not valid UTF-8")
    try:
        if path.is_symlink():
            return Skipped(path=relative, reason="symbolic link (not followed)")
        if not path.is_file():
            return Skipped(path=relative, reason="not a regular file")
        size = path.stat().st_size
        if size > max_bytes:
            return Skipped(path=relative, reason=f"file too large ({size} bytes > {max_bytes})")
        with path.open("rb") as stream:
            # Read one byte past the cap: the file may have grown since stat().
            data = stream.read(max_bytes + 1)
    except OSError as exc:
        return Skipped(path=relative, reason=f"cannot read ({exc.strerror or type(exc).__name__})")
    if len(data) > max_bytes:
        return Skipped(path=relative, reason=f"file too large (more than {max_bytes} bytes)")
    return data


def iter_reference_files(directory: str | Path) -> Iterator[tuple[Path, str]]:
    """The kernel files under ``directory`` (recursively), in path order.

    Hidden files and folders (``.git``, ``.ipynb_checkpoints``) are left out, and so are files
    whose suffix is not in :data:`REFERENCE_SUFFIXES`. Symbolic links are yielded (so that
    :func:`read_reference` can list them as skipped) but never followed into folders.

    Yields
    ------
    (Path, str)
        The file and its POSIX path relative to ``directory``.

    Raises
    ------
    ConfigError
        If ``directory`` does not exist or is not a folder.
    """
    root = Path(directory)
    if not root.is_dir():
        raise ConfigError(f"reference corpus {str(directory)!r} is not a folder")
    found: list[tuple[str, Path]] = []
    for current, folders, files in os.walk(root):
        folders[:] = sorted(f for f in folders if not f.startswith("."))
        base = Path(current)
        for name in files:
            if name.startswith(".") or not name.lower().endswith(REFERENCE_SUFFIXES):
                continue
            path = base / name
            found.append((path.relative_to(root).as_posix(), path))
    for relative, path in sorted(found, key=lambda item: reference_sort_key(item[0])):
        yield path, relative


def file_signature(path: Path, relative: str, max_bytes: int) -> tuple | None:
    """What tells an unchanged regular file from a changed one without reading it, as git's index
    does: device, inode, size, and the modification and change times in nanoseconds (a write
    moves the change time, which no program can set back).

    A file changed less than :data:`SETTLED_NS` before the call has no signature: a file system
    keeps times to its clock's step (a second on some, two on FAT), so a write within the same
    step can leave every field as it was (git's "racily clean" entries). The times are those of
    the opened file, as a read would see them (a network file system revalidates them on open,
    not on ``lstat``).

    Parameters
    ----------
    path : Path
        The file (not followed when it is a symbolic link).
    relative : str
        Its path relative to the corpus root.
    max_bytes : int
        The size cap it is read under.

    Returns
    -------
    tuple or None
        Equal for an unchanged file; ``None`` for anything but a regular file, for one changed
        too recently, or when it cannot be looked at.
    """
    settled = _now_ns() - SETTLED_NS
    try:
        # only a regular file is opened (opening a device or a pipe may act on it)
        if not stat.S_ISREG(os.lstat(path).st_mode):
            return None
        descriptor = os.open(path, _OPEN_FLAGS)
        try:
            status = os.fstat(descriptor)
        finally:
            os.close(descriptor)
    except (OSError, ValueError):
        return None
    if not stat.S_ISREG(status.st_mode) or max(status.st_mtime_ns, status.st_ctime_ns) >= settled:
        return None
    return (relative, max_bytes, status.st_dev, status.st_ino, status.st_size, status.st_mtime_ns, status.st_ctime_ns)
