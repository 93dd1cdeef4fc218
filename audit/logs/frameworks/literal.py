"""A reader of Python literals as ``repr`` prints them (tool arguments in framework logs); it never evaluates."""

from __future__ import annotations

import re
import unicodedata
from typing import Any

from mleaudit.grading.untrusted_json import ShadowedMember, report_shadowed

__all__ = ["STRING_PREFIX", "read_literal"]

#: Nesting the literal reader follows.
_MAX_LITERAL_DEPTH = 64
_NUMBER = re.compile(r"[-+]?(?:\d[\d_]{0,400}(?:\.[\d_]{0,400})?|\.\d[\d_]{0,400})(?:[eE][-+]?\d{1,6})?j?")
STRING_PREFIX = re.compile(r"(?i:[rbuf]{0,2})(?=['\"])")
_WS = re.compile(r"[ \t\r\n]*")
_SIMPLE_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", "'": "'", '"': '"', "a": "\a", "b": "\b",
                   "f": "\f", "v": "\v", "0": "\0", "\n": ""}


class _Literal:
    """Reads one Python literal: dict, list, tuple, set, str, bytes, number, ``True``/``False``/``None``."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def ws(self) -> None:
        self.pos = _WS.match(self.text, self.pos).end()

    def value(self, depth: int) -> Any:
        if depth > _MAX_LITERAL_DEPTH:
            raise ValueError("literal nested too deep")
        self.ws()
        text, pos = self.text, self.pos
        char = text[pos:pos + 1]
        if char in ("{", "[", "("):
            return self.container(char, depth)
        prefix = STRING_PREFIX.match(text, pos)
        if prefix is not None:
            parts = []
            while prefix is not None:
                parts.append(self.string(prefix.end(), "r" in prefix.group().lower()))
                self.ws()
                prefix = STRING_PREFIX.match(self.text, self.pos)
            return "".join(parts)
        for word, value in (("True", True), ("False", False), ("None", None)):
            if text.startswith(word, pos):
                self.pos = pos + len(word)
                return value
        number = _NUMBER.match(text, pos)
        if number is not None and number.end() > pos:
            self.pos = number.end()
            raw = number.group().replace("_", "")
            try:
                return int(raw)
            except ValueError:
                try:
                    return float(raw)
                except ValueError:
                    return raw
        raise ValueError(f"no literal at offset {pos}")

    def container(self, opener: str, depth: int) -> Any:
        closer = {"{": "}", "[": "]", "(": ")"}[opener]
        self.pos += 1
        items: list[Any] = []
        pairs: dict[Any, Any] = {}
        is_dict: bool | None = None if opener == "{" else False
        while True:
            self.ws()
            if self.text.startswith(closer, self.pos):
                self.pos += 1
                break
            item = self.value(depth + 1)
            self.ws()
            if is_dict is not False and self.text.startswith(":", self.pos):
                is_dict = True
                self.pos += 1
                value = self.value(depth + 1)
                try:
                    key = item if hash(item) is not None else None
                except TypeError:  # a list or dict as a key: kept by its text
                    key = repr(item)[:200]
                if key in pairs:
                    # ``{'query': A, 'query': B}`` evaluates to B: A is read as a hidden member
                    # (mleaudit.audit.logs.shadowed), as a repeated JSON key is.
                    report_shadowed([ShadowedMember(str(key), pairs[key])])
                pairs[key] = value
            elif is_dict:
                raise ValueError("dict entry without a value")
            else:
                is_dict = False
                items.append(item)
            self.ws()
            if self.text.startswith(",", self.pos):
                self.pos += 1
            elif not self.text.startswith(closer, self.pos):
                raise ValueError(f"expected {closer!r} at offset {self.pos}")
        if opener == "{":
            return pairs if is_dict is not False else items
        return items if opener == "[" else tuple(items)

    def string(self, pos: int, raw: bool) -> str:
        text = self.text
        quote = text[pos]
        triple = text.startswith(quote * 3, pos)
        closer = quote * 3 if triple else quote
        pos += len(closer)
        out: list[str] = []
        while True:
            close = text.find(closer, pos)
            if close == -1:
                raise ValueError("unterminated string")
            back = text.find("\\", pos, close)
            if not triple:
                newline = text.find("\n", pos, close)
                if newline != -1 and (back == -1 or newline < back):
                    raise ValueError("newline in a string")
            if back == -1:
                out.append(text[pos:close])
                self.pos = close + len(closer)
                return "".join(out)
            out.append(text[pos:back])
            if back + 1 >= len(text):
                raise ValueError("unterminated string")
            pos = self.escape(back, raw, out)

    def escape(self, back: int, raw: bool, out: list[str]) -> int:
        text = self.text
        char = text[back + 1]
        if raw:
            out.append(text[back:back + 2])
            return back + 2
        if char in _SIMPLE_ESCAPES and not (char == "0" and text[back + 2:back + 3].isdigit()):
            out.append(_SIMPLE_ESCAPES[char])
            return back + 2
        if char in "xuU":
            width = {"x": 2, "u": 4, "U": 8}[char]
            digits = text[back + 2:back + 2 + width]
            if len(digits) == width and all(c in "0123456789abcdefABCDEF" for c in digits):
                code = int(digits, 16)
                out.append(chr(code) if code <= 0x10FFFF else "\ufffd")
                return back + 2 + width
        if char in "01234567":
            end = back + 1
            while end < back + 4 and end < len(text) and text[end] in "01234567":
                end += 1
            out.append(chr(int(text[back + 1:end], 8)))
            return end
        if char == "N" and text.startswith("{", back + 2):
            close = text.find("}", back + 3, back + 200)
            if close != -1:
                try:
                    out.append(unicodedata.lookup(text[back + 3:close]))
                    return close + 1
                except KeyError:
                    pass
        out.append(text[back:back + 2])
        return back + 2


def read_literal(text: str) -> Any:
    """Decode a Python literal as ``repr`` prints it, without evaluating anything.

    Parameters
    ----------
    text : str
        A dict, list, tuple, set, string (any quotes, prefixes, escapes, implicit
        concatenation), number, ``True``, ``False`` or ``None``; untrusted.

    Returns
    -------
    Any
        The value (a set is returned as a list).

    Raises
    ------
    ValueError
        When the text is not one literal, or nests deeper than 64 levels.

    Examples
    --------
    >>> read_literal("{'query': \\"print('a')\\\\nx = 1\\", 'n': (1, None)}")
    {'query': "print('a')\\nx = 1", 'n': (1, None)}
    """
    reader = _Literal(text)
    value = reader.value(0)
    reader.ws()
    if reader.pos != len(text):
        raise ValueError(f"text after the literal at offset {reader.pos}")
    return value
