"""Compiled matchers: tree-sitter queries, regexes, folded strings, built-in checks and their combinations.

:func:`compile_matcher` turns a matcher spec (``mleaudit.audit.rules.spec``) into a matcher object once,
at load time, and appends every problem it finds (a query that does not compile, an unknown
regex flag, a ``not`` outside ``all``) to a list instead of stopping at the first, so that the
loader can report a whole ruleset at once.

Every matcher has ``find(subject) -> list[Match]`` where the subject is a :class:`Subject` (a
text with its language) or, for built-in checks, a :class:`~mleaudit.audit.rules.context.RunContext`. Offsets in
matches are character offsets into ``subject.text``.

Semantics (DESIGN §4.3):

- ``query``: one tree-sitter query per language, run with ``QueryCursor.matches``; its
  ``#match?``-family predicates whose regex may backtrack are applied here with the ``regex``
  package and a time bound (:class:`RegexPredicate`), not by tree-sitter with ``re``; each
  match's captures are its named nodes (the first node when a quantified capture holds several). On a
  tree too deep or too wide to query (:func:`pathological_tree`) the query's predicate literals
  and regexes are searched in the text instead (:class:`TextFallback`), and such matches carry
  the value ``text_match``; query patterns without literals cannot fall back and are listed in
  ``Subject.unevaluated`` (an evaluation error of the rule, unless under ``not``).
- ``regex``: ``finditer`` of the ``regex`` package (re-compatible syntax), bounded by
  :data:`REGEX_TIMEOUT_SECONDS` per unit; named groups are the captures, empty matches are
  skipped.
- ``strings``: the same over the folded value of every maximal string expression
  (:func:`mleaudit.audit.rules.strings.fold_strings`); every capture spans the whole expression in the
  source and carries the matched part of the *value* as its text.
- ``all``: every positive child must match in the same subject; the matches come from the
  *primary* child (the first one that defines the rule's ``focus``, else the first positive
  child), with the other children's first matches attached as ``support``. ``not`` children
  drop every positive match that overlaps one of their matches; ``inside`` keeps the primary
  matches that lie within a match of its child; ``terms`` keeps the primary matches that name
  a term of the rule or of the competition policy (``Subject.policy``).
- ``any``: the union of the children's matches.
- ``builtin``: ``CHECKS[name](ctx, **params)``.
"""

from __future__ import annotations

import bisect
import functools
import inspect
import re
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Mapping, Protocol

import regex as _regex
import tree_sitter

from mleaudit.audit.parsing import LANGUAGES, PathologicalTree, get_language, parse, pathological_tree
from mleaudit.audit.rules.match import Capture, Match
from mleaudit.audit.rules.policy import RulePolicy
from mleaudit.audit.rules.context import RunContext
from mleaudit.audit.rules.prefilter import FoldedTexts, Prefilter, fold, regex_prefilter
from mleaudit.audit.rules.registry import RegisteredCheck, load_builtin_checks
from mleaudit.audit.rules.spec import (
    REGEX_FLAGS,
    AllSpec,
    AnySpec,
    BuiltinSpec,
    InsideSpec,
    MatcherSpec,
    NotSpec,
    QuerySpec,
    RegexSpec,
    StringsSpec,
    TermsSpec,
)
from mleaudit.audit.rules.strings import fold_strings


__all__ = [
    "Subject",
    "Matcher",
    "QueryMatcher",
    "RegexMatcher",
    "StringsMatcher",
    "BuiltinMatcher",
    "AllMatcher",
    "AnyMatcher",
    "NotMatcher",
    "InsideFilter",
    "TermsFilter",
    "POLICY_LISTS",
    "compile_matcher",
    "leaf_specs",
    "SUPPORTED_PREDICATES",
    "PathologicalTree",
    "pathological_tree",
    "bounded_finditer",
    "literal_runs",
    "REGEX_TIMEOUT_SECONDS",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class Subject:
    """A text to match: a code unit's text, a log event's text or a file's text.

    ``language`` is a grammar name of :data:`mleaudit.audit.parsing.LANGUAGES` or ``None`` (then query
    matchers find nothing); ``path`` is the host path, for diagnostics only; ``policy`` is the
    competition's audit policy (``terms`` filters read it); ``unevaluated`` collects what could
    not be checked.
    """

    text: str
    language: str | None
    path: str = ""
    policy: RulePolicy | None = None
    #: Filled by matchers with what they could not evaluate on this subject (query patterns
    #: with no literal to search for on a pathological tree); the engine reports each entry as
    #: an evaluation error of the rule, next to whatever the rule did find.
    unevaluated: list[str] = field(default_factory=list, compare=False)
    #: Lower-cased texts shared by the rules of one evaluation (regex prefilters read them).
    folds: FoldedTexts | None = field(default=None, compare=False)

    def folded(self) -> str | None:
        """The text as :meth:`Prefilter.met` reads it (:func:`mleaudit.audit.rules.prefilter.fold`)."""
        return self.folds.get(self.text) if self.folds is not None else fold(self.text)


class Matcher(Protocol):
    """What every compiled matcher provides."""

    #: Names of the captures its matches may carry (template placeholders, ``focus``).
    capture_names: frozenset[str]

    def find(self, subject: Any) -> list[Match]:  # pragma: no cover - protocol
        ...


#: Wall-clock bound, in seconds, on one regex over one unit (all its matches together). A rule's
#: regex that backtracks past it on some text raises ``TimeoutError``, which the engine reports as
#: an evaluation error (a gap of the audit), never as "no match".
REGEX_TIMEOUT_SECONDS = 5.0


def tree_shape(subject: Subject) -> tuple[Any, str | None]:
    """Parse the subject once; return the tree and why it is pathological (``None`` when ordinary)."""
    parsed = parse(subject.text, subject.language)
    return parsed, parsed.pathological()


def bounded_finditer(pattern: Any, text: str, *, timeout: float | None = None) -> Iterator[Any]:
    """``pattern.finditer(text)`` with one wall-clock bound on all its matches together.

    Parameters
    ----------
    pattern : regex.Pattern or re.Pattern
        A pattern of the ``regex`` package gets the remaining time as its ``timeout`` on every
        search, so catastrophic backtracking is cut short inside one search; for an ``re``
        pattern the bound is checked between matches only.
    text : str
    timeout : float, optional
        Seconds for the whole iteration (default :data:`REGEX_TIMEOUT_SECONDS`).

    Yields
    ------
    match objects, as ``finditer`` yields them (an empty match advances one character).

    Raises
    ------
    TimeoutError
        The bound was reached; the matches yielded so far are a prefix of the full result.
    """
    timeout = REGEX_TIMEOUT_SECONDS if timeout is None else timeout
    deadline = time.monotonic() + timeout
    bounded = isinstance(pattern, _regex.Pattern)
    pos = 0
    end = len(text)
    while pos <= end:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError(f"regex ran past its {timeout:g} s bound")
        m = pattern.search(text, pos, timeout=left) if bounded else pattern.search(text, pos)
        if m is None:
            return
        yield m
        pos = m.end() if m.end() > m.start() else m.end() + 1


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
    bare = _QUERY_COMMENT.sub("", source)
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


def _unquote(literal: str) -> str:
    return re.sub(r"\\(.)", lambda m: {"n": "\n", "t": "\t"}.get(m.group(1), m.group(1)), literal)


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
def _text_fallback(source: str) -> TextFallback | None:
    """The text fallback of a query (``None`` when a ``#match?`` regex does not compile as text),
    built once per query source and process."""
    alternatives = []
    structural = 0
    for pattern in _query_patterns(source):
        constraints: list[tuple[str, Any]] = []
        for kind, capture, literals in (m.groups() for m in _QUERY_PREDICATE.finditer(pattern)):
            values = [_unquote(v) for v in _QUERY_LITERAL.findall(literals)]
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


def _text_requirements(query: tree_sitter.Query, source: str,
                       regex_predicates: Mapping[int, tuple["RegexPredicate", ...]]) -> tuple[TextRequirement, ...] | None:
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
                values = tuple(_unquote(v) for v in _QUERY_LITERAL.findall(m.group(4).decode("utf-8")))
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


@dataclass(frozen=True, slots=True, kw_only=True)
class RegexPredicate:
    """A ``#match?``/``#not-match?``/``#any-match?``/``#any-not-match?`` predicate of a query pattern.

    As tree-sitter defines them: ``#match?`` holds when the regex is found (``search``) in the
    text of every node of the capture, ``#any-match?`` in at least one, and the ``not-`` forms
    negate each node's test; a capture with no node (an optional one) passes.
    """

    capture: str
    regex: Any
    negate: bool = False
    any_node: bool = False

    def holds(self, nodes_by_name: Mapping[str, Any], parsed: Any, deadline: float) -> bool:
        nodes = nodes_by_name.get(self.capture) or []
        if not nodes:
            return True
        results = []
        for node in nodes:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"#match? regex ran past its {REGEX_TIMEOUT_SECONDS:g} s bound")
            found = self.regex.search(parsed.node_text(node), timeout=left) is not None
            results.append(found != self.negate)
        return any(results) if self.any_node else all(results)


#: Units at least this long (characters) run every rule's query at once (:class:`_CombinedQueries`):
#: one walk of a large tree instead of one per rule (a 100,000-cell notebook: 1.6 s against 27 s).
COMBINED_QUERY_MIN_CHARS = 200_000


class _CombinedQueries:
    """Every compiled query of a language joined into one, run once per large unit.

    tree-sitter runs the patterns of one query in a single walk of the tree, so a large unit
    is walked once for all rules; each :class:`QueryMatcher` then takes the matches of its own
    patterns (their indices are offset by the patterns of the queries before it). Results are
    kept for the last few units, since the engine runs rule by rule over the same units.
    """

    _KEEP = 4

    def __init__(self) -> None:
        self.sources: dict[str, list[tuple[str, int]]] = {}
        self.queries: dict[str, tuple[int, tree_sitter.Query | None]] = {}
        self.results: dict[tuple[str, int], tuple[Any, dict[int, list]]] = {}

    def register(self, language: str, source: str, patterns: int) -> int:
        entries = self.sources.setdefault(language, [])
        for index, (known, _) in enumerate(entries):
            if known == source:  # a ruleset loaded again registers nothing new
                return index
        entries.append((source, patterns))
        return len(entries) - 1

    def _query(self, language: str) -> tree_sitter.Query | None:
        entries = self.sources.get(language, [])
        built = self.queries.get(language)
        if built is None or built[0] != len(entries):
            try:
                query = tree_sitter.Query(get_language(language), "\n".join(src for src, _ in entries))
            except tree_sitter.QueryError:  # pragma: no cover - each part compiled alone
                query = None
            built = (len(entries), query)
            self.queries[language] = built
            self.results = {k: v for k, v in self.results.items() if k[0] != language}
        return built[1]

    def matches(self, language: str, index: int, parsed: Any) -> list | None:
        """The matches of query ``index`` on ``parsed`` (pattern indices its own), or ``None`` to run it alone."""
        query = self._query(language)
        if query is None:
            return None
        key = (language, id(parsed))
        cached = self.results.get(key)
        if cached is None or cached[0] is not parsed:
            cursor = tree_sitter.QueryCursor(query)
            by_pattern: dict[int, list] = {}
            for pattern, nodes_by_name in cursor.matches(parsed.root):
                by_pattern.setdefault(pattern, []).append(nodes_by_name)
            if cursor.did_exceed_match_limit:
                return None
            while len(self.results) >= self._KEEP:
                self.results.pop(next(iter(self.results)))
            cached = (parsed, by_pattern)
            self.results[key] = cached
        entries = self.sources[language]
        offset = sum(patterns for _, patterns in entries[:index])
        count = entries[index][1]
        by_pattern = cached[1]
        return [(p - offset, found) for p in range(offset, offset + count) for found in by_pattern.get(p, ())]


_COMBINED = _CombinedQueries()


@dataclass(frozen=True, slots=True, kw_only=True)
class QueryMatcher:
    """Tree-sitter queries by language, compiled once, each with the source of its text fallback."""

    queries: Mapping[str, tree_sitter.Query]
    capture_names: frozenset[str] = frozenset()
    #: The query source per language, for its :class:`TextFallback` (built on first use:
    #: :func:`_text_fallback`; only a pathological tree needs one).
    fallbacks: Mapping[str, str] = field(default_factory=dict)
    #: ``#match?``-family predicates by language and pattern index, applied here with a time bound.
    regex_predicates: Mapping[str, Mapping[int, tuple[RegexPredicate, ...]]] = field(default_factory=dict)
    #: Per language, what the text must hold for any pattern to match (:class:`TextRequirement`),
    #: or ``None`` when some pattern has no such requirement (the query always runs).
    requirements: Mapping[str, tuple[TextRequirement, ...] | None] = field(default_factory=dict)
    #: Per language, this query's place among all compiled queries (:data:`_COMBINED`).
    combined: Mapping[str, int] = field(default_factory=dict)

    def could_match(self, language: str, text: str, folded: Callable[[], str | None] | None = None) -> bool:
        """False only when no pattern of the query can match ``text`` (a cheap text test first).

        On a unit large enough for the combined query (which walks its tree once for every
        rule) only the literals are tested: a regex over the whole text would cost more.
        ``folded`` gives the text as the regexes' prefilters read it (computed when absent).
        """
        needs = self.requirements.get(language)
        large = len(text) >= COMBINED_QUERY_MIN_CHARS
        return needs is None or any(need.met(text, regexes=not large, folded=folded) for need in needs)

    def find(self, subject: Subject) -> list[Match]:
        query = self.queries.get(subject.language or "")
        if query is None or not subject.text:
            return []
        if not self.could_match(subject.language or "", subject.text, subject.folded):
            # Every pattern needs a literal or a regex match that the text lacks: running the
            # query on a large tree would only confirm it.
            return []
        parsed, shape = tree_shape(subject)
        if shape is not None:
            source = self.fallbacks.get(subject.language or "")
            fallback = _text_fallback(source) if source is not None else None
            if fallback is None or fallback.structural:
                subject.unevaluated.append(f"query pattern(s) without a literal not run on {shape}")
            if fallback is None:
                return []
            return fallback.find(subject.text, f"text match: {shape}")
        matches = []
        found = None
        if len(subject.text) >= COMBINED_QUERY_MIN_CHARS and subject.language in self.combined:
            found = _COMBINED.matches(subject.language, self.combined[subject.language], parsed)
        if found is None:
            found = tree_sitter.QueryCursor(query).matches(parsed.root)
        predicates = self.regex_predicates.get(subject.language or "", {})
        deadline = time.monotonic() + REGEX_TIMEOUT_SECONDS
        for pattern, nodes_by_name in found:
            if pattern in predicates and not all(p.holds(nodes_by_name, parsed, deadline) for p in predicates[pattern]):
                continue
            captures = {}
            for name, nodes in nodes_by_name.items():
                if not nodes:
                    continue
                node = min(nodes, key=lambda n: (n.start_byte, -n.end_byte))
                captures[name] = Capture(
                    start=parsed.char_offset(node.start_byte),
                    end=parsed.char_offset(node.end_byte),
                    text=parsed.node_text(node),
                )
            if captures:
                matches.append(Match.from_captures(captures))
        return matches


@dataclass(frozen=True, slots=True, kw_only=True)
class RegexMatcher:
    """A compiled regex (``regex`` package, time-bounded), optionally limited to some languages."""

    regex: Any
    languages: frozenset[str] = frozenset()
    capture_names: frozenset[str] = frozenset()
    #: Literals a match must contain (:func:`mleaudit.audit.rules.prefilter.regex_prefilter`).
    prefilter: Prefilter | None = None

    def find(self, subject: Subject) -> list[Match]:
        if self.languages and subject.language not in self.languages:
            return []
        if self.prefilter is not None and not self.prefilter.met(subject.folded()):
            return []  # the text lacks what every match contains: the search would find nothing
        matches = []
        for m in bounded_finditer(self.regex, subject.text):
            if m.end() == m.start():
                continue
            captures = {
                name: Capture(start=m.start(name), end=m.end(name), text=m.group(name))
                for name in self.regex.groupindex
                if m.group(name) is not None
            }
            matches.append(Match(captures=captures, start=m.start(), end=m.end()))
        return matches


#: Units longer than this (characters) are not folded: ``strings`` rules search their quoted
#: literals as text instead (:func:`literal_runs`), which bounds the work on a large file.
MAX_FOLDED_CHARS = 1_000_000

#: Languages whose string expressions :func:`mleaudit.audit.rules.strings.fold_strings` can fold.
FOLDED_LANGUAGES = frozenset({"python", "bash"})


@dataclass(frozen=True, slots=True, kw_only=True)
class StringsMatcher:
    """A compiled regex run over folded string values (``assembled_only``: skip single literals).

    On a syntax tree too deep or too wide to fold (:func:`pathological_tree`) the regex runs over
    the text's string literals instead, adjacent literals joined as ``+`` or implicit
    concatenation joins them (:func:`literal_runs`); those matches carry ``text_match``.
    """

    regex: Any
    assembled_only: bool = False
    capture_names: frozenset[str] = frozenset()
    value_names: frozenset[str] = frozenset({"value"})

    def find(self, subject: Subject) -> list[Match]:
        if subject.language not in FOLDED_LANGUAGES or not subject.text:
            return []
        if len(subject.text) > MAX_FOLDED_CHARS:
            # Folding costs tens of microseconds a string expression: on a unit this large the
            # literals are searched as text (linear), like on a tree too deep to fold.
            return self._find_in_literals(subject.text, f"text match: a unit of {len(subject.text):,} characters, "
                                                        f"over the {MAX_FOLDED_CHARS:,} folded")
        _parsed, shape = tree_shape(subject)
        if shape is not None:
            return self._find_in_literals(subject.text, f"text match: {shape}")
        matches = []
        for folded in fold_strings(subject.text, subject.language):
            if self.assembled_only and not folded.composed:
                continue
            for m in bounded_finditer(self.regex, folded.value):
                if m.end() == m.start():
                    continue
                if self.assembled_only and folded.spelled_by_one_literal(m.start(), m.end()):
                    continue
                captures = {
                    name: Capture(start=folded.start, end=folded.end, text=m.group(name))
                    for name in self.regex.groupindex
                    if m.group(name) is not None
                }
                matches.append(Match(captures=captures, start=folded.start, end=folded.end,
                                     values={"value": folded.value}))
        return matches

    def _find_in_literals(self, text: str, why: str) -> list[Match]:
        matches = []
        for start, end, value, pieces in literal_runs(text):
            if self.assembled_only and pieces < 2:
                continue
            for m in bounded_finditer(self.regex, value):
                if m.end() == m.start():
                    continue
                captures = {
                    name: Capture(start=start, end=end, text=m.group(name))
                    for name in self.regex.groupindex
                    if m.group(name) is not None
                }
                matches.append(Match(captures=captures, start=start, end=end, values={"value": value, "text_match": why}))
                if len(matches) >= MAX_TEXT_FALLBACK_MATCHES:
                    return matches
        return matches


_LITERAL = re.compile(
    r'''(?P<q>"""|\'\'\')(?P<tbody>.*?)(?P=q)|(?P<s>["\'])(?P<body>(?:\\.|(?!(?P=s))[^\\\n])*)(?P=s)''', re.S
)
_JOIN = re.compile(r"\s*\+?\s*")


def literal_runs(text: str) -> Iterator[tuple[int, int, str, int]]:
    """Runs of quoted literals in ``text`` joined by ``+`` or whitespace, found without a syntax tree.

    A bounded, tree-free stand-in for :func:`mleaudit.audit.rules.strings.fold_strings` on trees too
    deep to walk: escapes are decoded as Python decodes them, prefixes and interpolation are
    ignored.

    Yields
    ------
    (start, end, value, pieces)
        Character offsets of the run in ``text``, its joined value and how many literals it has.
    """
    from mleaudit.audit.rules.strings import _unescape_python

    run: list[tuple[int, int, str]] = []
    for m in _LITERAL.finditer(text):
        body = m.group("tbody") if m.group("q") else m.group("body")
        piece = (m.start(), m.end(), _unescape_python(body))
        if run and _JOIN.fullmatch(text, run[-1][1], m.start()):
            run.append(piece)
            continue
        if run:
            yield run[0][0], run[-1][1], "".join(p[2] for p in run), len(run)
        run = [piece]
    if run:
        yield run[0][0], run[-1][1], "".join(p[2] for p in run), len(run)


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


def _pattern_has_capture(query: tree_sitter.Query, pattern: int) -> bool:
    for capture in range(query.capture_count):
        try:
            # "" (one), "?", "*" or "+"; tree-sitter 0.26 raises for a capture the pattern lacks.
            quantifier = query.capture_quantifier(pattern, capture)
        except SystemError:
            continue
        if quantifier not in (None, 0):
            return True
    return False


#: Predicates py-tree-sitter evaluates; any other ``#name?`` is silently ignored by it, which
#: would turn a filter into a no-op, so the loader refuses it.
SUPPORTED_PREDICATES = frozenset(
    {"eq?", "not-eq?", "any-eq?", "any-not-eq?", "match?", "not-match?", "any-match?", "any-not-match?",
     "any-of?", "set!", "is?", "is-not?"}
)
_QUERY_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
_QUERY_COMMENT = re.compile(r";[^\n]*")
_PREDICATE = re.compile(r"#([A-Za-z][\w-]*[?!])")


def _unsupported_predicates(source: str) -> list[str]:
    bare = _QUERY_COMMENT.sub("", _QUERY_STRING.sub('""', source))
    return sorted({f"#{name}" for name in _PREDICATE.findall(bare) if name not in SUPPORTED_PREDICATES})


_REGEX_PREDICATE = re.compile(rb'\(#(any-)?(not-)?match\?\s+@([\w.-]+)\s+"((?:[^"\\]|\\.)*)"\s*\)')


def _backtracks(pattern: str) -> bool:
    """Whether a regex may backtrack badly: a repetition inside a repetition, or a back-reference.

    Regexes without either (alternations of literals, anchors, character classes, single
    repetitions: every shipped rule's) run in about linear time in ``re``. Unparseable ones
    count as risky.
    """
    try:
        import re._parser as sre_parse  # the parser ``re`` itself uses (Python 3.11+)
    except ImportError:  # pragma: no cover - Python 3.10 and older
        import sre_parse  # type: ignore[no-redef]
    try:
        tree = sre_parse.parse(pattern)
    except Exception:  # noqa: BLE001 - any parse failure: treat as risky, evaluate with a bound
        return True
    repeats = {sre_parse.MAX_REPEAT, sre_parse.MIN_REPEAT, getattr(sre_parse, "POSSESSIVE_REPEAT", None)}

    def walk(items, inside_repeat: bool) -> bool:
        for op, arg in items:
            if op is sre_parse.GROUPREF or op is getattr(sre_parse, "GROUPREF_EXISTS", None):
                return True
            if op in repeats:
                low, high, body = arg
                possessive = op is getattr(sre_parse, "POSSESSIVE_REPEAT", object())
                if high > 1 and inside_repeat and not possessive:
                    return True
                # A possessive repetition never gives back what it took: no backtracking across it.
                if walk(body, (inside_repeat or high > 1) and not possessive):
                    return True
            elif op is sre_parse.SUBPATTERN:
                if walk(arg[-1], inside_repeat):
                    return True
            elif op is sre_parse.BRANCH:
                # Alternatives under a repetition can split one text many ways ((a|aa)+).
                if inside_repeat or any(walk(branch, inside_repeat) for branch in arg[1]):
                    return True
            elif op in (sre_parse.ASSERT, sre_parse.ASSERT_NOT):
                if walk(arg[1], inside_repeat):
                    return True
        return False

    return walk(tree, False)


def _own_regex_predicates(query: tree_sitter.Query, source: str
                          ) -> tuple[str, dict[int, tuple[RegexPredicate, ...]], dict[int, tuple[RegexPredicate, ...]]]:
    """Take the ``#match?`` predicates that may backtrack out of a query, to be evaluated with a time bound.

    tree-sitter evaluates these predicates with Python's ``re``, which has no time bound: a
    rule's regex that backtracks (:func:`_backtracks`) would hang the audit. Each such
    predicate is blanked out of the source (same length, so every pattern keeps its byte range
    and index) and returned, by pattern index, for :class:`QueryMatcher` to apply with the
    ``regex`` package; the others stay with tree-sitter, which filters on them in C.

    Returns
    -------
    (str, dict, dict)
        The source, the predicates taken out and every regex predicate, by pattern index.
    """
    data = bytearray(source.encode("utf-8"))
    owned: dict[int, tuple[RegexPredicate, ...]] = {}
    every: dict[int, tuple[RegexPredicate, ...]] = {}
    for index in range(query.pattern_count):
        start, end = query.start_byte_for_pattern(index), query.end_byte_for_pattern(index)
        taken, seen = [], []
        for m in _REGEX_PREDICATE.finditer(bytes(data), start, end):
            body = _unquote(m.group(4).decode("utf-8"))
            predicate = RegexPredicate(capture=m.group(3).decode("utf-8"), regex=_regex.compile(body),
                                       negate=m.group(2) is not None, any_node=m.group(1) is not None)
            seen.append(predicate)
            if _backtracks(body):
                taken.append(predicate)
                data[m.start():m.end()] = b" " * (m.end() - m.start())
        if taken:
            owned[index] = tuple(taken)
        if seen:
            every[index] = tuple(seen)
    return data.decode("utf-8"), owned, every


def _compile_query(spec: QuerySpec, problems: list[str]) -> QueryMatcher | None:
    compiled: dict[str, tree_sitter.Query] = {}
    fallbacks: dict[str, str] = {}
    predicates: dict[str, dict[int, tuple[RegexPredicate, ...]]] = {}
    requirements: dict[str, tuple[TextRequirement, ...] | None] = {}
    combined: dict[str, int] = {}
    names: set[str] = set()
    for language, source in spec.queries:
        if language not in LANGUAGES:
            problems.append(f"query for unknown language {language!r} (known: {', '.join(sorted(LANGUAGES))})")
            continue
        unsupported = _unsupported_predicates(source)
        if unsupported:
            problems.append(
                f"{language} query uses predicate(s) {', '.join(unsupported)}, which tree-sitter ignores "
                f"(supported: {', '.join('#' + p for p in sorted(SUPPORTED_PREDICATES))})"
            )
            continue
        try:
            query = tree_sitter.Query(get_language(language), source)
        except tree_sitter.QueryError as exc:
            problems.append(f"{language} query does not compile: {exc}")
            continue
        if query.capture_count == 0:
            problems.append(f"{language} query has no @capture, so a match has no location")
            continue
        empty = [i for i in range(query.pattern_count) if not _pattern_has_capture(query, i)]
        if empty:
            problems.append(
                f"{language} query pattern(s) {empty} have no @capture "
                "(is a predicate outside its pattern's parentheses?)"
            )
            continue
        try:
            stripped, regex_predicates, all_regex_predicates = _own_regex_predicates(query, source)
            if stripped != source:  # compiling is costly (~14 ms a query): only when a predicate was taken out
                query = tree_sitter.Query(get_language(language), stripped)
        except (_regex.error, ValueError, OverflowError) as exc:
            problems.append(f"{language} query has a #match? regex that does not compile: {exc}")
            continue
        except tree_sitter.QueryError as exc:  # pragma: no cover - the source compiled with the predicates
            problems.append(f"{language} query does not compile without its regex predicates: {exc}")
            continue
        compiled[language] = query
        predicates[language] = regex_predicates
        combined[language] = _COMBINED.register(language, stripped, query.pattern_count)
        requirements[language] = _text_requirements(query, source, all_regex_predicates)
        fallbacks[language] = source
        names.update(query.capture_name(i) for i in range(query.capture_count))
    if len(compiled) != len(spec.queries):
        return None
    return QueryMatcher(queries=compiled, capture_names=frozenset(names), fallbacks=fallbacks,
                        regex_predicates=predicates, requirements=requirements, combined=combined)


def _compile_regex(spec: RegexSpec, problems: list[str]) -> RegexMatcher | None:
    flags = 0
    ok = True
    for name in spec.flags:
        if name not in REGEX_FLAGS:
            problems.append(f"unknown regex flag {name!r} (known: {', '.join(REGEX_FLAGS)})")
            ok = False
            continue
        flags |= getattr(_regex, REGEX_FLAGS[name])
    unknown = [lang for lang in spec.languages if lang not in LANGUAGES]
    if unknown:
        problems.append(f"regex limited to unknown language(s) {unknown} (known: {', '.join(sorted(LANGUAGES))})")
        ok = False
    try:
        # The `regex` package (its re-compatible V0 syntax) can bound a search by time.
        regex = _regex.compile(spec.pattern, flags | _regex.VERSION0)
    except (_regex.error, ValueError, OverflowError) as exc:
        problems.append(f"regex does not compile: {exc}")
        return None
    if not ok:
        return None
    return RegexMatcher(regex=regex, languages=frozenset(spec.languages), capture_names=frozenset(regex.groupindex),
                        prefilter=regex_prefilter(spec.pattern, verbose=bool(regex.flags & _regex.VERBOSE)))


def _compile_strings(spec: StringsSpec, problems: list[str]) -> StringsMatcher | None:
    regex = _compile_regex(RegexSpec(pattern=spec.pattern, flags=spec.flags), problems)
    if regex is None:
        return None
    return StringsMatcher(regex=regex.regex, assembled_only=spec.assembled_only, capture_names=regex.capture_names)


def _compile_builtin(spec: BuiltinSpec, problems: list[str]) -> BuiltinMatcher | None:
    checks = load_builtin_checks()
    registered = checks.get(spec.name)
    if registered is None:
        problems.append(f"unknown built-in check {spec.name!r} (known: {', '.join(sorted(checks)) or 'none'})")
        return None
    try:
        inspect.signature(registered.fn).bind(None, **dict(spec.params))
    except TypeError as exc:
        problems.append(f"bad params for built-in check {spec.name!r}: {exc}")
        return None
    return BuiltinMatcher(check=registered, params=dict(spec.params))


def compile_matcher(
    spec: MatcherSpec, *, focus: str | None = None, problems: list[str], _inside_all: bool = False
) -> Matcher | None:
    """Compile a matcher spec tree.

    Parameters
    ----------
    spec : MatcherSpec
        The tree from :class:`~mleaudit.audit.rules.spec.RuleSpec`.
    focus : str, optional
        The rule's focus capture; an ``all`` takes its matches from the first child that
        defines it.
    problems : list of str
        Receives one message per problem found (the tree is compiled as far as possible).

    Returns
    -------
    Matcher or None
        ``None`` when any problem was found in this subtree.
    """
    before = len(problems)
    if isinstance(spec, QuerySpec):
        return _compile_query(spec, problems)
    if isinstance(spec, RegexSpec):
        return _compile_regex(spec, problems)
    if isinstance(spec, StringsSpec):
        return _compile_strings(spec, problems)
    if isinstance(spec, BuiltinSpec):
        return _compile_builtin(spec, problems)
    if isinstance(spec, (InsideSpec, TermsSpec)):
        kind = "inside" if isinstance(spec, InsideSpec) else "terms"
        if not _inside_all:
            problems.append(f"`{kind}` is only valid as a child of `all`")
            return None
        if isinstance(spec, TermsSpec):
            if spec.policy is not None and spec.policy not in POLICY_LISTS:
                problems.append(f"`terms` names policy list {spec.policy!r}; known: {', '.join(POLICY_LISTS)}")
                return None
            if spec.policy is None and not spec.values:
                problems.append("`terms` needs `values`, a `policy` list, or both")
                return None
            return TermsFilter(capture=spec.capture, policy=spec.policy, values=spec.values)
        child = compile_matcher(spec.child, focus=None, problems=problems)
        return None if child is None else InsideFilter(child=child)
    if isinstance(spec, NotSpec):
        if not _inside_all:
            problems.append("`not` is only valid as a child of `all`")
            return None
        child = compile_matcher(spec.child, focus=None, problems=problems)
        return None if child is None else NotMatcher(child=child)
    if isinstance(spec, AnySpec):
        children = [compile_matcher(c, focus=focus, problems=problems) for c in spec.children]
        if len(problems) > before or not children:
            if not children:
                problems.append("`any` needs at least one child")
            return None
        names = frozenset().union(*(c.capture_names for c in children))
        values = frozenset().union(*(getattr(c, "value_names", frozenset()) for c in children))
        return AnyMatcher(children=tuple(children), capture_names=names, value_names=values)
    if isinstance(spec, AllSpec):
        compiled = [compile_matcher(c, focus=focus, problems=problems, _inside_all=True) for c in spec.children]
        filters = tuple(c for c in compiled if isinstance(c, (InsideFilter, TermsFilter)))
        positives = tuple(c for c in compiled
                          if c is not None and not isinstance(c, (NotMatcher, InsideFilter, TermsFilter)))
        negatives = tuple(c for c in compiled if isinstance(c, NotMatcher))
        if not any(not isinstance(c, (NotSpec, InsideSpec, TermsSpec)) for c in spec.children):
            problems.append("`all` needs at least one child that is not `not`, `inside` or `terms`")
        if len(problems) > before:
            return None
        primary = next((i for i, c in enumerate(positives) if focus and focus in c.capture_names), 0)
        for f in filters:
            if isinstance(f, TermsFilter) and f.capture is not None and f.capture not in positives[primary].capture_names:
                names = ", ".join(sorted(positives[primary].capture_names)) or "none"
                problems.append(f"`terms` capture {f.capture!r} is not a capture of the primary child (captures: {names})")
                return None
        names = frozenset().union(*(c.capture_names for c in positives))
        values = frozenset().union(*(getattr(c, "value_names", frozenset()) for c in (*positives, *filters)))
        return AllMatcher(positives=positives, negatives=negatives, filters=filters, primary=primary,
                          capture_names=names, value_names=values)
    problems.append(f"unknown matcher spec {type(spec).__name__}")
    return None


def leaf_specs(spec: MatcherSpec) -> list[MatcherSpec]:
    """Every leaf (query, regex, strings, builtin, terms) of a spec tree, including those under ``not``/``inside``."""
    if isinstance(spec, (AllSpec, AnySpec)):
        return [leaf for child in spec.children for leaf in leaf_specs(child)]
    if isinstance(spec, (NotSpec, InsideSpec)):
        return leaf_specs(spec.child)
    return [spec]
