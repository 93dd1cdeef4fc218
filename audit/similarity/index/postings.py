"""Postings entries: the references holding one posting key, as an id list or a bitmap.

An entry is written per key and segment by ``add`` (:func:`_segment_postings`), merged into one
per key by compaction (:func:`_merge_postings`, in the bitmap layout when that is smaller), and
counted for every reference at once by retrieval (:func:`_count_ids`). A Redis backend keeps
each entry as one packed value (:func:`_pack_posting`, :func:`_unpack_posting`); SQLite keeps
its parts in columns.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from mleaudit.audit.similarity.index.format import CorpusIndexError

#: Layout flags of a postings entry (the ``wide`` column; the first byte of a Redis item): counts
#: are uint32 rather than uint16; the ids are a bitmap rather than a list.
_WIDE_COUNTS = 1
_BITMAP_IDS = 2
#: A merged postings entry keeps its ids as a bitmap when that is smaller than the id list and
#: it holds at least this many ids: counting a bitmap's 0/1 slots costs about a twentieth of
#: counting listed ids (``benchmarks/corpus_index.py``), and small entries are cheapest joined
#: with the other lists of a query.
_BITMAP_MIN_IDS = 256


@dataclass(frozen=True, slots=True)
class _Posting:
    """One postings entry: the references of one segment (or, once merged, of many) that contain
    one posting key.

    Two layouts. A *list* entry: ``docs`` are little-endian int32 reference ids, ascending, and
    ``counts`` the occurrences of the hash in each, aligned with them. A *bitmap* entry
    (``bitmap``): ``docs`` is an int32 first id ``base`` followed by a little-endian bitmap whose
    bit ``i`` says whether id ``base + i`` holds the key, and every id holds the hash once except
    those listed in ``counts``: their int32 ids, ascending, then their occurrences (so counting
    a reference's covered fingerprints never decodes the bitmap). Counts are uint16 (``wide``
    False) or uint32 when one does not fit. ``counts`` is ``None`` when it was not read
    (candidate retrieval only needs the ids); ``size`` is the number of ids. Kept as bytes so a
    query can join the entries of many keys and read them with one ``numpy.frombuffer``.
    ``token`` tells the backend which stored entry this is (for replacing it).
    """

    token: Any
    docs: bytes
    counts: bytes | None
    wide: bool
    bitmap: bool = False
    size: int = -1

    def __post_init__(self) -> None:
        if self.size < 0:
            if self.bitmap:
                raise ValueError("a bitmap entry needs its size")
            object.__setattr__(self, "size", len(self.docs) // 4)

    @property
    def flags(self) -> int:
        """The layout flags stored with the entry."""
        return (_WIDE_COUNTS if self.wide else 0) | (_BITMAP_IDS if self.bitmap else 0)

    def ids(self, where: str) -> np.ndarray:
        """The reference ids, ascending (int32 for a list, int64 for a bitmap)."""
        if not self.bitmap:
            if len(self.docs) % 4 or len(self.docs) // 4 != self.size:
                raise CorpusIndexError(f"{where}: corrupt postings entry")
            return np.frombuffer(self.docs, dtype="<i4")
        base, bits = self.bitmap_parts(where)
        ids = np.flatnonzero(np.unpackbits(bits, bitorder="little")) + base
        if ids.size != self.size:
            raise CorpusIndexError(f"{where}: corrupt postings entry (bitmap of {ids.size} ids, {self.size} expected)")
        return ids

    def bitmap_parts(self, where: str) -> tuple[int, np.ndarray]:
        """A bitmap entry's first id and its bits as uint8."""
        if len(self.docs) < 4:
            raise CorpusIndexError(f"{where}: corrupt postings entry")
        base = int.from_bytes(self.docs[:4], "little", signed=True)
        if base < 0:
            raise CorpusIndexError(f"{where}: corrupt postings entry (negative id)")
        return base, np.frombuffer(self.docs, dtype=np.uint8, offset=4)

    def exceptions(self, where: str) -> tuple[np.ndarray, np.ndarray]:
        """A bitmap entry's ids that hold the hash more than once, and their counts (the counts
        must have been read)."""
        width = 4 if self.wide else 2
        if self.counts is None or len(self.counts) % (4 + width):
            raise CorpusIndexError(f"{where}: corrupt postings entry")
        n = len(self.counts) // (4 + width)
        return (np.frombuffer(self.counts, dtype="<i4", count=n),
                np.frombuffer(self.counts, dtype="<u4" if self.wide else "<u2", offset=4 * n))

    def arrays(self, where: str) -> tuple[np.ndarray, np.ndarray]:
        """Reference ids and their counts (the counts must have been read)."""
        ids = self.ids(where)
        if self.bitmap:
            listed, listed_counts = self.exceptions(where)
            counts = np.ones(ids.size, dtype=np.int64)
            at = np.searchsorted(ids, listed)
            if listed.size and (at.max() >= ids.size or np.any(ids[np.minimum(at, ids.size - 1)] != listed)):
                raise CorpusIndexError(f"{where}: corrupt postings entry (a count for an id it does not hold)")
            counts[at] = listed_counts
            return ids, counts
        width = 4 if self.wide else 2
        if self.counts is None or len(self.counts) != ids.size * width:
            raise CorpusIndexError(f"{where}: corrupt postings entry")
        return ids, np.frombuffer(self.counts, dtype="<u4" if self.wide else "<u2")


def _encode_postings(docs: np.ndarray, counts: np.ndarray, token: Any = None, *, bitmap: bool = False) -> _Posting:
    """A postings entry for ascending ``docs`` and their ``counts`` (at least 1 each); with
    ``bitmap``, in the bitmap layout when that is smaller (and there are at least
    :data:`_BITMAP_MIN_IDS` ids)."""
    docs = np.asarray(docs, dtype=np.int64)
    counts = np.asarray(counts, dtype=np.int64)
    wide = bool(counts.size and int(counts.max()) > 0xFFFF)
    width = 4 if wide else 2
    count_type = "<u4" if wide else "<u2"
    if bitmap and docs.size >= _BITMAP_MIN_IDS:
        repeated = counts > 1
        span = int(docs[-1]) - int(docs[0]) + 1
        if 4 + (span + 7) // 8 + (4 + width) * int(repeated.sum()) < (4 + width) * docs.size:
            base = int(docs[0])
            slots = np.zeros(span, dtype=np.uint8)
            slots[docs - base] = 1
            bits = np.packbits(slots, bitorder="little").tobytes()
            listed = np.asarray(docs[repeated], dtype="<i4").tobytes() + np.asarray(counts[repeated], dtype=count_type).tobytes()
            return _Posting(token=token, docs=base.to_bytes(4, "little", signed=True) + bits, counts=listed,
                            wide=wide, bitmap=True, size=int(docs.size))
    return _Posting(token=token, docs=np.asarray(docs, dtype="<i4").tobytes(),
                    counts=np.asarray(counts, dtype=count_type).tobytes(), wide=wide)


def _merge_postings(entries: Sequence[_Posting], where: str) -> _Posting:
    """One entry holding the ids and counts of ``entries`` (every entry of one key), ids
    ascending, in the bitmap layout when that is smaller (:func:`_encode_postings`)."""
    parts = [entry.arrays(where) for entry in entries]
    docs = np.concatenate([ids.astype(np.int64) for ids, _ in parts])
    counts = np.concatenate([c.astype(np.int64) for _, c in parts])
    order = np.argsort(docs, kind="stable")
    docs, counts = docs[order], counts[order]
    if docs.size > 1 and np.any(docs[1:] == docs[:-1]):
        raise CorpusIndexError(f"{where}: corrupt postings (a reference listed twice)")
    return _encode_postings(docs, counts, bitmap=True)


def _segment_postings(keys: np.ndarray, docs: np.ndarray, counts: np.ndarray) -> list[tuple[int, _Posting]]:
    """One postings entry per distinct key of a segment, from the segment's (key, reference id,
    count) rows sorted by key (ids ascending within a key); equal to :func:`_encode_postings` of
    each key's rows, built from two joined buffers rather than per key."""
    if not keys.size:
        return []
    starts = np.flatnonzero(np.concatenate(([True], keys[1:] != keys[:-1])))
    stops = np.append(starts[1:], keys.size)
    wide = np.maximum.reduceat(counts, starts) > 0xFFFF
    doc_bytes = np.asarray(docs, dtype="<i4").tobytes()
    # narrow counts as uint16 and, for the few keys that need it, uint32
    narrow = np.asarray(np.minimum(counts, 0xFFFF), dtype="<u2").tobytes()
    postings = []
    for key, start, stop, is_wide in zip(keys[starts].tolist(), starts.tolist(), stops.tolist(), wide.tolist()):
        count_bytes = (np.asarray(counts[start:stop], dtype="<u4").tobytes() if is_wide
                       else narrow[2 * start : 2 * stop])
        postings.append((key, _Posting(token=None, docs=doc_bytes[4 * start : 4 * stop], counts=count_bytes,
                                       wide=is_wide)))
    return postings


def _pack_posting(posting: _Posting) -> bytes:
    """A postings entry as one value (Redis lists hold one bytes value per item): a flags byte
    (4: 32-bit counts, else 2; plus 16 for a bitmap, then followed by the number of ids as 4
    bytes), the length of ``docs`` as 4 bytes, ``docs``, ``counts``."""
    flag = (4 if posting.wide else 2) | (16 if posting.bitmap else 0)
    size = posting.size.to_bytes(4, "little") if posting.bitmap else b""
    return (flag.to_bytes(1, "little") + size + len(posting.docs).to_bytes(4, "little") + posting.docs
            + (posting.counts or b""))


def _unpack_posting(blob: bytes, where: str) -> _Posting:
    if len(blob) < 5 or blob[0] not in (2, 4, 18, 20):
        raise CorpusIndexError(f"{where}: corrupt postings entry")
    bitmap = bool(blob[0] & 16)
    at = 5 if bitmap else 1
    if len(blob) < at + 4:
        raise CorpusIndexError(f"{where}: corrupt postings entry")
    size = int.from_bytes(blob[at : at + 4], "little")
    docs = blob[at + 4 : at + 4 + size]
    return _Posting(token=blob, docs=docs, counts=blob[at + 4 + size :], wide=bool(blob[0] & 4), bitmap=bitmap,
                    size=int.from_bytes(blob[1:5], "little") if bitmap else -1)


def _first_id(posting: _Posting) -> int:
    """The smallest reference id of a postings entry (ids are ascending; a bitmap starts at its
    first id)."""
    if len(posting.docs) < 4:
        return -1
    return int.from_bytes(posting.docs[:4], "little", signed=True)


def _count_ids(groups: Sequence[tuple[Sequence[_Posting], int]], size: int, where: str) -> np.ndarray:
    """For every reference id below ``size``, the sum of the weights of the postings entries
    that hold it.

    Parameters
    ----------
    groups : sequence of (entries, weight)
        The entries of one posting key and its weight (the hash's multiplicity in the agent file).
    size : int
        Ids at or past it are left out (added by another writer since the statistics were read,
        or corrupt); so are negative ones.
    where : str
        Named in errors.

    Returns
    -------
    ndarray of int64, shape (size,)

    Notes
    -----
    Listed ids are joined per weight and counted with one ``numpy.bincount`` each (a query
    reads millions of them, and plain counting per weight is several times faster than weighted
    counting of everything); a bitmap entry adds its unpacked 0/1 slots to its weight's sum.
    Both are exact integer counts, so the result does not depend on the layout.
    """
    lists: dict[int, list[bytes]] = {}
    bitmaps: dict[int, list[_Posting]] = {}
    for entries, weight in groups:
        for posting in entries:
            if posting.bitmap:
                bitmaps.setdefault(weight, []).append(posting)
            elif len(posting.docs) != 4 * posting.size:
                raise CorpusIndexError(f"{where}: corrupt postings entry")
            else:
                lists.setdefault(weight, []).append(posting.docs)
    covered = np.zeros(size, dtype=np.int64)
    for weight, blobs in lists.items():
        joined = b"".join(blobs)
        if len(joined) % 4:
            raise CorpusIndexError(f"{where}: corrupt postings entry")
        ids = np.frombuffer(joined, dtype="<i4")
        if ids.size and (ids.min() < 0 or ids.max() >= size):
            ids = ids[(ids >= 0) & (ids < size)]
        covered += weight * np.bincount(ids, minlength=size)
    for weight, entries in bitmaps.items():
        # byte counters, added up in blocks of 255 bitmaps (no overflow): a third of the memory
        # traffic of wider ones
        for block in range(0, len(entries), 255):
            summed = np.zeros(size, dtype=np.uint8)
            for posting in entries[block : block + 255]:
                base, bits = posting.bitmap_parts(where)
                slots = min(8 * bits.size, size - base)
                if slots > 0:
                    window = summed[base : base + slots]
                    np.add(window, np.unpackbits(bits, bitorder="little", count=slots), out=window)
            covered += weight * summed.astype(np.int64)
    return covered
