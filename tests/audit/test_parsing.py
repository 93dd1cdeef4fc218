"""Tree-sitter registry: every language parses, broken code still yields a tree."""

import pytest

from mleaudit.audit.parsing import LANGUAGES, language_for_path, parse

SAMPLES = {"python": "import os\nprint(os.getcwd())\n", "bash": "ls -la /home/data | head\n"}


@pytest.mark.parametrize("language", sorted(LANGUAGES))
def test_each_language_parses(language):
    parsed = parse(SAMPLES[language], language)
    assert not parsed.has_error
    assert parsed.root.child_count > 0


def test_broken_code_is_parsed_not_rejected():
    parsed = parse("import os\ndef f(:\n    return (\nprint(os.name)\n", "python")
    assert parsed.has_error
    assert parsed.root.type == "module"
    assert parsed.root.children[0].type == "import_statement"


def test_spans_use_character_offsets_for_non_ascii():
    text = 'x = "héllo"\ny = open("/private/test.csv")\n'
    parsed = parse(text, "python")
    call = parsed.root.children[1].children[0].children[2]
    span = parsed.span(call, "a.py")
    assert text[span.start_byte : span.end_byte] == 'open("/private/test.csv")'
    assert span.start_line == 2


def test_language_for_path():
    assert language_for_path("code/train.py") == "python"
    assert language_for_path("run.SH") == "bash"
    assert language_for_path("notes.md") is None


def test_unknown_language():
    with pytest.raises(KeyError, match="unknown language 'cobol'"):
        parse("x", "cobol")
