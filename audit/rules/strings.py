"""String values of code expressions, folded the way a reader would: for rules that look through assembly.

A URL, a host or a path can be spelled in pieces so that no single literal holds it:
``"https://api." + "openai.com"``, ``f"https://{HOST}/v1/chat/completions"``,
``"/".join(["https:", "", host])``, ``Path("/private") / "data"``, ``base64.b64decode("...")``,
``"moc.ianepo.ipa"[::-1]``, or in shell ``H=api.openai.com; curl "https://$H/v1/..."``.
:func:`fold_strings` walks a unit's syntax tree (never runs it) and returns, for every maximal
string-valued expression, the value such an expression would have, with the parts it cannot
know (a function parameter, a call result) written as ``{}``. The ``strings`` matcher of the
rules engine runs its regex over these values.

Folding is deliberately simple and bounded: names resolve only to string constants assigned
exactly one value in the same unit (Python ``NAME = ...``, shell ``NAME=...``/``export``);
values are cut at :data:`MAX_VALUE_CHARS`; expressions deeper than :data:`MAX_FOLD_DEPTH` are
unknown. Each value keeps *segments* that say which characters came verbatim from which literal,
so a matcher can tell an assembled value from one that a single literal already spells out
(``assembled_only``), and leave the latter to the ordinary literal rules.

Naming: a *part* is a folded sub-expression; a *segment* is a run of value characters copied
verbatim from one literal (``source`` is that literal's start byte), or produced by a
transformation (decoding, reversing, escapes: ``source`` is ``None``).
"""

from __future__ import annotations

import base64
import binascii
import codecs
import re
from dataclasses import dataclass
from typing import Iterator

import tree_sitter

from mleaudit.audit.parsing import parse
from mleaudit.audit.textcache import TextCache

__all__ = ["FoldedString", "fold_strings", "UNKNOWN", "MAX_VALUE_CHARS", "MAX_FOLD_DEPTH"]

#: What a part of unknown value folds to (a parameter, a call result, an unresolved name).
UNKNOWN = "{}"
#: Folded values are cut to this many characters (a guard against values built by doubling).
MAX_VALUE_CHARS = 4096
#: Sub-expressions nested deeper than this fold to unknown (keeps recursion bounded).
MAX_FOLD_DEPTH = 60
#: Bindings are resolved in this many passes, so a constant defined from another constant works.
_BINDING_PASSES = 3


@dataclass(frozen=True, slots=True)
class _Part:
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


def _concat(parts: list[_Part], *, composed: bool = False) -> _Part:
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
    return _Part(
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


def _text(value: str, source: int | None, *, literal: bool = True, composed: bool = False) -> _Part:
    value = value[:MAX_VALUE_CHARS]
    return _Part(value=value, segments=((0, len(value), source),) if value else (), literal=literal,
                 composed=composed)


def _transformed(value: str) -> _Part:
    """A value computed from others (decoded, reversed, replaced): no verbatim segment."""
    return _text(value, None, composed=True)


_UNKNOWN_PART = _Part(value=UNKNOWN, segments=(), literal=False, composed=True)
_PERCENT = _Part(value="%", segments=(), literal=False, composed=True)
_PERCENT_FIELD = re.compile(r"%(?:\([^)]{0,80}\))?[-#0 +]{0,5}\d{0,5}(?:\.\d{1,5})?[sdifrxXeEgGc%]")
_FORMAT_FIELD = re.compile(r"\{\{|\}\}|\{([^{}]{0,200})\}")


def _slice(part: _Part, start: int, end: int) -> _Part:
    """``part.value[start:end]`` with the segments that fall inside it."""
    segments = tuple((max(s, start) - start, min(e, end) - start, src) for s, e, src in part.segments
                     if s < end and e > start)
    return _Part(value=part.value[start:end], segments=segments, literal=part.literal, composed=part.composed)


def _fill(template: _Part, field: re.Pattern[str], value_of) -> _Part:
    """Replace each ``field`` match of ``template.value`` by ``value_of(match)`` (``None``: unknown).

    The template's own characters keep their segments, so a literal URL formatted with an
    unknown parameter still counts as spelled by that literal.
    """
    pieces: list[_Part] = []
    last = 0
    for m in field.finditer(template.value):
        pieces.append(_slice(template, last, m.start()))
        pieces.append(value_of(m) or _UNKNOWN_PART)
        last = m.end()
    pieces.append(_slice(template, last, len(template.value)))
    return _concat(pieces, composed=True)

_ESCAPE = re.compile(r"\\(x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}|[0-7]{1,3}|N\{[^}\n]{1,80}\}|\n|.)", re.S)
_SIMPLE_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "0": "\0", "a": "\a", "b": "\b", "f": "\f", "v": "\v",
                   "\\": "\\", "'": "'", '"': '"', "\n": ""}


def _unescape_python(raw: str) -> str:
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


def _printable(text: str) -> bool:
    return bool(text) and all(ch.isprintable() or ch in "\n\t\r" for ch in text)


class _Folder:
    """Folds the expressions of one parsed unit; subclasses know one grammar."""

    def __init__(self, data: bytes, root: tree_sitter.Node):
        self.data = data
        self.root = root
        self.bindings: dict[str, _Part | None] = {}
        self._memo: dict[tuple[int, int, str], _Part | None] = {}

    def text(self, node: tree_sitter.Node | None) -> str:
        # Fields can be missing under ERROR nodes of broken code: an absent node reads as "".
        if node is None:
            return ""
        return self.data[node.start_byte:node.end_byte].decode("utf-8", errors="replace")

    def fold(self, node: tree_sitter.Node | None, depth: int = 0) -> _Part | None:
        if node is None:
            return None
        key = (node.start_byte, node.end_byte, node.type)
        if key in self._memo:
            return self._memo[key]
        result = self._fold(node, depth) if depth <= MAX_FOLD_DEPTH else None
        self._memo[key] = result
        return result

    def _fold(self, node: tree_sitter.Node, depth: int) -> _Part | None:  # pragma: no cover - abstract
        raise NotImplementedError

    def resolve_bindings(self, assignments: list[tuple[str, tree_sitter.Node]]) -> None:
        for _ in range(_BINDING_PASSES):
            self._memo.clear()
            values: dict[str, _Part | None] = {}
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

    def name(self, identifier: str) -> _Part:
        bound = self.bindings.get(identifier)
        if bound is None:
            return _UNKNOWN_PART
        return _Part(value=bound.value, segments=bound.segments, literal=bound.literal, composed=True)


class _PythonFolder(_Folder):
    _STRINGY = {"string", "concatenated_string", "binary_operator", "call", "subscript", "parenthesized_expression"}

    def collect(self) -> None:
        assignments = []
        for node in _walk(self.root):
            if node.type == "assignment":
                left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
                if left is not None and right is not None and left.type == "identifier":
                    assignments.append((self.text(left), right))
        self.resolve_bindings(assignments)

    def _string(self, node: tree_sitter.Node, depth: int) -> _Part:
        start = node.child(0)
        prefix = self.text(start).lower() if start is not None else ""
        raw = "r" in prefix
        parts: list[_Part] = []
        for child in node.children:
            if child.type == "string_content":
                content = self.text(child)
                decoded = content if raw else _unescape_python(content)
                if decoded == content:
                    parts.append(_text(content, node.start_byte))
                else:
                    parts.append(_transformed(decoded))
            elif child.type == "interpolation":
                inner = child.child_by_field_name("expression")
                folded = self.fold(inner, depth + 1)
                parts.append(_Part(value=folded.value, segments=folded.segments, literal=True, composed=True)
                             if folded is not None and folded.literal else _UNKNOWN_PART)
        if not parts:
            return _Part(value="", segments=(), literal=True, composed=False)
        folded = _concat(parts)
        return _Part(value=folded.value, segments=folded.segments, literal=True, composed=folded.composed)

    def _fold(self, node: tree_sitter.Node, depth: int) -> _Part | None:
        kind = node.type
        if kind == "string":
            return self._string(node, depth)
        if kind == "concatenated_string":
            return _concat([self.fold(c, depth + 1) or _UNKNOWN_PART for c in node.named_children])
        if kind == "parenthesized_expression":
            inner = node.named_children
            return self.fold(inner[0], depth + 1) if len(inner) == 1 else None
        if kind == "identifier":
            return self.name(self.text(node))
        if kind == "binary_operator":
            return self._binary(node, depth)
        if kind == "call":
            return self._call(node, depth)
        if kind == "subscript":
            return self._subscript(node, depth)
        return None

    def _binary(self, node: tree_sitter.Node, depth: int) -> _Part | None:
        op = node.child_by_field_name("operator")
        left = self.fold(node.child_by_field_name("left"), depth + 1)
        right = self.fold(node.child_by_field_name("right"), depth + 1)
        operator = self.text(op) if op is not None else ""
        if operator == "+":
            if left is None and right is None:
                return None
            part = _concat([left or _UNKNOWN_PART, right or _UNKNOWN_PART], composed=True)
            return part if part.literal else None
        if operator == "/" and left is not None and left.literal:  # pathlib: Path("/private") / "data"
            return _concat([left, _text("/", None, literal=False), right or _UNKNOWN_PART], composed=True)
        if operator == "%" and left is not None and left.literal:
            args_node = node.child_by_field_name("right")
            args = args_node.named_children if args_node is not None and args_node.type == "tuple" else [args_node]
            values = iter([self.fold(a, depth + 1) for a in args])
            return _fill(left, _PERCENT_FIELD, lambda m: _PERCENT if m.group(0) == "%%" else next(values, None))
        return None

    def _args(self, node: tree_sitter.Node) -> tuple[list[tree_sitter.Node], dict[str, tree_sitter.Node]]:
        args = node.child_by_field_name("arguments")
        positional: list[tree_sitter.Node] = []
        keywords: dict[str, tree_sitter.Node] = {}
        if args is None:
            return positional, keywords
        for child in args.named_children:
            if child.type == "keyword_argument":
                name, value = child.child_by_field_name("name"), child.child_by_field_name("value")
                if name is not None and value is not None:
                    keywords[self.text(name)] = value
            elif child.type not in ("comment", "list_splat", "dictionary_splat"):
                positional.append(child)
        return positional, keywords

    def _elements(self, node: tree_sitter.Node | None, depth: int) -> list[_Part] | None:
        if node is not None and node.type == "call":
            # reversed("...") and map(chr, [112, ...]): the characters they give, as one part
            positional, _ = self._args(node)
            callee = self.text(node.child_by_field_name("function"))
            if callee == "reversed" and len(positional) == 1:
                inner = self.fold(positional[0], depth + 1)
                return [_transformed(inner.value[::-1])] if inner is not None and inner.literal else None
            if callee == "map" and len(positional) == 2 and self.text(positional[0]) == "chr":
                chars = _code_points(self, positional[1])
                return [_transformed(chars)] if chars is not None else None
            return None
        if node is None or node.type not in ("list", "tuple", "set"):
            return None
        return [self.fold(c, depth + 1) or _UNKNOWN_PART for c in node.named_children if c.type != "comment"]

    def _call(self, node: tree_sitter.Node, depth: int) -> _Part | None:
        function = node.child_by_field_name("function")
        if function is None:
            return None
        positional, keywords = self._args(node)
        if function.type == "attribute":
            obj = function.child_by_field_name("object")
            method = self.text(function.child_by_field_name("attribute"))
            dotted = self.text(function)
            base = self.fold(obj, depth + 1) if obj is not None and obj.type not in ("identifier", "attribute") else None
            if obj is not None and self.text(obj) in _SEPARATORS:
                base = _text("/", None)
            if base is None and obj is not None and obj.type == "identifier" and method in _STR_METHODS:
                base = self.fold(obj, depth + 1)
                base = base if base is not None and base.literal else None
        else:
            method = dotted = self.text(function)
            base = None

        if dotted == "str.join" and len(positional) == 2:
            base, positional = self.fold(positional[0], depth + 1), positional[1:]
            method = "join"
        if dotted == "chr" and len(positional) == 1:
            char = _code_points(self, positional[0])
            return _transformed(char) if char is not None else None
        if dotted in ("bytes", "bytearray") and positional and positional[0].type in ("list", "tuple"):
            chars = _code_points(self, positional[0], ascii_only=True)
            return _transformed(chars) if chars is not None else None
        if base is not None and method == "join" and len(positional) == 1:
            elements = self._elements(positional[0], depth)
            if elements is None:
                return _concat([_UNKNOWN_PART], composed=True) if base.literal else None
            pieces: list[_Part] = []
            for i, element in enumerate(elements):
                if i:
                    pieces.append(base)
                pieces.append(element)
            return _concat(pieces, composed=True) if pieces else _text("", None)
        if base is not None and method == "format":
            values = [self.fold(a, depth + 1) for a in positional]
            named = {k: self.fold(v, depth + 1) for k, v in keywords.items()}
            auto = iter(range(len(values)))

            def field(m: re.Match[str]) -> _Part | None:
                if m.group(0) in ("{{", "}}"):
                    return _transformed(m.group(0)[0])
                name = re.split(r"[!:.\[]", m.group(1), maxsplit=1)[0]
                if name == "":
                    index = next(auto, len(values))
                    return values[index] if index < len(values) else None
                if name.isascii() and name.isdigit():  # "²".isdigit() is true, int("²") fails
                    return values[int(name)] if int(name) < len(values) else None
                return named.get(name)

            return _fill(base, _FORMAT_FIELD, field)
        if base is not None and method in ("lower", "upper", "strip", "lstrip", "rstrip") and not positional:
            return _transformed(getattr(base.value, method)())
        if base is not None and method == "replace" and len(positional) >= 2:
            old, new = self.fold(positional[0], depth + 1), self.fold(positional[1], depth + 1)
            if old is not None and new is not None and old.value:
                return _transformed(base.value.replace(old.value, new.value))
            return None
        if base is not None and method in ("decode", "encode") and not positional:
            return base  # bytes <-> str of the same text
        if dotted in _PATH_JOINS and positional:
            parts = [self.fold(a, depth + 1) or _UNKNOWN_PART for a in positional]
            if not any(p.literal for p in parts):
                return None
            pieces = []
            for i, part in enumerate(parts):
                if i:
                    pieces.append(_text("/", None, literal=False))
                pieces.append(part)
            return _concat(pieces, composed=True)
        if dotted in _URL_JOINS and len(positional) == 2:
            left, right = (self.fold(a, depth + 1) for a in positional)
            if left is None and right is None:
                return None
            return _concat([left or _UNKNOWN_PART, _text("/", None, literal=False), right or _UNKNOWN_PART],
                           composed=True)
        if dotted in _PASS_THROUGH and len(positional) == 1:
            inner = self.fold(positional[0], depth + 1)
            return inner if inner is not None and inner.literal else None
        if dotted in _B64 and positional:
            inner = self.fold(positional[0], depth + 1)
            if inner is None or UNKNOWN in inner.value:
                return None
            try:
                decoded = base64.b64decode(inner.value.encode("ascii"), altchars=b"-_" if "urlsafe" in dotted else None,
                                           validate=False).decode("utf-8")
            except (ValueError, UnicodeError, binascii.Error):
                return None
            return _transformed(decoded) if _printable(decoded) else None
        if dotted == "bytes.fromhex" and len(positional) == 1:
            inner = self.fold(positional[0], depth + 1)
            try:
                decoded = bytes.fromhex(inner.value).decode("utf-8") if inner is not None else ""
            except (ValueError, UnicodeError):
                return None
            return _transformed(decoded) if _printable(decoded) else None
        if dotted in ("codecs.decode", "codecs.encode") and len(positional) == 2:
            inner, codec = (self.fold(a, depth + 1) for a in positional)
            if inner is not None and codec is not None and codec.value.replace("_", "").lower() == "rot13":
                return _transformed(codecs.decode(inner.value, "rot13"))
            return None
        return None

    def _subscript(self, node: tree_sitter.Node, depth: int) -> _Part | None:
        value = self.fold(node.child_by_field_name("value"), depth + 1)
        index = node.child_by_field_name("subscript")
        if value is None or not value.literal or index is None:
            return None
        if index.type == "slice" and re.fullmatch(r"::\s*-\s*1", self.text(index).replace(" ", "")):
            return _transformed(value.value[::-1])
        bounds = re.fullmatch(r"(-?\d{1,6})?:(-?\d{1,6})?", self.text(index).replace(" ", ""))
        if index.type == "slice" and bounds is not None and UNKNOWN not in value.value:
            start, stop = (int(b) if b is not None else None for b in bounds.groups())
            return _transformed(value.value[start:stop])
        return None

    def emitted(self, node: tree_sitter.Node) -> bool:
        # Bare names are left out: the literal they name is emitted where it is written.
        return node.type in self._STRINGY


def _code_points(folder: "_PythonFolder", node: tree_sitter.Node | None, ascii_only: bool = False) -> str | None:
    """The characters of an integer literal or a list/tuple of them (``chr(47)``, ``[47, 112]``), or ``None``."""
    if node is None:
        return None
    items = node.named_children if node.type in ("list", "tuple") else [node]
    if not items or len(items) > MAX_VALUE_CHARS or any(item.type != "integer" for item in items):
        return None
    try:
        points = [int(folder.text(item), 0) for item in items]
    except ValueError:
        return None
    if any(not 0 <= p < (0x80 if ascii_only else 0x110000) or 0xD800 <= p < 0xE000 for p in points):
        return None
    chars = "".join(map(chr, points))
    return chars if _printable(chars) else None


#: Names of the path separator (``os.sep.join([...])``).
_SEPARATORS = {"os.sep", "os.path.sep", "posixpath.sep"}
#: Methods of ``str`` applied to a name (``HOST.lower()``, ``SEP.join(...)``).
_STR_METHODS = {"join", "format", "lower", "upper", "strip", "lstrip", "rstrip", "replace", "decode", "encode"}
_PATH_JOINS = {"os.path.join", "posixpath.join", "path.join", "join", "PurePosixPath", "Path", "pathlib.Path",
               "PurePath", "pathlib.PurePosixPath"}
_URL_JOINS = {"urljoin", "parse.urljoin", "urllib.parse.urljoin"}
_PASS_THROUGH = {"str", "bytes", "quote", "parse.quote", "urllib.parse.quote", "unquote", "parse.unquote",
                 "urllib.parse.unquote"}
_B64 = {"base64.b64decode", "b64decode", "base64.urlsafe_b64decode", "urlsafe_b64decode", "base64.decodebytes"}


_BASH_ESCAPE = re.compile(r"\\(.)", re.S)


#: ``$(echo TEXT | base64 -d)``: base64 text decoded by a pipeline the folding can read.
_BASH_B64 = re.compile(r"\$\(\s*(?:echo|printf)\s+(?:-[neE]{1,3}\s+)?(['\"]?)([A-Za-z0-9+/=\s]{1,4000})\1\s*\|\s*"
                       r"base64\s+(?:-d|--decode|-D)\s*\)")


class _BashFolder(_Folder):
    _STRINGY = {"concatenation", "string", "ansi_c_string", "command_substitution"}

    def collect(self) -> None:
        assignments = []
        for node in _walk(self.root):
            if node.type == "variable_assignment":
                name, value = node.child_by_field_name("name"), node.child_by_field_name("value")
                if name is not None and value is not None:
                    assignments.append((self.text(name), value))
        self.resolve_bindings(assignments)

    def _fold(self, node: tree_sitter.Node, depth: int) -> _Part | None:
        kind = node.type
        if kind == "word":
            raw = self.text(node)
            unescaped = _BASH_ESCAPE.sub(r"\1", raw)
            return _text(raw, node.start_byte) if unescaped == raw else _transformed(unescaped)
        if kind == "raw_string":
            return _text(self.text(node)[1:-1], node.start_byte + 1)
        if kind == "ansi_c_string":
            return _transformed(_unescape_python(self.text(node)[2:-1]))
        if kind == "command_substitution":
            found = _BASH_B64.fullmatch(self.text(node))
            if found is None:
                return None
            try:
                decoded = base64.b64decode("".join(found.group(2).split()), validate=True).decode("utf-8")
            except (ValueError, UnicodeError, binascii.Error):
                return None
            return _transformed(decoded) if _printable(decoded) else None
        if kind == "string_content":
            raw = self.text(node)
            unescaped = re.sub(r'\\([$`"\\\n])', r"\1", raw)
            return _text(raw, node.start_byte) if unescaped == raw else _transformed(unescaped)
        if kind == "string":
            parts = [self.fold(c, depth + 1) or _UNKNOWN_PART for c in node.named_children]
            if not parts:
                return _Part(value="", segments=(), literal=True, composed=False)
            folded = _concat(parts)
            return _Part(value=folded.value, segments=folded.segments, literal=True, composed=folded.composed)
        if kind in ("simple_expansion", "expansion"):
            names = [c for c in node.named_children if c.type == "variable_name"]
            if len(names) == 1 and len(node.named_children) == 1:
                return self.name(self.text(names[0]))
            return _UNKNOWN_PART
        if kind == "concatenation":
            part = _concat([self.fold(c, depth + 1) or _UNKNOWN_PART for c in node.named_children], composed=True)
            return part if part.literal else None
        return None

    def emitted(self, node: tree_sitter.Node) -> bool:
        return node.type in self._STRINGY or (node.type == "word" and "\\" in self.text(node))


_FOLDERS = {"python": _PythonFolder, "bash": _BashFolder}


def _walk(root: tree_sitter.Node) -> Iterator[tree_sitter.Node]:
    cursor = root.walk()
    while True:
        yield cursor.node
        if cursor.goto_first_child():
            continue
        while not cursor.goto_next_sibling():
            if not cursor.goto_parent():
                return


#: Folds kept, by the size of their texts (see :mod:`mleaudit.audit.textcache`).
_FOLDS = TextCache(max_chars=48 * 1024 * 1024, max_entries=20_000)


def fold_strings(text: str, language: str) -> tuple[FoldedString, ...]:
    """Fold every maximal string-valued expression of ``text``.

    Parameters
    ----------
    text : str
        Source code of one unit (untrusted; parsed, never executed).
    language : str
        ``"python"`` or ``"bash"``; other languages have no folder and give ``()``.

    Returns
    -------
    tuple of FoldedString
        In source order. Only outermost expressions are returned (``"a" + "b" + c`` gives one
        value, not three); bare names are not (their constant is returned where it is written).
        Plain literals are included with ``composed=False``.

    Examples
    --------
    >>> [f.value for f in fold_strings('u = "https://api." + "example.com" + path', "python")]
    ['https://api.example.com{}']
    """
    folder_class = _FOLDERS.get(language)
    if folder_class is None or not text:
        return ()
    return _FOLDS.get_or_compute((text, language), len(text), lambda: _fold_uncached(text, language, folder_class))


def _fold_uncached(text: str, language: str, folder_class: type) -> tuple[FoldedString, ...]:
    parsed = parse(text, language)
    folder = folder_class(parsed.data, parsed.root)
    folder.collect()
    results: list[FoldedString] = []
    cursor = parsed.root.walk()
    while True:
        node = cursor.node
        part = folder.fold(node) if folder.emitted(node) else None
        if part is not None and part.literal:
            results.append(FoldedString(start=parsed.char_offset(node.start_byte), end=parsed.char_offset(node.end_byte),
                                        value=part.value, segments=part.segments, composed=part.composed))
            descend = False  # the outermost expression stands for its parts
        else:
            descend = True
        if descend and cursor.goto_first_child():
            continue
        while not cursor.goto_next_sibling():
            if not cursor.goto_parent():
                return tuple(results)
