"""Regex prefilters: never weaker than the regex they stand for, and useful on the shipped rules."""

from __future__ import annotations

import dataclasses
import random
import sys
from re import _constants as _op
from re import _parser as _sre_parse

import pytest
import regex as _regex

from mleaudit.audit.rules.engine import evaluate_rules
from mleaudit.audit.rules.loader import load_ruleset
from mleaudit.audit.rules.matchers import QueryMatcher, RegexMatcher
from mleaudit.audit.rules.prefilter import UNFOLDABLE, FoldedTexts, Prefilter, fold, regex_prefilter
from mleaudit.audit.units import CodeUnit

from .conftest import make_rule


def _clauses(pattern: str, **kwargs) -> tuple[tuple[str, ...], ...] | None:
    found = regex_prefilter(pattern, **kwargs)
    return None if found is None else found.clauses


@pytest.mark.parametrize(("pattern", "clauses"), [
    (r"openai\.com/v1", (("openai.com/v1",),)),
    (r"\b(?:any_medal|gold_medal)\s*[:=]", (("gold_medal", "any_medal"),)),
    (r"(?i:MLE-?bench)[ \t]+grad(?:e|ing|er)\b", (("bench",), ("grading", "grader", "grade"), ("mle",))),
    (r"x+yz{2}w", (("yzzw",),)),
    (r"ab(?=kaggle)", (("kaggle",),)),  # a lookahead's text is in the subject too
    (r"(?:abc)?def", (("def",),)),
    (r"(?:foo|ba)bar", (("foobar", "babar"),)),
    (r"api[._]openai", (("api.openai", "api_openai"),)),
    (r"kaggle\w*\(|kaggle\w*\r?\n\{", (("kaggle",),)),  # an escaped brace is a brace to re and regex alike
    (r"\\\{x\}", (("\\{x}",),)),
])
def test_prefilter_keeps_the_literals_every_match_holds(pattern, clauses):
    assert _clauses(pattern) == clauses


@pytest.mark.parametrize("pattern", [
    r"(?:abc)?",            # may match the empty string
    r"a|bcd",               # one alternative has no literal worth testing
    r"[a-z]+\d{3}",         # classes, not literals
    r"(?!kaggle)\w+",       # a negative lookahead requires nothing
    r"(a)\1",               # back references
    r"kaggle{e<=1}",        # the regex package reads a fuzzy count here, re reads text
    r"[[:alpha:]]kaggle",   # POSIX class: a nested set to re
    r"\p{L}kaggle",         # re cannot parse it
    r"sch\u00f6n",          # non-ASCII literals are never used
    r"(",                   # does not parse
    "(?x)secret\x1ckey",     # verbose mode: regex skips \x1c as a blank, re reads it as text
    "(?x)secret\\\x1ckey",   # escaped too
    r"kaggle\\{e<=1}",      # an escaped backslash, then a fuzzy count
])
def test_prefilter_refuses_what_it_cannot_derive_safely(pattern):
    found = regex_prefilter(pattern)
    assert found is None or all(all(s.isascii() and len(s) >= 3 for s in c) for c in found.clauses)
    if pattern in (r"kaggle{e<=1}", r"[[:alpha:]]kaggle", r"\p{L}kaggle", "(", r"(?:abc)?", r"a|bcd", "(?x)secret\x1ckey",
                   "(?x)secret\\\x1ckey", r"kaggle\\{e<=1}"):
        assert found is None


def test_verbose_patterns_are_parsed_as_verbose():
    assert _clauses(r"open ai # a comment", verbose=True) == (("openai",),)
    assert _clauses(r"open ai # a comment") == (("open ai # a comment",),)


def test_unfoldable_lists_every_character_whose_case_maps_onto_ascii():
    found = []
    for code in range(0x80, sys.maxunicode + 1):
        ch = chr(code)
        if any(ord(c) < 0x80 for c in ch.lower() + ch.upper() + ch.casefold() + ch.title()):
            found.append(ch)
    assert "".join(found) == UNFOLDABLE


def test_a_text_with_a_character_folding_onto_ascii_is_always_searched():
    prefilter = regex_prefilter(r"(?i)kaggle")
    assert prefilter is not None
    kelvin = "\u212aaggle datasets download"
    assert _regex.search(r"(?i)kaggle", kelvin)
    assert fold(kelvin) is None and prefilter.met(fold(kelvin))
    assert not prefilter.met(fold("nothing here"))
    texts = FoldedTexts()
    assert texts.get(kelvin) is None and texts.get("KaGgLe") == "kaggle"


def test_a_rule_finds_a_case_folded_evasion_through_its_prefilter():
    rule = make_rule({"message": "found it", "languages": None,
                      "match": {"regex": r"kaggle\s+datasets\s+download", "regex_flags": ["ignorecase"]}})
    assert isinstance(rule.matcher, RegexMatcher) and rule.matcher.prefilter is not None
    units = [CodeUnit(path=f"a{i}.sh", language="bash", text=text) for i, text in enumerate([
        "\u212aAGGLE datasets download -d x", "kaggle  DATASETS download", "sch\u00f6n kaggle datasets download",
        "pip install kaggle", "\u212aaggle datasets list"])]
    found = evaluate_rules([rule], code_units=units)
    assert sorted(f.evidence[0].span.path for f in found) == ["a0.sh", "a1.sh", "a2.sh"]


def _shipped_regexes():
    """Every regex of the shipped rules that runs over whole texts: ``(kind, regex, prefilter)``."""
    pairs = []

    def walk(node, seen):
        if id(node) in seen:
            return
        seen.add(id(node))
        if isinstance(node, RegexMatcher):
            pairs.append(("regex", node.regex, node.prefilter))
        if isinstance(node, QueryMatcher):
            for needs in node.requirements.values():
                for need in needs or ():
                    pairs.extend(("query", r, p) for r, p in zip(need.regexes, need.prefilters))
            return
        if dataclasses.is_dataclass(node) and not isinstance(node, type):
            for f in dataclasses.fields(node):
                walk(getattr(node, f.name), seen)
        elif isinstance(node, (tuple, list)):
            for item in node:
                walk(item, seen)

    for rule in load_ruleset():
        walk(rule.matcher, set())
    return pairs


SHIPPED = _shipped_regexes()


def test_most_shipped_regexes_have_a_prefilter():
    # A guard on usefulness, not on safety: the rules' regexes name what they look for.
    for kind in ("regex", "query"):
        of_kind = [p for k, _, p in SHIPPED if k == kind]
        with_prefilter = sum(1 for p in of_kind if p is not None)
        assert len(of_kind) >= 20 and with_prefilter >= 0.5 * len(of_kind), (kind, with_prefilter, len(of_kind))


def _mutations(text: str) -> list[str]:
    return [text, text.upper(), text.swapcase(), "x " + text + " \u212a",
            text.replace("k", "\u212a").replace("s", "\u017f")]


_ALPHABET = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 _-./:=\"'()[]{}\n\t,\u00e9\u212a"


def _sample(items, rng: random.Random, depth: int = 0) -> str:
    """A random string shaped by a parsed regex (not always a match: callers check)."""
    out = []
    for op, arg in items:
        if op is _op.LITERAL:
            out.append(chr(arg))
        elif op is _op.NOT_LITERAL or op is _op.ANY:
            out.append(rng.choice(_ALPHABET))
        elif op is _op.IN:
            choices = [chr(a) for o, a in arg if o is _op.LITERAL]
            choices += [chr(rng.randint(a[0], a[1])) for o, a in arg if o is _op.RANGE]
            out.append(rng.choice(choices) if choices and not any(o is _op.NEGATE for o, _ in arg)
                       else rng.choice(_ALPHABET))
        elif op is _op.SUBPATTERN:
            out.append(_sample(arg[-1], rng, depth + 1))
        elif op is _op.BRANCH:
            out.append(_sample(rng.choice(arg[1]), rng, depth + 1))
        elif op in (_op.MAX_REPEAT, _op.MIN_REPEAT) or op is getattr(_op, "POSSESSIVE_REPEAT", None):
            low, high, item = arg
            count = rng.randint(low, min(high, low + 3)) if depth < 6 else low
            out.extend(_sample(item, rng, depth + 1) for _ in range(count))
        elif op is _op.ASSERT and arg[0] == 1:
            out.append(_sample(arg[1], rng, depth + 1))  # the lookahead's text comes next
        elif op is getattr(_op, "ATOMIC_GROUP", None):
            out.append(_sample(arg, rng, depth + 1))
        elif op is _op.AT and rng.random() < 0.5:
            out.append(rng.choice(" \n"))
    return "".join(out)


@pytest.mark.parametrize("kind", ["regex", "query"])
def test_every_text_a_shipped_regex_matches_meets_its_prefilter(kind):
    rng = random.Random(7)
    checked = 0
    for of_kind, compiled, prefilter in SHIPPED:
        if of_kind != kind or prefilter is None:
            continue
        try:
            parsed = _sre_parse.parse(compiled.pattern, compiled.flags & _regex.VERBOSE)
        except Exception:  # noqa: BLE001 - no prefilter is derived from these either
            continue
        for _ in range(40):
            sample = _sample(parsed, rng)
            for text in _mutations(sample) + [f"prefix {sample} suffix"]:
                if compiled.search(text, timeout=5) is not None:
                    checked += 1
                    assert prefilter.met(fold(text)), (compiled.pattern, text)
    assert checked >= 500  # the generator does reach matches


def test_prefilter_met_is_an_and_of_ors():
    prefilter = Prefilter((("gold_medal", "any_medal"), ("score",)))
    assert prefilter.met("any_medal: true, score: 1")
    assert not prefilter.met("any_medal: true")
    assert not prefilter.met("score: 1")
    assert prefilter.met(None)
