"""Fast paths of the log readers against the straightforward code they replace.

Each test keeps the plain implementation (as it was before the fast path) and checks that the
fast one gives the same answer on hand-picked texts and on generated ones, hostile pieces
included: prompts, banners, line breaks in every place, words that a search could mistake.
"""

from __future__ import annotations

import dataclasses
import re

from hypothesis import given, settings
from hypothesis import strategies as st

from mleaudit.audit.expand import launch
from mleaudit.audit.logs import jsonregions, llmcalls, prompts
from mleaudit.audit.logs.common import SpanMaker, restamp
from mleaudit.audit.logs.text import _BLOCKS, _blocks
from mleaudit.audit.model import Span
from mleaudit.audit.units import Actor, LogEvent, LogEventKind
from mleaudit.grading.untrusted_json import collect_shadowed
from tests.property.strategies import json_text

#: Pieces that make prompts, banners, fences and launch words, joined at random.
PIECES = (
    "\n", "\n\n", "\r\n", " ", "\t", "$ ", "$ ls -la", "# ", "# pip install x", "% ", "!pip install x", "> ",
    ">> ", ">>> ", ">>> import os", "... ", "... x = 1", "In [3]: ", "...: ", "PS C:\\work> ", "C:\\work>dir",
    "user@host:~/dir$ ", "(venv) $ ", "bash-5.1$ ", "~/w$ ", "\x1b[32m", "\u276f ", "\u279c  dir ", "cat <<EOF",
    "EOF", "echo 'open", "\\", "|", "&&", "===", "=== prompt ===", "===================prompt=====================",
    "=== gpt-4 response (500) ===", "===tokens===", "== response ==", "RESPONSE", "prompt", "```", "```python",
    "~~~", "<execute_bash>", "</execute_bash>", "<execute_ipython>", "x = 1", "import os", "hello world",
    "python", "pypy", "sys.executable", "exec", "execute", "compile", "compiled", "_exec", "exec_", "runpy",
    "run_path", "SourceFileLoader", "é", "\u2028", "\x0c", "a@b", "sh-5", "[", "(", "~",
    "  ```", "\t~~~ bash", "x ```", "````", "~~", "``", "```\n", "\n```", "<execute_python>", "</execute_python>", "<",
)
texts = st.lists(st.sampled_from(PIECES), max_size=40).map("".join)


# --- prompts.find_prompts ---------------------------------------------------------------------

def _find_prompts_plain(text: str, start: int, end: int, *, verbatim: bool = True) -> list:
    hits = []
    pos = start
    while pos < end:
        hit = prompts.match_prompt(text, pos, end, verbatim=verbatim)
        if hit is not None:
            hits.append(hit)
            pos = hit.end + 1
            continue
        pos = prompts._line_end(text, pos, end) + 1
    return hits


@settings(max_examples=400, deadline=None)
@given(texts, st.integers(0, 60), st.integers(0, 400), st.booleans())
def test_find_prompts_visits_the_lines_the_plain_loop_visits(text, start, length, verbatim):
    start = min(start, len(text))
    end = min(len(text), start + length)
    assert prompts.find_prompts(text, start, end, verbatim=verbatim) == _find_prompts_plain(
        text, start, end, verbatim=verbatim)


def test_find_prompts_examples():
    text = "intro\n$ ls\nout\n>>> x = 1\n... y = 2\nmore $ not\n  $ cd /x && \\\n  make\n"
    for start in range(len(text)):
        for end in (start, start + 5, len(text)):
            assert prompts.find_prompts(text, start, end) == _find_prompts_plain(text, start, end)


# --- llmcalls.banner_matches ------------------------------------------------------------------

@settings(max_examples=400, deadline=None)
@given(texts, st.none() | st.integers(0, 400))
def test_banner_matches_are_the_pattern_matches(text, end):
    end = None if end is None else min(end, len(text))
    plain = llmcalls._BANNER.finditer(text, 0, len(text) if end is None else end)
    assert [m.span() for m in llmcalls.banner_matches(text, end)] == [m.span() for m in plain]


# --- text._blocks -----------------------------------------------------------------------------

@settings(max_examples=400, deadline=None)
@given(texts, st.integers(0, 60), st.integers(0, 400))
def test_blocks_are_the_pattern_matches(text, start, length):
    # the drawn region, and every region from a line start (or one past it) to the end
    regions = {(min(start, len(text)), min(len(text), start + length))}
    regions |= {(i, len(text)) for i in range(len(text) + 1) if i == 0 or text[i - 1] == "\n"}
    regions |= {(i + 1, len(text)) for i in range(len(text)) if text[i] == "\n"}
    for begin, end in sorted(regions):
        assert [_groups(m) for m in _blocks(text, begin, end)] == [
            _groups(m) for m in _BLOCKS.finditer(text, begin, end)]


def _groups(match) -> tuple:
    """What scan_text reads of a block match."""
    names = ("indent", "lang", "body", "close", "tag", "tbody")
    return (match.span(), match.start(), match.end(), tuple(match.group(name) for name in names),
            tuple(match.span(name) for name in names))


def test_blocks_examples():
    for text in ("```\nx\n```", "a\n```py\nx\n```\n<execute_bash>ls</execute_bash>", "  ~~~\nx", "x ```\ny\n```",
                 "```\nx\n````\n``` \r\n", "````\n```\n````", "```\n  ```  y\n ```\t\n", "```\n```", "~~~\n~~~~\n~~~",
                 "<execute_bash>ls</execute_bash><execute_ipython>x</execute_ipython>", "```", "```\n```\n```\n"):
        for begin in range(len(text) + 1):
            for end in (len(text), max(begin, len(text) - 2)):
                assert [_groups(m) for m in _blocks(text, begin, end)] == [
                    _groups(m) for m in _BLOCKS.finditer(text, begin, end)], (text, begin, end)


# --- launch._starts_python --------------------------------------------------------------------

@settings(max_examples=600, deadline=None)
@given(st.lists(st.sampled_from(PIECES) | st.text(max_size=3), max_size=12).map("".join))
def test_launch_words_as_the_pattern_finds_them(text):
    assert launch._starts_python(text) == (launch._PYTHON_LAUNCH.search(text) is not None)


def test_launch_words_examples():
    for text in ("exec(open('x').read())", "executable", "an exec", "re.compile", "compiled", "x_exec", "execé",
                 "éexec", "exec_", "", "python3 x", "sys.executable"):
        assert launch._starts_python(text) == (launch._PYTHON_LAUNCH.search(text) is not None), text


# --- common.SpanMaker, restamp ----------------------------------------------------------------

@settings(max_examples=300, deadline=None)
@given(texts, st.lists(st.tuples(st.integers(-5, 450), st.integers(-5, 450)), max_size=8))
def test_span_maker_matches_span_from_offsets(text, pairs):
    spans = SpanMaker(text, "logs/x.log")
    for start, end in pairs:
        assert spans.span(start, end) == Span.from_offsets(text, "logs/x.log", start, end)
    for offset, _ in pairs:
        clamped = max(0, min(offset, len(text)))
        line_start = text.rfind("\n", 0, clamped) + 1
        line_end = text.find("\n", line_start)
        assert spans.line_span(offset) == Span.from_offsets(
            text, "logs/x.log", line_start, len(text) if line_end == -1 else line_end)


def test_restamp_is_replace():
    event = LogEvent(index=3, kind=LogEventKind.CODE, text="x = '\udfff'", span=Span.from_offsets("abc", "p", 0, 2),
                     language="python", role="user", location="[2].code", actor=Actor.SCAFFOLD)
    names = {field.name for field in dataclasses.fields(LogEvent)}
    # restamp rebuilds every field: one added to LogEvent must be added there too
    assert names == {"index", "kind", "text", "span", "language", "role", "location", "actor"}
    assert restamp(event, 7) == dataclasses.replace(event, index=7)
    assert restamp(event, 0, kind=LogEventKind.MESSAGE, role="", actor=Actor.AGENT) == dataclasses.replace(
        event, index=0, kind=LogEventKind.MESSAGE, role="", actor=Actor.AGENT)


def test_post_init_fast_path_keeps_replacing_surrogates():
    span = Span.from_offsets("abc", "p", 0, 1)
    for text, role, location in (("a\udfffb", "", ""), ("ok", "r\ud800", ""), ("ok", "", "l\udc00"),
                                 ("é\udfff", "é", "é"), ("plain", "user", "x")):
        event = LogEvent(index=0, kind=LogEventKind.MESSAGE, text=text, span=span, role=role, location=location)
        for value in (event.text, event.role, event.location):
            assert re.search("[\ud800-\udfff]", value) is None
        assert len(event.text) == len(text)


# --- jsonregions.json_members_partial ---------------------------------------------------------

def _members_partial_plain(text: str, start: int) -> dict:
    members: dict = {}
    if text[start : start + 1] != "{":
        return members
    pos = jsonregions._skip_ws(text, start + 1)
    if text[pos : pos + 1] == "}":
        return members
    while True:
        try:
            key, pos = jsonregions._DECODER.raw_decode(text, pos)
        except (ValueError, RecursionError):
            return members
        pos = jsonregions._skip_ws(text, pos)
        if not isinstance(key, str) or text[pos : pos + 1] != ":":
            return members
        value_start = jsonregions._skip_ws(text, pos + 1)
        value, value_end, broke = jsonregions._salvage(text, value_start, 1)
        if broke is not None:
            if value is not None:
                members[key] = (value_start, len(text))
            return members
        members[key] = (value_start, value_end)
        pos = jsonregions._skip_ws(text, value_end)
        sep = text[pos : pos + 1]
        if sep != ",":
            return members
        pos = jsonregions._skip_ws(text, pos + 1)


def _reported(function, text, start):
    with collect_shadowed(propagate=False) as hidden:
        result = function(text, start)
    return result, [(member.key, repr(member.value)) for member in hidden], hidden.overflowed


_REPEATED = ('{"a": 1, "a": {"b": [1, {"c": 2, "c": 3}], "b": "x"}, "d": [{"e": 1, "e": 2}]',
             '{"code": "A", "code": "B"}', '{"a": {"x": 1, "x": 2}, "b": [1, 2', '{"a": "\\udfff", "a": [}')


@settings(max_examples=200, deadline=None)
@given(json_text() | st.sampled_from(_REPEATED), st.integers(0, 30))
def test_members_partial_as_the_plain_walk(text, start):
    # every object start, and arbitrary offsets: the same members, regions and hidden-key reports
    starts = {min(start, len(text))} | {i for i, char in enumerate(text[:2000]) if char == "{"}
    for offset in sorted(starts)[:8]:
        assert _reported(jsonregions.json_members_partial, text, offset) == _reported(
            _members_partial_plain, text, offset)


# --- common.AtLineStart: the readers' line-start patterns -------------------------------------

_LINE_PIECES = PIECES + (
    "2024-01-02 10:11:12", "12:00:01", "[2024-01-02 10:11:12]", " INFO ", "agent: ", "THOUGHT", "ACTION",
    "OBSERVATION", "[ACTION]", "<THOUGHT>", "**Action", "Action:", "Action Input:", "> Entering new AgentExecutor chain...",
    "Invoking: `tool` with `", "Executing parsed code:", "Calling tool: 'x' with arguments:", ">>>>>>>> EXECUTING",
    "exitcode: 0 (execution succeeded)", "## Using tool: x", "Tool Input:", "----- node 1 code -----", "[step 3] code:",
    "Executing code:", "Generated script:", "cd /x", "ls", "=== output ===", "│", "╭─",
)
line_texts = st.lists(st.sampled_from(_LINE_PIECES), max_size=40).map("".join)


def _line_start_patterns():
    from mleaudit.audit.logs.frameworks import markers
    from mleaudit.audit.logs.steplog import records

    return (records._HEAD, records._BARE_LINE, records.REACT_LINES, markers._CHAIN_DETECT, markers._SMOL_DETECT,
            markers._AUTOGEN_DETECT, markers._CREW_TOOL_DETECT, markers._CREW_INPUT_DETECT, markers._HEADER_CANDIDATE)


@settings(max_examples=400, deadline=None)
@given(line_texts, st.none() | st.integers(0, 500))
def test_at_line_start_as_the_multiline_pattern(text, end):
    stop = len(text) if end is None else min(end, len(text))
    for lines in _line_start_patterns():
        assert lines.search(text, stop) == (lines.pattern.search(text, 0, stop) is not None)
        found = [(start, m.end(), m.groupdict()) for start, m in lines.matches(text, stop)]
        plain = [(m.start(), m.end(), m.groupdict()) for m in lines.pattern.finditer(text, 0, stop)]
        assert found == plain


def _generic_headers_plain(text: str) -> bool:
    from mleaudit.audit.logs.common import guess_code_language
    from mleaudit.audit.logs.frameworks import markers

    starts, ends = markers.line_bounds(text)
    for i, (start, end) in enumerate(zip(starts, ends)):
        if start == end or text[start] not in "-=#*~[ECRG":
            continue
        if markers._header_kind(text, start, end) != "code":
            continue
        j = i + 1
        while j < len(starts) and starts[j] == ends[j]:
            j += 1
        if j < len(starts) and (markers._CODE_START.match(text, starts[j], ends[j]) is not None
                                or guess_code_language(text[starts[j]:ends[j]]) == "bash"):
            return True
    return False


@settings(max_examples=400, deadline=None)
@given(line_texts)
def test_generic_headers_as_the_line_by_line_walk(text):
    from mleaudit.audit.logs.frameworks import markers

    assert markers._generic_headers(text) == _generic_headers_plain(text)


def test_generic_headers_examples():
    from mleaudit.audit.logs.frameworks import markers

    for text in ("----- node 1 code -----\n\nimport os\n", "----- node 1 code -----\r\n\r\n\r\nls -la\n",
                 "----- node 1 code -----\n", "----- node 1 code -----", "Executing code:\n\n\nx = 1",
                 "text\n[step 3] code:\nprint(1)\n", "Generated script:\n\nhello there\n"):
        assert markers._generic_headers(text) == _generic_headers_plain(text), text


# --- detection answers kept by text -----------------------------------------------------------

@settings(max_examples=200, deadline=None)
@given(st.lists(line_texts, min_size=1, max_size=4))
def test_detection_kept_by_text_answers_as_detection(batch):
    from mleaudit.audit.logs import frameworks, steplog

    for _ in range(2):  # the second round is answered from the cache
        for number, text in enumerate(batch):
            path = f"env_log/traces/step_{number}_files/research_log.log"
            assert steplog.detect(path, text) == bool(steplog._detect_text(text))
            assert frameworks.detect(path, text) == bool(frameworks._detect_text(text))


# --- text.scan_text with a Stamp: the events the readers renumbered and re-attributed before ----

@settings(max_examples=300, deadline=None)
@given(texts, st.integers(0, 40), st.integers(0, 400), st.integers(0, 5), st.sampled_from(["user", "assistant", ""]),
       st.sampled_from(list(Actor)), st.sampled_from(list(Actor)), st.none() | st.booleans())
def test_stamped_scan_as_renumbered_plain_events(text, start, length, first, role, actor, code_actor, cut):
    from mleaudit.audit.logs.text import Stamp, scan_text

    start = min(start, len(text))
    end = min(len(text), start + length)
    spans = SpanMaker(text, "agent_log/step_1_log.log")
    plain = scan_text(spans, start, end, plain_kind=LogEventKind.MESSAGE, cut_at_end=cut)
    expected = []
    for number, event in enumerate(plain, first):
        code = event.kind in (LogEventKind.CODE, LogEventKind.COMMAND)
        expected.append(dataclasses.replace(event, index=number, kind=event.kind if code else LogEventKind.MESSAGE,
                                            role=role, actor=code_actor if code else actor))
    stamped = scan_text(spans, start, end, plain_kind=LogEventKind.MESSAGE, cut_at_end=cut,
                        stamp=Stamp(first, role, actor, code_actor))
    assert stamped == expected


def test_a_region_past_the_event_limit_is_not_stamped(monkeypatch):
    # the limit's exception hands over the region's events as built: unstamped, as before
    from mleaudit.audit.logs import common, parse_log

    monkeypatch.setattr(common, "MAX_LOG_EVENTS", 5)
    text = "===prompt===\n" + "".join(f"para {i}\n\n" for i in range(20)) + "===gpt response===\nok\n"
    reading = parse_log("agent_log/step_1_log.log", text)
    assert len(reading.events) == 5
    assert [event.index for event in reading.events] == list(range(5))
    assert all(event.role == "" for event in reading.events)
