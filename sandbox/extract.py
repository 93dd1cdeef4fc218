"""Staging the agent-writable folders and turning them into the run dir afterwards.

During a run the agent writes only to ``<run>/.sandbox/out/{submission,logs,code}`` (bound at
``/home/submission``, ``/home/logs``, ``/home/code``); the host keeps its own files next to them
(the validation calls log), where the sandbox cannot reach. ``run.log`` is written by the host.
Afterwards :func:`finalize_run_dir`:

- removes what a host program must not follow out of the agent's folders: symbolic links
  (a ``submission.csv`` linking to the answers would make the grader read them), FIFOs, sockets
  and device nodes, and copies hard-linked files so they share no inode with anything else.
  Every name and byte there is treated as hostile: the walk goes by directory descriptors only
  (any depth, any path length, no recursion, never through a link), names are bytes (reported
  escaped), folders end up 0755 and files 0644/0755, and what cannot be handled is reported;
- moves the folders into place as ``submission/``, ``logs/``, ``code/`` (the
  :class:`mleaudit.audit.run.RunLayout` contract) and gives them back to the calling user;
- puts the host's calls log at ``logs/validation_calls.jsonl``; a file the agent wrote under
  that name is kept as ``logs/validation_calls.agent.jsonl`` and reported as a spoofing attempt;
- writes ``run.json`` with everything that happened, including these events.

The dot-folder is removed at the end (the audit never enters dot-folders anyway).
"""

from __future__ import annotations

import errno
import json
import logging
import os
import shutil
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from mleaudit.audit.run import RunLayout
from mleaudit.sandbox.validation import VALIDATION_CALLS_FILE

__all__ = ["RunDirStage", "finalize_run_dir", "sanitize_outputs", "RUN_JSON_SCHEMA_VERSION"]

logger = logging.getLogger(__name__)

#: Version of the ``run.json`` layout written here.
RUN_JSON_SCHEMA_VERSION = 1
#: Events kept in run.json; more are counted only.
MAX_EVENTS = 1000
#: Event kinds by how much a reviewer needs each one, most first: when there are more events than
#: :data:`MAX_EVENTS`, the least needed are dropped first (an agent must not be able to push a
#: link to the answers out of the record by making a thousand hard links first).
EVENT_PRIORITY = ("sandbox-failed", "sandbox-error", "no-sandbox", "spoofed-validation-log", "log-truncated",
                  "limit-hit", "network-denied", "validation-refused", "validation-timeout", "validation-failed",
                  "refused-output", "unreadable-output", "hard-link-copied", "attributes-removed")  # fmt: skip
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


#: A folder of the output trees ends up with this mode; regular files with 0644 or 0755.
_DIR_MODE = 0o755
#: Directory descriptors held at once while walking (the deepest ones; the others are
#: re-opened through ``..`` on the way back up).
MAX_HELD_DIR_FDS = 32
#: Event paths longer than this keep their head and tail only.
MAX_EVENT_PATH_CHARS = 1000
_PATH_HEAD_CHARS = 480
_PATH_TAIL_CHARS = 480
#: Link targets are shown up to this many characters.
MAX_LINK_TARGET_CHARS = 300
#: Bytes copied in all to break hard links in one folder; a hard-linked file beyond it is removed.
MAX_HARD_LINK_COPY_BYTES = 4 << 30
_COPY_CHUNK = 1 << 20
_COPY_PREFIX = b".mleaudit-copy-"

_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | _O_CLOEXEC
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0) | _O_CLOEXEC
_NEW_FILE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | _O_CLOEXEC
_PATH_FLAGS = getattr(os, "O_PATH", os.O_RDONLY | os.O_NONBLOCK) | os.O_NOFOLLOW | _O_CLOEXEC
_NAMED_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t", "\\": "\\\\"}
_SPECIAL_KINDS = (
    (stat.S_ISFIFO, "FIFO"),
    (stat.S_ISSOCK, "socket"),
    (stat.S_ISCHR, "character device"),
    (stat.S_ISBLK, "block device"),
)


def _printable(raw: bytes | str) -> str:
    """Show a name or link target as printable text.

    Parameters
    ----------
    raw : bytes or str
        The name as the file system holds it (any bytes).

    Returns
    -------
    str
        The name with backslashes, control and other non-printable characters and bytes that
        are not UTF-8 escaped (``\\n``, ``\\xff``, ``\\u202e``).
    """
    text = raw.decode("utf-8", "surrogateescape") if isinstance(raw, bytes) else raw
    if text.isprintable() and "\\" not in text:
        return text
    out = []
    for ch in text:
        code = ord(ch)
        if 0xDC80 <= code <= 0xDCFF:  # a byte that was not UTF-8
            out.append(f"\\x{code - 0xDC00:02x}")
        elif ch in _NAMED_ESCAPES:
            out.append(_NAMED_ESCAPES[ch])
        elif ch.isprintable():
            out.append(ch)
        elif code < 0x100:
            out.append(f"\\x{code:02x}")
        elif code < 0x10000:
            out.append(f"\\u{code:04x}")
        else:
            out.append(f"\\U{code:08x}")
    return "".join(out)


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else f"{text[:limit]}...[{len(text) - limit} more characters]"


def _strerror(exc: OSError) -> str:
    return exc.strerror or str(exc) or type(exc).__name__


def _file_mode(mode: int) -> int:
    """0755 for a file its owner may run, 0644 for any other (no set-id or sticky bits)."""
    return 0o755 if mode & stat.S_IXUSR else 0o644


class _Frame:
    """A directory on the walk's stack."""

    __slots__ = ("raw", "name", "fd", "dev", "ino", "length", "head", "full", "pending", "temps")

    def __init__(self, raw: bytes, name: str, fd: int, info: os.stat_result, parent: "_Frame | None") -> None:
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


class _Sanitizer:
    """One walk over an output folder, with file descriptors only and no recursion."""

    def __init__(self, label: str, owner: tuple[int, int] | None) -> None:
        self.label = label
        self.owner = owner
        self.events: list[dict[str, Any]] = []
        self.frames: list[_Frame] = []
        self.low = 1  # frames[1:low] have their descriptor closed
        self.copy_budget = MAX_HARD_LINK_COPY_BYTES
        self.attributes_removed = 0

    # -- paths shown in events -------------------------------------------------------------

    def _path(self, name: bytes | None = None) -> str:
        """The event path of the top folder, or of ``name`` in it, bounded in length."""
        frames = self.frames
        top = frames[-1]
        if name is None:
            leaf, total, depth = None, top.length, len(frames) - 1
        else:
            leaf = _printable(name)
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
        self.events.append(_event(kind, detail, self._path(name)))

    # -- the walk ------------------------------------------------------------------------

    def run(self, folder: Path) -> list[dict[str, Any]]:
        try:
            fd = os.open(folder, _DIR_FLAGS)
        except OSError as exc:
            self.events.append(_event("unreadable-output", f"cannot open the folder: {_strerror(exc)}", self.label))
            return self.events
        try:
            info = os.fstat(fd)
        except OSError as exc:
            os.close(fd)
            self.events.append(_event("unreadable-output", f"cannot stat the folder: {_strerror(exc)}", self.label))
            return self.events
        self.frames.append(_Frame(b"", _printable(self.label), fd, info, None))
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
            self._report("unreadable-output", f"cannot open folder: {_strerror(exc)}", name)
            return
        self.frames.append(_Frame(name, _printable(name), fd, info, parent))
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
            fd = os.open(b"..", _DIR_FLAGS, dir_fd=child_fd)
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
                fd = os.open(frame.raw, _DIR_FLAGS, dir_fd=fd)
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

    def _open_dir(self, dir_fd: int, name: bytes) -> int:
        try:
            return os.open(name, _DIR_FLAGS, dir_fd=dir_fd)
        except PermissionError:
            # A folder made unreadable: give it a usable mode by a descriptor that does not
            # follow links, then try again.
            self._chmod_entry(dir_fd, name, _DIR_MODE, stat.S_ISDIR)
            return os.open(name, _DIR_FLAGS, dir_fd=dir_fd)

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
                self._report("unreadable-output", f"cannot remove the attribute {_clip(_printable(attribute), 80)!r}: "
                                                  f"{_strerror(exc)}", name)  # fmt: skip
                continue
            self.attributes_removed += 1

    def _settle_dir(self, fd: int, info: os.stat_result) -> None:
        self._strip_attributes(fd)
        try:
            if stat.S_IMODE(info.st_mode) != _DIR_MODE:
                os.fchmod(fd, _DIR_MODE)
            if self.owner is not None and (info.st_uid, info.st_gid) != self.owner:
                os.fchown(fd, *self.owner)
        except OSError as exc:
            self._report("unreadable-output", f"cannot set the folder's mode or owner: {_strerror(exc)}")

    def _list(self) -> None:
        frame = self.frames[-1]
        try:
            entries = os.scandir(frame.fd)
        except OSError as exc:
            self._report("unreadable-output", f"cannot list: {_strerror(exc)}")
            return
        with entries:
            while True:
                try:
                    entry = next(entries)
                except StopIteration:
                    break
                except OSError as exc:
                    self._report("unreadable-output", f"cannot list completely: {_strerror(exc)}")
                    break
                name = os.fsencode(entry.name)
                if name in frame.temps:
                    continue
                self._check(frame, name)
        frame.temps.clear()

    def _check(self, frame: _Frame, name: bytes) -> None:
        try:
            info = os.stat(name, dir_fd=frame.fd, follow_symlinks=False)
        except OSError as exc:
            self._report("unreadable-output", f"cannot stat: {_strerror(exc)}", name)
            return
        mode = info.st_mode
        if stat.S_ISDIR(mode):
            frame.pending.append(name)
        elif stat.S_ISREG(mode):
            self._regular(frame, name, info)
        elif stat.S_ISLNK(mode):
            try:
                target = _clip(_printable(os.readlink(name, dir_fd=frame.fd)), MAX_LINK_TARGET_CHARS)
            except OSError as exc:
                target = f"? ({_strerror(exc)})"
            self._remove(frame, name, f"symbolic link to '{target}'")
        else:
            what = next((word for test, word in _SPECIAL_KINDS if test(mode)), "special file")
            self._remove(frame, name, f"{what} (mode {stat.filemode(mode)})")

    def _remove(self, frame: _Frame, name: bytes, what: str) -> None:
        try:
            os.unlink(name, dir_fd=frame.fd)
        except OSError as exc:
            self._report("unreadable-output", f"{what} could not be removed: {_strerror(exc)}", name)
            return
        self._report("refused-output", f"{what} removed", name)

    def _regular(self, frame: _Frame, name: bytes, info: os.stat_result) -> None:
        if info.st_nlink > 1:
            links = info.st_nlink
            if info.st_size > self.copy_budget:
                self._remove(frame, name, f"file with {links} hard links ({info.st_size} bytes, over the copy budget)")
                return
            try:
                copied = self._copy(frame, name, info)
            except OSError as exc:
                self._remove(frame, name, f"file with {links} hard links that could not be copied ({_strerror(exc)})")
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
            self._report("unreadable-output", f"cannot set the file's mode or owner: {_strerror(exc)}", name)

    def _copy(self, frame: _Frame, name: bytes, info: os.stat_result) -> int:
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
        events.append(_event("attributes-removed", f"{sanitizer.attributes_removed} extended attribute(s) or ACL(s) "
                                                   "removed from files and folders", label))  # fmt: skip
    return events


def _write_json(path: Path, data: Mapping[str, Any]) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, sort_keys=True, indent=2, default=str) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def _ensure_folder(folder: Path, label: str) -> list[dict[str, Any]]:
    """Make sure a staged output folder is a real directory (not a link) before it is walked.

    Parameters
    ----------
    folder : pathlib.Path
        The staged folder.
    label : str
        Its name in the run dir.

    Returns
    -------
    list of dict
        A ``refused-output`` event when something else stood in its place and was replaced
        by an empty folder.
    """
    try:
        info = os.lstat(folder)
    except FileNotFoundError:
        folder.mkdir(mode=_DIR_MODE)
        return []
    if stat.S_ISDIR(info.st_mode):
        return []
    os.unlink(folder)
    folder.mkdir(mode=_DIR_MODE)
    return [_event("refused-output", f"{stat.filemode(info.st_mode)} entry in place of the folder removed", label)]


def _bounded_events(events: list[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """At most :data:`MAX_EVENTS` events, the least needed kinds dropped first, plus a count of the dropped.

    Events keep their order; when some are dropped, an ``events-truncated`` event says how many
    of each kind.
    """
    if len(events) <= MAX_EVENTS:
        return list(events)
    rank = {kind: i for i, kind in enumerate(EVENT_PRIORITY)}
    # Unknown kinds rank with the most needed: nothing unforeseen is dropped before the known noise.
    order = sorted(range(len(events)), key=lambda i: (rank.get(str(events[i].get("kind")), -1), i))
    kept = sorted(order[:MAX_EVENTS])
    dropped: dict[str, int] = {}
    for i in order[MAX_EVENTS:]:
        kind = str(events[i].get("kind"))
        dropped[kind] = dropped.get(kind, 0) + 1
    summary = ", ".join(f"{n} {kind}" for kind, n in sorted(dropped.items()))
    truncated = _event("events-truncated", f"{sum(dropped.values())} more events not recorded: {summary}")
    truncated["dropped"] = dropped
    return [events[i] for i in kept] + [truncated]


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
        events.extend(_ensure_folder(folder, name))
        events.extend(sanitize_outputs(folder, name, owner=owner))
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
    events = _bounded_events(events)
    data = {"schema_version": RUN_JSON_SCHEMA_VERSION, **record, "events": list(events)}
    _write_json(run_dir / RunLayout.RUN_META[0], data)
    shutil.rmtree(stage.root, ignore_errors=True)
    return tuple(events)
