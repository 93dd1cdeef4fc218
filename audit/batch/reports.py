"""Report files of a batch: a name per run id that no other run id shares, written all at once."""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
import unicodedata
from pathlib import Path


#: Characters of the readable part of a report file name (the hash that follows keeps names apart).
_SLUG_CHARS = 60


def report_file_name(run_id: str) -> str:
    """The file name of a run's report: ``<slug>-<hash>.json``.

    The slug is the run id without accents (NFKD), with every run of characters other than
    ASCII letters, digits, ``.``, ``_`` and ``-`` turned into one ``_`` (no leading dot or
    dash, at most 60 characters), for reading; the hash is the first 16 hex digits of the SHA-256 of the exact
    run id, so two run ids never share a file name (``a b`` and ``a_b``, ``Run`` and ``run`` on
    a case-insensitive file system, two long ids with one prefix).

    Examples
    --------
    >>> report_file_name("spaceship-titanic_0a1b")
    'spaceship-titanic_0a1b-7e7faef4cca07921.json'
    >>> report_file_name("a b") != report_file_name("a_b")
    True
    """
    digest = hashlib.sha256(run_id.encode("utf-8", errors="surrogatepass")).hexdigest()[:16]
    # accents dropped for reading ("é" -> "e"); the hash, of the exact id, keeps ids apart
    ascii_id = unicodedata.normalize("NFKD", run_id).encode("ascii", errors="ignore").decode("ascii")
    slug = re.sub(r"[^A-Za-z0-9._-]+", "_", ascii_id).lstrip(".-")[:_SLUG_CHARS] or "run"
    return f"{slug}-{digest}.json"


def _file_mode() -> int:
    """The mode a new file gets under the current umask (``mkstemp`` makes its files 0600)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return 0o666 & ~mask


def write_text_atomic(path: Path, text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` all at once: a temporary file beside it, synced, then renamed over it.

    An interrupted batch (Ctrl-C, a killed process) therefore leaves each report either as it
    was or complete, never half written; a link at ``path`` is replaced, not followed. The
    temporary file (``.<name>.<random>.tmp``) is removed when writing fails.

    Raises
    ------
    OSError
        If the folder is not writable.
    """
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name[:80]}.", suffix=".tmp", dir=path.parent)
    try:
        # backslashreplace: a run id from a file name that is not UTF-8 holds lone surrogates
        with os.fdopen(handle, "w", encoding="utf-8", errors="backslashreplace") as stream:
            stream.write(text)
            stream.flush()
            os.fsync(stream.fileno())
        os.chmod(temporary, _file_mode())
        os.replace(temporary, path)
    except BaseException:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        raise
