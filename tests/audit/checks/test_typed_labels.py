"""Label lists, label strings and encoded literals in code that writes a submission."""

from __future__ import annotations

import base64
import random
import time
import zlib

import pytest

from mleaudit.audit.rules.context import RunContext
from mleaudit.audit.checks.typed import encoded_prediction_data, typed_prediction_overrides
from mleaudit.audit.parsing import PathologicalTree
from mleaudit.audit.units import Actor, CodeUnit

WRITE = "\nsub.to_csv('/home/submission/submission.csv', index=False)\n"


def _unit(text: str, path: str = "code/main.py") -> CodeUnit:
    return CodeUnit(path=path, language="python", text=text, actor=Actor.AGENT)


def _shapes(tmp_path, text: str, rows: int | None = None, **params) -> list[str]:
    sample = None
    if rows is not None:
        sample = tmp_path / "sample_submission.csv"
        sample.write_text("id,label\n" + "".join(f"{i},0\n" for i in range(rows)))
    ctx = RunContext(root=tmp_path, sample_submission_path=sample, code_units=(_unit(text),))
    return [m.values["shape"] for m in typed_prediction_overrides(ctx, **params)]


def _labels(n: int, alphabet: str = "0123456789") -> list[str]:
    return [alphabet[(i * 7 + i // 3) % len(alphabet)] for i in range(n)]


def test_label_list_as_long_as_the_test_rows(tmp_path):
    text = f"PRED = {_labels(150)!r}\nsub['label'] = PRED" + WRITE
    assert _shapes(tmp_path, text, rows=150) == ["label list, one per test row"]
    assert _shapes(tmp_path, text, rows=151) == []  # a known row count that differs
    assert _shapes(tmp_path, text) == ["label list, no row count known"]
    assert _shapes(tmp_path, text, min_labels=200) == []


def test_short_list_counts_only_against_a_known_row_count(tmp_path):
    text = f"PRED = {_labels(40, 'AB')!r}\nsub['label'] = PRED" + WRITE
    assert _shapes(tmp_path, text) == []
    assert _shapes(tmp_path, text, rows=40) == ["label list, one per test row"]
    # without a submission write, a list matches only when its length is the row count
    assert _shapes(tmp_path, f"PRED = {_labels(40, 'AB')!r}\n", rows=40) == ["label list, one per test row"]
    assert _shapes(tmp_path, f"PRED = {_labels(150)!r}\n") == []


@pytest.mark.parametrize("use", [
    "list(S)", "list(map(int, S))", "[int(c) for c in S]", "tuple(S.strip())", "np.array(list(S.upper()))",
])
def test_label_string_read_one_character_at_a_time(tmp_path, use):
    text = f"S = '{''.join(_labels(200))}'\nsub['label'] = {use}" + WRITE
    assert _shapes(tmp_path, text) == ["label string, one label a character, no row count known"]


def test_label_string_split_by_a_separator(tmp_path):
    inline = "sub['label'] = '" + ",".join(_labels(120, "xyz")) + "'.split(',')" + WRITE
    assert _shapes(tmp_path, inline) == ["label string, split into labels, no row count known"]
    loop = "S = '" + "".join(_labels(120, "01")) + "'\nfor i, c in enumerate(S):\n    sub.loc[i, 'label'] = c" + WRITE
    assert _shapes(tmp_path, loop) == ["label string, one label a character, no row count known"]


@pytest.mark.parametrize("text", [
    # names: distinct values
    f"CLASSES = {[f'breed_{i}' for i in range(120)]!r}" + WRITE,
    f"FEATURES = {[f'f{i}' for i in range(1000)]!r}" + WRITE,
    # a string that is neither split nor iterated, a docstring, prose iterated
    f"S = '{''.join(_labels(200))}'\nprint(len(S))" + WRITE,
    f"'''{' '.join(_labels(200))}'''" + WRITE,
    "NOTE = '" + " ".join(["word"] * 150) + "'\nchars = list(NOTE)" + WRITE,
    # long items, a vocabulary, a grid
    f"TEXTS = {['a sentence much longer than any class label, ' + str(i % 3) for i in range(150)]!r}" + WRITE,
    "VOCAB = 'abcdefghijklmnopqrstuvwxyz'\nindex = {c: i for i, c in enumerate(VOCAB)}" + WRITE,
    "GRID = {'opt': ['adam', 'sgd'] * 60}" + WRITE,
    # f-strings and mixed lists
    "S = f'{x}" + "1" * 200 + "'\nlabels = list(S)" + WRITE,
    f"MIXED = {[*_labels(150)[:-1], 3]!r}" + WRITE,
])
def test_names_prose_and_settings_are_not_labels(tmp_path, text):
    assert _shapes(tmp_path, text) == []


def _encoded(tmp_path, text: str, **params) -> list[dict]:
    ctx = RunContext(root=tmp_path, code_units=(_unit(text),))
    return [m.values for m in encoded_prediction_data(ctx, **params)]


def test_encoded_literal_decoded_where_the_submission_is_written(tmp_path):
    blob = base64.b64encode(zlib.compress(random.Random(1).randbytes(600), 1)).decode()
    assert len(blob) > 512
    direct = f"import base64, zlib\nopen('submission.csv', 'wb').write(zlib.decompress(base64.b64decode('{blob}')))\n"
    [found] = _encoded(tmp_path, direct)
    assert found["encoding"] == "base64" and found["decoder"] == "zlib.decompress"
    named = f"W = '{blob}'\ndata = base64.b64decode(W.encode())" + WRITE
    assert [v["decoder"] for v in _encoded(tmp_path, named)] == ["base64.b64decode"]
    raw = "P = b'" + "\\x80" * 200 + "'\nsub = pd.DataFrame(pickle.loads(P))" + WRITE
    assert [v["encoding"] for v in _encoded(tmp_path, raw)] == ["bytes"]
    assert _encoded(tmp_path, named, min_chars=len(blob) + 10) == []


@pytest.mark.parametrize("text", [
    "W = '" + "QUJD" * 200 + "'\nicon = base64.b64decode(W)\n",  # no submission written
    "W = '" + "QUJD" * 200 + "'\nhtml = f'<img src={W}>'" + WRITE,  # never decoded
    "W = '" + "QUJD" * 100 + "'\nx = base64.b64decode(W)" + WRITE,  # short
    "T = '" + "some words " * 100 + "'\nx = codecs.decode(T, 'rot13')" + WRITE,  # text, not an encoding
    "C = '" + "{\"a\": 1}, " * 100 + "'\ncfg = json.loads(C)" + WRITE,  # readable text
])
def test_icons_text_and_undecoded_data_are_not_reported(tmp_path, text):
    assert _encoded(tmp_path, text) == []


@pytest.mark.parametrize("text", [
    "PRED = [" + ", ".join(["'1'", "'0'"] * 400_000) + "]" + WRITE,
    "S = '" + "10" * 4_000_000 + "'\nlabels = list(S)" + WRITE,
    "W = '" + "QUJD" * 2_000_000 + "'\nx = base64.b64decode(W)" + WRITE,
    "x = " + "(" * 5000 + "1" + ")" * 5000 + WRITE,
])
def test_checks_stay_fast_on_large_literals(tmp_path, text):
    ctx = RunContext(root=tmp_path, code_units=(_unit(text),))
    for check in (typed_prediction_overrides, encoded_prediction_data):
        start = time.perf_counter()
        try:
            check(ctx)
        except PathologicalTree:
            pass
        # a bound against quadratic work (hours at this size), not a speed target
        assert time.perf_counter() - start < 60.0, check.__name__


@pytest.mark.parametrize("params", [{"min_labels": 0}, {"max_distinct": True}, {"max_label_chars": "32"}])
def test_parameters_are_checked(tmp_path, params):
    with pytest.raises(ValueError):
        typed_prediction_overrides(RunContext(root=tmp_path), **params)
    with pytest.raises(ValueError):
        encoded_prediction_data(RunContext(root=tmp_path), min_chars=0)
