"""Measuring agent files against the references: both containments from hash counts, the copy
detector's score where it can matter, and the pairs each file keeps (see :func:`compare
<mleaudit.audit.similarity.comparison.compare>`), in this process or in forked workers."""

from __future__ import annotations

import multiprocessing
import signal
import threading
from dataclasses import dataclass, field
from typing import Mapping, Sequence

import numpy as np

from mleaudit.audit.similarity.bounds import SeedLocations, needed_bits, seed_table, upper_token_bits, window_bounds
from mleaudit.audit.similarity.detect import DetectionCorpus, Evidence, Profile, profile_code
from mleaudit.audit.similarity.fingerprint_index import CoverageTable, IndexedFile
from mleaudit.audit.similarity.options import SimilarityOptions
from mleaudit.audit.units import CodeUnit

def coverage_tables(
    entries: Sequence[tuple[CodeUnit, IndexedFile]], ignored: frozenset[int]
) -> dict[str, tuple[np.ndarray, CoverageTable, np.ndarray]]:
    """Per language: the positions of its references, their :class:`CoverageTable` of countable
    hashes, and their countable fingerprint occurrences (total minus ignored), aligned."""
    by_language: dict[str, list[int]] = {}
    for position, (unit, _) in enumerate(entries):
        by_language.setdefault(unit.language, []).append(position)
    tables = {}
    for language, positions in by_language.items():
        rows = [entries[k][1].hash_counts(ignored) for k in positions]
        countable = [len(entries[k][1].fingerprints) - _ignored_occurrences(entries[k][1], ignored) for k in positions]
        tables[language] = (np.array(positions, dtype=np.int64), CoverageTable(rows),
                            np.array(countable, dtype=np.float64))
    return tables


def _ignored_occurrences(entry: IndexedFile, ignored: frozenset[int]) -> int:
    if not ignored:
        return 0
    return sum(len(positions) for value, positions in entry.occurrences.items() if value in ignored)


def _ratio(covered: np.ndarray, countable: np.ndarray) -> np.ndarray:
    """:func:`containment` element-wise: ``covered / countable``, 0 where nothing is countable."""
    out = np.zeros(len(covered))
    positive = countable > 0
    out[positive] = covered[positive] / countable[positive]
    return out


@dataclass(frozen=True, slots=True)
class Comparison:
    """What measuring an agent file needs (inherited by forked worker processes, see :func:`compare`)."""

    agents: list[tuple[CodeUnit, IndexedFile]]
    reference_paths: list[str]
    ignored: frozenset[int]
    tables: Mapping[str, tuple[np.ndarray, CoverageTable, np.ndarray]]
    detector: DetectionCorpus | None
    options: SimilarityOptions
    #: The detector references' seeds, for the bound that spares scoring most pairs.
    seeds: SeedLocations | None = None
    #: Per agent unit and per reference (in the order of ``agents`` and ``reference_paths``), the
    #: owner each belongs to as a number (``-1``: none): pairs of one owner are not measured.
    agent_owners: np.ndarray | None = None
    reference_owners: np.ndarray | None = None
    #: Detector evidence by agent profile (:meth:`Profile.content_key`), with the references it
    #: was scored against: a journal holds the same code in several nodes, and its best solution
    #: again in a file.
    scored: dict[tuple, tuple[np.ndarray, list[Evidence | None]]] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class MeasuredPair:
    """A measured pair that may become a report (what a ``select`` of :func:`compare
    <mleaudit.audit.similarity.comparison.compare>` chooses from).

    Attributes
    ----------
    agent, reference : CodeUnit
        The two units measured.
    agent_containment : float
        Share of the agent unit's countable fingerprints found in the reference, in [0, 1].
    score : float
        The copy detector's score in [0, 1) (0 where the detector does not run); higher = more
        evidence of copying.
    flagged : bool
        ``score >= options.score_threshold``.
    """

    agent: CodeUnit
    reference: CodeUnit
    agent_containment: float
    score: float
    flagged: bool


def _same_owner(agent: int, positions: np.ndarray, shared: Comparison) -> np.ndarray | None:
    """Per reference of ``positions``, whether it has the agent unit's owner (``None``: no owners)."""
    if shared.agent_owners is None or shared.reference_owners is None:
        return None
    owner = int(shared.agent_owners[agent])
    if owner < 0:
        return None
    return shared.reference_owners[positions] == owner


def _evidence(agent: Profile, wanted: np.ndarray | None, shared: Comparison) -> list[Evidence | None]:
    """The detector's evidence against the ``wanted`` references (all for ``None``), each pair
    scored once per agent code: a pair's evidence depends on its two sides only, so what an
    earlier unit with the same code was scored against is reused and the rest added. Rows not
    wanted are ``None``, whatever was scored before."""
    detector = shared.detector
    assert detector is not None
    count = len(detector.references)
    wanted = np.ones(count, dtype=bool) if wanted is None else np.asarray(wanted, dtype=bool)
    key = agent.content_key()
    known = shared.scored.get(key)
    if known is None:
        found = detector.evidence_all(agent, wanted=None if bool(wanted.all()) else wanted)
        shared.scored[key] = (wanted.copy(), list(found))
        return found
    have, found = known
    missing = wanted & ~have
    if missing.any():
        for row, value in enumerate(detector.evidence_all(agent, wanted=missing)):
            if missing[row]:
                found[row] = value
        have |= missing
    return [value if chosen else None for value, chosen in zip(found, wanted.tolist())]


def _worth_scoring(agent: Profile, visible: np.ndarray, shared: Comparison) -> np.ndarray | None:
    """Which detector references the agent file must be scored against (``None``: all).

    A pair is kept when it is flagged or visible, so its score is needed only then: for the
    visible ones, and for those whose :func:`~mleaudit.audit.similarity.bounds.window_bound`
    (an upper bound of the detector's evidence) reaches the score threshold. The rest cannot be
    flagged, and are not scored. With ``max_pairs_per_agent == 0`` only flagged pairs are kept,
    and visible ones need no score either.
    """
    detector = shared.detector
    if shared.options.max_pairs_per_agent == 0:
        visible = np.zeros_like(visible)
    if detector is None or shared.seeds is None or bool(visible.all()):
        return None
    upper = upper_token_bits(agent, detector.table, detector.background)
    bounds = window_bounds(seed_table(upper, agent.seed_keys()), shared.seeds)
    needed = needed_bits(shared.options.score_threshold)
    return visible | (bounds >= needed)


@dataclass(frozen=True, slots=True)
class _Candidate:
    """A measured pair that may be kept: agent unit and reference (indices), the figures it is
    ranked by, and the detector's evidence (``None`` where the detector does not run)."""

    agent: int
    reference: int
    agent_containment: float
    score: float
    flagged: bool
    visible: bool  # either containment reaches the display threshold
    evidence: Evidence | None


def _measure_file(members: Sequence[int], shared: Comparison) -> list[_Candidate]:
    """Measure one agent file (its units ``members``) against every reference of its language
    and return the pairs the file keeps: flagged ones, its top N by score, its top N by
    agent containment (N = ``max_pairs_per_agent``)."""
    options = shared.options
    candidates: list[_Candidate] = []
    for a in members:
        unit, entry = shared.agents[a]
        table = shared.tables.get(unit.language)
        if table is None:
            continue
        positions, coverage, countable = table
        agent_covered, reference_covered = coverage.shared_counts(*entry.hash_counts(shared.ignored))
        agent_countable = float(len(entry.fingerprints) - _ignored_occurrences(entry, shared.ignored))
        agent_containment = _ratio(agent_covered, np.full(len(positions), agent_countable))
        visible = np.maximum(agent_containment, _ratio(reference_covered, countable)) >= options.display_threshold
        excluded = _same_owner(a, positions, shared)
        if excluded is not None:
            visible &= ~excluded
        evidence: Sequence[Evidence | None] = [None] * len(positions)
        if shared.detector is not None and unit.language == "python":
            # Every Python reference is a detector reference, in the order of `positions`.
            agent = profile_code(unit.text, unit.path)
            wanted = _worth_scoring(agent, visible, shared)
            if excluded is not None:
                wanted = ~excluded if wanted is None else wanted & ~excluded
            evidence = _evidence(agent, wanted, shared)
        for row, k in enumerate(positions.tolist()):
            if excluded is not None and excluded[row]:
                continue
            found = evidence[row]
            score = found.score if found is not None else 0.0
            flagged = found is not None and score >= options.score_threshold
            if flagged or visible[row]:
                candidates.append(_Candidate(agent=a, reference=k, agent_containment=float(agent_containment[row]),
                                             score=score, flagged=flagged, visible=bool(visible[row]),
                                             evidence=found))
    n = options.max_pairs_per_agent
    if n is None:
        return candidates
    paths = shared.reference_paths
    by_score = sorted(candidates, key=lambda c: (-c.score, -c.agent_containment, paths[c.reference]))
    by_containment = sorted((c for c in candidates if c.visible), key=lambda c: (-c.agent_containment, paths[c.reference]))
    chosen = {(c.agent, c.reference) for c in [*by_score[:n], *by_containment[:n]]}
    return [c for c in candidates if c.flagged or (c.agent, c.reference) in chosen]


def kept_overall(candidates: list[_Candidate], shared: Comparison) -> list[_Candidate]:
    """``max_pairs`` of all files' kept pairs, first in report order, plus every flagged pair."""
    limit = shared.options.max_pairs
    if limit is None:
        return candidates
    paths = shared.reference_paths
    ordered = sorted((c for c in candidates if c.visible),
                     key=lambda c: (-c.agent_containment, paths[c.reference], shared.agents[c.agent][0].path))
    chosen = {(c.agent, c.reference) for c in ordered[:limit]}
    return [c for c in candidates if c.flagged or (c.agent, c.reference) in chosen]


#: Set in the parent before worker processes fork (they inherit it; nothing is pickled).
_SHARED: Comparison | None = None
_POOL_LOCK = threading.Lock()


def ignore_sigint() -> None:
    """Initializer of a worker pool: Ctrl-C is left to the parent process, which stops the pool,
    so that the workers do not each print a KeyboardInterrupt traceback."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _measure_file_in_worker(members: Sequence[int]) -> list[_Candidate]:
    if _SHARED is None:  # compare() sets it before the pool starts
        raise RuntimeError("similarity worker started without a comparison")
    return _measure_file(members, _SHARED)


def _worker_count(jobs: int | None, files: int) -> int:
    """Worker processes for ``files`` agent files: 1 unless more are asked for, fork is
    available (the workers inherit the corpus instead of receiving a copy) and this process
    may have children."""
    if jobs is None or jobs <= 1 or files < 2:
        return 1
    if "fork" not in multiprocessing.get_all_start_methods() or multiprocessing.current_process().daemon:
        return 1
    return min(jobs, files)




def measure_files(files: Sequence[Sequence[int]], shared: Comparison, jobs: int | None) -> tuple[list[_Candidate], int]:
    """Measure agent files (each a list of agent unit indices) and return the pairs they keep,
    file by file in order, with the number of processes that measured them (see
    :func:`_worker_count`; forked workers inherit ``shared``)."""
    global _SHARED
    workers = _worker_count(jobs, len(files))
    candidates: list[_Candidate] = []
    if workers == 1:
        for members in files:
            candidates.extend(_measure_file(members, shared))
        return candidates, workers
    # One pool at a time per process: the workers inherit `_SHARED` when they fork, and a second
    # thread setting it meanwhile would hand them its own comparison.
    with _POOL_LOCK:
        _SHARED = shared
        try:
            with multiprocessing.get_context("fork").Pool(workers, initializer=ignore_sigint) as pool:
                for found in pool.imap(_measure_file_in_worker, files):
                    candidates.extend(found)
        finally:
            _SHARED = None
    return candidates, workers
