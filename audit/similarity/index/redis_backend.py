"""The Redis backend: an index shared by several machines, through datasketch's storage layer.

The local index file then holds only the format version and where the data is (host, port,
database, key prefix); a password is read from ``MLEAUDIT_REDIS_PASSWORD`` when the index is
opened, never stored. Writers hold a lease key rather than a file lock (:meth:`_RedisBackend.writer_lock`).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import threading
from typing import Any, Iterable, Iterator, Mapping, Sequence

import numpy as np

from mleaudit.audit.similarity.index.format import CorpusIndexError
from mleaudit.audit.similarity.index.locks import _wait_notice
from mleaudit.audit.similarity.index.postings import _pack_posting, _Posting, _unpack_posting
from mleaudit.audit.similarity.index.storage import _Backend, _chunks, _describe_storage

logger = logging.getLogger(__name__)

#: Seconds a writer waits for another writer of the same index before saying so (it then waits on).
_LOCK_NOTICE = 2.0
#: Lease of the Redis writer lock, renewed every third of it while the writer works.
_REDIS_LOCK_LEASE = 60.0


class _RedisBackend(_Backend):
    """The index's data in Redis, through datasketch's storage layer (``ordered_storage``).

    Each kind of data is one datasketch list storage under the index's key prefix: ``meta``
    (JSON), ``docs`` (doc id -> record), ``paths`` (path -> JSON of id, sha256, segment,
    language, text sha256), ``post`` (posting key -> one entry per segment, or one once merged), ``segs`` (segment ->
    statistics) and ``skipped`` (path -> reason). Counters use Redis ``INCRBY`` so that several
    machines can add at once.
    """

    def __init__(self, storage: Mapping[str, Any], basename: str, where: str) -> None:
        try:
            import redis  # noqa: F401 - datasketch's Redis storage needs it
            from datasketch.storage import ordered_storage
        except ImportError as exc:
            raise CorpusIndexError(
                f"{where}: Redis storage needs the 'redis' package (pip install 'mleaudit[redis]')"
            ) from exc
        config = {"type": "redis", "redis": dict(storage["redis"])}
        prefix = basename.encode()
        self.where = where
        self.prefix = prefix
        parameters = _redis_parameters(config["redis"])
        try:
            # Fail fast when nobody listens: the client's default retries with backoff would
            # take seconds to say so.
            from redis.backoff import NoBackoff
            from redis.retry import Retry

            probe = redis.Redis(**parameters, retry=Retry(NoBackoff(), 0), socket_connect_timeout=10)
            probe.ping()
            probe.close()
        except redis.RedisError as exc:
            raise CorpusIndexError(f"{where}: cannot reach Redis at {_describe_storage(storage)} ({exc})") from exc
        self._meta = ordered_storage(config, name=prefix + b":meta")
        self._docs = ordered_storage(config, name=prefix + b":docs")
        self._paths = ordered_storage(config, name=prefix + b":paths")
        self._post = ordered_storage(config, name=prefix + b":post")
        self._segs = ordered_storage(config, name=prefix + b":segs")
        self._skip = ordered_storage(config, name=prefix + b":skipped")
        self._prof = ordered_storage(config, name=prefix + b":profiles")
        # Counters need an atomic increment and list items a removal by value, which
        # datasketch's storages do not offer (its ``remove_val`` calls ``lrem`` with the
        # arguments of redis-py 2); the client is built from the same parameters.
        self._client = redis.Redis(**parameters)
        self._lock_lost: str | None = None

    @staticmethod
    def _one(values: list) -> bytes | None:
        return values[-1] if values else None

    def _put(self, storage: Any, key: str, value: bytes) -> None:
        storage.remove(key)
        storage.insert(key, value)

    def read_meta(self, key: str) -> Any:
        value = self._one(self._meta.get(key))
        return None if value is None else json.loads(value)

    def write_meta(self, key: str, value: Any) -> None:
        self._put(self._meta, key, json.dumps(value, sort_keys=True).encode())

    def allocate(self, counter: str, n: int) -> int:
        return int(self._client.incrby(self.prefix + b":next_" + counter.encode(), n)) - n

    def lookup(self, paths: Sequence[str]) -> dict[str, tuple[int, str, int]]:
        found = {}
        paths = list(paths)
        for chunk in _chunks(paths, 5000):
            for path, values in zip(chunk, self._paths.getmany(*chunk)):
                if values:
                    info = json.loads(values[-1])
                    found[path] = (int(info["id"]), str(info["sha256"]), int(info["segment"]))
        return found

    def _all_paths(self) -> list[str]:
        return [k.decode() if isinstance(k, bytes) else k for k in self._paths.keys()]

    def digest_rows(self) -> list[tuple[str, str, str]]:
        rows = []
        paths = self._all_paths()
        for chunk in _chunks(paths, 5000):
            for path, values in zip(chunk, self._paths.getmany(*chunk)):
                if values:
                    info = json.loads(values[-1])
                    rows.append((path, info["language"], info["text_sha256"]))
        return rows

    def count_docs(self) -> int:
        return int(self._paths.size())

    def paths(self, ids: Sequence[int]) -> dict[int, str]:
        return {doc: path for doc, (path, _) in self.records(ids).items()}

    def records(self, ids: Sequence[int]) -> dict[int, tuple[str, bytes]]:
        found = {}
        ids = list(ids)
        for chunk in _chunks(ids, 5000):
            for doc, values in zip(chunk, self._docs.getmany(*[str(d) for d in chunk])):
                if values:
                    blob = values[-1]
                    path_len = int.from_bytes(blob[:4], "little")
                    found[doc] = (blob[4 : 4 + path_len].decode(), blob[4 + path_len :])
        return found

    def write_segment(self, segment: int, docs: list[tuple], postings: list[tuple[int, _Posting]], stats: bytes) -> None:
        for doc, path, sha, text_sha, language, record in docs:
            encoded = path.encode()
            self._docs.insert(str(doc), len(encoded).to_bytes(4, "little") + encoded + record, buffer=True)
            info = {"id": doc, "sha256": sha, "segment": segment, "language": language, "text_sha256": text_sha}
            self._paths.remove(path, buffer=True)
            self._paths.insert(path, json.dumps(info, sort_keys=True).encode(), buffer=True)
        self._docs.empty_buffer()
        self._paths.empty_buffer()
        for key, posting in postings:
            self._post.insert(str(key), _pack_posting(posting), buffer=True)
        self._post.empty_buffer()
        self._put(self._segs, str(segment), stats)

    def postings(self, keys: Sequence[int], *, counts: bool = True) -> dict[int, list[_Posting]]:
        found: dict[int, list[_Posting]] = {}
        keys = list(keys)
        for chunk in _chunks(keys, 5000):
            for key, values in zip(chunk, self._post.getmany(*[str(k) for k in chunk])):
                if values:
                    found[key] = [_unpack_posting(blob, f"{self.where}: postings of {key}") for blob in values]
        return found

    def postings_within(self, keys: Sequence[int], cap: int) -> dict[int, tuple[int, list[_Posting] | None]]:
        found: dict[int, tuple[int, list[_Posting] | None]] = {}
        for key, entries in self.postings(keys).items():
            df = sum(p.size for p in entries)
            found[key] = (df, entries if df <= cap else None)
        return found

    def keys_to_merge(self) -> list[int]:
        return sorted(int(key) for key, n in self._post.itemcounts().items() if n > 1)

    def merge_postings(self, merged: Sequence[tuple[int, Sequence[_Posting], _Posting]]) -> None:
        pipe = self._client.pipeline(transaction=True)
        for key, entries, posting in merged:
            name = self._post.redis_key(str(key))
            for entry in entries:
                pipe.lrem(name, 1, entry.token)
            pipe.lpush(name, _pack_posting(posting))
        pipe.execute()

    def frequencies(self, keys: Sequence[int]) -> dict[int, int]:
        return {key: sum(p.size for p in entries) for key, entries in self.postings(keys).items()}

    def replace_posting(self, key: int, old: _Posting, new: _Posting | None) -> None:
        self._client.lrem(self._post.redis_key(str(key)), 1, old.token)
        if new is not None and new.size:
            self._post.insert(str(key), _pack_posting(new))

    def segment_stats(self) -> list[tuple[int, bytes]]:
        keys = [k.decode() if isinstance(k, bytes) else k for k in self._segs.keys()]
        return [(int(k), v[-1]) for k, v in zip(keys, self._segs.getmany(*keys)) if v] if keys else []

    def replace_segment_stats(self, segment: int, blob: bytes) -> None:
        self._put(self._segs, str(segment), blob)

    def delete_docs(self, rows: Sequence[tuple[int, str]]) -> None:
        if rows:
            self._docs.remove(*[str(doc) for doc, _ in rows])
            self._paths.remove(*[path for _, path in rows])
            self._prof.remove(*[str(doc) for doc, _ in rows])

    def write_profiles(self, rows: Sequence[tuple[int, bytes]]) -> None:
        for doc, blob in rows:
            self._prof.insert(str(doc), blob, buffer=True)
        self._prof.empty_buffer()

    def profiles(self, ids: Sequence[int]) -> dict[int, bytes]:
        found = {}
        ids = list(ids)
        for chunk in _chunks(ids, 5000):
            for doc, values in zip(chunk, self._prof.getmany(*[str(d) for d in chunk])):
                if values:
                    found[doc] = values[-1]
        return found

    # The n-gram table lives in four Redis hashes (field: the key's 8 bytes): document
    # frequency and context of each n-gram, total and kinds of each context.
    def _hash(self, name: str) -> bytes:
        return self.prefix + b":" + name.encode()

    @staticmethod
    def _fields(keys: np.ndarray) -> list[bytes]:
        raw = np.asarray(keys, dtype="<i8").tobytes()
        return [raw[i : i + 8] for i in range(0, len(raw), 8)]

    def apply_grams(self, keys: np.ndarray, contexts: np.ndarray, deltas: np.ndarray) -> None:
        fields = self._fields(keys)
        after = []
        for start in range(0, len(fields), 10000):
            pipe = self._client.pipeline(transaction=False)
            for field, delta in zip(fields[start : start + 10000], deltas[start : start + 10000].tolist()):
                pipe.hincrby(self._hash("df"), field, delta)
            after.extend(int(v) for v in pipe.execute())
        after_array = np.array(after, dtype=np.int64)
        born = (after_array == deltas) & (deltas > 0)
        gone = after_array <= 0
        change = born.astype(np.int64) - gone.astype(np.int64)
        pipe = self._client.pipeline(transaction=False)
        for i in np.flatnonzero(born).tolist():
            pipe.hset(self._hash("ctx"), fields[i], int(contexts[i]))
        for i in np.flatnonzero(gone).tolist():
            pipe.hdel(self._hash("df"), fields[i])
            pipe.hdel(self._hash("ctx"), fields[i])
        context_keys, inverse = np.unique(contexts, return_inverse=True)
        totals = np.bincount(inverse, weights=deltas, minlength=context_keys.size).astype(np.int64)
        kinds = np.bincount(inverse, weights=change, minlength=context_keys.size).astype(np.int64)
        for field, total, kind in zip(self._fields(context_keys), totals.tolist(), kinds.tolist()):
            if total:
                pipe.hincrby(self._hash("total"), field, total)
            if kind:
                pipe.hincrby(self._hash("kinds"), field, kind)
        pipe.execute()

    def _values(self, name: str, keys: np.ndarray) -> list:
        fields = self._fields(keys)
        values: list = []
        for start in range(0, len(fields), 10000):
            chunk = fields[start : start + 10000]
            if chunk:
                values.extend(self._client.hmget(self._hash(name), chunk))
        return values

    def gram_rows(self, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        keys = np.unique(np.asarray(keys, dtype=np.int64))
        values = self._values("df", keys)
        present = np.array([v is not None and int(v) > 0 for v in values], dtype=bool)
        counts = np.array([int(v) if v is not None else 0 for v in values], dtype=np.int64)
        return keys[present], counts[present] if counts.size else counts

    def context_rows(self, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        keys = np.unique(np.asarray(keys, dtype=np.int64))
        totals = np.array([int(v) if v is not None else 0 for v in self._values("total", keys)], dtype=np.int64)
        kinds = np.array([int(v) if v is not None else 0 for v in self._values("kinds", keys)], dtype=np.int64)
        present = (totals > 0) | (kinds > 0)
        return keys[present], totals[present], kinds[present]

    def count_grams(self) -> int:
        return int(self._client.hlen(self._hash("df")))

    def set_skipped(self, items: Mapping[str, str]) -> None:
        for path, reason in items.items():
            self._put(self._skip, path, reason.encode())

    def remove_skipped(self, paths: Iterable[str]) -> None:
        paths = list(paths)
        if paths:
            self._skip.remove(*paths)

    def skipped(self) -> list[tuple[str, str]]:
        keys = [k.decode() if isinstance(k, bytes) else k for k in self._skip.keys()]
        if not keys:
            return []
        return [(k, v[-1].decode()) for k, v in zip(keys, self._skip.getmany(*keys)) if v]

    def begin(self) -> None:
        if self._lock_lost is not None:
            raise CorpusIndexError(f"{self.where}: lost the Redis writer lock ({self._lock_lost}); nothing more is written")

    def commit(self) -> None:
        self.begin()

    def rollback(self) -> None:
        pass

    def close(self) -> None:
        self._client.close()

    @contextlib.contextmanager
    def writer_lock(self) -> Iterator[None]:
        """Hold the lock key ``<prefix>:writer``: a lease renewed by a thread while the writer
        works, so a writer on a crashed machine stops blocking the others after the lease."""
        from redis.exceptions import LockError

        lock = self._client.lock(self.prefix + b":writer", timeout=_REDIS_LOCK_LEASE, sleep=0.05,
                                 thread_local=False)
        if not lock.acquire(blocking=True, blocking_timeout=_LOCK_NOTICE):
            _wait_notice(self.where)
            lock.acquire(blocking=True)
        stop = threading.Event()
        self._lock_lost = None

        def renew() -> None:
            while not stop.wait(_REDIS_LOCK_LEASE / 3):
                try:
                    lock.reacquire()
                except Exception as exc:  # noqa: BLE001 - any failure means the lease may be gone
                    self._lock_lost = f"{type(exc).__name__}: {exc}"
                    return

        renewer = threading.Thread(target=renew, name="corpus-index-writer-lease", daemon=True)
        renewer.start()
        try:
            yield
        finally:
            stop.set()
            renewer.join()
            try:
                lock.release()
            except LockError:
                logger.warning("%s: the Redis writer lock had expired before it was released", self.where)
            self._lock_lost = None


def _redis_parameters(config: Mapping[str, Any]) -> dict[str, Any]:
    """``redis.Redis`` keyword arguments from a datasketch Redis config (``{"env": NAME,
    "default": value}`` entries are read from the environment, as datasketch reads them)."""
    parameters = {}
    for key, value in config.items():
        if isinstance(value, dict) and "env" in value:
            value = os.environ.get(str(value["env"]), value.get("default"))
        parameters[key] = value
    return parameters
