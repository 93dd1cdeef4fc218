"""Helpers shared by the log adapters: fast spans, JSON value regions, code-language guesses.

Log adapters turn a log file's text into :class:`mleaudit.audit.units.LogEvent` records whose spans
point back into that text. Logs can be large (tens of MB, hundreds of thousands of lines), so
spans are built from a precomputed line index instead of counting newlines for every event,
and JSON logs are located with the standard decoder's ``raw_decode`` so a string value's
region in the file is exact without a second JSON parser.

Untrusted logs are often cut short (a run killed mid-write) or damaged. :func:`load_json` reads
what parses of such a JSON document and says where it broke, and :class:`EventList` stops an
adapter once a log has given :data:`MAX_LOG_EVENTS` events, so one huge log cannot exhaust
memory.
"""

from __future__ import annotations

import json
import re
from bisect import bisect_right
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from mleaudit.audit.model import Span
from mleaudit.audit.units import LogEvent
from mleaudit.grading import untrusted_json
from mleaudit.grading.untrusted_json import MAX_JSON_DEPTH, count_lone_surrogates

__all__ = [
    "CUT_SHORT",
    "is_cut_short",
    "MAX_JSON_DEPTH",
    "loads_json",
    "json_nesting_problem",
    "surrogate_note",
    "lines_start_with",
    "MAX_LOG_EVENTS",
    "EventList",
    "EventLimitReached",
    "JsonBreak",
    "SpanMaker",
    "guess_code_language",
    "json_array_regions",
    "json_member_regions",
    "load_json",
    "string_content",
]

#: ``LogEvent.location`` of an event the log ends inside (a fenced code block never closed): the
#: log was cut short there, and what the agent did after it is not in the log.
CUT_SHORT = "cut short: the log ends inside this block"


def is_cut_short(event: LogEvent) -> bool:
    """Whether the log ends inside ``event`` (see :data:`CUT_SHORT`).

    Parameters
    ----------
    event : LogEvent

    Returns
    -------
    bool
    """
    return event.location == CUT_SHORT


#: The most events one log gives; an adapter stops at the next one and the rest of the log is
#: reported as not read. 100 000 events is far more than real runs produce (the longest real
#: logs give a few thousand) and keeps a log's events within a few hundred MB.
MAX_LOG_EVENTS = 100_000


class EventLimitReached(Exception):
    """Raised by :meth:`EventList.append` for the first event past :data:`MAX_LOG_EVENTS`.

    ``event`` is the refused event (its span says where reading stopped), ``events`` the list
    with the events kept and ``limit`` the cap.
    """

    def __init__(self, event: LogEvent, events: "EventList") -> None:
        super().__init__(f"over {events.limit} events")
        self.event = event
        self.events = events
        self.limit = events.limit


class EventList(list):
    """A list of events that refuses to grow past :data:`MAX_LOG_EVENTS` (read when created).

    Adapters collect their events in one; :func:`mleaudit.audit.logs.parse_log` catches
    :class:`EventLimitReached` and keeps the events gathered so far.
    """

    __slots__ = ("limit",)

    def __init__(self) -> None:
        super().__init__()
        self.limit = MAX_LOG_EVENTS

    def append(self, event: LogEvent) -> None:  # noqa: D102 - list.append with a cap
        if len(self) >= self.limit:
            raise EventLimitReached(event, self)
        super().append(event)


class SpanMaker:
    """Builds :class:`Span` records for one text; equal to ``Span.from_offsets`` but O(log n).

    Parameters
    ----------
    text : str
        The whole file text.
    path : str
        POSIX path of the file, relative to the run root.
    """

    __slots__ = ("text", "path", "_starts")

    def __init__(self, text: str, path: str) -> None:
        self.text = text
        self.path = path
        starts = [0]
        find = text.find
        pos = find("\n")
        while pos != -1:
            starts.append(pos + 1)
            pos = find("\n", pos + 1)
        self._starts = starts

    def _point(self, offset: int) -> tuple[int, int]:
        index = bisect_right(self._starts, offset) - 1
        return index + 1, offset - self._starts[index] + 1

    def span(self, start: int, end: int) -> Span:
        """The span of characters ``[start, end)`` (clamped to the text)."""
        start = max(0, min(start, len(self.text)))
        end = max(start, min(end, len(self.text)))
        start_line, start_col = self._point(start)
        end_line, end_col = self._point(end)
        return Span(
            path=self.path,
            start_byte=start,
            end_byte=end,
            start_line=start_line,
            start_col=start_col,
            end_line=end_line,
            end_col=end_col,
        )

    def line_span(self, offset: int) -> Span:
        """The span of the whole line holding ``offset`` (without its newline)."""
        index = bisect_right(self._starts, max(0, min(offset, len(self.text)))) - 1
        start = self._starts[index]
        end = self.text.find("\n", start)
        return self.span(start, len(self.text) if end == -1 else end)


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
    pos = _skip_ws(text, start + 1)
    if text[pos : pos + 1] == "}":
        return members
    while True:
        try:
            key, pos = _DECODER.raw_decode(text, pos)
        except (ValueError, RecursionError):
            return members
        pos = _skip_ws(text, pos)
        if not isinstance(key, str) or text[pos : pos + 1] != ":":
            return members
        value_start = _skip_ws(text, pos + 1)
        value, value_end, broke = _salvage(text, value_start, 1)
        if broke is not None:
            if value is not None:
                members[key] = (value_start, len(text))
            return members
        members[key] = (value_start, value_end)  # the last value of a repeated key, as decoded
        pos = _skip_ws(text, value_end)
        sep = text[pos : pos + 1]
        if sep != ",":
            return members
        pos = _skip_ws(text, pos + 1)


def string_content(text: str, region: tuple[int, int] | None) -> tuple[int, int] | None:
    """The region inside the quotes when ``region`` holds a JSON string literal, else ``None``."""
    if region is None:
        return None
    start, end = region
    if end - start >= 2 and text[start] == '"' and text[end - 1] == '"':
        return start + 1, end - 1
    return None


#: Command words that start a shell script rather than Python (not followed by ``=``, ``(``,
#: ``.`` or ``[``, which would make them Python names).
SHELL_WORDS = (
    "apt", "apt-get", "awk", "bash", "cat", "cd", "chmod", "conda", "cp", "curl", "df", "du", "echo",
    "export", "find", "git", "grep", "head", "kaggle", "kill", "ls", "mkdir", "mv", "nohup",
    "nvidia-smi", "pip", "pip3", "pkill", "ps", "python", "python3", "rm", "sed", "sh", "source",
    "sudo", "tail", "tar", "tee", "timeout", "touch", "uv", "unzip", "wc", "wget",
)  # fmt: skip
_SHELL_START = re.compile(
    r"^[ \t]*(?:"
    + "|".join(re.escape(w) for w in sorted(SHELL_WORDS, key=len, reverse=True))
    + r")(?=[ \t;&|<>]|$)(?![ \t]*=)"
)
_SHEBANG = re.compile(r"^#![ \t]*(?:/usr)?/bin/(?:env[ \t]+)?(\w+)")


def guess_code_language(text: str) -> str:
    """``"bash"`` when a block of executed code is a shell script, else ``"python"``.

    Agents run shell scripts through the same "code" action as Python (``cat > f.py <<'EOF'``,
    ``cd /home/code && python train.py``). The first line that is not blank and not a comment
    decides: a shell shebang or a known command word (:data:`SHELL_WORDS`) means bash.

    Examples
    --------
    >>> guess_code_language("cd /home/code && python train.py")
    'bash'
    >>> guess_code_language("import pandas as pd\\ncat = pd.read_csv('x.csv')")
    'python'
    """
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped:
            continue
        shebang = _SHEBANG.match(stripped)
        if shebang is not None:
            return "python" if shebang.group(1).startswith("python") else "bash"
        if stripped.startswith("#"):
            continue
        return "bash" if _SHELL_START.match(line) else "python"
    return "python"


def lines_start_with(text: str, prefix: re.Pattern[str], *, sample: int = 5, needed: int = 3) -> bool:
    """Whether at least ``needed`` of the first ``sample`` non-blank lines match ``prefix``.

    The format sniff of line-prefixed logs (MLE-bench's ``run.log``, Python ``logging`` output):
    only the first 64 KiB are looked at, so detection stays cheap on huge files.
    """
    lines = [line for line in text[:65536].splitlines() if line.strip()][:sample]
    return len(lines) >= needed and sum(1 for line in lines if prefix.match(line)) >= needed
