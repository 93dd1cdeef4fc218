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

:class:`CoverageTable` holds many files' hash counts at once, so that one file can be measured
against all of them in one pass (Dolos's covered counts for every pair of an all-pairs
comparison). :meth:`IndexedFile.from_hashes` rebuilds an indexed file from stored fingerprint
columns (a corpus index's references).

Naming: a file's *fingerprints* are its winnowed k-gram hashes in document order, Dolos's
"kgrams" of a file; an *occurrence* is one position of a hash in one file.
"""

from __future__ import annotations

import enum
import logging
from collections import Counter
from dataclasses import dataclass
from typing import Iterable, Mapping, Sequence

import numpy as np

from mleaudit.audit.similarity.tokenize import TokenizedFile
from mleaudit.audit.similarity.winnow import Fingerprint, _fingerprints_at, _int_objects, _kgram_selection

__all__ = ["CoverageTable", "FingerprintIndex", "IndexedFile", "Role"]

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

    def hash_counts(self, ignored: frozenset[int] | set[int] = frozenset()) -> tuple[np.ndarray, np.ndarray]:
        """The file's distinct fingerprint hashes that are not ``ignored``, and how often each occurs.

        Returns
        -------
        (ndarray, ndarray)
            int64 hashes (in first-occurrence order) and their occurrence counts (>= 1).
        """
        kept = [(value, len(positions)) for value, positions in self.occurrences.items() if value not in ignored]
        if not kept:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
        values, counts = zip(*kept)
        return np.array(values, dtype=np.int64), np.array(counts, dtype=np.int64)

    @classmethod
    def from_hashes(
        cls,
        *,
        id: int,
        role: Role,
        file: TokenizedFile,
        hashes: Sequence[int] | np.ndarray,
        kgram_starts: Sequence[int] | np.ndarray,
        kgram_length: int,
    ) -> "IndexedFile":
        """An indexed file from its winnowed fingerprints given as two columns.

        What winnowing selected (or what a corpus index stored) is enough to rebuild the
        :class:`Fingerprint` records and the occurrence map; the records equal the ones
        :func:`~mleaudit.audit.similarity.winnow.fingerprint_tokens` makes.

        Parameters
        ----------
        id : int
            The file's id in its index (see the class attributes).
        role : Role
        file : TokenizedFile
            The token stream the fingerprints index into; for a stored reference, a stand-in
            that answers ``path``, ``language`` and ``tokens_span`` (see
            :meth:`TokenizedFile.from_arrays`).
        hashes : sequence of int
            Fingerprint hashes in document order.
        kgram_starts : sequence of int
            Token index of each fingerprint's first token (its k-gram's index), ascending.
        kgram_length : int
            k, in tokens (each fingerprint covers ``start .. start + k - 1``).

        Returns
        -------
        IndexedFile

        Raises
        ------
        ValueError
            If the two columns differ in length or ``kgram_length < 1``.

        Examples
        --------
        >>> from mleaudit.audit.similarity.tokenize import TokenizedFile
        >>> stand_in = TokenizedFile.from_arrays(path="k.py", language="python", text="")
        >>> entry = IndexedFile.from_hashes(id=0, role=Role.REFERENCE, file=stand_in, hashes=[7, 9, 7],
        ...                                 kgram_starts=[0, 4, 9], kgram_length=23)
        >>> entry.occurrences[7], entry.fingerprints[1].stop
        ((0, 2), 26)
        """
        if kgram_length < 1:
            raise ValueError(f"{file.path}: k-gram length must be >= 1, got {kgram_length}")
        values = np.asarray(hashes, dtype=np.int64).reshape(-1)
        starts = np.asarray(kgram_starts, dtype=np.int64).reshape(-1)
        if len(values) != len(starts):
            raise ValueError(f"{file.path}: {len(values)} fingerprint hashes but {len(starts)} k-gram starts")
        value_list = values.tolist()
        return cls(
            id=id,
            role=role,
            file=file,
            fingerprints=tuple(_fingerprints_at(starts.tolist(), value_list, kgram_length)),
            occurrences=_occurrences(value_list),
        )


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
    >>> from mleaudit.audit.similarity.tokenize import tokenize_text
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
        positions, values = _kgram_selection(file.token_hashes, self.kgram_length, self.kgrams_in_window)
        entry = IndexedFile.from_hashes(id=len(self._files), role=role, file=file, hashes=values,
                                        kgram_starts=positions, kgram_length=self.kgram_length)
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

    def fork(self) -> "FingerprintIndex":
        """A copy holding the same files, to which files can be added without changing this one
        (the files already indexed are shared: they are never changed once added)."""
        copy = FingerprintIndex(self.kgram_length, self.kgrams_in_window, self.max_doc_fraction)
        copy._files = list(self._files)
        copy._reference_docs = Counter(self._reference_docs)
        copy._boilerplate_hashes = set(self._boilerplate_hashes)
        copy._extra_ignored = set(self._extra_ignored)
        copy._ignored_cache = self._ignored_cache
        return copy

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


class CoverageTable:
    """Many files' distinct keys with their occurrence counts, to measure one query against all.

    For a query file, :meth:`shared_counts` gives in one pass over the table, for every row, the
    query's occurrences whose key the row also has and the row's occurrences whose key the query
    also has: Dolos's ``leftCovered`` and ``rightCovered`` of every (query, row) pair when the
    keys are fingerprint hashes with the ignored ones left out (:meth:`IndexedFile.hash_counts`).
    The cost is one pass over the table's entries per query, instead of one set intersection
    per pair.

    Parameters
    ----------
    rows : sequence of (ndarray, ndarray)
        Per file: its distinct keys (int64, any order, no repeats) and each key's occurrence
        count (>= 1).

    Examples
    --------
    >>> import numpy as np
    >>> table = CoverageTable([(np.array([1, 2]), np.array([1, 3])), (np.array([9]), np.array([2]))])
    >>> query_covered, row_covered = table.shared_counts(np.array([2, 5]), np.array([4, 1]))
    >>> query_covered.tolist(), row_covered.tolist()
    ([4.0, 0.0], [3.0, 0.0])
    """

    def __init__(self, rows: Sequence[tuple[np.ndarray, np.ndarray]]) -> None:
        self.n_rows = len(rows)
        keys = [np.asarray(k, dtype=np.int64).reshape(-1) for k, _ in rows]
        counts = [np.asarray(c, dtype=np.float64).reshape(-1) for _, c in rows]
        for row, (k, c) in enumerate(zip(keys, counts)):
            if len(k) != len(c):
                raise ValueError(f"coverage row {row}: {len(k)} keys but {len(c)} counts")
        every = np.concatenate(keys) if keys else np.zeros(0, dtype=np.int64)
        self._vocabulary = np.unique(every)
        # One entry per (row, key): its row, its key's column and the row's count of the key.
        self._entry_rows = np.repeat(np.arange(self.n_rows, dtype=np.int64), [len(k) for k in keys])
        self._entry_columns = np.searchsorted(self._vocabulary, every)
        self._entry_counts = np.concatenate(counts) if counts else np.zeros(0)
        self._frequency: np.ndarray | None = None  # rows per key, built on first use

    def _columns(self, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        keys = np.asarray(keys, dtype=np.int64).reshape(-1)
        if not len(self._vocabulary) or not len(keys):
            return np.zeros(0, dtype=np.int64), np.zeros(len(keys), dtype=bool)
        columns = np.searchsorted(self._vocabulary, keys)
        known = columns < len(self._vocabulary)
        known[known] = self._vocabulary[columns[known]] == keys[known]
        return columns[known], known

    def document_frequency(self, keys: np.ndarray) -> np.ndarray:
        """How many rows hold each of ``keys`` (0 for keys no row has)."""
        if self._frequency is None:
            self._frequency = np.bincount(self._entry_columns, minlength=len(self._vocabulary))
        keys = np.asarray(keys, dtype=np.int64).reshape(-1)
        out = np.zeros(len(keys), dtype=np.int64)
        columns, known = self._columns(keys)
        out[known] = self._frequency[columns]
        return out

    def shared_counts(self, keys: np.ndarray, counts: np.ndarray,
                      weights: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """For every row: the query's covered occurrences and the row's covered occurrences.

        Parameters
        ----------
        keys : ndarray
            The query's distinct keys.
        counts : ndarray
            Their occurrence counts in the query.
        weights : ndarray, optional
            A weight per query key; ``query_covered`` then sums ``count * weight``.

        Returns
        -------
        query_covered, row_covered : ndarray of float64, shape (n_rows,)
            Sums over the keys the query and the row share (exact integers when unweighted).
        """
        columns, known = self._columns(keys)
        values = np.asarray(counts, dtype=np.float64).reshape(-1)[known]
        if weights is not None:
            values = values * np.asarray(weights, dtype=np.float64).reshape(-1)[known]
        query = np.zeros(len(self._vocabulary))
        query[columns] = values
        present = np.zeros(len(self._vocabulary), dtype=bool)
        present[columns] = True
        at = self._entry_columns
        query_covered = np.bincount(self._entry_rows, weights=query[at], minlength=self.n_rows)
        row_covered = np.bincount(self._entry_rows, weights=self._entry_counts * present[at], minlength=self.n_rows)
        return query_covered.astype(np.float64), row_covered.astype(np.float64)
