"""Pair figures between an agent file and a reference file: Dolos's metrics, containment, fragments.

Dolos's figures (``core/src/algorithm/pair.ts``, Dolos 3.5.1), for files L and R with fingerprint
sequences (their "kgrams") and the set S of hashes found in both and not ignored:

- ``left_total`` / ``right_total``: length of each fingerprint sequence (every occurrence counts);
- ``left_covered`` / ``right_covered``: occurrences in L (in R) whose hash is in S;
- ``total_overlap`` = ``left_covered + right_covered``;
- ``similarity`` = ``total_overlap / (left_total + right_total)`` (ignored occurrences are taken
  out of the denominator, see :func:`dolos_metrics`);
- ``longest_fragment``: Dolos's longest common run of shared fingerprints (see
  :func:`longest_common_run`; computed exactly as Dolos does, quirks included). Dolos's loop
  takes one step per pair of occurrences of a shared hash, which is quadratic in how often a
  hash repeats (5,000 nested parentheses: 10**8 steps); past :data:`MAX_RUN_VISITS` steps the
  same number comes from a longest common substring in ``O(n log^2 n)``.

For every pair of many files at once, :func:`mleaudit.audit.similarity.allpairs.all_pair_metrics`
computes the same figures with numpy.

Containment, which Dolos lacks (copydetect's measure): the share of one file's fingerprint
occurrences whose hash the other file also has, ignored hashes left out of both counts.

The copy detector's figures (``score``, ``flagged``, ``evidence_fragments``) come from
:mod:`mleaudit.audit.similarity.detect` and are attached by :func:`pair_report` when the caller passes the
detector's :class:`~mleaudit.audit.similarity.detect.Evidence`; Dolos's figures never depend on them.

Fragments are Dolos's: every pair of occurrences of one shared hash (one in each file) is a
*paired occurrence*; paired occurrences whose fingerprint indices are consecutive on both sides
chain into a fragment; a fragment contained (on both sides) in a bigger one is dropped. Fragments
carry no figure of Dolos's report (its ``longest_fragment`` comes from its own run count), so they
are built with an exact containment check where Dolos uses a one-pass approximation. Repetitive
code has millions of paired occurrences; fragments are built from at most
:data:`MAX_FRAGMENT_PAIRINGS` of them (see :func:`build_fragments`), so that a pathological file
costs a fraction of a second, with every figure still exact.
"""

from __future__ import annotations

import bisect
import logging
import re
from bisect import insort
from collections import defaultdict
from dataclasses import dataclass
from itertools import chain
from typing import Any, Sequence

import numpy as np

from mleaudit.audit.model import Span
from mleaudit.audit.similarity.detect import DEFAULT_SCORE_THRESHOLD, Evidence, Profile
from mleaudit.audit.similarity.fingerprint_index import IndexedFile

logger = logging.getLogger(__name__)

__all__ = [
    "MAX_FRAGMENT_PAIRINGS",
    "MAX_RUN_VISITS",
    "DolosMetrics",
    "Fragment",
    "KgramMatch",
    "PairReport",
    "build_fragments",
    "containment",
    "evidence_fragments",
    "dolos_metrics",
    "longest_common_run",
    "pair_report",
]


#: :func:`longest_common_run` follows Dolos's loop (one step per pair of occurrences of a shared
#: hash) up to this many steps, then computes the same number as a longest common substring.
MAX_RUN_VISITS = 20_000
#: :func:`build_fragments` pairs at most this many occurrences (see its Notes).
MAX_FRAGMENT_PAIRINGS = 100_000


@dataclass(frozen=True, slots=True, kw_only=True)
class DolosMetrics:
    """Dolos's pair figures for files ``left`` and ``right`` (see the module docstring).

    ``left_ignored`` / ``right_ignored`` count fingerprint occurrences whose hash is ignored.
    """

    similarity: float
    total_overlap: int
    longest_fragment: int
    left_covered: int
    right_covered: int
    left_total: int
    right_total: int
    left_ignored: int = 0
    right_ignored: int = 0


def longest_common_run(left: list[tuple[int, int]], right: list[tuple[int, int]]) -> int:
    """Dolos's ``longestCommonSubstring`` over the shared occurrences of two files.

    Parameters
    ----------
    left, right : list of (index, hash)
        Each file's occurrences of shared hashes, sorted by fingerprint index.

    Returns
    -------
    int
        The length of the longest run, counted the way Dolos counts it: the shorter list (``left``
        when strictly shorter, else ``right``) must have consecutive fingerprint *indices*, the
        longer list consecutive *list positions* (its non-shared fingerprints are skipped). This
        asymmetry is Dolos's, kept so that ``longest_fragment`` equals Dolos's number.

    Examples
    --------
    The lists are equally long, so ``right`` is the short side and needs consecutive indices:

    >>> longest_common_run([(0, 7), (1, 8), (2, 9)], [(4, 7), (5, 8), (9, 9)])
    2

    ``left`` is shorter: its indices are consecutive, the gap between 3 and 8 on the right is
    not seen:

    >>> longest_common_run([(0, 7), (1, 8)], [(3, 7), (8, 8), (9, 5)])
    2
    """
    if len(left) < len(right):
        short, long = left, right
    else:
        short, long = right, left
    by_hash: dict[int, list[int]] = defaultdict(list)
    for index, value in short:
        by_hash[value].append(index)
    longest = 0
    visits = 0
    previous: dict[int, int] = {}
    for _, value in long:
        current: dict[int, int] = {}
        indices = by_hash.get(value, ())
        # Dolos's loop visits every (long occurrence, short occurrence) of one hash: quadratic
        # in a hash's repetitions. Past a bound, the same number comes from a longest common
        # substring.
        visits += len(indices)
        if visits > MAX_RUN_VISITS:
            return _longest_run_by_substring(short, long)
        for index in indices:
            run = previous.get(index - 1, 0) + 1
            current[index] = run
            if run > longest:
                longest = run
        previous = current
    return longest


def _longest_run_by_substring(short: list[tuple[int, int]], long: list[tuple[int, int]]) -> int:
    """:func:`longest_common_run` as a longest common substring (exact, ``O(n log^2 n)``).

    A run pairs consecutive list positions of ``long`` with consecutive fingerprint indices of
    ``short``, so it is a common substring of ``long``'s hashes and ``short``'s fingerprint
    sequence, in which the indices missing from ``short`` (fingerprints that are not shared)
    hold values that match nothing.
    """
    from mleaudit.audit.similarity.allpairs import longest_common_substring

    size = short[-1][0] + 1 if short else 0
    sequence = -1 - np.arange(size, dtype=np.int64)  # distinct negative values: never equal to a hash
    sequence[[index for index, _ in short]] = [value for _, value in short]
    return longest_common_substring(np.array([value for _, value in long], dtype=np.int64), sequence)


def _shared_occurrences(side: IndexedFile, shared: set[int]) -> list[tuple[int, int]]:
    return [(f.index, f.hash) for f in side.fingerprints if f.hash in shared]


def _ignored_count(side: IndexedFile, ignored: frozenset[int]) -> int:
    if not ignored:
        return 0
    return sum(len(positions) for value, positions in side.occurrences.items() if value in ignored)


def dolos_metrics(left: IndexedFile, right: IndexedFile, ignored: frozenset[int] = frozenset()) -> DolosMetrics:
    """Dolos's pair figures for two indexed files.

    Parameters
    ----------
    left, right : IndexedFile
        The two files; ``longest_fragment`` depends on which is left (Dolos's asymmetry).
    ignored : frozenset of int
        Hashes that never count as shared (boilerplate, too common).

    Returns
    -------
    DolosMetrics
        With no ignored hashes every figure equals Dolos 3.5.1's. With ignored hashes the
        similarity's denominator drops each side's ignored *occurrences*; Dolos 3.5.1 drops the
        number of distinct ignored hashes of the left file twice (``leftIgnored`` is used for
        both sides in ``pair.ts``), which can push its similarity above 1.
    """
    shared = (left.occurrences.keys() & right.occurrences.keys()) - ignored
    left_occ = _shared_occurrences(left, shared) if shared else []
    right_occ = _shared_occurrences(right, shared) if shared else []
    left_ignored = _ignored_count(left, ignored)
    right_ignored = _ignored_count(right, ignored)
    left_total = len(left.fingerprints)
    right_total = len(right.fingerprints)
    denominator = left_total + right_total - left_ignored - right_ignored
    overlap = len(left_occ) + len(right_occ)
    return DolosMetrics(
        similarity=overlap / denominator if denominator > 0 else 0.0,
        total_overlap=overlap,
        longest_fragment=longest_common_run(left_occ, right_occ) if shared else 0,
        left_covered=len(left_occ),
        right_covered=len(right_occ),
        left_total=left_total,
        right_total=right_total,
        left_ignored=left_ignored,
        right_ignored=right_ignored,
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class KgramMatch:
    """A fragment in fingerprint coordinates: ``left`` and ``right`` are half-open ranges of
    fingerprint indices of equal length (one paired occurrence per step)."""

    left: range
    right: range

    @property
    def length(self) -> int:
        return len(self.left)


#: A fragment while fragments are built: (left start, left stop, right start, right stop).
_Run = tuple[int, int, int, int]


def _left_stop(run: _Run) -> int:
    return run[1]


def _squash(runs: list[_Run]) -> list[_Run]:
    """Drop every fragment that lies inside another one on both sides.

    Dolos's ``squash`` does this in one pass over the fragments sorted by start and by end,
    which misses a fragment that starts where its container starts; here the check is exact.
    Walking by left start (longest first), only fragments whose left range still reaches the
    current start can contain what follows, and a dropped fragment never needs checking
    against (whatever it would contain, its container contains too).
    """
    order = sorted(runs, key=lambda r: (r[0], -r[1], r[2], -r[3]))
    active: list[_Run] = []
    kept: list[_Run] = []
    for run in order:
        left_start, left_stop, right_start, right_stop = run
        if active and active[0][1] <= left_start:
            active = [a for a in active if a[1] > left_start]
        contained = False
        for a in active:
            if a[1] >= left_stop and a[2] <= right_start and right_stop <= a[3]:
                contained = True
                break
        if contained:
            continue
        insort(active, run, key=_left_stop)  # kept ordered by left stop for the pruning above
        kept.append(run)
    return kept


def _pairings(left: IndexedFile, right: IndexedFile, values: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """Every paired occurrence of the hashes ``values``: fingerprint indices ``(a, b)``."""
    left_counts = np.array([len(left.occurrences[v]) for v in values], dtype=np.int64)
    right_counts = np.array([len(right.occurrences[v]) for v in values], dtype=np.int64)
    left_at = np.fromiter(chain.from_iterable(left.occurrences[v] for v in values), dtype=np.int64,
                          count=int(left_counts.sum()))
    right_at = np.fromiter(chain.from_iterable(right.occurrences[v] for v in values), dtype=np.int64,
                           count=int(right_counts.sum()))
    right_first = np.cumsum(right_counts) - right_counts
    # each left occurrence pairs with every right occurrence of its hash
    times = np.repeat(right_counts, left_counts)
    a = np.repeat(left_at, times)
    starts = np.repeat(np.repeat(right_first, left_counts), times)
    within = np.arange(len(a), dtype=np.int64) - np.repeat(np.cumsum(times) - times, times)
    return a, right_at[starts + within]


def _diagonal_runs(a: np.ndarray, b: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Maximal runs of paired occurrences consecutive on both sides: ``(start, stop, offset)``
    with left indices ``start..stop-1`` paired with ``start + offset..stop - 1 + offset``."""
    offset = b - a
    keys = (offset + size) * (size + 1) + a  # by diagonal, then by left index
    keys.sort()
    breaks = np.flatnonzero(np.diff(keys) != 1)
    first = keys[np.concatenate(([0], breaks + 1))]
    last = keys[np.append(breaks, len(keys) - 1)]
    offsets = first // (size + 1) - size
    return first % (size + 1), last % (size + 1) + 1, offsets


#: At most this many runs are extended along their diagonal when the pairings are capped.
_MAX_EXTENDED_RUNS = 1_000


def _extend_runs(starts: np.ndarray, stops: np.ndarray, offsets: np.ndarray, left: np.ndarray, right: np.ndarray,
                 budget: int) -> tuple[np.ndarray, np.ndarray]:
    """Grow runs along their diagonals while the fingerprints on both sides are equal
    (``left``/``right``: hashes, ignored ones replaced by values that never match), longest
    runs first, comparing at most ``budget`` fingerprints in all."""
    starts, stops = starts.copy(), stops.copy()
    n_left, n_right = len(left), len(right)
    for run in np.argsort(stops - starts, kind="stable")[::-1][:_MAX_EXTENDED_RUNS].tolist():
        if budget <= 0:
            break
        offset = int(offsets[run])
        for direction in (1, -1):
            position = int(stops[run]) if direction == 1 else int(starts[run]) - 1
            step = 8
            while budget > 0:
                if direction == 1:
                    end = min(position + step, n_left, n_right - offset)
                    if end <= position:
                        break
                    same = left[position:end] == right[position + offset : end + offset]
                else:
                    end = max(position - step, -1, -1 - offset)
                    if end >= position:
                        break
                    same = (left[end + 1 : position + 1] == right[end + 1 + offset : position + 1 + offset])[::-1]
                budget -= len(same)
                differ = np.flatnonzero(~same)
                if len(differ):
                    position += direction * int(differ[0])
                    break
                position = end
                step *= 2
            if direction == 1:
                stops[run] = position
            else:
                starts[run] = position + 1
    return starts, stops


def _merge_runs(starts: np.ndarray, stops: np.ndarray, offsets: np.ndarray) -> list[_Run]:
    """Runs of one diagonal that overlap or touch, merged; as (left start, left stop, right
    start, right stop)."""
    order = np.lexsort((starts, offsets))
    merged: list[_Run] = []
    previous_offset = None
    for start, stop, offset in zip(starts[order].tolist(), stops[order].tolist(), offsets[order].tolist()):
        if merged and offset == previous_offset and start <= merged[-1][1]:
            if stop > merged[-1][1]:
                first = merged[-1][0]
                merged[-1] = (first, stop, first + offset, stop + offset)
            continue
        merged.append((start, stop, start + offset, stop + offset))
        previous_offset = offset
    return merged


def build_fragments(
    left: IndexedFile,
    right: IndexedFile,
    ignored: frozenset[int] = frozenset(),
    min_kgrams: int = 1,
) -> list[KgramMatch]:
    """Chain paired occurrences into fragments (Dolos ``Pair.buildFragments``).

    Parameters
    ----------
    left, right : IndexedFile
    ignored : frozenset of int
        Hashes that never pair.
    min_kgrams : int, default 1
        Drop fragments of fewer paired occurrences (Dolos ``minFragmentLength``).

    Returns
    -------
    list of KgramMatch
        Maximal runs, consecutive on both sides, not contained in a longer run; sorted by left
        range, then right range.

    Notes
    -----
    Every occurrence of a shared hash pairs with every other occurrence of it, so code that
    repeats one statement thousands of times (5,000 nested parentheses: one hash at nearly
    every fingerprint) has millions of pairings. They are capped at
    :data:`MAX_FRAGMENT_PAIRINGS`: past it, the hashes with the most pairings are left out
    until the rest fits (ties by hash value), and the runs of the remaining pairings are then
    grown along their diagonals over equal fingerprints (comparing at most
    :data:`MAX_FRAGMENT_PAIRINGS` more fingerprints, longest runs first, at most 1,000 runs),
    which restores every fragment that also contains a rarer shared hash, such as a whole
    copied file. A run made only of the left-out hashes is not reported then. Fragments
    carry no figure of Dolos's report, so the cap never changes a figure
    (:func:`dolos_metrics` counts every occurrence).
    """
    shared = (left.occurrences.keys() & right.occurrences.keys()) - ignored
    if not shared:
        return []
    values = sorted(shared)
    pairings = np.array([len(left.occurrences[v]) * len(right.occurrences[v]) for v in values], dtype=np.int64)
    capped = int(pairings.sum()) > MAX_FRAGMENT_PAIRINGS
    if capped:
        # rarest first: the hashes that place a fragment; ties by hash value, for determinism
        order = np.lexsort((np.array(values, dtype=np.int64), pairings))
        fits = np.cumsum(pairings[order]) <= MAX_FRAGMENT_PAIRINGS
        chosen = np.sort(order[fits])
        logger.debug("%s x %s: %d pairings of %d shared hashes; fragments built from the %d rarest",
                     left.path, right.path, int(pairings.sum()), len(values), len(chosen))
        values = [values[i] for i in chosen.tolist()]
    size = max(len(left.fingerprints), len(right.fingerprints))
    if values:
        starts, stops, offsets = _diagonal_runs(*_pairings(left, right, values), size)
    else:
        starts = stops = offsets = np.zeros(0, dtype=np.int64)
    if capped and len(starts):
        left_hashes = np.fromiter((f.hash for f in left.fingerprints), dtype=np.int64, count=len(left.fingerprints))
        right_hashes = np.fromiter((f.hash for f in right.fingerprints), dtype=np.int64,
                                   count=len(right.fingerprints))
        if ignored:
            # ignored hashes never pair: make them unequal to everything
            never = np.fromiter(ignored, dtype=np.int64, count=len(ignored))
            left_hashes[np.isin(left_hashes, never)] = -1
            right_hashes[np.isin(right_hashes, never)] = -2
        starts, stops = _extend_runs(starts, stops, offsets, left_hashes, right_hashes, MAX_FRAGMENT_PAIRINGS)
        runs = _merge_runs(starts, stops, offsets)
    else:
        runs = list(zip(starts.tolist(), stops.tolist(), (starts + offsets).tolist(), (stops + offsets).tolist()))
    kept = sorted(r for r in _squash(runs) if r[1] - r[0] >= min_kgrams)
    return [KgramMatch(left=range(r[0], r[1]), right=range(r[2], r[3])) for r in kept]


@dataclass(frozen=True, slots=True, kw_only=True)
class Fragment:
    """A stretch of agent code that matches a stretch of reference code.

    Attributes
    ----------
    agent, reference : Span
        The matched regions (from the first token of the first k-gram to the last token of the
        last one), in the host file of each side.
    agent_kgrams, reference_kgrams : range
        The fingerprint indices on each side (half-open).
    length : int
        Number of paired fingerprints (k-grams) in the fragment.
    agent_location, reference_location : str
        Where the fragment starts, for people: ``"cell 3, line 2"`` in a notebook, else ``"line 12"``.
    """

    agent: Span
    reference: Span
    agent_kgrams: range
    reference_kgrams: range
    length: int
    agent_location: str = ""
    reference_location: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "agent": self.agent.to_dict(),
            "reference": self.reference.to_dict(),
            "agent_kgrams": [self.agent_kgrams.start, self.agent_kgrams.stop],
            "reference_kgrams": [self.reference_kgrams.start, self.reference_kgrams.stop],
            "length": self.length,
            "agent_location": self.agent_location,
            "reference_location": self.reference_location,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class PairReport:
    """How much of one agent file matches one reference file.

    Attributes
    ----------
    agent_path, reference_path : str
        POSIX paths (agent: relative to the run root; reference: relative to the corpus root).
    reference_id : str
        The reference's id (``owner/slug`` for a Kaggle kernel; else its path without suffix).
    similarity : float
        Dolos's symmetric similarity, in [0, 1]; higher is more alike.
    agent_containment : float
        ``agent_covered / (agent_total - agent_ignored)``: the share of the agent file's
        fingerprint occurrences (winnowed k-grams, counted with multiplicity) whose hash the
        reference also has, ignored hashes left out of both counts; in [0, 1], 0 when the agent
        file has no countable fingerprint. "How much of the agent code is in this kernel."
    reference_containment : float
        The same from the reference's side: "how much of this kernel is in the agent code".
    longest_fragment : int
        Dolos's longest common run of shared fingerprints.
    total_overlap : int
        ``agent_covered + reference_covered`` (Dolos ``totalOverlap``).
    agent_total, reference_total : int
        Fingerprint occurrences per file (Dolos ``leftTotal``/``rightTotal``).
    agent_covered, reference_covered : int
        Occurrences whose hash is shared (Dolos ``leftCovered``/``rightCovered``).
    agent_ignored, reference_ignored : int
        Occurrences whose hash is ignored (boilerplate, too common in the references).
    fragments : tuple of Fragment
        Dolos's fragments (runs of shared fingerprints), sorted by position in the agent file.
    score : float
        The copy detector's decision statistic (:mod:`mleaudit.audit.similarity.detect`), in [0, 1);
        higher = more likely that the agent file copied code from this reference. 0.0 when the
        detector did not run (a language it does not read).
    flagged : bool
        ``score`` reached the policy threshold (the ``score`` bound of the similarity rule in
        ``rules/plagiarism/``).
    evidence_fragments : tuple of Fragment
        The detector's best chain of copied stretches, in agent order. Here ``agent_kgrams`` and
        ``reference_kgrams`` are ranges of the detector's lexical tokens and ``length`` counts
        tokens, not k-grams; spans and locations mean the same as in ``fragments``.
    copied_lines : int
        Lines of the agent file that the evidence fragments cover (distinct lines).
    copied_fragments : int
        Evidence fragments counted as a reader sees them: stretches of the chain on adjacent or
        overlapping agent lines make one.
    """

    agent_path: str
    reference_path: str
    reference_id: str
    similarity: float
    agent_containment: float
    reference_containment: float
    longest_fragment: int
    total_overlap: int
    agent_total: int
    reference_total: int
    agent_covered: int
    reference_covered: int
    agent_ignored: int = 0
    reference_ignored: int = 0
    fragments: tuple[Fragment, ...] = ()
    score: float = 0.0
    flagged: bool = False
    evidence_fragments: tuple[Fragment, ...] = ()
    copied_lines: int = 0
    copied_fragments: int = 0

    @property
    def summary(self) -> str:
        """The evidence in words: ``"shares 41 lines in 3 fragments with owner/slug; copy score
        0.91"``, preceded by ``"copied: "`` only when the pair is flagged (its score reached the
        threshold); shared code below it is not called a copy."""
        fragments = "fragment" if self.copied_fragments == 1 else "fragments"
        lines = "line" if self.copied_lines == 1 else "lines"
        text = (f"shares {self.copied_lines} {lines} in {self.copied_fragments} {fragments} with "
                f"{self.reference_id}; copy score {self.score:.2f}")
        return f"copied: {text}" if self.flagged else text

    def sort_key(self) -> tuple:
        """Report order: agent containment descending, then reference path, then agent path."""
        return (-self.agent_containment, self.reference_path, self.agent_path)

    def to_dict(self) -> dict[str, Any]:
        return {
            "agent_path": self.agent_path,
            "reference_path": self.reference_path,
            "reference_id": self.reference_id,
            "similarity": self.similarity,
            "agent_containment": self.agent_containment,
            "reference_containment": self.reference_containment,
            "longest_fragment": self.longest_fragment,
            "total_overlap": self.total_overlap,
            "agent_total": self.agent_total,
            "reference_total": self.reference_total,
            "agent_covered": self.agent_covered,
            "reference_covered": self.reference_covered,
            "agent_ignored": self.agent_ignored,
            "reference_ignored": self.reference_ignored,
            "fragments": [f.to_dict() for f in self.fragments],
            "score": self.score,
            "flagged": self.flagged,
            "evidence_fragments": [f.to_dict() for f in self.evidence_fragments],
            "copied_lines": self.copied_lines,
            "copied_fragments": self.copied_fragments,
            "summary": self.summary,
        }


def containment(covered: int, total: int, ignored: int = 0) -> float:
    """``covered / (total - ignored)``, or 0.0 when nothing is left to count.

    Examples
    --------
    >>> containment(3, 10, 4)
    0.5
    >>> containment(0, 0)
    0.0
    """
    countable = total - ignored
    return covered / countable if countable > 0 else 0.0


def _kgram_span(side: IndexedFile, kgrams: range) -> Span:
    first = side.fingerprints[kgrams.start]
    last = side.fingerprints[kgrams.stop - 1]
    return side.file.tokens_span(first.start, last.stop)


def _kgram_spans(side: IndexedFile, ranges: Sequence[range]) -> list[Span]:
    """:func:`_kgram_span` of each range, with one vectorised look-up when the side's file offers
    ``tokens_spans`` (a pair can have hundreds of fragments)."""
    spans_of = getattr(side.file, "tokens_spans", None)
    if spans_of is None:
        return [_kgram_span(side, kgrams) for kgrams in ranges]
    fingerprints = side.fingerprints
    return spans_of([fingerprints[r.start].start for r in ranges], [fingerprints[r.stop - 1].stop for r in ranges])


def pair_report(
    agent: IndexedFile,
    reference: IndexedFile,
    ignored: frozenset[int] = frozenset(),
    *,
    reference_id: str = "",
    min_fragment_kgrams: int = 1,
    agent_unit: Any = None,
    reference_unit: Any = None,
    metrics: DolosMetrics | None = None,
    evidence: Evidence | None = None,
    agent_profile: Profile | None = None,
    reference_profile: Profile | None = None,
    score_threshold: float = DEFAULT_SCORE_THRESHOLD,
) -> PairReport:
    """Compare one agent file with one reference file.

    Parameters
    ----------
    agent, reference : IndexedFile
        Agent on Dolos's left side, reference on its right.
    ignored : frozenset of int
        Hashes that never count (``FingerprintIndex.ignored_hashes``).
    reference_id : str
        Recorded on the report (defaults to the reference path).
    min_fragment_kgrams : int, default 1
        Fragments with fewer paired fingerprints are not listed (the figures are unaffected).
    agent_unit, reference_unit : mleaudit.audit.units.CodeUnit, optional
        The units the files were tokenized from; when given, fragment spans are mapped to the
        host file (``CodeUnit.host_span``) and described (``CodeUnit.describe``).
    metrics : DolosMetrics, optional
        ``dolos_metrics(agent, reference, ignored)`` when already computed.
    evidence : Evidence, optional
        The copy detector's evidence for the pair (:meth:`DetectionCorpus.evidence`); sets
        ``score``, ``flagged`` and, with both profiles, ``evidence_fragments``. Without it the
        pair has ``score`` 0.0 and is not flagged.
    agent_profile, reference_profile : Profile, optional
        The detector's profiles of the two texts (token offsets for ``evidence_fragments``).
    score_threshold : float
        ``flagged`` is ``score >= score_threshold`` (the policy bound, read from the rules by
        the callers; :data:`~mleaudit.audit.similarity.detect.DEFAULT_SCORE_THRESHOLD` by default).

    Returns
    -------
    PairReport
    """
    if metrics is None:
        metrics = dolos_metrics(agent, reference, ignored)
    fragments: list[Fragment] = []
    if metrics.total_overlap:
        matches = build_fragments(agent, reference, ignored, min_fragment_kgrams)
        agent_spans = _kgram_spans(agent, [match.left for match in matches])
        reference_spans = _kgram_spans(reference, [match.right for match in matches])
        for match, agent_span, reference_span in zip(matches, agent_spans, reference_spans):
            fragments.append(
                Fragment(
                    agent=_host(agent_unit, agent_span),
                    reference=_host(reference_unit, reference_span),
                    agent_kgrams=match.left,
                    reference_kgrams=match.right,
                    length=match.length,
                    agent_location=_describe(agent_unit, agent_span),
                    reference_location=_describe(reference_unit, reference_span),
                )
            )
    score = evidence.score if evidence is not None else 0.0
    evidence_spans: tuple[Fragment, ...] = ()
    if evidence is not None and agent_profile is not None and reference_profile is not None:
        evidence_spans = evidence_fragments(evidence, agent_profile, reference_profile,
                                            agent_text=agent.file.text, reference_text=reference.file.text,
                                            agent_path=agent.path, reference_path=reference.path,
                                            agent_unit=agent_unit, reference_unit=reference_unit)
    copied_lines, copied_fragments = evidence_extent(evidence_spans)
    if evidence_spans and agent_unit is not None and agent_unit.origin is not None:
        # code read from a log record (a JSON string is one line of the log): its own lines
        copied_lines, copied_fragments = _unit_extent(evidence, agent_profile, agent.file.text)
    return PairReport(
        agent_path=agent.path,
        reference_path=reference.path,
        reference_id=reference_id or reference.path,
        similarity=metrics.similarity,
        agent_containment=containment(metrics.left_covered, metrics.left_total, metrics.left_ignored),
        reference_containment=containment(metrics.right_covered, metrics.right_total, metrics.right_ignored),
        longest_fragment=metrics.longest_fragment,
        total_overlap=metrics.total_overlap,
        agent_total=metrics.left_total,
        reference_total=metrics.right_total,
        agent_covered=metrics.left_covered,
        reference_covered=metrics.right_covered,
        agent_ignored=metrics.left_ignored,
        reference_ignored=metrics.right_ignored,
        fragments=tuple(fragments),
        score=score,
        flagged=evidence is not None and score >= score_threshold,
        evidence_fragments=evidence_spans,
        copied_lines=copied_lines,
        copied_fragments=copied_fragments,
    )


def evidence_extent(fragments: Sequence[Fragment]) -> tuple[int, int]:
    """``(lines, fragments)`` of a chain of evidence fragments: the distinct agent lines they
    cover, and how many stretches they make when fragments on adjacent or overlapping lines are
    joined.

    Examples
    --------
    >>> def at(a, b):
    ...     span = Span.from_lines("a.py", a, b)
    ...     return Fragment(agent=span, reference=span, agent_kgrams=range(0, 1), reference_kgrams=range(0, 1), length=1)
    >>> evidence_extent([at(3, 5), at(6, 6), at(10, 12)])
    (7, 2)
    """
    return _line_extent([(f.agent.start_line, f.agent.end_line) for f in fragments])


def _line_extent(ranges: Sequence[tuple[int, int]]) -> tuple[int, int]:
    """Distinct lines of inclusive line ranges, and the stretches they make joined when adjacent."""
    lines: set[int] = set()
    stretches = 0
    last = None
    for start, end in sorted(ranges):
        lines.update(range(start, end + 1))
        if last is None or start > last + 1:
            stretches += 1
        last = end if last is None else max(last, end)
    return len(lines), stretches


def _unit_extent(evidence: Any, profile: Any, text: str) -> tuple[int, int]:
    """:func:`evidence_extent` counted on the lines of the agent unit's own text (token offsets of
    the chain's tiles in the detector's profile)."""
    line_starts = [0] + [match.end() for match in re.finditer("\n", text)]
    ranges = []
    for tile in evidence.tiles:
        if tile.agent_stop <= tile.agent_start:
            continue
        start = profile.starts[tile.agent_start]
        end = max(start, profile.ends[tile.agent_stop - 1] - 1)
        ranges.append((bisect.bisect_right(line_starts, start), bisect.bisect_right(line_starts, end)))
    return _line_extent(ranges)


def evidence_fragments(
    evidence: Evidence,
    agent_profile: Profile,
    reference_profile: Profile,
    *,
    agent_text: str,
    reference_text: str,
    agent_path: str | None = None,
    reference_path: str | None = None,
    agent_unit: Any = None,
    reference_unit: Any = None,
) -> tuple[Fragment, ...]:
    """The detector's chain of tiles as :class:`Fragment` records with spans on both sides.

    Parameters
    ----------
    evidence : Evidence
    agent_profile, reference_profile : Profile
        Profiles of ``agent_text`` and ``reference_text`` (token character offsets).
    agent_text, reference_text : str
        The compared texts (a notebook's joined code cells, a log's code block).
    agent_path, reference_path : str, optional
        Paths recorded on the spans (default: the profiles' paths).
    agent_unit, reference_unit : mleaudit.audit.units.CodeUnit, optional
        Map spans to the host file and describe notebook cells, as for Dolos fragments.

    Returns
    -------
    tuple of Fragment
        One per tile of the chain, in agent order; ranges are detector token indices.
    """
    out = []
    for tile in evidence.tiles:
        agent_span = Span.from_offsets(agent_text, agent_path if agent_path is not None else agent_profile.path,
                                       agent_profile.starts[tile.agent_start], agent_profile.ends[tile.agent_stop - 1])
        reference_span = Span.from_offsets(reference_text,
                                           reference_path if reference_path is not None else reference_profile.path,
                                           reference_profile.starts[tile.reference_start],
                                           reference_profile.ends[tile.reference_stop - 1])
        out.append(
            Fragment(
                agent=_host(agent_unit, agent_span),
                reference=_host(reference_unit, reference_span),
                agent_kgrams=range(tile.agent_start, tile.agent_stop),
                reference_kgrams=range(tile.reference_start, tile.reference_stop),
                length=tile.length,
                agent_location=_describe(agent_unit, agent_span),
                reference_location=_describe(reference_unit, reference_span),
            )
        )
    out.sort(key=lambda f: (f.agent_kgrams.start, f.reference_kgrams.start))
    return tuple(out)


def _host(unit: Any, span: Span) -> Span:
    return unit.host_span(span) if unit is not None else span


def _describe(unit: Any, span: Span) -> str:
    if unit is None:
        return f"line {span.start_line}"
    if unit.cells:
        return unit.describe(span.start_line)
    return f"line {unit.host_span(span).start_line}"
