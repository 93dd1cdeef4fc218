"""Literal prefilters: what a text must contain for a rule's regex to match anywhere in it.

Most texts of a run match none of the rules' regexes, and a regex search over a long log costs
far more than a substring test. :func:`regex_prefilter` derives from a pattern the literals a
match must contain — an AND of ORs, e.g. ``("any_medal", "gold_medal") AND ("score",)`` — so a
text that lacks them is skipped without running the regex. The derivation follows the idea of
RE2's prefilter (Cox, "Regular Expression Matching with a Trigram Index", 2012): exact string
sets through concatenation and alternation, then a clause for each run of exact strings.

A prefilter may only ever be weaker than its regex: whenever the regex matches a text,
:meth:`Prefilter.met` holds on it. That is kept by construction:

- literals are compared lower-cased on both sides (case-sensitive or not, a match implies the
  lower-cased literal is in the lower-cased text), and only ASCII literals are used, whose
  lower-casing does not depend on context;
- a text holding a character that Unicode case folding maps onto ASCII letters (``K`` KELVIN
  SIGN, ``ſ`` LONG S, ``ß``, ``İ``, ligatures — :data:`UNFOLDABLE`) has no folded form
  (:func:`fold` returns ``None``) and is always searched;
- whatever the analysis does not understand (an opcode it does not know, an empty alternative,
  a repeat that may be absent, a class of more than a few characters) requires nothing;
- patterns the ``regex`` package reads differently from :mod:`re`'s parser (fuzzy counts
  ``{e<=1}``, POSIX classes ``[[:alpha:]]``, raw ``\x1c``-``\x1f`` that verbose mode skips) or
  that :mod:`re` cannot parse get no prefilter.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from itertools import product
from typing import Any

try:  # the parser behind ``re.compile``; its module name since Python 3.11
    from re import _constants as _op
    from re import _parser as _sre_parse
except ImportError:  # pragma: no cover - an interpreter without it: no prefilters, same results
    _op = _sre_parse = None

__all__ = ["Prefilter", "FoldedTexts", "regex_prefilter", "fold", "UNFOLDABLE"]

#: Non-ASCII characters whose lower, upper, title or folded case holds an ASCII character
#: (Unicode 14; ``tests/audit/rules/test_prefilter.py`` recomputes the list): a case-blind regex
#: may match them against ASCII letters of a pattern, so a text holding one is always searched.
UNFOLDABLE = ("\u00df\u0130\u0131\u0149\u017f\u01f0\u1e96\u1e97\u1e98\u1e99\u1e9a\u1e9e\u212a"
              "\ufb00\ufb01\ufb02\ufb03\ufb04\ufb05\ufb06")
_UNFOLDABLE = re.compile("[" + UNFOLDABLE + "]")
#: Largest exact string set carried through concatenation and alternation.
_MAX_EXACT = 32
#: Largest character class read as a set of literals (``[ab]`` is, ``[a-z]`` is not).
_MAX_CLASS = 8
#: Shortest literal worth a substring test: a clause with a shorter one is met by almost any text.
_MIN_LITERAL = 3
#: Most literals in one clause, and most clauses kept for one pattern (the most selective ones).
_MAX_CLAUSE = 48
_MAX_CLAUSES = 4
#: ``{`` that does not open a counted repeat (``regex`` reads ``{e<=1}`` as a fuzzy count, ``re``
#: as literal text), POSIX classes, which ``re`` reads as a nested set, and the ASCII separators
#: ``\x1c``-``\x1f``, which ``regex`` skips as blanks in verbose mode and ``re`` reads as text.
_FOREIGN_SYNTAX = re.compile(r"\{(?!\d*(?:,\d*)?\})|\[:\^?\w+:\]|[\x1c-\x1f]")
#: An escape (``\{`` is a literal brace to both) or what :data:`_FOREIGN_SYNTAX` looks for.
_ESCAPE_OR_FOREIGN = re.compile(r"\\[^\x1c-\x1f]|" + _FOREIGN_SYNTAX.pattern, re.S)


def _foreign(pattern: str) -> bool:
    """True when ``pattern`` holds syntax :mod:`re` and ``regex`` read differently, escapes aside."""
    return any(not m.group().startswith("\\") for m in _ESCAPE_OR_FOREIGN.finditer(pattern))


def fold(text: str) -> str | None:
    """``text`` lower-cased for :meth:`Prefilter.met`, or ``None`` when it cannot be prefiltered.

    Parameters
    ----------
    text : str

    Returns
    -------
    str or None
        ``None`` when ``text`` holds a character of :data:`UNFOLDABLE`.
    """
    if not text.isascii() and _UNFOLDABLE.search(text):
        return None
    return text.lower()


@dataclass(frozen=True, slots=True)
class Prefilter:
    """Literals a regex match must contain: every clause must have one of its literals.

    Attributes
    ----------
    clauses : tuple of tuple of str
        Lower-cased ASCII literals, each at least 3 characters; never empty.
    """

    clauses: tuple[tuple[str, ...], ...]

    def met(self, folded: str | None) -> bool:
        """True when ``folded`` (from :func:`fold`) may hold a match; ``None`` always may."""
        if folded is None:
            return True
        return all(any(literal in folded for literal in clause) for clause in self.clauses)


@dataclass(frozen=True, slots=True)
class _Info:
    #: Every string the node can match (lower-cased), or None when it is not a small finite set.
    exact: frozenset[str] | None
    #: Clauses (sets of literals, one of which must appear) the node's match implies besides.
    clauses: tuple[frozenset[str], ...] = ()


_EMPTY = _Info(frozenset({""}))
_ANYTHING = _Info(None)


def _as_clauses(info: _Info) -> list[frozenset[str]]:
    clauses = list(info.clauses)
    if info.exact is not None and "" not in info.exact:
        clauses.append(info.exact)
    return clauses


def _selectivity(clause: frozenset[str]) -> tuple[int, int]:
    return (min(len(s) for s in clause), -len(clause))


def _sequence(items: Any) -> _Info:
    run = frozenset({""})
    clauses: list[frozenset[str]] = []
    broken = False
    for item in items:
        info = _node(*item)
        clauses.extend(info.clauses)
        if info.exact is not None and len(run) * len(info.exact) <= _MAX_EXACT:
            run = frozenset(a + b for a, b in product(run, info.exact))
            continue
        # The run of exact strings ends here: what it matched is one clause.
        broken = True
        if "" not in run:
            clauses.append(run)
        run = info.exact if info.exact is not None else frozenset({""})
    if not broken:
        return _Info(run, tuple(clauses))
    if "" not in run:
        clauses.append(run)
    return _Info(None, tuple(clauses))


def _branch(alternatives: list[Any]) -> _Info:
    infos = [_sequence(alt) for alt in alternatives]
    if all(i.exact is not None for i in infos):
        union = frozenset().union(*(i.exact for i in infos))  # type: ignore[arg-type]
        if len(union) <= _MAX_EXACT:
            return _Info(union)
    # One of the alternatives matched: the union of one clause from each is implied.
    chosen: set[str] = set()
    for info in infos:
        options = _as_clauses(info)
        if not options:
            return _ANYTHING
        chosen |= max(options, key=_selectivity)
    return _Info(None, (frozenset(chosen),))


def _charset(items: list[tuple[Any, Any]]) -> _Info:
    chars: set[str] = set()
    for op, arg in items:
        if op is _op.LITERAL and arg < 128:
            chars.add(chr(arg).lower())
        elif op is _op.RANGE and arg[1] < 128 and arg[1] - arg[0] < _MAX_CLASS:
            chars.update(chr(c).lower() for c in range(arg[0], arg[1] + 1))
        else:
            return _ANYTHING  # a negation, a category, a non-ASCII or a wide range
    return _Info(frozenset(chars)) if 0 < len(chars) <= _MAX_CLASS else _ANYTHING


def _node(op: Any, arg: Any) -> _Info:
    if op is _op.LITERAL:
        return _Info(frozenset({chr(arg).lower()})) if arg < 128 else _ANYTHING
    if op is _op.IN:
        return _charset(arg)
    if op is _op.SUBPATTERN:
        return _sequence(arg[-1])
    if op is getattr(_op, "ATOMIC_GROUP", None):
        return _sequence(arg)
    if op is _op.BRANCH:
        return _branch(arg[1])
    if op in (_op.MAX_REPEAT, _op.MIN_REPEAT) or op is getattr(_op, "POSSESSIVE_REPEAT", None):
        low, high, item = arg
        inner = _sequence(item)
        if low == 0:
            return _ANYTHING
        if low == high == 1:
            return inner
        if low == high and inner.exact is not None and len(inner.exact) ** low <= _MAX_EXACT:
            return _Info(frozenset("".join(p) for p in product(inner.exact, repeat=low)), inner.clauses)
        return _Info(None, tuple(_as_clauses(inner)))
    if op is _op.ASSERT:
        # A lookaround that holds finds its text in the subject too (ahead of or behind the match).
        return _Info(frozenset({""}), tuple(_as_clauses(_sequence(arg[1]))))
    if op in (_op.AT, _op.ASSERT_NOT):
        return _EMPTY
    return _ANYTHING  # any character, categories, back references, conditionals, unknown opcodes


def regex_prefilter(pattern: str, *, verbose: bool = False) -> Prefilter | None:
    """The literals a match of ``pattern`` must contain, or ``None`` when it implies none.

    Parameters
    ----------
    pattern : str
        A regex in :mod:`re`-compatible syntax (the ``regex`` package's VERSION0), any flags
        inline; case-blindness does not matter (literals are compared lower-cased).
    verbose : bool
        The pattern is compiled with the VERBOSE flag (whitespace and comments ignored).

    Returns
    -------
    Prefilter or None
        At most four clauses, each of literals of at least three characters; ``None`` when
        no such clause is implied, when the pattern uses syntax :mod:`re` reads differently
        from the ``regex`` package, or when :mod:`re` cannot parse it.
    """
    if _sre_parse is None or _foreign(pattern):
        return None
    try:
        parsed = _sre_parse.parse(pattern, re.VERBOSE if verbose else 0)
    except (re.error, OverflowError, RecursionError, ValueError):
        return None
    try:
        info = _sequence(parsed)
    except RecursionError:  # pragma: no cover - nesting deeper than the parser allows
        return None
    clauses = {c for c in _as_clauses(info)
               if len(c) <= _MAX_CLAUSE and all(len(s) >= _MIN_LITERAL and s.isascii() for s in c)}
    if not clauses:
        return None
    kept = sorted(clauses, key=lambda c: (_selectivity(c), sorted(c)), reverse=True)[:_MAX_CLAUSES]
    return Prefilter(tuple(tuple(sorted(c, key=lambda s: (-len(s), s))) for c in kept))


class FoldedTexts:
    """:func:`fold` of each distinct text, computed once for all the rules of one evaluation.

    Also which literals each folded text holds (:meth:`holds_any`), each tested once per text
    for all the rules whose gates name it.
    """

    def __init__(self) -> None:
        self._folded: dict[str, str | None] = {}
        self._holds: dict[str, dict[str, bool]] = {}

    def get(self, text: str) -> str | None:
        """``fold(text)``, from the memo when this text was folded before."""
        try:
            return self._folded[text]
        except KeyError:
            folded = self._folded[text] = fold(text)
            return folded

    def holds_any(self, text: str, literals: frozenset[str] | tuple[str, ...]) -> bool:
        """True when ``fold(text)`` holds one of ``literals`` (lower-cased), or is ``None``."""
        folded = self.get(text)
        if folded is None:
            return True
        known = self._holds.get(text)
        if known is None:
            known = self._holds[text] = {}
        for literal in literals:
            hit = known.get(literal)
            if hit is None:
                hit = known[literal] = literal in folded
            if hit:
                return True
        return False
