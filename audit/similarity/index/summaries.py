"""What a write did and what an index holds: :class:`AddSummary`, :class:`CompactSummary`,
:class:`CorpusIndexInfo` (the payloads of the ``mleaudit corpus`` commands' reports)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mleaudit.audit.model import Skipped

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
