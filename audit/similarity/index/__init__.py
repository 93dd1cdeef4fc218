"""A reference corpus index on disk: fingerprints of every public kernel, found again in milliseconds.

:func:`mleaudit.audit.similarity.compare` tokenizes every reference kernel on every call, which is fine for
the fifty top notebooks of a competition and hopeless for the hundreds of thousands Kaggle holds.
A corpus index does the tokenizing once (``mleaudit corpus build``), keeps what exact scoring
needs, and answers a query in two steps:

1. **Candidate retrieval** from an inverted index (fingerprint hash -> references holding it):
   the exact agent and reference containment of *every* reference at once, so retrieval misses
   no pair above the threshold (``retrieval``).
2. **Exact scoring** of the candidates with the pair code of :func:`mleaudit.audit.similarity.compare`
   on the stored fingerprints, so every Dolos figure equals what brute force reports for that
   pair; the copy detector gives the same ``score`` and ``flagged`` as brute force, its search
   bounded by its evidence rather than cut by containment (``comparing``, ``search``,
   ``detector_query``).

Routine Listings
----------------
format
    :class:`CorpusIndexError`, the format name and versions, the posting key layout, the
    fingerprint scheme an index is made under.
blobs
    Codecs of a reference's record, its detector profile and a segment's statistics.
postings
    Postings entries (id lists and bitmaps): encoding, merging, counting ids.
storage
    The ``_Backend`` protocol every storage implements, :func:`parse_storage`, storage errors.
locks
    The writer lock file of an SQLite index.
sqlite_backend
    The SQLite backend, its schema, opening and checking an index file, bulk writes.
redis_backend
    The Redis backend (datasketch storage, a lease as writer lock).
fingerprinting
    What ``add`` stores of each file, made in worker processes; boilerplate fingerprints.
summaries
    :class:`AddSummary`, :class:`CompactSummary`, :class:`CorpusIndexInfo`.
stored_tokens
    A stored reference as the pair code reads it (spans without the source text).
state
    ``_OpenIndex``: an open index's storage, meta, query caches, writer lock, ``info``.
writes
    What one write changes in storage: segments written, references removed, the digest.
compaction
    ``compact``: each key's postings entries merged into one.
plan
    Which files and keys an ``add`` or ``remove`` names.
adding
    ``add``, ``remove``, ``sync``.
retrieval
    Candidate retrieval and ranking, ``candidates``; :data:`DEFAULT_MIN_CONTAINMENT`.
detector_query
    The copy detector over the index: backgrounds, near-duplicates, evidence bounds.
search
    The copy detector's bounded search; :data:`DEFAULT_BOUND_BUDGET`.
comparing
    ``compare``: retrieval, search and exact scoring; :data:`DEFAULT_TOP`, :data:`DEFAULT_SOURCES`.
handle
    :class:`CorpusIndex` and :func:`create_corpus_index`, :func:`load_corpus_index`,
    :func:`build_corpus_index`.

Notes
-----
The public names are re-exported here; import them from ``mleaudit.audit.similarity.index``
(``mleaudit.audit.similarity.corpus_index`` re-exports them too, for code written before this
package). Imports point down the listing above: a module imports only modules listed before it,
plus the similarity engine (``tokenize``, ``winnow``, ``fingerprint_index``, ``pairs``, ``detect``,
``bounds``, ``corpus``, ``comparison``) and ``mleaudit.audit``'s ``errors``, ``model``, ``parsing``
and ``units``; no module here imports this ``__init__``. :class:`CorpusIndex` is
``handle.CorpusIndex``, built from ``adding._Adding`` (over ``writes`` and ``compaction``) and
``comparing._Comparing`` (over ``retrieval``), all on ``state._OpenIndex``.

Where the next thing goes: a storage backend is a module beside ``sqlite_backend`` implementing
``storage._Backend``, opened in ``handle``; a new stored blob gets its codec in ``blobs`` (and a
format version bump in ``format``); a new write command is a method of ``adding._Adding`` (its
storage steps in ``writes``); a new query is a method on ``retrieval._Retrieving`` or
``comparing._Comparing``.
"""

from __future__ import annotations

from mleaudit.audit.similarity.index.adding import MAX_POSTING_ENTRIES, SEGMENT_DOCS
from mleaudit.audit.similarity.index.comparing import DEFAULT_SOURCES, DEFAULT_TOP
from mleaudit.audit.similarity.index.format import (
    CORPUS_INDEX_FORMAT,
    CORPUS_INDEX_VERSION,
    READABLE_VERSIONS,
    TOKENIZER_SCHEME,
    CorpusIndexError,
)
from mleaudit.audit.similarity.index.handle import (
    CorpusIndex,
    build_corpus_index,
    create_corpus_index,
    load_corpus_index,
)
from mleaudit.audit.similarity.index.retrieval import DEFAULT_MIN_CONTAINMENT
from mleaudit.audit.similarity.index.search import DEFAULT_BOUND_BUDGET
from mleaudit.audit.similarity.index.storage import parse_storage
from mleaudit.audit.similarity.index.summaries import AddSummary, CompactSummary, CorpusIndexInfo

__all__ = [
    "CORPUS_INDEX_FORMAT",
    "CORPUS_INDEX_VERSION",
    "READABLE_VERSIONS",
    "TOKENIZER_SCHEME",
    "SEGMENT_DOCS",
    "MAX_POSTING_ENTRIES",
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
    "load_corpus_index",
    "parse_storage",
]
