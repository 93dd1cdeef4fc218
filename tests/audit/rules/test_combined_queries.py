"""Combined queries: the matches a query takes from every rule's patterns joined are those it finds alone."""

from __future__ import annotations

import dataclasses
import random
from pathlib import Path

import pytest
import tree_sitter
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from mleaudit.audit.parsing import parse
from mleaudit.audit.rules.loader import load_ruleset
from mleaudit.audit.rules.matchers import QueryMatcher, Subject
from mleaudit.audit.rules.matchers import query as query_module
from mleaudit.audit.rules.matchers.query import _COMBINED

REPO = Path(__file__).resolve().parents[3]


@pytest.fixture(autouse=True, scope="module")
def _combined_at_once():
    """Every unit runs the combined query here, short runs included."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(query_module, "COMBINED_AFTER_CHARS", 0)
        yield


def _queries(matcher, found):
    if isinstance(matcher, QueryMatcher):
        found.append(matcher)
    for name in ("positives", "negatives", "filters", "children"):
        for child in getattr(matcher, name, ()) or ():
            _queries(child, found)
    if getattr(matcher, "child", None) is not None:
        _queries(matcher.child, found)
    return found


@pytest.fixture(scope="module")
def shipped():
    """Every query of the shipped rules: ``(language, place in the combined query, query)``."""
    seen = {}
    for rule in load_ruleset():
        if rule.matcher is None:
            continue
        for matcher in _queries(rule.matcher, []):
            for language, index in matcher.combined.items():
                seen[(language, index)] = matcher.queries[language]
    return sorted(seen.items(), key=lambda item: item[0])


def _code_cases() -> dict[str, list[str]]:
    """The code of every rule test case, by language."""
    by_language: dict[str, list[str]] = {}
    for path in sorted((REPO / "rules").rglob("*.test.yaml")):
        cases = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        for key in ("invalid", "valid", "todo"):
            for case in cases.get(key) or []:
                if isinstance(case, dict) and isinstance(case.get("code"), str):
                    by_language.setdefault(case.get("language", "python"), []).append(case["code"])
    return by_language


CASES = _code_cases()


def _normal(found):
    return [(pattern, {name: [(n.start_byte, n.end_byte, n.type) for n in nodes] for name, nodes in caps.items()})
            for pattern, caps in found]


def _assert_same(shipped, text: str, language: str) -> None:
    parsed = parse(text, language)
    for (lang, index), query in shipped:
        if lang != language:
            continue
        alone = tree_sitter.QueryCursor(query).matches(parsed.root)
        combined = _COMBINED.matches(language, index, parsed)
        assert combined is not None
        assert _normal(combined) == _normal(alone), (index, text[:200])


def test_every_shipped_query_takes_part_in_the_combined_query(shipped):
    assert any(lang == "python" for (lang, _), _ in shipped)
    for (language, index), _query in shipped:
        assert _COMBINED.matches(language, index, parse("x = 1\n", language)) is not None


@pytest.mark.parametrize("language", sorted(CASES))
def test_combined_matches_equal_the_query_alone_on_every_rule_case(shipped, language):
    for text in CASES[language]:
        _assert_same(shipped, text, language)


def test_combined_matches_equal_the_query_alone_on_the_project_source(shipped):
    files = sorted((REPO / "audit").rglob("*.py"))
    for path in random.Random(7).sample(files, 25):
        _assert_same(shipped, path.read_text(encoding="utf-8"), "python")


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from(CASES.get("python", ["x = 1"])), min_size=1, max_size=4), st.randoms(use_true_random=False))
def test_combined_matches_equal_the_query_alone_on_mixed_cases(shipped, snippets, rnd):
    lines = "\n".join(snippets).splitlines()
    rnd.shuffle(lines)  # broken code too: error nodes change what the patterns see
    _assert_same(shipped, "\n".join(lines[: rnd.randint(1, len(lines))]), "python")


def test_grouped_matches_hold_the_same_matches(shipped):
    text = "\n".join(CASES.get("python", []))
    parsed = parse(text, "python")
    for (language, index), query in shipped:
        if language != "python":
            continue
        alone = _normal(tree_sitter.QueryCursor(query).matches(parsed.root))
        grouped = _normal(_COMBINED.matches(language, index, parsed, grouped=True))
        assert sorted(grouped, key=repr) == sorted(alone, key=repr)
        assert [p for p, _ in grouped] == sorted(p for p, _ in grouped)


@pytest.fixture(scope="module")
def matchers():
    found = []
    for rule in load_ruleset():
        if rule.matcher is not None:
            found.extend(_queries(rule.matcher, []))
    return found


def _find_both_ways(matchers, text: str, language: str) -> None:
    for matcher in matchers:
        if language not in matcher.queries:
            continue
        combined, alone = Subject(text=text, language=language), Subject(text=text, language=language)
        # Without its place in the combined query the matcher tests the text first, then runs alone.
        assert matcher.find(combined) == dataclasses.replace(matcher, combined={}).find(alone), text[:200]
        assert combined.unevaluated == alone.unevaluated


@pytest.mark.parametrize("language", sorted(CASES))
def test_query_matchers_find_the_same_with_the_combined_query(matchers, language):
    for text in CASES[language]:
        _find_both_ways(matchers, text, language)
    deep = "x = " + "(" * 1200 + "1" + ")" * 1200 + "\n"  # a tree too deep to query: the text fallback
    _find_both_ways(matchers, deep + CASES[language][0], language)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.sampled_from(CASES.get("python", ["x = 1"])), min_size=1, max_size=4), st.randoms(use_true_random=False))
def test_query_matchers_find_the_same_on_mixed_cases(matchers, snippets, rnd):
    lines = "\n".join(snippets).splitlines()
    rnd.shuffle(lines)
    _find_both_ways(matchers, "\n".join(lines[: rnd.randint(1, len(lines))]), "python")


def test_short_runs_run_each_query_alone_until_the_combined_query_is_worth_building(matchers, monkeypatch):
    monkeypatch.setattr(query_module, "COMBINED_AFTER_CHARS", 10**12)
    fresh = query_module._CombinedQueries()
    fresh.sources = {language: list(entries) for language, entries in _COMBINED.sources.items()}
    monkeypatch.setattr(query_module, "_COMBINED", fresh)
    text = "\n".join(CASES["python"][:20])
    _find_both_ways(matchers, text, "python")
    assert fresh.queries == {} and fresh.walked > 0  # nothing compiled: every query ran alone
    monkeypatch.setattr(query_module, "COMBINED_AFTER_CHARS", fresh.walked)
    _find_both_ways(matchers, text, "python")
    assert "python" in fresh.queries


def test_a_query_source_is_compiled_once_and_its_problems_are_reported_each_time():
    from mleaudit.audit.rules.spec import QuerySpec

    source = '((call function: (identifier) @fn) (#eq? @fn "zz_cache_probe"))'
    first = query_module.compile_query(QuerySpec(queries=(("python", source),)), [])
    second = query_module.compile_query(QuerySpec(queries=(("python", source),)), [])
    assert first.queries["python"] is second.queries["python"] and first == second
    other = query_module.compile_query(QuerySpec(queries=(("python", source.replace("probe", "other")),)), [])
    assert other.queries["python"] is not first.queries["python"]
    for _ in range(2):
        problems: list[str] = []
        assert query_module.compile_query(QuerySpec(queries=(("python", "(call @x"),)), problems) is None
        assert len(problems) == 1 and "does not compile" in problems[0]
