"""An open corpus index: its storage, its meta, the caches its queries keep, the writer lock.

:class:`_OpenIndex` is what every part of :class:`~mleaudit.audit.similarity.index.handle.CorpusIndex`
shares: the writes (:mod:`~mleaudit.audit.similarity.index.writes`,
:mod:`~mleaudit.audit.similarity.index.compaction`, :mod:`~mleaudit.audit.similarity.index.adding`)
and the queries (:mod:`~mleaudit.audit.similarity.index.retrieval`,
:mod:`~mleaudit.audit.similarity.index.comparing`) are classes built on it, and
:class:`~mleaudit.audit.similarity.index.detector_query._DetectorQuery` reads its caches. It also
answers what needs no more than the meta and a few rows: :meth:`_OpenIndex.info`,
:meth:`_OpenIndex.check_usable`, :meth:`_OpenIndex.skipped`.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
from collections import OrderedDict
from pathlib import Path
from typing import Any, Iterator

import numpy as np

from mleaudit.audit.model import Skipped
from mleaudit.audit.similarity import SimilarityOptions
from mleaudit.audit.similarity.corpus import reference_sort_key
from mleaudit.audit.similarity.detect import Profile
from mleaudit.audit.similarity.index.blobs import _decode_profile, _decode_stats
from mleaudit.audit.similarity.index.format import CORPUS_INDEX_VERSION, CorpusIndexError
from mleaudit.audit.similarity.index.postings import _Posting
from mleaudit.audit.similarity.index.sqlite_backend import _SQLiteBackend
from mleaudit.audit.similarity.index.storage import _Backend, _describe_storage, _guarded
from mleaudit.audit.similarity.index.summaries import CorpusIndexInfo


class _OpenIndex:
    """The state of an open corpus index and what reads it without a query (see the module
    docstring); :class:`~mleaudit.audit.similarity.index.handle.CorpusIndex` is the class to use."""

    def __init__(self, path: Path, local: sqlite3.Connection, backend: _Backend, *, writable: bool) -> None:
        self.path = path
        self._local = local
        self._backend = backend
        self._writable = writable
        self._meta: dict[str, Any] = backend.read_meta("index") or {}
        self._boilerplate_hashes = np.array(sorted(backend.read_meta("boilerplate_hashes") or []), dtype=np.int64)
        self._boilerplate_set = frozenset(self._boilerplate_hashes.tolist())
        opts = self._meta.get("options", {})
        self._k = int(opts.get("kgram_length", 0))
        self._w = int(opts.get("kgrams_in_window", 0))
        self._languages: list[str] = list(self._meta.get("languages", []))
        self._version = int(self._meta.get("format_version", CORPUS_INDEX_VERSION))
        self._boilerplate: list[Profile] | None = None
        # Token-only profiles of recently read references (their n-gram sets are cached on them),
        # reused by later queries: forks of popular kernels come back in query after query.
        self._token_profiles: OrderedDict[int, Profile] = OrderedDict()
        self._sample_holders: OrderedDict[int, tuple[int, tuple[_Posting, ...] | None]] = OrderedDict()
        self._families: OrderedDict[int, np.ndarray] = OrderedDict()
        self._family_ids = 0
        self._sample_holder_bytes = 0
        self._write_depth = 0
        #: Per Python agent unit of the last :meth:`compare` (``path``, ``start_line`` of a unit
        #: read from a log): references the seed bound could not exclude (``bounded``), those
        #: checked with the window bound (``windowed``) and kept by it (``window``), those checked
        #: with the tile bound (``checked``), those scored exactly (``scored``), and whether every
        #: reference that could reach the threshold was checked (``exhaustive``). On an index
        #: without tile seeds (``seed_bound`` false) only ``path``, ``start_line`` and ``exhaustive``
        #: (false: the search is a heuristic there).
        self.last_bound_scored: list[dict[str, Any]] = []

    # -- context management ----------------------------------------------------------------------

    def __enter__(self) -> _OpenIndex:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        """Close the index file (and the Redis connection)."""
        if self._backend is not None:
            self._backend.close()
            if self._local is not getattr(self._backend, "db", None):
                self._local.close()
            self._backend = None  # type: ignore[assignment]

    # -- properties ------------------------------------------------------------------------------

    @property
    def options(self) -> SimilarityOptions:
        """Options with the k-gram length and window the fingerprints were made with."""
        return SimilarityOptions(kgram_length=self._k, kgrams_in_window=self._w)

    @property
    def storage(self) -> str:
        return _describe_storage(self._local_meta("storage"))

    def _local_meta(self, key: str) -> Any:
        row = self._local.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else json.loads(row[0])

    def _open_backend(self) -> _Backend:
        if self._backend is None:
            raise CorpusIndexError(f"{self.path}: the corpus index is closed")
        return self._backend

    # -- writing -------------------------------------------------------------------------------------

    @contextlib.contextmanager
    def _writer(self) -> Iterator[None]:
        """Hold the index's writer lock (re-entrant) and start from the meta as it is stored now.

        Everything a writer decides from what is indexed (the roots that give files their keys,
        which files are new, the postings entries per key, the format version) is read after
        the lock is taken, so a writer that finished meanwhile is never overwritten.
        """
        if self._write_depth:
            self._write_depth += 1
            try:
                yield
            finally:
                self._write_depth -= 1
            return
        backend = self._open_backend()
        with backend.writer_lock():
            self._write_depth = 1
            try:
                self._reload_meta()
                yield
            finally:
                self._write_depth = 0

    def _reload_meta(self) -> None:
        """Read the index meta again (inside the writer lock or a write transaction)."""
        meta = self._backend.read_meta("index")
        if not isinstance(meta, dict):
            raise CorpusIndexError(f"{self.path}: the index meta is missing")
        opts = meta.get("options", {})
        if (int(opts.get("kgram_length", 0)), int(opts.get("kgrams_in_window", 0)),
                list(meta.get("languages", []))) != (self._k, self._w, self._languages):
            raise CorpusIndexError(f"{self.path}: the index was rebuilt with other options while open; open it again")
        self._meta = meta
        self._version = int(meta.get("format_version", CORPUS_INDEX_VERSION))

    @_guarded
    def info(self) -> CorpusIndexInfo:
        """Counts, options and provenance of the index."""
        backend = self._open_backend()
        size = self.path.stat().st_size if isinstance(backend, _SQLiteBackend) else None
        return CorpusIndexInfo(
            path=str(self.path),
            format_version=int(self._local_meta("format_version")),
            storage=self.storage,
            options={"kgram_length": self._k, "kgrams_in_window": self._w},
            fingerprint_scheme=dict(self._meta.get("fingerprint_scheme", {})),
            references=backend.count_docs(),
            skipped=len(backend.skipped()),
            segments=len(backend.segment_stats()),
            languages=tuple(sorted({row[1] for row in backend.digest_rows()})),
            roots=tuple(self._meta.get("roots", [])),
            boilerplate=tuple(b["path"] for b in self._meta.get("boilerplate", [])),
            corpus_digest=str(self._meta.get("corpus_digest", "")),
            created_at=str(self._meta.get("created_at", "")),
            updated_at=str(self._meta.get("updated_at", "")),
            tool_version=str(self._meta.get("tool_version", "")),
            size_bytes=size,
            ngrams=backend.count_grams(),
            posting_entries=self._posting_entries(),
        )

    @_guarded
    def check_usable(self) -> None:
        """Refuse an index that cannot answer a query: one holding no reference kernel, or one
        whose postings, segment statistics or (with Python kernels) detector profiles are empty,
        as a partial copy or a damaged file leaves them. Such an index would compare nothing and
        let an audit pass as clean. Cheap (one row read per table), not a full integrity check.

        Raises
        ------
        CorpusIndexError
            Naming the index file and what is missing.
        """
        backend = self._open_backend()
        if backend.count_docs() == 0:
            raise CorpusIndexError(f"{self.path}: holds no reference kernel (nothing to compare the code with)")
        if not backend.segment_stats():
            raise CorpusIndexError(f"{self.path}: has references but no segment statistics (a damaged index; rebuild it)")
        if isinstance(backend, _SQLiteBackend):
            def empty(query: str) -> bool:
                return backend.db.execute(query).fetchone() is None

            if empty("SELECT 1 FROM postings LIMIT 1"):
                raise CorpusIndexError(f"{self.path}: has references but no postings (a damaged index; rebuild it)")
            if (not empty("SELECT 1 FROM docs WHERE language = 'python' LIMIT 1")
                    and empty("SELECT 1 FROM profiles LIMIT 1")):
                raise CorpusIndexError(f"{self.path}: has Python references but no detector profiles "
                                       "(a damaged index; rebuild it)")

    @_guarded
    def skipped(self) -> tuple[Skipped, ...]:
        """Files left out of the index, with the reason, in corpus order."""
        rows = self._open_backend().skipped()
        return tuple(Skipped(path=p, reason=r) for p, r in sorted(rows, key=lambda row: reference_sort_key(row[0])))


    def _clear_query_caches(self) -> None:
        self._token_profiles.clear()
        self._sample_holders.clear()
        self._families.clear()
        self._family_ids = 0
        self._sample_holder_bytes = 0

    def _posting_entries(self) -> int:
        """The most postings entries one key may have (the number of segments for an index
        that does not record it)."""
        recorded = self._meta.get("posting_entries")
        if isinstance(recorded, int) and not isinstance(recorded, bool) and recorded >= 0:
            return recorded
        return len(self._open_backend().segment_stats())

    def _boilerplate_profiles(self) -> list[Profile]:
        """Detector profiles of the Python boilerplate files (read once)."""
        if self._boilerplate is None:
            stored = self._open_backend().read_meta("boilerplate_profiles") or []
            profiles = []
            for item in stored:
                try:
                    blob = bytes.fromhex(str(item["profile"]))
                    path = str(item["path"])
                except (KeyError, TypeError, ValueError) as exc:
                    raise CorpusIndexError(f"{self.path}: corrupt boilerplate profile ({exc})") from exc
                profiles.append(_decode_profile(blob, path, f"{self.path}: boilerplate {path}")[0])
            self._boilerplate = profiles
        return self._boilerplate

    def _check_options(self, options: SimilarityOptions | None) -> SimilarityOptions:
        if options is None:
            return self.options
        if (options.kgram_length, options.kgrams_in_window) != (self._k, self._w):
            raise CorpusIndexError(
                f"{self.path}: index built with kgram_length={self._k}, kgrams_in_window={self._w}; the options ask "
                f"for kgram_length={options.kgram_length}, kgrams_in_window={options.kgrams_in_window} "
                f"(rebuild the index with those options)"
            )
        return options

    def _stats(self) -> tuple[np.ndarray, int, np.ndarray]:
        """Countable fingerprints per reference id (total minus boilerplate occurrences; -1 for
        ids not in use), how many references there are, and the size of each reference's
        detector sample (0 for references the detector does not read)."""
        ids_parts, countable_parts, sample_parts = [], [], []
        for segment, blob in self._open_backend().segment_stats():
            ids, countable, sampled = _decode_stats(blob, f"{self.path}: segment {segment}")
            ids_parts.append(ids)
            countable_parts.append(countable)
            sample_parts.append(sampled)
        if not ids_parts:
            return np.zeros(0, dtype=np.int64), 0, np.zeros(0, dtype=np.int64)
        ids = np.concatenate(ids_parts).astype(np.int64)
        size = int(ids.max()) + 1 if ids.size else 0
        table = np.full(size, -1, dtype=np.int64)
        table[ids] = np.concatenate(countable_parts)
        samples = np.zeros(size, dtype=np.int64)
        samples[ids] = np.concatenate(sample_parts)
        return table, int(ids.size), samples
