"""Turn code into the token streams that the similarity engine fingerprints.

The tokens are Dolos's: a pre-order walk of the tree-sitter syntax tree that writes, for every
named node, ``"("``, the node's type, the tokens of its named children, and ``")"``. Identifiers,
literals and layout never reach the stream, only the shape of the tree, so renaming variables
or reformatting code leaves the tokens unchanged. Nodes whose type contains ``comment`` write no
tokens of their own (Dolos drops comments unless asked to keep them); their named children, if a
grammar had any, are still walked. Anonymous nodes (keywords, punctuation) are skipped.

Every token keeps the region of source it stands for, so a matching k-gram can be shown to a
reviewer:

- ``"("`` and the type token cover the node from its start up to the start of its first named
  child (the whole node when it has none), as Dolos's ``CodeTokenizer`` maps them;
- ``")"`` is an empty region at the node's end. Dolos maps it to the node's start, which makes a
  fragment that ends inside a long function stretch back to the ``def`` line; the end is where
  the closing token belongs, and the choice has no effect on any similarity figure.

Offsets are characters of the decoded text; lines and columns are 1-based (see
:class:`mleaudit.audit.model.Span`).

Code is parsed from UTF-16 text, as Dolos (on Node.js) parses it: tree-sitter's error recovery
weighs skipped input by its size in bytes, so the tree recovered from code with syntax errors
depends on the encoding (see :func:`tokenize_tree_utf16`). Valid code gets the same tree from
either encoding, so one parse serves both.

The recovered tree depends on the tree-sitter runtime too, not only on the grammar: the project
runs the 0.25 runtime, as Dolos 3.5.1 does (node ``tree-sitter`` 0.25). The 0.26 runtime recovers
differently from some IPython lines of notebook exports (``! mkdir train`` after ``%matplotlib
inline``, magics inside blocks or brackets, a lone ``%`` or ``!``), which costs or adds
fingerprints; ``tests/audit/similarity/test_ipython_parity.py`` holds Dolos's figures for magics
and shell escapes written every way.

The walk over the tree is the only per-node Python work: it records each named node's kind,
byte range and parent, and the order in which nodes open and close; the token stream, the
regions and the token hashes are then assembled with numpy. :func:`tokenize_hashes` walks
without the byte ranges, the parents or even a stack of open nodes (it records only which kind
opens and that a node closes) and returns the token hashes only, for pair figures that need
nothing else (``mleaudit similarity pairs``).

References
----------
Maertens, R. et al. (2022). Dolos: Language-agnostic plagiarism detection in source code.
*Journal of Computer Assisted Learning*, 38(4), 1046-1061. Dolos 3.5.1,
``lib/src/lib/tokenizer/codeTokenizer.ts``.
"""

from __future__ import annotations

import functools
import logging
from bisect import bisect_right
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np
import tree_sitter

from mleaudit.audit.model import Span
from mleaudit.audit.parsing import LANGUAGES, ParsedFile, get_language, get_parser, parser_safe
from mleaudit.audit.similarity.winnow.hashing import hash_token
from mleaudit.audit.similarity.winnow.int_pool import _int_objects

__all__ = [
    "TokenizedFile",
    "line_starts",
    "offsets_spans",
    "tokenize_chars",
    "tokenize_hashes",
    "tokenize_text",
    "tokenize_tree",
    "tokenize_tree_utf16",
]

logger = logging.getLogger(__name__)

OPEN = "("
CLOSE = ")"


def line_starts(text: str) -> tuple[int, ...]:
    """Character offsets where each line of ``text`` starts (index 0 is line 1).

    Examples
    --------
    >>> line_starts("ab\\ncd\\n")
    (0, 3, 6)
    """
    starts = [0]
    find = text.find
    pos = find("\n")
    while pos != -1:
        starts.append(pos + 1)
        pos = find("\n", pos + 1)
    return tuple(starts)


def offsets_spans(path: str, lines: Sequence[int], starts: Sequence[int], ends: Sequence[int]) -> list[Span]:
    """The :class:`Span` of each character range ``[starts[i], ends[i])`` of a text whose lines
    start at ``lines`` (:func:`line_starts`); equal to :meth:`TokenizedFile.offsets_span` of each,
    with the line numbers found by one ``numpy.searchsorted`` per side."""
    if not len(starts):
        return []
    line_array = np.asarray(lines, dtype=np.int64)
    start_array = np.asarray(starts, dtype=np.int64)
    end_array = np.asarray(ends, dtype=np.int64)
    start_lines = np.searchsorted(line_array, start_array, side="right")
    end_lines = np.searchsorted(line_array, end_array, side="right")
    start_cols = start_array - line_array[start_lines - 1] + 1
    end_cols = end_array - line_array[end_lines - 1] + 1
    return [
        Span(path=path, start_byte=start, end_byte=end, start_line=start_line, start_col=start_col,
             end_line=end_line, end_col=end_col)
        for start, end, start_line, start_col, end_line, end_col in zip(
            starts, ends, start_lines.tolist(), start_cols.tolist(), end_lines.tolist(), end_cols.tolist())
    ]


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class TokenizedFile:
    """A code text as a token stream, each token tied to a region of the text.

    Attributes
    ----------
    path : str
        POSIX path of the unit the text came from.
    language : str
        Grammar name (``"python"``, ``"bash"``) or ``"chars"`` for :func:`tokenize_chars`.
    text : str
        The tokenized text.
    tokens : tuple of str
        The token stream.
    starts, ends : tuple of int
        Same length as ``tokens``: 0-based, half-open character offsets into ``text`` of the
        region each token stands for.
    has_error : bool
        True when the parser recovered from syntax errors (the tokens include ``ERROR`` nodes).

    Notes
    -----
    Tokenizers also record :func:`~mleaudit.audit.similarity.winnow.hash_token` of every token (an
    unsigned 32-bit array, private), which the fingerprint index uses instead of hashing the
    token strings again.
    """

    path: str
    language: str
    text: str
    tokens: tuple[str, ...]
    starts: tuple[int, ...]
    ends: tuple[int, ...]
    has_error: bool = False
    _lines: tuple[int, ...] = ()
    _ordered: bool = False
    _hashes: Any = field(default=None, repr=False)

    def __len__(self) -> int:
        return len(self.tokens)

    def offsets_span(self, start: int, end: int) -> Span:
        """The :class:`Span` of the character range ``[start, end)`` of :attr:`text`."""
        lines = self._lines or line_starts(self.text)
        start_line = bisect_right(lines, start)
        end_line = bisect_right(lines, end)
        return Span(
            path=self.path,
            start_byte=start,
            end_byte=end,
            start_line=start_line,
            start_col=start - lines[start_line - 1] + 1,
            end_line=end_line,
            end_col=end - lines[end_line - 1] + 1,
        )

    def tokens_spans(self, firsts: Sequence[int], lasts: Sequence[int]) -> list[Span]:
        """:meth:`tokens_span` of each ``(first, last)``, line numbers looked up at once.

        Raises
        ------
        IndexError
            If a range is empty or outside the token stream.
        """
        n = len(self.tokens)
        if any(not 0 <= first <= last < n for first, last in zip(firsts, lasts)):
            raise IndexError(f"{self.path}: a token range outside 0..{n - 1}")
        if not self._ordered:
            return [self.tokens_span(first, last) for first, last in zip(firsts, lasts)]
        starts, ends = self.starts, self.ends
        return offsets_spans(self.path, self._lines or line_starts(self.text),
                             [starts[first] for first in firsts], [ends[last] for last in lasts])

    def token_span(self, index: int) -> Span:
        """The :class:`Span` of token ``index``."""
        return self.offsets_span(self.starts[index], self.ends[index])

    def tokens_span(self, first: int, last: int) -> Span:
        """The smallest :class:`Span` covering the regions of tokens ``first`` to ``last`` (inclusive).

        Raises
        ------
        IndexError
            If the range is empty or outside the token stream.
        """
        if not 0 <= first <= last < len(self.tokens):
            raise IndexError(f"{self.path}: token range [{first}, {last}] outside 0..{len(self.tokens) - 1}")
        if self._ordered:
            return self.offsets_span(self.starts[first], self.ends[last])
        return self.offsets_span(min(self.starts[first : last + 1]), max(self.ends[first : last + 1]))

    @property
    def spans(self) -> tuple[Span, ...]:
        """One :class:`Span` per token (built on demand: files have tens of thousands of tokens)."""
        return tuple(self.token_span(i) for i in range(len(self.tokens)))

    @property
    def line_offsets(self) -> tuple[int, ...]:
        """Character offsets where each line of :attr:`text` starts (:func:`line_starts`)."""
        return self._lines or line_starts(self.text)

    @property
    def ordered_regions(self) -> bool:
        """True when token regions never go backwards, so that the span of a token range runs
        from its first token's start to its last token's end."""
        if self._ordered or not self.tokens:
            return True
        return _non_decreasing(np.asarray(self.starts)) and _non_decreasing(np.asarray(self.ends))

    @property
    def token_hashes(self) -> np.ndarray:
        """:func:`~mleaudit.audit.similarity.winnow.hash_token` of every token, as an int64 array (the
        hashes the tokenizer recorded, else computed from :attr:`tokens`)."""
        hashes = self._hashes
        if hashes is not None and len(hashes) == len(self.tokens):
            return np.asarray(hashes, dtype=np.int64)
        return np.fromiter(map(hash_token, self.tokens), dtype=np.int64, count=len(self.tokens))

    @classmethod
    def from_arrays(
        cls,
        *,
        path: str,
        language: str,
        text: str,
        tokens: Sequence[str] = (),
        starts: Sequence[int] = (),
        ends: Sequence[int] = (),
        has_error: bool = False,
        line_offsets: Sequence[int] | None = None,
        token_hashes: np.ndarray | None = None,
    ) -> "TokenizedFile":
        """A :class:`TokenizedFile` from its parts (a stored token stream, a text-less stand-in).

        Parameters
        ----------
        path, language, text : str
            As the attributes. ``text`` may be ``""`` when only :meth:`offsets_span` is needed
            and ``line_offsets`` describes the original text.
        tokens : sequence of str
        starts, ends : sequence of int
            Character offsets of each token's region, as long as ``tokens``.
        has_error : bool
        line_offsets : sequence of int, optional
            Where each line of the original text starts (``line_starts(text)`` by default);
            must start with 0 and increase.
        token_hashes : ndarray, optional
            ``hash_token`` of each token, when already known.

        Returns
        -------
        TokenizedFile

        Raises
        ------
        ValueError
            If the lengths disagree or ``line_offsets`` does not start at 0 and increase.

        Examples
        --------
        >>> stand_in = TokenizedFile.from_arrays(path="k.py", language="python", text="", line_offsets=(0, 4))
        >>> stand_in.offsets_span(5, 7).start_line
        2
        """
        tokens, starts, ends = tuple(tokens), tuple(starts), tuple(ends)
        if not len(tokens) == len(starts) == len(ends):
            raise ValueError(f"{path}: {len(tokens)} tokens but {len(starts)} starts and {len(ends)} ends")
        if token_hashes is not None and len(token_hashes) != len(tokens):
            raise ValueError(f"{path}: {len(token_hashes)} token hashes for {len(tokens)} tokens")
        lines = tuple(int(x) for x in line_offsets) if line_offsets is not None else line_starts(text)
        if not lines or lines[0] != 0 or any(b <= a for a, b in zip(lines, lines[1:])):
            raise ValueError(f"{path}: line offsets must start at 0 and increase")
        ordered = not tokens or (_non_decreasing(np.asarray(starts)) and _non_decreasing(np.asarray(ends)))
        return cls(path=path, language=language, text=text, tokens=tokens, starts=starts, ends=ends,
                   has_error=has_error, _lines=lines, _ordered=ordered, _hashes=token_hashes)


_OPEN_CODE = 0
_CLOSE_CODE = 1
#: tree-sitter's kind id of ``ERROR`` nodes (``ts_builtin_sym_error``).
_ERROR_KIND_ID = 0xFFFF


class _KindTable:
    """Token strings, hashes and the comment flag of a grammar's node kinds, by compact code.

    Code 0 is ``"("``, code 1 is ``")"``, and the grammar's node kinds follow (tree-sitter kind
    ids run up to the grammar's kind count, plus 65535 for ``ERROR``).
    """

    def __init__(self, language: tree_sitter.Language) -> None:
        kind_ids = [*range(language.node_kind_count), _ERROR_KIND_ID]
        names = [OPEN, CLOSE]
        self.code_of = np.full(1 << 16, -1, dtype=np.int64)
        for kind_id in kind_ids:
            name = language.node_kind_for_id(kind_id)
            if name is not None:
                self.code_of[kind_id] = len(names)
                names.append(name)
        self.names = np.array(names, dtype=object)
        # Dolos drops comment nodes (but not their named children) unless asked not to.
        self.writes = np.array(["comment" not in name for name in names], dtype=bool)
        self.hashes = np.array([hash_token(name) for name in names], dtype=np.uint32)
        self._converted: dict[Any, Any] = {}

    def stream_table(self) -> np.ndarray:
        """Per tree-sitter kind id plus one: the hash of the kind's type token (int64), ``-2``
        for kinds that write no tokens (comments), ``-3`` for ids that are not kinds of the
        grammar; entry 0 (a closing event, ``-1 + 1``) is ``-1``. Rebuilt when :attr:`writes`
        is replaced."""
        built = self._converted.get("stream")
        if built is None or built[0] is not self.writes:
            table = np.full((1 << 16) + 1, -3, dtype=np.int64)
            table[0] = -1
            known = np.flatnonzero(self.code_of >= 0)
            codes = self.code_of[known]
            table[known + 1] = np.where(self.writes[codes], self.hashes[codes].astype(np.int64), -2)
            built = self._converted["stream"] = (self.writes, table)
        return built[1]

    def codes(self, kind_ids: np.ndarray) -> np.ndarray:
        """Codes of tree-sitter kind ids.

        Raises
        ------
        ValueError
            If an id is not a kind of the grammar (a parse never yields one).
        """
        codes = self.code_of[kind_ids]
        if len(codes) and codes.min() < 0:
            unknown = sorted(set(kind_ids[codes < 0].tolist()))
            raise ValueError(f"tree-sitter kind ids {unknown} are not kinds of this grammar")
        return codes


@functools.cache
def _kind_table(language: str) -> _KindTable:
    return _KindTable(get_language(language))


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


def _walk_kinds(root: tree_sitter.Node) -> list[int]:
    """The walk of :func:`_walk` reduced to what hashing the tokens needs (:func:`tokenize_hashes`):
    per event, the node's kind id when a named node opens and ``-1`` when one closes (kind ids
    are non-negative). No regions, no parents and no stack of open nodes: which node a ``-1``
    closes is worked out afterwards, where it matters (:func:`_stream_hashes`)."""
    events: list[int] = []
    add = events.append
    cursor = root.walk()
    first_child, next_sibling, up = cursor.goto_first_child, cursor.goto_next_sibling, cursor.goto_parent
    while True:
        node = cursor.node
        if node.is_named:
            add(node.kind_id)
            if first_child():
                continue
            add(-1)
        # only named nodes are descended into, so every step up closes a named node
        while not next_sibling():
            if not up():
                return events
            add(-1)


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


def _non_decreasing(values: np.ndarray) -> bool:
    # Pre-order regions never go backwards in a well-formed tree, which lets a token range's
    # span be read off its first and last token; recovered trees are checked, not assumed.
    return bool(np.all(values[1:] >= values[:-1]))


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


def tokenize_chars(text: str, path: str) -> TokenizedFile:
    """One token per character, line breaks left out (Dolos's ``CharTokenizer``).

    The fallback for text in a language without a grammar. Spans cover one character each.

    Examples
    --------
    >>> tokenize_chars("ab\\nc", "x.txt").tokens
    ('a', 'b', 'c')
    """
    tokens: list[str] = []
    starts: list[int] = []
    for offset, char in enumerate(text):
        if char != "\n":
            tokens.append(char)
            starts.append(offset)
    return TokenizedFile(
        path=path,
        language="chars",
        text=text,
        tokens=tuple(tokens),
        starts=tuple(starts),
        ends=tuple(s + 1 for s in starts),
        _lines=line_starts(text),
        _ordered=True,
    )


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


def _closing_events(event: np.ndarray, opening: np.ndarray) -> np.ndarray:
    """Indices of the ``-1`` events that close the nodes opened at indices ``opening``.

    A leaf closes at the very next event, which settles comments (leaves in every grammar
    used so far); otherwise the events are grouped by nesting depth, where each opening is
    followed by its own closing."""
    after = opening + 1
    if (event[after] < 0).all():
        return after
    opens = event >= 0
    after_event = np.cumsum(np.where(opens, 1, -1))
    depth = np.where(opens, after_event, after_event + 1)  # an opening's depth, or the depth it closes
    by_depth = np.argsort(depth, kind="stable")
    rank = np.empty(len(event), dtype=np.int64)
    rank[by_depth] = np.arange(len(event))
    return by_depth[rank[opening] + 1]


def tokenize_hashes(text: str, language: str) -> np.ndarray:
    """:func:`~mleaudit.audit.similarity.winnow.hash_token` of every token :func:`tokenize_text` yields.

    The same parse and the same token stream, without the token strings and regions: the
    input of fingerprinting when only pair figures are wanted (all-pairs comparisons), at
    about half the cost of :func:`tokenize_text`.

    Parameters
    ----------
    text : str
        Source code (untrusted: parsed, never run).
    language : str
        A grammar name from :data:`mleaudit.audit.parsing.LANGUAGES`, or ``"chars"``.

    Returns
    -------
    numpy.ndarray
        One unsigned 32-bit hash per token, in stream order (values below ``HASH_MOD``).

    Raises
    ------
    KeyError
        If ``language`` is neither a known grammar nor ``"chars"``.

    Examples
    --------
    >>> import numpy as np
    >>> text = "x = [i for i in range(3)]\\n"
    >>> bool(np.array_equal(tokenize_hashes(text, "python"), tokenize_text(text, "python", "a.py")._hashes))
    True
    """
    return _token_hash_array(text, language, np.uint32)


def _token_hash_array(text: str, language: str, dtype: Any = np.int64) -> np.ndarray:
    """:func:`tokenize_hashes` as ``dtype`` (int64 by default: the dtype of the k-gram arithmetic)."""
    if language == "chars":
        return np.fromiter(map(hash_token, text.replace("\n", "")), dtype=dtype)
    if language not in LANGUAGES:
        raise KeyError(f"unknown language {language!r}; known: chars, {', '.join(sorted(LANGUAGES))}")
    # UTF-16, as tokenize_text parses (the tree Dolos gets, also for broken code)
    tree = get_parser(language).parse(parser_safe(text, language).encode("utf-16-le", errors="surrogatepass"),
                                      encoding="utf16le")
    hashes = _stream_hashes(_walk_kinds(tree.root_node), _kind_table(language))
    return hashes if dtype == np.int64 else hashes.astype(dtype)


def _stream_hashes(events: list[int], table: _KindTable) -> np.ndarray:
    """The token hashes (int64) of a :func:`_walk_kinds` event list: ``"("`` and the type when a
    node opens, ``")"`` when it closes, nothing for comments (the tokens :func:`_assemble` builds,
    as hashes, straight from the kind ids).

    Raises
    ------
    ValueError
        If an event names an id that is not a kind of the grammar (a parse never yields one).
    """
    event = np.fromiter(events, dtype=np.int64, count=len(events))  # a quarter fewer steps than np.array
    typed = table.stream_table()[event + 1]  # type hash when opening, -1 when closing
    if len(typed) and typed.min() < -1:
        unknown = np.flatnonzero(typed == -3)
        if len(unknown):
            raise ValueError(f"tree-sitter kind ids {sorted(set(event[unknown].tolist()))} are not kinds of this grammar")
        silent = np.flatnonzero(typed == -2)  # comment nodes: they and their closing events write nothing
        keep = np.ones(len(event), dtype=bool)
        keep[silent] = False
        keep[_closing_events(event, silent)] = False
        typed = typed[keep]
    # two slots per event: "(" and the type, or ")" and a -1 that is dropped
    slots = np.empty((len(typed), 2), dtype=np.int64)
    slots[:, 0] = np.where(typed >= 0, int(table.hashes[_OPEN_CODE]), int(table.hashes[_CLOSE_CODE]))
    slots[:, 1] = typed
    flat = slots.reshape(-1)
    return flat[flat >= 0]
