"""The options of a comparison (:class:`SimilarityOptions`): Dolos's k-gram length and window,
the display threshold, the pair caps and the copy detector's score threshold."""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import Any, Mapping

from mleaudit.audit.errors import ConfigError
from mleaudit.audit.similarity.detect import DEFAULT_SCORE_THRESHOLD

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
        lives in ``rules/plagiarism/``; callers pass
        :func:`~mleaudit.audit.score_threshold.load_score_threshold`'s result.
    max_pairs_per_agent : int or None, default DEFAULT_MAX_PAIRS_PER_AGENT (10)
        How many pairs the report keeps per agent file (per path: code blocks of one log count
        together): the N of highest ``score`` and the N of highest ``agent_containment`` (at most
        2N), plus every flagged pair. Only kept pairs get fragments, so a report's size and the
        time to build it no longer grow with agents × references. ``None`` keeps every pair;
        0 only the flagged ones (and scores only the pairs that may be flagged).
    max_pairs : int or None, default None
        Of the pairs kept per agent file, keep only the first M in report order (agent
        containment, descending), plus every flagged pair (an audit report's top pairs).
        ``None``: no overall cap; 0: flagged pairs only.
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
        for name, least in (("max_pairs_per_agent", 0), ("max_pairs", 0), ("max_fragments_per_pair", 1)):
            cap = getattr(self, name)
            if cap is not None and (not _is_int(cap) or cap < least):
                errors.append(f"{name} must be None or an integer >= {least}, got {cap!r}")
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
