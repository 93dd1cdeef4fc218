"""What ``audit_run`` does beyond the rules: :class:`AuditOptions`."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mleaudit.audit.model import Severity
from mleaudit.audit.similarity import SimilarityOptions


@dataclass(frozen=True, slots=True, kw_only=True)
class AuditOptions:
    """What ``audit_run`` does beyond the rules.

    Parameters
    ----------
    corpus_dir : Path or None
        Folder of reference notebooks (``.py``/``.ipynb``) to compare the run's code with;
        ``None`` skips similarity.
    corpus_index : Path or None
        A corpus index (``mleaudit corpus build``) to compare the run's code with instead of a
        folder: :meth:`mleaudit.audit.similarity.index.CorpusIndex.compare` with its
        defaults (the 5 references of highest agent containment per file and every reference
        the copy detector flags). Opened once per process. The report then holds no reference
        texts (the index stores fingerprints, not the kernels).
    index_exhaustive : bool
        With ``corpus_index``: the copy detector's search checks every reference its bounds cannot
        exclude (``bound_budget=None``). Without it, a code unit with more such references than
        the default budget checks is a ``similarity-incomplete`` gap.
    boilerplate_dirs : tuple of Path
        Starter code whose fingerprints are ignored (copydetect's boilerplate); with
        ``corpus_index``, the index's own.
    similarity : SimilarityOptions
        k-gram length, window and thresholds. Unless set, ``max_pairs`` is ``top_pairs`` (only
        the listed pairs get fragments) and ``max_fragments_per_pair`` is
        :data:`REPORT_FRAGMENTS_PER_PAIR`; ``max_pairs_per_agent`` is raised to ``top_pairs``.
    top_pairs : int
        How many (agent file, reference) pairs the report lists, in report order (agent
        containment, descending); every flagged pair is listed as well.
    similarity_jobs : int
        Worker processes for the comparison (:func:`mleaudit.audit.similarity.compare`'s ``jobs``).
    include_experimental : bool
        Also run rules whose status is ``experimental``.
    no_similarity_reason : str
        Why similarity is off when ``corpus_dir`` is ``None`` (shown in the report's ``meta``).
    baseline : mleaudit.audit.review.Baseline or None
        Reviewer decisions to mark on the findings (dismissed ones stop counting for the verdict).
    fail_on : Severity
        The ``--fail-on`` threshold: a finding at or above it keeps the verdict from ``clean``.
    grade_requested : bool
        Grading was asked for: a run with no grade is then an incomplete audit (the reason is
        the ``grade_skipped`` given to :func:`audit_run`).
    """

    corpus_dir: Path | None = None
    corpus_index: Path | None = None
    index_exhaustive: bool = False
    boilerplate_dirs: tuple[Path, ...] = ()
    similarity: SimilarityOptions = field(default_factory=SimilarityOptions)
    top_pairs: int = 10
    similarity_jobs: int = 1
    include_experimental: bool = False
    no_similarity_reason: str = "no reference corpus"
    baseline: Any = None
    fail_on: Severity = Severity.HIGH
    grade_requested: bool = False
