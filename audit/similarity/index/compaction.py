"""Compaction: the postings entries of each key merged into one (``mleaudit corpus compact``).

A query reads every postings entry of each agent hash: one per segment, so about
31 database rows per hash on a corpus of 250,000 notebooks. :meth:`CorpusIndex.compact`
merges the entries of each key into one, which ``add`` does by
itself when a key may have more than ``MAX_POSTING_ENTRIES`` entries (so after any build of
more than a few segments). A merged entry keeps its ids as a *bitmap* over their range when that
is smaller than the id list: a hash held by a large share of the corpus (structural
fingerprints often are) then costs one bit per reference to store and to count rather than four
bytes and a scattered increment. Bitmap entries are what format version 3 adds; a version-2
index is read as it is and becomes version 3 when compacted.
"""

from __future__ import annotations

import logging
import time
from typing import Callable

from mleaudit.audit.similarity.index.format import CORPUS_INDEX_VERSION, CorpusIndexError
from mleaudit.audit.similarity.index.postings import _merge_postings
from mleaudit.audit.similarity.index.sqlite_backend import _SQLiteBackend
from mleaudit.audit.similarity.index.state import _OpenIndex
from mleaudit.audit.similarity.index.storage import _chunks, _guarded
from mleaudit.audit.similarity.index.summaries import CompactSummary

logger = logging.getLogger(__name__)

#: Posting keys merged per transaction by :meth:`CorpusIndex.compact`.
_COMPACT_KEYS = 2000


class _Compaction(_OpenIndex):
    """:meth:`compact`, and the format version it records."""

    @_guarded
    def compact(self, *, progress: Callable[[int, int], None] | None = None) -> CompactSummary:
        """Merge the postings entries of each key into one (``mleaudit corpus compact``).

        ``add`` writes one entry per key and segment of :data:`SEGMENT_DOCS` references, so on a
        corpus of 250,000 notebooks an agent hash has about 31 entries and a query reads that
        many rows per hash. Merged, it reads one; the merged entry keeps its ids as a bitmap when
        that is smaller (common hashes, held by a large share of the corpus), which is also
        faster to count. Queries give the same results before and after. ``add`` compacts by
        itself when a key may have more than :data:`MAX_POSTING_ENTRIES` entries (after a
        build, and after every few adds).

        Each batch of keys is merged in its own transaction, so an interrupted compaction leaves
        a consistent index (partly merged). A version-2 index becomes version 3 (which older
        versions of mleaudit do not read).

        Parameters
        ----------
        progress : callable, optional
            Called as ``progress(done, total)`` with the keys merged so far.

        Returns
        -------
        CompactSummary

        Raises
        ------
        CorpusIndexError
            If the index was opened read-only, an entry is corrupt, or storage fails. With
            Redis storage, no other machine may add to the index meanwhile.
        """
        self._open_backend()
        if not self._writable:
            raise CorpusIndexError(f"{self.path}: opened read-only; open it with writable=True to compact it")
        with self._writer():
            return self._compact(progress)

    def _compact(self, progress: Callable[[int, int], None] | None = None) -> CompactSummary:
        backend = self._backend
        started = time.perf_counter()
        # the version first: a bitmap entry must never sit in a file that says version 2
        self._set_version(CORPUS_INDEX_VERSION)
        keys = backend.keys_to_merge()
        merged_keys = entries = bitmaps = 0
        for done, chunk in enumerate(_chunks(keys, _COMPACT_KEYS)):
            backend.begin()
            try:
                fetched = backend.postings(chunk)
                merged = []
                for key in chunk:
                    found = fetched.get(key, [])
                    if len(found) > 1:
                        merged.append((key, found, _merge_postings(found, f"{self.path}: postings of {key}")))
                backend.merge_postings(merged)
                backend.commit()
            except BaseException:
                backend.rollback()
                raise
            merged_keys += len(merged)
            entries += sum(len(found) for _, found, _ in merged)
            bitmaps += sum(posting.bitmap for _, _, posting in merged)
            if progress is not None:
                progress(min((done + 1) * _COMPACT_KEYS, len(keys)), len(keys))
        backend.begin()
        try:
            self._reload_meta()
            self._meta["posting_entries"] = 1 if self._posting_entries() else 0
            backend.write_meta("index", self._meta)
            backend.commit()
        except BaseException:
            backend.rollback()
            raise
        summary = CompactSummary(keys=merged_keys, entries=entries, bitmaps=bitmaps,
                                 seconds=time.perf_counter() - started)
        logger.info("%s: merged the postings of %d keys (%d entries, %d bitmaps) in %.1f s", self.path,
                    summary.keys, summary.entries, summary.bitmaps, summary.seconds)
        return summary

    def _set_version(self, version: int) -> None:
        """Record a newer format version: in the index data first, then in the local file
        (which older readers check)."""
        if self._version >= version:
            return
        backend = self._backend
        backend.begin()
        try:
            self._reload_meta()
            self._meta["format_version"] = version
            backend.write_meta("index", self._meta)
            if isinstance(backend, _SQLiteBackend):
                backend.write_meta("format_version", version)
            backend.commit()
        except BaseException:
            backend.rollback()
            raise
        if not isinstance(backend, _SQLiteBackend):
            _SQLiteBackend(self._local, self.path).write_meta("format_version", version)
        self._version = version
