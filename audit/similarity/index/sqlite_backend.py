"""The SQLite backend: the whole index in one file, its schema, and how it is opened and checked.

The file is a safe format: opening it never runs SQL stored in its schema
(``trusted_schema = OFF``), the schema must be exactly the index's (:func:`_check_schema`), and
page integrity is checked while reading. A first ``add`` into an empty index (a build) writes
through the write-ahead log with ``synchronous = OFF`` (:class:`_BulkWrites`); later adds keep the
rollback journal throughout. The stored layout does not depend on either.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence
from urllib.parse import quote

import numpy as np

from mleaudit.audit.similarity.index.format import CorpusIndexError
from mleaudit.audit.similarity.index.locks import _file_writer_lock
from mleaudit.audit.similarity.index.postings import _BITMAP_IDS, _WIDE_COUNTS, _Posting
from mleaudit.audit.similarity.index.storage import _Backend, _chunks

#: What an SQLite file starts with.
_SQLITE_HEADER = b"SQLite format 3\x00"
#: The tables of an index file, as their ``CREATE`` statements (:func:`_check_schema` compares them).
_SQLITE_TABLES = {
    "meta": "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "docs": (
        "CREATE TABLE docs (id INTEGER PRIMARY KEY, path TEXT NOT NULL UNIQUE, sha256 TEXT NOT NULL, "
        "text_sha256 TEXT NOT NULL, language TEXT NOT NULL, segment INTEGER NOT NULL, record BLOB NOT NULL)"
    ),
    "postings": (
        "CREATE TABLE postings (key INTEGER NOT NULL, segment INTEGER NOT NULL, n INTEGER NOT NULL, "
        "wide INTEGER NOT NULL, docs BLOB NOT NULL, counts BLOB NOT NULL, PRIMARY KEY (key, segment)) WITHOUT ROWID"
    ),
    "segments": "CREATE TABLE segments (id INTEGER PRIMARY KEY, stats BLOB NOT NULL)",
    "skipped": "CREATE TABLE skipped (path TEXT PRIMARY KEY, reason TEXT NOT NULL)",
    "profiles": "CREATE TABLE profiles (id INTEGER PRIMARY KEY, profile BLOB NOT NULL)",
    "ngrams": (
        "CREATE TABLE ngrams (key INTEGER PRIMARY KEY, df INTEGER NOT NULL, context INTEGER NOT NULL) WITHOUT ROWID"
    ),
    "contexts": (
        "CREATE TABLE contexts (key INTEGER PRIMARY KEY, total INTEGER NOT NULL, kinds INTEGER NOT NULL) WITHOUT ROWID"
    ),
}


class _SQLiteBackend(_Backend):
    """Everything in the index file itself."""

    def __init__(self, connection: sqlite3.Connection, path: Path) -> None:
        self.db = connection
        self.path = path

    def read_meta(self, key: str) -> Any:
        row = self.db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else json.loads(row[0])

    def write_meta(self, key: str, value: Any) -> None:
        self.db.execute("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", (key, json.dumps(value, sort_keys=True)))

    def allocate(self, counter: str, n: int) -> int:
        first = int(self.read_meta(f"next_{counter}") or 0)
        self.write_meta(f"next_{counter}", first + n)
        return first

    def lookup(self, paths: Sequence[str]) -> dict[str, tuple[int, str, int]]:
        found = {}
        for chunk in _chunks(list(paths)):
            marks = ",".join("?" * len(chunk))
            for path, doc, sha, segment in self.db.execute(
                f"SELECT path, id, sha256, segment FROM docs WHERE path IN ({marks})", tuple(chunk)
            ):
                found[path] = (doc, sha, segment)
        return found

    def digest_rows(self) -> list[tuple[str, str, str]]:
        return list(self.db.execute("SELECT path, language, text_sha256 FROM docs"))

    def count_docs(self) -> int:
        return int(self.db.execute("SELECT COUNT(*) FROM docs").fetchone()[0])

    def paths(self, ids: Sequence[int]) -> dict[int, str]:
        found = {}
        for chunk in _chunks(list(ids)):
            marks = ",".join("?" * len(chunk))
            found.update(self.db.execute(f"SELECT id, path FROM docs WHERE id IN ({marks})", tuple(chunk)))
        return found

    def records(self, ids: Sequence[int]) -> dict[int, tuple[str, bytes]]:
        found = {}
        for chunk in _chunks(list(ids)):
            marks = ",".join("?" * len(chunk))
            for doc, path, record in self.db.execute(
                f"SELECT id, path, record FROM docs WHERE id IN ({marks})", tuple(chunk)
            ):
                found[doc] = (path, record)
        return found

    def write_segment(self, segment: int, docs: list[tuple], postings: list[tuple[int, _Posting]], stats: bytes) -> None:
        self.db.executemany(
            "INSERT INTO docs(id, path, sha256, text_sha256, language, segment, record) VALUES (?, ?, ?, ?, ?, ?, ?)",
            [(doc, path, sha, text_sha, language, segment, record) for doc, path, sha, text_sha, language, record in docs],
        )
        self.db.executemany(
            "INSERT INTO postings(key, segment, n, wide, docs, counts) VALUES (?, ?, ?, ?, ?, ?)",
            [(key, segment, p.size, p.flags, p.docs, p.counts) for key, p in postings],
        )
        self.db.execute("INSERT INTO segments(id, stats) VALUES (?, ?)", (segment, stats))

    def postings(self, keys: Sequence[int], *, counts: bool = True) -> dict[int, list[_Posting]]:
        found: dict[int, list[_Posting]] = {}
        # Without the counts the query stops at the ids (the last column is not read).
        columns = "key, segment, n, wide, docs, counts" if counts else "key, segment, n, wide, docs, NULL"
        for chunk in _chunks(list(keys)):
            marks = ",".join("?" * len(chunk))
            for key, segment, n, flags, docs, count_bytes in self.db.execute(
                f"SELECT {columns} FROM postings WHERE key IN ({marks})", tuple(chunk)
            ):
                if not isinstance(flags, int) or flags & ~(_WIDE_COUNTS | _BITMAP_IDS) or not isinstance(n, int) or n < 0:
                    raise CorpusIndexError(f"{self.path}: corrupt postings entry of key {key}")
                found.setdefault(key, []).append(_Posting(token=segment, docs=docs, counts=count_bytes,
                                                          wide=bool(flags & _WIDE_COUNTS),
                                                          bitmap=bool(flags & _BITMAP_IDS), size=n))
        return found

    def postings_within(self, keys: Sequence[int], cap: int) -> dict[int, tuple[int, list[_Posting] | None]]:
        found: dict[int, tuple[int, list[_Posting] | None]] = {}
        for chunk in _chunks(list(keys)):
            marks = ",".join("?" * len(chunk))
            rows: dict[int, list[tuple]] = {}
            # an entry with more ids than the cap is never read; one below it is read even when
            # the key's other entries take it past the cap (then dropped)
            for row in self.db.execute(
                f"SELECT key, segment, n, wide, CASE WHEN n <= ? THEN docs END FROM postings WHERE key IN ({marks})",
                (cap, *chunk),
            ):
                rows.setdefault(row[0], []).append(row)
            for key, entries in rows.items():
                if any(not isinstance(n, int) or n < 0 for _, _, n, _, _ in entries):
                    raise CorpusIndexError(f"{self.path}: corrupt postings entry of key {key}")
                df = sum(n for _, _, n, _, _ in entries)
                if df > cap:
                    found[key] = (df, None)
                    continue
                postings = []
                for _, segment, n, flags, docs in entries:
                    if not isinstance(flags, int) or flags & ~(_WIDE_COUNTS | _BITMAP_IDS) or docs is None:
                        raise CorpusIndexError(f"{self.path}: corrupt postings entry of key {key}")
                    postings.append(_Posting(token=segment, docs=docs, counts=None, wide=bool(flags & _WIDE_COUNTS),
                                             bitmap=bool(flags & _BITMAP_IDS), size=int(n)))
                found[key] = (df, postings)
        return found

    def keys_to_merge(self) -> list[int]:
        return [key for (key,) in self.db.execute("SELECT key FROM postings GROUP BY key HAVING COUNT(*) > 1")]

    def merge_postings(self, merged: Sequence[tuple[int, Sequence[_Posting], _Posting]]) -> None:
        # The merged entry takes the first segment's place: later segments get higher ids, so
        # their entries never collide with it.
        self.db.executemany("DELETE FROM postings WHERE key = ?", [(key,) for key, _, _ in merged])
        self.db.executemany(
            "INSERT INTO postings(key, segment, n, wide, docs, counts) VALUES (?, ?, ?, ?, ?, ?)",
            [(key, min(int(e.token) for e in entries), p.size, p.flags, p.docs, p.counts)
             for key, entries, p in merged],
        )

    def frequencies(self, keys: Sequence[int]) -> dict[int, int]:
        found: dict[int, int] = {}
        for chunk in _chunks(list(keys)):
            marks = ",".join("?" * len(chunk))
            for key, total in self.db.execute(
                f"SELECT key, SUM(n) FROM postings WHERE key IN ({marks}) GROUP BY key", tuple(chunk)
            ):
                found[key] = int(total)
        return found

    def replace_posting(self, key: int, old: _Posting, new: _Posting | None) -> None:
        if new is None or not new.size:
            self.db.execute("DELETE FROM postings WHERE key = ? AND segment = ?", (key, old.token))
        else:
            self.db.execute("UPDATE postings SET n = ?, wide = ?, docs = ?, counts = ? WHERE key = ? AND segment = ?",
                            (new.size, new.flags, new.docs, new.counts, key, old.token))

    def segment_stats(self) -> list[tuple[int, bytes]]:
        return list(self.db.execute("SELECT id, stats FROM segments"))

    def replace_segment_stats(self, segment: int, blob: bytes) -> None:
        self.db.execute("UPDATE segments SET stats = ? WHERE id = ?", (blob, segment))

    def delete_docs(self, rows: Sequence[tuple[int, str]]) -> None:
        self.db.executemany("DELETE FROM docs WHERE id = ?", [(doc,) for doc, _ in rows])
        self.db.executemany("DELETE FROM profiles WHERE id = ?", [(doc,) for doc, _ in rows])

    def write_profiles(self, rows: Sequence[tuple[int, bytes]]) -> None:
        self.db.executemany("INSERT INTO profiles(id, profile) VALUES (?, ?)", list(rows))

    def profiles(self, ids: Sequence[int]) -> dict[int, bytes]:
        found = {}
        for chunk in _chunks(list(ids)):
            marks = ",".join("?" * len(chunk))
            found.update(self.db.execute(f"SELECT id, profile FROM profiles WHERE id IN ({marks})", tuple(chunk)))
        return found

    def apply_grams(self, keys: np.ndarray, contexts: np.ndarray, deltas: np.ndarray) -> None:
        db = self.db
        db.execute("CREATE TEMP TABLE IF NOT EXISTS gram_delta "
                   "(key INTEGER PRIMARY KEY, delta INTEGER NOT NULL, context INTEGER NOT NULL) WITHOUT ROWID")
        db.execute("DELETE FROM temp.gram_delta")
        db.executemany("INSERT INTO temp.gram_delta(key, delta, context) VALUES (?, ?, ?)",
                       zip(keys.tolist(), deltas.tolist(), contexts.tolist()))
        # A context gains a kind when a new n-gram appears and loses one when an n-gram's last
        # file goes: decided against the table before it changes.
        db.execute(
            "INSERT INTO contexts(key, total, kinds) "
            "SELECT d.context, SUM(d.delta), SUM(CASE WHEN n.df IS NULL AND d.delta > 0 THEN 1 "
            "WHEN n.df IS NOT NULL AND n.df + d.delta <= 0 THEN -1 ELSE 0 END) "
            "FROM temp.gram_delta d LEFT JOIN ngrams n ON n.key = d.key WHERE true GROUP BY d.context "
            "ON CONFLICT(key) DO UPDATE SET total = total + excluded.total, kinds = kinds + excluded.kinds"
        )
        db.execute("INSERT INTO ngrams(key, df, context) SELECT key, delta, context FROM temp.gram_delta WHERE true "
                   "ON CONFLICT(key) DO UPDATE SET df = df + excluded.df")
        if (deltas < 0).any():
            db.execute("DELETE FROM ngrams WHERE df <= 0 AND key IN (SELECT key FROM temp.gram_delta WHERE delta < 0)")
            db.execute("DELETE FROM contexts WHERE total <= 0 AND key IN "
                       "(SELECT context FROM temp.gram_delta WHERE delta < 0)")
        db.execute("DELETE FROM temp.gram_delta")

    def gram_rows(self, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        found: list[tuple[int, int]] = []
        for chunk in _chunks(np.asarray(keys, dtype=np.int64).tolist()):
            marks = ",".join("?" * len(chunk))
            found.extend(self.db.execute(f"SELECT key, df FROM ngrams WHERE key IN ({marks})", tuple(chunk)))
        rows = np.array(sorted(found), dtype=np.int64).reshape(-1, 2)
        return rows[:, 0], rows[:, 1]

    def context_rows(self, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        found: list[tuple[int, int, int]] = []
        for chunk in _chunks(np.asarray(keys, dtype=np.int64).tolist()):
            marks = ",".join("?" * len(chunk))
            found.extend(self.db.execute(f"SELECT key, total, kinds FROM contexts WHERE key IN ({marks})",
                                         tuple(chunk)))
        rows = np.array(sorted(found), dtype=np.int64).reshape(-1, 3)
        return rows[:, 0], rows[:, 1], rows[:, 2]

    def count_grams(self) -> int:
        return int(self.db.execute("SELECT COUNT(*) FROM ngrams").fetchone()[0])

    def set_skipped(self, items: Mapping[str, str]) -> None:
        self.db.executemany("INSERT OR REPLACE INTO skipped(path, reason) VALUES (?, ?)", list(items.items()))

    def remove_skipped(self, paths: Iterable[str]) -> None:
        self.db.executemany("DELETE FROM skipped WHERE path = ?", [(p,) for p in paths])

    def skipped(self) -> list[tuple[str, str]]:
        return list(self.db.execute("SELECT path, reason FROM skipped"))

    def begin(self) -> None:
        self.db.execute("BEGIN IMMEDIATE")

    def commit(self) -> None:
        if self.db.in_transaction:
            self.db.execute("COMMIT")

    def rollback(self) -> None:
        if self.db.in_transaction:
            self.db.execute("ROLLBACK")

    def close(self) -> None:
        self.db.close()

    def writer_lock(self) -> contextlib.AbstractContextManager[None]:
        return _file_writer_lock(self.path)


def _connect(path: Path, *, create: bool, writable: bool) -> sqlite3.Connection:
    mode = "rwc" if create else ("rw" if writable else "ro")
    uri = f"file:{quote(str(path.resolve()))}?mode={mode}"
    try:
        connection = sqlite3.connect(uri, uri=True, isolation_level=None, timeout=30.0)
        # An index may come from someone else: never run SQL stored in its schema, and check
        # page integrity while reading.
        connection.execute("PRAGMA trusted_schema = OFF")
        connection.execute("PRAGMA cell_size_check = ON")
        if writable or create:
            connection.execute("PRAGMA synchronous = NORMAL")
            connection.execute("PRAGMA cache_size = -65536")
    except sqlite3.Error as exc:
        raise CorpusIndexError(f"{path}: cannot open the corpus index ({exc})") from exc
    return connection


def _check_schema(connection: sqlite3.Connection, path: Path, tables: set[str]) -> None:
    try:
        rows = list(connection.execute("SELECT type, name, sql FROM sqlite_master"))
    except sqlite3.DatabaseError as exc:
        raise CorpusIndexError(f"{path}: not a corpus index ({exc})") from exc
    found = {name for kind, name, _ in rows if kind == "table"}
    changed = sorted(name for kind, name, sql in rows if kind == "table" and name in _SQLITE_TABLES
                     and sql != _SQLITE_TABLES[name])
    rows = [(kind, name) for kind, name, _ in rows]
    unexpected = [
        f"{kind} {name}" for kind, name in rows
        if not (kind == "table" and name in _SQLITE_TABLES) and not (kind == "index" and name.startswith("sqlite_autoindex_"))
    ]
    if "meta" not in found:
        raise CorpusIndexError(f"{path}: not a corpus index (an SQLite file without the 'meta' table)")
    if unexpected:
        raise CorpusIndexError(f"{path}: not a corpus index (unexpected schema objects: {', '.join(unexpected)})")
    if not tables <= found:
        raise CorpusIndexError(f"{path}: corpus index is missing tables {', '.join(sorted(tables - found))}")
    if changed:
        raise CorpusIndexError(f"{path}: corpus index tables {', '.join(changed)} have another layout; rebuild it")


class _BulkWrites:
    """Faster writes to an SQLite index that holds no references yet (a ``build``), undone by
    :meth:`close`.

    The file goes to write-ahead logging with ``synchronous = OFF``: each flush of ``add`` is
    still one atomic transaction (a crashed build leaves a consistent, partial index), but no
    page is copied into a rollback journal first and no commit waits for the disk. ``close``
    checkpoints the log into the file, returns to the rollback journal (one file, which a
    read-only open needs) and to ``synchronous = NORMAL``, so the next commit syncs everything
    (SQLite documents both pragmas: https://www.sqlite.org/pragma.html). Redis storage is left as
    it is.
    """

    def __init__(self, backend: _Backend) -> None:
        self.db = backend.db if isinstance(backend, _SQLiteBackend) else None
        if self.db is not None:
            self.db.execute("PRAGMA journal_mode = WAL")
            self.db.execute("PRAGMA synchronous = OFF")

    def close(self) -> None:
        if self.db is None:
            return
        db, self.db = self.db, None
        if db.in_transaction:
            db.execute("ROLLBACK")
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        db.execute("PRAGMA journal_mode = DELETE")
        db.execute("PRAGMA synchronous = NORMAL")
