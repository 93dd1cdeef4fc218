"""Cleaning an agent-written folder: links, special files and hard links out, modes and owners set.

Every name and byte there is hostile: the walk (:class:`~mleaudit.sandbox.extract.walk.DescriptorWalk`)
goes by directory descriptors only; here each entry is handled without following a link:
symbolic links, FIFOs, sockets and device nodes are removed, hard-linked files are copied so
they share no inode with anything else (up to :data:`MAX_HARD_LINK_COPY_BYTES` per folder),
extended attributes and ACLs are removed, folders get mode 0755 and files 0644 or 0755.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import Any

from mleaudit.sandbox.extract.events import new_event
from mleaudit.sandbox.extract.names import clip, printable, strerror
from mleaudit.sandbox.extract.walk import DIR_FLAGS, O_CLOEXEC, DescriptorWalk, Frame

#: A folder of the output trees ends up with this mode; regular files with 0644 or 0755.
DIR_MODE = 0o755
#: Link targets are shown up to this many characters.
MAX_LINK_TARGET_CHARS = 300
#: Bytes copied in all to break hard links in one folder; a hard-linked file beyond it is removed.
MAX_HARD_LINK_COPY_BYTES = 4 << 30
_COPY_CHUNK = 1 << 20
_COPY_PREFIX = b".mleaudit-copy-"

_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0) | O_CLOEXEC
_NEW_FILE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | O_CLOEXEC
_PATH_FLAGS = getattr(os, "O_PATH", os.O_RDONLY | os.O_NONBLOCK) | os.O_NOFOLLOW | O_CLOEXEC
_SPECIAL_KINDS = (
    (stat.S_ISFIFO, "FIFO"),
    (stat.S_ISSOCK, "socket"),
    (stat.S_ISCHR, "character device"),
    (stat.S_ISBLK, "block device"),
)


def _file_mode(mode: int) -> int:
    """0755 for a file its owner may run, 0644 for any other (no set-id or sticky bits)."""
    return 0o755 if mode & stat.S_IXUSR else 0o644


class _Sanitizer(DescriptorWalk):
    """What :func:`sanitize_outputs` does to each folder and entry of the walk."""

    def __init__(self, label: str, owner: tuple[int, int] | None) -> None:
        super().__init__(label)
        self.owner = owner
        self.copy_budget = MAX_HARD_LINK_COPY_BYTES
        self.attributes_removed = 0

    def _open_dir(self, dir_fd: int, name: bytes) -> int:
        try:
            return os.open(name, DIR_FLAGS, dir_fd=dir_fd)
        except PermissionError:
            # A folder made unreadable: give it a usable mode by a descriptor that does not
            # follow links, then try again.
            self._chmod_entry(dir_fd, name, DIR_MODE, stat.S_ISDIR)
            return os.open(name, DIR_FLAGS, dir_fd=dir_fd)

    def _strip_attributes(self, fd: int, name: bytes | None = None) -> None:
        """Remove every extended attribute (POSIX ACLs included) of an open file or folder.

        An ACL or a default ACL outlives the chown and chmod that take a file back, and could
        grant another uid (a later run's) access; ``user.*`` attributes can carry data no
        reader of the run looks at.
        """
        try:
            names = os.listxattr(fd)
        except OSError:
            return
        for attribute in names:
            try:
                os.removexattr(fd, attribute)
            except OSError as exc:
                self._report("unreadable-output", f"cannot remove the attribute {clip(printable(attribute), 80)!r}: "
                                                  f"{strerror(exc)}", name)  # fmt: skip
                continue
            self.attributes_removed += 1

    def _settle_dir(self, fd: int, info: os.stat_result) -> None:
        self._strip_attributes(fd)
        try:
            if stat.S_IMODE(info.st_mode) != DIR_MODE:
                os.fchmod(fd, DIR_MODE)
            if self.owner is not None and (info.st_uid, info.st_gid) != self.owner:
                os.fchown(fd, *self.owner)
        except OSError as exc:
            self._report("unreadable-output", f"cannot set the folder's mode or owner: {strerror(exc)}")

    def _list(self) -> None:
        frame = self.frames[-1]
        try:
            entries = os.scandir(frame.fd)
        except OSError as exc:
            self._report("unreadable-output", f"cannot list: {strerror(exc)}")
            return
        with entries:
            while True:
                try:
                    entry = next(entries)
                except StopIteration:
                    break
                except OSError as exc:
                    self._report("unreadable-output", f"cannot list completely: {strerror(exc)}")
                    break
                name = os.fsencode(entry.name)
                if name in frame.temps:
                    continue
                self._check(frame, name)
        frame.temps.clear()

    def _check(self, frame: Frame, name: bytes) -> None:
        try:
            info = os.stat(name, dir_fd=frame.fd, follow_symlinks=False)
        except OSError as exc:
            self._report("unreadable-output", f"cannot stat: {strerror(exc)}", name)
            return
        mode = info.st_mode
        if stat.S_ISDIR(mode):
            frame.pending.append(name)
        elif stat.S_ISREG(mode):
            self._regular(frame, name, info)
        elif stat.S_ISLNK(mode):
            try:
                target = clip(printable(os.readlink(name, dir_fd=frame.fd)), MAX_LINK_TARGET_CHARS)
            except OSError as exc:
                target = f"? ({strerror(exc)})"
            self._remove(frame, name, f"symbolic link to '{target}'")
        else:
            what = next((word for test, word in _SPECIAL_KINDS if test(mode)), "special file")
            self._remove(frame, name, f"{what} (mode {stat.filemode(mode)})")

    def _remove(self, frame: Frame, name: bytes, what: str) -> None:
        try:
            os.unlink(name, dir_fd=frame.fd)
        except OSError as exc:
            self._report("unreadable-output", f"{what} could not be removed: {strerror(exc)}", name)
            return
        self._report("refused-output", f"{what} removed", name)

    def _regular(self, frame: Frame, name: bytes, info: os.stat_result) -> None:
        if info.st_nlink > 1:
            links = info.st_nlink
            if info.st_size > self.copy_budget:
                self._remove(frame, name, f"file with {links} hard links ({info.st_size} bytes, over the copy budget)")
                return
            try:
                copied = self._copy(frame, name, info)
            except OSError as exc:
                self._remove(frame, name, f"file with {links} hard links that could not be copied ({strerror(exc)})")
                return
            self.copy_budget -= copied
            self._report("hard-link-copied", f"file had {links} links; copied", name)
            return
        try:
            fd = os.open(name, _FILE_FLAGS, dir_fd=frame.fd)
        except OSError:
            fd = -1
        if fd >= 0:
            try:
                if os.path.samestat(os.fstat(fd), info):
                    self._strip_attributes(fd, name)
            finally:
                os.close(fd)
        try:
            if stat.S_IMODE(info.st_mode) != _file_mode(info.st_mode):
                self._chmod_entry(frame.fd, name, _file_mode(info.st_mode), stat.S_ISREG)
            if self.owner is not None and (info.st_uid, info.st_gid) != self.owner:
                os.chown(name, *self.owner, dir_fd=frame.fd, follow_symlinks=False)
        except OSError as exc:
            self._report("unreadable-output", f"cannot set the file's mode or owner: {strerror(exc)}", name)

    def _copy(self, frame: Frame, name: bytes, info: os.stat_result) -> int:
        """Replace ``name`` by a copy of its content with an inode of its own; return the bytes copied."""
        src = os.open(name, _FILE_FLAGS, dir_fd=frame.fd)
        try:
            seen = os.fstat(src)
            if not stat.S_ISREG(seen.st_mode) or (seen.st_dev, seen.st_ino) != (info.st_dev, info.st_ino):
                raise OSError(errno.ESTALE, "the file changed while it was read")
            while True:
                tmp = _COPY_PREFIX + os.urandom(8).hex().encode()
                try:
                    dst = os.open(tmp, _NEW_FILE_FLAGS, 0o600, dir_fd=frame.fd)
                except FileExistsError:
                    continue
                break
            frame.temps.add(tmp)
            copied = 0
            try:
                while True:
                    chunk = os.read(src, _COPY_CHUNK)
                    if not chunk:
                        break
                    copied += len(chunk)
                    if copied > self.copy_budget:
                        raise OSError(errno.EFBIG, "over the copy budget")
                    view = memoryview(chunk)
                    while view:
                        view = view[os.write(dst, view) :]
                os.fchmod(dst, _file_mode(info.st_mode))
                if self.owner is not None:
                    os.fchown(dst, *self.owner)
                os.replace(tmp, name, src_dir_fd=frame.fd, dst_dir_fd=frame.fd)
            except BaseException:
                try:
                    os.unlink(tmp, dir_fd=frame.fd)
                except OSError:
                    pass
                raise
            finally:
                os.close(dst)
            return copied
        finally:
            os.close(src)

    @staticmethod
    def _chmod_entry(dir_fd: int, name: bytes, mode: int, is_kind: Any) -> None:
        """Set the mode of ``name`` (checked to be of the kind ``is_kind`` accepts) without following links."""
        fd = os.open(name, _PATH_FLAGS, dir_fd=dir_fd)
        try:
            if not is_kind(os.fstat(fd).st_mode):
                raise OSError(errno.ESTALE, "the entry changed while it was checked")
            try:
                os.chmod(f"/proc/self/fd/{fd}", mode)
            except FileNotFoundError:  # no /proc: the entry was just seen not to be a link
                os.chmod(name, mode, dir_fd=dir_fd)
        finally:
            os.close(fd)


def sanitize_outputs(folder: Path, label: str, *, owner: tuple[int, int] | None = None) -> list[dict[str, Any]]:
    """Remove links and special files from an agent-written folder; return what was done.

    The folder is walked with directory descriptors only (no path is ever built to reach an
    entry, so neither its depth nor the length of its paths matters), without recursion and
    without following a symbolic link anywhere; at most :data:`MAX_HELD_DIR_FDS` descriptors
    of the walked folders are held at once. Every folder is given mode 0755, every regular file
    0644 (0755 when its owner could run it), so set-id bits and unreadable modes do not survive.

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
        special files (the detail names the link target or the mode), ``hard-link-copied`` for
        files whose link was broken, ``unreadable-output`` for what could not be listed,
        opened, removed or given back. Paths are ``<label>/<relative path>`` with non-printable
        characters escaped; over :data:`MAX_EVENT_PATH_CHARS` characters only their head and
        tail are kept, around a marker giving the number of characters left out and the depth.
    """
    sanitizer = _Sanitizer(label, owner)
    events = sanitizer.run(folder)
    if sanitizer.attributes_removed:
        events.append(new_event("attributes-removed", f"{sanitizer.attributes_removed} extended attribute(s) or ACL(s) "
                                                   "removed from files and folders", label))  # fmt: skip
    return events
