"""Reading run files without following symbolic links, within the size caps.

Run contents are untrusted: every folder between the run root and a file is opened relative to
its parent with ``O_NOFOLLOW`` (or checked with ``lstat`` where the platform cannot), the real path
must stay inside the run root, and no read goes past the caps of :class:`RunLayout`. Names that
are not valid UTF-8 are shown with ``\\xNN`` escapes (:func:`display_name`).
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import Sequence

from mleaudit.audit.run.layout import RunLayout


#: ``O_NOFOLLOW`` makes ``open`` fail on a symlink swapped in after the walk saw a regular file;
#: ``O_NONBLOCK`` keeps a FIFO swapped in from blocking the open (``fstat`` then refuses it).
_OPEN_FLAGS = (os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_BINARY", 0) | getattr(os, "O_NONBLOCK", 0)
               | getattr(os, "O_CLOEXEC", 0))
#: Folders are opened one at a time, relative to their parent, refusing symlinks at every level.
_DIR_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
_DIR_FD = (
    os.open in os.supports_dir_fd and os.scandir in os.supports_fd
    and hasattr(os, "O_DIRECTORY") and hasattr(os, "O_NOFOLLOW")
)


def display_name(name: str) -> str:
    """A file name as printable text: bytes that are not UTF-8 become ``\\xNN`` escapes.

    ``os`` hands undecodable name bytes over as lone surrogates (``surrogateescape``), which
    no report can encode; the escaped name still tells a person which file it is.

    Examples
    --------
    >>> display_name("train.py")
    'train.py'
    >>> display_name(b"bad\\xff.py".decode("utf-8", "surrogateescape"))
    'bad\\\\xff.py'
    """
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return name.encode("utf-8", errors="surrogateescape").decode("utf-8", errors="backslashreplace")
    return name


def _inside(root_real: str, path: str) -> bool:
    return _real_inside(root_real, os.path.realpath(path))


def _real_inside(root_real: str, real: str) -> bool:
    """Whether the real path ``real`` is ``root_real`` or lies under it."""
    return real == root_real or real.startswith(root_real.rstrip(os.sep) + os.sep)


def _plain_parts(root: Path, path: Path | str) -> tuple[str, ...] | None:
    """:func:`_relative_parts` of a path spelled plainly (``/``-separated, no empty, ``.`` or
    ``..`` part), split as a string; ``None`` for anything else, which ``pathlib`` then reads."""
    if os.sep != "/" or os.altsep is not None:
        return None
    text = os.fspath(path)
    if not isinstance(text, str):
        return None
    if text.startswith("/"):
        prefix = os.fspath(root)
        if not isinstance(prefix, str) or prefix == "/" or not prefix.startswith("/") or prefix.endswith("/"):
            return None
        if not text.startswith(prefix + "/"):
            return None
        text = text[len(prefix) + 1:]
    parts = tuple(text.split("/"))
    if any(part in ("", ".", "..") for part in parts):
        return None
    return parts


def _relative_parts(root: Path, path: Path | str) -> tuple[str, ...]:
    """The components of ``path`` below ``root`` (``path`` absolute under it, or relative to it).

    Raises
    ------
    OSError
        If ``path`` is not below ``root`` or has ``..``/``.`` components.
    """
    fast = _plain_parts(root, path)
    if fast is not None:
        return fast
    candidate = Path(path)
    if candidate.is_absolute():
        try:
            candidate = candidate.relative_to(root)
        except ValueError:
            raise OSError(errno.EACCES, "not under the run root") from None
    parts = candidate.parts
    if not parts or any(part in ("", ".", "..") for part in parts):
        raise OSError(errno.EACCES, "not a plain path under the run root")
    return parts


def _refused_component(root: Path, parts: Sequence[str]) -> str | None:
    """Why a path under ``root`` may not be opened: a symlinked or special folder on the way."""
    current = root
    for number, part in enumerate(parts):
        current = current / part
        try:
            info = os.lstat(current)
        except OSError:
            return None
        shown = "/".join(display_name(p) for p in parts[: number + 1])
        last = number == len(parts) - 1
        if stat.S_ISLNK(info.st_mode):
            return "symbolic link (not followed)" if last else f"its folder {shown} is a symbolic link (not followed)"
        if not last and not stat.S_ISDIR(info.st_mode):
            return f"{shown} is not a folder"
    return None


def _open_in_root(root: Path, parts: Sequence[str]) -> int:
    """Open the regular file ``root/parts...`` for reading, following no symlink on the way.

    Each folder is opened relative to its parent with ``O_NOFOLLOW | O_DIRECTORY`` where the
    platform allows it (so a folder swapped for a symlink after the walk is refused too);
    elsewhere every component is checked with ``lstat`` first. The real path must also lie
    inside the real run root.

    Raises
    ------
    OSError
        With a message naming the refused component.
    """
    if not _DIR_FD:
        target = os.path.join(root, *parts)
        refused = _refused_component(root, parts)
        if refused is not None:
            raise OSError(errno.ELOOP, refused)
        if not _inside(os.path.realpath(root), target):
            raise OSError(errno.EACCES, "resolves outside the run root")
        return os.open(target, _OPEN_FLAGS)
    # Every component is opened relative to its parent without following a link, and the
    # parts hold no "..": the file is under the root by construction, and a refused
    # component is named when an open fails.
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0))
    try:
        for part in parts[:-1]:
            try:
                child = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
                    reason = _refused_component(root, parts) or "a folder on the way is not a folder"
                    raise OSError(exc.errno, reason) from None
                raise
            os.close(fd)
            fd = child
        try:
            return os.open(parts[-1], _OPEN_FLAGS, dir_fd=fd)
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.EMLINK):
                raise OSError(exc.errno, "symbolic link (not followed)") from None
            raise
    finally:
        os.close(fd)


def _open_nofollow(abs_path: Path, root: Path | None) -> int:
    if root is None:
        return os.open(abs_path, _OPEN_FLAGS)
    return _open_in_root(root, _relative_parts(root, abs_path))


#: Bytes asked for by each read past the file's size at open (a file that grows while read).
_READ_CHUNK = 1024 * 1024


def _read_fd(fd: int, rel_path: str, limit: int) -> bytes:
    """Up to ``limit + 1`` bytes of an open regular file; the descriptor is closed."""
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise OSError(errno.EINVAL, f"{rel_path}: not a regular file")
        # Read up to limit + 1 bytes or the end of the file, as a buffered read(limit + 1) does,
        # in reads sized by the file (one byte more, to see a file that grew): a read of the
        # whole cap allocates the cap for every file, however small.
        wanted = limit + 1
        chunks = []
        size = min(wanted, info.st_size + 1)
        while wanted > 0:
            chunk = os.read(fd, min(wanted, size))
            if not chunk:
                break
            chunks.append(chunk)
            wanted -= len(chunk)
            size = _READ_CHUNK
        return b"".join(chunks)
    finally:
        os.close(fd)


def _read_capped(abs_path: Path, rel_path: str, *, root: Path | None = None) -> bytes:
    """Read a regular file without following symlinks, at most ``MAX_FILE_BYTES`` bytes.

    With ``root``, no folder between ``root`` and the file may be a symlink either.

    Raises
    ------
    OSError
        If the file is a symlink, not a regular file, unreadable, or grew past the cap.
    """
    data = _read_fd(_open_nofollow(abs_path, root), rel_path, RunLayout.MAX_FILE_BYTES)
    if len(data) > RunLayout.MAX_FILE_BYTES:
        raise OSError(errno.EFBIG, f"{rel_path}: over the {RunLayout.MAX_FILE_BYTES}-byte cap")
    return data


def _read_prefix(abs_path: Path, rel_path: str, limit: int, *, root: Path | None = None) -> bytes:
    """The first ``limit`` bytes of a regular file (not following symlinks), cut back to the
    last line end when the file is longer, so no record or UTF-8 character is split.

    Raises
    ------
    OSError
        If the file is a symlink, not a regular file or unreadable.
    """
    data = _read_fd(_open_nofollow(abs_path, root), rel_path, limit)
    if len(data) <= limit:
        return data
    data = data[:limit]
    line_end = data.rfind(b"\n")
    return data[: line_end + 1] if line_end >= 0 else data


def read_run_file(root: str | os.PathLike[str], path: str | os.PathLike[str], *,
                  max_bytes: int = RunLayout.MAX_FILE_BYTES) -> bytes:
    """Read a file of a run without following symbolic links anywhere below the run root.

    Parameters
    ----------
    root : str or path-like
        The run root (:attr:`Run.root`).
    path : str or path-like
        The file, relative to ``root`` (POSIX) or absolute under it.
    max_bytes : int, optional
        Files larger than this are refused (checked on the bytes read, not only the size the
        file system reports).

    Returns
    -------
    bytes
        The whole file.

    Raises
    ------
    OSError
        If the file or a folder between it and ``root`` is a symbolic link, the real path
        leaves ``root``, the file is not a regular file, unreadable, or over ``max_bytes``;
        ``strerror`` says which in words.
    """
    root_path = Path(root)
    parts = _relative_parts(root_path, path)
    rel = "/".join(display_name(p) for p in parts)
    data = _read_fd(_open_in_root(root_path, parts), rel, max_bytes)
    if len(data) > max_bytes:
        raise OSError(errno.EFBIG, f"over the {max_bytes}-byte cap")
    return data
