"""Pair figures between an agent file and a reference file: Dolos's metrics, containment, fragments.

:func:`pair_report` puts together what a reviewer is shown for one (agent file, reference file)
pair, a :class:`PairReport`:

- Dolos's figures (``similarity``, ``total_overlap``, ``longest_fragment``, covered and total
  fingerprints), from :mod:`mleaudit.audit.similarity.pair_metrics`;
- containment, which Dolos lacks (copydetect's measure): the share of one file's fingerprint
  occurrences whose hash the other file also has, ignored hashes left out of both counts;
- Dolos's fragments with spans on both sides, from :mod:`mleaudit.audit.similarity.fragments`;
- the copy detector's figures (``score``, ``flagged``, ``evidence_fragments``), which come from
  :mod:`mleaudit.audit.similarity.detect` and are attached when the caller passes the detector's
  :class:`~mleaudit.audit.similarity.detect.Evidence` (made readable by
  :mod:`mleaudit.audit.similarity.evidence`); Dolos's figures never depend on them.

The names of those three modules are re-exported here, where they were first defined.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from mleaudit.audit.model import Span
from mleaudit.audit.similarity.detect import DEFAULT_SCORE_THRESHOLD, Evidence, Profile
from mleaudit.audit.similarity.evidence import _unit_extent, evidence_extent, evidence_fragments
from mleaudit.audit.similarity.fingerprint_index import IndexedFile
from mleaudit.audit.similarity.fragments import (
    MAX_FRAGMENT_PAIRINGS,
    Fragment,
    KgramMatch,
    _describe,
    _host,
    build_fragments,
)
from mleaudit.audit.similarity.pair_metrics import MAX_RUN_VISITS, DolosMetrics, dolos_metrics, longest_common_run

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
    max_fragments: int | None = None,
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
    max_fragments : int, optional
        Keep only the longest N Dolos fragments (ties: earlier in the agent file), still in agent
        order, as :func:`~mleaudit.audit.similarity.comparison.longest_fragments` would; the others
        are never placed nor described. ``None`` keeps them all.

    Returns
    -------
    PairReport
    """
    if metrics is None:
        metrics = dolos_metrics(agent, reference, ignored)
    fragments: list[Fragment] = []
    if metrics.total_overlap:
        matches = build_fragments(agent, reference, ignored, min_fragment_kgrams, longest=max_fragments)
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
