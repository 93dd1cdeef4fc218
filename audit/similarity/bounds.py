"""Upper bounds of the copy detector's evidence, cheap enough to skip most pairs.

The detector (:mod:`mleaudit.audit.similarity.detect`) scores a pair by the best chain of its
tiles under a background model with the reference and its near-duplicates left out. Scoring
every pair tiles every pair; the bounds here exclude a reference before any tiling, and never
exclude one the detector would flag:

- :func:`upper_token_bits`: per agent token, its bits under any leave-out set;
- :func:`evidence_bounds`: from the seeds (token 6-grams) each reference holds, the sum of the
  bits they cover (the corpus index's first stage, from its seed postings);
- :func:`window_bound` / :func:`window_bounds`: the best window of the reference, tokens covered
  by shared seeds counting their bits and others costing the gap penalty (a maximum subarray,
  Bentley 1984), for one reference or for many at once through :class:`SeedLocations`.

The corpus index and brute-force comparison both use them; the tests check each against the
detector's exact evidence on every pair of their corpora.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Mapping, Sequence

import numpy as np

from mleaudit.audit.similarity import detect as _detect
from mleaudit.audit.similarity.detect import MIN_TILE_TOKENS, Background, NgramTable, Profile, token_bits

__all__ = ["needed_bits", "upper_token_bits", "evidence_bounds", "window_bound", "SeedLocations", "window_bounds",
           "seed_table"]


def needed_bits(threshold: float) -> float:
    """Bits an evidence bound must reach for its pair to be flagged at score ``threshold``.

    The least evidence whose :func:`~mleaudit.audit.similarity.detect.score_from_bits` reaches
    ``threshold`` as computed in floating point (for a threshold of 1, the point past which the
    score rounds to 1.0, about 5,300 bits; :func:`~mleaudit.audit.similarity.detect.bits_from_score`
    says infinity there), less a slack for the rounding of sums taken in another order. A bound
    below it excludes the pair.

    Parameters
    ----------
    threshold : float
        The detector's score threshold.

    Returns
    -------
    float
        Bits; ``-inf`` when every pair reaches the threshold, ``inf`` when none can.
    """
    if _detect.score_from_bits(0.0) >= threshold:
        return -math.inf
    low, high = 0.0, 1e6
    if _detect.score_from_bits(high) < threshold:
        return math.inf
    for _ in range(200):  # bisection: score_from_bits only rises with the bits
        middle = (low + high) / 2
        if _detect.score_from_bits(middle) >= threshold:
            high = middle
        else:
            low = middle
    return high * (1 - 1e-9) - 1e-6


def upper_token_bits(agent: Profile, table: NgramTable, background: Background | None | str = "default") -> np.ndarray:
    """Per agent token, an upper bound of its bits under *any* reference's background.

    The detector charges an agent token ``-log2 P`` under the corpus's n-gram table with the
    reference and its near-duplicates left out (:func:`mleaudit.audit.similarity.detect.token_bits`). At
    most ``MAX_NEAR_DUPLICATES + 1`` files are left out, so an n-gram's document frequency drops
    by at most that much, and a context's total drops by at least as much as any of its
    n-grams' frequencies (a file holding an n-gram holds its context). The bound is
    :func:`~mleaudit.audit.similarity.detect.token_bits` itself, with nothing left out, on a table whose
    every n-gram frequency is lowered by that maximum (not below 0) and whose context totals are
    kept, for an agent profile without its string-literal marks (the share of other files
    holding a string lowers a literal's bits; left out, it can only raise them).

    Parameters
    ----------
    agent : Profile
    table : NgramTable
        The corpus's table (at least the rows of the agent's n-grams and contexts).
    background : Background, None or "default", default "default"
        The detector's background model of ordinary code (the bound holds for the one given).

    Returns
    -------
    ndarray of float64
        Aligned with the agent's tokens; ``upper[i] >= token_bits(agent, table, L)[i]`` for every
        leave-out set ``L`` of at most ``MAX_NEAR_DUPLICATES + 1`` corpus files.

    Notes
    -----
    The bound holds for any background model in which a token's probability does not fall when
    an n-gram's count rises at fixed context totals, nor rise when a context's total rises at
    fixed counts, and in which a context no file holds any more falls back to the lower order
    (the Witten-Bell interpolation of ``token_bits``, with or without the shipped background of
    ordinary code, whose counts are never left out): lowering counts and keeping totals can only
    lower each order's estimate. It is computed through ``token_bits`` so that it follows the
    detector's weights; the tests check it against the exact bits of every pair of their corpora.

    References
    ----------
    Witten & Bell (1991), see :mod:`mleaudit.audit.similarity.detect`.
    """
    if not len(agent.ids):
        return np.zeros(0)
    most = int(getattr(_detect, "MAX_NEAR_DUPLICATES", 32)) + 1
    lowered = NgramTable(table.keys, np.maximum(table.counts - most, 0), table.context_keys, table.totals, table.kinds)
    plain = dataclasses.replace(agent, literals=frozenset(), _cache={})
    return np.asarray(token_bits(plain, lowered, (), background=background), dtype=np.float64)


def evidence_bounds(upper: np.ndarray, seed_values: np.ndarray, holders: Mapping[int, np.ndarray | None]
                    ) -> tuple[float, np.ndarray, np.ndarray]:
    """Upper bounds of the detector's evidence against every reference, from the seed postings.

    A tile is a run of at least ``MIN_TILE_TOKENS`` equal tokens, so every agent token in a tile
    with reference ``r`` lies in an agent token 6-gram (a *seed*) that ``r`` holds. A chain of
    tiles is worth at most the bits of its tokens (reference gaps and agent jumps only cost), so
    the evidence against ``r`` is at most the sum of :func:`upper_token_bits` over the agent
    tokens covered by the seeds ``r`` holds.

    Parameters
    ----------
    upper : ndarray of float64
        :func:`upper_token_bits` of the agent file.
    seed_values : ndarray of int64
        The 25-bit value of the agent's seed starting at each position (see :func:`_seed_values`).
    holders : mapping
        ``{value: ids of the references holding it}``, or ``None`` for a value held by too many
        references to list (it counts as held by every reference); values absent are held by none.

    Returns
    -------
    common : float
        The bound of a reference holding none of the listed seeds (the bits of the tokens that
        unlisted seeds cover).
    docs, bounds : ndarray
        References holding a listed seed and their bounds (each ``>= common``).
    """
    n = upper.size
    width = MIN_TILE_TOKENS
    covered = np.zeros(n + 1, dtype=np.int64)
    listed_at: list[np.ndarray] = []
    listed_docs: list[np.ndarray] = []
    if seed_values.size:
        unique, inverse = np.unique(seed_values, return_inverse=True)
        lists: list[np.ndarray] = []
        lengths = np.zeros(unique.size, dtype=np.int64)
        everyone = np.zeros(unique.size, dtype=bool)
        for slot, value in enumerate(unique.tolist()):
            if value not in holders:
                continue
            ids = holders[value]
            if ids is None:
                everyone[slot] = True
            elif ids.size:
                lists.append(np.asarray(ids, dtype=np.int64))
                lengths[slot] = ids.size
        common_at = np.flatnonzero(everyone[inverse])
        np.add.at(covered, common_at, 1)
        np.add.at(covered, np.minimum(common_at + width, n), -1)
        if lists:
            # each position's holders, gathered from the joined lists (ragged repeat)
            starts = np.cumsum(lengths) - lengths
            counts = lengths[inverse]
            total = int(counts.sum())
            offsets = np.arange(total) - np.repeat(np.cumsum(counts) - counts, counts)
            listed_docs.append(np.concatenate(lists)[np.repeat(starts[inverse], counts) + offsets])
            listed_at.append(np.repeat(np.arange(seed_values.size, dtype=np.int64), counts))
    common_mask = np.cumsum(covered)[:n] > 0
    common = float(upper[common_mask].sum())
    if not listed_docs:
        return common, np.zeros(0, np.int64), np.zeros(0)
    rest = np.where(common_mask, 0.0, upper)
    cumulative = np.concatenate(([0.0], np.cumsum(rest)))
    docs = np.concatenate(listed_docs).astype(np.int64)
    at = np.concatenate(listed_at)
    # positions ascend in the order built, so a stable sort by reference keeps them ascending
    order = np.argsort(docs, kind="stable")
    docs, at = docs[order], at[order]
    stop = np.minimum(at + width, n)
    # windows of one reference, by start: the part of each not covered by the one before it
    begin = at.copy()
    same = np.concatenate(([False], docs[1:] == docs[:-1]))
    previous_stop = np.concatenate(([0], stop[:-1]))
    begin[same] = np.maximum(at[same], previous_stop[same])
    gain = np.where(begin < stop, cumulative[stop] - cumulative[np.minimum(begin, stop)], 0.0)
    firsts = np.flatnonzero(~same)
    return common, docs[firsts], common + np.add.reduceat(gain, firsts)


def window_bound(upper: np.ndarray, agent_keys: np.ndarray, reference_keys: np.ndarray, reference_tokens: int,
                 *, table: tuple[np.ndarray, np.ndarray] | None = None) -> float:
    """An upper bound of the detector's evidence for one pair from its shared seeds, without tiling.

    A chain of tiles covers a window of the reference; every reference token of the window outside
    the chain's tiles costs :data:`~mleaudit.audit.similarity.detect.GAP_BITS`, and a token inside one
    carries at most the :func:`upper_token_bits` of the agent token it is matched with, an agent
    token whose seed (token 6-gram) the reference shares on the same diagonal. So with ``v(q)`` the
    largest such bits of any agent token a shared seed can match with reference token ``q`` (and
    ``-GAP_BITS`` for a token no shared seed covers), the evidence is at most the largest sum of
    ``v`` over a window of the reference (the maximum subarray, Bentley 1984). Agent order, jumps
    and the tiles' disjointness on the agent side are left out: a looser bound than the tiles' chain
    (:meth:`_DetectorQuery.tile_bounds`), but a few array operations per reference.

    Parameters
    ----------
    upper : ndarray of float64
        :func:`upper_token_bits` of the agent file.
    agent_keys, reference_keys : ndarray of int64
        :meth:`~mleaudit.audit.similarity.detect.Profile.seed_keys` of each file.
    reference_tokens : int
        Tokens of the reference.
    table : tuple of ndarray, optional
        :func:`seed_table` of the agent file (made here when omitted; pass it for many references).

    Returns
    -------
    float
        Bits, >= 0.

    References
    ----------
    Bentley, J. (1984). Programming pearls: algorithm design techniques. *Communications of the
    ACM*, 27(9), 865-873 (the maximum subarray by prefix sums).
    """
    keys, best = table if table is not None else seed_table(upper, agent_keys)
    if not keys.size or not reference_keys.size or reference_tokens <= 0:
        return 0.0
    at = np.minimum(np.searchsorted(keys, reference_keys), keys.size - 1)
    hit = keys[at] == reference_keys
    if not hit.any():
        return 0.0
    width = best.shape[1]
    values = np.full(reference_tokens + width, -1.0)
    positions = (np.flatnonzero(hit)[:, None] + np.arange(width)[None, :]).ravel()
    np.maximum.at(values, positions, best[at[hit]].ravel())
    weights = values[:reference_tokens]
    weights = np.where(weights >= 0, weights, -float(_detect.GAP_BITS))
    prefix = np.concatenate(([0.0], np.cumsum(weights)))
    return float(max(0.0, (prefix - np.minimum.accumulate(prefix)).max()))


class SeedLocations:
    """Where the seeds of a set of references occur: an inverted table for :func:`window_bounds`.

    Parameters
    ----------
    references : sequence of (ndarray of int64, int)
        Per reference, its :meth:`~mleaudit.audit.similarity.detect.Profile.seed_keys` and its number
        of tokens. References are numbered by their place in this sequence (their *slot*).
    many_lookups : bool, default True
        The table serves many agent files (brute force over one corpus): the seeds are sorted
        once, and each lookup costs a search per distinct agent seed. ``False`` for a table
        looked up once or twice (a batch of references of an index query): no sort, each lookup
        scans the seeds of the references it wants, a search in the agent's few distinct seeds
        each. The bounds are the same either way.

    Attributes
    ----------
    keys : ndarray of int64
        Every seed key of every reference: sorted (``many_lookups``), else reference after
        reference.
    slots, positions : ndarray of int32
        Aligned with ``keys``: the reference holding the seed and the seed's first token.
    sorted : bool
        Whether ``keys`` is sorted.
    tokens : ndarray of int64, shape (len(references),)
        Tokens per reference.
    """

    def __init__(self, references: Sequence[tuple[np.ndarray, int]], many_lookups: bool = True) -> None:
        self.tokens = np.array([int(n) for _, n in references], dtype=np.int64)
        seeds = [np.asarray(k, dtype=np.int64) for k, _ in references]
        for slot, (keys, tokens) in enumerate(zip(seeds, self.tokens.tolist())):
            # a seed starts at each token that has MIN_TILE_TOKENS - 1 tokens after it
            if tokens < 0 or (keys.size and keys.size > tokens - MIN_TILE_TOKENS + 1):
                raise ValueError(f"reference {slot}: {keys.size} seeds do not fit in {tokens} tokens")
        lengths = np.array([k.size for k in seeds], dtype=np.int64)
        joined = np.concatenate(seeds) if seeds else np.zeros(0, np.int64)
        slots = np.repeat(np.arange(len(seeds), dtype=np.int32), lengths)
        positions = (np.arange(joined.size) - np.repeat(np.cumsum(lengths) - lengths, lengths)).astype(np.int32)
        self.sorted = bool(many_lookups)
        if self.sorted:
            order = np.argsort(joined, kind="stable")
            self.keys, self.slots, self.positions = joined[order], slots[order], positions[order]
        else:
            self.keys, self.slots, self.positions = joined, slots, positions
            self._starts = np.cumsum(lengths) - lengths
            self._lengths = lengths
        # the references' tokens one after the other, each followed by room for a seed's tail
        room = self.tokens + MIN_TILE_TOKENS
        self.base = np.cumsum(room) - room
        self.owner = np.repeat(np.arange(len(seeds), dtype=np.int32), room)

    @property
    def size(self) -> int:
        """Seeds held, over all references."""
        return int(self.keys.size)


def window_bounds(table: tuple[np.ndarray, np.ndarray], locations: SeedLocations,
                  wanted: np.ndarray | None = None) -> np.ndarray:
    """:func:`window_bound` of one agent file against every reference of ``locations`` at once.

    The same bound, from the seeds the files share only: the agent's seeds are looked up in the
    references' sorted seeds, each hit spreads its largest bits over the reference tokens it
    covers, and the best window of each reference is a maximum subarray over its covered tokens,
    each run of uncovered tokens between two of them costing
    :data:`~mleaudit.audit.similarity.detect.GAP_BITS` per token. The work grows with the shared
    seeds, not with the references' length.

    Parameters
    ----------
    table : tuple of ndarray
        :func:`seed_table` of the agent file.
    locations : SeedLocations
        The references.
    wanted : ndarray of bool, optional
        Per slot, whether to compute its bound (others get 0).

    Returns
    -------
    ndarray of float64, shape (len(locations.tokens),)
        Bits, >= 0, per slot: :func:`window_bound` of that reference (up to the rounding of sums
        taken in another order: about 1e-12 of the bound, far inside the 1e-6 bits of slack the
        search gives its thresholds).
    """
    out = np.zeros(locations.tokens.size)
    keys, best = table
    if not keys.size or not locations.size:
        return out
    width = best.shape[1]
    if width > MIN_TILE_TOKENS:
        raise ValueError(f"seed table of {width} tokens per seed; seeds are {MIN_TILE_TOKENS} tokens")
    # the hits: every (agent seed, reference seed location) pair with equal keys; the agent's
    # keys are distinct, so a location is hit once at most (and their order does not matter)
    if locations.sorted:
        low = np.searchsorted(locations.keys, keys, side="left")
        counts = np.searchsorted(locations.keys, keys, side="right") - low
        total = int(counts.sum())
        if not total:
            return out
        at = np.repeat(low, counts) + (np.arange(total) - np.repeat(np.cumsum(counts) - counts, counts))
        agent_key = np.repeat(np.arange(keys.size), counts)
        if wanted is not None:
            keep = wanted[locations.slots[at]]
            at, agent_key = at[keep], agent_key[keep]
    else:
        at = _wanted_locations(locations, wanted)
        found = np.minimum(np.searchsorted(keys, locations.keys[at]), keys.size - 1)
        hit = keys[found] == locations.keys[at]
        at, agent_key = at[hit], found[hit]
        if not at.size:
            return out
    slot, position = locations.slots[at].astype(np.int64), locations.positions[at].astype(np.int64)
    # each hit covers `width` reference tokens, each with the largest bits of its agent offset
    spread = np.full(locations.owner.size, -1.0)
    start = locations.base[slot] + position
    values = best[agent_key]
    for offset in range(width):
        # one seed location per hit, so the places of one offset are distinct
        at_offset = start + offset
        spread[at_offset] = np.maximum(spread[at_offset], values[:, offset])
    flat = np.flatnonzero(spread >= 0)
    slot = locations.owner[flat].astype(np.int64)
    covered = flat - locations.base[slot]
    inside = covered < locations.tokens[slot]
    value, slot, covered = spread[flat[inside]], slot[inside], covered[inside]
    if not covered.size:
        return out
    # Covered tokens of one reference in order; between two, ``gap`` uncovered tokens. A window
    # from covered token i to j is worth S_j - T_i, with S the running sum of (value - GAP * gap)
    # and T_i = S_i - value_i (the gap before its first token is not in the window).
    new = np.concatenate(([True], slot[1:] != slot[:-1]))
    gap = np.where(new, 0, covered - np.concatenate(([0], covered[:-1])) - 1)
    step = value - float(_detect.GAP_BITS) * gap
    heads = np.flatnonzero(new)
    ends = np.concatenate((heads[1:], [step.size]))
    best_windows = _segment_best_windows(step, value, heads, ends - heads)
    out[slot[heads]] = np.maximum(best_windows, 0.0)
    return out


def _segment_best_windows(step: np.ndarray, value: np.ndarray, heads: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Per segment ``step[head : head + length]``: the largest ``S_j - min_{i <= j} (S_i - value_i)``
    with ``S`` the running sum of its steps (the best window of one reference).

    Each segment's running sum is its own (no sum carries the rounding of another segment's):
    segments of similar length are laid out as the rows of one matrix, padded with zero steps
    and values (a padded place repeats the last running sum, which changes no maximum), and
    summed along the rows, the same additions in the same order as one segment at a time.
    """
    out = np.zeros(heads.size)
    # rows of lengths within a factor of two of each other: at most twice the cells needed
    buckets = np.ceil(np.log2(np.maximum(lengths, 1))).astype(np.int64)
    for bucket in np.unique(buckets).tolist():
        rows = np.flatnonzero(buckets == bucket)
        width = int(lengths[rows].max())
        for first in range(0, rows.size, max(1, _WINDOW_CELLS // width)):
            part = rows[first : first + max(1, _WINDOW_CELLS // width)]
            part_sizes = lengths[part]
            total = int(part_sizes.sum())
            row = np.repeat(np.arange(part.size), part_sizes)
            column = np.arange(total) - np.repeat(np.cumsum(part_sizes) - part_sizes, part_sizes)
            source = np.repeat(heads[part], part_sizes) + column
            steps = np.zeros((part.size, width))
            values = np.zeros((part.size, width))
            steps[row, column] = step[source]
            values[row, column] = value[source]
            running = np.cumsum(steps, axis=1)
            lowest = np.minimum.accumulate(running - values, axis=1)
            out[part] = (running - lowest).max(axis=1)
    return out


#: Cells of one matrix of :func:`_segment_best_windows` (8 MB of float64 each).
_WINDOW_CELLS = 1 << 20


def _wanted_locations(locations: SeedLocations, wanted: np.ndarray | None) -> np.ndarray:
    """Places in ``locations.keys`` (in reference order) of the seeds of the wanted references."""
    if wanted is None:
        return np.arange(locations.size)
    chosen = np.flatnonzero(wanted)
    lengths = locations._lengths[chosen]
    total = int(lengths.sum())
    return np.repeat(locations._starts[chosen] - (np.cumsum(lengths) - lengths), lengths) + np.arange(total)


def seed_table(upper: np.ndarray, agent_keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The agent file's distinct seed keys and, for each, the largest bits of the token at each
    offset of the seeds with that key."""
    if not agent_keys.size:
        return np.zeros(0, np.int64), np.zeros((0, MIN_TILE_TOKENS))
    offsets = np.arange(agent_keys.size)[:, None] + np.arange(MIN_TILE_TOKENS)[None, :]
    bits = upper[np.minimum(offsets, upper.size - 1)]
    keys, inverse = np.unique(agent_keys, return_inverse=True)
    best = np.zeros((keys.size, MIN_TILE_TOKENS))
    np.maximum.at(best, inverse, bits)
    return keys, best
