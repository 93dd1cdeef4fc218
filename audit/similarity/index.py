"""An inverted index from fingerprint hashes to the files (and positions) where they occur.

Files enter the index in one of three roles, as copydetect separates them and Dolos's
``FingerprintIndex`` keeps an ignored template file apart:

- **boilerplate**: starter code, sample notebooks. Every fingerprint of a boilerplate file is
  *ignored*: it never counts as a match between two other files (Dolos ``addIgnoredFile``).
- **reference**: public kernels the agent code is compared with. With ``max_doc_fraction`` set,
  a fingerprint found in more than that share of the reference files is ignored too: code that
  most kernels share (reading the competition's CSV files, the usual imports) says nothing about
  copying (Dolos ``maxFingerprintPercentage``, which counts every analysed file; here only
  references count, so that several files of one agent run cannot mask their own matches).
- **agent**: the audited code. Agent files never change which fingerprints are ignored.

Naming: a file's *fingerprints* are its winnowed k-gram hashes in document order, Dolos's
"kgrams" of a file; an *occurrence* is one position of a hash in one file.
"""

from __future__ import annotations

import enum
import logging
from collections import Counter
from dataclasses import dataclass
from typing import Iterable, Mapping

import numpy as np

from audit.similarity.tokenize import TokenizedFile
from audit.similarity.winnow import Fingerprint, _fingerprints_at, _int_objects, _kgram_selection, hash_token

__all__ = ["Role", "IndexedFile", "FingerprintIndex"]

logger = logging.getLogger(__name__)


class Role(enum.Enum):
    """The part a file plays in a comparison."""

    AGENT = "agent"
    REFERENCE = "reference"
    BOILERPLATE = "boilerplate"


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class IndexedFile:
    """A tokenized file with its fingerprints, as held by a :class:`FingerprintIndex`.

    Attributes
    ----------
    id : int
        Order of insertion into the index (unique per index; paths need not be unique, since
        several code blocks of one log share the log's path).
    role : Role
    file : TokenizedFile
    fingerprints : tuple of Fingerprint
        Winnowed fingerprints in document order (``fingerprints[i].index == i``).
    occurrences : Mapping[int, tuple of int]
        Hash -> indices into ``fingerprints`` where it occurs, ascending.
    """

    id: int
    role: Role
    file: TokenizedFile
    fingerprints: tuple[Fingerprint, ...]
    occurrences: Mapping[int, tuple[int, ...]]

    @property
    def path(self) -> str:
        return self.file.path

    @property
    def hashes(self) -> frozenset[int]:
        """The distinct fingerprint hashes of the file."""
        return frozenset(self.occurrences)


def _occurrences(hashes: list[int]) -> dict[int, tuple[int, ...]]:
    """Hash -> ascending fingerprint indices, keys in order of first occurrence.

    Most hashes occur once in a file; those entries are built in one pass, and only hashes
    that repeat get their index tuples assembled from a stable sort.
    """
    indices = _int_objects(np.arange(len(hashes)))
    # Assigning again keeps a key's first position, so the keys come out in first-occurrence order.
    occurrences = dict(zip(hashes, zip(indices)))
    if len(occurrences) == len(hashes):
        return occurrences
    values = np.asarray(hashes, dtype=np.int64)
    order = np.argsort(values, kind="stable")
    ordered = values[order]
    group_starts = np.flatnonzero(np.concatenate(([True], ordered[1:] != ordered[:-1])))
    sizes = np.diff(np.append(group_starts, len(values)))
    by_hash = _int_objects(order)
    for start, size in zip(group_starts[sizes > 1].tolist(), sizes[sizes > 1].tolist()):
        occurrences[hashes[by_hash[start]]] = tuple(by_hash[start : start + size])
    return occurrences


class FingerprintIndex:
    """Fingerprints of boilerplate, reference and agent files, and which hashes to ignore.

    Parameters
    ----------
    kgram_length : int, default 23
        k, in tokens (Dolos ``kgramLength``).
    kgrams_in_window : int, default 17
        Winnowing window, in k-grams (Dolos ``kgramsInWindow``).
    max_doc_fraction : float or None, default None
        Ignore a hash found in more than ``max_doc_fraction * n_references`` reference files.
        ``None`` keeps every hash (Dolos's default).

    Examples
    --------
    >>> from audit.similarity.tokenize import tokenize_text
    >>> index = FingerprintIndex()
    >>> ref = index.add_reference(tokenize_text("x = [i * 2 for i in range(10)]\\n", "python", "k.py"))
    >>> agent = index.add_agent(tokenize_text("y = [j * 2 for j in range(3)]\\n", "python", "a.py"))
    >>> agent.hashes == ref.hashes
    True
    """

    def __init__(
        self,
        kgram_length: int = 23,
        kgrams_in_window: int = 17,
        max_doc_fraction: float | None = None,
    ) -> None:
        self.kgram_length = kgram_length
        self.kgrams_in_window = kgrams_in_window
        self.max_doc_fraction = max_doc_fraction
        self._files: list[IndexedFile] = []
        # hash -> number of reference files that contain it (each file is added once, with its
        # own id, so counting files equals counting their distinct ids)
        self._reference_docs: Counter[int] = Counter()
        self._boilerplate_hashes: set[int] = set()
        self._extra_ignored: set[int] = set()
        self._ignored_cache: frozenset[int] | None = None

    # -- adding files --------------------------------------------------------------------------

    def _add(self, file: TokenizedFile, role: Role) -> IndexedFile:
        hashes = file._hashes
        if hashes is None or len(hashes) != len(file.tokens):
            hashes = np.fromiter(map(hash_token, file.tokens), dtype=np.int64, count=len(file.tokens))
        positions, values = _kgram_selection(np.asarray(hashes, dtype=np.int64), self.kgram_length,
                                             self.kgrams_in_window)
        entry = IndexedFile(
            id=len(self._files),
            role=role,
            file=file,
            fingerprints=tuple(_fingerprints_at(positions, values, self.kgram_length)),
            occurrences=_occurrences(values),
        )
        self._files.append(entry)
        if role is Role.REFERENCE:
            self._reference_docs.update(entry.occurrences.keys())
            self._ignored_cache = None
        elif role is Role.BOILERPLATE:
            self._boilerplate_hashes.update(entry.occurrences)
            self._ignored_cache = None
        return entry

    def add_reference(self, file: TokenizedFile) -> IndexedFile:
        """Index a reference file (a public kernel)."""
        return self._add(file, Role.REFERENCE)

    def add_boilerplate(self, file: TokenizedFile) -> IndexedFile:
        """Index a boilerplate file: all of its fingerprints become ignored."""
        return self._add(file, Role.BOILERPLATE)

    def add_agent(self, file: TokenizedFile) -> IndexedFile:
        """Index an agent file (audited code)."""
        return self._add(file, Role.AGENT)

    def add_ignored_hashes(self, hashes: Iterable[int]) -> None:
        """Ignore the given fingerprint hashes as well (Dolos ``addIgnoredHashes``)."""
        self._extra_ignored.update(int(h) for h in hashes)
        self._ignored_cache = None

    # -- queries -------------------------------------------------------------------------------

    def files(self, role: Role | None = None) -> list[IndexedFile]:
        """Indexed files in insertion order, optionally only those of one role."""
        return [f for f in self._files if role is None or f.role is role]

    def document_frequency(self, value: int) -> int:
        """Number of reference files whose fingerprints include hash ``value``."""
        return self._reference_docs.get(value, 0)

    @property
    def ignored_hashes(self) -> frozenset[int]:
        """Hashes that never count as a match: boilerplate, explicitly ignored, too common."""
        if self._ignored_cache is None:
            ignored = set(self._boilerplate_hashes) | self._extra_ignored
            if self.max_doc_fraction is not None:
                n_references = sum(1 for f in self._files if f.role is Role.REFERENCE)
                limit = self.max_doc_fraction * n_references
                common = {h for h, count in self._reference_docs.items() if count > limit}
                logger.debug("%d of %d reference hashes are in more than %s of %d references",
                             len(common), len(self._reference_docs), self.max_doc_fraction, n_references)
                ignored |= common
            self._ignored_cache = frozenset(ignored)
        return self._ignored_cache
