"""Predicates of tree-sitter queries: which ones py-tree-sitter evaluates, and the ``#match?`` family applied here with a time bound.

A ``#match?``-family predicate whose regex may backtrack badly is taken out of the query and
applied by :class:`RegexPredicate` with the ``regex`` package and a deadline
(:func:`own_regex_predicates`); any predicate py-tree-sitter would silently ignore is refused
(:func:`unsupported_predicates`).
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from typing import Any, Mapping

import regex as _regex
import tree_sitter

from mleaudit.audit.rules.matchers.base import REGEX_TIMEOUT_SECONDS


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



#: Predicates py-tree-sitter evaluates; any other ``#name?`` is silently ignored by it, which
#: would turn a filter into a no-op, so the loader refuses it.
SUPPORTED_PREDICATES = frozenset(
    {"eq?", "not-eq?", "any-eq?", "any-not-eq?", "match?", "not-match?", "any-match?", "any-not-match?",
     "any-of?", "set!", "is?", "is-not?"}
)
_QUERY_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
QUERY_COMMENT = re.compile(r";[^\n]*")
_PREDICATE = re.compile(r"#([A-Za-z][\w-]*[?!])")


def unsupported_predicates(source: str) -> list[str]:
    bare = QUERY_COMMENT.sub("", _QUERY_STRING.sub('""', source))
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


def own_regex_predicates(query: tree_sitter.Query, source: str
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
            body = unquote(m.group(4).decode("utf-8"))
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



def unquote(literal: str) -> str:
    return re.sub(r"\\(.)", lambda m: {"n": "\n", "t": "\t"}.get(m.group(1), m.group(1)), literal)
