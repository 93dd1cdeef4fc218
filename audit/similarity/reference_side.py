"""The reference side of a comparison, prepared once per process for a corpus and the options.

Tokenizing, fingerprinting and profiling the public kernels is most of the work of comparing one
run's code with them, and it does not depend on the run: a batch worker auditing a hundred runs
against the same notebooks would redo it a hundred times. :func:`reference_side` keeps the last
prepared side of this process, keyed by the digest of every reference and boilerplate text (with
its path and language) and the options that shape fingerprints; a comparison adds its agent files
to a :meth:`~mleaudit.audit.similarity.fingerprint_index.FingerprintIndex.fork` of the prepared
index, so the prepared side is never changed by one run and seen by the next.
"""

from __future__ import annotations

import hashlib
import threading
from dataclasses import dataclass, field
from typing import Sequence

from mleaudit.audit.model import Skipped
from mleaudit.audit.parsing import LANGUAGES
from mleaudit.audit.similarity.bounds import SeedLocations
from mleaudit.audit.similarity.detect import DetectionCorpus, Profile, profile_code
from mleaudit.audit.similarity.fingerprint_index import FingerprintIndex, IndexedFile, Role
from mleaudit.audit.similarity.measuring import coverage_tables
from mleaudit.audit.similarity.options import SimilarityOptions
from mleaudit.audit.similarity.prepared_cache import cached_profile, cached_tokens
from mleaudit.audit.similarity.tokenize import TokenizedFile, tokenize_text
from mleaudit.audit.units import CodeUnit

__all__ = ["ReferenceSide", "clear_prepared", "index_units", "reference_side", "tokenize_unit"]


def tokenize_unit(unit: CodeUnit) -> TokenizedFile:
    """Tokenize a :class:`~mleaudit.audit.units.CodeUnit` (its ``text`` in its ``language``).

    Raises
    ------
    KeyError
        If the unit's language has no grammar (and is not ``"chars"``).
    """
    return tokenize_text(unit.text, unit.language, unit.path)


def index_units(index: FingerprintIndex, units: Sequence[CodeUnit], role: Role,
                skipped: list[Skipped], *, keep: bool = False) -> list[tuple[CodeUnit, IndexedFile]]:
    """Add ``units`` to ``index`` in ``role``; a unit in a language without a grammar goes to
    ``skipped`` instead. Returns each added unit with its indexed file, in order. With ``keep``
    (public code, never an agent's), the token streams come from and go to the user cache
    (:func:`~mleaudit.audit.similarity.prepared_cache.cached_tokens`)."""
    added = []
    for unit in units:
        if unit.language not in LANGUAGES and unit.language != "chars":
            skipped.append(Skipped(path=unit.path, reason=f"no grammar for language {unit.language!r}"))
            continue
        tokenized = cached_tokens(unit) if keep and role is not Role.AGENT else tokenize_unit(unit)
        if role is Role.BOILERPLATE:
            entry = index.add_boilerplate(tokenized)
        elif role is Role.REFERENCE:
            entry = index.add_reference(tokenized)
        else:
            entry = index.add_agent(tokenized)
        added.append((unit, entry))
    return added


@dataclass(eq=False)
class ReferenceSide:
    """The references and boilerplate of a comparison, indexed, with what measuring needs of them.

    Attributes
    ----------
    index : FingerprintIndex
        Boilerplate, then references, added; never an agent file (see :meth:`FingerprintIndex.fork`).
    reference_entries : list of (CodeUnit, IndexedFile)
        The references with a grammar, in order.
    skipped : list of Skipped
        Boilerplate and reference units without a grammar, in the order they were met.
    ignored : frozenset of int
        Hashes that never count (boilerplate, too common).
    tables : Mapping
        Per language, the references' coverage tables (see :func:`coverage_tables`).
    boilerplate : sequence of CodeUnit
        The boilerplate units, for the detector's boilerplate profiles.
    """

    index: FingerprintIndex
    reference_entries: list[tuple[CodeUnit, IndexedFile]]
    skipped: list[Skipped]
    ignored: frozenset[int]
    tables: dict[str, tuple]
    boilerplate: Sequence[CodeUnit]
    #: Whether the references' profiles come from and go to the user cache (public code).
    keep: bool = False
    _detector: tuple[DetectionCorpus, dict[int, Profile], SeedLocations] | None = field(default=None, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def entries_for(self, references: Sequence[CodeUnit]) -> list[tuple[CodeUnit, IndexedFile]]:
        """The indexed references paired with the caller's own units (the ones with a grammar, in
        order): equal in path, language and text to those the side was prepared from, they may
        differ in what the report shows of them (a notebook's cell numbers, a log block's origin)."""
        mine = [unit for unit in references if unit.language in LANGUAGES or unit.language == "chars"]
        if len(mine) != len(self.reference_entries):
            raise ValueError("references differ from those the side was prepared from")
        return [(unit, entry) for unit, (_, entry) in zip(mine, self.reference_entries)]

    @property
    def detected(self) -> list[int]:
        """Positions of the Python references: the copy detector lexes Python only."""
        return [k for k, (unit, _) in enumerate(self.reference_entries) if unit.language == "python"]

    def detector(self) -> tuple[DetectionCorpus, dict[int, Profile], SeedLocations]:
        """The copy detector over the Python references (built on first use): the corpus, the
        reference profiles by position, and their seeds for the evidence bound."""
        with self._lock:
            if self._detector is None:
                profile = cached_profile if self.keep else profile_code
                profiles = {k: profile(self.reference_entries[k][0].text, self.reference_entries[k][0].path)
                            for k in self.detected}
                corpus = DetectionCorpus(
                    list(profiles.values()),
                    [profile_code(unit.text, unit.path) for unit in self.boilerplate if unit.language == "python"],
                )
                seeds = SeedLocations([(p.seed_keys(), len(p.ids)) for p in corpus.references])
                self._detector = (corpus, profiles, seeds)
            return self._detector


#: The last side prepared in this process, by key (one entry: a batch compares with one corpus).
_PREPARED: dict[tuple, ReferenceSide] = {}
_PREPARED_LOCK = threading.Lock()


def side_key(references: Sequence[CodeUnit], boilerplate: Sequence[CodeUnit]) -> str:
    """Digest of what a prepared side depends on: each unit's role, path, language and text, every
    field hashed on its own (no separator inside a path or a language name can make two lists
    collide)."""
    digest = hashlib.sha256()
    for role, units in (("reference", references), ("boilerplate", boilerplate)):
        for unit in units:
            for value in (role, unit.path, unit.language, unit.text):
                digest.update(hashlib.sha256(value.encode("utf-8", errors="surrogatepass")).digest())
    return digest.hexdigest()


def reference_side(references: Sequence[CodeUnit], boilerplate: Sequence[CodeUnit],
                   options: SimilarityOptions, *, keep: bool = True) -> ReferenceSide:
    """The prepared reference side for ``references`` and ``boilerplate`` under ``options``.

    Parameters
    ----------
    references, boilerplate : sequence of CodeUnit
    options : SimilarityOptions
        Only the k-gram length, the window and ``max_doc_fraction`` shape the side.
    keep : bool, default True
        Take the references' token streams and profiles from the user cache and store them
        there (never the boilerplate's, which may come from a run) (:mod:`~mleaudit.audit.similarity.prepared_cache`): public kernels,
        the same in every audit. ``False`` for code that is not public (a batch's runs compared
        with each other). The side is the same either way.

    Returns
    -------
    ReferenceSide
        Shared with later calls of this process with the same units (:func:`side_key`) and
        options; callers add agent files only to a fork of its index, and pair its entries with
        their own units (:meth:`ReferenceSide.entries_for`): a unit's cells and origin are not
        part of the key.
    """
    key = (side_key(references, boilerplate), options.kgram_length, options.kgrams_in_window, options.max_doc_fraction)
    with _PREPARED_LOCK:
        side = _PREPARED.get(key)
    if side is not None:
        return side
    index = FingerprintIndex(options.kgram_length, options.kgrams_in_window, options.max_doc_fraction)
    skipped: list[Skipped] = []
    index_units(index, boilerplate, Role.BOILERPLATE, skipped)  # a run's starter files: never kept
    entries = index_units(index, references, Role.REFERENCE, skipped, keep=keep)
    ignored = index.ignored_hashes
    side = ReferenceSide(index=index, reference_entries=entries, skipped=skipped, ignored=ignored,
                         tables=coverage_tables(entries, ignored), boilerplate=tuple(boilerplate), keep=keep)
    with _PREPARED_LOCK:
        _PREPARED.clear()
        _PREPARED[key] = side
    return side


def clear_prepared() -> None:
    """Forget the prepared side (tests; a long-lived process done with a corpus)."""
    with _PREPARED_LOCK:
        _PREPARED.clear()

