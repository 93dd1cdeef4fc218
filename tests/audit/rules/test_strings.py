"""Folding string expressions (mleaudit.audit.rules.strings) and the `strings` matcher built on it."""

from __future__ import annotations

import pytest

from mleaudit.audit.rules.strings import MAX_VALUE_CHARS, UNKNOWN, fold_strings
from tests.audit.rules.conftest import make_rule
from mleaudit.audit.rules.engine import evaluate_rules
from mleaudit.audit.units import CodeUnit


def _values(text: str, language: str = "python") -> list[str]:
    return [f.value for f in fold_strings(text, language)]


@pytest.mark.parametrize(
    "source, value",
    [
        ('u = "https://api." + "example" + ".com"', "https://api.example.com"),
        ('u = "a" "b" "c"', "abc"),
        ('H = "example.org"\nu = f"https://{H}/v1"', "https://example.org/v1"),
        ('u = "/".join(["https:/", "example.org", "x"])', "https://example.org/x"),
        ('u = "https://%s/%s" % ("h.org", "p")', "https://h.org/p"),
        ('u = "https://{}/{x}".format("h.org", x="p")', "https://h.org/p"),
        ('u = "{{literal}} {}".format("x")', "{literal} x"),
        ('import base64\nu = base64.b64decode("aHR0cHM6Ly9oLm9yZw==").decode()', "https://h.org"),
        ('u = bytes.fromhex("682e6f7267").decode()', "h.org"),
        ('import codecs\nu = codecs.decode("u.bet", "rot13")', "h.org"),
        ('u = "gro.h"[::-1]', "h.org"),
        ('p = os.path.join("/private", "data", comp)', f"/private/data/{UNKNOWN}"),
        ('p = Path("/private") / "data" / "test.csv"', "/private/data/test.csv"),
        ('u = "ab".replace("b", "c").upper()', "AC"),
        ('u = "h\\x2eorg"', "h.org"),
        ('u = "https://" + host + "/v1"', f"https://{UNKNOWN}/v1"),
        ('u = "".join(reversed("gro.h"))', "h.org"),
        ('u = "".join(map(chr, [104, 46, 111, 114, 103]))', "h.org"),
        ('u = chr(104) + chr(0x2e) + "org"', "h.org"),
        ('u = bytes([104, 46, 111, 114, 103]).decode()', "h.org"),
        ('u = os.sep.join(["", "private", "x"])', "/private/x"),
        ('u = str.join(".", ["h", "org"])', "h.org"),
        ('u = "h.orgX"[:-1]', "h.org"),
        ('u = "xxh.org"[2:]', "h.org"),
    ],
)
def test_python_expressions_fold_to_their_value(source, value):
    assert value in _values(source)


def test_only_outermost_expressions_and_no_bare_names():
    values = _values('A = "x"\nB = A + "y"\ncall(B)\n')
    assert values == ["x", "xy"]  # `call(B)` is a bare name: its constant is reported where written


def test_names_assigned_twice_with_different_values_are_unknown():
    assert _values('H = "a.org"\nH = "b.org"\nu = "https://" + H')[-1] == f"https://{UNKNOWN}"


def test_constants_chain_across_definitions_in_any_order():
    assert _values('u = "https://" + HOST\nHOST = "api." + VENDOR + ".com"\nVENDOR = "ex"')[0] == "https://api.ex.com"


def test_segments_tell_assembled_from_single_literals():
    [plain] = fold_strings('u = "https://h.org/x"', "python")
    assert not plain.composed and plain.spelled_by_one_literal(8, 13)
    [joined] = fold_strings('u = "https://h." + "org/x"', "python")
    assert joined.composed
    assert joined.spelled_by_one_literal(0, 8)  # "https://" comes from the first literal
    assert not joined.spelled_by_one_literal(8, 13)  # "h.org" spans both
    [decoded] = fold_strings('u = "gro.h"[::-1]', "python")
    assert not decoded.spelled_by_one_literal(0, 5)  # a transformation, not a literal


def test_offsets_point_at_the_whole_expression():
    text = 'x = 1\nurl = "https://a." + "org"\n'
    [folded] = fold_strings(text, "python")
    assert text[folded.start:folded.end] == '"https://a." + "org"'


def test_bash_words_quotes_and_variables():
    values = _values('H=api.example.com; export B="https://$H"\ncurl -s "$B/v1/"\'x\' https://api."ex".com\n', "bash")
    assert "https://api.example.com/v1/x" in values
    assert "https://api.ex.com" in values


@pytest.mark.parametrize(
    "source",
    [
        'x = "a" * 10**9',
        "x = " + " + ".join(['"ab"'] * 3000),
        "s = 'x'\n" + "s = s + s\n" * 50,
        "x = f'{" * 200 + "}'" * 200,
        'u = "%s" % ()',
        'u = "{0}{5}".format("a")',
        'u = base64.b64decode("!!!")',
        'u = bytes.fromhex("zz")',
    ],
    ids=["huge-repeat", "long-chain", "doubling", "nested-fstrings", "empty-percent", "missing-format-args",
         "bad-base64", "bad-hex"],
)
def test_folding_is_bounded_and_never_raises(source):
    for folded in fold_strings(source, "python"):
        assert len(folded.value) <= MAX_VALUE_CHARS


def test_unknown_languages_fold_nothing():
    assert fold_strings("x = 'a' + 'b'", "r") == ()


STRINGS_RULE = {
    "id": "llm-test", "category": "llm-api", "message": "host {host} in {value}", "focus": "host",
    "match": {"strings": r"(?P<host>api\.example\.com)", "assembled_only": True},
}


def test_strings_matcher_reports_assembled_values_at_the_expression():
    rule = make_rule(STRINGS_RULE)
    text = 'a = "api.example.com"\nb = "api." + "example.com"\n'
    [finding] = evaluate_rules([rule], code_units=[CodeUnit(path="code/a.py", language="python", text=text)])
    assert finding.evidence[0].span.start_line == 2
    assert finding.message == 'host api.example.com in api.example.com'
    assert 'b = "api." + "example.com"' in finding.evidence[0].excerpt


def test_strings_matcher_without_assembled_only_sees_plain_literals():
    rule = make_rule({**STRINGS_RULE, "match": {"strings": r"(?P<host>api\.example\.com)"}})
    text = 'a = "api.example.com"\n'
    assert len(evaluate_rules([rule], code_units=[CodeUnit(path="code/a.py", language="python", text=text)])) == 1


@pytest.mark.parametrize("source", ['u = chr(0xD800) + "x"', 'u = chr(-1)', 'u = bytes([300, 1]).decode()',
                                    'u = chr(n)', 'u = "".join(reversed(name))', 'u = bytes([0x80]).decode()'])
def test_code_points_that_are_no_text_fold_to_nothing_known(source):
    assert all("\ud800" not in v and "\x80" not in v for v in _values(source))


@pytest.mark.parametrize("source, value", [
    ("cat $(echo aC5vcmc= | base64 -d)", "h.org"),
    ('cat "$(printf \'aC5vcmc=\' | base64 --decode)/x"', "h.org/x"),
    ("cat $'h\\x2eorg'", "h.org"),
])
def test_bash_decodings_fold_to_their_value(source, value):
    assert value in _values(source, "bash")
    # any other command substitution stays unknown
    assert _values("ls $(pwd)", "bash") == []
