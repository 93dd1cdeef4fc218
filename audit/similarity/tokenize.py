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
:class:`audit.model.Span`).

Code with syntax errors is parsed a second time from UTF-16 text, as Dolos (on Node.js) parses
it: tree-sitter's error recovery weighs skipped input by its size in bytes, so the recovered tree
depends on the encoding (see :func:`tokenize_tree_utf16`). Valid code gets the same tree either
way and is tokenized from the cached :func:`audit.parsing.parse`.

References
----------
Maertens, R. et al. (2022). Dolos: Language-agnostic plagiarism detection in source code.
*Journal of Computer Assisted Learning*, 38(4), 1046-1061. Dolos 3.5.1,
``lib/src/lib/tokenizer/codeTokenizer.ts``.
"""

from __future__ import annotations

import logging
from bisect import bisect_right
from dataclasses import dataclass

import tree_sitter

from audit.model import Span
from audit.parsing import LANGUAGES, ParsedFile, get_parser, parse

__all__ = [
    "TokenizedFile",
    "line_starts",
    "tokenize_chars",
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


def _walk(root: tree_sitter.Node) -> tuple[list[str], list[int], list[int]]:
    """Dolos's token walk; offsets are the tree's own (bytes of the parsed encoding)."""
    tokens: list[str] = []
    starts: list[int] = []
    ends: list[int] = []
    # An explicit stack: deeply nested expressions (long chains of ``+``) go past Python's
    # recursion limit. A frame is [node, named children, next child, index of the node's "("
    # token or -1 when the node writes no tokens, end of the node's own region].
    stack: list[list] = []

    def enter(node: tree_sitter.Node) -> None:
        kind = node.type
        start = node.start_byte
        if "comment" in kind:
            opened = -1
        else:
            opened = len(tokens)
            tokens.append(OPEN)
            tokens.append(kind)
            starts.append(start)
            starts.append(start)
            ends.append(0)
            ends.append(0)
        stack.append([node, node.named_children, 0, opened, node.end_byte])

    enter(root)
    while stack:
        frame = stack[-1]
        children = frame[1]
        if frame[2] < len(children):
            child = children[frame[2]]
            frame[2] += 1
            # A node's own region stops where the code of its first named child starts.
            if child.start_byte < frame[4]:
                frame[4] = child.start_byte
            enter(child)
            continue
        stack.pop()
        node, opened, region_end = frame[0], frame[3], frame[4]
        if opened >= 0:
            ends[opened] = region_end
            ends[opened + 1] = region_end
            tokens.append(CLOSE)
            end = node.end_byte
            starts.append(end)
            ends.append(end)
    return tokens, starts, ends


def _tokenized(
    path: str, language: str, text: str, walked: tuple[list[str], list[int], list[int]], has_error: bool
) -> TokenizedFile:
    tokens, starts, ends = walked
    return TokenizedFile(
        path=path,
        language=language,
        text=text,
        tokens=tuple(tokens),
        starts=tuple(starts),
        ends=tuple(ends),
        has_error=has_error,
        _lines=line_starts(text),
        _ordered=_non_decreasing(starts) and _non_decreasing(ends),
    )


def _non_decreasing(values: list[int]) -> bool:
    # Pre-order regions never go backwards in a well-formed tree, which lets a token range's
    # span be read off its first and last token; recovered trees are checked, not assumed.
    return all(a <= b for a, b in zip(values, values[1:]))


def tokenize_tree(parsed: ParsedFile, path: str) -> TokenizedFile:
    """Dolos's node-type tokens of a parsed file.

    Parameters
    ----------
    parsed : ParsedFile
        Output of :func:`audit.parsing.parse`; trees with ``ERROR`` nodes are tokenized as they are.
    path : str
        Recorded on the result and on every span.

    Returns
    -------
    TokenizedFile
        Three tokens per named, non-comment node (``"("``, type, ``")"``) in pre-order.

    Examples
    --------
    >>> from audit.parsing import parse
    >>> tokenize_tree(parse("x = 1\\n", "python"), "a.py").tokens[:6]
    ('(', 'module', '(', 'expression_statement', '(', 'assignment')
    """
    tokens, starts, ends = _walk(parsed.root)
    if not parsed.text.isascii():
        convert = parsed.char_offset
        starts = [convert(b) for b in starts]
        ends = [convert(b) for b in ends]
    return _tokenized(path, parsed.language, parsed.text, (tokens, starts, ends), parsed.has_error)


def _utf16_char_offsets(text: str) -> list[int] | None:
    """Map UTF-16 code-unit offsets to character offsets, or ``None`` when they are equal."""
    if all(ord(c) < 0x10000 for c in text):
        return None
    mapping = []
    for index, char in enumerate(text):
        mapping.append(index)
        if ord(char) >= 0x10000:
            mapping.append(index)
    mapping.append(len(text))
    return mapping


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
        A key of :data:`audit.parsing.LANGUAGES`.
    path : str
        Recorded on the result.

    Returns
    -------
    TokenizedFile
        Offsets converted to characters of ``text``.
    """
    data = text.encode("utf-16-le", errors="surrogatepass")
    tree = get_parser(language).parse(data, encoding="utf16le")
    tokens, starts, ends = _walk(tree.root_node)
    mapping = _utf16_char_offsets(text)
    if mapping is None:
        starts = [b // 2 for b in starts]
        ends = [b // 2 for b in ends]
    else:
        starts = [mapping[b // 2] for b in starts]
        ends = [mapping[b // 2] for b in ends]
    return _tokenized(path, language, text, (tokens, starts, ends), tree.root_node.has_error)


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
        A grammar name from :data:`audit.parsing.LANGUAGES`, or ``"chars"`` for character tokens.
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
    parsed = parse(text, language)
    if not parsed.has_error:
        return tokenize_tree(parsed, path)
    # Broken code: reproduce the tree Dolos gets (see tokenize_tree_utf16).
    logger.debug("%s: syntax errors; tokenizing the tree recovered from UTF-16 input", path)
    return tokenize_tree_utf16(text, language, path)
