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
import math
import multiprocessing
import signal
from dataclasses import dataclass, field, fields, replace
from typing import Any, Mapping, Sequence

import numpy as np

from mleaudit.audit.errors import ConfigError
from mleaudit.audit.model import Skipped
from mleaudit.audit.parsing import LANGUAGES
from mleaudit.audit.similarity.corpus import ReferenceCorpus, TextDecoding, load_reference_corpus, reference_id
from mleaudit.audit.similarity.bounds import SeedLocations, needed_bits, seed_table, upper_token_bits, window_bounds
from mleaudit.audit.similarity.detect import (
    DEFAULT_SCORE_THRESHOLD,
    DetectionCorpus,
    Evidence,
    Profile,
    load_score_threshold,
    profile_code,
    score_from_bits,
    score_threshold_from_rules,
)
from mleaudit.audit.similarity.fingerprint_index import CoverageTable, FingerprintIndex, IndexedFile, Role
from mleaudit.audit.similarity.pairs import (
    DolosMetrics,
    Fragment,
    PairReport,
    build_fragments,
    containment,
    dolos_metrics,
    evidence_fragments,
    pair_report,
)
from mleaudit.audit.similarity.tokenize import TokenizedFile, tokenize_chars, tokenize_text, tokenize_tree
from mleaudit.audit.similarity.winnow import Fingerprint, fingerprint_tokens, hash_token, rolling_hashes, winnow
from mleaudit.audit.units import CodeUnit

__all__ = [
    "DEFAULT_MAX_PAIRS_PER_AGENT",
    "SimilarityOptions",
    "SimilarityReport",
    "compare",
    "longest_fragments",
    "tokenize_unit",
]

logger = logging.getLogger(__name__)

#: Default of :attr:`SimilarityOptions.max_pairs_per_agent`: pairs kept per agent file, by score
#: and by agent containment each (the audit report lists the top 10 pairs of a run).
DEFAULT_MAX_PAIRS_PER_AGENT = 10


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_real(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


@dataclass(frozen=True, slots=True, kw_only=True)
class SimilarityOptions:
    """Settings of a comparison, validated on construction (every problem reported at once).

    Parameters
    ----------
    kgram_length : int, default 23
        k: tokens per k-gram (Dolos ``kgramLength``; copydetect's noise threshold). Matches
        shorter than k tokens are never found.
    kgrams_in_window : int, default 17
        Winnowing window in k-grams (Dolos ``kgramsInWindow``). Any match of at least
        ``kgram_length + kgrams_in_window - 1`` tokens (the guarantee threshold, 39 by default)
        shares a fingerprint.
    max_doc_fraction : float or None, default None
        Ignore fingerprints found in more than this share of the reference files (in (0, 1]);
        ``None`` keeps all, as Dolos does by default.
    min_fragment_kgrams : int, default 1
        Fragments of fewer k-grams are not listed (Dolos ``minFragmentLength``); figures are
        unaffected.
    display_threshold : float, default 0.0
        Keep a pair when ``max(agent_containment, reference_containment)`` reaches this value
        (in [0, 1]); 0.0 keeps every pair. Pairs the detector flags are always kept.
    score_threshold : float, default DEFAULT_SCORE_THRESHOLD
        A pair is ``flagged`` when its ``score`` reaches this value (in [0, 1]). The policy value
        lives in ``rules/plagiarism/``; callers pass :func:`load_score_threshold`'s result.
    max_pairs_per_agent : int or None, default DEFAULT_MAX_PAIRS_PER_AGENT (10)
        How many pairs the report keeps per agent file (per path: code blocks of one log count
        together): the N of highest ``score`` and the N of highest ``agent_containment`` (at most
        2N), plus every flagged pair. Only kept pairs get fragments, so a report's size and the
        time to build it no longer grow with agents × references. ``None`` keeps every pair.
    max_pairs : int or None, default None
        Of the pairs kept per agent file, keep only the first M in report order (agent
        containment, descending), plus every flagged pair (an audit report's top pairs).
        ``None``: no overall cap.
    max_fragments_per_pair : int or None, default None
        Keep only each pair's longest N Dolos fragments (ties: earlier in the agent file), still
        in agent order; figures are unaffected. Unrelated code of one competition shares
        hundreds of one-k-gram fragments, which would otherwise make up most of a report.
        ``None`` keeps them all.

    Raises
    ------
    ConfigError
        Listing every invalid option.

    Examples
    --------
    >>> SimilarityOptions(kgram_length=0, display_threshold=2)
    Traceback (most recent call last):
    ...
    mleaudit.audit.errors.ConfigError: invalid similarity options:
      kgram_length must be an integer >= 1, got 0
      display_threshold must be a number in [0, 1], got 2
    """

    kgram_length: int = 23
    kgrams_in_window: int = 17
    max_doc_fraction: float | None = None
    min_fragment_kgrams: int = 1
    display_threshold: float = 0.0
    score_threshold: float = DEFAULT_SCORE_THRESHOLD
    max_pairs_per_agent: int | None = DEFAULT_MAX_PAIRS_PER_AGENT
    max_pairs: int | None = None
    max_fragments_per_pair: int | None = None

    def __post_init__(self) -> None:
        errors = []

        def check_count(name: str) -> None:
            value = getattr(self, name)
            if not _is_int(value) or value < 1:
                errors.append(f"{name} must be an integer >= 1, got {value!r}")

        check_count("kgram_length")
        check_count("kgrams_in_window")
        if self.max_doc_fraction is not None and (
            not _is_real(self.max_doc_fraction) or not 0 < self.max_doc_fraction <= 1
        ):
            errors.append(f"max_doc_fraction must be None or a number in (0, 1], got {self.max_doc_fraction!r}")
        check_count("min_fragment_kgrams")
        if not _is_real(self.display_threshold) or not 0 <= self.display_threshold <= 1:
            errors.append(f"display_threshold must be a number in [0, 1], got {self.display_threshold!r}")
        if not _is_real(self.score_threshold) or not 0 <= self.score_threshold <= 1:
            errors.append(f"score_threshold must be a number in [0, 1], got {self.score_threshold!r}")
        for name in ("max_pairs_per_agent", "max_pairs", "max_fragments_per_pair"):
            cap = getattr(self, name)
            if cap is not None and (not _is_int(cap) or cap < 1):
                errors.append(f"{name} must be None or an integer >= 1, got {cap!r}")
        if errors:
            raise ConfigError("invalid similarity options:\n  " + "\n  ".join(errors))

    @property
    def guarantee_tokens(self) -> int:
        """Length in tokens from which a match is certain to share a fingerprint."""
        return self.kgram_length + self.kgrams_in_window - 1

    @classmethod
    def from_thresholds(cls, *, noise_tokens: int = 23, guarantee_tokens: int = 39, **others: Any) -> "SimilarityOptions":
        """Options from copydetect's noise and guarantee thresholds (window = guarantee - noise + 1).

        Raises
        ------
        ConfigError
            If ``guarantee_tokens < noise_tokens`` or any option is invalid.

        Examples
        --------
        >>> SimilarityOptions.from_thresholds(noise_tokens=23, guarantee_tokens=39).kgrams_in_window
        17
        """
        if not (_is_int(noise_tokens) and _is_int(guarantee_tokens)) or guarantee_tokens < noise_tokens:
            raise ConfigError(
                f"invalid similarity options:\n  guarantee_tokens ({guarantee_tokens!r}) must be an integer "
                f">= noise_tokens ({noise_tokens!r})"
            )
        return cls(kgram_length=noise_tokens, kgrams_in_window=guarantee_tokens - noise_tokens + 1, **others)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "SimilarityOptions":
        """Options from a mapping (a config file section); unknown keys are an error.

        Raises
        ------
        ConfigError
            Naming the unknown keys, or every invalid value.
        """
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ConfigError(
                f"invalid similarity options:\n  unknown option(s) {', '.join(unknown)}; "
                f"known: {', '.join(sorted(known))}"
            )
        return cls(**dict(data))

    def to_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


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


def tokenize_unit(unit: CodeUnit) -> TokenizedFile:
    """Tokenize a :class:`~mleaudit.audit.units.CodeUnit` (its ``text`` in its ``language``).

    Raises
    ------
    KeyError
        If the unit's language has no grammar (and is not ``"chars"``).
    """
    return tokenize_text(unit.text, unit.language, unit.path)


def _corpus_digest(references: Sequence[CodeUnit], boilerplate: Sequence[CodeUnit]) -> str:
    digest = hashlib.sha256()
    for role, units in (("reference", references), ("boilerplate", boilerplate)):
        for unit in units:
            digest.update(f"{role}\0{unit.path}\0{unit.language}\0".encode())
            digest.update(hashlib.sha256(unit.text.encode("utf-8", errors="surrogatepass")).digest())
    return digest.hexdigest()


def _coverage_tables(
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
class _Comparison:
    """What measuring an agent file needs (inherited by forked worker processes, see :func:`compare`)."""

    agents: list[tuple[CodeUnit, IndexedFile]]
    reference_paths: list[str]
    ignored: frozenset[int]
    tables: Mapping[str, tuple[np.ndarray, CoverageTable, np.ndarray]]
    detector: DetectionCorpus | None
    options: SimilarityOptions
    #: The detector references' seeds, for the bound that spares scoring most pairs.
    seeds: SeedLocations | None = None
    #: Detector evidence by agent profile (:meth:`Profile.content_key`): a journal holds the same
    #: code in several nodes, and its best solution again in a file.
    scored: dict[tuple, Sequence[Evidence | None]] = field(default_factory=dict)


def _worth_scoring(agent: Profile, visible: np.ndarray, shared: _Comparison) -> np.ndarray | None:
    """Which detector references the agent file must be scored against (``None``: all).

    A pair is kept when it is flagged or visible, so its score is needed only then: for the
    visible ones, and for those whose :func:`~mleaudit.audit.similarity.bounds.window_bound`
    (an upper bound of the detector's evidence) reaches the score threshold. The rest cannot be
    flagged, and are not scored.
    """
    detector = shared.detector
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


def _measure_file(members: Sequence[int], shared: _Comparison) -> list[_Candidate]:
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
        evidence: Sequence[Evidence | None] = [None] * len(positions)
        if shared.detector is not None and unit.language == "python":
            # Every Python reference is a detector reference, in the order of `positions`.
            agent = profile_code(unit.text, unit.path)
            key = (agent.content_key(), visible.tobytes())
            found_before = shared.scored.get(key)
            if found_before is None:
                found_before = shared.detector.evidence_all(agent, wanted=_worth_scoring(agent, visible, shared))
                shared.scored[key] = found_before
            evidence = found_before
        for row, k in enumerate(positions.tolist()):
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


def _overall(candidates: list[_Candidate], shared: _Comparison) -> list[_Candidate]:
    """``max_pairs`` of all files' kept pairs, first in report order, plus every flagged pair."""
    limit = shared.options.max_pairs
    if limit is None:
        return candidates
    paths = shared.reference_paths
    ordered = sorted((c for c in candidates if c.visible),
                     key=lambda c: (-c.agent_containment, paths[c.reference], shared.agents[c.agent][0].path))
    chosen = {(c.agent, c.reference) for c in ordered[:limit]}
    return [c for c in candidates if c.flagged or (c.agent, c.reference) in chosen]


def longest_fragments(pair: PairReport, n: int) -> PairReport:
    """``pair`` with only its ``n`` longest fragments, in their original (agent) order."""
    if len(pair.fragments) <= n:
        return pair
    longest = sorted(range(len(pair.fragments)), key=lambda i: (-pair.fragments[i].length, i))[:n]
    return replace(pair, fragments=tuple(pair.fragments[i] for i in sorted(longest)))


#: Set in the parent before worker processes fork (they inherit it; nothing is pickled).
_SHARED: _Comparison | None = None


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


def compare(
    agents: Sequence[CodeUnit],
    references: Sequence[CodeUnit] | ReferenceCorpus,
    options: SimilarityOptions | None = None,
    boilerplate: Sequence[CodeUnit] = (),
    *,
    jobs: int | None = None,
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
    global _SHARED
    options = options or SimilarityOptions()
    skipped: list[Skipped] = []
    decodings: tuple[TextDecoding, ...] = ()
    if isinstance(references, ReferenceCorpus):
        skipped.extend(references.skipped)
        decodings = references.decodings
        references = references.units
    index = FingerprintIndex(options.kgram_length, options.kgrams_in_window, options.max_doc_fraction)

    def add(units: Sequence[CodeUnit], role: Role) -> list[tuple[CodeUnit, IndexedFile]]:
        added = []
        for unit in units:
            if unit.language not in LANGUAGES and unit.language != "chars":
                skipped.append(Skipped(path=unit.path, reason=f"no grammar for language {unit.language!r}"))
                continue
            tokenized = tokenize_unit(unit)
            if role is Role.BOILERPLATE:
                entry = index.add_boilerplate(tokenized)
            elif role is Role.REFERENCE:
                entry = index.add_reference(tokenized)
            else:
                entry = index.add_agent(tokenized)
            added.append((unit, entry))
        return added

    add(boilerplate, Role.BOILERPLATE)
    reference_entries = add(references, Role.REFERENCE)
    agent_entries = add(agents, Role.AGENT)
    ignored = index.ignored_hashes

    # The copy detector lexes Python; other languages keep Dolos's figures only (score 0).
    detected = [k for k, (unit, _) in enumerate(reference_entries) if unit.language == "python"]
    detector: DetectionCorpus | None = None
    reference_profiles: dict[int, Profile] = {}
    if detected and any(unit.language == "python" for unit, _ in agent_entries):
        reference_profiles = {
            k: profile_code(reference_entries[k][0].text, reference_entries[k][0].path) for k in detected
        }
        detector = DetectionCorpus(
            [reference_profiles[k] for k in detected],
            [profile_code(unit.text, unit.path) for unit in boilerplate if unit.language == "python"],
        )
    shared = _Comparison(
        agents=agent_entries,
        reference_paths=[unit.path for unit, _ in reference_entries],
        ignored=ignored,
        tables=_coverage_tables(reference_entries, ignored),
        detector=detector,
        options=options,
        seeds=None if detector is None else SeedLocations([(p.seed_keys(), len(p.ids)) for p in detector.references]),
    )
    # Agent units grouped by path (the code blocks of one log share it), in first-seen order.
    by_path: dict[str, list[int]] = {}
    for a, (unit, _) in enumerate(agent_entries):
        by_path.setdefault(unit.path, []).append(a)
    files = list(by_path.values())
    workers = _worker_count(jobs, len(files))
    candidates: list[_Candidate] = []
    if workers == 1:
        for members in files:
            candidates.extend(_measure_file(members, shared))
    else:
        _SHARED = shared
        try:
            with multiprocessing.get_context("fork").Pool(workers, initializer=ignore_sigint) as pool:
                for found in pool.imap(_measure_file_in_worker, files):
                    candidates.extend(found)
        finally:
            _SHARED = None

    pairs: list[PairReport] = []
    agent_profiles: dict[int, Profile] = {}
    for candidate in _overall(candidates, shared):
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
            ignored,
            reference_id=reference_id(reference_unit.path),
            min_fragment_kgrams=options.min_fragment_kgrams,
            agent_unit=agent_unit,
            reference_unit=reference_unit,
            evidence=candidate.evidence,
            agent_profile=agent_profile,
            reference_profile=reference_profiles.get(candidate.reference),
            score_threshold=options.score_threshold,
        )
        if options.max_fragments_per_pair is not None:
            pair = longest_fragments(pair, options.max_fragments_per_pair)
        pairs.append(pair)
    pairs.sort(key=PairReport.sort_key)
    logger.debug("compared %d agent and %d reference units (%d worker(s)): %d pairs kept",
                 len(agent_entries), len(reference_entries), workers, len(pairs))
    return SimilarityReport(
        options=options,
        pairs=tuple(pairs),
        skipped=tuple(skipped),
        corpus_digest=_corpus_digest(list(references), list(boilerplate)),
        decodings=decodings_of_pairs(pairs, decodings),
    )
