"""JSON values located in a notebook's text: objects' members and arrays' elements with their offsets.

The outputs reader (:mod:`mleaudit.audit.notebooks.outputs`) locates each text it reads in the
file with these, through the standard decoder's C scanner: a few linear passes over the file.
"""

from __future__ import annotations

import json
import json.scanner
import re
from typing import Any

from mleaudit.audit.textmap import TextMap


_DECODER = json.JSONDecoder()
# The decoder's C scanner, called directly: one call per value, no wrapper per call.
_SCAN = json.scanner.make_scanner(_DECODER)
_WS = re.compile(r"[ \t\n\r]*")
_WS_CHARS = " \t\n\r"


def _skip_ws(text: str, pos: int) -> int:
    return _WS.match(text, pos).end() if text[pos : pos + 1] in _WS_CHARS and pos < len(text) else pos


def _scan(text: str, pos: int) -> tuple[Any, int]:
    """The JSON value at ``pos`` and where it ends."""
    try:
        return _SCAN(text, pos)
    except StopIteration:
        raise ValueError(f"no JSON value at offset {pos}") from None


def _members(text: str, start: int) -> dict[str, tuple[int, int, Any]]:
    """Members of the JSON object at ``start``: key -> (value start, value end, value); the last
    of a repeated key wins, as in the decoder that read the notebook."""
    members: dict[str, tuple[int, int, Any]] = {}
    if text[start : start + 1] != "{":
        return members
    scan, space, blank = _scan, _WS.match, _WS_CHARS
    pos = start + 1
    if text[pos : pos + 1] in blank:
        pos = space(text, pos).end()
    if text[pos : pos + 1] == "}":
        return members
    while True:
        key, pos = scan(text, pos)
        if text[pos : pos + 1] in blank:
            pos = space(text, pos).end()
        if not isinstance(key, str) or text[pos : pos + 1] != ":":
            raise ValueError(f"malformed object at offset {pos}")
        pos += 1
        if text[pos : pos + 1] in blank:
            pos = space(text, pos).end()
        value, value_end = scan(text, pos)
        members[key] = (pos, value_end, value)
        pos = value_end
        if text[pos : pos + 1] in blank:
            pos = space(text, pos).end()
        sep = text[pos : pos + 1]
        if sep == "}":
            return members
        if sep != ",":
            raise ValueError(f"malformed object at offset {pos}")
        pos += 1
        if text[pos : pos + 1] in blank:
            pos = space(text, pos).end()


def _items(text: str, start: int) -> list[tuple[int, int, Any]]:
    """Elements of the JSON array at ``start``: (start, end, value)."""
    items: list[tuple[int, int, Any]] = []
    if text[start : start + 1] != "[":
        return items
    scan, space, blank = _scan, _WS.match, _WS_CHARS
    pos = start + 1
    if text[pos : pos + 1] in blank:
        pos = space(text, pos).end()
    if text[pos : pos + 1] == "]":
        return items
    while True:
        value, end = scan(text, pos)
        items.append((pos, end, value))
        pos = end
        if text[pos : pos + 1] in blank:
            pos = space(text, pos).end()
        sep = text[pos : pos + 1]
        if sep == "]":
            return items
        if sep != ",":
            raise ValueError(f"malformed array at offset {pos}")
        pos += 1
        if text[pos : pos + 1] in blank:
            pos = space(text, pos).end()


def _add_value(target: TextMap, text: str, start: int, end: int, value: Any, separator: str = "") -> None:
    """Add a string, a list of strings (nbformat's multi-line text) or any other JSON value
    (its text as written) to ``target``, located in ``text``."""
    if isinstance(value, str):
        if value:
            target.add_literal(text, start + 1, end - 1, value)
        return
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        first = True
        for item_start, item_end, item in _items(text, start):
            if not item:
                continue
            if not first and separator:
                target.add_filler(separator)
            target.add_literal(text, item_start + 1, item_end - 1, item)
            first = False
        return
    if value is None or isinstance(value, (bool, int, float)) or not value:
        return
    target.add_verbatim(text[start:end], start)


def _separate(target: TextMap) -> None:
    if target.length and not target.text.endswith("\n"):
        target.add_filler("\n")
