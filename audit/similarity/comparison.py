"""Agent code against reference kernels: :func:`compare`, its options and its report.

Every pair is measured (both containments, the copy detector's score), but a report keeps only
the pairs a reviewer is shown: per agent file its best pairs by score and by containment and every
flagged pair (``SimilarityOptions.max_pairs_per_agent``). Fragments, the costly part of a pair
report, are built for those alone, so time and memory stay in proportion to what is reported.

Examples
--------
>>> from mleaudit.audit.units import CodeUnit
>>> kernel = "def f(a, b):\\n    return [x * a + b for x in range(10) if x % 2]\\n"
>>> agent = "def g(p, q):\\n    return [y * p + q for y in range(10) if y % 2]\\n"
>>> report = compare(
...     [CodeUnit(path="code/train.py", language="python", text=agent)],
...     [CodeUnit(path="author/kernel.py", language="python", text=kernel)],
... )
>>> report.pairs[0].agent_containment, report.pairs[0].reference_id
(1.0, 'author/kernel')
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass, replace
from typing import Any, Callable, Hashable, Iterable, Mapping, Sequence

import numpy as np

from mleaudit.audit.model import Skipped
from mleaudit.audit.similarity.bounds import SeedLocations
from mleaudit.audit.similarity.corpus import ReferenceCorpus, TextDecoding, reference_id
from mleaudit.audit.similarity.detect import DetectionCorpus, Profile, profile_code
from mleaudit.audit.similarity.fingerprint_index import Role
from mleaudit.audit.similarity.measuring import Comparison, MeasuredPair, kept_overall, measure_files
from mleaudit.audit.similarity.options import DEFAULT_MAX_PAIRS_PER_AGENT, SimilarityOptions
from mleaudit.audit.similarity.pairs import PairReport, pair_report
from mleaudit.audit.similarity.reference_side import index_units, reference_side, tokenize_unit
from mleaudit.audit.units import CodeUnit

__all__ = [
    "DEFAULT_MAX_PAIRS_PER_AGENT",
    "MeasuredPair",
    "SimilarityOptions",
    "SimilarityReport",
    "compare",
    "longest_fragments",
    "tokenize_unit",
]

logger = logging.getLogger(__name__)

@dataclass(frozen=True, slots=True, kw_only=True)
class SimilarityReport:
    """Result of :func:`compare`.

    Attributes
    ----------
    options : SimilarityOptions
    pairs : tuple of PairReport
        The kept agent × reference pairs (see :func:`compare`: per agent file, the top
        ``options.max_pairs_per_agent`` by score and by containment, and every flagged pair; at
        or above ``options.display_threshold`` unless flagged; at most ``options.max_pairs``
        unflagged ones overall), sorted by agent containment (descending), then reference path,
        then agent path.
    skipped : tuple of Skipped
        Units and corpus files that could not be compared, with the reason.
    corpus_digest : str
        sha256 over the reference and boilerplate paths and texts, to tell corpora apart.
    decodings : tuple of TextDecoding
        The reference kernels of the kept pairs whose bytes were not plain UTF-8 (a detected
        code page such as cp1252 or GBK, UTF-16, a declared source encoding, undecodable bytes
        replaced), sorted by path: how each became the text that was compared.
    """

    options: SimilarityOptions
    pairs: tuple[PairReport, ...]
    skipped: tuple[Skipped, ...] = ()
    corpus_digest: str = ""
    decodings: tuple[TextDecoding, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "options": self.options.to_dict(),
            "corpus_digest": self.corpus_digest,
            "pairs": [p.to_dict() for p in self.pairs],
            "skipped": [s.to_dict() for s in self.skipped],
            "decodings": [d.to_dict() for d in self.decodings],
        }


def decodings_of_pairs(pairs: Sequence[PairReport], decodings: Sequence[TextDecoding]) -> tuple[TextDecoding, ...]:
    """The decodings of the reference kernels named in ``pairs`` that were not read as plain UTF-8.

    Parameters
    ----------
    pairs : sequence of PairReport
    decodings : sequence of TextDecoding
        How each reference's bytes became text (``note`` is ``None`` for plain UTF-8).

    Returns
    -------
    tuple of TextDecoding
        Sorted by path, one per reference.
    """
    named = {p.reference_path for p in pairs}
    chosen = {d.path: d for d in decodings if d.note is not None and d.path in named}
    return tuple(chosen[path] for path in sorted(chosen))


def _corpus_digest(references: Sequence[CodeUnit], boilerplate: Sequence[CodeUnit]) -> str:
    digest = hashlib.sha256()
    for role, units in (("reference", references), ("boilerplate", boilerplate)):
        for unit in units:
            digest.update(f"{role}\0{unit.path}\0{unit.language}\0".encode())
            digest.update(hashlib.sha256(unit.text.encode("utf-8", errors="surrogatepass")).digest())
    return digest.hexdigest()


def longest_fragments(pair: PairReport, n: int) -> PairReport:
    """``pair`` with only its ``n`` longest fragments, in their original (agent) order."""
    if len(pair.fragments) <= n:
        return pair
    longest = sorted(range(len(pair.fragments)), key=lambda i: (-pair.fragments[i].length, i))[:n]
    return replace(pair, fragments=tuple(pair.fragments[i] for i in sorted(longest)))


def compare(
    agents: Sequence[CodeUnit],
    references: Sequence[CodeUnit] | ReferenceCorpus,
    options: SimilarityOptions | None = None,
    boilerplate: Sequence[CodeUnit] = (),
    *,
    jobs: int | None = None,
    owners: Mapping[str, Hashable] | None = None,
    select: Callable[[Sequence[MeasuredPair]], Iterable[int]] | None = None,
    public_references: bool = True,
) -> SimilarityReport:
    """Compare every agent unit with every reference unit of the same language.

    Parameters
    ----------
    agents : sequence of CodeUnit
        Audited code (files, notebook code, code from logs).
    references : sequence of CodeUnit or ReferenceCorpus
        Public kernels; a :class:`ReferenceCorpus` from :func:`load_reference_corpus` also
        carries its ``skipped`` files into the report.
    options : SimilarityOptions, optional
        Defaults to ``SimilarityOptions()`` (Dolos's k = 23, window 17; 10 pairs per agent file).
    boilerplate : sequence of CodeUnit, optional
        Starter code whose fingerprints never count as a match.
    jobs : int, optional
        Worker processes that measure the agent files (the copy detector is most of the work);
        ``None`` or 1 measures in this process. Workers are forked where the platform can (so
        they share the indexed corpus instead of receiving a copy); otherwise, and inside a
        daemonic process, the work stays in this process. The result does not depend on ``jobs``.
    owners : mapping of str to hashable, optional
        The owner of a unit by its path (the run it belongs to, say): a pair of two units with
        the same owner is neither measured nor reported. Units whose path is not in the mapping
        are compared with every unit.
    select : callable, optional
        Chooses the pairs that become reports, instead of ``options.max_pairs``: called once
        with the measured pairs each agent file keeps (flagged ones and its top
        ``max_pairs_per_agent`` by score and by containment, at or above ``display_threshold``
        unless flagged), in measuring order, it returns their positions. For a caller that
        needs a few of the pairs (the best per pair of runs), the fragments of the others are
        never built. A position outside the list raises ``ValueError``.
    public_references : bool, default True
        The references are public code: their token streams and profiles are kept in the user
        cache between processes (:func:`~mleaudit.audit.similarity.reference_side.reference_side`'s
        ``keep``). ``False`` for an agent's code compared as a reference (a batch's runs with
        each other), which is never stored. The report is the same either way.

    Returns
    -------
    SimilarityReport
        Pairs sorted by agent containment (descending), then reference path, then agent path.
        Units in a language without a grammar are listed in ``skipped``; an empty unit yields
        pairs with every figure 0. Python pairs carry the copy detector's ``score`` (its
        background model is the Python references of this call, each pair leaving out the
        reference and its near-duplicates) and ``flagged`` (``score >= options.score_threshold``).

    Notes
    -----
    Every pair is measured: both containments at once for all references of a language, from
    hash counts (:class:`CoverageTable`), and the detector's score. Only the kept pairs become
    :class:`PairReport` records, whose fragments (Dolos's, and the detector's evidence
    fragments) cost the most time and memory. Kept, per agent file (a path: the code blocks of
    one log count together), with ``N = options.max_pairs_per_agent``:

    - every flagged pair;
    - the N pairs of highest ``score`` (ties: higher agent containment, then reference path);
    - the N pairs of highest ``agent_containment`` (ties: reference path);

    so ``similarity compare --top N`` lists the same rows as without the cap whenever
    N <= ``max_pairs_per_agent``. With ``options.max_pairs = M``, only the first M of those in
    report order are kept, plus every flagged pair: an audit's top M pairs, the same as without
    either cap when ``max_pairs_per_agent >= M``. Pairs below ``display_threshold`` on both
    containments are only kept when flagged. ``None`` turns a cap off.
    """
    options = options or SimilarityOptions()
    skipped: list[Skipped] = []
    decodings: tuple[TextDecoding, ...] = ()
    if isinstance(references, ReferenceCorpus):
        skipped.extend(references.skipped)
        decodings = references.decodings
        references = references.units
    corpus_digest = _corpus_digest(list(references), list(boilerplate))
    side = reference_side(references, boilerplate, options, keep=public_references)
    skipped.extend(side.skipped)
    reference_entries = side.entries_for(references)
    agent_entries = index_units(side.index.fork(), agents, Role.AGENT, skipped)

    # The copy detector lexes Python; other languages keep Dolos's figures only (score 0).
    detector: DetectionCorpus | None = None
    reference_profiles: dict[int, Profile] = {}
    seeds: SeedLocations | None = None
    if side.detected and any(unit.language == "python" for unit, _ in agent_entries):
        detector, reference_profiles, seeds = side.detector()
    agent_owners = reference_owners = None
    if owners is not None:
        codes: dict[Hashable, int] = {}
        agent_owners, reference_owners = (
            np.array([codes.setdefault(owners[unit.path], len(codes)) if unit.path in owners else -1
                      for unit, _ in entries], dtype=np.int64)
            for entries in (agent_entries, reference_entries))
    shared = Comparison(
        agents=agent_entries,
        reference_paths=[unit.path for unit, _ in reference_entries],
        ignored=side.ignored,
        tables=side.tables,
        detector=detector,
        options=options,
        seeds=seeds,
        agent_owners=agent_owners,
        reference_owners=reference_owners,
    )
    # Agent units grouped by path (the code blocks of one log share it), in first-seen order.
    by_path: dict[str, list[int]] = {}
    for a, (unit, _) in enumerate(agent_entries):
        by_path.setdefault(unit.path, []).append(a)
    files = list(by_path.values())
    candidates, workers = measure_files(files, shared, jobs)
    if select is None:
        kept = kept_overall(candidates, shared)
    else:
        measured = [MeasuredPair(agent=agent_entries[c.agent][0], reference=reference_entries[c.reference][0],
                                 agent_containment=c.agent_containment, score=c.score, flagged=c.flagged)
                    for c in candidates]
        chosen = sorted(set(select(measured)))
        if chosen and (chosen[0] < 0 or chosen[-1] >= len(candidates)):
            raise ValueError(f"select chose position {chosen[0] if chosen[0] < 0 else chosen[-1]} of "
                             f"{len(candidates)} measured pairs")
        kept = [candidates[i] for i in chosen]

    pairs: list[PairReport] = []
    agent_profiles: dict[int, Profile] = {}
    for candidate in kept:
        agent_unit, agent_entry = agent_entries[candidate.agent]
        reference_unit, reference_entry = reference_entries[candidate.reference]
        agent_profile = None
        if candidate.evidence is not None:
            agent_profile = agent_profiles.get(candidate.agent)
            if agent_profile is None:
                agent_profile = agent_profiles[candidate.agent] = profile_code(agent_unit.text, agent_unit.path)
        pair = pair_report(
            agent_entry,
            reference_entry,
            side.ignored,
            reference_id=reference_id(reference_unit.path),
            min_fragment_kgrams=options.min_fragment_kgrams,
            agent_unit=agent_unit,
            reference_unit=reference_unit,
            evidence=candidate.evidence,
            agent_profile=agent_profile,
            reference_profile=reference_profiles.get(candidate.reference),
            score_threshold=options.score_threshold,
            max_fragments=options.max_fragments_per_pair,
        )
        pairs.append(pair)
    pairs.sort(key=PairReport.sort_key)
    logger.debug("compared %d agent and %d reference units (%d worker(s)): %d pairs kept",
                 len(agent_entries), len(reference_entries), workers, len(pairs))
    return SimilarityReport(
        options=options,
        pairs=tuple(pairs),
        skipped=tuple(skipped),
        corpus_digest=corpus_digest,
        decodings=decodings_of_pairs(pairs, decodings),
    )
