"""Dolos node-type tokens: the stream, the regions tokens map to, broken and non-ASCII code."""

from __future__ import annotations

import pytest

from audit.parsing import parse
from audit.similarity.tokenize import line_starts, tokenize_chars, tokenize_text, tokenize_tree

SOURCE = "import os\n# hi\ndef f(a, b=2):\n    return a+b  # c\n"

# Dolos 3.5.1's CodeTokenizer on SOURCE (tokens and, for "(" tokens, the region as
# 0-based (startRow, startCol, endRow, endCol)).
DOLOS_TOKENS = (
    "( module ( import_statement ( dotted_name ( identifier ) ) ) ( function_definition ( identifier ) "
    "( parameters ( identifier ) ( default_parameter ( identifier ) ( integer ) ) ) ( block ( return_statement "
    "( binary_operator ( identifier ) ( identifier ) ) ) ) ) )"
).split(" ")
DOLOS_REGIONS = {
    "module": (0, 0, 0, 0),
    "import_statement": (0, 0, 0, 7),
    "dotted_name": (0, 7, 0, 7),
    "function_definition": (2, 0, 2, 4),
    "parameters": (2, 5, 2, 6),
    "default_parameter": (2, 9, 2, 9),
    "integer": (2, 11, 2, 12),
    "block": (3, 4, 3, 4),
    "return_statement": (3, 4, 3, 11),
    "binary_operator": (3, 11, 3, 11),
}


def test_tokens_match_dolos_and_drop_comments() -> None:
    tokenized = tokenize_text(SOURCE, "python", "a.py")
    assert list(tokenized.tokens) == DOLOS_TOKENS
    assert "comment" not in tokenized.tokens
    assert len(tokenized.starts) == len(tokenized.ends) == len(tokenized.tokens)


def test_open_and_type_tokens_map_to_dolos_regions() -> None:
    tokenized = tokenize_text(SOURCE, "python", "a.py")
    for i, token in enumerate(tokenized.tokens):
        if token in DOLOS_REGIONS:
            span = tokenized.token_span(i)
            got = (span.start_line - 1, span.start_col - 1, span.end_line - 1, span.end_col - 1)
            assert got == DOLOS_REGIONS[token], token
            assert tokenized.token_span(i - 1) == span  # the "(" before the type shares it


def test_close_token_sits_at_node_end() -> None:
    tokenized = tokenize_text(SOURCE, "python", "a.py")
    # The last token closes the module, which ends at the end of the text.
    assert tokenized.tokens[-1] == ")"
    assert tokenized.starts[-1] == tokenized.ends[-1] == len(SOURCE)
    # The ")" of the import statement sits right after "import os".
    close_import = tokenized.tokens.index(")", tokenized.tokens.index("import_statement")) + 2
    assert tokenized.tokens[close_import] == ")" and tokenized.starts[close_import] == len("import os")


def test_tokens_span_covers_a_token_range() -> None:
    tokenized = tokenize_text(SOURCE, "python", "a.py")
    first = tokenized.tokens.index("function_definition") - 1
    span = tokenized.tokens_span(first, len(tokenized.tokens) - 2)
    assert (span.start_line, span.end_line) == (3, 4)
    assert SOURCE[span.start_byte : span.end_byte].startswith("def f(a, b=2):")
    with pytest.raises(IndexError, match="a.py: token range"):
        tokenized.tokens_span(5, 4)


def test_renaming_and_layout_do_not_change_tokens() -> None:
    a = tokenize_text("def f(x, y):\n    return x * y\n", "python", "a.py").tokens
    b = tokenize_text("def   mul( left ,right ) :\n\n\treturn left*right   # product\n", "python", "b.py").tokens
    assert a == b


def test_broken_code_follows_dolos_error_recovery() -> None:
    # IPython shell escapes left in a .py export. Dolos (Node.js) hands tree-sitter UTF-16 text;
    # these are its tokens for this input.
    text = "!kaggle competitions download -c spaceship-titanic\n!unzip -q spaceship-titanic.zip -d data\n"
    expected = (
        "( module ( ERROR ( type_conversion ) ( identifier ) ( identifier ) ) ( expression_statement "
        "( binary_operator ( identifier ) ( identifier ) ) ) ( expression_statement ( binary_operator "
        "( identifier ) ( identifier ) ) ) ( ERROR ( type_conversion ) ( binary_operator ( binary_operator "
        "( binary_operator ( identifier ) ( ERROR ( identifier ) ) ( identifier ) ) ( attribute ( identifier ) "
        "( identifier ) ) ) ( identifier ) ) ( identifier ) ) )"
    ).split(" ")
    tokenized = tokenize_text(text, "python", "nb.py")
    assert tokenized.has_error
    assert list(tokenized.tokens) == expected


@pytest.mark.parametrize("broken", [False, True])
def test_non_ascii_offsets_are_characters(broken: bool) -> None:
    prefix = "s = '😀 é'\n" + ("!pip install x\n" if broken else "")
    text = prefix + "value = compute(s)\n"
    tokenized = tokenize_text(text, "python", "u.py")
    assert tokenized.has_error is broken
    identifiers = [
        text[tokenized.starts[i] : tokenized.ends[i]] for i, t in enumerate(tokenized.tokens) if t == "identifier"
    ]
    assert identifiers[-3:] == ["value", "compute", "s"]
    assert tokenized.tokens[-1] == ")" and tokenized.ends[-1] == len(text)


def test_deep_nesting_does_not_hit_recursion_limit() -> None:
    text = "x = " + " + ".join(["a"] * 3000) + "\n"
    tokenized = tokenize_text(text, "python", "deep.py")
    assert tokenized.tokens.count("binary_operator") == 2999


def test_tokenize_tree_equals_tokenize_text_on_valid_code() -> None:
    assert tokenize_tree(parse(SOURCE, "python"), "a.py").tokens == tokenize_text(SOURCE, "python", "a.py").tokens


def test_bash_tokens_match_dolos() -> None:
    text = 'pip install -q timm && echo ok\nfor f in *.csv; do wc -l "$f"; done\nkaggle competitions download -c titanic # get data\n'
    # Dolos 3.5.1's tokens for this text with its bash grammar
    expected = (
        "( program ( list ( command ( command_name ( word ) ) ( word ) ( word ) ( word ) ) ( command ( command_name "
        "( word ) ) ( word ) ) ) ( for_statement ( variable_name ) ( word ) ( do_group ( command ( command_name "
        "( word ) ) ( word ) ( string ( simple_expansion ( variable_name ) ) ) ) ) ) ( command ( command_name "
        "( word ) ) ( word ) ( word ) ( word ) ( word ) ) )"
    ).split(" ")
    assert list(tokenize_text(text, "bash", "cmd.sh").tokens) == expected


def test_empty_text() -> None:
    tokenized = tokenize_text("", "python", "empty.py")
    assert tokenized.tokens == ("(", "module", ")")
    assert tokenized.token_span(0).start_line == 1


def test_unknown_language() -> None:
    with pytest.raises(KeyError, match="x.r: unknown language 'r'"):
        tokenize_text("x <- 1", "r", "x.r")


def test_char_tokens_skip_newlines() -> None:
    tokenized = tokenize_chars("ab\nc", "t.txt")
    assert tokenized.tokens == ("a", "b", "c")
    assert tokenized.token_span(2).start_line == 2
    assert tokenize_text("ab\nc", "chars", "t.txt").tokens == ("a", "b", "c")


def test_line_starts() -> None:
    assert line_starts("") == (0,)
    assert line_starts("a\n\nb") == (0, 2, 3)
