"""What one write changes in storage: a segment of new references, references taken out, the digest.

Incremental add. ``add`` writes its references in *segments* of up to ``SEGMENT_DOCS``
(:meth:`_SegmentWrites._write_segment`): their records and, per hash, one postings entry for the
segment. A changed file's old entry is removed from its segment's postings and its n-grams from
the table, so document frequencies stay exact (:meth:`_SegmentWrites._remove_docs`), and the new
one is written. When a call completes, the roots and the corpus digest are recorded
(:meth:`_SegmentWrites._finish_add`). Every method here runs inside the writer lock and a write
transaction its caller holds.
"""

from __future__ import annotations

import hashlib

import numpy as np

from mleaudit.audit.similarity.corpus import reference_sort_key
from mleaudit.audit.similarity.index.blobs import _decode_profile, _decode_record, _decode_stats, _encode_stats
from mleaudit.audit.similarity.index.fingerprinting import _seed_values, _sum_grams
from mleaudit.audit.similarity.index.format import _KEY_STRIDE, _SAMPLE_CODE, _SEED_CODE, _now
from mleaudit.audit.similarity.index.postings import _encode_postings, _segment_postings
from mleaudit.audit.similarity.index.state import _OpenIndex


class _SegmentWrites(_OpenIndex):
    """The storage side of ``add`` and ``remove``: segments written, references removed, the
    digest and roots recorded."""

    def _write_segment(self, pending: list[tuple]) -> None:
        backend = self._backend
        # every key of the segment gets one more entry (recorded in the meta by _finish_add)
        self._meta["posting_entries"] = self._posting_entries() + 1
        segment = backend.allocate("segment", 1)
        first_id = backend.allocate("doc", len(pending))
        ids = np.arange(first_id, first_id + len(pending), dtype=np.int64)
        docs = [(int(doc), key, sha, text_sha, language, record)
                for doc, (_, key, sha, text_sha, language, _, record, _, _, _) in zip(ids, pending)]
        profiles = [(int(doc), result[9][0]) for doc, result in zip(ids, pending) if result[9] is not None]
        # Every reference's distinct hashes (under its language's code) and sampled 8-grams
        # (under the sample code, count 1), in one array each, reference by reference.
        codes = {language: n * _KEY_STRIDE for n, language in enumerate(self._languages)}
        unique = [np.frombuffer(result[7], dtype=np.int64) for result in pending]
        counts = [np.frombuffer(result[8], dtype=np.int64) for result in pending]
        samples = [np.frombuffer(result[9][1], dtype=np.int64) if result[9] is not None else np.zeros(0, np.int64)
                   for result in pending]
        # tile seeds (under the seed code, count 1): results of an older worker format have none
        seeds = [np.frombuffer(result[9][2], dtype=np.int64) if result[9] is not None and len(result[9]) > 2
                 else np.zeros(0, np.int64) for result in pending]
        sizes = np.array([u.size for u in unique], dtype=np.int64)
        sampled = np.array([v.size for v in samples], dtype=np.int64)
        seeded = np.array([v.size for v in seeds], dtype=np.int64)
        hash_keys = np.concatenate(unique) + np.repeat([codes[result[4]] for result in pending], sizes)
        hash_counts = np.concatenate(counts)
        hash_docs = np.repeat(ids, sizes)
        countable = np.array([result[5] for result in pending], dtype=np.int64)
        if self._boilerplate_hashes.size:
            ignored = np.where(np.isin(np.concatenate(unique), self._boilerplate_hashes), hash_counts, 0)
            countable -= np.bincount(np.repeat(np.arange(len(pending)), sizes), weights=ignored,
                                     minlength=len(pending)).astype(np.int64)
        keys = np.concatenate((hash_keys, np.concatenate(samples) + _SAMPLE_CODE * _KEY_STRIDE,
                               np.concatenate(seeds) + _SEED_CODE * _KEY_STRIDE))
        docs_all = np.concatenate((hash_docs, np.repeat(ids, sampled), np.repeat(ids, seeded)))
        counts_all = np.concatenate((hash_counts, np.ones(int(sampled.sum() + seeded.sum()), np.int64)))
        # stable: doc ids stay ascending per key
        order = np.argsort(keys, kind="stable")
        postings = _segment_postings(keys[order], docs_all[order], counts_all[order])
        backend.write_segment(segment, docs, postings, _encode_stats(ids, countable, sampled))
        if profiles:
            backend.write_profiles(profiles)

    def _apply_grams(self, parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]]) -> None:
        """Change the n-gram table by ``parts``: (n-gram keys, their context keys, the change of
        each one's document frequency), int64 arrays; a file added is +1 for each of its distinct
        n-grams, a file taken out -1."""
        if not parts:
            return
        keys, contexts, deltas = _sum_grams(*zip(*parts))
        if keys.size:
            self._backend.apply_grams(keys, contexts, deltas)

    def _remove_docs(self, gone: list[tuple[int, str, int]]) -> None:
        """Take references out of the postings, segment statistics and n-gram table, then delete them."""
        if not gone:
            return
        backend = self._backend
        doomed = np.array(sorted(doc for doc, _, _ in gone), dtype=np.int64)
        records = backend.records([doc for doc, _, _ in gone])
        stored_profiles = backend.profiles([doc for doc, _, _ in gone])
        keys: set[int] = set()
        grams: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        for doc, (path, blob) in records.items():
            record = _decode_record(blob, f"{self.path}: {path}", self._k)
            code = self._languages.index(record.language) * _KEY_STRIDE
            keys.update((np.unique(record.hashes) + code).tolist())
            if doc in stored_profiles:
                profile, _ = _decode_profile(stored_profiles[doc], path, f"{self.path}: {path}")
                keys.update((profile.sample() + _SAMPLE_CODE * _KEY_STRIDE).tolist())
                keys.update((_seed_values(profile) + _SEED_CODE * _KEY_STRIDE).tolist())
                gram_keys, gram_contexts = profile.grams()
                grams.append((gram_keys, gram_contexts, np.full(gram_keys.size, -1, dtype=np.int64)))
        self._apply_grams(grams)
        for key, entries in backend.postings(sorted(keys)).items():
            for posting in entries:
                docs, counts = posting.arrays(f"{self.path}: postings of {key}")
                keep = ~np.isin(docs, doomed)
                if keep.all():
                    continue
                new = _encode_postings(docs[keep], counts[keep], bitmap=posting.bitmap) if keep.any() else None
                backend.replace_posting(key, posting, new)
        segments = {segment for _, _, segment in gone}
        for segment, blob in backend.segment_stats():
            if segment in segments:
                docs, countable, sampled = _decode_stats(blob, f"{self.path}: segment {segment}")
                keep = ~np.isin(docs, doomed)
                backend.replace_segment_stats(segment, _encode_stats(docs[keep], countable[keep], sampled[keep]))
        backend.delete_docs([(doc, path) for doc, path, _ in gone])

    def _finish_add(self, new_roots: list[str]) -> None:
        """Record the new roots and the corpus digest, from the meta and references as stored
        inside the transaction that writes them (each root once)."""
        backend = self._backend
        backend.begin()
        try:
            self._reload_meta()
            rows = sorted(backend.digest_rows(), key=lambda row: reference_sort_key(row[0]))
            digest = hashlib.sha256()
            for path, language, text_sha in rows:
                digest.update(f"reference\0{path}\0{language}\0".encode())
                digest.update(bytes.fromhex(text_sha))
            for item in self._meta.get("boilerplate", []):
                digest.update(f"boilerplate\0{item['path']}\0{item['language']}\0".encode())
                digest.update(bytes.fromhex(item["text_sha256"]))
            roots: list[str] = []
            for item in [*self._meta.get("roots", []), *new_roots]:
                if item not in roots:
                    roots.append(item)
            self._meta["roots"] = roots
            self._meta["corpus_digest"] = digest.hexdigest()
            self._meta["updated_at"] = _now()
            backend.write_meta("index", self._meta)
            backend.commit()
        except BaseException:
            backend.rollback()
            raise
