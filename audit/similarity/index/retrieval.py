"""Candidate retrieval: the references sharing an agent file's fingerprints, from the inverted index.

**Candidate retrieval** from an inverted index: fingerprint hash -> (reference, number of
occurrences). Summing the postings of an agent file's hashes gives, for *every* reference at
once, the exact number of agent fingerprint occurrences the reference shares (Dolos's
``leftCovered``) and of its own (``rightCovered``), hence the exact agent containment and
(boilerplate aside) reference containment. References with
``max(agent_containment, reference_containment) >= min_containment`` are the candidates, so
retrieval misses no pair above that threshold: recall is 1 by construction, not a sampling
estimate.

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
"""

from __future__ import annotations

import logging
from typing import Callable

import numpy as np

from mleaudit.audit.model import Skipped
from mleaudit.audit.parsing import LANGUAGES
from mleaudit.audit.similarity import SimilarityOptions
from mleaudit.audit.similarity.corpus import MAX_REFERENCE_BYTES
from mleaudit.audit.similarity.fingerprint_index import FingerprintIndex, IndexedFile
from mleaudit.audit.similarity.index.format import _KEY_STRIDE, CorpusIndexError
from mleaudit.audit.similarity.index.postings import _count_ids
from mleaudit.audit.similarity.index.state import _OpenIndex
from mleaudit.audit.similarity.index.storage import _guarded
from mleaudit.audit.similarity.tokenize import tokenize_text
from mleaudit.audit.units import CodeUnit

logger = logging.getLogger(__name__)

#: Candidates need ``max(agent_containment, reference_containment)`` at least this high. Low on
#: purpose: exact scoring then decides, and partial copies of a few cells can have an agent
#: containment near 0.1.
DEFAULT_MIN_CONTAINMENT = 0.05


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


class _Retrieving(_OpenIndex):
    """:meth:`candidates`, and the retrieval and ranking :meth:`compare` starts from."""

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


def _check_fraction(name: str, value: float) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
        raise CorpusIndexError(f"{name} must be a number in [0, 1], got {value!r}")
