"""The ``query`` matcher: tree-sitter queries by language, compiled once, and their compilation.

Queries of every rule are also joined per language (:class:`_CombinedQueries`), so that a
unit's tree is walked once for all rules; on a pathological tree a query falls back to text
(:mod:`~mleaudit.audit.rules.matchers.fallback`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

import regex as _regex
import tree_sitter

from mleaudit.audit.parsing import LANGUAGES, get_language
from mleaudit.audit.rules.match import Capture, Match
from mleaudit.audit.rules.matchers.base import REGEX_TIMEOUT_SECONDS, Subject, tree_shape
from mleaudit.audit.rules.matchers.fallback import TextRequirement, text_fallback, text_requirements
from mleaudit.audit.rules.matchers.predicates import (
    SUPPORTED_PREDICATES,
    RegexPredicate,
    own_regex_predicates,
    unsupported_predicates,
)
from mleaudit.audit.rules.spec import QuerySpec
from mleaudit.audit.textcache import UNIT_ENTRIES, TextCache

#: Units at least this long (characters) always run every rule's query at once (:class:`_CombinedQueries`,
#: rebuilt for queries compiled since; a 100,000-cell notebook: 1.6 s against 27 s), their matches
#: grouped by pattern, and test only the literals of a query's text requirements.
COMBINED_QUERY_MIN_CHARS = 200_000
#: Smaller units run each query alone until the queries run alone have walked this many
#: characters of text: compiling every rule's queries into one costs about as much as that (0.7 s),
#: which a short run would not win back.
COMBINED_AFTER_CHARS = 4_000_000


#: A combined query: how many queries it joins, the query, the offset of each one's patterns and
#: the query of each pattern.
_Built = tuple[int, "tree_sitter.Query | None", tuple[int, ...], list[int]]


class _CombinedQueries:
    """Every compiled query of a language joined into one, run once per parsed unit.

    tree-sitter runs the patterns of one query in a single walk of the tree, so a unit is
    walked once for all rules; each :class:`QueryMatcher` then takes the matches of its own
    patterns (their indices are offset by the patterns of the queries before it). A pattern's
    matches do not depend on the other patterns beside it, and tree-sitter yields the matches
    of the patterns of one query in the same relative order alone or combined, so the
    matches kept in the combined order are those of the query run alone
    (``tests/audit/rules/test_combined_queries.py`` checks it on every shared unit). Results
    are kept per parsed tree for every unit of a run, since the engine runs rule by rule over
    the same units.
    """

    def __init__(self) -> None:
        self.sources: dict[str, list[tuple[str, int]]] = {}
        self.queries: dict[str, _Built] = {}
        # Keyed by the parsed tree's identity, which the entry keeps alive (so the id is not reused).
        self.results = TextCache(max_chars=16 * 1024 * 1024, max_entries=UNIT_ENTRIES)
        #: Characters walked by queries run alone since the last build (:data:`COMBINED_AFTER_CHARS`).
        self.walked = 0

    def register(self, language: str, source: str, patterns: int) -> int:
        entries = self.sources.setdefault(language, [])
        for index, (known, _) in enumerate(entries):
            if known == source:  # a ruleset loaded again registers nothing new
                return index
        entries.append((source, patterns))
        return len(entries) - 1

    def _query(self, language: str, index: int, fresh: bool) -> _Built:
        """The combined query of ``language`` and its pattern offsets.

        Rebuilt when ``fresh`` and queries were registered since, or when query ``index`` is
        not in it and the registered queries have doubled since the last build (compiling all
        queries costs about as much as a ruleset load, so queries compiled one by one, as
        tests do, do not rebuild it each time).
        """
        entries = self.sources.get(language, [])
        built = self.queries.get(language)
        stale = built is None or (built[0] != len(entries) and (fresh or (index >= built[0] and len(entries) >= 2 * built[0])))
        if stale:
            try:
                query = tree_sitter.Query(get_language(language), "\n".join(src for src, _ in entries))
            except tree_sitter.QueryError:  # pragma: no cover - each part compiled alone
                query = None
            offsets: list[int] = []
            owner: list[int] = []  # the query of each pattern
            for number, (_, patterns) in enumerate(entries):
                offsets.append(len(owner))
                owner.extend([number] * patterns)
            built = (len(entries), query, tuple(offsets), owner)
            self.queries[language] = built
            self.results.clear()
            self.walked = 0
        return built  # type: ignore[return-value]

    def _all(self, language: str, built: _Built, parsed: Any) -> dict[int, list] | None:
        """The combined query's matches on ``parsed`` by query (pattern indices the query's own,
        in tree-sitter's order), computed once per tree; ``None`` past the match limit."""
        key = (language, built[0], id(parsed))

        def run() -> tuple[Any, dict[int, list] | None]:
            cursor = tree_sitter.QueryCursor(built[1])
            found = cursor.matches(parsed.root)
            if cursor.did_exceed_match_limit:
                return parsed, None
            offsets, owner = built[2], built[3]
            by_query: dict[int, list] = {}
            for pattern, nodes_by_name in found:
                index = owner[pattern]
                by_query.setdefault(index, []).append((pattern - offsets[index], nodes_by_name))
            return parsed, by_query

        kept, by_query = self.results.get_or_compute(key, len(parsed.text), run)
        if kept is not parsed:  # pragma: no cover - the entry keeps its tree alive
            kept, by_query = run()
        return by_query

    def ready(self, language: str, index: int) -> bool:
        """Whether query ``index`` of ``language`` runs combined on a small unit: built with it, or worth building."""
        known = self.queries.get(language)
        return (known is not None and index < known[0]) or self.walked >= COMBINED_AFTER_CHARS

    def matches(self, language: str, index: int, parsed: Any, *, grouped: bool = False) -> list | None:
        """The matches of query ``index`` on ``parsed`` (pattern indices its own), or ``None`` to run it alone.

        In tree-sitter's order, or grouped by pattern when ``grouped`` (the order large units
        have always had). The list is shared by every call for this tree: read it, do not change it.
        """
        if not grouped and not self.ready(language, index):
            return None
        built = self._query(language, index, fresh=grouped)
        if built[1] is None or index >= built[0]:
            return None
        by_query = self._all(language, built, parsed)
        if by_query is None:
            return None
        found = by_query.get(index, [])
        if grouped:
            return sorted(found, key=lambda item: item[0])  # stable: each pattern's matches keep their order
        return found


_COMBINED = _CombinedQueries()


@dataclass(frozen=True, slots=True, kw_only=True)
class QueryMatcher:
    """Tree-sitter queries by language, compiled once, each with the source of its text fallback."""

    queries: Mapping[str, tree_sitter.Query]
    capture_names: frozenset[str] = frozenset()
    #: The query source per language, for its :class:`TextFallback` (built on first use:
    #: :func:`text_fallback`; only a pathological tree needs one).
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
        large = len(subject.text) >= COMBINED_QUERY_MIN_CHARS
        found = None
        if not large and subject.language in self.combined and _COMBINED.ready(subject.language, self.combined[subject.language]):
            # The combined query walks each unit's tree once for all rules: when it left this
            # query no match on an ordinary tree, there is nothing to find, whatever the text
            # test below would say (its regexes cost more than the walk).
            parsed, shape = tree_shape(subject)
            if shape is None:
                found = _COMBINED.matches(subject.language, self.combined[subject.language], parsed)
                if found is not None and not found:
                    return []
        if not self.could_match(subject.language or "", subject.text, subject.folded):
            # Every pattern needs a literal or a regex match that the text lacks: running the
            # query on a large tree would only confirm it.
            return []
        parsed, shape = tree_shape(subject)
        if shape is not None:
            source = self.fallbacks.get(subject.language or "")
            fallback = text_fallback(source) if source is not None else None
            if fallback is None or fallback.structural:
                subject.unevaluated.append(f"query pattern(s) without a literal not run on {shape}")
            if fallback is None:
                return []
            return fallback.find(subject.text, f"text match: {shape}")
        matches = []
        if found is None and subject.language in self.combined:
            found = _COMBINED.matches(subject.language, self.combined[subject.language], parsed, grouped=large)
        if found is None:
            found = tree_sitter.QueryCursor(query).matches(parsed.root)
            _COMBINED.walked += len(subject.text)
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



#: Queries compiled in this process, by (language, source): rules share queries (the comment
#: filters of most rules are one query), and a compiled query is never changed, only run.
_BY_SOURCE: dict[tuple[str, str], Any] = {}
_MAX_BY_SOURCE = 4096


def _compile_one(language: str, source: str) -> Any:
    """``(query, stripped source, regex predicates, text requirements, capture names)``, or the problem."""
    unsupported = unsupported_predicates(source)
    if unsupported:
        return (f"{language} query uses predicate(s) {', '.join(unsupported)}, which tree-sitter ignores "
                f"(supported: {', '.join('#' + p for p in sorted(SUPPORTED_PREDICATES))})")
    try:
        query = tree_sitter.Query(get_language(language), source)
    except tree_sitter.QueryError as exc:
        return f"{language} query does not compile: {exc}"
    if query.capture_count == 0:
        return f"{language} query has no @capture, so a match has no location"
    empty = [i for i in range(query.pattern_count) if not _pattern_has_capture(query, i)]
    if empty:
        return f"{language} query pattern(s) {empty} have no @capture (is a predicate outside its pattern's parentheses?)"
    try:
        stripped, regex_predicates, all_regex_predicates = own_regex_predicates(query, source)
        if stripped != source:  # compiling is costly (~14 ms a query): only when a predicate was taken out
            query = tree_sitter.Query(get_language(language), stripped)
    except (_regex.error, ValueError, OverflowError) as exc:
        return f"{language} query has a #match? regex that does not compile: {exc}"
    except tree_sitter.QueryError as exc:  # pragma: no cover - the source compiled with the predicates
        return f"{language} query does not compile without its regex predicates: {exc}"
    names = frozenset(query.capture_name(i) for i in range(query.capture_count))
    return query, stripped, regex_predicates, text_requirements(query, source, all_regex_predicates), names


def compile_query(spec: QuerySpec, problems: list[str]) -> QueryMatcher | None:
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
        key = (language, source)
        done = _BY_SOURCE.get(key)
        if done is None:
            done = _compile_one(language, source)
            if len(_BY_SOURCE) >= _MAX_BY_SOURCE:
                _BY_SOURCE.pop(next(iter(_BY_SOURCE)))
            _BY_SOURCE[key] = done
        if isinstance(done, str):
            problems.append(done)
            continue
        query, stripped, regex_predicates, needs, capture_names = done
        compiled[language] = query
        predicates[language] = regex_predicates
        combined[language] = _COMBINED.register(language, stripped, query.pattern_count)
        requirements[language] = needs
        fallbacks[language] = source
        names.update(capture_names)
    if len(compiled) != len(spec.queries):
        return None
    return QueryMatcher(queries=compiled, capture_names=frozenset(names), fallbacks=fallbacks,
                        regex_predicates=predicates, requirements=requirements, combined=combined)
