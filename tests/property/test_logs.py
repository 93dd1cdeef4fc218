"""Log readers: every adapter through ``mleaudit.audit.logs.parse_log``, the ``.eval`` archive reader, and
the named-format entry point ``read_log_events``.

``parse_log`` is documented to raise nothing: a structured reader that fails falls back to the
plain-text reader and the failure is listed in ``problems``. Its events are indexed from 0 in
file order, carry the log's path, point inside the text, and their texts encode as UTF-8. The
line-oriented readers (``runlog``, ``pylogging``, ``steplog``) promise that an event's text is
exactly its span's slice of the file. No reader may take more than a few seconds on a few tens of
kB. ``read_eval_archive`` raises nothing either; ``read_log_events`` with a named format raises
only ``ValueError`` (the adapter cannot read the text) or ``KeyError`` (no such format).
"""

from __future__ import annotations

import io
import json
import warnings
import zipfile

from hypothesis import given
from hypothesis import strategies as st

from mleaudit.audit.logs import ADAPTERS, LogReading, parse_log, read_log_events
from mleaudit.audit.logs.inspect_archive import read_eval_archive
from mleaudit.grading.untrusted_json import replace_surrogates
from tests.property import strategies as S
from tests.property.support import budget, call, encodes_utf8

ADAPTER_NAMES = tuple(adapter.name for adapter in ADAPTERS)
#: Readers whose every event text is the exact slice of the file at its span (their docstrings).
VERBATIM = frozenset({"runlog", "pylogging", "steplog"})


def _check_events(events, text: str, path_ok, where: str) -> None:
    for number, event in enumerate(events):
        assert event.index == number, f"{where}: event {number} has index {event.index}"
        span = event.span
        assert path_ok(span.path), f"{where}: event {number} has span path {span.path!r}"
        assert 0 <= span.start_byte <= span.end_byte <= len(text), (
            f"{where}: event {number} span {span.start_byte}..{span.end_byte} is outside the {len(text)}-character text")
        assert span.start_line >= 1 and span.end_line >= span.start_line
        assert isinstance(event.text, str) and encodes_utf8(event.text), (
            f"{where}: event {number} text does not encode as UTF-8: {event.text!r:.200}")


@budget(150)
@given(S.log_document())
def test_parse_log_never_raises_and_events_point_into_the_log(document):
    fmt, path, text = document
    reading, _ = call(parse_log, path, text, what=f"parse_log ({fmt} input)")  # documented: nothing raises
    assert isinstance(reading, LogReading)
    assert reading.path == path
    assert reading.log_format in ADAPTER_NAMES or reading.log_format is None
    if reading.log_format is None:
        assert not reading.events
        assert not text.strip() or "\x00" in text, "a log with text was left without a format"
    _check_events(reading.events, text, lambda p: p == path, f"{reading.log_format} reader")
    for sentence in (*reading.problems, *reading.notes):
        assert isinstance(sentence, str) and encodes_utf8(sentence)
    if reading.log_format in VERBATIM:
        # Verbatim up to lone surrogates, which every event text replaces by U+FFFD (texts
        # always encode as UTF-8; a run's files never decode to surrogates anyway).
        for event in reading.events:
            assert event.text == replace_surrogates(text[event.span.start_byte:event.span.end_byte]), (
                f"{reading.log_format} event text is not its span's slice: {event.text!r:.120}")


@budget(100)
@given(S.log_document(), st.sampled_from(ADAPTER_NAMES))
def test_read_log_events_with_a_named_format_raises_only_value_error(document, name):
    _fmt, path, text = document
    events, error = call(read_log_events, path, text, name, allowed=(ValueError,), what=f"read_log_events({name!r})")
    if error is not None:
        return
    _check_events(events, text, lambda p: p == path, f"{name} reader")


# ------------------------------------------------------------------ Inspect .eval archives

MEMBER_NAMES = ("header.json", "samples/1_epoch_1.json", "samples/a b:c/2_epoch_1.JSON", "samples/.json",
                "samples/x.json", "_journal/start.json", "reductions.json", "other.txt", "samples/", "../evil.json",
                "/abs/samples/x.json", "samples/\u202e.json", "samples/x.json")


@st.composite
def eval_archive(draw) -> bytes:
    """An ``.eval`` zip: sample members from the Inspect generator, junk members, damage."""
    buffer = io.BytesIO()
    method = draw(st.sampled_from([zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED]))
    with warnings.catch_warnings(), zipfile.ZipFile(buffer, "w", compression=method) as archive:
        warnings.simplefilter("ignore")  # repeated member names are meant
        for _ in range(draw(st.integers(0, 5))):
            name = draw(st.one_of(st.sampled_from(MEMBER_NAMES), st.builds(lambda s: f"samples/{s}.json", S.word)))
            kind = draw(st.sampled_from(["sample", "sample", "json", "bytes"]))
            if kind == "sample":
                data = draw(S.json_text(S.inspect_sample)).encode("utf-8", "surrogatepass")
            elif kind == "json":
                data = draw(S.json_text()).encode("utf-8", "surrogatepass")
            else:
                data = draw(st.binary(max_size=64))
            archive.writestr(name, data)
    data = buffer.getvalue()
    damage = draw(st.sampled_from(["none", "none", "none", "cut", "flip", "junk"]))
    if damage == "cut" and data:
        data = data[: draw(st.integers(0, len(data) - 1))]
    elif damage == "flip" and data:
        at = draw(st.integers(0, len(data) - 1))
        data = data[:at] + bytes([data[at] ^ 0xFF]) + data[at + 1:]
    elif damage == "junk":
        data = draw(st.binary(max_size=64)) + data
    return data


@budget(60)
@given(st.one_of(eval_archive(), st.binary(max_size=128)))
def test_read_eval_archive_never_raises(data):
    path = "logs/run.eval"
    archive, _ = call(read_eval_archive, path, data, what="read_eval_archive")  # documented: nothing raises
    texts = dict(archive.documents)
    for number, event in enumerate(archive.events):
        assert event.index == number, f"event {number} has index {event.index} (indexed from 0 across the archive)"
        assert event.span.path in texts, f"event span path {event.span.path!r} names no document read"
        text = texts[event.span.path]
        assert 0 <= event.span.start_byte <= event.span.end_byte <= len(text)
        assert encodes_utf8(event.text)
    for member, reason in archive.unread:
        assert isinstance(member, str) and isinstance(reason, str)


def test_the_log_strategy_reaches_every_reader():
    """The generator is worth something only if each reader gets inputs it recognises."""
    samples = {
        "aide": ("journal.json", json.dumps([{"plan": "p", "code": "print(1)", "term_out": ["ok"]}])),
        "openhands": ("logs/events.json", json.dumps([{"action": "run", "args": {"command": "ls"}}])),
        "inspect": ("logs/eval.json", json.dumps({"eval": {"task": "t"}, "status": "success", "samples": [
            {"id": "1", "messages": [{"role": "assistant", "content": "ls"}]}]})),
        "jsonl": ("logs/agent.jsonl", '{"type": "command", "content": "ls"}\n'),
        "runlog": ("run.log", "\n".join(f"[2024-05-01 12:00:0{i},123] [run.py:{i}] x" for i in range(3))),
        "pylogging": ("a.log", "\n".join(f"2024-10-20 22:00:39,703 - a - INFO - m{i}" for i in range(3))),
        "steplog": ("logs/main_log", "2025-07-09 16:45:04,555 INFO agent: ACTION bash: ls\n"),
    }
    for name, (path, text) in samples.items():
        assert parse_log(path, text).log_format == name


# ------------------------------------------------------------------ long lines: no super-linear reader

#: (log path, line prefix) pairs that steer the text to each reader.
LINE_PREFIXES = (
    ("logs/main_log", "2025-07-09 16:45:04,555 INFO agent: ACTION "),
    ("logs/main_log", "2025-07-09 16:45:04,555 INFO agent: THOUGHT: "),
    ("logs/main_log", "Action: "),
    ("run.log", "[2024-05-01 12:00:00,123] [run.py:1] [Container] "),
    ("logs/run.log", "2024-10-20 22:00:39,703 - agents.dev - INFO - "),
    ("logs/agent.log", "$ "),
    ("logs/agent.log", ">>> "),
    ("logs/agent.log", "```python\n"),
    ("logs/agent.log", ""),
    ("logs/x_message.txt", "SyncCursorPage[Message](data=[Message(id='m', "),
    ("logs/agent.jsonl", '{"content": "'),
    ("logs/state.json", '{"code": "'),
    ("journal.json", '[{"code": "'),
    ("logs/events.json", '[{"action": "run", "args": {"command": "'),
)
#: What the long line repeats: word characters, blanks, escapes, quotes, brackets and the
#: openers of the readers' own constructs left unclosed.
LINE_PIECES = ("a", "a ", "a.", "-", ":", " ", "\\", "\\u", '"', "'", "{", "[", "(", "é", "<execute_bash>",
               "<execute_ipython>", "value='", "Message(id='", "```", "$ ", "a@", "ACTION ", "THOUGHT: ", "<<EOF ")


@st.composite
def long_line_log(draw) -> tuple[str, str, str, int, int]:
    path, prefix = draw(st.sampled_from(LINE_PREFIXES))
    piece = draw(st.sampled_from(LINE_PIECES))
    return path, prefix, piece, draw(st.sampled_from([120_000])), draw(st.integers(1, 3))


@budget(25, deep=300, shrink=False)
@given(long_line_log())
def test_parse_log_is_not_super_linear_on_long_lines(case):
    """About 120 000 characters a line, a few lines: a linear reader needs well under a second.

    (The case is drawn as ``(path, prefix, piece, characters, lines)`` so that a failure prints
    compactly; shrinking is off because every failing attempt costs the full time limit.)
    """
    path, prefix, piece, characters, lines = case
    text = "".join(prefix + piece * (characters // len(piece)) + "\n" for _ in range(lines))
    call(parse_log, path, text, what=f"parse_log on {lines} line(s) of {prefix!r} + {piece!r} * {characters // len(piece)}")
