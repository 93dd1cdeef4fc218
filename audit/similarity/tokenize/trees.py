"""Dolos's tokens of a syntax tree, with the region of source each token stands for.

The walk over the tree (:func:`_walk`) is the only per-node Python work: it records each named
node's kind, byte range and parent, and the order in which nodes open and close; the token
stream and the regions are then assembled with numpy (:func:`_assemble`). Code is parsed from
UTF-16 text, as Dolos parses it (:func:`tokenize_tree_utf16`); :func:`tokenize_text` is the
entry point for a text in any language.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import tree_sitter

from mleaudit.audit.parsing import LANGUAGES, ParsedFile, get_parser, parser_safe
from mleaudit.audit.similarity.tokenize.chars import tokenize_chars
from mleaudit.audit.similarity.tokenize.kinds import _CLOSE_CODE, _OPEN_CODE, _kind_table, _KindTable
from mleaudit.audit.similarity.tokenize.tokenized_file import TokenizedFile, _non_decreasing, line_starts
from mleaudit.audit.similarity.winnow.int_pool import _int_objects

__all__ = ["tokenize_text", "tokenize_tree", "tokenize_tree_utf16"]


def _walk(root: tree_sitter.Node) -> tuple[list[int], list[int], list[int], list[int], list[int]]:
    """Dolos's pre-order walk: the root, then recursively the named children of each node.

    Returns, per named node in pre-order, its kind id, start and end byte and the index of its
    parent (-1 for the root), and the walk's events in order: ``i`` when node ``i`` opens,
    ``~i`` when it closes. Anonymous nodes are not descended into, as Dolos reads
    ``namedChildren``. The walk uses a tree cursor and no recursion: deeply nested expressions
    (long chains of ``+``) go past Python's recursion limit.
    """
    kinds: list[int] = []
    starts: list[int] = []
    ends: list[int] = []
    parents: list[int] = []
    events: list[int] = []
    add_kind, add_start, add_end = kinds.append, starts.append, ends.append
    add_parent, add_event = parents.append, events.append
    cursor = root.walk()
    first_child, next_sibling, up = cursor.goto_first_child, cursor.goto_next_sibling, cursor.goto_parent
    ancestors: list[int] = []  # the parents of the open named nodes, innermost last
    parent = -1
    count = 0
    while True:
        node = cursor.node
        if node.is_named:
            add_kind(node.kind_id)
            add_start(node.start_byte)
            add_end(node.end_byte)
            add_parent(parent)
            add_event(count)
            if first_child():
                ancestors.append(parent)
                parent = count
                count += 1
                continue
            add_event(~count)
            count += 1
        while not next_sibling():
            if not up():
                return kinds, starts, ends, parents, events
            add_event(~parent)
            parent = ancestors.pop()


@dataclass(frozen=True, slots=True)
class _Tokens:
    """A token stream as arrays: codes of a :class:`_KindTable`, regions in the tree's units."""

    codes: np.ndarray
    starts: np.ndarray
    ends: np.ndarray
    table: _KindTable


def _assemble(root: tree_sitter.Node, table: _KindTable) -> _Tokens:
    """Dolos's tokens of the tree under ``root``, with regions in the tree's offsets.

    Every named node writes ``"("`` and its type when it opens and ``")"`` when it closes,
    except comments, which write nothing. ``"("`` and the type cover the node from its start
    to the start of its first named child (its end when it has none; the minimum over the
    children, as Dolos takes it); ``")"`` is the empty region at the node's end.
    """
    kinds, starts, ends, parents, events = _walk(root)
    kind_codes = table.codes(np.array(kinds, dtype=np.int64))
    node_start = np.array(starts, dtype=np.int64)
    node_end = np.array(ends, dtype=np.int64)
    region_end = node_end.copy()
    if len(kinds) > 1:
        np.minimum.at(region_end, np.array(parents[1:], dtype=np.int64), node_start[1:])

    event = np.array(events, dtype=np.int64)
    opens = event >= 0
    node = np.where(opens, event, ~event)
    keep = table.writes[kind_codes[node]]
    opens, node = opens[keep], node[keep]
    width = np.where(opens, 2, 1)  # "(" and the type, or ")"
    first = np.cumsum(width) - width
    total = int(width.sum())
    codes = np.empty(total, dtype=np.int64)
    token_node = np.empty(total, dtype=np.int64)
    codes[first] = np.where(opens, _OPEN_CODE, _CLOSE_CODE)
    token_node[first] = node
    type_at = first[opens] + 1
    codes[type_at] = kind_codes[node[opens]]
    token_node[type_at] = node[opens]
    closing = codes == _CLOSE_CODE
    token_start = np.where(closing, node_end[token_node], node_start[token_node])
    token_end = np.where(closing, node_end[token_node], region_end[token_node])
    return _Tokens(codes=codes, starts=token_start, ends=token_end, table=table)


def _tokenized(path: str, language: str, text: str, tokens: _Tokens, has_error: bool) -> TokenizedFile:
    """The :class:`TokenizedFile` of token arrays whose regions are already character offsets."""
    return TokenizedFile(
        path=path,
        language=language,
        text=text,
        tokens=tuple(tokens.table.names[tokens.codes].tolist()),
        starts=tuple(_int_objects(tokens.starts)),
        ends=tuple(_int_objects(tokens.ends)),
        has_error=has_error,
        _lines=line_starts(text),
        _ordered=_non_decreasing(tokens.starts) and _non_decreasing(tokens.ends),
        _hashes=tokens.table.hashes[tokens.codes],
    )


def _code_points(text: str) -> np.ndarray:
    return np.frombuffer(text.encode("utf-32-le", errors="surrogatepass"), dtype=np.uint32)


def _utf8_to_chars(text: str, offsets: np.ndarray) -> np.ndarray:
    """Character offsets of UTF-8 byte offsets into ``text`` (a byte inside a character maps to
    that character; offsets at or past the end map to ``len(text)``)."""
    points = _code_points(text)
    size = 1 + (points >= 0x80) + (points >= 0x800) + (points >= 0x10000)
    char_starts = np.cumsum(size) - size
    chars = np.searchsorted(char_starts, offsets, side="right") - 1
    return np.where(offsets >= int(size.sum()), len(text), chars)


def _utf16_to_chars(text: str, offsets: np.ndarray) -> np.ndarray:
    """Character offsets of UTF-16 byte offsets into ``text``."""
    units = offsets // 2
    points = _code_points(text)
    astral = points >= 0x10000
    if not astral.any():
        return units
    # one entry per code unit: the character it belongs to, then len(text) for the end
    owner = np.append(np.repeat(np.arange(len(text)), 1 + astral), len(text))
    return owner[units]


def tokenize_tree(parsed: ParsedFile, path: str) -> TokenizedFile:
    """Dolos's node-type tokens of a parsed file.

    Parameters
    ----------
    parsed : ParsedFile
        Output of :func:`mleaudit.audit.parsing.parse`; trees with ``ERROR`` nodes are tokenized as they are.
    path : str
        Recorded on the result and on every span.

    Returns
    -------
    TokenizedFile
        Three tokens per named, non-comment node (``"("``, type, ``")"``) in pre-order.

    Examples
    --------
    >>> from mleaudit.audit.parsing import parse
    >>> tokenize_tree(parse("x = 1\\n", "python"), "a.py").tokens[:6]
    ('(', 'module', '(', 'expression_statement', '(', 'assignment')
    """
    tokens = _assemble(parsed.root, _kind_table(parsed.language))
    if not parsed.text.isascii():
        tokens = _Tokens(
            codes=tokens.codes,
            starts=_utf8_to_chars(parsed.text, tokens.starts),
            ends=_utf8_to_chars(parsed.text, tokens.ends),
            table=tokens.table,
        )
    return _tokenized(path, parsed.language, parsed.text, tokens, parsed.has_error)


def tokenize_tree_utf16(text: str, language: str, path: str) -> TokenizedFile:
    """Tokens of ``text`` parsed as UTF-16, the encoding in which Dolos hands text to tree-sitter.

    Tree-sitter's error recovery weighs the input it skips by its length in bytes, so a file
    with syntax errors can get a different tree from UTF-16 input than from UTF-8 input (a
    ``MISSING`` newline instead of an ``ERROR`` node, for example); valid code gets the same tree.
    Dolos runs on Node.js, which passes JavaScript's UTF-16 strings to tree-sitter.

    Parameters
    ----------
    text : str
        Source code.
    language : str
        A key of :data:`mleaudit.audit.parsing.LANGUAGES`.
    path : str
        Recorded on the result.

    Returns
    -------
    TokenizedFile
        Offsets converted to characters of ``text``.
    """
    data = parser_safe(text, language).encode("utf-16-le", errors="surrogatepass")
    tree = get_parser(language).parse(data, encoding="utf16le")
    tokens = _assemble(tree.root_node, _kind_table(language))
    tokens = _Tokens(
        codes=tokens.codes,
        starts=_utf16_to_chars(text, tokens.starts),
        ends=_utf16_to_chars(text, tokens.ends),
        table=tokens.table,
    )
    return _tokenized(path, language, text, tokens, tree.root_node.has_error)


def tokenize_text(text: str, language: str, path: str) -> TokenizedFile:
    """Parse ``text`` with grammar ``language`` and return its Dolos tokens.

    Parameters
    ----------
    text : str
        Source code (untrusted: parsed, never run).
    language : str
        A grammar name from :data:`mleaudit.audit.parsing.LANGUAGES`, or ``"chars"`` for character tokens.
    path : str
        Recorded on the result and on every span.

    Returns
    -------
    TokenizedFile

    Raises
    ------
    KeyError
        If ``language`` is neither a known grammar nor ``"chars"``.
    """
    if language == "chars":
        return tokenize_chars(text, path)
    if language not in LANGUAGES:
        raise KeyError(f"{path}: unknown language {language!r}; known: chars, {', '.join(sorted(LANGUAGES))}")
    # One UTF-16 parse: the tree Dolos gets, also for broken code (see tokenize_tree_utf16).
    return tokenize_tree_utf16(text, language, path)
