"""Matchers: query and regex captures, all/any/not semantics, compile-time problems."""

from __future__ import annotations

import pytest

from audit.rules.match import Capture, Match
from audit.rules.matchers import AllMatcher, AnyMatcher, QueryMatcher, RegexMatcher, Subject, compile_matcher
from audit.rules.spec import AllSpec, AnySpec, NotSpec, QuerySpec, RegexSpec


def _compile(spec, focus=None):
    problems: list[str] = []
    matcher = compile_matcher(spec, focus=focus, problems=problems)
    assert problems == []
    return matcher


def _texts(matches, name):
    return [m.captures[name].text for m in matches if name in m.captures]


def test_query_captures_use_character_offsets_in_non_ascii_text():
    text = 'note = "é – ü"\nclient.chat.completions.create(model="m")\n'
    matcher = _compile(QuerySpec(queries=(("python", "(call function: (attribute) @fn) @call"),)))
    assert isinstance(matcher, QueryMatcher)
    [match] = matcher.find(Subject(text=text, language="python"))
    fn = match.captures["fn"]
    assert fn.text == "client.chat.completions.create"
    assert text[fn.start:fn.end] == fn.text
    assert (match.start, match.end) == (text.index("client"), text.index(")\n") + 1)


def test_query_only_runs_on_its_language():
    matcher = _compile(QuerySpec(queries=(("python", "(identifier) @x"),)))
    assert matcher.find(Subject(text="echo hi", language="bash")) == []
    assert matcher.find(Subject(text="x = 1", language=None)) == []


def test_regex_named_groups_flags_and_languages():
    matcher = _compile(RegexSpec(pattern=r"(?P<cmd>KAGGLE (?P<verb>download))|(?P<other>zzz)", flags=("ignorecase",),
                                 languages=("bash",)))
    assert isinstance(matcher, RegexMatcher)
    [match] = matcher.find(Subject(text="$ kaggle download x", language="bash"))
    assert match.captures["cmd"] == Capture(start=2, end=17, text="kaggle download")
    assert set(match.captures) == {"cmd", "verb"}  # groups that did not take part are absent
    assert matcher.find(Subject(text="kaggle download", language="python")) == []


def test_regex_skips_empty_matches():
    matcher = _compile(RegexSpec(pattern=r"(?P<x>a*)"))
    assert _texts(matcher.find(Subject(text="baab", language=None)), "x") == ["aa"]


def test_all_requires_every_positive_child_and_attaches_support():
    spec = AllSpec(children=(
        RegexSpec(pattern=r"(?P<imp>import openai)"),
        RegexSpec(pattern=r"(?P<call>\w+\.create)\("),
    ))
    matcher = _compile(spec, focus="call")
    assert isinstance(matcher, AllMatcher) and matcher.primary == 1
    text = "import openai\na.create()\nb.create()\n"
    matches = matcher.find(Subject(text=text, language=None))
    assert _texts(matches, "call") == ["a.create", "b.create"]
    assert all(m.captures["imp"].text == "import openai" for m in matches)
    assert [s.captures["imp"].start for s in matches[0].support] == [0]
    assert matcher.find(Subject(text="a.create()\n", language=None)) == []


def test_not_drops_overlapping_matches_only():
    spec = AllSpec(children=(
        RegexSpec(pattern=r"(?P<url>https://\S+)"),
        NotSpec(child=RegexSpec(pattern=r"download\.pytorch\.org")),
    ))
    matcher = _compile(spec)
    text = "wget https://download.pytorch.org/w.pth\nwget https://github.com/x/y\n"
    assert _texts(matcher.find(Subject(text=text, language=None)), "url") == ["https://github.com/x/y"]
    only_allowed = "wget https://download.pytorch.org/w.pth\n"
    assert matcher.find(Subject(text=only_allowed, language=None)) == []


def test_not_with_a_query_ignores_comments():
    spec = AllSpec(children=(
        RegexSpec(pattern=r"(?P<cmd>kaggle competitions download)"),
        NotSpec(child=QuerySpec(queries=(("python", "(comment) @c"),))),
    ))
    matcher = _compile(spec)
    assert matcher.find(Subject(text="# kaggle competitions download\nx = 1\n", language="python")) == []
    assert len(matcher.find(Subject(text='os.system("kaggle competitions download")\n', language="python"))) == 1


def test_any_is_the_union():
    matcher = _compile(AnySpec(children=(RegexSpec(pattern="(?P<x>a)"), RegexSpec(pattern="(?P<x>b)"))))
    assert isinstance(matcher, AnyMatcher)
    assert sorted(_texts(matcher.find(Subject(text="ab", language=None)), "x")) == ["a", "b"]
    assert matcher.capture_names == frozenset({"x"})


@pytest.mark.parametrize(
    "spec, expected",
    [
        (NotSpec(child=RegexSpec(pattern="a")), "`not` is only valid as a child of `all`"),
        (AnySpec(children=(NotSpec(child=RegexSpec(pattern="a")),)), "`not` is only valid as a child of `all`"),
        (AllSpec(children=(NotSpec(child=RegexSpec(pattern="a")),)), "`all` needs at least one child that is not `not`"),
        (RegexSpec(pattern="a", flags=("verbose",)), "unknown regex flag 'verbose' (known: ignorecase, multiline, dotall)"),
        (RegexSpec(pattern="a", languages=("cobol",)), "regex limited to unknown language(s) ['cobol'] (known: bash, python)"),
        (QuerySpec(queries=(("python", "(identifier)"),)), "python query has no @capture, so a match has no location"),
        (QuerySpec(queries=(("cobol", "(x) @x"),)), "query for unknown language 'cobol' (known: bash, python)"),
    ],
)
def test_compile_problems(spec, expected):
    problems: list[str] = []
    assert compile_matcher(spec, problems=problems) is None
    assert problems == [expected]


def test_bad_query_reports_tree_sitter_error():
    problems: list[str] = []
    compile_matcher(QuerySpec(queries=(("python", "(call function: (nosuchnode) @x)"),)), problems=problems)
    assert len(problems) == 1 and problems[0].startswith("python query does not compile: Invalid node type")


def test_match_overlap():
    m = Match(start=5, end=10)
    assert m.overlaps(9, 12) and m.overlaps(0, 6) and m.overlaps(6, 7)
    assert not m.overlaps(10, 12) and not m.overlaps(0, 5)
    assert m.overlaps(7, 7)
