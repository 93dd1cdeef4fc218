"""Where an index's data lives: the backend protocol, the storage URL, storage errors.

Storage. By default the index is one SQLite file
(:class:`~mleaudit.audit.similarity.index.sqlite_backend._SQLiteBackend`). With a Redis URL the
data lives in Redis through datasketch's storage layer (``datasketch.storage.ordered_storage``
with a ``storage_config`` of type ``redis``;
:class:`~mleaudit.audit.similarity.index.redis_backend._RedisBackend`), so several machines can
share and extend one index (the n-gram table is four Redis hashes, changed with atomic
increments); the local file then only holds the format version and where the data is. The file
records the format version, the k-gram length and window, and the grammar versions; opening it
with other options or another grammar version is an error that says so.
"""

from __future__ import annotations

import contextlib
import functools
import sqlite3
from typing import Any, Callable, Iterable, Iterator, Mapping, Protocol, Sequence
from urllib.parse import urlsplit

import numpy as np

from mleaudit.audit.similarity.index.format import CorpusIndexError
from mleaudit.audit.similarity.index.postings import _Posting

_REDIS_PASSWORD_ENV = "MLEAUDIT_REDIS_PASSWORD"
#: SQLite's limit on bound parameters is 32766 in current versions; stay well below.
_SQL_CHUNK = 900


def parse_storage(spec: str | None) -> dict[str, Any] | None:
    """A datasketch ``storage_config`` from a storage URL.

    Parameters
    ----------
    spec : str or None
        ``None``, ``""`` or ``"sqlite"`` for the default (everything in the index file);
        ``redis://HOST[:PORT][/DB]`` for Redis. A password is never written into the index:
        it is read from the ``MLEAUDIT_REDIS_PASSWORD`` environment variable when the index is
        opened (datasketch's ``{"env": ...}`` convention).

    Returns
    -------
    dict or None
        ``None`` for the index file, else ``{"type": "redis", "redis": {...}}``.

    Raises
    ------
    CorpusIndexError
        For another scheme, a password in the URL, or a bad port or database number.

    Examples
    --------
    >>> parse_storage("redis://10.0.0.5:6380/2")["redis"]["port"]
    6380
    >>> parse_storage("sqlite") is None
    True
    """
    if spec is None or spec.strip() in ("", "sqlite"):
        return None
    parts = urlsplit(spec.strip())
    if parts.scheme != "redis":
        raise CorpusIndexError(f"storage {spec!r}: expected 'sqlite' or redis://HOST:PORT/DB")
    if parts.password or parts.username:
        raise CorpusIndexError(
            f"storage {spec!r}: do not put credentials in the URL (they would be stored in the index); "
            f"set {_REDIS_PASSWORD_ENV} instead"
        )
    try:
        port = parts.port or 6379
        db_text = parts.path.strip("/") or "0"
        db = int(db_text)
    except ValueError as exc:
        raise CorpusIndexError(f"storage {spec!r}: bad port or database number ({exc})") from exc
    if db < 0:
        raise CorpusIndexError(f"storage {spec!r}: database number must be >= 0")
    return {
        "type": "redis",
        "redis": {
            "host": parts.hostname or "localhost",
            "port": port,
            "db": db,
            "password": {"env": _REDIS_PASSWORD_ENV, "default": None},
        },
    }


def _describe_storage(storage: Mapping[str, Any] | None) -> str:
    if not storage:
        return "sqlite"
    redis_cfg = storage.get("redis", {})
    return f"redis://{redis_cfg.get('host')}:{redis_cfg.get('port')}/{redis_cfg.get('db')}"


class _Backend(Protocol):
    """Where an index's data lives (:class:`_SQLiteBackend`, :class:`_RedisBackend`).

    Counters (``allocate``) hand out reference and segment ids; ``begin``/``commit`` bracket
    one flush of ``add`` (a transaction in SQLite, nothing in Redis). ``apply_grams`` adds
    document-frequency changes to the n-gram table and keeps each context's total and number of
    distinct continuations; ``gram_rows``/``context_rows`` return the rows found for the asked
    keys (absent keys are left out). ``keys_to_merge`` lists the posting keys with more than one
    entry and ``merge_postings`` replaces the given entries of each key by one.
    """

    def read_meta(self, key: str) -> Any: ...
    def write_meta(self, key: str, value: Any) -> None: ...
    def allocate(self, counter: str, n: int) -> int: ...
    def lookup(self, paths: Sequence[str]) -> dict[str, tuple[int, str, int]]: ...
    def digest_rows(self) -> list[tuple[str, str, str]]: ...
    def count_docs(self) -> int: ...
    def paths(self, ids: Sequence[int]) -> dict[int, str]: ...
    def records(self, ids: Sequence[int]) -> dict[int, tuple[str, bytes]]: ...
    def write_segment(self, segment: int, docs: list[tuple], postings: list[tuple[int, _Posting]], stats: bytes) -> None: ...
    def postings(self, keys: Sequence[int], *, counts: bool = True) -> dict[int, list[_Posting]]: ...
    def postings_within(self, keys: Sequence[int], cap: int) -> dict[int, tuple[int, list[_Posting] | None]]: ...
    def keys_to_merge(self) -> list[int]: ...
    def merge_postings(self, merged: Sequence[tuple[int, Sequence[_Posting], _Posting]]) -> None: ...
    def frequencies(self, keys: Sequence[int]) -> dict[int, int]: ...
    def replace_posting(self, key: int, old: _Posting, new: _Posting | None) -> None: ...
    def segment_stats(self) -> list[tuple[int, bytes]]: ...
    def replace_segment_stats(self, segment: int, blob: bytes) -> None: ...
    def delete_docs(self, rows: Sequence[tuple[int, str]]) -> None: ...
    def set_skipped(self, items: Mapping[str, str]) -> None: ...
    def remove_skipped(self, paths: Iterable[str]) -> None: ...
    def skipped(self) -> list[tuple[str, str]]: ...
    def write_profiles(self, rows: Sequence[tuple[int, bytes]]) -> None: ...
    def profiles(self, ids: Sequence[int]) -> dict[int, bytes]: ...
    def apply_grams(self, keys: np.ndarray, contexts: np.ndarray, deltas: np.ndarray) -> None: ...
    def gram_rows(self, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]: ...
    def context_rows(self, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]: ...
    def count_grams(self) -> int: ...
    def begin(self) -> None: ...
    def commit(self) -> None: ...
    def rollback(self) -> None: ...
    def close(self) -> None: ...
    def writer_lock(self) -> contextlib.AbstractContextManager[None]: ...


def _chunks(items: Sequence[Any], size: int = _SQL_CHUNK) -> Iterator[Sequence[Any]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _guarded(method: Callable) -> Callable:
    """Report storage failures (a damaged SQLite file, a Redis outage) as :class:`CorpusIndexError`."""

    @functools.wraps(method)
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return method(self, *args, **kwargs)
        except sqlite3.Error as exc:
            raise CorpusIndexError(f"{self.path}: storage error ({exc})") from exc
        except Exception as exc:
            if type(exc).__module__.split(".")[0] == "redis":
                raise CorpusIndexError(f"{self.path}: Redis error ({exc})") from exc
            raise

    return wrapper
