"""Matchers built from others: ``all``, ``any``, ``not``, ``inside``, ``terms``, and the ``builtin`` check call.

``all`` keeps the *primary* child's matches (with the other positive children's first matches as
``support``), drops those a ``not`` child overlaps and keeps those an ``inside`` or ``terms``
filter allows; ``any`` is the union of its children's matches.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field
from typing import Any, Mapping

from mleaudit.audit.rules.context import RunContext
from mleaudit.audit.rules.match import Match
from mleaudit.audit.rules.matchers.base import Matcher, Subject
from mleaudit.audit.rules.registry import RegisteredCheck


@dataclass(frozen=True, slots=True, kw_only=True)
class BuiltinMatcher:
    """A registered built-in check with its parameters (run targets only)."""

    check: RegisteredCheck
    params: Mapping[str, Any] = field(default_factory=dict)
    capture_names: frozenset[str] = frozenset()

    def find(self, subject: RunContext) -> list[Match]:
        return list(self.check(subject, **dict(self.params)))


@dataclass(frozen=True, slots=True, kw_only=True)
class NotMatcher:
    """The negated child of an ``all``: its matches only filter, they never become evidence."""

    child: Matcher
    capture_names: frozenset[str] = frozenset()

    def find(self, subject: Any) -> list[Match]:
        if isinstance(subject, Subject):
            # What a filter cannot evaluate only keeps more matches: not a gap of the rule.
            from dataclasses import replace

            subject = replace(subject, unevaluated=[])
        return self.child.find(subject)


@dataclass(frozen=True, slots=True, kw_only=True)
class InsideFilter:
    """Inside ``all``: keeps the primary matches that lie within a match of ``child``."""

    child: Matcher
    capture_names: frozenset[str] = frozenset()
    value_names: frozenset[str] = frozenset()

    def keep(self, matches: list[Match], subject: Any) -> list[Match]:
        containers = [(c.start, c.end) for c in self.child.find(subject)]
        return [m for m in matches if any(start <= m.start and m.end <= end for start, end in containers)]


#: Policy lists a ``terms`` filter may name (the ``audit:`` keys of a competition config that
#: hold terms rather than URLs or paths).
POLICY_LISTS = ("label_leak_columns",)


@dataclass(frozen=True, slots=True, kw_only=True)
class TermsFilter:
    """Inside ``all``: keeps the primary matches whose ``capture`` names one of the terms.

    Terms are the rule's ``values`` plus the policy list ``policy`` of the subject's competition;
    a term counts as a whole word (not inside a longer identifier). The first term found in a
    match becomes its ``term`` value (the ``{term}`` placeholder).
    """

    capture: str | None = None
    policy: str | None = None
    values: tuple[str, ...] = ()
    capture_names: frozenset[str] = frozenset()
    value_names: frozenset[str] = frozenset({"term"})

    def terms(self, subject: Any) -> tuple[str, ...]:
        policy = getattr(subject, "policy", None)
        extra = policy.terms(self.policy) if policy is not None and self.policy else ()
        return tuple(dict.fromkeys(t for t in (*self.values, *extra) if t))

    def keep(self, matches: list[Match], subject: Any) -> list[Match]:
        terms = self.terms(subject)
        if not terms:
            return []
        # Longest first, so "giver_username_if_known" wins over a shorter term inside it.
        pattern = re.compile(r"(?<!\w)(?:" + "|".join(re.escape(t) for t in sorted(terms, key=len, reverse=True)) + r")(?!\w)")
        kept = []
        for m in matches:
            if self.capture is not None:
                capture = m.captures.get(self.capture)
                text = capture.text if capture is not None else ""
            else:
                text = subject.text[m.start:m.end]
            hit = pattern.search(text)
            if hit is None:
                continue
            values = dict(m.values)
            values.setdefault("term", hit.group(0))
            kept.append(Match(captures=m.captures, start=m.start, end=m.end, values=values, evidence=m.evidence,
                              support=m.support))
        return kept


class _Regions:
    """Matches sorted by start, to tell in O(log n) (typically) whether one overlaps a given match."""

    def __init__(self, matches: list[Match]) -> None:
        self.matches = sorted(matches, key=lambda m: m.start)
        self.starts = [m.start for m in self.matches]
        self.reach: list[int] = []  # the largest end among the first k + 1 matches
        for m in self.matches:
            self.reach.append(max(m.end, self.reach[-1]) if self.reach else m.end)

    def overlap(self, match: Match) -> bool:
        k = bisect.bisect_right(self.starts, match.end) - 1
        while k >= 0 and self.reach[k] >= match.start:
            if self.matches[k].overlaps(match.start, match.end):
                return True
            k -= 1
        return False


@dataclass(frozen=True, slots=True, kw_only=True)
class AllMatcher:
    """Every positive child matches in the same subject; ``not`` children filter by overlap.

    ``filters`` (``inside``, ``terms``) then narrow the primary child's matches.
    """

    positives: tuple[Matcher, ...]
    negatives: tuple[NotMatcher, ...] = ()
    filters: tuple[InsideFilter | TermsFilter, ...] = ()
    primary: int = 0
    capture_names: frozenset[str] = frozenset()
    value_names: frozenset[str] = frozenset()

    def find(self, subject: Any) -> list[Match]:
        raw: list[list[Match]] = []
        for child in self.positives:
            matches = child.find(subject)
            if not matches:
                return []  # the `not` children only filter: no need to run them
            raw.append(matches)
        excluded = _Regions([m for neg in self.negatives for m in neg.find(subject)])
        found: list[list[Match]] = []
        for index, matches in enumerate(raw):
            kept = [m for m in matches if not excluded.overlap(m)]
            if index == self.primary:
                for keep in self.filters:
                    if not kept:
                        break
                    kept = keep.keep(kept, subject)
            if not kept:
                return []
            found.append(kept)
        support = tuple(found[i][0] for i in range(len(found)) if i != self.primary)
        results = []
        for m in found[self.primary]:
            captures = dict(m.captures)
            values = dict(m.values)
            for other in support:
                for name, cap in other.captures.items():
                    captures.setdefault(name, cap)
                for name, value in other.values.items():
                    values.setdefault(name, value)
            results.append(
                Match(captures=captures, start=m.start, end=m.end, values=values, evidence=m.evidence,
                      support=m.support + support)
            )
        return results


@dataclass(frozen=True, slots=True, kw_only=True)
class AnyMatcher:
    """The union of the children's matches."""

    children: tuple[Matcher, ...]
    capture_names: frozenset[str] = frozenset()
    value_names: frozenset[str] = frozenset()

    def find(self, subject: Any) -> list[Match]:
        return [m for child in self.children for m in child.find(subject)]
