"""The ``regex`` and ``strings`` matchers: a time-bounded regex over a unit's text, or over the folded values of its string expressions.

``strings`` reads :func:`mleaudit.audit.rules.strings.fold_strings`; on a unit too large to fold
it searches the quoted literals as text (:func:`literal_runs`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Iterator

import regex as _regex

from mleaudit.audit.parsing import LANGUAGES
from mleaudit.audit.rules.match import Capture, Match
from mleaudit.audit.rules.matchers.base import Subject, bounded_finditer, tree_shape
from mleaudit.audit.rules.matchers.fallback import MAX_TEXT_FALLBACK_MATCHES
from mleaudit.audit.rules.prefilter import Prefilter, regex_prefilter
from mleaudit.audit.rules.spec import REGEX_FLAGS, RegexSpec, StringsSpec
from mleaudit.audit.rules.strings import fold_strings
from mleaudit.audit.rules.strings.parts import unescape_python


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
    run: list[tuple[int, int, str]] = []
    for m in _LITERAL.finditer(text):
        body = m.group("tbody") if m.group("q") else m.group("body")
        piece = (m.start(), m.end(), unescape_python(body))
        if run and _JOIN.fullmatch(text, run[-1][1], m.start()):
            run.append(piece)
            continue
        if run:
            yield run[0][0], run[-1][1], "".join(p[2] for p in run), len(run)
        run = [piece]
    if run:
        yield run[0][0], run[-1][1], "".join(p[2] for p in run), len(run)



def compile_regex(spec: RegexSpec, problems: list[str]) -> RegexMatcher | None:
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


def compile_strings(spec: StringsSpec, problems: list[str]) -> StringsMatcher | None:
    regex = compile_regex(RegexSpec(pattern=spec.pattern, flags=spec.flags), problems)
    if regex is None:
        return None
    return StringsMatcher(regex=regex.regex, assembled_only=spec.assembled_only, capture_names=regex.capture_names)
