"""JSON decoding for files an agent or an operator may have written to break the reader.

``json.loads`` recurses once per nesting level, so about a thousand nested brackets raise
``RecursionError`` (and fewer can still exhaust the stack of the code that walks the value);
JSON escapes may also spell lone UTF-16 surrogates (``"\\udfff"``) that no UTF-8 encoder
accepts. :func:`loads` bounds the nesting before decoding and replaces lone surrogates with
U+FFFD, raising only :class:`json.JSONDecodeError`, which callers already handle as "invalid
JSON". It lives in ``grading`` because that is the lowest layer: the audit's readers, the run
group and submission-list readers and the reviewer baseline all use it.
"""

from __future__ import annotations

import json
import re
from typing import Any

import numpy as np

__all__ = ["MAX_INT_DIGITS", "MAX_JSON_DEPTH", "loads", "json_depth", "parse_int", "replace_surrogates",
           "count_lone_surrogates"]

#: Deepest nesting of arrays and objects accepted. Real run files (AIDE journals, Inspect logs,
#: OpenHands event lists, MLE-bench metadata) nest fewer than 30 levels.
MAX_JSON_DEPTH = 200

# A JSON string literal (possibly unterminated at the end of the text).
_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"?', re.DOTALL)  # unrolled: no per-character alternation
# Escaped backslashes first, so that `\\udfff` (a backslash, then text) is left alone; then a
# valid surrogate pair, kept; then a lone surrogate escape, replaced.
_SURROGATE_ESCAPE = re.compile(
    r"\\\\|(\\u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2})|\\u[dD][89a-fA-F][0-9a-fA-F]{2}"
)
_SURROGATE_CHAR = re.compile("[\ud800-\udfff]")
_BRACKETS = str.maketrans({"[": "(", "{": "(", "]": ")", "}": ")"})


def json_depth(text: str) -> int:
    """Deepest nesting of ``[``/``{`` in ``text``, ignoring brackets inside string literals.

    Linear in the length of ``text`` with no Python-level loop per character.

    Examples
    --------
    >>> json_depth('{"a": [1, {"b": "]]]"}]}')
    3
    >>> json_depth('"[["')
    0
    """
    skeleton = _STRING.sub("", text)
    brackets = re.sub(r"[^\[\]{}]+", "", skeleton).translate(_BRACKETS)
    if not brackets:
        return 0
    codes = np.frombuffer(brackets.encode("ascii"), dtype=np.uint8)
    steps = np.where(codes == ord("("), 1, -1).astype(np.int64)
    return int(max(np.cumsum(steps).max(), 0))


def _pair_or_replacement(match: re.Match[str]) -> str:
    text = match.group(0)
    if text == "\\\\" or match.group(1) is not None:
        return text
    return "\\ufffd"


def count_lone_surrogates(text: str) -> int:
    """How many lone UTF-16 surrogates ``text`` spells, as ``\\uXXXX`` escapes or as characters."""
    escapes = sum(1 for m in _SURROGATE_ESCAPE.finditer(text) if m.group(0) != "\\\\" and m.group(1) is None)
    return escapes + len(_SURROGATE_CHAR.findall(text))


def replace_surrogates(text: str) -> str:
    """``text`` with every lone surrogate character replaced by U+FFFD (then it encodes as UTF-8)."""
    return _SURROGATE_CHAR.sub("\ufffd", text)


#: Longest integer literal read as an int: Python refuses to convert longer digit strings
#: (``sys.get_int_max_str_digits``, 4,300 by default), which would make the whole text unreadable.
MAX_INT_DIGITS = 4000


def parse_int(digits: str) -> int | float:
    """A JSON integer literal as ``int``, or as ``float`` (``inf`` when it overflows) when it has
    more than :data:`MAX_INT_DIGITS` digits, so that one hostile number never hides the rest of
    the text (``json.loads(..., parse_int=parse_int)``).

    Examples
    --------
    >>> parse_int("-12"), parse_int("9" * 5000)
    (-12, inf)
    """
    if len(digits) <= MAX_INT_DIGITS:
        return int(digits)
    return float(digits)


def loads(text: str | bytes, *, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """Decode untrusted JSON text: nesting bounded, lone surrogates replaced by U+FFFD.

    Parameters
    ----------
    text : str or bytes
        The JSON text (bytes are decoded as UTF-8 with replacement characters).
    max_depth : int
        Deepest nesting of arrays and objects accepted (:data:`MAX_JSON_DEPTH`).

    Returns
    -------
    Any
        What ``json.loads`` returns; every string in it encodes as UTF-8.

    Raises
    ------
    json.JSONDecodeError
        Invalid JSON, or nesting deeper than ``max_depth`` (the message says which).

    Examples
    --------
    >>> loads('["\\\\udfff", "\\\\ud83d\\\\ude00"]') == ["\\ufffd", "\\U0001F600"]
    True
    """
    if isinstance(text, (bytes, bytearray)):
        text = bytes(text).decode("utf-8", errors="replace")
    depth = json_depth(text)
    if depth > max_depth:
        raise json.JSONDecodeError(f"nested {depth} levels deep, deeper than the {max_depth} accepted", text, 0)
    if "\\u" in text or _SURROGATE_CHAR.search(text):
        text = replace_surrogates(_SURROGATE_ESCAPE.sub(_pair_or_replacement, text))
    try:
        return json.loads(text, parse_int=parse_int)
    except RecursionError:
        raise json.JSONDecodeError(f"nested deeper than the {max_depth} levels accepted", text, 0) from None
