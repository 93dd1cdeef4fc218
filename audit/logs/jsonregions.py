"""JSON in untrusted log text: bounded decoding, value regions, and what parses of a cut document.

JSON logs are located with the standard decoder's ``raw_decode`` so a string value's region in
the file is exact without a second JSON parser: :func:`json_array_regions` and
:func:`json_member_regions` give each element's or member's place in the text, and their
``_partial`` forms stop at a break instead of raising. Untrusted logs are often cut short (a run
killed mid-write) or damaged: :func:`load_json` reads what parses of such a document and says
where it broke (:class:`JsonBreak`). Every decoder here bounds nesting at :data:`MAX_JSON_DEPTH`
and reports a key written twice in one object (:mod:`mleaudit.grading.untrusted_json`).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from mleaudit.grading import untrusted_json
from mleaudit.grading.untrusted_json import MAX_JSON_DEPTH, count_lone_surrogates

__all__ = [
    "MAX_JSON_DEPTH",
    "loads_json",
    "json_nesting_problem",
    "surrogate_note",
    "JsonBreak",
    "json_array_regions",
    "json_member_regions",
    "json_members_partial",
    "json_value_regions",
    "load_json",
    "string_content",
]

#: Every decoder of the readers builds objects with :func:`mleaudit.grading.untrusted_json.object_from_pairs`,
#: so a key written twice in one object reports the value it hides (see :func:`mleaudit.audit.logs.parse_log`).
_DECODER = json.JSONDecoder(parse_int=untrusted_json.parse_int, object_pairs_hook=untrusted_json.object_from_pairs)
_WS = re.compile(r"[ \t\n\r]*")


def loads_json(text: str) -> Any:
    """Decode one untrusted JSON text (a JSONL record, a tool call's arguments).

    :func:`mleaudit.grading.untrusted_json.loads` (nesting bounded by :data:`MAX_JSON_DEPTH`, lone
    surrogate escapes replaced by U+FFFD), with a fast path for the common case: a text with
    no ``\\u`` escape and fewer brackets than the bound can neither nest too deep nor spell
    a surrogate, so the standard decoder reads it as is.

    Parameters
    ----------
    text : str
        The JSON text (untrusted).

    Returns
    -------
    Any
        The decoded value; every string in it encodes as UTF-8.

    Raises
    ------
    json.JSONDecodeError
        Invalid JSON, or nesting deeper than :data:`MAX_JSON_DEPTH` (the message says
        ``nested N levels deep``).

    Examples
    --------
    >>> loads_json('{"a": "\\\\udfff"}')
    {'a': '\ufffd'}
    """
    if "\\u" not in text and text.count("[") + text.count("{") <= MAX_JSON_DEPTH:
        return _DECODER.decode(text)
    return untrusted_json.loads(text)


def surrogate_note(text: str) -> str | None:
    """A sentence counting the lone surrogate escapes of a JSON text, else ``None``.

    Parameters
    ----------
    text : str
        The raw JSON text (the escapes are counted as written, ``\\udfff``).

    Returns
    -------
    str or None
    """
    if "\\u" not in text:
        return None
    count = count_lone_surrogates(text)
    if not count:
        return None
    return f"{count} lone UTF-16 surrogate escape(s) (such as \\udfff) decoded as U+FFFD"


def json_nesting_problem(text: str) -> str | None:
    """A sentence when ``text`` nests JSON brackets deeper than :data:`MAX_JSON_DEPTH`, else ``None``.

    Parameters
    ----------
    text : str
        A JSON text, or any text meant to hold JSON.

    Returns
    -------
    str or None
        ``"JSON nested N levels deep, deeper than the 200 accepted"``, or ``None`` when the
        text nests no deeper than :data:`MAX_JSON_DEPTH`. Brackets inside string literals are
        not counted (:func:`mleaudit.grading.untrusted_json.json_depth`); a text with fewer brackets
        than the bound is not scanned at all.

    Examples
    --------
    >>> json_nesting_problem("[" * 300 + "]" * 300)
    'JSON nested 300 levels deep, deeper than the 200 accepted'
    >>> json_nesting_problem('{"a": [1, 2]}') is None
    True
    """
    if text.count("[") + text.count("{") <= MAX_JSON_DEPTH:
        return None
    depth = untrusted_json.json_depth(text)
    if depth <= MAX_JSON_DEPTH:
        return None
    return f"JSON nested {depth} levels deep, deeper than the {MAX_JSON_DEPTH} accepted"


def _skip_ws(text: str, pos: int) -> int:
    return _WS.match(text, pos).end()


def json_array_regions(text: str, start: int) -> list[tuple[int, int, Any]]:
    """Elements of the JSON array whose ``[`` is at ``start``: ``(value_start, value_end, value)``.

    Raises
    ------
    ValueError
        If the text at ``start`` is not a well-formed JSON array.
    """
    if text[start : start + 1] != "[":
        raise ValueError(f"no JSON array at offset {start}")
    regions = []
    pos = _skip_ws(text, start + 1)
    if text[pos : pos + 1] == "]":
        return regions
    while True:
        value, end = _DECODER.raw_decode(text, pos)
        regions.append((pos, end, value))
        pos = _skip_ws(text, end)
        sep = text[pos : pos + 1]
        if sep == "]":
            return regions
        if sep != ",":
            raise ValueError(f"expected ',' or ']' at offset {pos}")
        pos = _skip_ws(text, pos + 1)


def json_member_regions(text: str, start: int) -> dict[str, tuple[int, int]]:
    """Top-level members of the JSON object whose ``{`` is at ``start``: key -> value region.

    The region ``(value_start, value_end)`` is half-open and includes a string's quotes.

    Raises
    ------
    ValueError
        If the text at ``start`` is not a well-formed JSON object.
    """
    if text[start : start + 1] != "{":
        raise ValueError(f"no JSON object at offset {start}")
    members: dict[str, tuple[int, int]] = {}
    pos = _skip_ws(text, start + 1)
    if text[pos : pos + 1] == "}":
        return members
    while True:
        key, pos = _DECODER.raw_decode(text, pos)
        if not isinstance(key, str):
            raise ValueError(f"object key is not a string at offset {pos}")
        pos = _skip_ws(text, pos)
        if text[pos : pos + 1] != ":":
            raise ValueError(f"expected ':' at offset {pos}")
        value_start = _skip_ws(text, pos + 1)
        _, value_end = _DECODER.raw_decode(text, value_start)
        members[key] = (value_start, value_end)  # the last value of a repeated key, as decoded
        pos = _skip_ws(text, value_end)
        sep = text[pos : pos + 1]
        if sep == "}":
            return members
        if sep != ",":
            raise ValueError(f"expected ',' or '}}' at offset {pos}")
        pos = _skip_ws(text, pos + 1)


@dataclass(frozen=True, slots=True, kw_only=True)
class JsonBreak:
    """Where a JSON document stops parsing: ``offset`` (0-based character offset), ``line`` and
    ``column`` (1-based) and the decoder's ``message``."""

    offset: int
    line: int
    column: int
    message: str

    def describe(self) -> str:
        """``"line 3, column 7: Unterminated string"``, for reports."""
        return f"line {self.line}, column {self.column}: {self.message}"


#: Containers nested deeper than this are not salvaged (hostile input); real logs nest < 20 deep.
MAX_SALVAGE_DEPTH = 64


def _json_break(text: str, offset: int, message: str) -> JsonBreak:
    offset = max(0, min(offset, len(text)))
    line = text.count("\n", 0, offset) + 1
    column = offset - (text.rfind("\n", 0, offset) + 1) + 1
    return JsonBreak(offset=offset, line=line, column=column, message=message)


def _decode_error(text: str, pos: int, exc: Exception) -> JsonBreak:
    if isinstance(exc, json.JSONDecodeError):
        return _json_break(text, exc.pos, exc.msg)
    return _json_break(text, pos, "nested too deep to decode" if isinstance(exc, RecursionError) else str(exc))


def _add_item(container: list | dict, key: str | None, value: Any) -> None:
    """Append to an array, or set an object's member as ``json.loads`` does (the last value of a
    repeated key wins; the hidden one is reported to :func:`mleaudit.grading.untrusted_json.collect_shadowed`)."""
    if isinstance(container, list):
        container.append(value)
        return
    if key in container:
        untrusted_json.report_shadowed((untrusted_json.ShadowedMember(key, container[key]),))
    container[key] = value


def _salvage(text: str, pos: int, depth: int) -> tuple[Any, int | None, JsonBreak | None]:
    """The value at ``pos``: ``(value, end, None)`` when complete, else ``(partial, None, break)``.

    A broken array keeps its complete elements and a broken object its complete members; the
    broken element (or member value) is kept too when it is itself a salvageable container.
    ``partial`` is ``None`` when nothing at ``pos`` could be read.
    """
    try:
        value, end = _DECODER.raw_decode(text, pos)
        return value, end, None
    except (ValueError, RecursionError) as exc:
        failure = _decode_error(text, pos, exc)
    opener = text[pos : pos + 1]
    if opener not in ("[", "{") or depth >= MAX_SALVAGE_DEPTH:
        return None, None, failure
    container: Any = [] if opener == "[" else {}
    closer = "]" if opener == "[" else "}"
    cursor = _skip_ws(text, pos + 1)
    if text[cursor : cursor + 1] == closer:  # pragma: no cover - raw_decode would have succeeded
        return container, cursor + 1, None
    while True:
        key = None
        if opener == "{":
            try:
                key, cursor = _DECODER.raw_decode(text, cursor)
            except (ValueError, RecursionError) as exc:
                return container, None, _decode_error(text, cursor, exc)
            if not isinstance(key, str):
                return container, None, _json_break(text, cursor, "object key is not a string")
            cursor = _skip_ws(text, cursor)
            if text[cursor : cursor + 1] != ":":
                return container, None, _json_break(text, cursor, "Expecting ':' delimiter")
            cursor = _skip_ws(text, cursor + 1)
        value, end, broke = _salvage(text, cursor, depth + 1)
        if broke is not None:
            if value is not None:
                _add_item(container, key, value)
            return container, None, broke
        _add_item(container, key, value)
        cursor = _skip_ws(text, end)
        sep = text[cursor : cursor + 1]
        if sep == closer:  # pragma: no cover - raw_decode would have succeeded
            return container, cursor + 1, None
        if sep != ",":
            message = "Expecting ',' delimiter" if sep else "Unexpected end of data"
            return container, None, _json_break(text, cursor, message)
        cursor = _skip_ws(text, cursor + 1)


@lru_cache(maxsize=2)
def _load_json_once(text: str) -> tuple[Any, JsonBreak | None, tuple[untrusted_json.ShadowedMember, ...], bool]:
    with untrusted_json.collect_shadowed(propagate=False) as hidden:
        start = _skip_ws(text, 0)
        value, end, broke = _salvage(text, start, 0)
    if broke is None and end is not None and _skip_ws(text, end) != len(text):
        broke = _json_break(text, _skip_ws(text, end), "Extra data")
    return value, broke, tuple(hidden), hidden.overflowed


def load_json(text: str) -> tuple[Any, JsonBreak | None]:
    """Parse a JSON document, keeping what parses when it is cut short or damaged.

    Several adapters try the same file in turn, so the last two results are cached (the text
    is the key; the returned value must not be modified; two bound the memory held). Members
    hidden by a repeated key are reported to :func:`mleaudit.grading.untrusted_json.collect_shadowed` on
    every call.

    Parameters
    ----------
    text : str
        The whole file text.

    Returns
    -------
    (value, JsonBreak or None)
        The document and ``None`` when it is well-formed. Otherwise the containers read up to
        the break (complete elements and members, plus the broken one when it is itself a
        container) and where it broke; ``value`` is ``None`` when the text does not start
        with a JSON value. Text after a complete top-level value is reported as a break
        ("Extra data") with the value kept.

    Examples
    --------
    >>> load_json('[{"a": 1}, {"b": "x')
    ([{'a': 1}, {}], JsonBreak(offset=17, line=1, column=18, message='Unterminated string starting at'))
    """
    value, broke, hidden, overflowed = _load_json_once(text)
    untrusted_json.report_shadowed(hidden, overflowed=overflowed)  # on every call: the cache must not hide them
    return value, broke


def json_value_regions(text: str, start: int) -> tuple[list[tuple[int, int, Any]], bool]:
    """Like :func:`json_array_regions`, but stops at a broken element instead of raising.

    Returns
    -------
    (list of (start, end, value), bool)
        The regions of the elements read, and whether the array was complete. A broken
        element that is a container is included with ``end`` at the end of the text and its
        salvaged value (the same value :func:`load_json` keeps).
    """
    if text[start : start + 1] != "[":
        return [], False
    regions: list[tuple[int, int, Any]] = []
    pos = _skip_ws(text, start + 1)
    if text[pos : pos + 1] == "]":
        return regions, True
    while True:
        value, end, broke = _salvage(text, pos, 1)
        if broke is not None:
            if value is not None:
                regions.append((pos, len(text), value))
            return regions, False
        regions.append((pos, end, value))
        pos = _skip_ws(text, end)
        sep = text[pos : pos + 1]
        if sep == "]":
            return regions, True
        if sep != ",":
            return regions, False
        pos = _skip_ws(text, pos + 1)


def json_members_partial(text: str, start: int) -> dict[str, tuple[int, int]]:
    """Like :func:`json_member_regions`, but returns the members read before a break.

    A member whose value is a broken container is included with its region running to the
    end of the text; a member whose value is a broken scalar is left out.
    """
    members: dict[str, tuple[int, int]] = {}
    if text[start : start + 1] != "{":
        return members
    # _skip_ws inlined: this runs for every member of every JSON object walked
    skip = _WS.match
    pos = skip(text, start + 1).end()
    if text[pos : pos + 1] == "}":
        return members
    scan = _DECODER.scan_once
    while True:
        try:
            # a string key is scanned directly (raw_decode's answer, one call shorter)
            key, pos = scan(text, pos) if text[pos : pos + 1] == '"' else _DECODER.raw_decode(text, pos)
        except (ValueError, RecursionError):
            return members
        pos = skip(text, pos).end()
        if not isinstance(key, str) or text[pos : pos + 1] != ":":
            return members
        value_start = skip(text, pos + 1).end()
        if text[value_start : value_start + 1] not in ("[", "{"):
            # a scalar, or nothing: decoded whole or not at all (what _salvage then says)
            try:
                value_end = scan(text, value_start)[1]
            except (StopIteration, ValueError, RecursionError):
                return members
        else:
            # a container goes through _salvage, as deep in the stack as ever: how deep a
            # document decodes before a RecursionError depends on it
            value, value_end, broke = _salvage(text, value_start, 1)
            if broke is not None:
                if value is not None:
                    members[key] = (value_start, len(text))
                return members
        members[key] = (value_start, value_end)  # the last value of a repeated key, as decoded
        pos = skip(text, value_end).end()
        if text[pos : pos + 1] != ",":
            return members
        pos = skip(text, pos + 1).end()


def string_content(text: str, region: tuple[int, int] | None) -> tuple[int, int] | None:
    """The region inside the quotes when ``region`` holds a JSON string literal, else ``None``."""
    if region is None:
        return None
    start, end = region
    if end - start >= 2 and text[start] == '"' and text[end - 1] == '"':
        return start + 1, end - 1
    return None
