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
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Iterator

import numpy as np

__all__ = ["MAX_INT_DIGITS", "MAX_JSON_DEPTH", "MAX_SHADOWED", "MAX_SHADOWED_CHARS", "ShadowedList", "ShadowedMember", "collect_shadowed", "loads", "loads_unique",
           "json_depth", "object_from_pairs", "parse_int", "replace_surrogates", "report_shadowed",
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


def _may_hold_surrogates(text: str) -> bool:
    """Whether ``text`` may spell a surrogate, as a ``\\uD8xx``-``\\uDFxx`` escape or as a character
    (``False`` is certain; ``True`` may be wrong, e.g. for an escaped backslash before ``ud``)."""
    if "\\ud" in text or "\\uD" in text:
        return True
    if text.isascii():
        return False
    try:
        text.encode("utf-8")  # refuses exactly the texts holding a surrogate character
    except UnicodeEncodeError:
        return True
    return False


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


@dataclass(frozen=True, slots=True)
class ShadowedMember:
    """A member of a JSON object hidden by a later member with the same key.

    ``json.loads`` (like most JSON readers) keeps only the last value of a key written twice
    in one object (RFC 8259, section 4: names "SHOULD be unique", behaviour otherwise
    unpredictable), so ``{"code": A, "code": B}`` reads as ``{"code": B}`` and ``A`` is never
    seen. No serializer writes such an object; a file holding one was edited by hand.

    Attributes
    ----------
    key : str
        The repeated key.
    value : Any
        The hidden (earlier) value, as decoded.
    """

    key: str
    value: Any


#: Hidden members kept per collection (a hostile file can repeat a key millions of times); past it, or
#: past :data:`MAX_SHADOWED_CHARS` characters of hidden text, the collection says it overflowed.
MAX_SHADOWED = 100_000
#: Characters of hidden strings kept per collection.
MAX_SHADOWED_CHARS = 64 * 1024 * 1024

_SHADOWED: ContextVar["ShadowedList | None"] = ContextVar("shadowed_json_members", default=None)


def object_from_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``object_pairs_hook`` building the dict ``json.loads`` builds (the last value of a key wins),
    reporting the members it hides to the innermost :func:`collect_shadowed` block.

    Examples
    --------
    >>> with collect_shadowed() as hidden:
    ...     value = json.loads('{"code": "A", "code": "B"}', object_pairs_hook=object_from_pairs)
    >>> value, hidden
    ({'code': 'B'}, [ShadowedMember(key='code', value='A')])
    """
    obj = dict(pairs)
    if len(obj) != len(pairs):
        sink = _SHADOWED.get()
        if sink is not None:
            last = {key: index for index, (key, _) in enumerate(pairs)}
            report_shadowed(ShadowedMember(key, value) for index, (key, value) in enumerate(pairs)
                            if last[key] != index)
    return obj


def report_shadowed(members: Iterator[ShadowedMember] | tuple[ShadowedMember, ...] | list[ShadowedMember], *,
                    overflowed: bool = False) -> None:
    """Add hidden members to the innermost :func:`collect_shadowed` block (none: dropped).

    Readers that cache decoded documents call it to report, on every use, what the decode
    that filled the cache found (``overflowed``: it met more than it kept).
    """
    sink = _SHADOWED.get()
    if sink is None:
        return
    for member in members:
        size = _size(member.value)
        if len(sink) >= MAX_SHADOWED or sink.chars + size > MAX_SHADOWED_CHARS:
            sink.overflowed = True
            break
        sink.chars += size
        sink.append(member)
    if overflowed:
        sink.overflowed = True


def _size(value: Any, depth: int = 0) -> int:
    """Characters of the strings in a decoded value (1 per scalar), as far as 32 levels down."""
    if isinstance(value, str):
        return len(value) + 1
    if depth > 32:
        return 1
    if isinstance(value, dict):
        return 1 + sum(len(str(key)) + _size(item, depth + 1) for key, item in value.items())
    if isinstance(value, list):
        return 1 + sum(_size(item, depth + 1) for item in value)
    return 1


class ShadowedList(list):
    """The members a :func:`collect_shadowed` block collected; ``overflowed`` when some were dropped."""

    def __init__(self) -> None:
        super().__init__()
        self.overflowed = False
        self.chars = 0

    @classmethod
    def joined(cls, *parts: "ShadowedList") -> "ShadowedList":
        """One list of the members of ``parts``, overflowed when any of them is."""
        whole = cls()
        for part in parts:
            whole.extend(part)
            whole.chars += getattr(part, "chars", 0)
            whole.overflowed = whole.overflowed or getattr(part, "overflowed", False)
        return whole


@contextmanager
def collect_shadowed(*, propagate: bool = True) -> Iterator["ShadowedList"]:
    """Collect the members that decodes with :func:`object_from_pairs` hide, inside the block.

    Parameters
    ----------
    propagate : bool
        Whether an enclosing block receives them too when this one ends (``False`` for a
        cache that reports them itself on each use).

    Yields
    ------
    ShadowedList
        A list of :class:`ShadowedMember`, filled as decodes in the block (in this thread or
        task) meet repeated keys, at most :data:`MAX_SHADOWED` of them and
        :data:`MAX_SHADOWED_CHARS` characters; ``overflowed`` is set when more were met.
    """
    found = ShadowedList()
    token = _SHADOWED.set(found)
    try:
        yield found
    finally:
        _SHADOWED.reset(token)
        if propagate:
            report_shadowed(found, overflowed=found.overflowed)


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

    Notes
    -----
    Objects are built by :func:`object_from_pairs`: a key written twice keeps its last value,
    as ``json.loads`` does, and the hidden member goes to the enclosing :func:`collect_shadowed`.

    Examples
    --------
    >>> loads('["\\\\udfff", "\\\\ud83d\\\\ude00"]') == ["\\ufffd", "\\U0001F600"]
    True
    """
    if isinstance(text, (bytes, bytearray)):
        text = bytes(text).decode("utf-8", errors="replace")
    # Fewer brackets than the limit cannot nest deeper than it; otherwise the depth is measured on
    # the decoded value (a walk over its containers), which costs far less than a scan of the
    # text's string literals. The decoder itself guards its recursion (RecursionError below).
    may_be_deep = text.count("[") + text.count("{") > max_depth
    if _may_hold_surrogates(text):
        text = replace_surrogates(_SURROGATE_ESCAPE.sub(_pair_or_replacement, text))
    if not may_be_deep:
        try:
            return json.loads(text, parse_int=parse_int, object_pairs_hook=object_from_pairs)
        except RecursionError:
            raise _too_deep(text, max_depth) from None
    # A text refused for its depth reports no hidden members: they are held back until it passes.
    with collect_shadowed(propagate=False) as hidden:
        try:
            value = json.loads(text, parse_int=parse_int, object_pairs_hook=object_from_pairs)
        except RecursionError:
            raise _too_deep(text, max_depth) from None
        except json.JSONDecodeError:
            if json_depth(text) > max_depth:
                raise _too_deep(text, max_depth) from None
            raise
    if _value_depth(value, max_depth) > max_depth:
        raise _too_deep(text, max_depth)
    report_shadowed(hidden, overflowed=hidden.overflowed)
    return value


def _too_deep(text: str, max_depth: int) -> json.JSONDecodeError:
    """The error for a text nested deeper than ``max_depth``, naming its depth when it can be measured."""
    depth = json_depth(text)
    if depth > max_depth:
        return json.JSONDecodeError(f"nested {depth} levels deep, deeper than the {max_depth} accepted", text, 0)
    return json.JSONDecodeError(f"nested deeper than the {max_depth} levels accepted", text, 0)


def _value_depth(value: Any, limit: int) -> int:
    """Nesting depth of the lists and dicts of a decoded JSON value (``[]`` is 1), or a number
    above ``limit`` as soon as one container lies deeper than it."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        children = node.values() if isinstance(node, dict) else node if isinstance(node, list) else None
        if children is None:
            continue
        if depth > deepest:
            deepest = depth
            if deepest > limit:
                return deepest
        stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))
    return deepest


def loads_unique(text: str | bytes, *, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """:func:`loads` for records that have no reason to repeat a key (run metadata, sandbox records,
    run groups, submission lists): an object with a key written twice is refused, since a reader
    would keep only its last value and what the first one says would go unread.

    Raises
    ------
    json.JSONDecodeError
        As :func:`loads`, and for a repeated key (the message names it).

    Examples
    --------
    >>> loads_unique('{"events": [1], "events": []}')
    Traceback (most recent call last):
    ...
    json.decoder.JSONDecodeError: key 'events' written more than once in one object (a reader keeps only the last value): line 1 column 1 (char 0)
    """
    with collect_shadowed(propagate=False) as hidden:
        value = loads(text, max_depth=max_depth)
    if hidden or hidden.overflowed:
        key = hidden[0].key[:80] if hidden else "?"
        document = text if isinstance(text, str) else bytes(text).decode("utf-8", errors="replace")
        raise json.JSONDecodeError(f"key {key!r} written more than once in one object (a reader keeps only the last "
                                   "value)", document, 0)
    return value

