"""Folded parts: a sub-expression's value with its segments, the helpers that combine them, and the folder base class.

A *part* is a folded sub-expression; a *segment* is a run of value characters copied verbatim
from one literal (``source`` is that literal's start byte), or produced by a transformation
(decoding, reversing, escapes: ``source`` is ``None``). :class:`Folder` folds the expressions of
one parsed unit; a subclass per grammar knows its node types.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterator

import tree_sitter

#: What a part of unknown value folds to (a parameter, a call result, an unresolved name).
UNKNOWN = "{}"
#: Folded values are cut to this many characters (a guard against values built by doubling).
MAX_VALUE_CHARS = 4096
#: Sub-expressions nested deeper than this fold to unknown (keeps recursion bounded).
MAX_FOLD_DEPTH = 60
#: Bindings are resolved in this many passes, so a constant defined from another constant works.
_BINDING_PASSES = 3


@dataclass(frozen=True, slots=True)
class Part:
    value: str
    segments: tuple[tuple[int, int, int | None], ...]  # (value start, value end, literal start byte | None)
    literal: bool  # at least one string literal went into it (else it is not a string expression)
    composed: bool  # more than one source, a name, or a transformation went into it


@dataclass(frozen=True, slots=True, kw_only=True)
class FoldedString:
    """The folded value of one maximal string-valued expression.

    Attributes
    ----------
    start, end : int
        0-based, half-open character offsets of the expression in the unit's text.
    value : str
        The value, with unknown parts written as :data:`UNKNOWN`.
    segments : tuple of (int, int, int or None)
        ``(value_start, value_end, source)``: value characters copied verbatim from the literal
        that starts at byte ``source`` of the unit, or (``None``) produced by a transformation.
    composed : bool
        True when the value was assembled (several parts, a resolved name, an f-string, a
        decoding); False for a plain literal.
    """

    start: int
    end: int
    value: str
    segments: tuple[tuple[int, int, int | None], ...]
    composed: bool

    def spelled_by_one_literal(self, start: int, end: int) -> bool:
        """True when ``value[start:end]`` lies inside one literal's verbatim segment."""
        return any(s <= start and end <= e and source is not None for s, e, source in self.segments)


def concat(parts: list[Part], *, composed: bool = False) -> Part:
    value = []
    segments = []
    offset = 0
    for part in parts:
        value.append(part.value)
        segments.extend((s + offset, e + offset, src) for s, e, src in part.segments)
        offset += len(part.value)
    joined = "".join(value)
    if len(joined) > MAX_VALUE_CHARS:
        joined = joined[:MAX_VALUE_CHARS]
        segments = [(s, min(e, MAX_VALUE_CHARS), src) for s, e, src in segments if s < MAX_VALUE_CHARS]
    return Part(
        value=joined,
        segments=tuple(_merge(segments)),
        literal=any(p.literal for p in parts),
        composed=composed or len([p for p in parts if p.value]) > 1 or any(p.composed for p in parts),
    )


def _merge(segments: list[tuple[int, int, int | None]]) -> list[tuple[int, int, int | None]]:
    merged: list[tuple[int, int, int | None]] = []
    for s, e, src in segments:
        if e <= s:
            continue
        if merged and merged[-1][1] == s and merged[-1][2] == src and src is not None:
            merged[-1] = (merged[-1][0], e, src)
        else:
            merged.append((s, e, src))
    return merged


def text_part(value: str, source: int | None, *, literal: bool = True, composed: bool = False) -> Part:
    value = value[:MAX_VALUE_CHARS]
    return Part(value=value, segments=((0, len(value), source),) if value else (), literal=literal,
                 composed=composed)


def transformed(value: str) -> Part:
    """A value computed from others (decoded, reversed, replaced): no verbatim segment."""
    return text_part(value, None, composed=True)


UNKNOWN_PART = Part(value=UNKNOWN, segments=(), literal=False, composed=True)
PERCENT = Part(value="%", segments=(), literal=False, composed=True)
PERCENT_FIELD = re.compile(r"%(?:\([^)]{0,80}\))?[-#0 +]{0,5}\d{0,5}(?:\.\d{1,5})?[sdifrxXeEgGc%]")
FORMAT_FIELD = re.compile(r"\{\{|\}\}|\{([^{}]{0,200})\}")


def _slice(part: Part, start: int, end: int) -> Part:
    """``part.value[start:end]`` with the segments that fall inside it."""
    segments = tuple((max(s, start) - start, min(e, end) - start, src) for s, e, src in part.segments
                     if s < end and e > start)
    return Part(value=part.value[start:end], segments=segments, literal=part.literal, composed=part.composed)


def fill(template: Part, field: re.Pattern[str], value_of) -> Part:
    """Replace each ``field`` match of ``template.value`` by ``value_of(match)`` (``None``: unknown).

    The template's own characters keep their segments, so a literal URL formatted with an
    unknown parameter still counts as spelled by that literal.
    """
    pieces: list[Part] = []
    last = 0
    for m in field.finditer(template.value):
        pieces.append(_slice(template, last, m.start()))
        pieces.append(value_of(m) or UNKNOWN_PART)
        last = m.end()
    pieces.append(_slice(template, last, len(template.value)))
    return concat(pieces, composed=True)

_ESCAPE = re.compile(r"\\(x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}|[0-7]{1,3}|N\{[^}\n]{1,80}\}|\n|.)", re.S)
_SIMPLE_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "0": "\0", "a": "\a", "b": "\b", "f": "\f", "v": "\v",
                   "\\": "\\", "'": "'", '"': '"', "\n": ""}


def unescape_python(raw: str) -> str:
    """The value of a non-raw Python string literal's body, total on every input.

    Valid escapes decode as CPython decodes them. Where CPython refuses the literal (a
    truncated ``\\x``/``\\u``/``\\U`` escape, as in ``"C:\\Users"``, or an unknown
    ``\\N{...}`` name) or keeps an unknown escape (``\\d``, ``\\8``), the backslash and the
    text are kept as written, so folding never raises; escapes of lone surrogates and of
    code points past U+10FFFF become U+FFFD, so every value encodes as UTF-8.
    """
    def one(m: re.Match[str]) -> str:
        body = m.group(1)
        if body in _SIMPLE_ESCAPES:
            return _SIMPLE_ESCAPES[body]
        if body[0] in "xuU" and len(body) > 1:
            code = int(body[1:], 16)
            return "\ufffd" if code >= 0x110000 or 0xD800 <= code <= 0xDFFF else chr(code)
        if body[0] in "01234567":
            return chr(int(body, 8))
        if body[0] == "N" and len(body) > 3:
            import unicodedata

            try:
                return unicodedata.lookup(body[2:-1])
            except KeyError:
                return m.group(0)
        return m.group(0)

    return _ESCAPE.sub(one, raw)


def printable(text: str) -> bool:
    return bool(text) and all(ch.isprintable() or ch in "\n\t\r" for ch in text)


class Folder:
    """Folds the expressions of one parsed unit; subclasses know one grammar."""

    def __init__(self, data: bytes, root: tree_sitter.Node):
        self.data = data
        self.root = root
        self.bindings: dict[str, Part | None] = {}
        self._memo: dict[tuple[int, int, str], Part | None] = {}

    def text(self, node: tree_sitter.Node | None) -> str:
        # Fields can be missing under ERROR nodes of broken code: an absent node reads as "".
        if node is None:
            return ""
        return self.data[node.start_byte:node.end_byte].decode("utf-8", errors="replace")

    def fold(self, node: tree_sitter.Node | None, depth: int = 0) -> Part | None:
        if node is None:
            return None
        key = (node.start_byte, node.end_byte, node.type)
        if key in self._memo:
            return self._memo[key]
        result = self._fold(node, depth) if depth <= MAX_FOLD_DEPTH else None
        self._memo[key] = result
        return result

    def _fold(self, node: tree_sitter.Node, depth: int) -> Part | None:  # pragma: no cover - abstract
        raise NotImplementedError

    def resolve_bindings(self, assignments: list[tuple[str, tree_sitter.Node]]) -> None:
        for _ in range(_BINDING_PASSES):
            self._memo.clear()
            values: dict[str, Part | None] = {}
            for name, value_node in assignments:
                part = self.fold(value_node)
                if part is None or not part.literal:
                    values[name] = None
                elif name in values and (values[name] is None or values[name].value != part.value):
                    values[name] = None  # assigned different values: not a constant
                else:
                    values.setdefault(name, part)
            if values == self.bindings:
                break
            self.bindings = values
        self._memo.clear()

    def name(self, identifier: str) -> Part:
        bound = self.bindings.get(identifier)
        if bound is None:
            return UNKNOWN_PART
        return Part(value=bound.value, segments=bound.segments, literal=bound.literal, composed=True)


def walk(root: tree_sitter.Node) -> Iterator[tree_sitter.Node]:
    cursor = root.walk()
    while True:
        yield cursor.node
        if cursor.goto_first_child():
            continue
        while not cursor.goto_next_sibling():
            if not cursor.goto_parent():
                return
