"""Trajectories saved as one JSON document: a step's ``action`` is what it ran."""

from __future__ import annotations

import json

from mleaudit.audit.logs import jsondoc
from mleaudit.audit.logs.trajectory import action_events, is_step_list
from mleaudit.audit.units import LogEventKind


def _doc(value) -> str:
    return json.dumps(value, indent=1)


def _of(events, kind):
    return [e.text for e in events if e.kind is kind]


def test_swe_agent_traj_suffix_is_read_as_json():
    text = _doc({"environment": "box", "trajectory": [
        {"action": "find / -name '*.csv' 2>/dev/null", "observation": "/opt/x.csv", "thought": "Look around.",
         "response": "DISCUSSION\nLook around.\n```\nfind /\n```", "state": "{}"},
        {"action": "cat > /w/a.py << 'EOF'\nimport pandas as pd\nprint(1)\nEOF\npython /w/a.py",
         "observation": "1", "thought": "Write it.", "response": "", "state": "{}"},
        {"action": "submit", "observation": "", "thought": "", "response": "", "state": "{}"},
    ], "info": {"exit_status": "submitted"}})
    assert jsondoc.detect("logs/agent.traj", text)
    events = jsondoc.read_events("logs/agent.traj", text)
    commands = _of(events, LogEventKind.COMMAND)
    assert commands[0] == "find / -name '*.csv' 2>/dev/null"
    assert commands[-1] == "submit"
    assert "/opt/x.csv" in _of(events, LogEventKind.OUTPUT)
    assert "Look around." in _of(events, LogEventKind.MESSAGE)
    located = [e for e in events if e.kind is LogEventKind.COMMAND][0]
    assert located.location == "trajectory[0].action"
    assert json.loads('"' + text[located.span.start_byte : located.span.end_byte] + '"') == located.text


def test_step_list_anywhere_with_edit_blocks():
    text = _doc({"run": {"log": {"steps": [
        {"action": "edit 1:3\nimport requests\nrequests.get('https://example.org')\nend_of_edit",
         "observation": "File updated.", "state": '{"open_file": "/w/feat.py"}'},
        {"action": "str_replace_editor create /w/b.py --file_text 'import os\nos.listdir(\"/\")'",
         "observation": "ok"},
    ]}}})
    events = jsondoc.read_events("state.json", text)
    code = _of(events, LogEventKind.CODE)
    assert "import requests\nrequests.get('https://example.org')" in code
    assert "import os\nos.listdir(\"/\")" in code


def test_react_action_is_a_tool_name():
    assert action_events({"action": "python_repl", "action_input": "print(1)"}) is None
    events = jsondoc.read_events("x.json", _doc([{"action": "python_repl", "action_input": "import os\nprint(1)"}]))
    assert "import os\nprint(1)" in _of(events, LogEventKind.CODE)
    assert "python_repl" not in _of(events, LogEventKind.COMMAND)


def test_action_outside_step_lists_stays_text():
    events = jsondoc.read_events("x.json", _doc({"action": "rm -rf /", "note": "a config"}))
    assert _of(events, LogEventKind.COMMAND) == []
    assert not is_step_list([{"role": "user", "content": "hi"}])


def test_broken_document_of_other_suffix_is_left_to_text():
    assert not jsondoc.detect("logs/agent.traj", '{"trajectory": [{"action": "ls"')
    assert not jsondoc.detect("notes.txt", "[]")


def test_hostile_actions_never_crash():
    text = _doc({"trajectory": [{"action": ["bash", "-lc", "ls"]}, {"action": {"cmd": "id"}}, {"action": 3},
                                {"action": "edit x:y\n"}, {"action": "str_replace_editor create /a.py --file_text '"},
                                {"action": None}, {"action": ""}]})
    events = jsondoc.read_events("t.traj", text)
    assert {"ls", "id"} <= set(_of(events, LogEventKind.COMMAND))
