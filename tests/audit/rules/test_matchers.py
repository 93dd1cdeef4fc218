"""Matchers: query, regex and strings captures, all/any/not/inside/terms semantics, compile-time problems."""

from __future__ import annotations

import pytest

from mleaudit.audit.rules.match import Capture, Match
from mleaudit.audit.rules.matchers import AllMatcher, AnyMatcher, QueryMatcher, RegexMatcher, StringsMatcher, Subject, compile_matcher
from mleaudit.audit.rules.policy import RulePolicy
from mleaudit.audit.rules.spec import AllSpec, AnySpec, InsideSpec, NotSpec, QuerySpec, RegexSpec, StringsSpec, TermsSpec


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
        (AllSpec(children=(NotSpec(child=RegexSpec(pattern="a")),)), "`all` needs at least one child that is not `not`, `inside` or `terms`"),
        (RegexSpec(pattern="a", flags=("verbose",)), "unknown regex flag 'verbose' (known: ignorecase, multiline, dotall)"),
        (RegexSpec(pattern="a", languages=("cobol",)), "regex limited to unknown language(s) ['cobol'] (known: bash, python)"),
        (QuerySpec(queries=(("python", "(identifier)"),)), "python query has no @capture, so a match has no location"),
        (QuerySpec(queries=(("cobol", "(x) @x"),)), "query for unknown language 'cobol' (known: bash, python)"),
        (InsideSpec(child=RegexSpec(pattern="(?P<a>a)")), "`inside` is only valid as a child of `all`"),
        (TermsSpec(values=("x",)), "`terms` is only valid as a child of `all`"),
        (AllSpec(children=(RegexSpec(pattern="(?P<a>a)"), TermsSpec(policy="allow_urls"))),
         "`terms` names policy list 'allow_urls'; known: label_leak_columns"),
        (AllSpec(children=(RegexSpec(pattern="(?P<a>a)"), TermsSpec(capture="a"))),
         "`terms` needs `values`, a `policy` list, or both"),
        (AllSpec(children=(RegexSpec(pattern="(?P<a>a)"), TermsSpec(capture="b", values=("x",)))),
         "`terms` capture 'b' is not a capture of the primary child (captures: a)"),
        (StringsSpec(pattern="(?P<a>"), "regex does not compile: missing ) at position 6"),
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


def test_inside_keeps_primary_matches_within_a_container():
    spec = AllSpec(children=(
        RegexSpec(pattern=r"(?P<call>post\(\))"),
        InsideSpec(child=RegexSpec(pattern=r"(?P<loop>for[^\n]*\n(?:    [^\n]*\n)*)")),
    ))
    matcher = _compile(spec, focus="call")
    text = "post()\nfor x in y:\n    post()\n"
    [match] = matcher.find(Subject(text=text, language=None))
    assert match.captures["call"].start == text.rindex("post()")
    assert matcher.find(Subject(text="post()\n", language=None)) == []


def test_terms_read_values_and_the_subject_policy():
    spec = AllSpec(children=(
        RegexSpec(pattern=r"(?P<leak>p\[[^\]]*\]) = 1"),
        TermsSpec(capture="leak", policy="label_leak_columns", values=("known_col",)),
    ))
    matcher = _compile(spec)
    text = "p[df.known_col > 0] = 1\np[df.late_col > 0] = 1\np[df.known_col_2 > 0] = 1\n"
    plain = matcher.find(Subject(text=text, language=None))
    assert [m.values["term"] for m in plain] == ["known_col"]  # whole words only: not known_col_2
    policy = RulePolicy.from_mapping({"label_leak_columns": ["late_col"]})
    with_policy = matcher.find(Subject(text=text, language=None, policy=policy))
    assert [m.values["term"] for m in with_policy] == ["known_col", "late_col"]
    assert matcher.value_names == frozenset({"term"})


def test_strings_matcher_captures_span_the_expression_and_carry_the_value():
    matcher = _compile(StringsSpec(pattern=r"(?P<host>api\.example\.com)", assembled_only=True))
    assert isinstance(matcher, StringsMatcher)
    text = 'a = "api.example.com"\nb = "api." + "example.com"\n'
    [match] = matcher.find(Subject(text=text, language="python"))
    host = match.captures["host"]
    assert text[host.start:host.end] == '"api." + "example.com"'
    assert host.text == "api.example.com"
    assert match.values["value"] == "api.example.com"
    assert matcher.find(Subject(text=text, language=None)) == []
