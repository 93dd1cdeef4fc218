"""Tree-sitter language registry and a cached ``parse`` for audited code.

Grammars come from per-language wheels (``tree-sitter-python``, ``tree-sitter-bash``) used with
the tree-sitter 0.25 runtime, the one Dolos 3.5.1 runs (its error recovery decides the tree of
broken code, and so the similarity figures). Parsing never fails on broken code: tree-sitter
returns a tree with ``ERROR`` nodes, and ``ParsedFile.has_error`` records it. Audited code is
only parsed, never imported or executed.
"""

from __future__ import annotations

import functools
import hashlib
import re
from bisect import bisect_right
from dataclasses import dataclass, field
from pathlib import PurePosixPath

import tree_sitter

from mleaudit.audit.model import Span
from mleaudit.audit.textcache import UNIT_ENTRIES, TextCache

__all__ = ["LANGUAGES", "MAX_ERROR_CHILDREN", "MAX_QUERY_DEPTH", "ParsedFile", "PathologicalTree", "get_language",
           "get_parser", "language_for_path", "parse", "parser_safe", "pathological_tree"]

#: Grammar name -> (grammar module, file extensions). Adding a language: a grammar wheel in
#: ``install_requires`` and one entry here.
LANGUAGES: dict[str, tuple[str, tuple[str, ...]]] = {
    "python": ("tree_sitter_python", (".py", ".pyw", ".ipy")),
    "bash": ("tree_sitter_bash", (".sh", ".bash")),
}


@functools.cache
def get_language(name: str) -> tree_sitter.Language:
    """The tree-sitter ``Language`` for grammar ``name``.

    Raises
    ------
    KeyError
        If ``name`` is not in :data:`LANGUAGES`.
    """
    if name not in LANGUAGES:
        raise KeyError(f"unknown language {name!r}; known: {', '.join(sorted(LANGUAGES))}")
    module = __import__(LANGUAGES[name][0])
    return tree_sitter.Language(module.language())


def get_parser(name: str) -> tree_sitter.Parser:
    """A new parser for grammar ``name`` (parsers are cheap and not thread-safe, so not shared)."""
    return tree_sitter.Parser(get_language(name))


def language_for_path(path: str) -> str | None:
    """The grammar name for a file path by its extension, or ``None`` when no grammar fits."""
    suffix = PurePosixPath(path).suffix.lower()
    for name, (_, extensions) in LANGUAGES.items():
        if suffix in extensions:
            return name
    return None


#: Limits on the syntax trees the queries run on. Thousands of unclosed brackets give deep or
#: very wide ``ERROR`` nodes on which tree-sitter's query engine goes super-linear (a 100 kB
#: file took minutes); real code stays far below both.
MAX_QUERY_DEPTH = 1000
MAX_ERROR_CHILDREN = 2000


class PathologicalTree(RuntimeError):
    """A syntax tree too deep or too wide to walk (:func:`pathological_tree`): an analysis refused it."""


def pathological_tree(node: tree_sitter.Node) -> str | None:
    """Why queries should not run on ``node``'s tree, or ``None`` when it is ordinary.

    One iterative walk (no recursion limit): the tree is pathological when it is deeper than
    :data:`MAX_QUERY_DEPTH` or an ``ERROR`` node has more than :data:`MAX_ERROR_CHILDREN` children.
    """
    cursor = node.walk()
    depth = 0
    while True:
        current = cursor.node
        if current.type == "ERROR" and current.child_count > MAX_ERROR_CHILDREN:
            return f"a syntax-error node with {current.child_count} children (over {MAX_ERROR_CHILDREN})"
        if cursor.goto_first_child():
            depth += 1
            if depth > MAX_QUERY_DEPTH:
                return f"a syntax tree nested over {MAX_QUERY_DEPTH} deep"
            continue
        while not cursor.goto_next_sibling():
            if depth == 0 or not cursor.goto_parent():
                return None
            depth -= 1


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class ParsedFile:
    """A parsed source text.

    Attributes
    ----------
    text : str
        The decoded source.
    data : bytes
        ``text`` encoded as UTF-8, which tree-sitter's byte offsets index.
    language : str
        Grammar name.
    tree : tree_sitter.Tree
        The syntax tree (may contain ``ERROR`` nodes).
    """

    text: str
    data: bytes
    language: str
    tree: tree_sitter.Tree
    _char_starts: tuple[int, ...] | None = field(default=None, repr=False)
    #: :meth:`pathological` once computed (``""`` for an ordinary tree).
    _shape: str | None = field(default=None, repr=False)

    @property
    def root(self) -> tree_sitter.Node:
        return self.tree.root_node

    @property
    def has_error(self) -> bool:
        """True when the source has syntax errors (the tree is still usable)."""
        return self.tree.root_node.has_error

    def pathological(self) -> str | None:
        """Why analyses should not walk this tree (:func:`pathological_tree`), ``None`` when it is
        ordinary; computed once per parse (identical texts share one cached parse)."""
        if self._shape is None:
            object.__setattr__(self, "_shape", pathological_tree(self.root) or "")
        return self._shape or None

    def char_offset(self, byte_offset: int) -> int:
        """Convert a UTF-8 byte offset from tree-sitter into a character offset into ``text``."""
        if self._char_starts is None:
            return byte_offset
        # _char_starts[i] is the byte offset where character i starts.
        return bisect_right(self._char_starts, byte_offset) - 1 if byte_offset < len(self.data) else len(self.text)

    def node_text(self, node: tree_sitter.Node) -> str:
        """The source text of ``node``."""
        return self.data[node.start_byte : node.end_byte].decode("utf-8", errors="replace")

    def span(self, node: tree_sitter.Node, path: str) -> Span:
        """The :class:`Span` of ``node`` in this text (character offsets, 1-based lines/columns)."""
        return Span.from_offsets(self.text, path, self.char_offset(node.start_byte), self.char_offset(node.end_byte))


def _char_starts(text: str) -> tuple[int, ...]:
    starts = []
    offset = 0
    for ch in text:
        starts.append(offset)
        code = ord(ch)
        offset += 1 if code < 0x80 else 2 if code < 0x800 else 3 if code < 0x10000 else 4
    return tuple(starts)


_SURROGATE = re.compile("[\ud800-\udfff]")
#: Code points the parsers never see (planes 3 to 16: a few CJK extensions, tags, private use).
_HIGH_PLANES = re.compile("[\U00030000-\U0010FFFF]")


def parser_safe(text: str, language: str) -> str:
    """``text`` as it may be given to ``language``'s parser without crashing the process.

    tree-sitter-bash 0.25's scanner reads out of bounds (and crashes the process) on code
    points from about U+52000 up; for bash those of planes 3 to 16 become U+10000, one
    character for one and the same length in UTF-8 and UTF-16, so every offset holds. Other
    grammars get ``text`` itself (the same object).
    """
    if language != "bash" or text.isascii() or not _HIGH_PLANES.search(text):
        return text
    return _HIGH_PLANES.sub("\U00010000", text)


#: Parses kept: every unit of an ordinary run (the rules run one after another over all of them).
_PARSES = TextCache(max_chars=48 * 1024 * 1024, max_entries=UNIT_ENTRIES)


def _parse_uncached(text: str, language: str) -> ParsedFile:
    if not text.isascii() and _SURROGATE.search(text):
        # A lone surrogate (decoded from a JSON ``\\udfff`` escape) has no UTF-8 form; U+FFFD
        # takes its place, one character for one and three bytes for three, so every offset
        # into the text stays the same.
        text = _SURROGATE.sub("\ufffd", text)
    data = text.encode("utf-8")
    source = parser_safe(text, language)
    tree = get_parser(language).parse(data if source is text else source.encode("utf-8"))
    return ParsedFile(
        text=text,
        data=data,
        language=language,
        tree=tree,
        _char_starts=None if text.isascii() else _char_starts(text),
    )


def parse(text: str, language: str) -> ParsedFile:
    """Parse ``text`` with grammar ``language``; results are cached by (sha256, language).

    Parameters
    ----------
    text : str
        Source code (untrusted; only parsed).
    language : str
        A key of :data:`LANGUAGES`.

    Returns
    -------
    ParsedFile
        Always returned, also for broken code (see ``has_error``); cached by content (48 MiB of
        source at most, least recently used first out: :class:`mleaudit.audit.textcache.TextCache`). Lone surrogates in
        ``text`` (which have no UTF-8 form) are replaced by U+FFFD in ``ParsedFile.text``;
        offsets are unchanged. The parser itself gets :func:`parser_safe` of the text; node
        texts come from the text as given.

    Raises
    ------
    KeyError
        If ``language`` is unknown.
    """
    digest = hashlib.sha256(text.encode("utf-8", errors="surrogatepass")).hexdigest()
    return _PARSES.get_or_compute((digest, language), len(text), lambda: _parse_uncached(text, language))


def clear_parse_cache() -> None:
    """Forget every cached parse (benchmarks that time cold parses)."""
    _PARSES.clear()
