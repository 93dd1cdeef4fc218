"""Hostile shapes of big logs: what the readers do stays about linear in the log.

Each case is a shape a log can take that once made a reader look at the whole log again for
every item (quadratic) or made a regex try exponentially many splits of one line: one long line
of fences inside an open block, thousands of values hidden by repeated keys, a rule line that
does not end its line, a command line of many options, a long unquoted word in an action input.
The regexes are checked against the patterns they replaced on generated lines, and run on the
hostile lines in a child process with a time limit (``re`` cannot be interrupted in-process).
The searches are counted, not timed: a text that adds up what its ``find`` calls scan.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap

from hypothesis import given, settings
from hypothesis import strategies as st

from mleaudit.audit.expand import found as found_module
from mleaudit.audit.logs import keys, shadowed
from mleaudit.audit.logs.mlagentbench import actions
from mleaudit.audit.logs.text import _BLOCKS, _blocks, _FenceLines
from mleaudit.grading.untrusted_json import collect_shadowed, loads

# The patterns as they were (each backtracks badly on the hostile lines below).
_OLD_LOOKS_COMMAND = re.compile(
    r"^[ \t]*(?:sudo[ \t]+|env[ \t]+|[A-Z_][A-Z0-9_]*=\S*[ \t]+)*(?:\./|/|~/)?[\w.-]+(?:/[\w.-]+)*"
    r"(?:[ \t]+(?:-{1,2}[\w-]+|[\w./~:=@%+,-]+|\"[^\"\n]*\"|'[^'\n]*'|[|&;<>]+))*[ \t]*$"
)
_OLD_RULE_TAIL = r"[ \t]*(?:[:\-=#*~<>|\]]+[ \t]*)*$"
_OLD_QUOTED_ARG = re.compile(r"[\"']?(\w+)[\"']?\s*:\s*\"((?:[^\"\\]|\\.)*)\"", re.DOTALL)


def _old(pattern: re.Pattern[str]) -> re.Pattern[str]:
    """``pattern`` with its rule-line tail as it was."""
    source = pattern.pattern.replace(r"[:\-=#*~<>|\] \t]*+$", _OLD_RULE_TAIL)
    assert source != pattern.pattern
    return re.compile(source, pattern.flags)


PIECES = ("ls", "-l", "--all", "--flag-x", "x.csv", "*.csv", "2>&1", "$X", "'a b'", '"c d"', "|", "&&", ";", "/usr/bin/",
          "./run.sh", "sudo", "env", "A=1", " ", "\t", "  ", "=", "==", "---", "-", ":", "#", "*", "~", "<", ">", "]", "[",
          "code", "Code", "script", "node 3", "results", "output", "Validation", "INFO", "0.81", "\n", "é", "(", "x")
lines = st.lists(st.sampled_from(PIECES), max_size=24).map("".join)


@settings(max_examples=1500, deadline=None)
@given(lines)
def test_the_command_line_pattern_accepts_what_it_did(line):
    assert (keys._LOOKS_COMMAND.match(line) is None) == (_OLD_LOOKS_COMMAND.match(line) is None)


@settings(max_examples=1500, deadline=None)
@given(lines)
def test_the_section_patterns_find_what_they_did(text):
    for pattern in (found_module._CODE_HEADER, found_module._SECTION_END):
        assert [m.span() for m in pattern.finditer(text)] == [m.span() for m in _old(pattern).finditer(text)]


@settings(max_examples=1500, deadline=None)
@given(st.lists(st.sampled_from(('"', "'", ":", " ", "\\", "key", "a1", "_", "x", '"v"', "é", "\n", "{", "}", ",")),
                max_size=30).map("".join))
def test_the_action_argument_pattern_finds_what_it_did(text):
    assert [m.groups() for m in actions._QUOTED_ARG.finditer(text)] == [
        m.groups() for m in _OLD_QUOTED_ARG.finditer(text)]


def test_hostile_lines_are_read_in_time():
    # Each took from seconds to hours before (3^n and 2^n splits of one line, a quadratic word run).
    script = textwrap.dedent("""
        from mleaudit.audit.expand.found import _code_sections
        from mleaudit.audit.logs.keys import classify_text
        from mleaudit.audit.logs.mlagentbench.actions import parse_input
        print(classify_text("tool " + "--flag-x " * 40 + "*.csv"))
        print(_code_sections("Validation results " + "=" * 80 + " 0.8123\\nx = 1\\n"))
        print(_code_sections("The new source " + "-" * 80 + " v2\\nx = 1\\n"))
        print(parse_input("{" + "a" * 300000 + ' "k": "v"'))
        print(classify_text("env " * 25000 + "!"))
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["None", "[]", "[]", "{'k': 'v'}", "None"]


class _CountingText(str):
    """A text that adds up the characters its ``find`` and ``rfind`` calls scan."""

    scanned = 0

    def find(self, sub, start=0, end=None):  # type: ignore[override]
        end = len(self) if end is None else end
        at = str.find(self, sub, start, end)
        _CountingText.scanned += max(0, (end if at == -1 else at + len(sub)) - start)
        return at

    def rfind(self, sub, start=0, end=None):  # type: ignore[override]
        end = len(self) if end is None else end
        at = str.rfind(self, sub, start, end)
        _CountingText.scanned += max(0, end - (start if at == -1 else at))
        return at


def test_fence_lines_scan_the_text_a_bounded_number_of_times():
    # Thousands of ``` fences and no ~~~ at all: each search for the next fence must not look
    # for ~~~ to the end of the text again (which made a 10 MB log quadratic).
    plain = "".join(f"step {i}: x ``` y\n```python\nprint({i})\n```\noutput {i}\n" for i in range(2000))
    text = _CountingText(plain)
    _CountingText.scanned = 0
    fences, found, pos = _FenceLines(text, len(text)), [], 0
    while (line := fences.at_or_after(pos)) < len(text):
        found.append(line)
        pos = line + 1
    assert len(found) == 4000
    assert _CountingText.scanned <= 4 * len(plain)


def test_a_long_line_of_fences_in_an_open_block_is_read_once():
    # A printed message list inside an unclosed block: one line, thousands of ``` in it.
    plain = "```python\n" + "['```', 'x'], " * 20000 + "\nprint(1)\n"
    text = _CountingText(plain)
    _CountingText.scanned = 0
    blocks = list(_blocks(text, 0, len(text)))
    assert _CountingText.scanned <= 4 * len(plain)
    assert [m.span() for m in blocks] == [m.span() for m in _BLOCKS.finditer(plain)]


def _hidden(text: str) -> list:
    with collect_shadowed() as hidden:
        for line in text.splitlines():
            loads(line)
    return hidden


def test_values_hidden_by_repeated_keys_are_placed_in_one_pass(monkeypatch):
    # Thousands of hidden values written with escapes their probe lacks: none is found as
    # written, and each search for one once scanned the whole file.
    records = [f'{{"content": "\\u0063ode {i}", "content": "shown {i}"}}' for i in range(3000)]
    plain = "\n".join(records) + "\n"
    hidden = _hidden(plain)
    assert len(hidden) == 3000
    monkeypatch.setattr(shadowed, "_MIN_SEARCH", 0)
    text = _CountingText(plain)
    _CountingText.scanned = 0
    events = shadowed.hidden_events("log.jsonl", text, hidden, 0)
    assert _CountingText.scanned <= (shadowed._SEARCH_PER_CHAR + 2) * len(plain)
    assert sorted(e.text for e in events) == sorted(f"code {i}" for i in range(3000))


def test_hidden_values_are_placed_at_their_own_lines():
    records = [json.dumps({"step": i}).rstrip("}") + f', "code": "x = {i}", "code": "pass"}}' for i in range(50)]
    text = "\n".join(records) + "\n"
    events = shadowed.hidden_events("log.jsonl", text, _hidden(text), 0)
    assert [(e.text, e.span.start_line) for e in events] == [(f"x = {i}", i + 1) for i in range(50)]
    problems = shadowed.hidden_problems(text, _hidden(text))
    assert problems and "first at line 1" in problems[0]


def test_a_spent_search_budget_places_the_rest_where_the_last_was(monkeypatch):
    monkeypatch.setattr(shadowed, "_MIN_SEARCH", 0)
    monkeypatch.setattr(shadowed, "_SEARCH_PER_CHAR", 1)
    records = [f'{{"a": "\\u0061 {i}", "a": "b"}}' for i in range(200)]
    text = "\n".join(records) + "\n"
    events = shadowed.hidden_events("log.jsonl", text, _hidden(text), 0)
    # every hidden value is still read; only the lines of the last ones are approximate
    assert sorted(e.text for e in events) == sorted(f"a {i}" for i in range(200))
    assert all(1 <= e.span.start_line <= 200 for e in events)
