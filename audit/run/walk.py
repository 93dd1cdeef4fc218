"""Walking a run folder: the regular files under the run root, and what was refused, with why.

Symbolic links are never followed, folders are opened relative to their parent, caches and
version-control stores are not entered (unless they hold files named as code), and files over
the size cap are refused unless they are read in part or by content.
"""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

from mleaudit.audit.model import Skipped
from mleaudit.audit.run.kinds import _partly_readable, _sniffed_by_content
from mleaudit.audit.run.layout import RunLayout
from mleaudit.audit.run.reading import _DIR_FD, _DIR_FLAGS, _real_inside, _refused_component, display_name


#: Folders never entered, with why: caches, version-control stores and installed packages
#: (listed as notes, not gaps, unless they hold files named as code: :func:`_code_names_in`).
#: Any other folder, hidden ones and notebook autosaves included, is read, so that code an
#: agent hides in ``.x/`` is audited like any other.
_SKIP_DIRS = {
    "__pycache__": "Python bytecode cache",
    ".git": "git store", ".hg": "Mercurial store", ".svn": "Subversion store",
    "node_modules": "installed JavaScript packages",
}
#: Entries of a folder not entered that are looked at (names only) for files named as code.
_MAX_SKIPPED_ENTRIES = 100_000
_CODE_SUFFIXES = frozenset({".py", ".pyw", ".sh", ".bash", ".ipynb"})


def _code_names_in(folder: str) -> str | None:
    """What in ``folder`` (not entered, names only, links not followed) is named as code, or ``None``."""
    seen = 0
    stack = [folder]
    while stack:
        try:
            entries = list(os.scandir(stack.pop()))
        except OSError as exc:
            return f"entries that cannot be listed ({exc.strerror or exc})"
        for entry in entries:
            seen += 1
            if seen > _MAX_SKIPPED_ENTRIES:
                return f"more than {_MAX_SKIPPED_ENTRIES:,} entries (not all looked at)"
            if entry.is_dir(follow_symlinks=False):
                stack.append(entry.path)
            elif os.path.splitext(entry.name)[1].lower() in _CODE_SUFFIXES:
                return f"a file named as code: {display_name(entry.name)}"
    return None


@dataclass(slots=True)
class _Walk:
    """What :func:`_walk` found: files, refused paths (with reasons) and notes on names."""

    files: list[tuple[str, Path, int]] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    notes: list[Skipped] = field(default_factory=list)
    folders: set[str] = field(default_factory=set)


def _list_folder(root: Path, parts: tuple[str, ...]) -> list[tuple[str, os.stat_result | OSError]]:
    """``(name, lstat result or the error)`` of each entry of the folder ``root/parts``.

    The folder is reached by opening each component without following symlinks (see
    :func:`_open_in_root`), so a folder swapped for a symlink after its parent was listed is
    refused rather than entered.

    Raises
    ------
    OSError
        If the folder cannot be opened or listed.
    """
    if not _DIR_FD:
        folder = os.path.join(root, *parts)
        refused = _refused_component(root, parts) if parts else None
        if refused is not None:
            raise OSError(errno.ELOOP, refused)
        with os.scandir(folder) as handle:
            return _entries(handle)
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0))
    try:
        for part in parts:
            child = os.open(part, _DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = child
        with os.scandir(fd) as handle:
            return _entries(handle)
    finally:
        os.close(fd)


def _entries(handle) -> list[tuple[str, os.stat_result | OSError]]:
    """``(name, lstat result or the error)`` of each entry of an open ``os.scandir``."""
    entries: list[tuple[str, os.stat_result | OSError]] = []
    for entry in handle:
        try:
            entries.append((entry.name, entry.stat(follow_symlinks=False)))
        except OSError as exc:
            entries.append((entry.name, exc))
    return entries


def _shown(name: str, siblings: set[str], walk: _Walk, prefix: str) -> str | None:
    """The printable form of an entry name (:func:`display_name`), noting escaped names.

    ``None`` when the escaped form is the name of another entry of the same folder (the entry
    is then listed as skipped: two files must never share a path in the report).
    """
    shown = display_name(name)
    if shown == name:
        return shown
    if shown in siblings:
        walk.skipped.append(Skipped(path=prefix + shown, reason=(
            "file name is not valid UTF-8 and its escaped form names another entry of the folder; not read")))
        return None
    walk.notes.append(Skipped(path=prefix + shown,
                              reason="file name is not valid UTF-8 (bytes shown as \\xNN escapes)"))
    return shown


def _walk(root: Path, names: list[str] | None) -> _Walk:
    """Regular files under ``root`` as ``(relative POSIX path, absolute path, size)``, sorted.

    ``names`` restricts the top level to those entries (a single-file run). Symlinks (to files
    or folders), special files, hidden and cache directories, files over the size cap and
    anything whose real path leaves ``root`` are not returned; all but the hidden and cache
    directories are recorded in ``skipped``. Relative paths are printable (:func:`display_name`);
    absolute paths keep the names as on disk.
    """
    walk = _Walk()
    root_real = os.path.realpath(root)
    stack: list[tuple[tuple[str, ...], str]] = [((), "")]
    while stack:
        parts, prefix = stack.pop()
        try:
            entries = sorted(_list_folder(root, parts), key=lambda item: item[0])
        except OSError as exc:
            folder = prefix.rstrip("/") or "."
            reason = exc.strerror or str(exc)
            if exc.errno in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
                # Swapped for a symlink (or a file) after its parent was listed.
                reason = _refused_component(root, parts) or "symbolic link (not followed)"
                walk.skipped.append(Skipped(path=folder, reason=reason))
            else:
                walk.skipped.append(Skipped(path=folder, reason=f"cannot list folder: {reason}"))
            continue
        # The folder's real path, once: an entry that lstat says is no link resolves to it plus
        # its name, so each entry is checked without resolving every folder above it again.
        folder_real = root_real if not parts else os.path.realpath(os.path.join(root, *parts))
        siblings = {name for name, _ in entries}
        subdirs: list[tuple[tuple[str, ...], str]] = []
        for name, info in entries:
            if names is not None and not prefix and name not in names:
                continue
            shown = _shown(name, siblings, walk, prefix)
            if shown is None:
                continue
            rel = prefix + shown
            path = os.path.join(root, *parts, name)
            if isinstance(info, OSError):
                walk.skipped.append(Skipped(path=rel, reason=f"cannot stat: {info.strerror or info}"))
                continue
            if stat.S_ISLNK(info.st_mode):
                walk.skipped.append(Skipped(path=rel, reason="symbolic link (not followed)"))
                continue
            if stat.S_ISDIR(info.st_mode):
                walk.folders.add(rel)
                if name in _SKIP_DIRS:
                    # Caches, version-control stores and installed packages: nothing in them runs
                    # as it is, so they are listed, not read, and not a gap -- unless they hold
                    # files named as code, which an agent could have hidden there to run.
                    hidden = _code_names_in(path)
                    if hidden is None:
                        walk.notes.append(Skipped(path=rel, reason=f"folder not entered: {_SKIP_DIRS[name]}"))
                    else:
                        walk.skipped.append(Skipped(path=rel, reason=(
                            f"folder not entered ({_SKIP_DIRS[name]}) but it holds {hidden}")))
                    continue
                if not _real_inside(root_real, os.path.join(folder_real, name)):
                    walk.skipped.append(Skipped(path=rel, reason="directory resolves outside the run root"))
                    continue
                if len(parts) + 1 > RunLayout.MAX_FOLDER_DEPTH:
                    walk.skipped.append(Skipped(path=rel, reason=(
                        f"folder nested deeper than {RunLayout.MAX_FOLDER_DEPTH} levels below the run root; "
                        "not entered")))
                    continue
                subdirs.append(((*parts, name), rel + "/"))
                continue
            if not stat.S_ISREG(info.st_mode):
                walk.skipped.append(Skipped(path=rel, reason="not a regular file"))
                continue
            if not _real_inside(root_real, os.path.join(folder_real, name)):
                walk.skipped.append(Skipped(path=rel, reason="file resolves outside the run root"))
                continue
            if info.st_size > RunLayout.MAX_FILE_BYTES and not (_partly_readable(rel) or _sniffed_by_content(rel)):
                walk.skipped.append(
                    Skipped(path=rel, reason=f"{info.st_size} bytes is over the {RunLayout.MAX_FILE_BYTES}-byte cap")
                )
                continue
            walk.files.append((rel, Path(path), info.st_size))
        # Depth-first in name order; reversed because the stack pops from the end.
        stack.extend(reversed(subdirs))
    walk.files.sort(key=lambda item: item[0])
    return walk
