"""Text gates: literals a text must hold for a matcher to find anything in it, per language.

A rule's matcher finds nothing in most texts of a run, and learning that costs a walk of its
whole tree (every ``any`` branch, every regex's prefilter) for every rule and text. A gate
(:func:`text_gate`) sums up, at the root, what the leaves' prefilters require, so that the
engine tests a few shared literals per text (:meth:`Gate.open`) and leaves the matcher alone
where it cannot match.

A gate is only ever weaker than its matcher: when :meth:`Gate.open` is false for a text,
``matcher.find`` on that text (in that language) returns no match, notes nothing in
``Subject.unevaluated`` and runs no search whose result could matter; the only thing skipped
is a regex that could match (or run past its time bound) when a later part of the matcher
cannot. Per matcher kind:

- ``regex``: nothing outside its languages; else its :class:`~mleaudit.audit.rules.prefilter.Prefilter`;
- ``strings``: nothing outside :data:`~mleaudit.audit.rules.matchers.text.FOLDED_LANGUAGES`
  (escapes spell values that are not in the text, so no literal is required);
- ``query``: nothing in a language it has no query for; else what
  :meth:`~mleaudit.audit.rules.matchers.query.QueryMatcher.could_match` tests: the ASCII
  literals of its :class:`~mleaudit.audit.rules.matchers.fallback.TextRequirement`, and on a
  text shorter than :data:`~mleaudit.audit.rules.matchers.query.COMBINED_QUERY_MIN_CHARS` the
  prefilters of its regexes (one requirement of each pattern: their union);
- ``any``: one clause from each child (their union), nothing when every child has nothing;
- ``all``: the children run in order and stop at the first without a match, so the gates of
  the first children conjoin up to and including the first child that may note what it could
  not evaluate or raise for reasons other than a regex time bound (a query, a ``strings``
  matcher): when that child finds nothing, its notes are the rule's all the same;
- anything else (built-in checks, a matcher this module does not know): always open.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mleaudit.audit.rules.matchers.combine import AllMatcher, AnyMatcher, InsideFilter, NotMatcher, TermsFilter
from mleaudit.audit.rules.matchers.query import COMBINED_QUERY_MIN_CHARS, QueryMatcher
from mleaudit.audit.rules.matchers.text import FOLDED_LANGUAGES, RegexMatcher, StringsMatcher
from mleaudit.audit.rules.prefilter import FoldedTexts

__all__ = ["Gate", "NEVER", "ALWAYS", "text_gate"]

#: Most literals one clause of a gate holds (a longer one is met by almost any text).
_MAX_CLAUSE = 64


@dataclass(frozen=True, slots=True)
class Clause:
    """One literal of ``literals`` must be in the folded text (only when ``short_only``: on a short text)."""

    literals: frozenset[str]
    #: Required only of texts shorter than :data:`COMBINED_QUERY_MIN_CHARS`.
    short_only: bool = False


@dataclass(frozen=True, slots=True)
class Gate:
    """What a text must hold for a matcher to find anything: ``never``, or every clause met."""

    clauses: tuple[Clause, ...] = ()
    never: bool = False

    def open(self, text: str, folds: FoldedTexts) -> bool:
        """False only when the matcher finds nothing in ``text`` (:func:`text_gate`)."""
        if self.never:
            return False
        if not self.clauses:
            return True
        short = len(text) < COMBINED_QUERY_MIN_CHARS
        for clause in self.clauses:
            if clause.short_only and not short:
                continue
            if not folds.holds_any(text, clause.literals):
                return False
        return True


NEVER = Gate(never=True)
ALWAYS = Gate()


def _any(gates: list[Gate]) -> Gate:
    gates = [g for g in gates if not g.never]
    if not gates:
        return NEVER
    literals: set[str] = set()
    short_only = False
    for gate in gates:
        if not gate.clauses:
            return ALWAYS
        # The clause that applies to every text when there is one, then the fewest literals.
        best = min(gate.clauses, key=lambda c: (c.short_only, len(c.literals)))
        literals |= best.literals
        short_only = short_only or best.short_only
    if len(literals) > _MAX_CLAUSE:
        return ALWAYS
    return Gate((Clause(frozenset(literals), short_only),))


def _quiet(matcher: Any, language: str | None) -> bool:
    """True when ``matcher.find`` notes nothing and raises nothing but a regex's ``TimeoutError``."""
    if isinstance(matcher, RegexMatcher):
        return True
    if isinstance(matcher, StringsMatcher):
        return language not in FOLDED_LANGUAGES
    if isinstance(matcher, QueryMatcher):
        return (language or "") not in matcher.queries
    if isinstance(matcher, AnyMatcher):
        return all(_quiet(c, language) for c in matcher.children)
    if isinstance(matcher, AllMatcher):
        return all(_quiet(c, language) for c in (*matcher.positives, *matcher.negatives, *matcher.filters))
    if isinstance(matcher, (NotMatcher, InsideFilter)):
        return _quiet(matcher.child, language)  # a `not` drops its child's notes, not what it raises
    return isinstance(matcher, TermsFilter)


def _query_gate(matcher: QueryMatcher, language: str | None) -> Gate:
    if (language or "") not in matcher.queries:
        return NEVER
    needs = matcher.requirements.get(language or "")
    if needs is None:
        return ALWAYS
    gates = []
    for need in needs:
        clauses = [Clause(frozenset(v.lower() for v in values))
                   for values in need.literals if all(v and v.isascii() for v in values)]
        for prefilter in need.prefilters:
            if prefilter is not None:
                clauses.extend(Clause(frozenset(c), short_only=True) for c in prefilter.clauses)
        gates.append(Gate(tuple(clauses)))
    return _any(gates)


def text_gate(matcher: Any, language: str | None) -> Gate:
    """The gate of ``matcher`` on texts of ``language`` (see the module docstring).

    Parameters
    ----------
    matcher : Matcher
        A compiled matcher of a ``code``, ``log`` or ``file`` rule.
    language : str or None
        The language of the texts (a code unit's or a log event's).

    Returns
    -------
    Gate
        :data:`NEVER` when the matcher cannot match any text of ``language``; :data:`ALWAYS`
        when no literal is required.
    """
    if isinstance(matcher, RegexMatcher):
        if matcher.languages and language not in matcher.languages:
            return NEVER
        if matcher.prefilter is None:
            return ALWAYS
        return Gate(tuple(Clause(frozenset(c)) for c in matcher.prefilter.clauses))
    if isinstance(matcher, StringsMatcher):
        return NEVER if language not in FOLDED_LANGUAGES else ALWAYS
    if isinstance(matcher, QueryMatcher):
        return _query_gate(matcher, language)
    if isinstance(matcher, AnyMatcher):
        return _any([text_gate(c, language) for c in matcher.children])
    if isinstance(matcher, AllMatcher):
        clauses: list[Clause] = []
        for child in matcher.positives:
            gate = text_gate(child, language)
            if gate.never:
                return NEVER
            clauses.extend(gate.clauses)
            if not _quiet(child, language):
                break  # what it notes when it finds nothing stays the rule's: later children must run
        return Gate(tuple(clauses))
    return ALWAYS
