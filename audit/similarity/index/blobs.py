"""Codecs of the index's blobs: reference records, detector profiles and segment statistics.

What is stored per reference for Dolos's figures (a *record*): the fingerprint hashes and
k-gram positions in document order, for each fingerprint the character offsets of its k-gram's
region (start of its first token, end of its last), the text's line starts and the notebook
cell map. Fragment spans
and "cell 3, line 2" locations are computed from these without the source text, so a query never
re-reads or re-tokenizes a reference. For the rare file whose token regions are not in document
order (trees recovered from syntax errors can be), the full token offsets are stored too. Also
stored (beside the record, by the backend): the corpus path, the sha256 of the file's bytes
(re-adding an unchanged file is a no-op) and of its code text (for the corpus digest, which
equals :func:`mleaudit.audit.similarity.compare`'s).

A blob is safe to read from someone else's index: nothing in it is executed or unpickled;
numeric arrays are little-endian int32 (or int64/float64) blobs, zlib-compressed with a size cap
on decompression, and every record and profile is checked when read (:func:`_decode_record`,
:func:`_decode_profile`), any inconsistency a :class:`CorpusIndexError` naming the file.
"""

from __future__ import annotations

import json
import re
import zlib
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np

from mleaudit.audit.similarity.corpus import TextDecoding
from mleaudit.audit.similarity.detect import Profile
from mleaudit.audit.similarity.index.format import CorpusIndexError
from mleaudit.audit.similarity.winnow import HASH_MOD
from mleaudit.audit.units import CellRange

_PROFILE_MAGIC = b"MLDP\x01"
_RECORD_MAGIC = b"MLCR\x01"
#: What a record's ``encoding`` may be (Python's codec names) and how long its decoder's note.
_ENCODING_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,39}")
_MAX_NOTE_CHARS = 500
#: A record never decompresses past this (a hostile index cannot exhaust memory).
_MAX_RECORD_BYTES = 256 * 1024 * 1024


def _i32(values: Any) -> bytes:
    return np.asarray(values, dtype="<i4").tobytes()


def _delta(values: np.ndarray) -> np.ndarray:
    return np.diff(np.asarray(values, dtype=np.int64), prepend=0)


def _pack_blob(magic: bytes, header: dict[str, Any], arrays: list[bytes]) -> bytes:
    """A stored blob: ``magic``, then zlib of (header length as 4 little-endian bytes, the JSON
    header with sorted keys, the arrays' bytes)."""
    head = json.dumps(header, sort_keys=True).encode()
    return magic + zlib.compress(b"".join([len(head).to_bytes(4, "little"), head, *arrays]), 1)


def _unpack_blob(blob: bytes, magic: bytes, bad: Callable[[str], CorpusIndexError]) -> tuple[bytes, Any, int]:
    """Undo :func:`_pack_blob`: the inflated bytes (at most ``_MAX_RECORD_BYTES``), the decoded
    header and the offset of the arrays in the inflated bytes; every inconsistency is ``bad(what)``."""
    if not isinstance(blob, (bytes, bytearray, memoryview)) or bytes(blob[: len(magic)]) != magic:
        raise bad("unknown layout")
    try:
        inflater = zlib.decompressobj()
        raw = inflater.decompress(bytes(blob[len(magic):]), _MAX_RECORD_BYTES)
        if inflater.unconsumed_tail:
            raise bad(f"more than {_MAX_RECORD_BYTES} bytes once decompressed")
    except zlib.error as exc:
        raise bad(f"zlib: {exc}") from exc
    if len(raw) < 4:
        raise bad("truncated header")
    head_len = int.from_bytes(raw[:4], "little")
    try:
        header = json.loads(raw[4 : 4 + head_len])
    except ValueError as exc:
        raise bad(f"header: {exc}") from exc
    return raw, header, 4 + head_len


def _encode_record(
    *,
    language: str,
    source: str,
    hashes: np.ndarray,
    kgram_starts: np.ndarray,
    span_starts: np.ndarray,
    span_ends: np.ndarray,
    lines: Sequence[int],
    cells: Sequence[CellRange],
    token_starts: Sequence[int] | None,
    token_ends: Sequence[int] | None,
    decoding: TextDecoding | None = None,
) -> bytes:
    """A reference's record: a JSON header and little-endian int32 arrays, zlib-compressed.

    Positions that only grow (k-gram starts, span offsets, line starts) are stored as deltas,
    which compress to a fraction of their size; hashes are stored as they are. A file that was
    not plain UTF-8 keeps its encoding and the decoder's note in the header (``encoding``,
    ``decoding``), which readers of earlier records do without.
    """
    header = {
        "language": language,
        "source": source,
        "n": int(len(hashes)),
        "lines": len(lines),
        "cells": len(cells),
        "tokens": 0 if token_starts is None else len(token_starts),
    }
    if decoding is not None and decoding.note is not None:
        header["encoding"], header["decoding"] = decoding.encoding, decoding.note
    parts = [
        _i32(hashes),
        _i32(_delta(kgram_starts)),
        _i32(_delta(span_starts)),
        _i32(_delta(span_ends)),
        _i32(_delta(np.asarray(lines, dtype=np.int64))),
        _i32([v for c in cells for v in (c.cell_index, c.start_line, c.end_line)]),
    ]
    if token_starts is not None and token_ends is not None:
        parts.append(_i32(token_starts))
        parts.append(_i32(token_ends))
    return _pack_blob(_RECORD_MAGIC, header, parts)


@dataclass(frozen=True, slots=True)
class _Record:
    language: str
    source: str
    hashes: np.ndarray
    kgram_starts: np.ndarray
    span_starts: np.ndarray
    span_ends: np.ndarray
    lines: tuple[int, ...]
    cells: tuple[CellRange, ...]
    token_starts: tuple[int, ...] | None
    token_ends: tuple[int, ...] | None
    #: the encoding the file was read in and the decoder's note; ``None`` for plain UTF-8
    decoding: tuple[str, str] | None = None


def _decode_record(blob: bytes, where: str, kgram_length: int) -> _Record:
    """Read and check a record; any inconsistency is a :class:`CorpusIndexError` naming ``where``."""

    def bad(what: str) -> CorpusIndexError:
        return CorpusIndexError(f"{where}: corrupt record ({what})")

    raw, header, body = _unpack_blob(blob, _RECORD_MAGIC, bad)
    try:
        language, source = str(header["language"]), str(header["source"])
        n, n_lines, n_cells, n_tokens = (int(header[k]) for k in ("n", "lines", "cells", "tokens"))
    except (ValueError, KeyError, TypeError, OverflowError) as exc:
        raise bad(f"header: {exc}") from exc
    decoding = None
    if "encoding" in header:
        encoding, note = header.get("encoding"), header.get("decoding")
        if (not isinstance(encoding, str) or not _ENCODING_NAME.fullmatch(encoding) or not isinstance(note, str)
                or not note or len(note) > _MAX_NOTE_CHARS):
            raise bad("header: encoding")
        decoding = (encoding, note)
    sizes = [n, n, n, n, n_lines, 3 * n_cells] + ([n_tokens, n_tokens] if n_tokens else [])
    if min(sizes) < 0 or body + 4 * sum(sizes) != len(raw):
        raise bad("array lengths do not match the header")
    arrays = []
    offset = body
    for size in sizes:
        arrays.append(np.frombuffer(raw, dtype="<i4", count=size, offset=offset).astype(np.int64))
        offset += 4 * size
    hashes, kgram_starts = arrays[0], np.cumsum(arrays[1])
    span_starts, span_ends = np.cumsum(arrays[2]), np.cumsum(arrays[3])
    lines = np.cumsum(arrays[4])
    if n and (hashes.min() < 0 or hashes.max() >= HASH_MOD):
        raise bad("hash out of range")
    if n and (kgram_starts[0] < 0 or (n > 1 and np.any(np.diff(kgram_starts) <= 0))):
        raise bad("k-gram positions not increasing")
    if n and (min(span_starts.min(), span_ends.min()) < 0):
        raise bad("negative offset")
    if n_lines < 1 or lines[0] != 0 or (n_lines > 1 and np.any(np.diff(lines) <= 0)):
        raise bad("line starts")
    cell_values = arrays[5].reshape(-1, 3) if n_cells else np.zeros((0, 3), dtype=np.int64)
    if n_cells and (cell_values[:, 0].min() < 0 or cell_values[:, 1].min() < 1 or np.any(cell_values[:, 2] < cell_values[:, 1])):
        raise bad("cell map")
    cells = tuple(CellRange(cell_index=int(c), start_line=int(s), end_line=int(e)) for c, s, e in cell_values.tolist())
    token_starts = token_ends = None
    if n_tokens:
        token_starts, token_ends = tuple(arrays[6].tolist()), tuple(arrays[7].tolist())
        if n and kgram_starts[-1] + kgram_length - 1 >= n_tokens:
            raise bad("k-gram past the last token")
    return _Record(
        language=language,
        source=source,
        hashes=hashes,
        kgram_starts=kgram_starts,
        span_starts=span_starts,
        span_ends=span_ends,
        lines=tuple(lines.tolist()),
        cells=cells,
        token_starts=token_starts,
        token_ends=token_ends,
        decoding=decoding,
    )


def _encode_stats(docs: np.ndarray, countable: np.ndarray, samples: np.ndarray) -> bytes:
    """A segment's statistics: reference ids, countable fingerprints, sampled 8-grams."""
    return b"".join(np.asarray(a, dtype="<i4").tobytes() for a in (docs, countable, samples))


def _decode_stats(blob: bytes, where: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    if len(blob) % 12:
        raise CorpusIndexError(f"{where}: corrupt segment statistics")
    n = len(blob) // 12
    return tuple(np.frombuffer(blob, dtype="<i4", count=n, offset=4 * n * i) for i in range(3))  # type: ignore[return-value]


def _encode_profile(profile: Profile, chars: int) -> bytes:
    """A reference's detector profile: its token vocabulary (ids and prior bits), the tokens as
    indices into it, their offsets (starts as deltas, lengths) and the text's length;
    little-endian arrays, zlib-compressed."""
    ids = np.array(profile.ids, dtype=np.int64)
    vocabulary, tokens = np.unique(ids, return_inverse=True)
    starts = np.asarray(profile.starts, dtype=np.int64)
    lengths = np.asarray(profile.ends, dtype=np.int64) - starts
    priors = np.array([profile.priors[int(v)] for v in vocabulary.tolist()], dtype="<f8")
    header = {"n": int(ids.size), "vocabulary": int(vocabulary.size), "chars": int(chars)}
    return _pack_blob(_PROFILE_MAGIC, header, [vocabulary.astype("<i8").tobytes(), priors.tobytes(),
                                               _i32(tokens), _i32(_delta(starts)), _i32(lengths)])


def _decode_profile(blob: bytes, path: str, where: str, *, tokens_only: bool = False) -> tuple[Profile, int]:
    """A stored profile and the length of its text; any inconsistency is a
    :class:`CorpusIndexError` naming ``where``. With ``tokens_only`` the profile has its token
    ids but no offsets or priors (all a left-out file contributes to a background)."""

    def bad(what: str) -> CorpusIndexError:
        return CorpusIndexError(f"{where}: corrupt detector profile ({what})")

    raw, header, body = _unpack_blob(blob, _PROFILE_MAGIC, bad)
    try:
        n, size, chars = (int(header[k]) for k in ("n", "vocabulary", "chars"))
    except (ValueError, KeyError, TypeError, OverflowError) as exc:
        raise bad(f"header: {exc}") from exc
    if min(n, size, chars) < 0 or body + 16 * size + 12 * n != len(raw):
        raise bad("array lengths do not match the header")
    offset = body
    vocabulary = np.frombuffer(raw, dtype="<i8", count=size, offset=offset)
    priors = np.frombuffer(raw, dtype="<f8", count=size, offset=offset + 8 * size)
    offset += 16 * size
    tokens, start_deltas, lengths = (
        np.frombuffer(raw, dtype="<i4", count=n, offset=offset + 4 * n * i).astype(np.int64) for i in range(3))
    starts = np.cumsum(start_deltas)
    if n and (tokens.min() < 0 or tokens.max() >= size):
        raise bad("token outside the vocabulary")
    if n and (starts[0] < 0 or np.any(start_deltas[1:] < 0) or lengths.min() < 1 or starts[-1] + lengths[-1] > chars):
        raise bad("token offsets")
    if size and (vocabulary.min() < 0 or not np.all(np.isfinite(priors)) or priors.min() < 0):
        raise bad("vocabulary")
    ids = vocabulary[tokens]
    if tokens_only:
        return Profile(path=path, ids=tuple(ids.tolist()), starts=(), ends=(), priors={},
                       _cache={"ids": ids.astype(np.uint64)}), chars
    profile = Profile(path=path, ids=tuple(ids.tolist()), starts=tuple(starts.tolist()),
                      ends=tuple((starts + lengths).tolist()), priors=dict(zip(vocabulary.tolist(), priors.tolist())))
    return profile, chars
