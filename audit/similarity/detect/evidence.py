"""Evidence of a copy: tiles chained like local alignments, their information in bits, and the
score mapped from it."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from mleaudit.audit.similarity.detect.background import Background
from mleaudit.audit.similarity.detect.constants import EVIDENCE_SCALE_BITS, GAP_BITS, MAX_GAP_TOKENS
from mleaudit.audit.similarity.detect.ngrams import NgramTable
from mleaudit.audit.similarity.detect.profiles import Profile
from mleaudit.audit.similarity.detect.tiles import Tile, _maximal_run_columns, find_tiles, tile_runs
from mleaudit.audit.similarity.detect.token_model import AgentQuery, token_bits


@dataclass(frozen=True, slots=True, kw_only=True)
class Evidence:
    """How much of an agent file is surprising code shared with one reference.

    Attributes
    ----------
    bits : float
        Information of the best chain of tiles, in bits (>= 0; higher = stronger evidence).
    tiles : tuple of Tile
        The chain, in order.
    copied_tokens : int
        Agent tokens in the chain's tiles.
    """

    bits: float
    tiles: tuple[Tile, ...] = ()
    copied_tokens: int = 0

    @property
    def score(self) -> float:
        return score_from_bits(self.bits)


def score_from_bits(bits: float) -> float:
    """Map evidence in bits to the decision statistic ``score = 1 - 2 ** (-bits / 100)``.

    Examples
    --------
    >>> score_from_bits(0.0), score_from_bits(100.0), round(score_from_bits(160.0), 3)
    (0.0, 0.5, 0.67)
    """
    if bits <= 0:
        return 0.0
    return 1.0 - 2.0 ** (-bits / EVIDENCE_SCALE_BITS)


def bits_from_score(score: float) -> float:
    """Inverse of :func:`score_from_bits` (``inf`` for a score of 1).

    Examples
    --------
    >>> round(bits_from_score(0.63), 1)
    143.4
    """
    if score <= 0:
        return 0.0
    if score >= 1:
        return math.inf
    return -EVIDENCE_SCALE_BITS * math.log2(1.0 - score)


def jump_bits(tokens: int) -> float:
    """Bits to say where the next copied piece starts, ``tokens`` agent tokens after the last
    one: ``2 log2(1 + tokens)``, about the length of Elias's gamma code for the jump.

    Examples
    --------
    >>> jump_bits(0), jump_bits(1), jump_bits(255)
    (0.0, 2.0, 16.0)
    """
    return 2.0 * math.log2(1 + tokens) if tokens > 0 else 0.0


def _best_chain(weighted: list[tuple[Tile, float]]) -> tuple[float, list[Tile]]:
    """Local alignment over tiles: chained tiles are in order on both sides; reference tokens
    skipped between them cost :data:`GAP_BITS` each, agent tokens :func:`jump_bits`."""
    weighted.sort(key=lambda item: (item[0].reference_start, item[0].agent_start))
    best: list[float] = []
    back: list[int] = []
    top, top_at = 0.0, -1
    for i, (tile, bits) in enumerate(weighted):
        value, previous = bits, -1
        j = i - 1
        while j >= 0:
            other = weighted[j][0]
            gap = tile.reference_start - other.reference_stop
            if gap > MAX_GAP_TOKENS:
                break  # tiles never overlap in the reference: earlier ones end earlier still
            if gap >= 0 and other.agent_stop <= tile.agent_start:
                candidate = best[j] + bits - GAP_BITS * gap - jump_bits(tile.agent_start - other.agent_stop)
                if candidate > value:
                    value, previous = candidate, j
            j -= 1
        best.append(value)
        back.append(previous)
        if value > top:
            top, top_at = value, i
    chain: list[Tile] = []
    while top_at >= 0:
        chain.append(weighted[top_at][0])
        top_at = back[top_at]
    chain.reverse()
    return top, chain


def boilerplate_mask(agent: Profile, boilerplate: Sequence[Profile]) -> bytearray:
    """Agent tokens inside a tile shared with a boilerplate file (1) or not (0)."""
    mask = bytearray(len(agent.ids))
    for starter in boilerplate:
        for tile in find_tiles(agent, starter):
            mask[tile.agent_start : tile.agent_stop] = b"\x01" * tile.length
    return mask


def reference_evidence(agent: Profile, reference: Profile, table: NgramTable, left_out: Sequence[Profile], *,
                       mask: bytearray | None = None, query: AgentQuery | None = None,
                       background: Background | None | str = "default", bits: np.ndarray | None = None,
                       runs: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None = None,
                       tiles: Sequence[Tile] | None = None) -> Evidence:
    """Evidence that ``agent`` copied code from ``reference``, under a given background.

    Parameters
    ----------
    agent, reference : Profile
    table : NgramTable
        The corpus's n-gram table (it counts ``reference`` and ``left_out``).
    left_out : sequence of Profile
        The reference and its near-duplicates, subtracted from ``table``.
    mask : bytearray, optional
        Agent tokens that carry no bits (1 = boilerplate).
    query : AgentQuery, optional
        The agent's lookups, shared between references.
    background : Background, None or "default", default "default"
        Ordinary ML code added to the background model (see :func:`token_bits`).
    bits : ndarray of float64, optional
        :func:`token_bits` of ``agent`` under ``table``, ``left_out`` and ``background``, when
        already known (with nothing left out they are the same for every reference).
    runs : tuple of four ndarray, optional
        The pair's maximal runs ``(a0, a1, r0, r1)`` when already found (:class:`RunFinder`;
        empty arrays for none).
    tiles : sequence of Tile, optional
        The pair's tiles (:func:`find_tiles`) when already found: they depend on the two token
        streams only, not on the background. ``runs`` is then not used.

    Returns
    -------
    Evidence
        ``bits`` = information of the best chain of tiles (0 when nothing is shared).
    """
    if tiles is None:
        columns = _maximal_run_columns(agent, reference) if runs is None else runs
        if columns is None or not columns[0].size:
            return Evidence(bits=0.0)
        tiles = tile_runs(columns, len(agent.ids), len(reference.ids))
    elif not tiles:
        return Evidence(bits=0.0)
    if bits is None:
        bits = token_bits(agent, table, left_out, query=query, background=background)
    if mask is not None and any(mask):
        bits = np.where(np.frombuffer(bytes(mask), dtype=np.uint8) > 0, 0.0, bits)
    cumulative = np.concatenate(([0.0], np.cumsum(bits))).tolist()
    weighted = []
    for tile in tiles:
        value = cumulative[tile.agent_stop] - cumulative[tile.agent_start]
        if value > 0:
            weighted.append((tile, value))
    if not weighted:
        return Evidence(bits=0.0)
    total, chain = _best_chain(weighted)
    return Evidence(bits=total, tiles=tuple(chain), copied_tokens=sum(t.length for t in chain))
