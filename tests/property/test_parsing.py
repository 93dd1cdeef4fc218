"""Code parsing: ``mleaudit.audit.parsing.parse`` on any Python or bash text.

Audited code is parsed in-process by tree-sitter's C parsers. ``parse`` is documented to always
return a ``ParsedFile``, also for broken code, and to raise only ``KeyError`` for an unknown
language; so on any text it returns, its text encodes as UTF-8 with the offsets unchanged, and
the process survives (the property runs in a forked process, so that a crash fails it).
"""

from __future__ import annotations

import hashlib
import json
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from mleaudit.audit.parsing import ParsedFile, parse
from tests.property import strategies as S
from tests.property.support import budget, call, encodes_utf8, isolated

REPO = Path(__file__).resolve().parents[2]

#: Text for a grammar: code-like fragments, brackets and quotes the grammars' external scanners
#: track (here-documents, ``${``, braces, triple quotes), and any code point, the planes past
#: the BMP included (tags, private use, unassigned).
code_text = st.lists(
    st.one_of(
        st.sampled_from(["{", "}", "${", "$(", "((", "[[", "<<EOF\n", "<<-'X'\n", "EOF\n", '"', "'", "`", '"""', "f'{",
                         "\\\n", "#", "echo ", "def f():\n    ", "if x:\n", "\t", "\n", " "]),
        st.characters(exclude_categories=()),
        st.characters(min_codepoint=0x10000),
        # A token a scanner acts on, right before an unusual code point.
        st.builds(lambda token, ch: token + ch, st.sampled_from(["{", "}", "$", "${", "<<", '"', "'", "#", "\\", "`", "f'"]),
                  st.characters(min_codepoint=0x80, exclude_categories=())),
        S.piece,
    ),
    max_size=12,
).map("".join)


@isolated
@budget(200)
@given(code_text, st.sampled_from(["python", "bash"]))
def test_parse_returns_for_any_text_and_never_crashes(text, language):
    parsed, _ = call(parse, text, language, what=f"parse(..., {language!r})")
    assert isinstance(parsed, ParsedFile)
    assert len(parsed.text) == len(text) and encodes_utf8(parsed.text)
    assert isinstance(parsed.has_error, bool)


# ------------------------------------------------------------------ a fresh process per batch

_PARSE_ALL = """
import json, sys
from mleaudit.audit.parsing import parse
for text in json.load(open(sys.argv[1], encoding="utf-8")):
    for language in ("python", "bash"):
        parse(text, language)
"""
#: Runs of a batch: a read past the end of a table crashes a fresh process only when the address
#: it lands on is unmapped, which address-space randomisation makes a matter of chance.
TRIES = 3


_OUTCOMES: dict[str, int | None] = {}


def _crashes(texts: list[str]) -> int | None:
    """The signal that killed a fresh interpreter parsing ``texts`` (in any of :data:`TRIES` runs).

    Outcomes are remembered, so that Hypothesis's replay of a failing example sees the crash
    it saw the first time (a crash that depends on memory layout would otherwise read as flaky).
    """
    key = hashlib.sha256(json.dumps(texts).encode()).hexdigest()
    if key not in _OUTCOMES:
        _OUTCOMES[key] = _run_batch(texts)
    return _OUTCOMES[key]


def _run_batch(texts: list[str]) -> int | None:
    with tempfile.TemporaryDirectory() as folder:
        batch = Path(folder) / "texts.json"
        batch.write_text(json.dumps(texts), encoding="utf-8")
        for _ in range(TRIES):
            result = subprocess.run([sys.executable, "-c", _PARSE_ALL, str(batch)], capture_output=True, timeout=120,
                                    cwd=REPO)
            if result.returncode < 0:
                return -result.returncode
            assert result.returncode == 0, result.stderr.decode("utf-8", "replace")[-2000:]
    return None


#: Short texts (no long runs), so that a failing batch prints in a few lines: scanner tokens, a
#: token right before an unusual code point (often past the BMP), short nasty text.
_TOKENS = ["{", "}", "$", "${", "<<", '"', "'", "#", "\\", "`", "[", "("]
short_code_text = st.lists(
    st.one_of(
        st.sampled_from(["{", "}", "${", "$(", "((", "[[", "<<EOF\n", "EOF\n", '"', "'", "`", "\\\n", "#", "echo ", "\n"]),
        st.builds(lambda token, ch: token + ch, st.sampled_from(_TOKENS), st.characters(min_codepoint=0x80, exclude_categories=())),
        st.builds(lambda token, ch: token + ch, st.sampled_from(_TOKENS), st.characters(min_codepoint=0x10000)),
        S.short_text,
    ),
    max_size=6,
).map("".join)


@budget(5, deep=100, shrink=False)
@given(st.lists(short_code_text, min_size=60, max_size=60))
def test_parsing_never_crashes_a_fresh_process(texts):
    """Each example parses 60 texts with both grammars in a new interpreter (shrinking is off:
    a crash is a matter of chance; the crashing text is found by running the texts one by one)."""
    crashed = _crashes(texts)
    if crashed is None:
        return
    culprit = next((text for text in texts if _crashes([text]) is not None), None)
    name = signal.Signals(crashed).name
    raise AssertionError(f"parsing crashed a fresh process with {name}; "
                         + (f"the text {culprit!r} does it alone" if culprit is not None else "no single text does it alone"))
