"""A reference corpus index on disk: fingerprints of every public kernel, found again in milliseconds.

:func:`mleaudit.audit.similarity.compare` tokenizes every reference kernel on every call, which is fine for
the fifty top notebooks of a competition and hopeless for the hundreds of thousands Kaggle holds.
A corpus index does the tokenizing once (``mleaudit corpus build``), keeps what exact scoring
needs, and answers a query in two steps:

1. **Candidate retrieval** from an inverted index: fingerprint hash -> (reference, number of
   occurrences). Summing the postings of an agent file's hashes gives, for *every* reference at
   once, the exact number of agent fingerprint occurrences the reference shares (Dolos's
   ``leftCovered``) and of its own (``rightCovered``), hence the exact agent containment and
   (boilerplate aside) reference containment. References with
   ``max(agent_containment, reference_containment) >= min_containment`` are the candidates, so
   retrieval misses no pair above that threshold: recall is 1 by construction, not a sampling
   estimate.
2. **Exact scoring** of the candidates with the pair code of :func:`mleaudit.audit.similarity.compare`
   (:func:`mleaudit.audit.similarity.pairs.pair_report`) on the stored fingerprints, so every Dolos figure
   (similarity, containments, longest fragment, total overlap, fragments and their spans) equals
   what brute force reports for that pair.

On a large corpus only the first ``top`` candidates in report order get a pair report (default
:data:`DEFAULT_TOP`), which are brute force's first ``top`` pairs. The copy detector does not rank
by containment: the source of a partial copy often shares few of an agent file's structural
fingerprints while the forks of a popular kernel fill the first places. Its search is bounded by
its evidence instead (:meth:`CorpusIndex.compare`, since the ``seed_postings`` meta entry):

- every Python reference's tile seeds (its token 6-grams, as 25-bit values) are postings under
  their own code, so the references holding each seed of an agent file are known at once;
- :func:`upper_token_bits` bounds each agent token's bits under *any* reference's background
  (the detector's :func:`~mleaudit.audit.similarity.detect.token_bits` on a table whose n-gram
  frequencies are lowered by the most a leave-out set can remove), and :func:`evidence_bounds`
  sums it over the tokens the seeds a reference holds cover: the evidence of every tile chain
  is at most that, so a reference whose sum stays below the threshold's bits is excluded unread;
- the others, best bound first, are checked with :func:`window_bound` (the best window of the
  reference, each token worth the bits of the agent token a shared seed matches it with, each
  token outside every shared seed costing the reference gap of the chain; for many references
  at once from their seed locations, :func:`window_bounds`), then those that pass, best window
  first, with the detector's own evidence on that table and nothing left out
  (:meth:`_DetectorQuery.tile_bounds`: the pair's tiles and best chain), both upper bounds again,
  and scored exactly when the last one reaches the threshold.

Every reference brute force flags therefore is flagged through the index, with the same score.
With ``top``, the search of an agent file is exhaustive when at most four times ``bound_budget``
references pass the seed bound and at most ``bound_budget`` of them the window bound
(:data:`DEFAULT_BOUND_BUDGET`). Otherwise it is cut to a best effort (the window bound for the
4 x 64 best seed bounds, the tile bound for the 64 best windows) and reported in
:attr:`CorpusIndex.last_bound_scored` (``exhaustive`` false), which an audit turns into a
``similarity-incomplete`` gap. An index written before tile seeds were stored scores the
best candidate of up to :data:`DEFAULT_SOURCES` further sources instead.

The copy detector (:mod:`mleaudit.audit.similarity.detect`) runs on the same candidates and gives the
same ``score``, ``flagged`` and ``evidence_fragments`` as brute force over the same files. Its
background model is an n-gram model of the *whole* corpus with each pair's reference and its
near-duplicates left out, and every figure it needs is a sum over files, so the index stores
(since format version 2):

- per Python reference, its detector *profile* (lexical token ids, their offsets and prior
  bits; :func:`_encode_profile`);
- the corpus's n-gram table: each token n-gram's document frequency and each context's total
  and number of distinct continuations (tables ``ngrams`` and ``contexts``), kept exact by
  ``add`` (new files added, replaced and removed files subtracted);
- each reference's sampled 8-grams as postings under their own code, so a reference's
  near-duplicates are found from the postings at query time (and so always match the corpus as
  it is now); each segment's statistics keep the sample sizes.

A query fetches the table rows its agent files read, then subtracts the reference's and its
near-duplicates' profiles (:class:`mleaudit.audit.similarity.detect.AgentQuery`), exactly as
:class:`mleaudit.audit.similarity.detect.DetectionCorpus` does over the same files. A version-1 index has
none of this and is refused with a message to rebuild it.

Why not MinHash LSH. Candidate retrieval by MinHash LSH (datasketch ``MinHashLSH``) thresholds
the Jaccard index, which is low when a small agent file sits inside a big notebook (a 300-k-gram
file fully contained in a 3,000-k-gram notebook has Jaccard 0.1; at containment 0.3 it is 0.03).
``MinHashLSHEnsemble`` is built for containment, but it estimates containment from a sample of
128-256 minimum hashes and size partitions: on the synthetic corpus of
``benchmarks/corpus_index.py`` its recall at containment 0.3 was 0.87-0.88 (the audit needs 0.99),
while it returned about 40 % of the corpus as candidates, all of which still need scoring. It
must also be built in one go (no incremental add). The inverted index is exact, adds
incrementally, and its retrieval (one pass over the postings of the agent's hashes) is cheaper
than scoring the ensemble's candidates; so no MinHash signature is stored.

What is stored per reference for Dolos's figures (a *record*): the fingerprint hashes and
k-gram positions in document order, for each fingerprint the character offsets of its k-gram's
region (start of its first token, end of its last), the text's line starts and the notebook
cell map. Fragment spans
and "cell 3, line 2" locations are computed from these without the source text, so a query never
re-reads or re-tokenizes a reference. For the rare file whose token regions are not in document
order (trees recovered from syntax errors can be), the full token offsets are stored too. Also
stored: the corpus path, the sha256 of the file's bytes (re-adding an unchanged file is a no-op)
and of its code text (for the corpus digest, which equals :func:`mleaudit.audit.similarity.compare`'s).

Storage. By default the index is one SQLite file (a safe format: nothing in it is executed or
unpickled; numeric arrays are little-endian int32 blobs, zlib-compressed records with a size cap
on decompression, and every record is checked when read). With a Redis URL the data lives in
Redis through datasketch's storage layer (``datasketch.storage.ordered_storage`` with a
``storage_config`` of type ``redis``), so several machines can share and extend one index (the
n-gram table is four Redis hashes, changed with atomic increments); the local file then only
holds the format version and where the data is. The file records the
format version, the k-gram length and window, and the grammar versions; opening it with other
options or another grammar version is an error that says so.

Incremental add. ``add`` writes its references in *segments* of up to ``SEGMENT_DOCS``: their
records and, per hash, one postings entry for the segment. A changed file's old entry is
removed from its segment's postings and its n-grams from the table (so document frequencies
stay exact) and the new one is written. Re-adding an unchanged file is a
no-op.

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

Compaction. A query reads every postings entry of each agent hash: one per segment, so about
31 database rows per hash on a corpus of 250,000 notebooks. :meth:`CorpusIndex.compact`
(``mleaudit corpus compact``) merges the entries of each key into one, which ``add`` does by
itself when a key may have more than :data:`MAX_POSTING_ENTRIES` entries (so after any build of
more than a few segments). A merged entry keeps its ids as a *bitmap* over their range when that
is smaller than the id list: a hash held by a large share of the corpus (structural
fingerprints often are) then costs one bit per reference to store and to count rather than four
bytes and a scattered increment. Bitmap entries are what format version 3 adds; a version-2
index is read as it is and becomes version 3 when compacted.

Build speed. Worker processes index chunks of :data:`_CHUNK_FILES` files and sum the chunk's
n-grams before handing them over, so the parent merges one small table per chunk (and writes
the sum of many chunks with one statement per table); a segment's postings are cut from one
sorted array. The first ``add`` into an empty SQLite index (a build) writes through SQLite's
write-ahead log with ``synchronous = OFF`` and goes back to a rollback journal and
``synchronous = NORMAL`` at the end (:class:`_BulkWrites`); later adds keep the rollback journal
throughout. The stored layout does not depend on any of this.

Naming: a reference's *key* is its POSIX path relative to its corpus root (``owner/slug.ipynb``);
a *posting key* is a fingerprint hash qualified by the reference's language.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import multiprocessing
import os
import contextlib
import dataclasses
import re
import sqlite3
import threading
import time
import uuid
import zlib
from collections import OrderedDict
from dataclasses import dataclass
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping, Protocol, Sequence
from urllib.parse import quote, urlsplit

import numpy as np

from mleaudit.audit.errors import AuditError, ConfigError
from mleaudit.audit.model import Skipped
from mleaudit.audit.parsing import LANGUAGES
from mleaudit.audit.similarity import SimilarityOptions, SimilarityReport
from mleaudit.audit.similarity.comparison import decodings_of_pairs, ignore_sigint
from mleaudit.audit.similarity.corpus import (
    MAX_REFERENCE_BYTES,
    REFERENCE_SUFFIXES,
    TextDecoding,
    decode_reference_recorded,
    iter_reference_files,
    load_reference_corpus,
    read_reference_bytes,
    reference_id,
    reference_sort_key,
)
from mleaudit.audit.similarity import detect as _detect
from mleaudit.audit.similarity.bounds import (  # noqa: F401 - the bounds' public names, kept importable here
    SeedLocations,
    evidence_bounds,
    needed_bits,
    seed_table,
    upper_token_bits,
    window_bound,
    window_bounds,
)
from mleaudit.audit.similarity.detect import (
    MAX_SAMPLE_HOLDERS,
    NEAR_DUPLICATE_CONTAINMENT,
    PROFILE_SCHEME,
    AgentQuery,
    Evidence,
    NgramTable,
    Profile,
    boilerplate_mask,
    near_duplicate_members,
    profile_code,
    reference_evidence,
    token_bits,
)
from mleaudit.audit.similarity.fingerprint_index import FingerprintIndex, IndexedFile, Role
from mleaudit.audit.similarity.pairs import PairReport, pair_report
from mleaudit.audit.similarity.tokenize import TokenizedFile, offsets_spans, tokenize_text
from mleaudit.audit.similarity.winnow import HASH_MOD, _kgram_selection, fingerprint_tokens
from mleaudit.audit.units import CellRange, CodeUnit

__all__ = [
    "CORPUS_INDEX_FORMAT",
    "CORPUS_INDEX_VERSION",
    "READABLE_VERSIONS",
    "DEFAULT_BOUND_BUDGET",
    "DEFAULT_MIN_CONTAINMENT",
    "DEFAULT_SOURCES",
    "DEFAULT_TOP",
    "AddSummary",
    "CompactSummary",
    "CorpusIndex",
    "CorpusIndexError",
    "CorpusIndexInfo",
    "build_corpus_index",
    "create_corpus_index",
    "evidence_bounds",
    "load_corpus_index",
    "parse_storage",
    "upper_token_bits",
    "window_bound",
    "SeedLocations",
    "window_bounds",
]

logger = logging.getLogger(__name__)

#: Value of the ``format`` meta entry: what the file is.
CORPUS_INDEX_FORMAT = "mleaudit-corpus-index"
#: Bumped whenever the stored layout changes; versions not in :data:`READABLE_VERSIONS` are
#: refused with a message. Version 2 added what the copy detector needs (profiles, n-gram
#: tables, near-duplicate samples); version 3 lets a postings entry hold its ids as a bitmap
#: (written by compaction, :meth:`CorpusIndex.compact`).
CORPUS_INDEX_VERSION = 3
#: Versions this code reads. A version-2 index is a version-3 index without bitmap entries; it
#: becomes version 3 when it is compacted.
READABLE_VERSIONS = (2, 3)
#: Candidates need ``max(agent_containment, reference_containment)`` at least this high. Low on
#: purpose: exact scoring then decides, and partial copies of a few cells can have an agent
#: containment near 0.1.
DEFAULT_MIN_CONTAINMENT = 0.05
#: Pairs scored exactly per agent unit by :meth:`CorpusIndex.compare` unless told otherwise:
#: structural fingerprints are generic, so on a large corpus tens of thousands of references pass
#: any containment threshold that partial copies also pass, and scoring all of them takes minutes.
#: Five keeps one agent run of a few files under a second on a quarter of a million notebooks
#: (``benchmarks/corpus_index.py``); the further sources below keep the flagged copies that a
#: larger ``top`` finds.
DEFAULT_TOP = 5
#: Further sources the copy detector scores per agent unit, past the first ``top`` candidates
#: (:meth:`CorpusIndex.compare`).
DEFAULT_SOURCES = 3
#: Candidates past ``top`` looked at for further sources (the forks of one popular kernel can
#: fill hundreds of places).
_SOURCE_WINDOW = 1000
#: References per segment written by one flush of ``add``.
SEGMENT_DOCS = 8192
#: ``add`` merges the postings (:meth:`CorpusIndex.compact`) when a key may have more entries
#: than this: a query reads every entry of each agent hash, one database row each.
MAX_POSTING_ENTRIES = 4
#: Posting keys merged per transaction by :meth:`CorpusIndex.compact`.
_COMPACT_KEYS = 2000
#: Tokenizer whose fingerprints the index stores (Dolos 3.5.1 node-type tokens).
TOKENIZER_SCHEME = "dolos-3.5.1-node-types"

#: Posting keys are ``hash + code * _KEY_STRIDE`` with the language's code (hashes < 2**25).
_KEY_STRIDE = 1 << 25
#: Posting keys of the detector's sampled 8-grams (25-bit values) use this code, past any
#: language's, so the near-duplicates of a reference are found from the postings.
_SAMPLE_CODE = 1 << 10
#: Posting keys of the detector's tile seeds (every token 6-gram of a reference, as 25-bit
#: values) use this code: the references an agent file can share a tile with, for the bound of
#: :meth:`CorpusIndex.compare` (indexes written since the ``seed_postings`` meta entry).
_SEED_CODE = _SAMPLE_CODE + 1
#: The most references :meth:`CorpusIndex.compare` checks with the tile bound per agent unit for
#: an exhaustive search with ``top`` (the highest window bounds). Enough for every agent file of the
#: shared real runs and partial copies against the 204 shared notebooks (at most 196 pass the window
#: bound), so a corpus of a competition's kernels is searched exhaustively; on a larger one a unit
#: past the budget is searched best-effort and reported (``last_bound_scored``; an audit's
#: ``similarity-incomplete`` gap).
DEFAULT_BOUND_BUDGET = 256
#: With ``bound_budget``, references checked with the window bound per agent unit: this many
#: times the budget (the window bound costs a few array operations per reference, the tile bound
#: a tiling).
_WINDOW_BUDGET_FACTOR = 4
#: Tile bounds per agent unit once its search cannot be exhaustive within ``bound_budget`` (and
#: four times as many window bounds): the search is then reported as cut whatever it checks.
_CUT_CHECKS = 64
#: Seed locations (:class:`SeedLocations`, 16 bytes each) kept between the agent units of one
#: :meth:`CorpusIndex.compare` for the window bound: about the seeds of 1,000 notebooks.
_SEED_LOCATIONS = 4_000_000
#: References whose profiles are read at once when the evidence bound asks for scoring.
_BOUND_BATCH = 256
#: Seed values held by more references than this are not listed at query time: their tokens
#: count in every reference's bound (see :func:`_evidence_bounds`).
_SEED_HOLDERS = 4096
_PROFILE_MAGIC = b"MLDP\x01"
#: n-gram rows collected from added files before they are written (about 24 bytes each).
_GRAM_BUFFER = 2_000_000
#: Files a worker indexes per task (their n-grams are summed before they reach the parent).
_CHUNK_FILES = 32
#: Token-only profiles kept between queries of one open index (about 50 kB each with their
#: n-gram sets).
_TOKEN_PROFILE_CACHE = 1024
#: Families (a reference and its forks, :meth:`_DetectorQuery.family`) kept between queries of
#: one open index, and the most ids they may hold together (int64: 32 MB).
_FAMILY_CACHE = 4096
_FAMILY_IDS = 4_000_000
#: Sampled 8-gram postings kept between queries of one open index, and the most bytes their
#: ids may take together (80 MB).
_SAMPLE_HOLDER_CACHE = 65536
_SAMPLE_HOLDER_BYTES = 80_000_000
#: Sampled values held by up to this share of the corpus count in the test for a reference's
#: forks when further sources are chosen (values of common code say nothing about forks).
_FAMILY_HOLDERS = 0.1
_SQLITE_HEADER = b"SQLite format 3\x00"
_RECORD_MAGIC = b"MLCR\x01"
#: What a record's ``encoding`` may be (Python's codec names) and how long its decoder's note.
_ENCODING_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,39}")
_MAX_NOTE_CHARS = 500
#: A record never decompresses past this (a hostile index cannot exhaust memory).
_MAX_RECORD_BYTES = 256 * 1024 * 1024
#: SQLite's limit on bound parameters is 32766 in current versions; stay well below.
_SQL_CHUNK = 900
_REDIS_PASSWORD_ENV = "MLEAUDIT_REDIS_PASSWORD"
#: Seconds a writer waits for another writer of the same index before saying so (it then waits on).
_LOCK_NOTICE = 2.0
#: Lease of the Redis writer lock, renewed every third of it while the writer works.
_REDIS_LOCK_LEASE = 60.0

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


class CorpusIndexError(AuditError):
    """A corpus index cannot be created, opened or used: not an index, another format version,
    other options, a corrupt record, an unreachable Redis. The message names the file."""


# -- storage configuration ---------------------------------------------------------------------


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


# -- binary layouts ----------------------------------------------------------------------------


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
    except (ValueError, KeyError, TypeError) as exc:
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
    except (ValueError, KeyError, TypeError) as exc:
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


def _line_skeleton(lines: Sequence[int], chars: int) -> str:
    """A text of ``chars`` spaces with a newline before each line start: offsets into it give
    the same lines and columns as offsets into the real text (which the index does not keep)."""
    skeleton = bytearray(b" " * chars)
    for start in lines[1:]:
        if 0 < start <= chars:
            skeleton[start - 1] = 10
    return skeleton.decode("ascii")


def _text_sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", errors="surrogatepass")).hexdigest()


def _grammar_versions() -> dict[str, str]:
    versions = {"tree-sitter": _dist_version("tree-sitter")}
    for name, (module, _) in sorted(LANGUAGES.items()):
        versions[name] = _dist_version(module.replace("_", "-"))
    return versions


def _fingerprint_scheme() -> dict[str, Any]:
    """What stored fingerprints and detector data depend on: an index made under another scheme
    must be rebuilt."""
    return {"tokenizer": TOKENIZER_SCHEME, "grammars": _grammar_versions(), "detector": PROFILE_SCHEME}


def _dist_version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "unknown"


# -- fingerprinting references (runs in worker processes) --------------------------------------

#: What a worker returns per file: ("indexed", key, sha256, text_sha256, language,
#: n_fingerprints, record, unique hashes (int64 bytes), their counts (int64 bytes), detector
#: data), ("unchanged", key) or ("skipped", key, reason). The detector data of a Python reference
#: is (profile record, its sampled 8-grams (int64 bytes)); other languages have None. The
#: references' n-grams are not in the results: a worker sums them over its chunk of files
#: (:func:`_index_chunk`).
_Result = tuple


def _seed_values(profile: Profile) -> np.ndarray:
    """The distinct 25-bit values of a profile's tile seeds (its token 6-grams,
    :meth:`~mleaudit.audit.similarity.detect.Profile.seed_keys`): the top bits of each key, so two seeds
    may share a value (a reference then reads as holding a seed it lacks: a looser bound, never a
    wrong one)."""
    keys = profile.seed_keys()
    if not keys.size:
        return np.zeros(0, np.int64)
    return np.unique((keys.view(np.uint64) >> np.uint64(64 - 25)).astype(np.int64))


def _detector_data(unit: CodeUnit, key: str) -> tuple[bytes, bytes, bytes, np.ndarray, np.ndarray] | None:
    """What the copy detector stores of one reference (Python only; it lexes Python): its
    profile record, its sampled 8-grams and its seed values (int64 bytes), and its distinct
    n-gram keys with their context keys (for the corpus's n-gram table)."""
    if unit.language != "python":
        return None
    profile = profile_code(unit.text, key)
    grams, contexts = profile.grams()
    return (_encode_profile(profile, len(unit.text)), profile.sample().astype(np.int64).tobytes(),
            _seed_values(profile).tobytes(), grams.astype(np.int64), contexts.astype(np.int64))


def _fingerprint_unit(unit: CodeUnit, k: int, w: int, decoding: TextDecoding | None = None
                      ) -> tuple[bytes, np.ndarray, int]:
    """Tokenize and winnow one reference: its record, fingerprint hashes (document order) and count."""
    tokens = tokenize_text(unit.text, unit.language, unit.path)
    # The tokenizer's own token hashes and the array form of winnowing: what
    # FingerprintIndex.add_reference selects for brute force, without building a Fingerprint
    # object per k-gram or hashing the token strings again.
    positions, values = _kgram_selection(tokens.token_hashes, k, w)
    hashes = np.asarray(values, dtype=np.int64)
    starts, ends = tokens.starts, tokens.ends
    # The tokenizer already knows whether its regions are in document order and where lines
    # start; ask it rather than redo the work on every reference.
    ordered = tokens.ordered_regions
    record = _encode_record(
        language=unit.language,
        source=unit.source,
        hashes=hashes,
        kgram_starts=np.asarray(positions, dtype=np.int64),
        span_starts=np.array([starts[s] for s in positions], dtype=np.int64),
        span_ends=np.array([ends[s + k - 1] for s in positions], dtype=np.int64),
        lines=tokens.line_offsets,
        cells=unit.cells,
        # Regions out of document order: a fragment's span is then the min/max over its tokens,
        # which needs every token's offsets.
        token_starts=None if ordered else starts,
        token_ends=None if ordered else ends,
        decoding=decoding,
    )
    return record, hashes, len(positions)


def _index_file(path: str, key: str, max_bytes: int, k: int, w: int, known_sha: str
                ) -> tuple[_Result, tuple[np.ndarray, np.ndarray] | None]:
    """Read, hash, decode and fingerprint one file (``known_sha``: sha256 of the indexed
    version, or ""): its result and, for a Python reference, its distinct n-grams and their
    contexts."""
    data = read_reference_bytes(path, key, max_bytes=max_bytes)
    if isinstance(data, Skipped):
        return ("skipped", key, data.reason), None
    sha = hashlib.sha256(data).hexdigest()
    if sha == known_sha:
        return ("unchanged", key), None
    unit, decoding = decode_reference_recorded(data, key)
    if isinstance(unit, Skipped):
        return ("skipped", key, unit.reason), None
    try:
        record, hashes, n = _fingerprint_unit(unit, k, w, decoding)
        detector = _detector_data(unit, key)
    except Exception as exc:  # noqa: BLE001 - one hostile file must not stop a corpus build
        logger.warning("cannot fingerprint %s: %s", key, exc)
        return ("skipped", key, f"cannot tokenize ({type(exc).__name__}: {str(exc)[:200]})"), None
    unique, counts = np.unique(hashes, return_counts=True)
    result = ("indexed", key, sha, _text_sha256(unit.text), unit.language, n, record,
              unique.astype(np.int64).tobytes(), counts.astype(np.int64).tobytes(),
              None if detector is None else detector[:3])
    return result, None if detector is None else detector[3:]


def _sum_grams(keys: Sequence[np.ndarray], contexts: Sequence[np.ndarray], deltas: Sequence[np.ndarray]
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Document-frequency changes summed per n-gram key.

    Parameters
    ----------
    keys, contexts, deltas : sequences of int64 arrays
        Aligned parts: n-gram keys, the context key of each, and the change of its document
        frequency (+1 per file that adds it, -1 per file that takes it out, or sums of these).

    Returns
    -------
    tuple of ndarray
        Sorted distinct keys whose change is not zero, their contexts and their changes.
    """
    if not keys:
        empty = np.zeros(0, np.int64)
        return empty, empty, empty
    all_keys = np.concatenate(keys)
    all_contexts = np.concatenate(contexts)
    all_deltas = np.concatenate(deltas)
    order = np.argsort(all_keys, kind="stable")
    sorted_keys = all_keys[order]
    first = np.flatnonzero(np.concatenate(([True], sorted_keys[1:] != sorted_keys[:-1]))) if sorted_keys.size else \
        np.zeros(0, np.int64)
    summed = np.add.reduceat(all_deltas[order], first) if first.size else np.zeros(0, np.int64)
    unique = sorted_keys[first]
    # An n-gram's key is a hash of its context's key and its last token: one context per key.
    context = all_contexts[order][first]
    changed = summed != 0
    return unique[changed], context[changed], summed[changed].astype(np.int64)


def _index_chunk(task: tuple) -> tuple[list[_Result], bytes, bytes, bytes]:
    """Worker: index a chunk of files (``task`` = ((path, key, sha256 of the indexed version or
    ""), ...), max_bytes, k, window, the index's languages). Returns the files' results in
    order and the n-grams of the chunk's Python references summed (keys, contexts, counts as
    int64 bytes), so the parent merges one small table per chunk rather than one per file."""
    files, max_bytes, k, w, languages = task
    results: list[_Result] = []
    keys: list[np.ndarray] = []
    contexts: list[np.ndarray] = []
    for path, key, known_sha in files:
        result, grams = _index_file(path, key, max_bytes, k, w, known_sha)
        results.append(result)
        # A reference in a language the index was not built for is skipped by the parent.
        if grams is not None and result[4] in languages:
            keys.append(grams[0])
            contexts.append(grams[1])
    unique, context, counts = _sum_grams(keys, contexts, [np.ones(g.size, np.int64) for g in keys])
    return results, unique.tobytes(), context.tobytes(), counts.tobytes()


# -- storage backends --------------------------------------------------------------------------


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


def _wait_notice(where: str) -> None:
    logger.warning("%s: another process is writing to this corpus index; waiting for it to finish", where)


def _lock_file_descriptor(lock_path: str) -> int:
    """Open ``lock_path`` and hold an exclusive ``flock`` on it; the descriptor.

    The holder removes the file before it lets go (so no lock file stays beside the index). A
    waiter that then gets the lock holds it on a removed file: it sees that the path no longer
    names the file it locked and starts again on the new one.
    """
    import fcntl

    flags = os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    while True:
        fd = os.open(lock_path, flags, 0o644)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                _wait_notice(lock_path[: -len(".lock")])
                fcntl.flock(fd, fcntl.LOCK_EX)
            held = os.fstat(fd)
            try:
                current = os.stat(lock_path, follow_symlinks=False)
            except FileNotFoundError:
                current = None
            if current is not None and (current.st_dev, current.st_ino) == (held.st_dev, held.st_ino):
                return fd
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)


@contextlib.contextmanager
def _file_writer_lock(path: Path) -> Iterator[None]:
    """Hold ``<index>.lock``: an OS file lock (released if the process dies), removed when let go."""
    lock_path = f"{path}.lock"
    try:
        import fcntl  # noqa: F401 - POSIX only
    except ImportError:  # elsewhere the lock file stays in place between writers
        from filelock import FileLock

        lock = FileLock(lock_path)
        with lock:
            yield
        return
    try:
        fd = _lock_file_descriptor(lock_path)
    except OSError as exc:
        raise CorpusIndexError(f"{path}: cannot take the writer lock {lock_path} ({exc.strerror or exc})") from exc
    try:
        yield
    finally:
        try:
            os.unlink(lock_path)
        except OSError:
            pass
        os.close(fd)


def _chunks(items: Sequence[Any], size: int = _SQL_CHUNK) -> Iterator[Sequence[Any]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


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


# -- opening index files -----------------------------------------------------------------------


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


@dataclass(frozen=True, slots=True, kw_only=True)
class CompactSummary:
    """What one compaction did (:meth:`CorpusIndex.compact`).

    Attributes
    ----------
    keys : int
        Posting keys that had more than one entry, now one each.
    entries : int
        Entries those keys had before.
    bitmaps : int
        Merged entries written with their ids as a bitmap.
    seconds : float
        Wall time.
    """

    keys: int = 0
    entries: int = 0
    bitmaps: int = 0
    seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {"keys": self.keys, "entries": self.entries, "bitmaps": self.bitmaps, "seconds": self.seconds}


@dataclass(frozen=True, slots=True, kw_only=True)
class AddSummary:
    """What one ``build`` or ``add`` did.

    Attributes
    ----------
    added, replaced, unchanged : int
        New references; references whose file changed (old entry removed, new one written);
        files identical (sha256) to their indexed entry, left as they were.
    removed : int
        Indexed references whose file is now unusable (listed in ``skipped`` instead).
    skipped : tuple of Skipped
        Files of this call that were left out, with the reason.
    seconds : float
        Wall time (compaction included).
    compacted : CompactSummary or None
        The compaction the call ended with, if any (:data:`MAX_POSTING_ENTRIES`).
    """

    added: int = 0
    replaced: int = 0
    unchanged: int = 0
    removed: int = 0
    skipped: tuple[Skipped, ...] = ()
    seconds: float = 0.0
    compacted: CompactSummary | None = None

    @property
    def files(self) -> int:
        """Files looked at (every outcome)."""
        return self.added + self.replaced + self.unchanged + self.removed + len(self.skipped)

    def to_dict(self) -> dict[str, Any]:
        return {
            "added": self.added,
            "replaced": self.replaced,
            "unchanged": self.unchanged,
            "removed": self.removed,
            "skipped": [s.to_dict() for s in self.skipped],
            "seconds": self.seconds,
            "compacted": None if self.compacted is None else self.compacted.to_dict(),
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class CorpusIndexInfo:
    """A corpus index at a glance (``mleaudit corpus info``).

    Attributes
    ----------
    path : str
        The index file.
    format_version : int
    storage : str
        ``"sqlite"`` or the Redis URL (without credentials).
    options : dict
        ``kgram_length`` and ``kgrams_in_window`` the fingerprints were made with.
    fingerprint_scheme : dict
        Tokenizer and grammar versions.
    references, skipped, segments : int
        Indexed references; files listed as skipped; postings segments (one per flush of ``add``).
    languages : tuple of str
        Grammars of the indexed references.
    roots : tuple of str
        Corpus folders given to ``build`` and ``add`` (absolute, as recorded).
    boilerplate : tuple of str
        Boilerplate files whose fingerprints are ignored.
    corpus_digest : str
        Equals :attr:`mleaudit.audit.similarity.SimilarityReport.corpus_digest` of a brute-force
        comparison with the same single corpus folder and boilerplate.
    created_at, updated_at, tool_version : str
    size_bytes : int or None
        Size of the index file (SQLite storage only).
    ngrams : int
        Rows of the copy detector's n-gram table (distinct token n-grams of the corpus).
    posting_entries : int
        The most postings entries one key may have: 1 after :meth:`CorpusIndex.compact`, one
        more per segment written since.
    """

    path: str
    format_version: int
    storage: str
    options: dict[str, Any]
    fingerprint_scheme: dict[str, Any]
    references: int
    skipped: int
    segments: int
    languages: tuple[str, ...]
    roots: tuple[str, ...]
    boilerplate: tuple[str, ...]
    corpus_digest: str
    created_at: str
    updated_at: str
    tool_version: str
    size_bytes: int | None
    ngrams: int = 0
    posting_entries: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "format_version": self.format_version,
            "storage": self.storage,
            "options": dict(self.options),
            "fingerprint_scheme": dict(self.fingerprint_scheme),
            "references": self.references,
            "skipped": self.skipped,
            "segments": self.segments,
            "languages": list(self.languages),
            "roots": list(self.roots),
            "boilerplate": list(self.boilerplate),
            "corpus_digest": self.corpus_digest,
            "created_at": self.created_at,
            "updated_at": self.updated_at,
            "tool_version": self.tool_version,
            "size_bytes": self.size_bytes,
            "ngrams": self.ngrams,
            "posting_entries": self.posting_entries,
        }


def _guarded(method: Callable) -> Callable:
    """Report storage failures (a damaged SQLite file, a Redis outage) as :class:`CorpusIndexError`."""

    @functools.wraps(method)
    def wrapper(self: "CorpusIndex", *args: Any, **kwargs: Any) -> Any:
        try:
            return method(self, *args, **kwargs)
        except sqlite3.Error as exc:
            raise CorpusIndexError(f"{self.path}: storage error ({exc})") from exc
        except Exception as exc:
            if type(exc).__module__.split(".")[0] == "redis":
                raise CorpusIndexError(f"{self.path}: Redis error ({exc})") from exc
            raise

    return wrapper


class _StoredTokens:
    """Stands in for a reference's :class:`TokenizedFile` in the pair code: it answers
    ``tokens_span`` for the k-gram bounds of stored fingerprints, from stored offsets."""

    __slots__ = ("path", "language", "_spans", "_start_at", "_end_at", "_token_starts", "_token_ends", "_lines",
                 "chars", "_text", "decoding")

    def __init__(self, path: str, record: _Record, kgram_length: int) -> None:
        self.path = path
        self.language = record.language
        self.decoding = record.decoding  # (encoding, note) of a file that was not plain UTF-8
        self._lines = record.lines
        self.chars: int | None = None  # the text's length, known once the detector profile is read
        self._text: str | None = None
        # offsets_span only needs the path and the line starts.
        self._spans = TokenizedFile.from_arrays(path=path, language=record.language, text="", line_offsets=record.lines)
        starts = record.kgram_starts.tolist()
        self._start_at = dict(zip(starts, record.span_starts.tolist()))
        self._end_at = dict(zip((s + kgram_length - 1 for s in starts), record.span_ends.tolist()))
        self._token_starts = record.token_starts
        self._token_ends = record.token_ends

    def tokens_span(self, first: int, last: int):
        """The span from the start of token ``first`` to the end of token ``last`` (k-gram bounds)."""
        if self._token_starts is not None:
            start = min(self._token_starts[first : last + 1])
            end = max(self._token_ends[first : last + 1])
        else:
            try:
                start, end = self._start_at[first], self._end_at[last]
            except KeyError as exc:
                raise CorpusIndexError(f"{self.path}: token {exc} is not a stored k-gram bound") from exc
        return self._spans.offsets_span(start, end)

    def tokens_spans(self, firsts: Sequence[int], lasts: Sequence[int]) -> list:
        """:meth:`tokens_span` of each ``(first, last)``, line numbers looked up at once."""
        if self._token_starts is not None:
            return [self.tokens_span(first, last) for first, last in zip(firsts, lasts)]
        try:
            starts = [self._start_at[first] for first in firsts]
            ends = [self._end_at[last] for last in lasts]
        except KeyError as exc:
            raise CorpusIndexError(f"{self.path}: token {exc} is not a stored k-gram bound") from exc
        return offsets_spans(self.path, self._lines, starts, ends)

    @property
    def text(self) -> str:
        """A stand-in for the text with its newlines where they are (:func:`_line_skeleton`), for
        spans made from character offsets (the detector's evidence fragments)."""
        if self._text is None:
            self._text = _line_skeleton(self._lines, self.chars if self.chars is not None else self._lines[-1])
        return self._text


class _DetectorQuery:
    """The copy detector over an index, for one :meth:`CorpusIndex.compare` call.

    The background of a pair is the whole indexed corpus with the reference and its
    near-duplicates subtracted, as :class:`mleaudit.audit.similarity.detect.DetectionCorpus` makes it over
    the same files: the n-gram table rows the agent files read are fetched once, the
    near-duplicates of a reference are found from the sampled 8-grams' postings, and every
    profile is read once.
    """

    def __init__(self, index: "CorpusIndex", agents: Sequence[Profile], sample_sizes: np.ndarray) -> None:
        self._index = index
        self._backend = index._open_backend()
        self._sample_sizes = sample_sizes
        self.queries = [AgentQuery(agent) for agent in agents]
        gram_parts = [q.keys()[0] for q in self.queries]
        context_parts = [q.keys()[1] for q in self.queries]
        gram_keys = np.unique(np.concatenate(gram_parts)) if gram_parts else np.zeros(0, np.int64)
        context_keys = np.unique(np.concatenate(context_parts)) if context_parts else np.zeros(0, np.int64)
        found, counts = self._backend.gram_rows(gram_keys)
        context_found, totals, kinds = self._backend.context_rows(context_keys)
        self.table = NgramTable(found, counts, context_found, totals, kinds)
        self.boilerplate = index._boilerplate_profiles()
        self._profiles: dict[int, tuple[Profile, int] | None] = {}
        self._left_out: dict[int, Profile] = {}
        self._holders: dict[int, tuple[int, tuple[_Posting, ...] | None]] = {}
        self._members: dict[int, tuple[int, ...]] = {}
        self._families = index._families
        self._plain: dict[int, tuple[Profile, NgramTable, np.ndarray]] = {}
        self._seed_tables: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        # references (by id, their slot) whose seed locations are kept, see window_bounds
        self._locations: tuple[dict[int, int], SeedLocations] = ({}, SeedLocations([]))
        self._windows: dict[int, dict[int, float]] = {}  # per agent unit: window bound per reference

    def profiles(self, docs: Iterable[int], paths: Mapping[int, str] | None = None) -> dict[int, tuple[Profile, int]]:
        """Profile and text length of each doc the detector reads (decoded once)."""
        wanted = [doc for doc in docs if doc not in self._profiles]
        if wanted:
            blobs = self._backend.profiles(wanted)
            names = dict(paths or {})
            missing = [doc for doc in blobs if doc not in names]
            if missing:
                names.update(self._backend.paths(missing))
            for doc in wanted:
                blob = blobs.get(doc)
                if blob is None:
                    self._profiles[doc] = None
                    continue
                path = names.get(doc, str(doc))
                self._profiles[doc] = _decode_profile(blob, path, f"{self._index.path}: {path}")
        return {doc: self._profiles[doc] for doc in docs if self._profiles.get(doc) is not None}  # type: ignore[misc]

    def token_profiles(self, docs: Sequence[int]) -> dict[int, Profile]:
        """Token-only profiles of ``docs`` (full ones when read; docs without a profile are
        left out)."""
        cache = self._index._token_profiles
        for doc in docs:
            if doc not in self._left_out and doc in cache:
                self._left_out[doc] = cache[doc]
                cache.move_to_end(doc)
        wanted = [doc for doc in docs if doc not in self._left_out and self._profiles.get(doc) is None]
        if wanted:
            blobs = self._backend.profiles(wanted)
            names = self._backend.paths(list(blobs))
            for doc, blob in blobs.items():
                path = names.get(doc, str(doc))
                profile = _decode_profile(blob, path, f"{self._index.path}: {path}", tokens_only=True)[0]
                self._left_out[doc] = cache[doc] = profile
            while len(cache) > _TOKEN_PROFILE_CACHE:
                cache.popitem(last=False)
        out = {}
        for doc in docs:
            full = self._profiles.get(doc)
            if full is not None:
                out[doc] = full[0]
            elif doc in self._left_out:
                out[doc] = self._left_out[doc]
        return out

    def left_out(self, docs: Sequence[int]) -> list[Profile]:
        """Token-only profiles of the files left out of a background (full ones when read)."""
        found = self.token_profiles(docs)
        return [found[doc] for doc in docs if doc in found]

    def distinct_sources(self, chosen: Sequence[int], more: Sequence[int], limit: int) -> list[int]:
        """Up to ``limit`` of ``more`` (in their order) that are near-duplicates neither of a
        chosen reference nor of each other: the next best reference of each further source."""
        if limit <= 0 or not more:
            return []
        excluded = np.zeros(self._sample_sizes.size, dtype=bool)
        for doc in chosen:
            # forks of a chosen reference are mostly forks of the one before it too
            if not excluded[doc]:
                excluded[self.family(doc)] = True
        found: list[int] = []
        for doc in more:
            if excluded[doc]:
                continue
            family = self.family(doc)
            if not family.size:
                continue
            found.append(doc)
            excluded[family] = True
            if len(found) == limit:
                break
        return found

    def family(self, doc: int) -> np.ndarray:
        """``doc`` and every reference that is a near-duplicate of it, as ids: one holds at least
        :data:`~mleaudit.audit.similarity.detect.NEAR_DUPLICATE_CONTAINMENT` of the other's sampled
        8-grams (the detector's test for forks, here over the values held by up to 10 % of the
        corpus rather than 512 references, the other file's share scaled to the counted
        values, and without the detector's cap on the number of forks, so that the forks of a
        popular kernel are found). Empty for a reference without a sample (a few tokens: no
        source of its own)."""
        found = self._families.get(doc)
        if found is not None:
            self._families.move_to_end(doc)
        if found is None:
            profile = self.token_profiles([doc]).get(doc)
            sample = profile.sample() if profile is not None else np.zeros(0, np.int64)
            cap = max(MAX_SAMPLE_HOLDERS, int(_FAMILY_HOLDERS * self._sample_sizes.size))
            size = self._sample_sizes.size
            # the values held by at least one reference live in this query's statistics
            held = [entries for entries in self._sample_postings(sample, cap).values()
                    if any(_first_id(posting) < size for posting in entries)] if sample.size else []
            found = np.array([doc] if sample.size else [], dtype=np.int64)
            if held:
                # counting by id (ids are below the statistics' size), bitmaps without listing
                # their ids: faster than sorting the holders of common values, which run to a
                # large share of the corpus
                counts = _count_ids([(entries, 1) for entries in held], size,
                                    f"{self._index.path}: postings of a sampled value")
                others = np.flatnonzero(counts)
                common = counts[others]
                # only the counted share of each sample can be held in common
                counted = len(held) / sample.size
                theirs = self._sample_size(others) * counted
                near = (common >= NEAR_DUPLICATE_CONTAINMENT * len(held)) | (
                    (theirs > 0) & (common >= NEAR_DUPLICATE_CONTAINMENT * theirs))
                found = np.union1d(found, others[near])
            # a family depends on the corpus only: kept for later queries, the oldest dropped
            self._families[doc] = found
            self._index._family_ids += found.size
            while len(self._families) > _FAMILY_CACHE or self._index._family_ids > _FAMILY_IDS:
                self._index._family_ids -= self._families.popitem(last=False)[1].size
        return found

    def _holders_of(self, values: np.ndarray, cap: int = MAX_SAMPLE_HOLDERS) -> dict[int, np.ndarray]:
        """``{value: ids of the references whose sample holds it}`` for the sampled 8-gram
        ``values`` held by 1 to ``cap`` references (ids live in this query's statistics; values
        with none are left out). Values held by more are left out without reading their postings
        (the detector's near-duplicate test ignores values held by more than MAX_SAMPLE_HOLDERS
        references; common code is held by much of the corpus)."""
        size = self._sample_sizes.size
        found = {}
        for value, entries in self._sample_postings(values, cap).items():
            where = f"{self._index.path}: postings of sample {value}"
            held = np.concatenate([posting.ids(where) for posting in entries])
            # ids past the statistics read for this query were added since; not live here
            held = held[held < size]
            if held.size:
                found[value] = held
        return found

    def _sample_postings(self, values: np.ndarray, cap: int) -> dict[int, tuple[_Posting, ...]]:
        """``{value: its postings entries (ids only)}`` for the sampled 8-gram ``values`` held by 1
        to ``cap`` references, in the order of ``values``; the entries of the others are not read.
        Kept between queries (up to :data:`_SAMPLE_HOLDER_CACHE` values and
        :data:`_SAMPLE_HOLDER_BYTES` of ids)."""
        cache = self._index._sample_holders
        wanted: list[int] = []
        for value in values.tolist():
            known = self._holders.get(value)
            if known is None and value in cache:
                known = self._holders[value] = cache[value]
                cache.move_to_end(value)
            if known is None or (known[1] is None and known[0] <= cap):
                wanted.append(value)
        if wanted:
            code = _SAMPLE_CODE * _KEY_STRIDE
            # one read gives each value's holder count and, when within the cap, its entries
            fetched = self._backend.postings_within([v + code for v in wanted], cap)
            for value in wanted:
                df, entries = fetched.get(value + code, (0, ()))
                if entries is not None:
                    entries = tuple(entries)
                    self._index._sample_holder_bytes += sum(len(posting.docs) for posting in entries)
                self._holders[value] = cache[value] = (df, entries)
                cache.move_to_end(value)
            # a value of common code is held by a large share of the corpus: bound the ids kept
            while cache and (len(cache) > _SAMPLE_HOLDER_CACHE
                             or self._index._sample_holder_bytes > _SAMPLE_HOLDER_BYTES):
                _, dropped = cache.popitem(last=False)[1]
                self._index._sample_holder_bytes -= sum(len(posting.docs) for posting in dropped or ())
        found = {}
        for value in values.tolist():
            df, entries = self._holders[value]
            if entries and df <= cap:
                found[value] = entries
        return found

    def _sample_size(self, docs: np.ndarray) -> np.ndarray:
        inside = (docs >= 0) & (docs < self._sample_sizes.size)
        return np.where(inside, self._sample_sizes[np.where(inside, docs, 0)], 0)

    def members(self, doc: int, profile: Profile) -> tuple[int, ...]:
        """The reference and its near-duplicates in the index."""
        found = self._members.get(doc)
        if found is None:
            found = near_duplicate_members(doc, profile.sample(), self._holders_of, self._sample_size)
            self._members[doc] = found
        return found

    def bounds(self, agent: int, live: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
        """Upper bounds of the evidence of agent file number ``agent`` against every reference
        (:func:`evidence_bounds` over :func:`upper_token_bits` and the seed postings).

        Parameters
        ----------
        agent : int
        live : ndarray of bool
            Per reference id, whether it is indexed and read by the detector.

        Returns
        -------
        common : float
            The bound of every live reference not in ``docs``.
        docs, bounds : ndarray
            Live references holding a seed of the agent file that few references hold, and their
            bounds.
        """
        query = self.queries[agent]
        upper = upper_token_bits(query.agent, self.table)
        keys = query.agent.seed_keys()
        if not keys.size:
            return 0.0, np.zeros(0, np.int64), np.zeros(0)
        values = (keys.view(np.uint64) >> np.uint64(64 - 25)).astype(np.int64)
        code = _SEED_CODE * _KEY_STRIDE
        unique = np.unique(values).tolist()
        fetched = self._backend.postings_within([value + code for value in unique], _SEED_HOLDERS)
        holders: dict[int, np.ndarray | None] = {}
        size = live.size
        for value in unique:
            df, entries = fetched.get(value + code, (0, []))
            if entries is None:
                holders[value] = None
                continue
            if not entries:
                continue
            where = f"{self._index.path}: postings of seed {value}"
            ids = np.concatenate([posting.ids(where) for posting in entries]).astype(np.int64)
            ids = ids[(ids >= 0) & (ids < size)]
            holders[value] = ids[live[ids]]
        return evidence_bounds(upper, values, holders)

    def tile_bounds(self, agent: int, docs: Sequence[int], needed: float = 0.0) -> dict[int, float]:
        """Tighter upper bounds of the evidence of agent file number ``agent`` against ``docs``:
        the detector's own evidence (:func:`~mleaudit.audit.similarity.detect.reference_evidence`: the
        tiles of the pair and their best chain) with nothing left out, on the table and agent
        profile of :func:`upper_token_bits`. The chain's value only grows with its tokens' bits,
        so it bounds the evidence under any leave-out set. A reference whose
        :func:`window_bound` (cheaper, looser) stays below ``needed`` bits gets that one instead.
        References without a profile are left out."""
        plain = self._plain.get(agent)
        if plain is None:
            agent_profile = self.queries[agent].agent
            stripped = dataclasses.replace(agent_profile, literals=frozenset(), _cache={})
            table = self.table
            most = int(getattr(_detect, "MAX_NEAR_DUPLICATES", 32)) + 1
            lowered = NgramTable(table.keys, np.maximum(table.counts - most, 0), table.context_keys, table.totals,
                                 table.kinds)
            query = AgentQuery(stripped)
            # nothing is left out, so the agent's bits are the same against every reference
            plain = self._plain[agent] = (stripped, lowered, np.asarray(token_bits(stripped, lowered, (), query=query)))
        stripped, lowered, bits = plain
        # the cheap bound first: most references that share only common code stop here
        coarse = self.window_bounds(agent, docs)
        found = self.token_profiles([doc for doc in docs if coarse.get(doc, 0.0) >= needed])
        out = {}
        for doc, window in coarse.items():
            out[doc] = window if window < needed else reference_evidence(stripped, found[doc], lowered, (),
                                                                         bits=bits).bits
        return out

    def window_bounds(self, agent: int, docs: Sequence[int]) -> dict[int, float]:
        """:func:`window_bounds` of agent file number ``agent`` against ``docs`` (references
        without a profile are left out).

        The references' seed locations are kept for the next agent file while they hold up to
        ``_SEED_LOCATIONS`` seeds (the agent units of one run mostly meet the same references);
        past that, they are made per batch of ``_BOUND_BATCH`` references."""
        known = self._windows.setdefault(agent, {})
        out = {doc: known[doc] for doc in docs if doc in known}
        docs = [doc for doc in docs if doc not in known]
        if docs:
            fresh = self._window_bounds(agent, docs)
            known.update(fresh)
            out.update(fresh)
        return out

    def _window_bounds(self, agent: int, docs: list[int]) -> dict[int, float]:
        seeds = self.seed_table(agent)
        out: dict[int, float] = {}
        kept = self._locations
        missing = [doc for doc in docs if doc not in kept[0]]
        if missing:
            found = self.token_profiles(missing)
            docs = [doc for doc in docs if doc in kept[0] or doc in found]
            adding = sum(found[doc].seed_keys().size for doc in found)
            if kept[1].size + adding <= _SEED_LOCATIONS:
                everyone = [*kept[0], *(doc for doc in missing if doc in found)]
                found = self.token_profiles(everyone)
                kept = self._locations = ({doc: slot for slot, doc in enumerate(everyone)}, SeedLocations(
                    [(found[doc].seed_keys(), len(found[doc].ids)) for doc in everyone]))
        if all(doc in kept[0] for doc in docs):
            wanted = np.zeros(len(kept[0]), dtype=bool)
            wanted[[kept[0][doc] for doc in docs]] = True
            values = window_bounds(seeds, kept[1], wanted)
            return {doc: float(values[kept[0][doc]]) for doc in docs}
        for start in range(0, len(docs), _BOUND_BATCH):
            found = self.token_profiles(docs[start : start + _BOUND_BATCH])
            read = [doc for doc in docs[start : start + _BOUND_BATCH] if doc in found]
            values = window_bounds(seeds, SeedLocations([(found[doc].seed_keys(), len(found[doc].ids)) for doc in read]))
            out.update(zip(read, values.tolist()))
        return out

    def seed_table(self, agent: int) -> tuple[np.ndarray, np.ndarray]:
        seeds = self._seed_tables.get(agent)
        if seeds is None:
            profile = self.queries[agent].agent
            seeds = self._seed_tables[agent] = seed_table(upper_token_bits(profile, self.table), profile.seed_keys())
        return seeds

    def evidence(self, agent: int, doc: int, mask: bytearray | None) -> tuple[Evidence, Profile, int] | None:
        """Evidence that agent file number ``agent`` copied from reference ``doc`` (None when the
        detector does not read the reference)."""
        loaded = self.profiles([doc]).get(doc)
        if loaded is None:
            return None
        profile, chars = loaded
        left_out = self.left_out(self.members(doc, profile))
        query = self.queries[agent]
        result = reference_evidence(query.agent, profile, self.table, left_out, mask=mask, query=query)
        return result, profile, chars


class _Retrieval:
    """Postings summed for one agent file: the references sharing a counted hash, their exact
    agent containment, and (computed on first use, since ranking by agent containment rarely
    needs it) their reference containment.

    Attributes
    ----------
    docs : ndarray
        Ids of the references that share at least one counted hash.
    agent_containment : ndarray
        Exact, aligned with ``docs``.
    ignored : frozenset of int
        Hashes of the agent file that do not count (boilerplate, too common).
    """

    __slots__ = ("docs", "agent_containment", "ignored", "_load", "_countable", "_reference")

    def __init__(self, docs: np.ndarray, agent_containment: np.ndarray, ignored: frozenset[int],
                 load: Callable[[], np.ndarray] | None = None,
                 countable: np.ndarray | None = None) -> None:
        self.docs = docs
        self.agent_containment = agent_containment
        self.ignored = ignored
        self._load = load
        self._countable = countable
        self._reference: np.ndarray | None = None if docs.size else np.zeros(0)

    @property
    def reference_containment(self) -> np.ndarray:
        """Aligned with ``docs``; exact, except that with ``max_doc_fraction`` the reference's own
        too-common hashes are not known here, so it can be slightly underestimated."""
        if self._reference is None:
            covered = self._load()
            countable = self._countable[self.docs]
            self._reference = np.where(countable > 0, covered[self.docs] / np.maximum(countable, 1), 0.0)
            self._load = None
        return self._reference


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


class CorpusIndex:
    """An open corpus index. Get one from :func:`load_corpus_index` or :func:`create_corpus_index`.

    Use :meth:`compare` as a drop-in for :func:`mleaudit.audit.similarity.compare` over the whole corpus,
    :meth:`candidates` for retrieval alone, :meth:`add` to index more files, :meth:`info` for a
    summary. Close it (or use it as a context manager) when done.
    """

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

    def __enter__(self) -> "CorpusIndex":
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

    # -- adding ------------------------------------------------------------------------------------

    def _plan(self, paths: Sequence[str | Path], root: str | Path | None
              ) -> tuple[list[tuple[Path, str]], list[Skipped], list[Skipped], list[str]]:
        """Files to read with their keys; files skipped by name; second files for a key already
        taken in this call (reported, not recorded in the index); folders that become roots."""
        roots = [Path(r) for r in self._meta.get("roots", [])]
        explicit = Path(root).resolve() if root is not None else None
        if explicit is not None and not explicit.is_dir():
            raise CorpusIndexError(f"--root {str(root)!r} is not a folder")
        tasks: list[tuple[Path, str]] = []
        skipped: list[Skipped] = []
        duplicates: list[Skipped] = []
        new_roots: list[str] = []
        taken: dict[str, Path] = {}

        def base_for(target: Path, default: Path) -> Path:
            if explicit is not None:
                if not target.is_relative_to(explicit):
                    raise CorpusIndexError(f"{target} is not inside --root {explicit}")
                return explicit
            for known in roots:
                if target.is_relative_to(known):
                    return known
            return default

        def take(file: Path, base: Path) -> None:
            key = file.relative_to(base).as_posix()
            try:
                key.encode("utf-8")
            except UnicodeEncodeError:
                escaped = key.encode("utf-8", errors="surrogateescape").decode("utf-8", errors="backslashreplace")
                skipped.append(Skipped(path=escaped, reason="file name is not valid UTF-8"))
                return
            if key in taken:
                duplicates.append(Skipped(path=key, reason=f"duplicate corpus path (already taken by {taken[key]})"))
                return
            taken[key] = file
            tasks.append((file, key))

        for given in paths:
            target = Path(given)
            if not target.exists() and not target.is_symlink():
                raise CorpusIndexError(f"{given}: no such file or folder")
            if target.is_dir():
                # A folder named on the command line is followed even through a link; links
                # inside the corpus are not (the reader lists them as skipped).
                absolute = target.resolve()
            else:
                absolute = target.parent.resolve() / target.name
            if target.is_dir():
                base = base_for(absolute, absolute)
                if str(base) not in new_roots and base not in roots:
                    new_roots.append(str(base))
                for file, _ in iter_reference_files(absolute):
                    take(file, base)
            else:
                base = base_for(absolute, absolute.parent)
                if not absolute.name.lower().endswith(REFERENCE_SUFFIXES):
                    skipped.append(Skipped(path=absolute.relative_to(base).as_posix(),
                                           reason=f"not a kernel file (expected {' or '.join(REFERENCE_SUFFIXES)})"))
                    continue
                take(absolute, base)
        return tasks, skipped, duplicates, new_roots

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
        tasks, skipped, duplicates, new_roots = self._plan(paths, root)
        # what queries cached describes the corpus before this call
        self._token_profiles.clear()
        self._sample_holders.clear()
        self._families.clear()
        self._family_ids = 0
        self._sample_holder_bytes = 0
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

    def _keys_for(self, given: str | Path, indexed: Sequence[str]) -> list[str]:
        """The indexed keys (and recorded skipped paths) that one ``remove`` argument names: the
        key itself, every key under it when it names a folder, or, for a path on disk under a
        recorded root, the key relative to that root (and the keys under it). Nothing is
        resolved through links and nothing outside the recorded roots is taken for a key."""
        text = os.fspath(given)
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            return []
        if "\0" in text:
            return []
        names: list[str] = []
        plain = text.strip("/") if not os.path.isabs(text) else ""
        if plain and plain not in (".", ".."):
            names.append(plain)
        absolute = os.path.normpath(os.path.abspath(text))
        for root in self._meta.get("roots", []):
            try:
                relative = Path(absolute).relative_to(root).as_posix()
            except ValueError:
                continue
            names.append("" if relative == "." else relative)
        found: list[str] = []
        for name in names:
            for key in indexed:
                if key == name or name == "" or key.startswith(name + "/"):
                    if key not in found:
                        found.append(key)
        return found

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
                keys = self._keys_for(given, indexed)
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

    def _clear_query_caches(self) -> None:
        self._token_profiles.clear()
        self._sample_holders.clear()
        self._families.clear()
        self._family_ids = 0
        self._sample_holder_bytes = 0

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
            present = {key for _, key in self._plan([target], None)[0]}
            under = [key for key in self._indexed_keys()
                     if not prefix or key.startswith(prefix + "/")]
            gone = sorted({key for key in under if key not in present})
            removed = self._remove_keys(gone) if gone else 0
            summary = self._add([target], root=None, jobs=jobs, max_bytes=max_bytes, progress=progress)
        return dataclasses.replace(summary, removed=summary.removed + removed, seconds=time.perf_counter() - started)

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

    def _posting_entries(self) -> int:
        """The most postings entries one key may have (the number of segments for an index
        that does not record it)."""
        recorded = self._meta.get("posting_entries")
        if isinstance(recorded, int) and not isinstance(recorded, bool) and recorded >= 0:
            return recorded
        return len(self._open_backend().segment_stats())

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

    # -- querying ------------------------------------------------------------------------------

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

    def _agent_entry(self, unit: CodeUnit, index: FingerprintIndex) -> IndexedFile | Skipped:
        if unit.language not in LANGUAGES and unit.language != "chars":
            return Skipped(path=unit.path, reason=f"no grammar for language {unit.language!r}")
        if len(unit.text) > MAX_REFERENCE_BYTES:
            return Skipped(path=unit.path, reason=f"code too large ({len(unit.text)} characters > {MAX_REFERENCE_BYTES})")
        try:
            return index.add_agent(tokenize_text(unit.text, unit.language, unit.path))
        except Exception as exc:  # noqa: BLE001 - hostile agent code must not stop the audit
            logger.warning("cannot tokenize %s: %s", unit.path, exc)
            return Skipped(path=unit.path, reason=f"cannot tokenize ({type(exc).__name__}: {str(exc)[:200]})")

    def _retrieve(self, entry: IndexedFile, language: str, options: SimilarityOptions,
                  stats: tuple[np.ndarray, int, np.ndarray], *, counts: bool = False) -> _Retrieval:
        empty = _Retrieval(np.zeros(0, np.int64), np.zeros(0), self._boilerplate_set)
        hashes = np.fromiter((f.hash for f in entry.fingerprints), dtype=np.int64, count=len(entry.fingerprints))
        if hashes.size == 0 or language not in self._languages:
            return empty
        unique, multiplicity = np.unique(hashes, return_counts=True)
        boilerplate = np.isin(unique, self._boilerplate_hashes)
        code = self._languages.index(language) * _KEY_STRIDE
        backend = self._open_backend()
        # Ranking by agent containment needs the ids only; the counts are read (again, unless
        # ``counts``) when reference containment is asked for.
        fetched = backend.postings((unique[~boilerplate] + code).tolist(), counts=counts)
        entries_of = [fetched.get(value + code, ()) if not boilerplate[i] else () for i, value in enumerate(unique.tolist())]
        frequency = np.array([sum(p.size for p in entries) for entries in entries_of], dtype=np.int64)
        countable_table, n_references = stats[0], stats[1]
        common = np.zeros(unique.size, dtype=bool)
        if options.max_doc_fraction is not None:
            common = frequency > options.max_doc_fraction * n_references
        ignored_mask = boilerplate | common
        agent_countable = int(hashes.size - multiplicity[ignored_mask].sum())
        ignored = self._boilerplate_set | frozenset(unique[common].tolist())
        counted = [i for i, entries in enumerate(entries_of) if entries and not ignored_mask[i]]
        if not counted or agent_countable <= 0:
            return _Retrieval(np.zeros(0, np.int64), np.zeros(0), ignored)
        size = countable_table.size
        agent_covered = _count_ids([(entries_of[i], int(multiplicity[i])) for i in counted], size, str(self.path))
        docs = np.flatnonzero(agent_covered)
        docs = docs[countable_table[docs] >= 0]  # live references only
        # Integer counts divided once, as pairs.containment does, so values (and ties) are identical.
        agent_containment = agent_covered[docs] / agent_countable
        counted_keys = [int(unique[i]) + code for i in counted]

        def load() -> np.ndarray:
            """Per reference id, the occurrences of the counted hashes (the reference's covered
            fingerprints)."""
            found = fetched if counts else backend.postings(counted_keys)
            where = f"{self.path}: postings"
            entries = [posting for key in counted_keys for posting in found.get(key, ())]
            # one occurrence per reference and hash, counted as for agent containment ...
            covered = _count_ids([(entries, 1)], size, where)
            # ... plus the further occurrences of hashes a reference holds more than once (id
            # lists joined per count width; a bitmap lists those references)
            extra_docs, extra_counts = [], []
            for wide in (False, True):
                group = [posting for posting in entries if not posting.bitmap and posting.wide == wide]
                if not group:
                    continue
                ids = np.frombuffer(b"".join(posting.docs for posting in group), dtype="<i4")
                occurrences = np.frombuffer(b"".join(posting.counts or b"" for posting in group),
                                            dtype="<u4" if wide else "<u2")
                # (each entry's ids were checked against its size by _count_ids)
                if ids.size != occurrences.size:
                    raise CorpusIndexError(f"{where}: corrupt postings entry")
                more = occurrences > 1
                extra_docs.append(ids[more])
                extra_counts.append(occurrences[more].astype(np.int64) - 1)
            for posting in entries:
                if posting.bitmap:
                    listed, listed_counts = posting.exceptions(where)
                    extra_docs.append(listed)
                    extra_counts.append(listed_counts.astype(np.int64) - 1)
            if extra_docs:
                more_docs = np.concatenate(extra_docs).astype(np.int64)
                more_counts = np.concatenate(extra_counts)
                known = (more_docs >= 0) & (more_docs < size)
                # float64 sums of small integers are exact
                covered += np.bincount(more_docs[known], weights=more_counts[known], minlength=size).astype(np.int64)
            return covered

        return _Retrieval(docs, agent_containment, ignored, load, countable_table)

    def _ranked(self, retrieval: _Retrieval, threshold: float, top: int | None) -> list[tuple[float, str, int]]:
        """Candidates as (agent containment, path, id) in report order, cut to ``top``."""
        by_agent = retrieval.agent_containment >= threshold
        if top is not None and np.count_nonzero(by_agent) >= top:
            # Report order is by agent containment: references that pass only through their own
            # containment rank below ``top`` others, so it need not be computed.
            keep = by_agent
        else:
            keep = by_agent | (retrieval.reference_containment >= threshold)
        docs = retrieval.docs[keep]
        containment = retrieval.agent_containment[keep]
        if top is not None and docs.size > top:
            # Only the top-N (and references tied with the N-th) need their paths for the exact order.
            cut = -np.partition(-containment, top - 1)[top - 1]
            near = containment >= cut
            docs, containment = docs[near], containment[near]
        paths = self._open_backend().paths(docs.tolist())
        ranked = sorted(((float(c), paths[int(d)], int(d)) for d, c in zip(docs, containment) if int(d) in paths),
                        key=lambda item: (-item[0], item[1]))
        return ranked[:top] if top is not None else ranked

    @_guarded
    def candidates(
        self,
        unit: CodeUnit,
        *,
        min_containment: float = DEFAULT_MIN_CONTAINMENT,
        options: SimilarityOptions | None = None,
    ) -> list[str]:
        """References that may match ``unit``: their keys (corpus paths), best first.

        Parameters
        ----------
        unit : CodeUnit
            Agent code.
        min_containment : float, default DEFAULT_MIN_CONTAINMENT
            Keep references with ``max(agent_containment, reference_containment)`` at least this
            (in [0, 1]); a reference that shares no counted fingerprint is never a candidate.
        options : SimilarityOptions, optional
            Only ``max_doc_fraction`` matters here; k and window must be the index's.

        Returns
        -------
        list of str
            Sorted by agent containment (descending), then path: the order of
            :attr:`SimilarityReport.pairs`.

        Notes
        -----
        Agent containment is computed exactly from the postings, so every reference whose
        brute-force agent containment reaches ``min_containment`` is returned. Reference
        containment is exact when no fingerprint is ignored for being too common
        (``max_doc_fraction``); with that option, the reference's own common fingerprints are
        not known at this stage and its containment is slightly underestimated.
        """
        options = self._check_options(options)
        _check_fraction("min_containment", min_containment)
        entry = self._agent_entry(unit, FingerprintIndex(self._k, self._w))
        if isinstance(entry, Skipped):
            return []
        retrieval = self._retrieve(entry, unit.language, options, self._stats(), counts=True)
        return [path for _, path, _ in self._ranked(retrieval, min_containment, None)]

    @_guarded
    def compare(
        self,
        agents: Sequence[CodeUnit],
        options: SimilarityOptions | None = None,
        *,
        min_containment: float = DEFAULT_MIN_CONTAINMENT,
        top: int | None = DEFAULT_TOP,
        sources: int = DEFAULT_SOURCES,
        bound_budget: int | None = DEFAULT_BOUND_BUDGET,
        include_corpus_skipped: bool = True,
    ) -> SimilarityReport:
        """Compare agent code with the indexed corpus: :func:`mleaudit.audit.similarity.compare` on the candidates.

        Parameters
        ----------
        agents : sequence of CodeUnit
            Audited code.
        options : SimilarityOptions, optional
            Defaults to :attr:`options`. ``kgram_length`` and ``kgrams_in_window`` must be the
            index's; ``max_doc_fraction``, ``min_fragment_kgrams`` and ``display_threshold`` apply
            as in :func:`mleaudit.audit.similarity.compare` (document frequencies count the whole corpus).
        min_containment : float, default DEFAULT_MIN_CONTAINMENT
            Candidate threshold on ``max(agent_containment, reference_containment)``; the
            effective threshold is the larger of this and ``options.display_threshold``.
        top : int or None, default DEFAULT_TOP
            Score only the first ``top`` candidates per agent unit in report order (agent
            containment is known exactly before scoring), which bounds the time on a large
            corpus: the pairs are then exactly brute force's first ``top`` pairs of that unit
            (among those above the threshold). ``None`` scores every candidate (minutes on a
            corpus of 10**5 notebooks). Each scored pair costs about 10-30 ms, most of it the copy
            detector's background and the fragments; the default 5 keeps a run of a few files
            under a second on a quarter of a million notebooks.
        sources : int, default DEFAULT_SOURCES
            Only for an index written before tile seeds were stored (no ``seed_postings`` in its
            meta; rebuild it for the exact search below). With ``top``, also look at the next candidates (up to 1,000 more) for references
            that are not forks of those already scored (the detector's near-duplicate test on
            sampled 8-grams), take the first ``sources`` of them, one per further source, and
            add each pair the copy detector flags. Forks of one popular kernel often fill the first
            ``top`` places while the kernel a partial copy came from ranks just below; ``0``
            scores the first ``top`` candidates only.
        bound_budget : int or None, default DEFAULT_BOUND_BUDGET
            The copy detector's search (an index with tile seeds): per Python agent unit, every
            reference whose evidence bound from the seed postings (:func:`evidence_bounds`)
            reaches the threshold's bits is checked again with the window bound
            (:func:`window_bounds`), those that pass with the bound from the pair's tiles
            (:meth:`_DetectorQuery.tile_bounds`), best window first, and scored exactly when that
            one reaches it too; each flagged pair is kept. All are upper bounds of the evidence,
            so every reference brute force flags is found, with its score. With ``top``, a unit's
            search is exhaustive when it needs at most ``bound_budget`` tile bounds and four times
            as many window bounds; otherwise it is cut to a best effort of at most 64 tile bounds
            (:attr:`last_bound_scored` says for which units); ``top=None`` or
            ``bound_budget=None`` checks them all.
        include_corpus_skipped : bool, default True
            List the index's skipped files in the report, as :func:`mleaudit.audit.similarity.compare`
            does for a :class:`ReferenceCorpus`.

        Returns
        -------
        SimilarityReport
            Pairs from :func:`mleaudit.audit.similarity.pairs.pair_report` on the stored fingerprints:
            every Dolos figure and fragment equals the brute-force pair, and so do the copy
            detector's ``score``, ``flagged`` (``score >= options.score_threshold``) and
            ``evidence_fragments`` for Python pairs, whose background is the whole indexed
            corpus (see the module docstring). A pair the detector flags is kept below
            ``display_threshold`` when it is a candidate (brute force keeps every flagged pair;
            the index only scores candidates). With ``top``, the pairs are the first ``top``
            candidates' in report order plus the flagged pairs of further sources.
            ``corpus_digest`` is the index's.

        Raises
        ------
        CorpusIndexError
            If the options' k-gram length or window differ from the index's, or a stored record
            or detector profile is corrupt.
        """
        options = self._check_options(options)
        _check_fraction("min_containment", min_containment)
        if top is not None and top < 1:
            raise CorpusIndexError(f"top must be >= 1, got {top}")
        if isinstance(sources, bool) or not isinstance(sources, int) or sources < 0:
            raise CorpusIndexError(f"sources must be an integer >= 0, got {sources!r}")
        if bound_budget is not None and (isinstance(bound_budget, bool) or not isinstance(bound_budget, int)
                                         or bound_budget < 0):
            raise CorpusIndexError(f"bound_budget must be an integer >= 0 or None, got {bound_budget!r}")
        threshold = max(float(min_containment), float(options.display_threshold))
        agent_index = FingerprintIndex(self._k, self._w)
        stats = self._stats()
        skipped: list[Skipped] = list(self.skipped()) if include_corpus_skipped else []
        chosen: list[tuple[CodeUnit, IndexedFile, list[int], frozenset[int]]] = []
        further: list[list[int]] = []  # per unit: the next candidates, for further sources
        paths: dict[int, str] = {}
        window = 0 if top is None or not sources else _SOURCE_WINDOW
        for unit in agents:
            entry = self._agent_entry(unit, agent_index)
            if isinstance(entry, Skipped):
                skipped.append(entry)
                continue
            # every candidate's reference containment is needed without ``top``
            retrieval = self._retrieve(entry, unit.language, options, stats, counts=top is None)
            ranked = self._ranked(retrieval, threshold, None if top is None else top + window)
            paths.update((doc, path) for _, path, doc in ranked)
            chosen.append((unit, entry, [doc for _, _, doc in ranked[:top]], retrieval.ignored))
            further.append([doc for _, _, doc in ranked[top:]] if top is not None else [])
        # The copy detector reads Python: one profile per Python agent unit.
        python = [i for i, (unit, _, _, _) in enumerate(chosen) if unit.language == "python"]
        agent_profiles = {i: profile_code(chosen[i][0].text, chosen[i][0].path) for i in python}
        detector = _DetectorQuery(self, [agent_profiles[i] for i in python], stats[2]) if python else None
        position = {i: n for n, i in enumerate(python)}
        masks: dict[int, bytearray | None] = {}
        # Further sources: past the first `top` candidates, the best reference of each of up to
        # `sources` other sources (not a fork of a reference already chosen), kept when the
        # detector flags it. The first `top` candidates are often forks of one popular kernel
        # while the kernel a partial copy came from ranks a little lower.
        found_further: dict[tuple[int, int], tuple[Evidence, Profile, int]] = {}
        exact = bool(self._meta.get("seed_postings"))
        self.last_bound_scored = []
        if detector is not None and not exact:
            # without tile seeds the detector's search is a heuristic (the first candidates and a
            # few further sources), never exhaustive
            for i in python:
                unit = chosen[i][0]
                self.last_bound_scored.append({
                    "path": unit.path, "start_line": unit.origin.start_line if unit.origin is not None else None,
                    "seed_bound": False, "exhaustive": False})
        for i, docs in enumerate(further):
            if detector is None or i not in position or not (docs or exact):
                continue
            if detector.boilerplate:
                masks[i] = boilerplate_mask(agent_profiles[i], detector.boilerplate)
            if exact:
                # Every reference whose evidence bounds reach the threshold, best bound first:
                # first from the seed postings, then from the pair's tiles.
                order = self._bounded(detector, position[i], chosen[i][2], stats, options.score_threshold,
                                      ranked=docs)
                budget = None if top is None else bound_budget
                needed = needed_bits(options.score_threshold)
                # A search that cannot be exhaustive within the budget is cut to a best effort of
                # at most _CUT_CHECKS tile bounds: it is reported either way, and a larger effort
                # would only list more of a copied kernel's forks.
                cut = None if budget is None else min(budget, _CUT_CHECKS)
                # then the window bound, a few array operations per reference ...
                if budget is None or len(order) <= budget * _WINDOW_BUDGET_FACTOR:
                    windowed = order
                else:
                    windowed = order[: cut * _WINDOW_BUDGET_FACTOR]
                window = detector.window_bounds(position[i], windowed)
                # ... best first (a stable sort: ties keep the seed bound's order)
                passed = sorted((doc for doc in windowed if window.get(doc, 0.0) >= needed), key=lambda d: -window[d])
                # ... then the tile bound, a tiling per reference
                if budget is None or (len(windowed) == len(order) and len(passed) <= budget):
                    checked = passed
                else:
                    checked = passed[:cut]
                candidates = []
                for start in range(0, len(checked), _BOUND_BATCH):
                    batch = checked[start : start + _BOUND_BATCH]
                    tight = detector.tile_bounds(position[i], batch, needed)
                    candidates.extend(doc for doc in batch if tight.get(doc, 0.0) >= needed)
                unit = chosen[i][0]
                self.last_bound_scored.append({
                    "path": unit.path, "start_line": unit.origin.start_line if unit.origin is not None else None,
                    "seed_bound": True, "bounded": len(order), "windowed": len(windowed), "window": len(passed),
                    "checked": len(checked), "scored": len(candidates),
                    "exhaustive": len(windowed) == len(order) and len(checked) == len(passed)})
                if len(windowed) < len(order) or len(checked) < len(passed):
                    # said once per command by its caller (last_bound_scored): on a real corpus
                    # widely held code keeps most references above the seed bound
                    logger.info("%s: %s: of %d references the seed bound could not exclude, %d were checked with "
                                "the window bound and %d of the %d it kept with the tile bound (bound_budget; "
                                "top=None checks all)", self.path, chosen[i][0].path, len(order), len(windowed),
                                len(checked), len(passed))
            else:
                candidates = detector.distinct_sources(chosen[i][2], docs, sources)
            for start in range(0, len(candidates), _BOUND_BATCH):
                batch = candidates[start : start + _BOUND_BATCH]
                detector.profiles(batch, paths)
                for doc in batch:
                    found = detector.evidence(position[i], doc, masks.get(i))
                    if found is not None and found[0].score >= options.score_threshold:
                        found_further[(i, doc)] = found
        references = self._references(sorted({doc for _, _, docs, _ in chosen for doc in docs}
                                             | {doc for _, doc in found_further}))
        extra_ignored = self._common_hashes(references, options, stats[1])
        pairs: list[PairReport] = []
        for i, (unit, entry, docs, ignored) in enumerate(chosen):
            ignored = ignored | extra_ignored
            if detector is not None and i in position and i not in masks:
                masks[i] = boilerplate_mask(agent_profiles[i], detector.boilerplate) if detector.boilerplate else None
            if detector is not None and i in position:
                detector.profiles([doc for doc in docs if references[doc][1].file.language == "python"],
                                  {doc: references[doc][0].path for doc in docs})
            flagged_further = [doc for (j, doc) in found_further if j == i]
            for doc in [*docs, *flagged_further]:
                reference_unit, reference_entry = references[doc]
                if reference_entry.file.language != unit.language:
                    continue
                if (i, doc) in found_further:
                    found = found_further[(i, doc)]
                else:
                    found = detector.evidence(position[i], doc, masks[i]) if detector is not None and i in position else None
                evidence = reference_profile = None
                if found is not None:
                    evidence, reference_profile, chars = found
                    reference_entry.file.chars = chars
                report = pair_report(
                    entry,
                    reference_entry,
                    ignored,
                    reference_id=reference_id(reference_unit.path),
                    min_fragment_kgrams=options.min_fragment_kgrams,
                    agent_unit=unit,
                    reference_unit=reference_unit,
                    evidence=evidence,
                    agent_profile=agent_profiles.get(i),
                    reference_profile=reference_profile,
                    score_threshold=options.score_threshold,
                )
                # as in brute force, a flagged pair is kept whatever its containment
                if report.flagged or max(report.agent_containment, report.reference_containment) >= options.display_threshold:
                    pairs.append(report)
        pairs.sort(key=PairReport.sort_key)
        decodings = [TextDecoding(unit.path, *entry.file.decoding)  # type: ignore[attr-defined]
                     for unit, entry in references.values() if entry.file.decoding is not None]
        return SimilarityReport(
            options=options,
            pairs=tuple(pairs),
            skipped=tuple(skipped),
            corpus_digest=str(self._meta.get("corpus_digest", "")),
            decodings=decodings_of_pairs(pairs, decodings),
        )

    def _bounded(self, detector: _DetectorQuery, agent: int, scored: Sequence[int],
                 stats: tuple[np.ndarray, int, np.ndarray], score_threshold: float,
                 ranked: Sequence[int] = ()) -> list[int]:
        """References the copy detector must score for agent file number ``agent``: those whose
        evidence bound (:meth:`_DetectorQuery.bounds`) reaches the threshold's bits, best bound
        first, then in the order of ``ranked`` (the next candidates by agent containment, which
        tells references apart where widely held code gives many the same bound), then lower
        id; without ``scored`` (scored anyway). Every other reference scores below the
        threshold, so none of them is flagged."""
        live = stats[0] >= 0
        common, docs, bounds = detector.bounds(agent, live)
        # a little slack for the rounding of sums taken in another order
        needed = needed_bits(score_threshold)
        if common >= needed:
            # the bound excludes nobody: every reference is scored
            logger.info("%s: the seed bound of %s excludes no reference (%.0f bits of widely held code); "
                        "all %d go to the tile bound", self.path, detector.queries[agent].agent.path, common,
                        int(np.count_nonzero(live)))
            everyone = np.flatnonzero(live)
            full = np.full(everyone.size, common)
            full[np.searchsorted(everyone, docs)] = bounds
            docs, bounds = everyone, full
        keep = bounds >= needed
        docs, bounds = docs[keep], bounds[keep]
        rank = np.full(docs.size, len(ranked), dtype=np.int64)
        if len(ranked) and docs.size:
            listed = np.asarray(ranked, dtype=np.int64)
            by_id = np.argsort(listed, kind="stable")
            at = np.minimum(np.searchsorted(listed[by_id], docs), listed.size - 1)
            rank = np.where(listed[by_id][at] == docs, by_id[at], listed.size)
        order = np.lexsort((docs, rank, -bounds))
        skip = set(scored)
        return [doc for doc in docs[order].tolist() if doc not in skip]

    def _references(self, ids: list[int]) -> dict[int, tuple[CodeUnit, IndexedFile]]:
        loaded = {}
        for doc, (path, blob) in self._open_backend().records(ids).items():
            record = _decode_record(blob, f"{self.path}: {path}", self._k)
            entry = IndexedFile.from_hashes(
                id=doc,
                role=Role.REFERENCE,
                file=_StoredTokens(path, record, self._k),  # type: ignore[arg-type]
                hashes=record.hashes,
                kgram_starts=record.kgram_starts,
                kgram_length=self._k,
            )
            unit = CodeUnit(path=path, language=record.language, text="", cells=record.cells, source=record.source)
            loaded[doc] = (unit, entry)
        return loaded

    def _common_hashes(self, references: Mapping[int, tuple[CodeUnit, IndexedFile]], options: SimilarityOptions,
                       n_references: int) -> frozenset[int]:
        """Hashes of the candidates found in more than ``max_doc_fraction`` of the references."""
        if options.max_doc_fraction is None or not references:
            return frozenset()
        keys: dict[int, int] = {}
        for _, entry in references.values():
            code = self._languages.index(entry.file.language) * _KEY_STRIDE
            for value in entry.occurrences:
                keys[value + code] = value
        limit = options.max_doc_fraction * n_references
        frequencies = self._open_backend().frequencies(sorted(keys))
        return frozenset(keys[key] for key, count in frequencies.items() if count > limit)


def _check_fraction(name: str, value: float) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
        raise CorpusIndexError(f"{name} must be a number in [0, 1], got {value!r}")


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _boilerplate_fingerprints(directories: Sequence[str | Path], options: SimilarityOptions
                              ) -> tuple[list[dict], list[int], list[dict]]:
    """Boilerplate files: their description, their fingerprint hashes, and the detector profiles
    of the Python ones (hex of :func:`_encode_profile`)."""
    described: list[dict] = []
    profiles: list[dict] = []
    hashes: set[int] = set()
    for directory in directories:
        units, skipped = load_reference_corpus(directory)
        for item in skipped:
            logger.warning("boilerplate %s skipped: %s", item.path, item.reason)
        for unit in units:
            tokens = tokenize_text(unit.text, unit.language, unit.path)
            hashes.update(f.hash for f in fingerprint_tokens(tokens.tokens, options.kgram_length, options.kgrams_in_window))
            described.append({"path": unit.path, "language": unit.language, "text_sha256": _text_sha256(unit.text)})
            if unit.language == "python":
                blob = _encode_profile(profile_code(unit.text, unit.path), len(unit.text))
                profiles.append({"path": unit.path, "profile": blob.hex()})
    return described, sorted(hashes), profiles


def create_corpus_index(
    path: str | Path,
    *,
    options: SimilarityOptions | None = None,
    storage: str | Mapping[str, Any] | None = None,
    boilerplate: Sequence[str | Path] = (),
) -> CorpusIndex:
    """Create an empty corpus index (then :meth:`CorpusIndex.add` kernels to it).

    Parameters
    ----------
    path : str or Path
        The index file to create; it must not exist.
    options : SimilarityOptions, optional
        Only ``kgram_length`` and ``kgrams_in_window`` are recorded (the others are query-time
        choices). Defaults to Dolos's 23 and 17.
    storage : str or dict, optional
        A storage URL for :func:`parse_storage` (``redis://HOST:PORT/DB``) or a datasketch
        ``storage_config`` of type ``redis``; ``None`` keeps everything in ``path``.
    boilerplate : sequence of folders, optional
        Starter code: its fingerprints never count as a match (as ``compare``'s boilerplate).

    Returns
    -------
    CorpusIndex
        Open for writing.

    Raises
    ------
    CorpusIndexError
        If ``path`` exists, the storage URL is bad or Redis cannot be reached.
    ConfigError
        If a boilerplate folder does not exist.
    """
    path = Path(path)
    options = options or SimilarityOptions()
    if path.exists() or path.is_symlink():
        raise CorpusIndexError(f"{path} already exists; add files with `mleaudit corpus add` or remove it first")
    if not path.parent.is_dir():
        raise CorpusIndexError(f"{path}: folder {path.parent} does not exist")
    config = parse_storage(storage) if isinstance(storage, (str, type(None))) else dict(storage)
    if config is not None and config.get("type") != "redis":
        raise CorpusIndexError(f"storage type {config.get('type')!r} is not supported (sqlite or redis)")
    described, hashes, boilerplate_profiles = _boilerplate_fingerprints(boilerplate, options)
    # Claimed atomically: of two builds of one path, the second stops here instead of writing
    # into (or, failing, deleting) the first one's file.
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
    except FileExistsError:
        raise CorpusIndexError(f"{path} already exists; add files with `mleaudit corpus add` or remove it first") from None
    except OSError as exc:
        raise CorpusIndexError(f"{path}: cannot create ({exc.strerror or exc})") from exc
    try:
        connection = _connect(path, create=True, writable=True)
    except BaseException:
        path.unlink(missing_ok=True)
        raise
    try:
        connection.execute("PRAGMA page_size = 8192")
        connection.execute("BEGIN IMMEDIATE")
        tables = _SQLITE_TABLES if config is None else {"meta": _SQLITE_TABLES["meta"]}
        for statement in tables.values():
            connection.execute(statement)
        local = _SQLiteBackend(connection, path)
        local.write_meta("format", CORPUS_INDEX_FORMAT)
        local.write_meta("format_version", CORPUS_INDEX_VERSION)
        basename = f"mleaudit:{uuid.uuid4().hex}"
        if config is not None:
            config = {"type": "redis", "redis": dict(config["redis"]), "basename": basename}
        local.write_meta("storage", config)
        connection.execute("COMMIT")
        backend: _Backend = local if config is None else _RedisBackend(config, basename, str(path))
        now = _now()
        from mleaudit.audit import __version__

        meta = {
            "options": {"kgram_length": options.kgram_length, "kgrams_in_window": options.kgrams_in_window},
            "fingerprint_scheme": _fingerprint_scheme(),
            "languages": sorted(LANGUAGES),
            "roots": [],
            "boilerplate": described,
            "corpus_digest": "",
            "created_at": now,
            "updated_at": now,
            "tool_version": __version__,
            "format": CORPUS_INDEX_FORMAT,
            "format_version": CORPUS_INDEX_VERSION,
            "posting_entries": 0,
            # every Python reference's tile seeds are in the postings (the bound of compare)
            "seed_postings": True,
        }
        backend.begin()
        backend.write_meta("index", meta)
        backend.write_meta("boilerplate_hashes", hashes)
        backend.write_meta("boilerplate_profiles", boilerplate_profiles)
        backend.commit()
    except BaseException:
        connection.close()
        path.unlink(missing_ok=True)
        raise
    index = CorpusIndex(path, connection, backend, writable=True)
    try:
        with index._writer():
            index._finish_add([])
    except BaseException:
        index.close()
        path.unlink(missing_ok=True)
        raise
    return index


def load_corpus_index(path: str | Path, *, writable: bool = False) -> CorpusIndex:
    """Open a corpus index made by :func:`create_corpus_index` / ``mleaudit corpus build``.

    Parameters
    ----------
    path : str or Path
        The index file.
    writable : bool, default False
        Open for :meth:`CorpusIndex.add`; otherwise the file is opened read-only.

    Returns
    -------
    CorpusIndex

    Raises
    ------
    CorpusIndexError
        If the file does not exist, is not a corpus index, has another format version, was
        built with another tokenizer or grammar version, or its Redis storage is unreachable.
    """
    path = Path(path)
    if not path.is_file():
        raise CorpusIndexError(f"{path}: no such corpus index file")
    with path.open("rb") as stream:
        header = stream.read(len(_SQLITE_HEADER))
    if header != _SQLITE_HEADER:
        raise CorpusIndexError(f"{path}: not a corpus index (not an SQLite file; build one with `mleaudit corpus build`)")
    connection = _connect(path, create=False, writable=writable)
    try:
        _check_schema(connection, path, {"meta"})
        local = _SQLiteBackend(connection, path)
        try:
            kind, version, storage = (local.read_meta(k) for k in ("format", "format_version", "storage"))
        except (sqlite3.Error, ValueError) as exc:
            raise CorpusIndexError(f"{path}: not a corpus index (unreadable meta table: {exc})") from exc
        if kind != CORPUS_INDEX_FORMAT:
            raise CorpusIndexError(f"{path}: not a corpus index (format {kind!r}, expected {CORPUS_INDEX_FORMAT!r})")
        if version not in READABLE_VERSIONS:
            why = " (version 1 holds no copy-detector data, so it could not give a copy score)" if version == 1 else ""
            raise CorpusIndexError(
                f"{path}: corpus index format version {version}, this mleaudit reads versions "
                f"{' and '.join(map(str, READABLE_VERSIONS))}{why}; rebuild the index with `mleaudit corpus build`"
            )
        if storage is None:
            _check_schema(connection, path, set(_SQLITE_TABLES))
            backend: _Backend = local
        else:
            if not isinstance(storage, dict) or storage.get("type") != "redis" or not isinstance(storage.get("redis"), dict):
                raise CorpusIndexError(f"{path}: unsupported storage {storage!r}")
            backend = _RedisBackend(storage, str(storage.get("basename", "")), str(path))
        meta = backend.read_meta("index")
        if not isinstance(meta, dict) or meta.get("format_version") != version:
            raise CorpusIndexError(f"{path}: the index data in {_describe_storage(storage)} is missing or of another version")
        scheme = meta.get("fingerprint_scheme", {})
        expected = _fingerprint_scheme()
        if scheme != expected:
            raise CorpusIndexError(
                f"{path}: fingerprints made with {json.dumps(scheme, sort_keys=True)}, this installation makes "
                f"{json.dumps(expected, sort_keys=True)}; rebuild the index"
            )
    except BaseException:
        connection.close()
        raise
    return CorpusIndex(path, connection, backend, writable=writable)


def build_corpus_index(
    directories: Sequence[str | Path],
    path: str | Path,
    *,
    boilerplate: Sequence[str | Path] = (),
    options: SimilarityOptions | None = None,
    storage: str | Mapping[str, Any] | None = None,
    jobs: int = 1,
    max_bytes: int = MAX_REFERENCE_BYTES,
    progress: Callable[[int, int], None] | None = None,
) -> AddSummary:
    """Create an index at ``path`` and add every kernel under ``directories`` (``mleaudit corpus build``).

    Parameters
    ----------
    directories : sequence of folders
        Corpus roots; keys are paths relative to each root (a path found under two roots is
        indexed once and listed as skipped the second time).
    path : str or Path
        The index file to create.
    boilerplate, options, storage
        As for :func:`create_corpus_index`.
    jobs, max_bytes, progress
        As for :meth:`CorpusIndex.add`.

    Returns
    -------
    AddSummary

    Raises
    ------
    CorpusIndexError, ConfigError
        If a folder does not exist, ``path`` exists, or storage fails. A failed build removes
        the partly written index file.
    """
    missing = [str(d) for d in directories if not Path(d).is_dir()]
    if missing:
        raise ConfigError(f"not a folder: {', '.join(missing)}")
    if not directories:
        raise ConfigError("no corpus folder given")
    index = create_corpus_index(path, options=options, storage=storage, boilerplate=boilerplate)
    try:
        return index.add(directories, jobs=jobs, max_bytes=max_bytes, progress=progress)
    except BaseException:
        index.close()
        for leftover in (Path(path), Path(f"{path}-wal"), Path(f"{path}-shm"), Path(f"{path}-journal")):
            leftover.unlink(missing_ok=True)
        raise
    finally:
        index.close()
