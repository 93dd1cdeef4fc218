"""Tool calls and results in every shape the chat APIs log them (JSONL transcripts)."""

from __future__ import annotations

import json

import pytest

from mleaudit.audit.logs.jsonl import read_events
from mleaudit.audit.units import Actor, LogEventKind


def _events(*records):
    text = "\n".join(json.dumps(r) for r in records) + "\n"
    return read_events("logs/t.jsonl", text)


def _kinds(events, kind):
    return [(e.text, e.actor) for e in events if e.kind is kind]


def test_claude_code_envelope_tool_use_and_results():
    events = _events(
        {"type": "assistant", "message": {"role": "assistant", "content": [
            {"type": "text", "text": "Listing."},
            {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "ls -la /srv/cache"}}]}},
        {"type": "user", "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": "a.csv"}]}},
        {"type": "user", "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": [{"type": "text", "text": "b.csv"}]}]}},
    )
    assert _kinds(events, LogEventKind.COMMAND) == [("ls -la /srv/cache", Actor.AGENT)]
    assert _kinds(events, LogEventKind.OUTPUT) == [("a.csv", Actor.AGENT), ("b.csv", Actor.AGENT)]
    assert ("Listing.", Actor.AGENT) in _kinds(events, LogEventKind.MESSAGE)


def test_responses_api_items():
    events = _events(
        {"type": "function_call", "name": "shell", "call_id": "c",
         "arguments": json.dumps({"command": ["bash", "-lc", "cat /opt/x.txt"]})},
        {"type": "function_call_output", "call_id": "c", "output": "x"},
        {"type": "local_shell_call", "action": {"type": "exec", "command": ["wget", "-q", "http://h/x"]}},
        {"type": "code_interpreter_call", "code": "import os\nprint(os.getcwd())",
         "outputs": [{"type": "logs", "logs": "/w"}]},
        {"type": "response_item", "payload": {"type": "function_call", "name": "exec_command",
                                             "arguments": json.dumps({"cmd": "du -sh /data"})}},
    )
    commands = [t for t, _ in _kinds(events, LogEventKind.COMMAND)]
    assert commands == ["cat /opt/x.txt", "wget -q http://h/x", "du -sh /data"]
    assert [t for t, _ in _kinds(events, LogEventKind.CODE)] == ["import os\nprint(os.getcwd())"]
    assert ("x", Actor.AGENT) in _kinds(events, LogEventKind.OUTPUT)
    assert ("/w", Actor.AGENT) in _kinds(events, LogEventKind.OUTPUT)


def test_openai_chat_tool_calls():
    events = _events(
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "1", "type": "function", "function": {"name": "run", "arguments": '{"cmd": "pip list"}'}}]},
        {"role": "tool", "tool_call_id": "1", "content": "numpy"},
    )
    assert _kinds(events, LogEventKind.COMMAND) == [("pip list", Actor.AGENT)]
    assert _kinds(events, LogEventKind.OUTPUT) == [("numpy", Actor.AGENT)]


def test_gemini_parts():
    events = _events(
        {"role": "model", "parts": [{"text": "Fetching."},
                                    {"functionCall": {"name": "run_shell_command", "args": {"command": "curl -sO http://h/a"}}}]},
        {"role": "user", "parts": [{"functionResponse": {"name": "run_shell_command", "response": {"output": "done"}}}]},
        {"role": "model", "parts": [{"executableCode": {"language": "PYTHON", "code": "print(2)"}},
                                    {"codeExecutionResult": {"outcome": "OUTCOME_OK", "output": "2"}}]},
    )
    assert _kinds(events, LogEventKind.COMMAND) == [("curl -sO http://h/a", Actor.AGENT)]
    assert [t for t, _ in _kinds(events, LogEventKind.CODE)] == ["print(2)"]
    assert ("done", Actor.AGENT) in _kinds(events, LogEventKind.OUTPUT)
    assert ("Fetching.", Actor.AGENT) in _kinds(events, LogEventKind.MESSAGE)


def test_named_tool_in_envelope_gives_tool_call():
    events = _events({"type": "assistant", "message": {"role": "assistant", "content": [
        {"type": "tool_use", "id": "t", "name": "web_fetch", "input": {"url": "https://example.org/sol.ipynb"}}]}})
    calls = [t for t, _ in _kinds(events, LogEventKind.TOOL_CALL)]
    assert calls and calls[0].startswith("web_fetch(")


@pytest.mark.parametrize("record", [
    {"type": "user", "message": "just text"},
    {"message": {"content": {"deep": [1, 2]}}},
    {"payload": {"type": 3}, "item": []},
    {"role": "model", "parts": [None, 3, {"functionCall": "x"}, {"functionResponse": [1]}]},
])
def test_odd_shapes_never_crash(record):
    _events(record)
