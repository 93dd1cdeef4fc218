"""Which files a write names: the kernel files of ``add`` with their keys, the keys of ``remove``.

A reference's key is its path relative to the corpus root that holds it: ``--root`` when given,
else the recorded root (from ``build`` or an earlier ``add``) that contains it, else the folder
named (or a file's parent folder), which then becomes a root. Both functions take the recorded
roots as the index meta holds them inside the writer lock.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Sequence

from mleaudit.audit.model import Skipped
from mleaudit.audit.similarity.corpus import REFERENCE_SUFFIXES, iter_reference_files
from mleaudit.audit.similarity.index.format import CorpusIndexError


def _plan_files(paths: Sequence[str | Path], root: str | Path | None, recorded_roots: Sequence[str]
                ) -> tuple[list[tuple[Path, str]], list[Skipped], list[Skipped], list[str]]:
    """Files to read with their keys; files skipped by name; second files for a key already
    taken in this call (reported, not recorded in the index); folders that become roots."""
    roots = [Path(r) for r in recorded_roots]
    explicit = Path(root).resolve() if root is not None else None
    if explicit is not None and not explicit.is_dir():
        raise CorpusIndexError(f"--root {str(root)!r} is not a folder")
    tasks: list[tuple[Path, str]] = []
    skipped: list[Skipped] = []
    duplicates: list[Skipped] = []
    new_roots: list[str] = []
    taken: dict[str, Path] = {}

    def base_for(target: Path, default: Path) -> Path:
        if explicit is not None:
            if not target.is_relative_to(explicit):
                raise CorpusIndexError(f"{target} is not inside --root {explicit}")
            return explicit
        for known in roots:
            if target.is_relative_to(known):
                return known
        return default

    def take(file: Path, base: Path) -> None:
        key = file.relative_to(base).as_posix()
        try:
            key.encode("utf-8")
        except UnicodeEncodeError:
            escaped = key.encode("utf-8", errors="surrogateescape").decode("utf-8", errors="backslashreplace")
            skipped.append(Skipped(path=escaped, reason="file name is not valid UTF-8"))
            return
        if key in taken:
            duplicates.append(Skipped(path=key, reason=f"duplicate corpus path (already taken by {taken[key]})"))
            return
        taken[key] = file
        tasks.append((file, key))

    for given in paths:
        target = Path(given)
        if not target.exists() and not target.is_symlink():
            raise CorpusIndexError(f"{given}: no such file or folder")
        if target.is_dir():
            # A folder named on the command line is followed even through a link; links
            # inside the corpus are not (the reader lists them as skipped).
            absolute = target.resolve()
        else:
            absolute = target.parent.resolve() / target.name
        if target.is_dir():
            base = base_for(absolute, absolute)
            if str(base) not in new_roots and base not in roots:
                new_roots.append(str(base))
            for file, _ in iter_reference_files(absolute):
                take(file, base)
        else:
            base = base_for(absolute, absolute.parent)
            if not absolute.name.lower().endswith(REFERENCE_SUFFIXES):
                skipped.append(Skipped(path=absolute.relative_to(base).as_posix(),
                                       reason=f"not a kernel file (expected {' or '.join(REFERENCE_SUFFIXES)})"))
                continue
            take(absolute, base)
    return tasks, skipped, duplicates, new_roots


def _keys_for(given: str | Path, indexed: Sequence[str], recorded_roots: Sequence[str]) -> list[str]:
    """The indexed keys (and recorded skipped paths) that one ``remove`` argument names: the
    key itself, every key under it when it names a folder, or, for a path on disk under a
    recorded root, the key relative to that root (and the keys under it). Nothing is
    resolved through links and nothing outside the recorded roots is taken for a key."""
    text = os.fspath(given)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return []
    if "\0" in text:
        return []
    names: list[str] = []
    plain = text.strip("/") if not os.path.isabs(text) else ""
    if plain and plain not in (".", ".."):
        names.append(plain)
    absolute = os.path.normpath(os.path.abspath(text))
    for root in recorded_roots:
        try:
            relative = Path(absolute).relative_to(root).as_posix()
        except ValueError:
            continue
        names.append("" if relative == "." else relative)
    found: list[str] = []
    for name in names:
        for key in indexed:
            if key == name or name == "" or key.startswith(name + "/"):
                if key not in found:
                    found.append(key)
    return found
