"""Dolos node-type tokens: the stream, the regions tokens map to, broken and non-ASCII code."""

from __future__ import annotations

import pytest

from mleaudit.audit.parsing import get_parser, parse
from mleaudit.audit.similarity.tokenize import line_starts, tokenize_chars, tokenize_text, tokenize_tree
from mleaudit.audit.similarity.winnow import hash_token

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


def _dolos_walk(root) -> tuple[list[str], list[int], list[int]]:
    """Dolos's CodeTokenizer.tokenizeNode, written plainly over ``named_children`` (offsets in
    the tree's own units); the specification the cursor walk and its numpy assembly must meet."""
    tokens: list[str] = []
    starts: list[int] = []
    ends: list[int] = []

    def visit(node) -> int:
        writes = "comment" not in node.type
        region_end = node.end_byte
        if writes:
            opened = len(tokens)
            tokens.extend(["(", node.type])
            starts.extend([node.start_byte] * 2)
            ends.extend([0, 0])
        for child in node.named_children:
            region_end = min(region_end, visit(child))
        if writes:
            ends[opened] = ends[opened + 1] = region_end
            tokens.append(")")
            starts.append(node.end_byte)
            ends.append(node.end_byte)
        return node.start_byte

    visit(root)
    return tokens, starts, ends


WALK_CASES = {
    "source": SOURCE,
    "broken": "!pip install -q timm\ndef f(:\n    return [1, 2\n%matplotlib inline\nx = )\n",
    "non_ascii": "s = 'é 中文 😀'  # ünïcode\r\nt = f(s, 'x\U0001F600y')\r\n",
    "nested_comments": "def f():\n    # one\n    if x:  # two\n        pass\n    # three\n",
    "empty": "",
}


@pytest.mark.parametrize("name", sorted(WALK_CASES))
@pytest.mark.parametrize("language", ["python", "bash"])
def test_tokens_and_regions_equal_a_plain_dolos_walk(name: str, language: str) -> None:
    text = WALK_CASES[name]
    tree = get_parser(language).parse(text.encode("utf-16-le", errors="surrogatepass"), encoding="utf16le")
    tokens, starts, ends = _dolos_walk(tree.root_node)
    # UTF-16 byte offsets -> characters (one code unit per character below U+10000)
    units = [i for i, ch in enumerate(text) for _ in range(2 if ord(ch) >= 0x10000 else 1)] + [len(text)]
    tokenized = tokenize_text(text, language, f"{name}.x")
    assert list(tokenized.tokens) == tokens
    assert list(tokenized.starts) == [units[b // 2] for b in starts]
    assert list(tokenized.ends) == [units[b // 2] for b in ends]
    assert tokenized.has_error == tree.root_node.has_error
    assert tokenized._hashes.tolist() == [hash_token(t) for t in tokenized.tokens]


def test_tokenize_tree_maps_utf8_offsets_to_characters() -> None:
    text = WALK_CASES["non_ascii"]
    parsed = parse(text, "python")
    tokens, starts, ends = _dolos_walk(parsed.root)
    tokenized = tokenize_tree(parsed, "u.py")
    assert list(tokenized.tokens) == tokens
    assert list(tokenized.starts) == [parsed.char_offset(b) for b in starts]
    assert list(tokenized.ends) == [parsed.char_offset(b) for b in ends]


def test_lone_surrogates_are_tokenized() -> None:
    # bytes decoded with errors="surrogateescape" leave lone surrogates in the text
    text = b"x = '\xff'\ny = 1\n".decode("utf-8", errors="surrogateescape")
    tokenized = tokenize_text(text, "python", "s.py")
    assert tokenized.tokens[-1] == ")" and tokenized.ends[-1] == len(text)
    assert "assignment" in tokenized.tokens


def test_offsets_share_int_objects() -> None:
    # offsets come from a shared pool, so a large corpus does not hold one int object per token
    text = "x = 1\n" * 200
    tokenized = tokenize_text(text, "python", "p.py")
    # the last integer and the assignment around it end at the same offset (> 256, so not one
    # of CPython's cached small ints): their ")" tokens hold the same int object
    integer = len(tokenized.tokens) - 1 - tokenized.tokens[::-1].index("integer")
    assert tokenized.tokens[integer + 1 : integer + 3] == (")", ")")
    assert tokenized.starts[integer + 1] == tokenized.starts[integer + 2] == len(text) - 1
    assert tokenized.starts[integer + 1] is tokenized.starts[integer + 2]
