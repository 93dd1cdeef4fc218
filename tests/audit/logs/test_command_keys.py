"""Commands, code and tool calls under any key the JSON log formats use (``mleaudit.audit.logs.keys``), and
who wrote each event, in every JSON adapter."""

from __future__ import annotations

import json

import pytest

from mleaudit.audit.expand import expand_run
from mleaudit.audit.logs import parse_log, read_log_events
from mleaudit.audit.logs.keys import KEYS, actor_for_role, classify_text
from mleaudit.audit.logs.toolcalls import call_actions
from mleaudit.audit.run import load_run
from mleaudit.audit.units import Actor, LogEventKind as K

CURL = "curl -s https://api.openai.com/v1/chat/completions -d @prompt.json"


def _jsonl(*records: dict) -> str:
    return "\n".join(json.dumps(r) for r in records) + "\n"


@pytest.mark.parametrize("key", ["input", "command", "cmd", "code", "script", "source", "args", "arguments",
                                 "tool_input", "action_input"])
def test_a_shell_command_under_any_key_is_a_command(key):
    events = read_log_events("logs/t.jsonl", _jsonl({"role": "assistant", key: CURL}))
    assert (K.COMMAND, CURL) in [(e.kind, e.text) for e in events]
    assert all(e.actor is Actor.AGENT for e in events)


@pytest.mark.parametrize("key", ["args", "arguments", "tool_input", "action_input", "input"])
def test_arguments_as_json_inside_a_string(key):
    record = {"role": "assistant", "name": "shell", key: json.dumps({"cmd": CURL})}
    events = read_log_events("logs/t.jsonl", _jsonl(record))
    assert [(e.kind, e.text) for e in events] == [(K.COMMAND, CURL)]


def test_openai_tool_calls_with_string_arguments_and_nested_arguments():
    record = {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "execute", "arguments": json.dumps({"cmd": CURL})}},
        {"id": "c2", "type": "function", "function": {"name": "run_python",
                                                      "arguments": json.dumps({"kwargs": {"source": "import os"}})}},
        {"id": "c3", "type": "function", "function": {"name": "terminal",
                                                      "arguments": json.dumps({"tool_input": {"script": "ls -la"}})}},
    ]}
    events = read_log_events("logs/t.jsonl", _jsonl(record))
    assert [(e.kind, e.text, e.language) for e in events] == [
        (K.COMMAND, CURL, "bash"), (K.CODE, "import os", "python"), (K.COMMAND, "ls -la", "bash")]


@pytest.mark.parametrize("record", [
    {"role": "assistant", "name": "submit_to_kaggle", "arguments": '{"file": "submission.csv", "message": "v2"}'},
    {"role": "assistant", "type": "function_call", "name": "submit_to_kaggle",
     "arguments": '{"file": "submission.csv", "message": "v2"}'},
    {"role": "assistant", "tool_calls": [{"type": "function", "function": {
        "name": "submit_to_kaggle", "arguments": '{"file": "submission.csv", "message": "v2"}'}}]},
    {"role": "assistant", "content": [{"type": "tool_use", "name": "submit_to_kaggle",
                                       "input": {"file": "submission.csv", "message": "v2"}}]},
    {"role": "assistant", "recipient": "functions.submit_to_kaggle",
     "content": '{"file": "submission.csv", "message": "v2"}'},
    {"role": "assistant", "tool": "submit_to_kaggle", "tool_input": {"file": "submission.csv", "message": "v2"}},
])
def test_a_named_tool_call_keeps_its_name_and_arguments(record):
    events = read_log_events("logs/t.jsonl", _jsonl(record))
    calls = [e for e in events if e.kind is K.TOOL_CALL]
    assert len(calls) == 1
    assert "submit_to_kaggle(" in calls[0].text and "submission.csv" in calls[0].text and "v2" in calls[0].text
    assert calls[0].actor is Actor.AGENT


def test_a_named_tool_that_runs_a_command_gives_both():
    record = {"role": "assistant", "name": "kaggle_tool",
              "arguments": json.dumps({"command": "kaggle kernels pull a/b"})}
    events = read_log_events("logs/t.jsonl", _jsonl(record))
    assert [(e.kind, e.text) for e in events] == [
        (K.COMMAND, "kaggle kernels pull a/b"), (K.TOOL_CALL, 'kaggle_tool({"command": "kaggle kernels pull a/b"})')]


def test_records_of_unknown_shape_are_still_read_as_text():
    records = [{"ts": "2025-01-01", "id": "x", "payload": {"note": "fetching", "steps": ["wget http://h/labels.csv"]}},
               {"role": "tool", "data": {"stdout": "done"}}]
    events = read_log_events("logs/t.jsonl", _jsonl(*records))
    assert [(e.kind, e.text) for e in events] == [(K.MESSAGE, "fetching\nwget http://h/labels.csv"),
                                                 (K.OUTPUT, "done")]
    # Labels (ids, timestamps) are not text.
    assert "2025-01-01" not in events[0].text


def test_actors_of_jsonl_roles():
    records = [{"role": "system", "content": "You are an agent."}, {"role": "user", "content": "Train a model."},
               {"role": "assistant", "type": "command", "content": "ls"}, {"role": "tool", "content": "a.csv"},
               {"content": "no role"}]
    events = read_log_events("logs/t.jsonl", _jsonl(*records))
    assert [e.actor for e in events] == [Actor.SCAFFOLD, Actor.OPERATOR, Actor.AGENT, Actor.AGENT, Actor.UNKNOWN]


def test_openhands_string_args_nested_args_extras_and_second_list():
    document = {
        "history": [
            {"id": 1, "source": "user", "action": "message", "args": {"content": "Solve the task."}},
            {"id": 2, "source": "agent", "action": "run", "args": json.dumps({"command": CURL, "thought": "t"})},
            {"id": 3, "source": "agent", "action": "run", "args": {"kwargs": {"command": "ls /home/data"}}},
            {"id": 4, "source": "environment", "observation": "run_ipython", "content": "ok",
             "extras": {"code": "import requests\nrequests.get('https://h/x')"}},
            {"id": 5, "source": "agent", "action": "submit_to_kaggle", "args": {"file": "submission.csv"}},
        ],
        "delegate_events": [
            {"id": 6, "source": "agent", "action": "run_ipython", "args": {"code": "print('delegate')"}},
        ],
    }
    text = json.dumps(document, indent=2)
    reading = parse_log("logs/events.json", text)
    assert reading.log_format == "openhands"
    summary = [(e.kind, e.text, e.actor) for e in reading.events]
    assert (K.MESSAGE, "Solve the task.", Actor.OPERATOR) in summary
    assert (K.COMMAND, CURL, Actor.AGENT) in summary
    assert (K.COMMAND, "ls /home/data", Actor.AGENT) in summary
    assert (K.CODE, "import requests\nrequests.get('https://h/x')", Actor.AGENT) in summary
    assert (K.CODE, "print('delegate')", Actor.AGENT) in summary
    call = next(e for e in reading.events if e.kind is K.TOOL_CALL)
    assert call.text.startswith("submit_to_kaggle(") and "submission.csv" in call.text
    # The string-args command points at the args string of its record.
    command = next(e for e in reading.events if e.text == CURL)
    assert '"args": "{' in text.splitlines()[command.span.start_line - 1]


def test_openhands_extras_do_not_repeat_a_logged_action():
    events = [{"source": "agent", "action": "run", "args": {"command": "ls"}},
              {"source": "environment", "observation": "run", "content": "a", "extras": {"command": "ls"}}]
    found = read_log_events("logs/events.json", json.dumps(events))
    assert [(e.kind, e.text) for e in found] == [(K.COMMAND, "ls"), (K.OUTPUT, "a")]


def _inspect(calls: list[dict]) -> str:
    sample = {"id": 1, "epoch": 1, "messages": [
        {"role": "system", "content": "You are an agent."},
        {"role": "user", "content": "Solve it."},
        {"role": "assistant", "content": "", "tool_calls": calls},
        {"role": "tool", "content": "done", "function": "x"},
    ]}
    return json.dumps({"version": 2, "status": "success", "eval": {"task": "t", "model": "m"}, "samples": [sample]},
                      indent=1)


@pytest.mark.parametrize(("function", "arguments", "kind", "text"), [
    ("python", {"source": "import os\nos.listdir('/private')"}, K.CODE, "import os\nos.listdir('/private')"),
    ("run", {"script": "ls /private/data"}, K.COMMAND, "ls /private/data"),
    ("exec", {"code": "print(1)"}, K.CODE, "print(1)"),
    ("terminal", {"cmd": CURL}, K.COMMAND, CURL),
    ("sandbox", {"input": json.dumps({"command": CURL})}, K.COMMAND, CURL),
])
def test_inspect_tool_call_arguments_under_any_key(function, arguments, kind, text):
    events = read_log_events("logs/eval.json", _inspect([{"id": "c", "function": function, "arguments": arguments}]))
    assert (kind, text) in [(e.kind, e.text) for e in events]
    actors = {e.role: e.actor for e in events}
    assert actors == {"system": Actor.SCAFFOLD, "user": Actor.SCAFFOLD, "assistant": Actor.AGENT,
                      "tool": Actor.AGENT}


def test_inspect_named_call_text_has_the_function():
    events = read_log_events("logs/eval.json", _inspect([{"id": "c", "function": "submit_to_kaggle",
                                                          "arguments": {"file": "submission.csv"}}]))
    call = next(e for e in events if e.kind is K.TOOL_CALL)
    assert call.text.startswith("submit_to_kaggle(") and '"file": "submission.csv"' in call.text


def test_aide_odd_shapes_and_actors():
    nodes = [
        {"step": 0, "id": "a", "plan": "Plan.", "code": ["import pandas as pd\n", "df = pd.read_csv('x')\n"],
         "_term_out": ["ok\n"], "analysis": "Fine.", "metric": {"value": 0.8}},
        {"step": 1, "id": "b", "plan": "Retry.", "code": {"source": "import requests"}, "term_out": "",
         "exc_type": "HTTPError", "exc_stack": [["f.py", 3, "g", "requests.get(u)"]],
         "helper_code": "import subprocess\nsubprocess.run(['curl', 'x'])", "notes": "remember the leak"},
    ]
    events = read_log_events("logs/journal.json", json.dumps(nodes))
    summary = [(e.kind, e.actor, e.location) for e in events]
    assert summary == [
        (K.MESSAGE, Actor.SCAFFOLD, "[0].plan"), (K.CODE, Actor.AGENT, "[0].code"),
        (K.OUTPUT, Actor.AGENT, "[0]._term_out"), (K.MESSAGE, Actor.SCAFFOLD, "[0].analysis"),
        (K.MESSAGE, Actor.SCAFFOLD, "[1].plan"), (K.CODE, Actor.AGENT, "[1].code"),
        (K.OUTPUT, Actor.AGENT, "[1].exc_type"), (K.OUTPUT, Actor.AGENT, "[1].exc_stack"),
        (K.CODE, Actor.AGENT, "[1].helper_code"), (K.MESSAGE, Actor.UNKNOWN, "[1].notes"),
    ]
    assert events[1].text == "import pandas as pd\ndf = pd.read_csv('x')\n"
    assert events[5].text == "import requests"


def test_json_documents_read_arguments_and_named_calls():
    document = {"steps": [{"role": "assistant", "tool": "bash", "arguments": json.dumps({"cmd": CURL})},
                          {"role": "assistant", "name": "submit_to_kaggle", "arguments": {"file": "s.csv"}},
                          {"role": "user", "input": "Please be careful."}]}
    events = read_log_events("state.json", json.dumps(document))
    summary = [(e.kind, e.text, e.actor) for e in events]
    assert (K.COMMAND, CURL, Actor.AGENT) in summary
    assert (K.TOOL_CALL, 'submit_to_kaggle({"file": "s.csv"})', Actor.AGENT) in summary
    assert (K.MESSAGE, "Please be careful.", Actor.OPERATOR) in summary


def test_assistants_dump_actors_and_code():
    dump = ("SyncCursorPage[Message](data=[Message(id='msg_2', content=[TextContentBlock(text=Text(annotations=[], "
            "value='Here is the model:\\n```python\\nimport lightgbm\\n```'), type='text')], role='assistant'), "
            "Message(id='msg_1', content=[TextContentBlock(text=Text(annotations=[], value='Train on train.csv.'), "
            "type='text')], role='user')])")
    events = read_log_events("run_message.txt", dump)
    assert [(e.kind, e.actor) for e in events] == [(K.MESSAGE, Actor.AGENT), (K.CODE, Actor.AGENT),
                                                  (K.MESSAGE, Actor.OPERATOR)]
    assert events[1].text == "import lightgbm"


def test_units_from_events_inherit_their_actor(tmp_path):
    (tmp_path / "logs").mkdir()
    records = [{"role": "assistant", "type": "command", "content": "cat > /home/code/a.py <<'PY'\nprint(1)\nPY"},
               {"role": "user", "type": "code", "content": "import os"}]
    (tmp_path / "logs" / "t.jsonl").write_text(_jsonl(*records))
    units = expand_run(load_run(tmp_path))
    assert [(u.language, u.actor) for u in units.code_units] == [
        # Code in a user record is still code the run executed: a role never exempts it.
        ("bash", Actor.AGENT), ("python", Actor.AGENT), ("python", Actor.AGENT)]


def test_vocabulary_table_and_helpers():
    assert {KEYS[k] for k in ("command", "cmd", "code", "script", "source", "input", "args", "arguments",
                              "tool_input", "action_input")} == {"command", "code", "script", "arguments"}
    assert classify_text("Please train a model.") is None
    assert classify_text("ls", "web_search").kind is K.COMMAND
    assert [f.text for f in call_actions({"command": "create", "path": "a.py", "file_text": "x = 1"},
                                         "str_replace_editor")] == ["x = 1"]
    assert call_actions("[1, 2", "") == []
    deep = "ls -la"
    for _ in range(12):  # each level escapes the one inside: the text doubles per level
        deep = {"arguments": json.dumps(deep)}
    assert call_actions(deep) == []  # nesting past the bound is not followed
    assert actor_for_role("Developer") is Actor.SCAFFOLD


def test_calls_printed_as_text_are_tool_calls(tmp_path):
    message = 'Submitting.\nfunctions.submit_to_kaggle({"file": "submission.csv", "message": "v3"})'
    events = read_log_events("logs/t.jsonl", _jsonl({"role": "assistant", "content": message}))
    assert [(e.kind, e.text) for e in events] == [
        (K.MESSAGE, message), (K.TOOL_CALL, 'functions.submit_to_kaggle({"file": "submission.csv", "message": "v3"})')]
    # The same printed by a scaffold into a notebook output.
    cell = {"cell_type": "code", "source": "run()", "outputs": [
        {"output_type": "stream", "name": "stdout", "text": [message + "\n", 'tools.bash({"cmd": "ls /private"})\n']}]}
    (tmp_path / "nb.ipynb").write_text(json.dumps({"nbformat": 4, "metadata": {}, "cells": [cell]}))
    found = [(e.kind, e.text) for e in expand_run(load_run(tmp_path)).log_events if e.kind is not K.OUTPUT]
    assert found == [(K.TOOL_CALL, 'functions.submit_to_kaggle({"file": "submission.csv", "message": "v3"})'),
                     (K.COMMAND, "ls /private")]


def test_source_naming_the_writer_is_not_code():
    events = read_log_events("logs/t.jsonl", _jsonl({"source": "agent", "type": "message", "content": "hi"},
                                                    {"source": "environment", "observation": "ok"}))
    assert [(e.kind, e.text) for e in events] == [(K.MESSAGE, "hi"), (K.OUTPUT, "ok")]
