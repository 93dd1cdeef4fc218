"""The copy detector's search over an index: which references an agent file's evidence may reach.

On a large corpus only the first ``top`` candidates in report order get a pair report (default
:data:`~mleaudit.audit.similarity.index.comparing.DEFAULT_TOP`), which are brute force's first
``top`` pairs. The copy detector does not rank by containment: the source of a partial copy
often shares few of an agent file's structural fingerprints while the forks of a popular kernel
fill the first places. Its search is bounded by its evidence instead (:meth:`CorpusIndex.compare`,
since the ``seed_postings`` meta entry):

- every Python reference's tile seeds (its token 6-grams, as 25-bit values) are postings under
  their own code, so the references holding each seed of an agent file are known at once;
- :func:`~mleaudit.audit.similarity.bounds.upper_token_bits` bounds each agent token's bits
  under *any* reference's background (the detector's
  :func:`~mleaudit.audit.similarity.detect.token_bits` on a table whose n-gram frequencies are
  lowered by the most a leave-out set can remove), and
  :func:`~mleaudit.audit.similarity.bounds.evidence_bounds` sums it over the tokens the seeds a
  reference holds cover: the evidence of every tile chain is at most that, so a reference whose
  sum stays below the threshold's bits is excluded unread;
- the others, best bound first, are checked with
  :func:`~mleaudit.audit.similarity.bounds.window_bound` (the best window of the reference, each
  token worth the bits of the agent token a shared seed matches it with, each token outside every
  shared seed costing the reference gap of the chain; for many references at once from their
  seed locations, :func:`~mleaudit.audit.similarity.bounds.window_bounds`), then those that
  pass, best window first, with the detector's own evidence on that table and nothing left out
  (:meth:`_DetectorQuery.tile_bounds`: the pair's tiles and best chain), both upper bounds again,
  and scored exactly when the last one reaches the threshold.

Every reference brute force flags therefore is flagged through the index, with the same score.
With ``top``, the search of an agent file is exhaustive when at most four times ``bound_budget``
references pass the seed bound and at most ``bound_budget`` of them the window bound
(:data:`DEFAULT_BOUND_BUDGET`). Otherwise it is cut to a best effort (the window bound for the
96 best seed bounds, the tile bound for the 48 best windows) and reported in
:attr:`CorpusIndex.last_bound_scored` (``exhaustive`` false), which an audit turns into a
``similarity-incomplete`` gap. A cut search scores the references that pass best tile bound
first and stops once the best score found is above the score of every bound left
(:func:`_score_candidates`): whether a checked reference is flagged and which ones score best
are as if all were scored; the further forks of a copied kernel are not all listed. An index
written before tile seeds were stored scores the best candidate of up to ``DEFAULT_SOURCES``
further sources instead.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from mleaudit.audit.similarity.bounds import needed_bits
from mleaudit.audit.similarity.detect import Evidence, Profile, score_from_bits
from mleaudit.audit.similarity.index.detector_query import _BOUND_BATCH, _DetectorQuery
from mleaudit.audit.units import CodeUnit

logger = logging.getLogger(__name__)

#: The most references :meth:`CorpusIndex.compare` checks with the tile bound per agent unit for
#: an exhaustive search with ``top`` (the highest window bounds). Enough for every agent file of the
#: shared real runs and partial copies against the 204 shared notebooks (at most 196 pass the window
#: bound), so a corpus of a competition's kernels is searched exhaustively; on a larger one a unit
#: past the budget is searched best-effort and reported (``last_bound_scored``; an audit's
#: ``similarity-incomplete`` gap).
DEFAULT_BOUND_BUDGET = 256
#: With ``bound_budget``, references checked with the window bound per agent unit: this many
#: times the budget (the window bound costs a few array operations per reference, the tile bound
#: a tiling).
_WINDOW_BUDGET_FACTOR = 4
#: Tile bounds per agent unit once its search cannot be exhaustive within ``bound_budget``: the
#: search is then reported as cut whatever it checks.
_CUT_CHECKS = 48
#: Window bounds per agent unit in a cut search (the best seed bounds): twice the tile bounds.
#: On 250,000 synthetic notebooks (``benchmarks/corpus_index.py``, 28 runs of three agent
#: files), against 256 window bounds and 64 tile bounds: the same 84 agent files flagged and
#: not flagged, the best score lower by a few 1e-8 (forks of one kernel) in 4 files and by
#: 0.011 in one; a run's query 0.73 s instead of 1.19 s (median).
_CUT_WINDOWS = 2 * _CUT_CHECKS
#: Profiles read at once while a cut search scores its candidates best bound first (it mostly
#: stops after a few).
_CUT_BATCH = 8


def _bound_search(detector: _DetectorQuery, agent: int, unit: CodeUnit, scored: Sequence[int], live: np.ndarray,
                  ranked: Sequence[int], score_threshold: float, budget: int | None, where: Path
                  ) -> tuple[list[int], dict[int, float], dict[str, Any]]:
    """The references the copy detector scores for agent file number ``agent`` (``unit``), their
    tile bounds (bits), and what the search did (the unit's entry of
    :attr:`CorpusIndex.last_bound_scored`; its ``scored`` is set by :func:`_score_candidates`).

    Every reference whose evidence bounds reach the threshold, best bound first: first from the
    seed postings (:func:`_bounded`), then the window bound, then the tile bound. With ``budget``
    (``bound_budget``; ``None`` checks them all) a search that cannot be exhaustive within it is
    cut to a best effort and said so. ``scored`` are scored anyway; ``ranked`` are the next
    candidates by agent containment; ``live`` says per reference id whether it is indexed;
    ``where`` names the index in log messages.
    """
    # Every reference whose evidence bounds reach the threshold, best bound first:
    # first from the seed postings, then from the pair's tiles.
    # (only the first budget x factor are ever windowed: the rest need no order)
    order, bounded = _bounded(detector, agent, scored, live, score_threshold, ranked, where,
                              None if budget is None else budget * _WINDOW_BUDGET_FACTOR)
    needed = needed_bits(score_threshold)
    # A search that cannot be exhaustive within the budget is cut to a best effort of
    # at most _CUT_CHECKS tile bounds: it is reported either way, and a larger effort
    # would only list more of a copied kernel's forks.
    cut = None if budget is None else min(budget, _CUT_CHECKS)
    # then the window bound, a few array operations per reference ...
    if budget is None or bounded <= budget * _WINDOW_BUDGET_FACTOR:
        windowed = order
    else:
        windowed = order[: min(cut * _WINDOW_BUDGET_FACTOR, _CUT_WINDOWS)]
    window = detector.window_bounds(agent, windowed)
    # ... best first (a stable sort: ties keep the seed bound's order)
    passed = sorted((doc for doc in windowed if window.get(doc, 0.0) >= needed), key=lambda d: -window[d])
    # ... then the tile bound, a tiling per reference
    if budget is None or (len(windowed) == bounded and len(passed) <= budget):
        checked = passed
    else:
        checked = passed[:cut]
    candidates: list[int] = []
    bounds: dict[int, float] = {}
    for start in range(0, len(checked), _BOUND_BATCH):
        batch = checked[start : start + _BOUND_BATCH]
        tight = detector.tile_bounds(agent, batch, needed)
        candidates.extend(doc for doc in batch if tight.get(doc, 0.0) >= needed)
        bounds.update((doc, tight[doc]) for doc in batch if doc in tight)
    searched = {
        "path": unit.path, "start_line": unit.origin.start_line if unit.origin is not None else None,
        "seed_bound": True, "bounded": bounded, "windowed": len(windowed), "window": len(passed),
        "checked": len(checked), "candidates": len(candidates), "scored": len(candidates),
        "exhaustive": len(windowed) == bounded and len(checked) == len(passed)}
    if len(windowed) < bounded or len(checked) < len(passed):
        # said once per command by its caller (last_bound_scored): on a real corpus
        # widely held code keeps most references above the seed bound
        logger.info("%s: %s: of %d references the seed bound could not exclude, %d were checked with "
                    "the window bound and %d of the %d it kept with the tile bound (bound_budget; "
                    "top=None checks all)", where, unit.path, bounded, len(windowed),
                    len(checked), len(passed))
    return candidates, bounds, searched


def _score_candidates(detector: _DetectorQuery, agent: int, candidates: Sequence[int], paths: dict[int, str],
                      mask: bytearray | None, score_threshold: float, bounds: dict[int, float] | None = None
                      ) -> tuple[dict[int, tuple[Evidence, Profile, int]], int]:
    """The copy detector's exact evidence for ``candidates`` of agent file number ``agent``: the
    flagged ones (evidence, profile, text length by reference id) and how many were scored.

    Every candidate is scored, unless ``bounds`` (their tile bounds, for a search already cut
    to a best effort by its budget): then they are scored best bound first until the best
    score found is above the score of every bound left (scores round to 1.0 past about 5,000
    bits: a bound's bits being lower is not enough), so that none of those left can score as
    high. The flagged pairs are then those of the candidates scored: whether any checked
    reference is flagged, and which ones score best, are the same as when all are scored; the
    further forks of a copied kernel that also pass are not listed.
    """
    if bounds is not None:
        # best bound first; ties keep the search's order
        candidates = sorted(candidates, key=lambda doc: -bounds[doc])
    batch_size = _BOUND_BATCH if bounds is None else _CUT_BATCH
    flagged: dict[int, tuple[Evidence, Profile, int]] = {}
    best = -1.0  # the best score found
    count = 0
    for start in range(0, len(candidates), batch_size):
        batch = candidates[start : start + batch_size]
        if bounds is not None and best > score_from_bits(bounds[batch[0]]):
            break
        detector.profiles(batch, paths)
        for doc in batch:
            if bounds is not None and best > score_from_bits(bounds[doc]):
                return flagged, count
            found = detector.evidence(agent, doc, mask)
            count += 1
            if found is None:
                continue
            best = max(best, found[0].score)
            if found[0].score >= score_threshold:
                flagged[doc] = found
    return flagged, count


def _bounded(detector: _DetectorQuery, agent: int, scored: Sequence[int], live: np.ndarray, score_threshold: float,
             ranked: Sequence[int], where: Path, limit: int | None = None) -> tuple[list[int], int]:
    """References the copy detector must score for agent file number ``agent``: those whose
    evidence bound (:meth:`_DetectorQuery.bounds`) reaches the threshold's bits, best bound
    first, then in the order of ``ranked`` (the next candidates by agent containment, which
    tells references apart where widely held code gives many the same bound), then lower
    id; without ``scored`` (scored anyway). Every other reference scores below the
    threshold, so none of them is flagged.

    Returns the first ``limit`` of them (all without ``limit``; on a large corpus most
    references stay above the bound, and only the first are ever looked at) and how many
    there are."""
    common, docs, bounds = detector.bounds(agent, live)
    # a little slack for the rounding of sums taken in another order
    needed = needed_bits(score_threshold)
    if common >= needed:
        # the bound excludes nobody: every reference is scored
        logger.info("%s: the seed bound of %s excludes no reference (%.0f bits of widely held code); "
                    "all %d go to the tile bound", where, detector.queries[agent].agent.path, common,
                    int(np.count_nonzero(live)))
        everyone = np.flatnonzero(live)
        full = np.full(everyone.size, common)
        full[np.searchsorted(everyone, docs)] = bounds
        docs, bounds = everyone, full
    keep = bounds >= needed
    docs, bounds = docs[keep], bounds[keep]
    skip = set(scored)
    # docs ascend (by id): the scored ones among them are found by a search
    listed_skip = np.fromiter(skip, dtype=np.int64, count=len(skip))
    at = np.minimum(np.searchsorted(docs, listed_skip), max(docs.size - 1, 0))
    count = int(docs.size - np.count_nonzero(docs[at] == listed_skip)) if docs.size else 0
    wanted = None if limit is None else limit + len(skip)
    if wanted is not None and wanted < docs.size:
        # only the items that can be among the first `wanted`: a bound at least the
        # wanted-th best (ties with it included; the full order decides among them)
        least = -np.partition(-bounds, wanted - 1)[wanted - 1]
        near = bounds >= least
        docs, bounds = docs[near], bounds[near]
    rank = np.full(docs.size, len(ranked), dtype=np.int64)
    if len(ranked) and docs.size:
        listed = np.asarray(ranked, dtype=np.int64)
        by_id = np.argsort(listed, kind="stable")
        at = np.minimum(np.searchsorted(listed[by_id], docs), listed.size - 1)
        rank = np.where(listed[by_id][at] == docs, by_id[at], listed.size)
    order = np.lexsort((docs, rank, -bounds))
    if wanted is not None:
        order = order[:wanted]
    found = [doc for doc in docs[order].tolist() if doc not in skip]
    return (found if limit is None else found[:limit]), count
