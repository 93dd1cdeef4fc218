"""Adding, removing and syncing references: ``mleaudit corpus build``, ``add``, ``remove``, ``sync``.

Files are read and fingerprinted in worker processes
(:mod:`~mleaudit.audit.similarity.index.fingerprinting`), then written in segments
(:mod:`~mleaudit.audit.similarity.index.writes`). Re-adding an unchanged file is a no-op.

Writers. ``add``, ``compact`` and the ``add`` of ``build`` hold the index's *writer lock* from
before they read what is indexed until their last write: a lock file ``<index>.lock`` beside an
SQLite index (``flock``, released by the operating system if the process dies, and removed by
the writer when it is done), a lock key
``<prefix>:writer`` in Redis for a shared index (a lease renewed while the writer works, so a
crashed machine's lock expires). Once the lock is held the index meta (roots, postings entries,
format version) is read again, and each write transaction (SQLite ``BEGIN IMMEDIATE``) reads it
again before changing it, so two ``corpus add`` calls started at once both keep their roots and
files, and a file both add is stored once. Readers take no lock. An interrupted ``add`` (Ctrl-C)
keeps the segments it committed; until the next ``add`` completes, the meta's corpus digest is
empty (unknown) rather than stale.

Build speed. Worker processes index chunks of :data:`_CHUNK_FILES` files and sum the chunk's
n-grams before handing them over, so the parent merges one small table per chunk (and writes
the sum of many chunks with one statement per table); a segment's postings are cut from one
sorted array. The first ``add`` into an empty SQLite index (a build) writes through SQLite's
write-ahead log with ``synchronous = OFF`` and goes back to a rollback journal and
``synchronous = NORMAL`` at the end
(:class:`~mleaudit.audit.similarity.index.sqlite_backend._BulkWrites`); later adds keep the rollback journal
throughout. The stored layout does not depend on any of this.
"""

from __future__ import annotations

import dataclasses
import logging
import multiprocessing
import os
import time
from pathlib import Path
from typing import Callable, Iterator, Sequence

import numpy as np

from mleaudit.audit.model import Skipped
from mleaudit.audit.similarity.measuring import ignore_sigint
from mleaudit.audit.similarity.corpus import MAX_REFERENCE_BYTES, reference_sort_key
from mleaudit.audit.similarity.index.compaction import _Compaction
from mleaudit.audit.similarity.index.fingerprinting import _index_chunk, _Result
from mleaudit.audit.similarity.index.format import CorpusIndexError
from mleaudit.audit.similarity.index.plan import _keys_for, _plan_files
from mleaudit.audit.similarity.index.sqlite_backend import _BulkWrites
from mleaudit.audit.similarity.index.storage import _guarded
from mleaudit.audit.similarity.index.summaries import AddSummary
from mleaudit.audit.similarity.index.writes import _SegmentWrites

logger = logging.getLogger(__name__)

#: References per segment written by one flush of ``add``.
SEGMENT_DOCS = 8192
#: ``add`` merges the postings (:meth:`CorpusIndex.compact`) when a key may have more entries
#: than this: a query reads every entry of each agent hash, one database row each.
MAX_POSTING_ENTRIES = 4
#: n-gram rows collected from added files before they are written (about 24 bytes each).
_GRAM_BUFFER = 2_000_000
#: Files a worker indexes per task (their n-grams are summed before they reach the parent).
_CHUNK_FILES = 32


class _Adding(_SegmentWrites, _Compaction):
    """:meth:`add`, :meth:`remove` and :meth:`sync`: the writes that change which references are
    indexed (``add`` ends with a compaction when a key may have too many postings entries)."""

    @_guarded
    def add(
        self,
        paths: Sequence[str | Path],
        *,
        root: str | Path | None = None,
        jobs: int = 1,
        max_bytes: int = MAX_REFERENCE_BYTES,
        progress: Callable[[int, int], None] | None = None,
    ) -> AddSummary:
        """Index more kernels: new files are added, changed files replaced, unchanged ones left alone.

        Each flush writes a segment (one more postings entry per key); when a key may then have
        more than :data:`MAX_POSTING_ENTRIES` entries, the call ends with :meth:`compact` (after
        a build of more than a few segments, and after every few later adds).

        Parameters
        ----------
        paths : sequence of str or Path
            Kernel files (``.py``, ``.ipynb``) and folders (searched recursively, as
            :func:`mleaudit.audit.similarity.load_reference_corpus` does).
        root : str or Path, optional
            Corpus root the keys are relative to. By default: the recorded root (from ``build``
            or an earlier ``add``) that contains the path, else the folder itself, or a file's
            parent folder.
        jobs : int, default 1
            Worker processes for reading and fingerprinting.
        max_bytes : int, optional
            Larger files are skipped with a reason.
        progress : callable, optional
            Called as ``progress(done, total)`` every few hundred files.

        Returns
        -------
        AddSummary

        Raises
        ------
        CorpusIndexError
            If the index was opened read-only, a path does not exist, or storage fails.
        """
        self._open_backend()
        if not self._writable:
            raise CorpusIndexError(f"{self.path}: opened read-only; open it with writable=True to add files")
        with self._writer():
            return self._add(paths, root=root, jobs=jobs, max_bytes=max_bytes, progress=progress)

    def _add(self, paths: Sequence[str | Path], *, root: str | Path | None, jobs: int, max_bytes: int,
             progress: Callable[[int, int], None] | None) -> AddSummary:
        backend = self._backend
        started = time.perf_counter()
        tasks, skipped, duplicates, new_roots = _plan_files(paths, root, self._meta.get("roots", []))
        # what queries cached describes the corpus before this call
        self._clear_query_caches()
        known = backend.lookup([key for _, key in tasks])
        work = [(str(file), key, known.get(key, (0, "", 0))[1]) for file, key in tasks]
        counts = {"added": 0, "replaced": 0, "unchanged": 0, "removed": 0}
        pending: list[tuple] = []
        gone: list[tuple[int, str, int]] = []  # (id, path, segment) of entries to remove
        newly_skipped: dict[str, str] = {s.path: s.reason for s in skipped}

        # n-gram rows of added files (summed per chunk by the workers) wait here; once the
        # buffer is full they are summed and written inside the transaction that the next
        # flush commits, so a committed segment always has its n-grams in the table.
        grams: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        buffered = [0]
        writing = [False]

        def start() -> None:
            if not writing[0]:
                backend.begin()
                writing[0] = True

        def write_grams() -> None:
            if grams:
                start()
                self._apply_grams(grams)
                grams.clear()
                buffered[0] = 0

        def flush() -> None:
            if not pending and not gone and not newly_skipped and not grams and not writing[0]:
                return
            start()
            began = time.perf_counter()
            try:
                # the meta as stored, inside the transaction that changes it
                self._reload_meta()
                self._remove_docs(gone)
                write_grams()
                if pending:
                    self._write_segment(pending)
                backend.remove_skipped([result[1] for result in pending])
                backend.set_skipped(newly_skipped)
                # the digest is recomputed when the add completes; until then it is unknown
                self._meta["corpus_digest"] = ""
                backend.write_meta("index", self._meta)
                backend.commit()
            except BaseException:
                backend.rollback()
                raise
            finally:
                writing[0] = False
            logger.debug("%s: wrote %d references in %.2f s", self.path, len(pending), time.perf_counter() - began)
            pending.clear()
            gone.clear()
            newly_skipped.clear()

        all_skipped = [*skipped, *duplicates]
        done = 0
        # A first add (a build) writes without a rollback journal's double writes and without
        # syncing each commit; there is nothing to lose if it stops half way.
        bulk = _BulkWrites(backend) if backend.count_docs() == 0 else None
        try:
            for results, chunk_keys, chunk_contexts, chunk_counts in self._run(work, jobs, max_bytes):
                if chunk_keys:
                    grams.append((np.frombuffer(chunk_keys, dtype=np.int64), np.frombuffer(chunk_contexts, dtype=np.int64),
                                  np.frombuffer(chunk_counts, dtype=np.int64)))
                    buffered[0] += len(chunk_keys) // 8
                for result in results:
                    done += 1
                    kind, key = result[0], result[1]
                    if kind == "unchanged":
                        counts["unchanged"] += 1
                    elif kind == "skipped" or result[4] not in self._languages:
                        reason = result[2] if kind == "skipped" else (
                            f"language {result[4]!r} is not one this index was built for")
                        all_skipped.append(Skipped(path=key, reason=reason))
                        newly_skipped[key] = reason
                        if key in known:
                            counts["removed"] += 1
                            gone.append((known[key][0], key, known[key][2]))
                    else:
                        pending.append(result)
                        if key in known:
                            counts["replaced"] += 1
                            gone.append((known[key][0], key, known[key][2]))
                        else:
                            counts["added"] += 1
                    if len(pending) >= SEGMENT_DOCS:
                        flush()
                    if progress is not None and (done % 256 == 0 or done == len(work)):
                        progress(done, len(work))
                if buffered[0] >= _GRAM_BUFFER:
                    try:
                        write_grams()
                    except BaseException:
                        backend.rollback()
                        writing[0] = False
                        raise
            flush()
            # A build writes one entry per key and segment; merged, a query reads one row per
            # hash instead of one per segment.
            compacted = self._compact() if self._posting_entries() > MAX_POSTING_ENTRIES else None
        finally:
            if bulk is not None:
                bulk.close()
        self._finish_add(new_roots)
        summary = AddSummary(
            skipped=tuple(sorted(all_skipped, key=lambda s: reference_sort_key(s.path))),
            seconds=time.perf_counter() - started,
            compacted=compacted,
            **counts,
        )
        logger.info("%s: added %d, replaced %d, unchanged %d, removed %d, skipped %d in %.1f s", self.path,
                    summary.added, summary.replaced, summary.unchanged, summary.removed, len(summary.skipped),
                    summary.seconds)
        return summary

    def _indexed_keys(self) -> list[str]:
        """Every indexed reference's key and every recorded skipped path."""
        backend = self._backend
        return [*(row[0] for row in backend.digest_rows()), *(path for path, _ in backend.skipped())]

    @_guarded
    def remove(self, paths: Sequence[str | Path]) -> AddSummary:
        """Take references out of the index (``mleaudit corpus remove``).

        Each path is an indexed key (``owner/slug.ipynb``, as ``corpus info --list`` shows), a
        folder of keys (``owner``: every key under it), or a file or folder path under a recorded
        corpus root (the file itself need not exist any more). Postings, the n-gram table and
        the segment statistics lose what the references added, as when ``add`` replaces a file;
        recorded skipped files named are forgotten too.

        Parameters
        ----------
        paths : sequence of str or Path

        Returns
        -------
        AddSummary
            ``removed``: references taken out.

        Raises
        ------
        CorpusIndexError
            If the index was opened read-only, or a path names nothing indexed (then nothing is
            removed).
        """
        self._open_backend()
        if not self._writable:
            raise CorpusIndexError(f"{self.path}: opened read-only; open it with writable=True to remove files")
        started = time.perf_counter()
        with self._writer():
            indexed = self._indexed_keys()
            chosen: list[str] = []
            unknown: list[str] = []
            for given in paths:
                keys = _keys_for(given, indexed, self._meta.get("roots", []))
                if not keys:
                    shown = os.fspath(given).encode("utf-8", errors="backslashreplace").decode("utf-8")
                    unknown.append(repr(shown))
                chosen.extend(key for key in keys if key not in chosen)
            if unknown:
                raise CorpusIndexError(f"{self.path}: not in the index (nothing removed): {', '.join(unknown)}")
            removed = self._remove_keys(chosen)
        summary = AddSummary(removed=removed, seconds=time.perf_counter() - started)
        logger.info("%s: removed %d references in %.1f s", self.path, removed, summary.seconds)
        return summary

    def _remove_keys(self, keys: Sequence[str]) -> int:
        """Remove these keys' references and skipped entries (inside the writer lock); the
        number of references removed."""
        backend = self._backend
        self._clear_query_caches()
        known = backend.lookup(list(keys))
        gone = [(doc, key, segment) for key, (doc, _, segment) in known.items()]
        backend.begin()
        try:
            self._reload_meta()
            self._remove_docs(gone)
            backend.remove_skipped(list(keys))
            self._meta["corpus_digest"] = ""
            backend.write_meta("index", self._meta)
            backend.commit()
        except BaseException:
            backend.rollback()
            raise
        self._finish_add([])
        return len(gone)

    @_guarded
    def sync(self, directory: str | Path, *, jobs: int = 1, max_bytes: int = MAX_REFERENCE_BYTES,
             progress: Callable[[int, int], None] | None = None) -> AddSummary:
        """Make the index hold what a corpus folder holds now (``mleaudit corpus sync``).

        References indexed under the folder whose file is gone leave the index; new files are
        added, changed ones re-indexed, unchanged ones left alone (as :meth:`add` does). Keys
        are relative to the recorded root that contains the folder, else to the folder itself
        (which becomes a root). Links inside the folder are not followed: a kernel replaced by
        a link is listed as skipped and leaves the index.

        Parameters
        ----------
        directory : str or Path
            A corpus folder.
        jobs, max_bytes, progress
            As for :meth:`add`.

        Returns
        -------
        AddSummary
            ``removed`` counts the references whose file is gone or now unusable.

        Raises
        ------
        CorpusIndexError
            If the index was opened read-only, or ``directory`` is not a folder.
        """
        self._open_backend()
        if not self._writable:
            raise CorpusIndexError(f"{self.path}: opened read-only; open it with writable=True to sync it")
        target = Path(directory)
        if not target.is_dir():
            raise CorpusIndexError(f"{directory}: not a folder")
        started = time.perf_counter()
        with self._writer():
            absolute = target.resolve()
            base = next((Path(root) for root in self._meta.get("roots", []) if absolute.is_relative_to(root)), absolute)
            prefix = absolute.relative_to(base).as_posix()
            prefix = "" if prefix == "." else prefix
            present = {key for _, key in _plan_files([target], None, self._meta.get("roots", []))[0]}
            under = [key for key in self._indexed_keys()
                     if not prefix or key.startswith(prefix + "/")]
            gone = sorted({key for key in under if key not in present})
            removed = self._remove_keys(gone) if gone else 0
            summary = self._add([target], root=None, jobs=jobs, max_bytes=max_bytes, progress=progress)
        return dataclasses.replace(summary, removed=summary.removed + removed, seconds=time.perf_counter() - started)

    def _run(self, work: list[tuple[str, str, str]], jobs: int, max_bytes: int
             ) -> Iterator[tuple[list[_Result], bytes, bytes, bytes]]:
        """Index ``work`` (path, key, indexed sha256) in chunks, in order, with ``jobs`` processes."""
        languages = tuple(self._languages)
        size = _CHUNK_FILES
        if jobs > 1:
            # small calls still give every worker several chunks
            size = max(1, min(_CHUNK_FILES, len(work) // (4 * jobs)))
        tasks = [(work[i : i + size], max_bytes, self._k, self._w, languages) for i in range(0, len(work), size)]
        if jobs <= 1 or len(work) < 2 * jobs:
            yield from map(_index_chunk, tasks)
            return
        methods = multiprocessing.get_all_start_methods()
        context = multiprocessing.get_context("fork" if "fork" in methods else "spawn")
        with context.Pool(jobs, initializer=ignore_sigint) as pool:
            # imap keeps input order, so ids and segments do not depend on the number of workers.
            yield from pool.imap(_index_chunk, tasks)
