"""Code similarity between agent code and public kernels: Dolos's algorithm, copydetect's roles.

Pipeline: :func:`tokenize_text` (tree-sitter node-type tokens, ``tokenize.py``) → fingerprints
(k-gram hashes and winnowing, ``winnow.py``) → :class:`FingerprintIndex` (boilerplate, references,
agents; ignored hashes, ``index.py``) → :class:`PairReport` per agent × reference pair
(``pairs.py``). The figures Dolos reports (``similarity``, ``total_overlap``,
``longest_fragment``, covered and total fingerprints) are computed as Dolos 3.5.1 computes them,
so they can be checked against Dolos's own output; containment in both directions, fragments with
spans into notebook cells, boilerplate exclusion and a reference corpus are added on top.

The copy detector (``detect.py``) adds one decision statistic per pair, ``score`` in [0, 1)
(the information of the code the agent file shares with the reference, under a background model
of the other references), and ``flagged`` when it reaches the policy threshold, which lives in
``rules/plagiarism/`` (see :func:`load_score_threshold`).

Naming: ``*_similarity`` and ``*_containment`` lie in [0, 1], higher meaning more alike; a
*k-gram* is a run of ``kgram_length`` tokens; a *fingerprint* is a k-gram hash kept by winnowing.

Examples
--------
>>> from audit.units import CodeUnit
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
from dataclasses import dataclass, fields
from typing import Any, Mapping, Sequence

from audit.errors import ConfigError
from audit.model import Skipped
from audit.parsing import LANGUAGES
from audit.similarity.corpus import ReferenceCorpus, load_reference_corpus, reference_id
from audit.similarity.detect import (
    DEFAULT_SCORE_THRESHOLD,
    DetectionCorpus,
    Evidence,
    Profile,
    load_score_threshold,
    profile_code,
    score_from_bits,
    score_threshold_from_rules,
)
from audit.similarity.index import FingerprintIndex, IndexedFile, Role
from audit.similarity.pairs import (
    DolosMetrics,
    Fragment,
    PairReport,
    build_fragments,
    containment,
    dolos_metrics,
    evidence_fragments,
    pair_report,
)
from audit.similarity.tokenize import TokenizedFile, tokenize_chars, tokenize_text, tokenize_tree
from audit.similarity.winnow import Fingerprint, fingerprint_tokens, hash_token, rolling_hashes, winnow
from audit.units import CodeUnit

__all__ = [
    "DEFAULT_SCORE_THRESHOLD",
    "DetectionCorpus",
    "DolosMetrics",
    "Evidence",
    "Fingerprint",
    "FingerprintIndex",
    "Fragment",
    "IndexedFile",
    "PairReport",
    "Profile",
    "ReferenceCorpus",
    "Role",
    "SimilarityOptions",
    "SimilarityReport",
    "TokenizedFile",
    "build_fragments",
    "compare",
    "containment",
    "dolos_metrics",
    "evidence_fragments",
    "fingerprint_tokens",
    "hash_token",
    "load_reference_corpus",
    "load_score_threshold",
    "pair_report",
    "profile_code",
    "rolling_hashes",
    "score_from_bits",
    "score_threshold_from_rules",
    "tokenize_chars",
    "tokenize_text",
    "tokenize_tree",
    "tokenize_unit",
    "winnow",
]

logger = logging.getLogger(__name__)


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

    Raises
    ------
    ConfigError
        Listing every invalid option.

    Examples
    --------
    >>> SimilarityOptions(kgram_length=0, display_threshold=2)
    Traceback (most recent call last):
    ...
    audit.errors.ConfigError: invalid similarity options:
      kgram_length must be an integer >= 1, got 0
      display_threshold must be a number in [0, 1], got 2
    """

    kgram_length: int = 23
    kgrams_in_window: int = 17
    max_doc_fraction: float | None = None
    min_fragment_kgrams: int = 1
    display_threshold: float = 0.0
    score_threshold: float = DEFAULT_SCORE_THRESHOLD

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
        Agent × reference pairs at or above ``options.display_threshold``, sorted by agent
        containment (descending), then reference path, then agent path.
    skipped : tuple of Skipped
        Units and corpus files that could not be compared, with the reason.
    corpus_digest : str
        sha256 over the reference and boilerplate paths and texts, to tell corpora apart.
    """

    options: SimilarityOptions
    pairs: tuple[PairReport, ...]
    skipped: tuple[Skipped, ...] = ()
    corpus_digest: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "options": self.options.to_dict(),
            "corpus_digest": self.corpus_digest,
            "pairs": [p.to_dict() for p in self.pairs],
            "skipped": [s.to_dict() for s in self.skipped],
        }


def tokenize_unit(unit: CodeUnit) -> TokenizedFile:
    """Tokenize a :class:`~audit.units.CodeUnit` (its ``text`` in its ``language``).

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


def compare(
    agents: Sequence[CodeUnit],
    references: Sequence[CodeUnit] | ReferenceCorpus,
    options: SimilarityOptions | None = None,
    boilerplate: Sequence[CodeUnit] = (),
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
        Defaults to ``SimilarityOptions()`` (Dolos's k = 23, window 17).
    boilerplate : sequence of CodeUnit, optional
        Starter code whose fingerprints never count as a match.

    Returns
    -------
    SimilarityReport
        Pairs sorted by agent containment (descending). Units in a language without a grammar
        are listed in ``skipped``; an empty unit yields pairs with every figure 0. Python pairs
        carry the copy detector's ``score`` (its background model is the Python references of
        this call, each pair leaving out the reference and its near-duplicates) and ``flagged``
        (``score >= options.score_threshold``).
    """
    options = options or SimilarityOptions()
    skipped: list[Skipped] = []
    if isinstance(references, ReferenceCorpus):
        skipped.extend(references.skipped)
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
    detector_position = {k: position for position, k in enumerate(detected)}

    pairs: list[PairReport] = []
    for agent_unit, agent_entry in agent_entries:
        agent_profile = mask = None
        if detector is not None and agent_unit.language == "python":
            agent_profile = profile_code(agent_unit.text, agent_unit.path)
            mask = detector.boilerplate_mask(agent_profile)
        for k, (reference_unit, reference_entry) in enumerate(reference_entries):
            if agent_unit.language != reference_unit.language:
                continue
            metrics = dolos_metrics(agent_entry, reference_entry, ignored)
            evidence = None
            if agent_profile is not None and k in detector_position:
                evidence = detector.evidence(agent_profile, detector_position[k], mask=mask)
            best = max(
                containment(metrics.left_covered, metrics.left_total, metrics.left_ignored),
                containment(metrics.right_covered, metrics.right_total, metrics.right_ignored),
            )
            flagged = evidence is not None and evidence.score >= options.score_threshold
            if best < options.display_threshold and not flagged:
                continue
            pairs.append(
                pair_report(
                    agent_entry,
                    reference_entry,
                    ignored,
                    reference_id=reference_id(reference_unit.path),
                    min_fragment_kgrams=options.min_fragment_kgrams,
                    agent_unit=agent_unit,
                    reference_unit=reference_unit,
                    metrics=metrics,
                    evidence=evidence,
                    agent_profile=agent_profile,
                    reference_profile=reference_profiles.get(k),
                    score_threshold=options.score_threshold,
                )
            )
    pairs.sort(key=PairReport.sort_key)
    logger.debug("compared %d agent and %d reference units: %d pairs kept",
                 len(agent_entries), len(reference_entries), len(pairs))
    return SimilarityReport(
        options=options,
        pairs=tuple(pairs),
        skipped=tuple(skipped),
        corpus_digest=_corpus_digest(list(references), list(boilerplate)),
    )
