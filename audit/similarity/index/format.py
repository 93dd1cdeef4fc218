"""The corpus index's format: what the file says it is, its version, how posting keys are laid out.

Every stored piece (a reference's record, a detector profile, a postings entry, the n-gram
tables) is read and written by the codecs of :mod:`~mleaudit.audit.similarity.index.blobs` and
:mod:`~mleaudit.audit.similarity.index.postings`; this module holds what they and the storage
backends share: the format name and versions, the posting key layout, the fingerprint scheme an
index was made under, and :class:`CorpusIndexError`, the one error of the package.

Naming: a reference's *key* is its POSIX path relative to its corpus root (``owner/slug.ipynb``);
a *posting key* is a fingerprint hash qualified by the reference's language.
"""

from __future__ import annotations

from datetime import datetime, timezone
from importlib import metadata
from typing import Any

from mleaudit.audit.errors import AuditError
from mleaudit.audit.parsing import LANGUAGES
from mleaudit.audit.similarity.detect import PROFILE_SCHEME

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


class CorpusIndexError(AuditError):
    """A corpus index cannot be created, opened or used: not an index, another format version,
    other options, a corrupt record, an unreachable Redis. The message names the file."""


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


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")
