"""Folding Python string expressions: concatenation, f-strings, ``%``/``format``, joins, paths, slicing, decoding."""

from __future__ import annotations

import base64
import binascii
import codecs
import re

import tree_sitter

from mleaudit.audit.rules.strings.parts import (
    FORMAT_FIELD,
    MAX_VALUE_CHARS,
    PERCENT,
    PERCENT_FIELD,
    UNKNOWN,
    UNKNOWN_PART,
    Folder,
    Part,
    concat,
    fill,
    printable,
    text_part,
    transformed,
    unescape_python,
    walk,
)


class PythonFolder(Folder):
    _STRINGY = {"string", "concatenated_string", "binary_operator", "call", "subscript", "parenthesized_expression"}

    def collect(self) -> None:
        assignments = []
        for node in walk(self.root):
            if node.type == "assignment":
                left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
                if left is not None and right is not None and left.type == "identifier":
                    assignments.append((self.text(left), right))
        self.resolve_bindings(assignments)

    def _string(self, node: tree_sitter.Node, depth: int) -> Part:
        start = node.child(0)
        prefix = self.text(start).lower() if start is not None else ""
        raw = "r" in prefix
        parts: list[Part] = []
        for child in node.children:
            if child.type == "string_content":
                content = self.text(child)
                decoded = content if raw else unescape_python(content)
                if decoded == content:
                    parts.append(text_part(content, node.start_byte))
                else:
                    parts.append(transformed(decoded))
            elif child.type == "interpolation":
                inner = child.child_by_field_name("expression")
                folded = self.fold(inner, depth + 1)
                parts.append(Part(value=folded.value, segments=folded.segments, literal=True, composed=True)
                             if folded is not None and folded.literal else UNKNOWN_PART)
        if not parts:
            return Part(value="", segments=(), literal=True, composed=False)
        folded = concat(parts)
        return Part(value=folded.value, segments=folded.segments, literal=True, composed=folded.composed)

    def _fold(self, node: tree_sitter.Node, depth: int) -> Part | None:
        kind = node.type
        if kind == "string":
            return self._string(node, depth)
        if kind == "concatenated_string":
            return concat([self.fold(c, depth + 1) or UNKNOWN_PART for c in node.named_children])
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

    def _binary(self, node: tree_sitter.Node, depth: int) -> Part | None:
        op = node.child_by_field_name("operator")
        left = self.fold(node.child_by_field_name("left"), depth + 1)
        right = self.fold(node.child_by_field_name("right"), depth + 1)
        operator = self.text(op) if op is not None else ""
        if operator == "+":
            if left is None and right is None:
                return None
            part = concat([left or UNKNOWN_PART, right or UNKNOWN_PART], composed=True)
            return part if part.literal else None
        if operator == "/" and left is not None and left.literal:  # pathlib: Path("/private") / "data"
            return concat([left, text_part("/", None, literal=False), right or UNKNOWN_PART], composed=True)
        if operator == "%" and left is not None and left.literal:
            args_node = node.child_by_field_name("right")
            args = args_node.named_children if args_node is not None and args_node.type == "tuple" else [args_node]
            values = iter([self.fold(a, depth + 1) for a in args])
            return fill(left, PERCENT_FIELD, lambda m: PERCENT if m.group(0) == "%%" else next(values, None))
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

    def _elements(self, node: tree_sitter.Node | None, depth: int) -> list[Part] | None:
        if node is not None and node.type == "call":
            # reversed("...") and map(chr, [112, ...]): the characters they give, as one part
            positional, _ = self._args(node)
            callee = self.text(node.child_by_field_name("function"))
            if callee == "reversed" and len(positional) == 1:
                inner = self.fold(positional[0], depth + 1)
                return [transformed(inner.value[::-1])] if inner is not None and inner.literal else None
            if callee == "map" and len(positional) == 2 and self.text(positional[0]) == "chr":
                chars = _code_points(self, positional[1])
                return [transformed(chars)] if chars is not None else None
            return None
        if node is None or node.type not in ("list", "tuple", "set"):
            return None
        return [self.fold(c, depth + 1) or UNKNOWN_PART for c in node.named_children if c.type != "comment"]

    def _call(self, node: tree_sitter.Node, depth: int) -> Part | None:
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
                base = text_part("/", None)
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
            return transformed(char) if char is not None else None
        if dotted in ("bytes", "bytearray") and positional and positional[0].type in ("list", "tuple"):
            chars = _code_points(self, positional[0], ascii_only=True)
            return transformed(chars) if chars is not None else None
        if base is not None and method == "join" and len(positional) == 1:
            elements = self._elements(positional[0], depth)
            if elements is None:
                return concat([UNKNOWN_PART], composed=True) if base.literal else None
            pieces: list[Part] = []
            for i, element in enumerate(elements):
                if i:
                    pieces.append(base)
                pieces.append(element)
            return concat(pieces, composed=True) if pieces else text_part("", None)
        if base is not None and method == "format":
            values = [self.fold(a, depth + 1) for a in positional]
            named = {k: self.fold(v, depth + 1) for k, v in keywords.items()}
            auto = iter(range(len(values)))

            def field(m: re.Match[str]) -> Part | None:
                if m.group(0) in ("{{", "}}"):
                    return transformed(m.group(0)[0])
                name = re.split(r"[!:.\[]", m.group(1), maxsplit=1)[0]
                if name == "":
                    index = next(auto, len(values))
                    return values[index] if index < len(values) else None
                if name.isascii() and name.isdigit():  # "²".isdigit() is true, int("²") fails
                    return values[int(name)] if int(name) < len(values) else None
                return named.get(name)

            return fill(base, FORMAT_FIELD, field)
        if base is not None and method in ("lower", "upper", "strip", "lstrip", "rstrip") and not positional:
            return transformed(getattr(base.value, method)())
        if base is not None and method == "replace" and len(positional) >= 2:
            old, new = self.fold(positional[0], depth + 1), self.fold(positional[1], depth + 1)
            if old is not None and new is not None and old.value:
                return transformed(base.value.replace(old.value, new.value))
            return None
        if base is not None and method in ("decode", "encode") and not positional:
            return base  # bytes <-> str of the same text
        if dotted in _PATH_JOINS and positional:
            parts = [self.fold(a, depth + 1) or UNKNOWN_PART for a in positional]
            if not any(p.literal for p in parts):
                return None
            pieces = []
            for i, part in enumerate(parts):
                if i:
                    pieces.append(text_part("/", None, literal=False))
                pieces.append(part)
            return concat(pieces, composed=True)
        if dotted in _URL_JOINS and len(positional) == 2:
            left, right = (self.fold(a, depth + 1) for a in positional)
            if left is None and right is None:
                return None
            return concat([left or UNKNOWN_PART, text_part("/", None, literal=False), right or UNKNOWN_PART],
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
            return transformed(decoded) if printable(decoded) else None
        if dotted == "bytes.fromhex" and len(positional) == 1:
            inner = self.fold(positional[0], depth + 1)
            try:
                decoded = bytes.fromhex(inner.value).decode("utf-8") if inner is not None else ""
            except (ValueError, UnicodeError):
                return None
            return transformed(decoded) if printable(decoded) else None
        if dotted in ("codecs.decode", "codecs.encode") and len(positional) == 2:
            inner, codec = (self.fold(a, depth + 1) for a in positional)
            if inner is not None and codec is not None and codec.value.replace("_", "").lower() == "rot13":
                return transformed(codecs.decode(inner.value, "rot13"))
            return None
        return None

    def _subscript(self, node: tree_sitter.Node, depth: int) -> Part | None:
        value = self.fold(node.child_by_field_name("value"), depth + 1)
        index = node.child_by_field_name("subscript")
        if value is None or not value.literal or index is None:
            return None
        if index.type == "slice" and re.fullmatch(r"::\s*-\s*1", self.text(index).replace(" ", "")):
            return transformed(value.value[::-1])
        bounds = re.fullmatch(r"(-?\d{1,6})?:(-?\d{1,6})?", self.text(index).replace(" ", ""))
        if index.type == "slice" and bounds is not None and UNKNOWN not in value.value:
            start, stop = (int(b) if b is not None else None for b in bounds.groups())
            return transformed(value.value[start:stop])
        return None

    def emitted(self, node: tree_sitter.Node) -> bool:
        # Bare names are left out: the literal they name is emitted where it is written.
        return node.type in self._STRINGY


def _code_points(folder: "PythonFolder", node: tree_sitter.Node | None, ascii_only: bool = False) -> str | None:
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
    return chars if printable(chars) else None


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
