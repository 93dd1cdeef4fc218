"""The user's cache folder for what mleaudit derives from files and can derive again.

Entries are mleaudit's own data (rule documents read, reference code tokenized): a miss, a damaged
entry or a folder that cannot be written only costs the work again, never an error. The folder is
``$MLEAUDIT_CACHE_DIR/<part>`` (default: the user's cache directory, ``~/.cache/mleaudit/<part>``
on Linux); ``MLEAUDIT_CACHE_DIR=off`` turns every cache off. Like Python's own ``__pycache__``, the
cache is trusted as much as the user's files: only the user who runs mleaudit writes there (an
audited run never does), and nothing in an entry is executed.
"""

from __future__ import annotations

import logging
import os
import stat
import tempfile
from pathlib import Path

__all__ = ["CACHE_ENV", "cache_root", "read_entry", "write_entry"]

#: Environment variable naming the cache folder (``off`` turns the caches off).
CACHE_ENV = "MLEAUDIT_CACHE_DIR"

logger = logging.getLogger(__name__)

#: Unusable values of the variable already warned about.
_WARNED: set[str] = set()


def cache_root(part: str) -> Path | None:
    """The cache folder ``part`` (``"rules"``, ``"prepared"``), or ``None`` when caching is off."""
    configured = os.environ.get(CACHE_ENV)
    if configured is not None and configured.strip().lower() in ("off", "0", "false", "no", ""):
        return None
    if configured:
        try:
            return Path(configured).expanduser() / part
        except RuntimeError as exc:  # "~user" of no user
            if configured not in _WARNED:  # once, not on every look-up
                _WARNED.add(configured)
                logger.warning("%s=%s: %s; nothing is cached", CACHE_ENV, configured, exc)
            return None
    import platformdirs

    return Path(platformdirs.user_cache_dir("mleaudit")) / part


def read_entry(path: Path, max_bytes: int) -> bytes | None:
    """The bytes of a cache entry, or ``None``: missing, not a regular file, a link, over
    ``max_bytes`` or unreadable (it never blocks on a FIFO)."""
    try:
        handle = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return None
    try:
        with os.fdopen(handle, "rb") as file:
            if not stat.S_ISREG(os.fstat(file.fileno()).st_mode):
                return None
            data = file.read(max_bytes + 1)
    except OSError:
        return None
    return data if len(data) <= max_bytes else None


def write_entry(folder: Path, name: str, data: bytes) -> None:
    """Write a cache entry atomically (a temporary file renamed over it); a failure is ignored."""
    handle = None
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile("wb", dir=folder, suffix=".tmp", delete=False) as handle:
            handle.write(data)
        os.replace(handle.name, folder / name)
    except OSError:
        if handle is not None:
            try:
                os.unlink(handle.name)
            except OSError:
                pass
