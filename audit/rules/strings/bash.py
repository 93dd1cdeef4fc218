"""Folding shell string expressions: variables assigned once, quoting, ANSI-C strings, ``$(echo … | base64 -d)``."""

from __future__ import annotations

import base64
import binascii
import re

import tree_sitter

from mleaudit.audit.rules.strings.parts import (
    UNKNOWN_PART,
    Folder,
    Part,
    concat,
    printable,
    text_part,
    transformed,
    unescape_python,
    walk,
)

_BASH_ESCAPE = re.compile(r"\\(.)", re.S)

#: ``$(echo TEXT | base64 -d)``: base64 text decoded by a pipeline the folding can read.
_BASH_B64 = re.compile(r"\$\(\s*(?:echo|printf)\s+(?:-[neE]{1,3}\s+)?(['\"]?)([A-Za-z0-9+/=\s]{1,4000})\1\s*\|\s*"
                       r"base64\s+(?:-d|--decode|-D)\s*\)")


class BashFolder(Folder):
    _STRINGY = {"concatenation", "string", "ansi_c_string", "command_substitution"}

    def collect(self) -> None:
        assignments = []
        for node in walk(self.root):
            if node.type == "variable_assignment":
                name, value = node.child_by_field_name("name"), node.child_by_field_name("value")
                if name is not None and value is not None:
                    assignments.append((self.text(name), value))
        self.resolve_bindings(assignments)

    def _fold(self, node: tree_sitter.Node, depth: int) -> Part | None:
        kind = node.type
        if kind == "word":
            raw = self.text(node)
            unescaped = _BASH_ESCAPE.sub(r"\1", raw)
            return text_part(raw, node.start_byte) if unescaped == raw else transformed(unescaped)
        if kind == "raw_string":
            return text_part(self.text(node)[1:-1], node.start_byte + 1)
        if kind == "ansi_c_string":
            return transformed(unescape_python(self.text(node)[2:-1]))
        if kind == "command_substitution":
            found = _BASH_B64.fullmatch(self.text(node))
            if found is None:
                return None
            try:
                decoded = base64.b64decode("".join(found.group(2).split()), validate=True).decode("utf-8")
            except (ValueError, UnicodeError, binascii.Error):
                return None
            return transformed(decoded) if printable(decoded) else None
        if kind == "string_content":
            raw = self.text(node)
            unescaped = re.sub(r'\\([$`"\\\n])', r"\1", raw)
            return text_part(raw, node.start_byte) if unescaped == raw else transformed(unescaped)
        if kind == "string":
            parts = [self.fold(c, depth + 1) or UNKNOWN_PART for c in node.named_children]
            if not parts:
                return Part(value="", segments=(), literal=True, composed=False)
            folded = concat(parts)
            return Part(value=folded.value, segments=folded.segments, literal=True, composed=folded.composed)
        if kind in ("simple_expansion", "expansion"):
            names = [c for c in node.named_children if c.type == "variable_name"]
            if len(names) == 1 and len(node.named_children) == 1:
                return self.name(self.text(names[0]))
            return UNKNOWN_PART
        if kind == "concatenation":
            part = concat([self.fold(c, depth + 1) or UNKNOWN_PART for c in node.named_children], composed=True)
            return part if part.literal else None
        return None

    def emitted(self, node: tree_sitter.Node) -> bool:
        return node.type in self._STRINGY or (node.type == "word" and "\\" in self.text(node))
