"""Total text functions: untrusted JSON decoding, string folding, terminal escaping.

- ``mleaudit.grading.untrusted_json.loads`` raises only ``json.JSONDecodeError``, returns only strings
  that encode as UTF-8, and agrees with ``json.loads`` on plain JSON within the depth bound;
- ``mleaudit.audit.rules.strings.fold_strings`` never raises (nor crashes the process) on any Python or
  bash source, and its values and offsets stay inside their bounds;
- ``mleaudit.audit.formatters.terminal.terminal_safe`` leaves no control, format or separator
  character and always encodes as UTF-8, and changes nothing else.
"""

from __future__ import annotations

import json
import unicodedata

from hypothesis import given
from hypothesis import strategies as st

from mleaudit.audit.formatters.terminal import terminal_safe
from mleaudit.audit.rules.strings import MAX_VALUE_CHARS, fold_strings
from mleaudit.grading import untrusted_json
from tests.property import strategies as S
from tests.property.support import budget, call, encodes_utf8, isolated, strings_in, time_limit

# ------------------------------------------------------------------ mleaudit.grading.untrusted_json.loads

json_input = st.one_of(S.json_text(), S.nasty_text, S.json_text().map(lambda t: t.encode("utf-8", "surrogatepass")),
                       st.binary(max_size=64))


@budget(60)
@given(json_input)
def test_untrusted_json_raises_only_json_decode_error(text):
    value, error = call(untrusted_json.loads, text, allowed=(json.JSONDecodeError,), what="untrusted_json.loads")
    if error is not None:
        return
    for item in strings_in(value):
        assert encodes_utf8(item), f"decoded string does not encode as UTF-8: {item!r:.200}"


def _plain(text: str) -> bool:
    """JSON text whose meaning the bound and the surrogate replacement leave alone."""
    return "\\u" not in text and all(not 0xD800 <= ord(c) <= 0xDFFF for c in text)


@budget(60)
@given(S.json_text())
def test_untrusted_json_agrees_with_json_on_plain_text(text):
    try:
        expected = json.loads(text)
    except (ValueError, RecursionError):
        expected = None
        valid = False
    else:
        valid = True
    try:
        value = untrusted_json.loads(text)
    except json.JSONDecodeError as exc:
        if valid and _plain(text):
            assert untrusted_json.json_depth(text) > untrusted_json.MAX_JSON_DEPTH, (
                f"valid JSON refused although nested only {untrusted_json.json_depth(text)} deep: {exc}")
        return
    assert valid or not _plain(text), "untrusted_json.loads accepted text that json.loads refuses"
    if valid and _plain(text):
        assert json.dumps(value) == json.dumps(expected)


@budget(60)
@given(S.json_text(), st.integers(min_value=0, max_value=4))
def test_untrusted_json_refuses_exactly_the_texts_nested_too_deep(text, limit):
    """The depth bound holds both ways, under a limit small enough for generated texts to cross."""
    try:
        json.loads(text)
    except (ValueError, RecursionError):
        return
    if not _plain(text):
        return
    deep = untrusted_json.json_depth(text) > limit
    try:
        untrusted_json.loads(text, max_depth=limit)
    except json.JSONDecodeError as exc:
        assert deep, f"valid JSON nested {untrusted_json.json_depth(text)} deep refused under {limit}: {exc}"
        assert "levels deep" in str(exc) or "levels accepted" in str(exc), str(exc)
        return
    assert not deep, f"JSON nested {untrusted_json.json_depth(text)} deep accepted under a limit of {limit}"


# ------------------------------------------------------------------ mleaudit.audit.rules.strings.fold_strings

#: Pieces of a string literal's body: escapes CPython accepts, refuses or keeps, format and
#: percent fields (``{²}``: ``"²".isdigit()`` but ``int("²")`` raises), non-ASCII letters.
STRING_PIECES = (
    "\\x", "\\x4", "\\x41", "\\u", "\\u12", "\\ud800", "\\udfff", "\\U0010ffff", "\\U00110000",
    "\\U0001F600", "\\N{", "\\N{LATIN SMALL LETTER A}", "\\N{NO SUCH NAME}", "\\N{}", "\\777", "\\0", "\\8",
    "\\d", "\\\\", "\\'", '\\"', "{", "}", "{{", "}}", "{0}", "{1}", "{}", "{x}", "{²}", "{٣}", "{①}", "{0:>{1}}",
    "{x!r}", "{0[1]}", "%s", "%d", "%(a)s", "%%", "%", "ß", "İ", "ﬁ", "\ud800", "https://", "api.", "openai.com", "/v1",
    "aGVsbG8=", "68656c6c6f", "moc", " ", "a", "Z", "9",
)
string_body = st.lists(st.one_of(st.sampled_from(STRING_PIECES), S.word), max_size=6).map("".join)
python_string = st.one_of(
    st.builds(lambda prefix, quote, body: f"{prefix}{quote}{body}{quote}",
              st.sampled_from(["", "", "r", "b", "f", "rb", "u", "F"]),
              st.sampled_from(["'", '"', "'''", '"""']),
              string_body),
    st.builds(lambda prefix, quote, body: f"{prefix}{quote}{body}{quote}",
              st.sampled_from(["", "f"]), st.sampled_from(["'", '"']), S.short_text),
    st.sampled_from(["A", "B", "url", "x", "name"]),
)
python_expression = st.recursive(
    python_string,
    lambda inner: st.one_of(
        st.builds(lambda a, b: f"{a} + {b}", inner, inner),
        st.builds(lambda a, b: f"{a} {b}", inner, inner),
        st.builds(lambda a, b: f"{a} % ({b},)", inner, inner),
        st.builds(lambda a, b: f"{a} / {b}", inner, inner),
        st.builds(lambda a, items: f"{a}.join([{', '.join(items)}])", inner, st.lists(inner, max_size=3)),
        st.builds(lambda a, args: f"{a}.format({', '.join(args)})", inner, st.lists(inner, max_size=3)),
        st.builds(lambda a, m: f"{a}.{m}()", inner, st.sampled_from(["upper", "lower", "strip", "encode", "decode"])),
        st.builds(lambda a, b, c: f"{a}.replace({b}, {c})", inner, inner, inner),
        st.builds(lambda f, a: f"{f}({a})", st.sampled_from([
            "base64.b64decode", "base64.urlsafe_b64decode", "bytes.fromhex", "str", "quote", "os.path.join",
            "Path", "urljoin"]), inner),
        st.builds(lambda a, c: f"codecs.decode({a}, {c})", inner, st.sampled_from(["'rot13'", "'rot_13'", "'hex'", "x"])),
        st.builds(lambda a: f"{a}[::-1]", inner),
        st.builds(lambda a: f"({a})", inner),
        st.builds(lambda a: f"f'{{{a}}}'", inner),
    ),
    max_leaves=10,
)
#: One string method or decoder applied to a literal: each folding rule on its own, so that
#: every branch is reached often (the nested expressions below reach them rarely).
python_call = st.one_of(
    st.builds(lambda base, args: f"x = {base}.format({', '.join(args)})", python_string,
              st.lists(st.one_of(python_string, st.sampled_from(["1", "y", "*a", "k=v", "z='q'"])), max_size=3)),
    st.builds(lambda base, args: f"x = {base} % ({', '.join(args)},)", python_string, st.lists(python_string, max_size=3)),
    st.builds(lambda base, method, args: f"x = {base}.{method}({', '.join(args)})", python_string,
              st.sampled_from(["join", "replace", "upper", "lower", "strip", "encode", "decode"]),
              st.lists(python_string, max_size=2)),
    st.builds(lambda fn, arg: f"x = {fn}({arg})", st.sampled_from([
        "base64.b64decode", "b64decode", "base64.urlsafe_b64decode", "bytes.fromhex", "str", "quote", "unquote",
        "os.path.join", "Path", "urljoin", "codecs.decode"]), python_string),
)
python_source = st.one_of(
    st.lists(python_call, min_size=1, max_size=3).map("\n".join),
    st.lists(st.builds(lambda name, expr: f"{name} = {expr}", st.sampled_from(["A", "B", "url", "x"]), python_expression),
             max_size=5).map("\n".join),
    S.nasty_text,
    st.builds(lambda depth: "x = " + "(" * depth + "'a'" + ")" * depth, st.sampled_from([10, 70, 500, 3000])),
    st.builds(lambda depth: "x = " + " + ".join(["'a'"] * depth), st.sampled_from([10, 300, 3000])),
)
bash_source = st.one_of(
    st.lists(st.one_of(
        st.builds(lambda n, v: f"{n}={v}", st.sampled_from(["H", "U", "X"]), S.short_text),
        st.builds(lambda v: f"curl \"https://$H/{v}\"", S.short_text),
        st.builds(lambda v: f"echo $'{v}'", st.sampled_from(["\\x41", "\\u12", "\\ud800", "\\U00110000", "\\N{x}", "\\"])),
        st.builds(lambda v: f"echo '{v}' \"${{H}}{v}\" a\\ b", S.short_text),
        S.short_text,
    ), max_size=6).map("\n".join),
    S.nasty_text,
)


def _check_folded(text, folded):
    for item in folded:
        assert 0 <= item.start <= item.end <= len(text), f"offsets {item.start}..{item.end} outside the text"
        assert isinstance(item.value, str) and len(item.value) <= MAX_VALUE_CHARS
        assert encodes_utf8(item.value), f"folded value does not encode as UTF-8: {item.value!r:.200}"
        for start, end, _source in item.segments:
            assert 0 <= start < end <= len(item.value), f"segment {start}..{end} outside the value"


@isolated
@budget(150)
@given(python_source)
def test_fold_strings_python_never_raises(text):
    folded, _ = call(fold_strings, text, "python", what="fold_strings")  # documented as total
    _check_folded(text, folded)


@isolated
@budget(50)
@given(bash_source)
def test_fold_strings_bash_never_raises(text):
    folded, _ = call(fold_strings, text, "bash", what="fold_strings")  # documented as total
    _check_folded(text, folded)


# ------------------------------------------------------------------ terminal_safe

_UNSAFE = ("Cc", "Cf", "Zl", "Zp", "Cs")


@budget(80)
@given(st.one_of(S.nasty_text, st.text(alphabet=S.any_char)), st.booleans())
def test_terminal_safe_leaves_no_control_character(text, keep_newlines):
    with time_limit(what="terminal_safe"):
        shown = terminal_safe(text, keep_newlines=keep_newlines)
    assert encodes_utf8(shown)
    kept = {"\n", "\t"} if keep_newlines else set()
    bad = sorted({ch for ch in shown if unicodedata.category(ch) in _UNSAFE and ch not in kept})
    assert not bad, f"terminal_safe left {[hex(ord(c)) for c in bad]} in {shown!r:.200}"
    harmless = all(unicodedata.category(ch) not in _UNSAFE or ch in kept for ch in text)
    if harmless:
        assert shown == text, "terminal_safe changed text that holds no control, format or separator character"


@budget(30)
@given(S.json_value)
def test_terminal_safe_takes_any_object(value):
    shown = terminal_safe(value)
    assert encodes_utf8(shown)
    assert not any(unicodedata.category(ch) in _UNSAFE for ch in shown)
