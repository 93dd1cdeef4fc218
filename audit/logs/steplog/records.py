"""Records of a step log: where each starts (a time stamp, or a tag at a line start), its level,
logger name and tag, and whether a log has enough tagged records to be a step log."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from mleaudit.audit.logs.common import AtLineStart

__all__ = ["AFTER_TAG", "REACT_DETECT", "REACT_LINES", "TAG_COLON", "Record", "end_of_line", "split_records", "tagged_enough", "trim"]

_STAMP = (
    r"(?:\d{4}[-/]\d\d[-/]\d\d[ T_]\d\d:\d\d(?::\d\d(?:[,.]\d{1,9})?)?(?:[ \t]?(?:Z|UTC|[+-]\d\d:?\d\d))?"
    r"|\d\d:\d\d:\d\d(?:[,.]\d{1,9})?)"
)
_LEVEL = r"(?:DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL|FATAL|TRACE|NOTICE)"
_SEP = r"(?:[ \t]*[|:-][ \t]+|[ \t]+|(?=\n)|$)"
#: The head of a timestamped record: time (bare, ``[...]`` or ``(...)``), then a level.
_HEAD = AtLineStart(
    r"[ \t]*(?:\[" + _STAMP + r"\]|\(" + _STAMP + r"\)|" + _STAMP + r")" + _SEP
    + r"(?:(?P<level>\[?" + _LEVEL + r"\]?)" + _SEP + r")?"
)
#: A logger name after the level: ``agent:``, ``agent -``, ``agent |``, ``[agent]``, ``[agent.py:42]``.
_LOGGER = re.compile(r"(?:\[[\w.<>/:-]{1,200}\]|[\w.<>/-]{1,200}(?::|[ \t]+[-|]))[ \t]+")
_THOUGHT_TAGS = "THOUGHTS|THOUGHT|THINKING|THINK|REASONING|PLAN"
_ACTION_TAGS = "ACTION|TOOL[ _-]?CALL|TOOL[ _-]?USE|TOOL"
_OBSERVATION_TAGS = "OBSERVATION|TOOL[ _-]?RESULT|TOOL[ _-]?OUTPUT|RESULT|OUTPUT|STDOUT|OBS"
_INPUT_TAGS = r"ACTION[ _-]?INPUT|TOOL[ _-]?INPUT|TOOL[ _-]?ARGS|TOOL[ _-]?ARGUMENTS"
_COMMAND_TAGS = "COMMAND|CMD|SHELL|BASH|TERMINAL"
_CODE_TAGS = "CODE|PYTHON|IPYTHON"
# Input tags first: ``ACTION INPUT`` must not read as ``ACTION`` with a tool named ``INPUT``.
_TAG_NAMES = "|".join((_THOUGHT_TAGS, _OBSERVATION_TAGS, _INPUT_TAGS, _ACTION_TAGS))
#: Tags that name the command or code itself, only with a colon or brackets (``COMMAND: ls``,
#: ``[CODE]``): in capitals alone they are words of program output (``CODE 200``).
_LABEL_NAMES = "|".join((_COMMAND_TAGS, _CODE_TAGS))
#: A tag: ``[ACTION]``, ``<ACTION>``, ``Action:`` / ``Observation (exit=0):`` in any case,
#: ``ACTION`` in capitals. Possessive and bounded: a long line without a tag fails at once.
_TAG = re.compile(
    r"\[(?P<b>(?i:" + _TAG_NAMES + "|" + _LABEL_NAMES + r"))\]"
    r"|<(?P<a>(?i:" + _TAG_NAMES + "|" + _LABEL_NAMES + r"))>"
    r"|(?P<c>(?i:" + _TAG_NAMES + "|" + _LABEL_NAMES + r"))(?=[ \t]*+(?::|\([^)\n]{0,200}\)[ \t]*+:))"
    r"|(?P<u>" + _TAG_NAMES + r")(?![\w-])"
)
_TAG_CLASSES = (
    ("thought", re.compile(_THOUGHT_TAGS, re.IGNORECASE)),
    ("input", re.compile(_INPUT_TAGS, re.IGNORECASE)),
    ("action", re.compile(_ACTION_TAGS, re.IGNORECASE)),
    ("command", re.compile(_COMMAND_TAGS, re.IGNORECASE)),
    ("code", re.compile(_CODE_TAGS, re.IGNORECASE)),
)
#: What may stand between a THOUGHT/OBSERVATION tag and the colon that ends its header.
TAG_COLON = re.compile(r"[ \t]*+(?:\([^)\n]{0,200}\)|\[[^\]\n]{0,200}\]|[\w.-]{1,80})?[ \t]*+:[ \t]?")
#: Old-style detection: one record with a logger name and a tag is enough.
REACT_LINES = AtLineStart(
    r"\d{4}-\d\d-\d\d[ T][\d:,.]+[ \t]+(?:[A-Z]+[ \t]+)?[\w.-]+:[ \t]+(?:THOUGHT|ACTION|OBSERVATION)\b"
)
REACT_DETECT = REACT_LINES.pattern
AFTER_TAG = re.compile(r"[ \t]*(?:[:=][ \t]*)?")


@dataclass(frozen=True, slots=True)
class Record:
    """One record of a step log: its place, its tag and whether it names a logger."""

    line_start: int  # where the record's line starts
    body: int  # after the time, level, logger and tag
    end: int  # where the next record starts
    tag: str  # "thought", "action", "input", "command", "code", "observation" or "" (no tag)
    tag_end: int  # after the tag ("" records: == body)
    logger: bool


def _tag_class(match: re.Match[str]) -> str:
    name = match.group("b") or match.group("a") or match.group("c") or match.group("u")
    return _name_class(name.upper())


@functools.lru_cache(maxsize=256)
def _name_class(name: str) -> str:
    return next((tag for tag, pattern in _TAG_CLASSES if pattern.fullmatch(name)), "observation")


def _tag_at(text: str, pos: int, end: int) -> re.Match[str] | None:
    return _TAG.match(text, pos, end)


def _record_head(text: str, head_end: int, level: bool, end: int) -> tuple[int, str, int, bool]:
    """``(body, tag, tag_end, logger)`` of the record whose head (time, level) ends at ``head_end``."""
    line_end = text.find("\n", head_end, end)
    line_end = end if line_end == -1 else line_end
    tag = _tag_at(text, head_end, line_end)
    if tag is not None:
        return tag.start(), _tag_class(tag), tag.end(), False
    logger = _LOGGER.match(text, head_end, line_end)
    if logger is not None:
        tag = _tag_at(text, logger.end(), line_end)
        if tag is not None:
            return tag.start(), _tag_class(tag), tag.end(), True
        if level:
            return logger.end(), "", logger.end(), True
    return head_end, "", head_end, False


#: Where a record may start in a step log without time stamps: a line that starts with a tag.
_BARE_LINE = AtLineStart(r"[ \t]*(?=(?:\[|<|\*\*)?(?i:THOUGHTS?|THINKING|ACTION|OBSERVATION)(?![\w-]))")
_BARE_TAGS = frozenset({"thought", "action", "input", "observation"})


def _heads(text: str, end: int, bare: bool) -> list[tuple[int, int, bool]]:
    """``(line start, head end, has a level)`` of each record head in ``text[:end]``: time-stamped
    lines, or (``bare``) lines that start with a THOUGHT/ACTION/OBSERVATION tag."""
    # both patterns match within one line (AtLineStart.matches)
    if not bare:
        return [(line_start, m.end(), bool(m.group("level"))) for line_start, m in _HEAD.matches(text, end)]
    heads = []
    for line_start, match in _BARE_LINE.matches(text, end):
        tag = _tag_at(text, match.end(), end_of_line(text, match.end(), end))
        if tag is not None and _tag_class(tag) in _BARE_TAGS:
            heads.append((line_start, match.end(), False))
    return heads


def split_records(text: str, bare: bool = False) -> list[Record]:
    """The records of ``text``, in order: time-stamped ones, or (``bare``) those at lines that start with a tag."""
    end = len(text)
    heads = _heads(text, end, bare)
    records = []
    for number, (line_start, head_end, level) in enumerate(heads):
        record_end = heads[number + 1][0] if number + 1 < len(heads) else end
        body, tag, tag_end, logger = _record_head(text, head_end, level, record_end)
        records.append(Record(line_start=line_start, body=body, end=record_end, tag=tag, tag_end=tag_end,
                               logger=logger))
    return records


def tagged_enough(text: str, bare: bool = False) -> bool:
    """At least two tagged records, one of them an action (the first megabyte is looked at);
    without time stamps (``bare``) also a thought or an observation."""
    limit = min(len(text), 1_000_000)
    tagged = actions = others = 0
    for line_start, head_end, level in _heads(text, limit, bare):
        _, tag, _, _ = _record_head(text, head_end, level, end_of_line(text, head_end, limit))
        if tag:
            tagged += 1
            actions += tag in ("action", "command", "code", "input")
            others += tag in ("thought", "observation")
            if tagged >= 2 and actions and (others or not bare):
                return True
    return False


def trim(text: str, start: int, end: int) -> tuple[int, int]:
    """``[start, end)`` without its outer blanks and line breaks."""
    while start < end and text[start] in " \t\r\n":
        start += 1
    while end > start and text[end - 1] in " \t\r\n":
        end -= 1
    return start, end


def end_of_line(text: str, pos: int, end: int) -> int:
    """Where the line holding ``pos`` ends, at most ``end``."""
    found = text.find("\n", pos, end)
    return end if found == -1 else found
