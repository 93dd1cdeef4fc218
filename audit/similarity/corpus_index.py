"""The corpus index's former single-module home: its public names, re-exported.

The corpus index is the package :mod:`mleaudit.audit.similarity.index` (storage backends,
codecs, retrieval, the copy detector's search, build/add/compact). This module stays because
``mleaudit.audit.similarity.corpus_index`` is how code written against earlier versions imports
the index: it re-exports the package's public names and, as this module always did, the copy
detector's bound functions of :mod:`mleaudit.audit.similarity.bounds`. New code imports from
:mod:`mleaudit.audit.similarity.index`.
"""

from __future__ import annotations

from mleaudit.audit.similarity.bounds import (
    SeedLocations,
    evidence_bounds,
    needed_bits,
    seed_table,
    upper_token_bits,
    window_bound,
    window_bounds,
)
from mleaudit.audit.similarity.index import (
    CORPUS_INDEX_FORMAT,
    CORPUS_INDEX_VERSION,
    DEFAULT_BOUND_BUDGET,
    DEFAULT_MIN_CONTAINMENT,
    DEFAULT_SOURCES,
    DEFAULT_TOP,
    MAX_POSTING_ENTRIES,
    READABLE_VERSIONS,
    SEGMENT_DOCS,
    TOKENIZER_SCHEME,
    AddSummary,
    CompactSummary,
    CorpusIndex,
    CorpusIndexError,
    CorpusIndexInfo,
    build_corpus_index,
    create_corpus_index,
    load_corpus_index,
    parse_storage,
)

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
    "evidence_bounds",
    "load_corpus_index",
    "needed_bits",
    "parse_storage",
    "seed_table",
    "upper_token_bits",
    "window_bound",
    "SeedLocations",
    "window_bounds",
]
