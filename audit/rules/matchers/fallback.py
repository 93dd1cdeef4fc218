"""Text stand-ins for tree-sitter queries: what a query's text must hold, and its text fallback.

A query's predicate literals and regexes give a cheap test of whether any pattern can match a
text (:class:`TextRequirement`, :func:`text_requirements`), and on a tree too deep or too wide
to query they are searched in the text instead (:class:`TextFallback`, :func:`text_fallback`).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Any, Callable, Mapping

import regex as _regex
import tree_sitter

from mleaudit.audit.rules.match import Capture, Match
from mleaudit.audit.rules.matchers.base import REGEX_TIMEOUT_SECONDS, bounded_finditer
from mleaudit.audit.rules.matchers.predicates import QUERY_COMMENT, RegexPredicate, unquote
from mleaudit.audit.rules.prefilter import Prefilter, fold, regex_prefilter


@dataclass(frozen=True, slots=True, kw_only=True)
class TextFallback:
    """What a query looks for, as text: its predicates' literal strings and regexes.

    Used instead of the query on a syntax tree too deep or too wide to query
    (:func:`pathological_tree`). Each alternative is one query pattern: a list of
    ``(capture, regex)`` constraints from its ``#eq?``/``#any-of?``/``#match?`` predicates; it
    matches where every constraint matches within :data:`TEXT_FALLBACK_WINDOW` characters of the
    first one. Matches carry the value ``text_match`` (why), which the engine puts on the finding.
    ``structural`` counts the query's patterns with no literal (pure tree shapes), which no text
    search can stand in for.
    """

    alternatives: tuple[tuple[tuple[str, Any], ...], ...]
    structural: int = 0

    def find(self, text: str, why: str) -> list[Match]:
        matches: list[Match] = []
        for constraints in self.alternatives:
            (first_name, first), rest = constraints[0], constraints[1:]
            for m in bounded_finditer(first, text):
                if m.end() == m.start():
                    continue
                captures = {first_name: Capture(start=m.start(), end=m.end(), text=m.group(0))}
                lo, hi = max(0, m.start() - TEXT_FALLBACK_WINDOW), min(len(text), m.end() + TEXT_FALLBACK_WINDOW)
                for name, pattern in rest:
                    hit = pattern.search(text, lo, hi, timeout=REGEX_TIMEOUT_SECONDS)  # bounded like the rest
                    if hit is None:
                        break
                    captures.setdefault(name, Capture(start=hit.start(), end=hit.end(), text=hit.group(0)))
                else:
                    matches.append(Match.from_captures(captures, values={"text_match": why}))
                if len(matches) >= MAX_TEXT_FALLBACK_MATCHES:
                    return matches
        return matches


#: How far apart (characters) the literals of one query pattern may be in a text fallback match.
TEXT_FALLBACK_WINDOW = 400
#: At most this many text fallback matches per rule and unit (a flood of one literal is one finding's worth).
MAX_TEXT_FALLBACK_MATCHES = 200

_QUERY_PREDICATE = re.compile(
    r'\(#(eq|any-of|match)\?\s+@([\w.-]+)((?:\s+"(?:[^"\\]|\\.)*")+)\s*\)'
)
_QUERY_LITERAL = re.compile(r'"((?:[^"\\]|\\.)*)"')


def _query_patterns(source: str) -> list[str]:
    """The top-level patterns of a query source (a top-level ``[...]`` alternation is split too)."""
    bare = QUERY_COMMENT.sub("", source)
    patterns: list[str] = []
    depth, start, i, in_string = 0, None, 0, False
    while i < len(bare):
        ch = bare[i]
        if in_string:
            if ch == "\\":
                i += 1
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "([":
            if depth == 0:
                start = i
            depth += 1
        elif ch in ")]":
            depth -= 1
            if depth == 0 and start is not None:
                group = bare[start:i + 1]
                if group.startswith("(#") and patterns:
                    patterns[-1] += " " + group  # a predicate written after its pattern belongs to it
                else:
                    patterns.extend(_query_patterns(group[1:-1]) if group.startswith("[") else [group])
                start = None
        i += 1
    return patterns



def _unanchored(pattern: str) -> str:
    """A ``#match?`` regex (anchored on a node's text) made to find that text inside a longer text.

    ``^`` becomes "not after a name character or a dot" and ``$`` "not before a name
    character"; escapes and character classes are left alone.
    """
    out = []
    i, in_class = 0, False
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\":
            out.append(pattern[i:i + 2])
            i += 2
            continue
        if in_class:
            in_class = ch != "]"
        elif ch == "[":
            in_class = True
            if pattern[i + 1:i + 2] == "]" or pattern[i + 1:i + 3] == "^]":
                out.append(pattern[i:i + (2 if pattern[i + 1] == "]" else 3)])
                i += 2 if pattern[i + 1] == "]" else 3
                continue
        elif ch == "^":
            ch = r"(?<![\w.])"
        elif ch == "$":
            ch = r"(?!\w)"
        out.append(ch)
        i += 1
    return "".join(out)


@functools.lru_cache(maxsize=None)
def text_fallback(source: str) -> TextFallback | None:
    """The text fallback of a query (``None`` when a ``#match?`` regex does not compile as text),
    built once per query source and process."""
    alternatives = []
    structural = 0
    for pattern in _query_patterns(source):
        constraints: list[tuple[str, Any]] = []
        for kind, capture, literals in (m.groups() for m in _QUERY_PREDICATE.finditer(pattern)):
            values = [unquote(v) for v in _QUERY_LITERAL.findall(literals)]
            if kind == "match":
                try:
                    constraints.append((capture, _regex.compile(_unanchored(values[0]))))
                except _regex.error:
                    return None
            else:
                words = "|".join(_regex.escape(v) for v in sorted(values, key=len, reverse=True))
                constraints.append((capture, _regex.compile(r"(?<!\w)(?:" + words + r")(?!\w)")))
        if constraints:
            alternatives.append(tuple(constraints))
        else:
            structural += 1
    return TextFallback(alternatives=tuple(alternatives), structural=structural)


@dataclass(frozen=True, slots=True, kw_only=True)
class TextRequirement:
    """What a unit's text must hold for one query pattern to match it.

    ``literals``: for each ``#eq?``/``#any-of?`` predicate on a capture that always has one node,
    the values one of which must appear in the text; ``regexes``: the ``#match?`` regexes on
    such captures, with their anchors removed (so that a node's match is a match in the text).
    Every entry must be met; a pattern with no entry has no requirement.
    """

    literals: tuple[tuple[str, ...], ...] = ()
    regexes: tuple[Any, ...] = ()
    #: The :class:`Prefilter` of each regex (``None``: none), tested before it is run.
    prefilters: tuple[Prefilter | None, ...] = ()

    def met(self, text: str, *, regexes: bool = True, folded: Callable[[], str | None] | None = None) -> bool:
        if not all(any(value in text for value in values) for values in self.literals):
            return False
        if not regexes:
            return True
        for regex, prefilter in zip(self.regexes, self.prefilters or (None,) * len(self.regexes)):
            if prefilter is not None and not prefilter.met(folded() if folded is not None else fold(text)):
                return False
            if regex.search(text, timeout=REGEX_TIMEOUT_SECONDS) is None:
                return False
        return True


def _without_anchors(pattern: str) -> str | None:
    """``pattern`` with ``^``, ``$``, ``\\A``, ``\\Z``, ``\\b`` and ``\\B`` removed (a regex that finds
    at least what the anchored one finds), or ``None`` when it has lookarounds that would look past
    a node's text."""
    if "(?<" in pattern or "(?=" in pattern or "(?!" in pattern:
        return None
    out = []
    i, in_class = 0, False
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\":
            pair = pattern[i:i + 2]
            out.append("" if not in_class and pair in ("\\A", "\\Z", "\\z", "\\b", "\\B") else pair)
            i += 2
            continue
        if in_class:
            in_class = ch != "]"
            out.append(ch)
        elif ch == "[":
            in_class = True
            out.append(ch)
            if pattern[i + 1:i + 2] == "^":
                out.append("^")
                i += 1
            if pattern[i + 1:i + 2] == "]":
                out.append("]")
                i += 1
        elif ch not in "^$":
            out.append(ch)
        i += 1
    return "".join(out)


_LITERAL_PREDICATE = re.compile(rb'\(#(eq|any-of)\?\s+@([\w.-]+)((?:\s+"(?:[^"\\]|\\.)*")+)\s*\)')


def text_requirements(query: tree_sitter.Query, source: str,
                       regex_predicates: Mapping[int, tuple[RegexPredicate, ...]]) -> tuple[TextRequirement, ...] | None:
    """The :class:`TextRequirement` of each pattern of ``query``, or ``None`` if one has none."""
    data = source.encode("utf-8")
    index_of = {query.capture_name(j): j for j in range(query.capture_count)}
    needs = []
    for pattern in range(query.pattern_count):
        def single(capture: str) -> bool:
            j = index_of.get(capture)
            return j is not None and query.capture_quantifier(pattern, j) in ("", "+")

        literals = []
        start, end = query.start_byte_for_pattern(pattern), query.end_byte_for_pattern(pattern)
        for m in _LITERAL_PREDICATE.finditer(data, start, end):
            if single(m.group(3).decode("utf-8")):
                values = tuple(unquote(v) for v in _QUERY_LITERAL.findall(m.group(4).decode("utf-8")))
                if values and all(values):
                    literals.append(values)
        regexes = []
        for predicate in regex_predicates.get(pattern, ()):
            if predicate.negate or not single(predicate.capture):
                continue
            loose = _without_anchors(predicate.regex.pattern)
            if loose is not None:
                try:
                    regexes.append(_regex.compile(loose, predicate.regex.flags))
                except _regex.error:
                    continue
        if not literals and not regexes:
            return None
        prefilters = tuple(regex_prefilter(r.pattern, verbose=bool(r.flags & _regex.VERBOSE)) for r in regexes)
        needs.append(TextRequirement(literals=tuple(literals), regexes=tuple(regexes), prefilters=prefilters))
    return tuple(needs)
