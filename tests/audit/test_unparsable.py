"""``surely_a_syntax_error``: a parse it spares would have found a syntax error, every time.

Telling a file's kind by its content skips the tree-sitter parse of a text the check says cannot
parse without an error; a wrong "surely" would turn Python source into a log the code rules
never see. The check is held against tree-sitter itself: on generated texts built from the
tokens whose reading depends on context (string prefixes, quotes, backslashes, keywords and soft
keywords, brackets, comments, line breaks) and on real files.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mleaudit.audit.run import classify_content, python_by_content
from mleaudit.audit.run import sniffing
from mleaudit.audit.run.unparsable import surely_a_syntax_error

PIECES = (
    "Enabled", "Tools", "x", "foo", "Step", "0", "1", "1.", "0x1f", "1e5", "e5", "_", "print", "exec", "match", "case",
    "type", "lambda", "not", "in", "is", "if", "else", "as", "for", "import", "from", "async", "await", "None", "def",
    "class", "f", "r", "b", "rb", "u", "fr", "t", " ", " ", "\t", "\n", "\n", "\r", "\r\n", "\\", "\\\n", "'", '"',
    "`", "'''", '"""', "'a b'", '"c d"', "'it''s'", "#", "# a b", "(", ")", "[", "]", "{", "}", ",", ":", ";", "=",
    "==", "<", ">", "!", "!=", ".", "...", "*", "**", "@", "-", "+", "%", "/", "|", "&", "^", "~", "é", "\x0c", "\ufeff",
    "\udfff", ":=", "->",
)
texts = st.lists(st.sampled_from(PIECES), max_size=30).map("".join)
#: Lines of tokens between single blanks, which is where two names in a row are looked for.
WORDS = ("x", "y", "Tools", "print", "exec", "match", "case", "type", "_", "lambda", "not", "in", "is", "if", "else",
         "as", "for", "from", "import", "await", "async", "yield", "del", "global", "raise", "return", "None", "True",
         "with", "assert", "pass", "def", "class", "while", "and", "or", "1", "=", ":", "(", ")", "[", "]", ",", "*",
         "f'{x}'", "'a b'", "rb'c'", "#", "->", "@", "<>", ">>")
token_lines = st.lists(st.lists(st.sampled_from(WORDS), min_size=1, max_size=8).map(" ".join)
                       | st.sampled_from(PIECES), max_size=5).map("\n".join)


def _has_error(text: str) -> bool:
    return sniffing._python_tree(text).root_node.has_error


@settings(max_examples=3000, deadline=None)
@given(texts | token_lines)
def test_surely_means_the_parse_finds_an_error(text):
    if surely_a_syntax_error(text):
        assert _has_error(text)


@pytest.mark.parametrize("text", [
    "Enabled Tools in Prompt:['List Files']\nStep 0:\n", "\n===================prompt=====================\nhi\n",
    "<!doctype html>\n<html>\n", "id: x\nname: Nomad2018 Predicting Transparent Conductors\n",
    "Namespace(task='house-price', log_dir='single_exp_logs/x')\nlog_dir single_exp_logs/x\n",
])
def test_prose_logs_are_told_without_a_parse(text):
    assert surely_a_syntax_error(text) and _has_error(text)


@pytest.mark.parametrize("text", [
    "import os\nprint(os.getcwd())\n", "print 'x'\n", "exec 'x'\n", "match x:\n    case y:\n        pass\n",
    "type X = int\n", "f = lambda\\\n: 0\n", "x = f'{a b}'\n", "s = 'a b'\n", "s = '''\nEnabled Tools\n'''\n",
    "# Enabled Tools\nimport os\n", "x = y if z else w\n", "import a as b\n", "s = rb'a b'\n", "x = (a,\n  b)\n",
    "not_python = 'a' \\\n  'b c'\n",
])
def test_python_is_never_told_an_error(text):
    assert not surely_a_syntax_error(text)


def test_real_python_files_are_never_told_an_error():
    import json

    files = sorted(Path(json.__file__).parent.parent.glob("*.py"))[:60]
    assert files
    for path in files:
        text = path.read_text(encoding="utf-8", errors="replace")
        if surely_a_syntax_error(text):
            assert _has_error(text), path


@settings(max_examples=300, deadline=None)
@given(texts, st.booleans(), st.booleans())
def test_python_by_content_as_with_the_parse(text, agent_folder, top):
    # the answer with the check, and with every text parsed
    parsed = _without_check(lambda: python_by_content(text, agent_folder, top))
    assert python_by_content(text, agent_folder, top) == parsed


@settings(max_examples=200, deadline=None)
@given(texts, st.sampled_from(["main_log", "agent_log/main_log", "code/peek", "config.yaml", "x.py_1"]))
def test_classify_content_as_with_the_parse(text, path):
    data = text.encode("utf-8", errors="surrogatepass")
    assert classify_content(path, data) == _without_check(lambda: classify_content(path, data))


def _without_check(call):
    original = sniffing.surely_a_syntax_error
    sniffing.surely_a_syntax_error = lambda text: False
    try:
        return call()
    finally:
        sniffing.surely_a_syntax_error = original
