"""Step-log action headers: every style names where the command or code is, on its line or after it.

Must-read: ``ACTION shell`` / ``ACTION: bash`` / ``[ACTION] python`` / ``Action: Execute`` / an
OpenHands ``**CmdRunAction**`` block ... followed by the command on the next line(s) is a COMMAND
(or CODE) event of the agent, whatever the time stamp looks like. Must-not-misread: other tools
stay tool calls, placeholders of written files are no code, a program's own time-stamped log
lines inside an observation stay output, and a transcript that only mentions an action once is
not taken for a step log.
"""

from __future__ import annotations

import pytest

from mleaudit.audit.logs import parse_log
from mleaudit.audit.units import Actor
from mleaudit.audit.units import LogEventKind as K

STAMPS = ("2025-03-04 09:12:11", "2025-03-04 09:12:11,555 INFO", "2025-03-04T09:12:11Z", "[03:01:44]",
          "[2025-03-04 09:12:11]", "2025-03-04 09:12:11 |", "09:12:11 -", "2025-03-04 09:12:11,555 INFO agent:")


def _log(stamp: str, header: str, body: str) -> str:
    return (f"{stamp} THOUGHT: look at the data\n"
            f"{stamp} {header}\n{body}\n"
            f"{stamp} OBSERVATION:\nok\n")


@pytest.mark.parametrize("stamp", STAMPS)
@pytest.mark.parametrize(
    ("header", "body", "kind", "text"),
    [
        ("ACTION shell", "ln -sf /private/data/x/test.csv /home/code/ref.csv", K.COMMAND,
         "ln -sf /private/data/x/test.csv /home/code/ref.csv"),
        ("ACTION: bash", "cd /home/code &&\n  python train.py", K.COMMAND, "cd /home/code &&\n  python train.py"),
        ("[ACTION] python", "import pandas as pd\nprint(pd.__version__)", K.CODE,
         "import pandas as pd\nprint(pd.__version__)"),
        ("Action: Execute", "ls /home/data", K.COMMAND, "ls /home/data"),
        ("<ACTION> execute_bash", "cat /etc/hostname", K.COMMAND, "cat /etc/hostname"),
        ("ACTION bash:", "wget https://example.org/a.csv", K.COMMAND, "wget https://example.org/a.csv"),
        ("ACTION bash: pip install timm", "", K.COMMAND, "pip install timm"),
        ("ACTION: python -c \"print(1)\"", "", K.COMMAND, "python -c \"print(1)\""),
        ("ACTION", "nvidia-smi -L", K.COMMAND, "nvidia-smi -L"),
        ("ACTION", "./run.sh --fast", K.COMMAND, "./run.sh --fast"),
        ("ACTION", "import os\nos.listdir('/home')", K.CODE, "import os\nos.listdir('/home')"),
        ("ACTION: run", "```bash\nkaggle kernels pull a/b\n```", K.COMMAND, "kaggle kernels pull a/b"),
        ("ACTION: execute_code", "```python\nx = 1\n```", K.CODE, "x = 1"),
        ("ACTION: execute_code", "cd /home && ls", K.COMMAND, "cd /home && ls"),
        ("Tool call: terminal", "du -sh /home/data", K.COMMAND, "du -sh /home/data"),
        ("ACTION", "**CmdRunAction (source=EventSource.AGENT)**\nTHOUGHT: list files\nCOMMAND:\nls -la",
         K.COMMAND, "ls -la"),
        ("ACTION", "**IPythonRunCellAction**\nCODE:\nprint(2)", K.CODE, "print(2)"),
        ("ACTION write_file /home/code/train.py", "import os\nprint(1)", K.CODE, "import os\nprint(1)"),
        ("ACTION write_file:", "/home/code/run.sh\necho hi", K.CODE, "echo hi"),
    ],
)
def test_action_headers_give_commands_and_code(stamp, header, body, kind, text):
    log = _log(stamp, header, body)
    reading = parse_log("logs/agent.log", log)
    assert reading.log_format == "steplog"
    actions = [e for e in reading.events if e.kind in (K.COMMAND, K.CODE, K.TOOL_CALL)]
    assert [(e.kind, e.text) for e in actions] == [(kind, text)]
    [action] = actions
    assert action.actor is Actor.AGENT and action.language == ("bash" if kind is K.COMMAND or text == "echo hi"
                                                                else "python")
    assert log[action.span.start_byte:action.span.end_byte] == action.text
    outputs = [e for e in reading.events if e.kind is K.OUTPUT]
    assert [e.text for e in outputs] == ["ok"]


@pytest.mark.parametrize(
    ("header", "body", "text"),
    [
        ("ACTION finish", "Done. Submission written.", "finish\nDone. Submission written."),
        ("ACTION: view_image /home/data/a.jpg /home/data/b.jpg", "", "view_image /home/data/a.jpg /home/data/b.jpg"),
        ("ACTION write_file /home/code/train.py", "(42 lines written)",
         "write_file /home/code/train.py\n(42 lines written)"),
        ("ACTION: write_file /home/code/fix.py", "", "write_file /home/code/fix.py"),
        ("ACTION", "write_file /home/code/train.py", "write_file /home/code/train.py"),
        ("ACTION search_web", "python leaderboard solutions", "search_web\npython leaderboard solutions"),
        ("ACTION", "**AgentFinishAction**", "**AgentFinishAction**"),
        ("[ACTION] submit", '{"path": "/home/submission/submission.csv"}',
         'submit\n{"path": "/home/submission/submission.csv"}'),
    ],
)
def test_other_tools_stay_tool_calls(header, body, text):
    reading = parse_log("logs/agent.log", _log("2025-03-04 09:12:11", header, body))
    actions = [(e.kind, e.text) for e in reading.events if e.kind in (K.COMMAND, K.CODE, K.TOOL_CALL)]
    assert actions == [(K.TOOL_CALL, text)]


def test_records_without_a_tag():
    log = (
        "banner: agent v2\n"
        "2025-03-04 09:12:11,100 INFO agent: ===== step 1 =====\n"
        "2025-03-04 09:12:11,200 INFO agent: ACTION shell\n"
        "python train.py\n"
        "2025-03-04 09:12:30,000 INFO agent: OBSERVATION:\n"
        "epoch 1 loss 0.3\n"
        "2025-03-04 09:12:31 loader: reading /home/data/train.csv\n"
        "2025-03-04 09:12:32 epoch 2 loss 0.2\n"
        "2025-03-04 09:12:40,000 INFO agent: step done\n"
        "2025-03-04 09:12:41 no tag here\n"
    )
    reading = parse_log("logs/agent.log", log)
    assert [(e.kind, e.actor, e.role, e.text) for e in reading.events] == [
        (K.MESSAGE, Actor.UNKNOWN, "", "banner: agent v2"),
        (K.MESSAGE, Actor.SCAFFOLD, "scaffold", "===== step 1 ====="),
        (K.COMMAND, Actor.AGENT, "assistant", "python train.py"),
        # The program's own time-stamped lines are lines of the observation.
        (K.OUTPUT, Actor.AGENT, "tool", "epoch 1 loss 0.3\n2025-03-04 09:12:31 loader: reading /home/data/train.csv\n"
                                        "2025-03-04 09:12:32 epoch 2 loss 0.2"),
        (K.MESSAGE, Actor.SCAFFOLD, "scaffold", "step done"),
        (K.MESSAGE, Actor.UNKNOWN, "", "no tag here"),
    ]


def test_a_transcript_mentioning_one_action_is_not_a_step_log():
    text = "Notes\n2025-03-04 09:12:11 ACTION items for tomorrow\n$ ls\n"
    assert parse_log("notes.txt", text).log_format == "text"
    text = "2025-03-04 09:12:11 THOUGHT: a\n2025-03-04 09:12:12 THOUGHT: b\n"
    assert parse_log("notes.txt", text).log_format == "text"


def test_mlagentbench_fields_with_shell_and_python_tools():
    log = (
        "Research agent banner\n"
        "$ bash start.sh\n"
        "Step 1\n"
        "Thought: list the data\n"
        "Action: bash\n"
        "Action Input: ls -la /home/data\n"
        "Observation:\n```\ntrain.csv\n```\n"
        "Action: python\n"
        "Action Input:\n```python\nimport os\n```\n"
        "Action: Execute Script\n"
        'Action Input: {"script_name": "train.py"}\n'
        "Observation: ok\n"
    )
    reading = parse_log("logs/agent.log", log)
    assert reading.log_format == "steplog"
    assert [(e.kind, e.text) for e in reading.events] == [
        (K.COMMAND, "bash start.sh"),
        (K.MESSAGE, "list the data"),
        (K.COMMAND, "ls -la /home/data"),
        (K.OUTPUT, "train.csv"),
        (K.CODE, "import os"),
        (K.TOOL_CALL, 'Execute Script\nAction Input: {"script_name": "train.py"}'),
        (K.OUTPUT, "ok"),
    ]
    for event in reading.events:
        assert log[event.span.start_byte:event.span.end_byte] == event.text


def test_step_log_headers_are_linear_on_long_lines():
    import time

    for line in ("2025-03-04 09:12:11 ACTION " + "a " * 100_000, "2025-03-04 09:12:11 " + "Action" * 40_000,
                 "[03:01:44] OBSERVATION (" + "x" * 200_000, "2025-03-04 09:12:11 **" + "a" * 200_000):
        started = time.perf_counter()
        parse_log("logs/agent.log", (line + "\n") * 3 + "2025-03-04 09:12:11 ACTION shell\nls\n")
        assert time.perf_counter() - started < 5


@pytest.mark.parametrize(
    ("header", "body", "events"),
    [
        ("ACTION: bash", '{"command": "ls -la /home/data"}', [(K.COMMAND, "ls -la /home/data")]),
        ("ACTION:", '{"tool": "bash", "command": "cat /etc/hostname"}', [(K.COMMAND, "cat /etc/hostname")]),
        ("ACTION python:", '{"code": "import os"}', [(K.CODE, "import os")]),
        ("ACTION submit_to_kaggle", '{"file": "submission.csv", "cmd": "kaggle competitions submit -c x"}',
         [(K.TOOL_CALL, 'submit_to_kaggle\n{"file": "submission.csv", "cmd": "kaggle competitions submit -c x"}'),
          (K.COMMAND, "kaggle competitions submit -c x")]),
        # Escaped JSON: the command is not written verbatim, the call is kept as written.
        ("ACTION: bash", '{"command": "echo \\"a\\""}', [(K.TOOL_CALL, 'bash\n{"command": "echo \\"a\\""}')]),
        # A shell group is no JSON.
        ("ACTION: bash", "{ ls; pwd; }", [(K.COMMAND, "{ ls; pwd; }")]),
    ],
)
def test_json_inputs_give_the_commands_they_hold(header, body, events):
    log = _log("2025-03-04 09:12:11", header, body)
    reading = parse_log("logs/agent.log", log)
    found = [e for e in reading.events if e.kind in (K.COMMAND, K.CODE, K.TOOL_CALL)]
    assert [(e.kind, e.text) for e in found] == events
    for event in found:
        assert log[event.span.start_byte:event.span.end_byte] == event.text


@pytest.mark.parametrize(
    ("lines", "events"),
    [
        (["Action: bash", "Action Input: ls -la /home/data"], [(K.COMMAND, "ls -la /home/data")]),
        (["ACTION: python", "ACTION_INPUT:\nimport os\nprint(os.getcwd())"],
         [(K.CODE, "import os\nprint(os.getcwd())")]),
        (["Action: bash", 'Action Input: {"command": "nproc"}'], [(K.COMMAND, "nproc")]),
        (["Action: List Files", 'Action Input: {"dir_path": "/home"}'],
         [(K.TOOL_CALL, "List Files"), (K.TOOL_CALL, '{"dir_path": "/home"}')]),
        (["COMMAND: wget -q https://example.org/a.zip"], [(K.COMMAND, "wget -q https://example.org/a.zip")]),
        (["[CODE]\nimport json\nprint(json.dumps({}))"], [(K.CODE, "import json\nprint(json.dumps({}))")]),
        (["INFO [agent.py:42] ACTION shell\nls /private"], [(K.COMMAND, "ls /private")]),
        (["INFO agent | ACTION: bash\ndf -h"], [(K.COMMAND, "df -h")]),
    ],
)
def test_action_and_input_records(lines, events):
    log = "".join(f"2025-03-04 09:12:1{i} {line}\n" for i, line in enumerate(["THOUGHT: go", *lines]))
    reading = parse_log("logs/agent.log", log)
    assert reading.log_format == "steplog"
    found = [e for e in reading.events if e.kind in (K.COMMAND, K.CODE, K.TOOL_CALL)]
    assert [(e.kind, e.text) for e in found] == events
    assert all(e.actor is Actor.AGENT for e in found)
    for event in found:
        assert log[event.span.start_byte:event.span.end_byte] == event.text


def test_words_of_program_output_are_no_tags():
    log = ("2025-03-04 09:12:10 ACTION shell\ncurl -sI https://example.org\n"
           "2025-03-04 09:12:11 OBSERVATION\nHTTP/1.1 200 OK\n"
           "2025-03-04 09:12:12 CODE 200 GET /index.html\n")
    reading = parse_log("logs/agent.log", log)
    assert [(e.kind, e.text) for e in reading.events] == [
        (K.COMMAND, "curl -sI https://example.org"),
        (K.OUTPUT, "HTTP/1.1 200 OK\n2025-03-04 09:12:12 CODE 200 GET /index.html"),
    ]


def test_tagged_records_without_time_stamps():
    log = (
        "Task: predict the target.\n"
        "THOUGHT: look at the files\n"
        "ACTION: bash\n"
        "ls -la /home/data\n"
        "OBSERVATION:\n"
        "train.csv\n"
        "Action items for later: none\n"
        "[ACTION] python\n"
        "import pandas as pd\n"
        "OBSERVATION: ok\n"
        "ACTION: finish\n"
    )
    reading = parse_log("logs/transcript.txt", log)
    assert reading.log_format == "steplog"
    assert [(e.kind, e.actor, e.text) for e in reading.events] == [
        (K.MESSAGE, Actor.UNKNOWN, "Task: predict the target."),
        (K.MESSAGE, Actor.AGENT, "look at the files"),
        (K.COMMAND, Actor.AGENT, "ls -la /home/data"),
        (K.OUTPUT, Actor.AGENT, "train.csv\nAction items for later: none"),
        (K.CODE, Actor.AGENT, "import pandas as pd"),
        (K.OUTPUT, Actor.AGENT, "ok"),
        (K.TOOL_CALL, Actor.AGENT, "finish"),
    ]


def test_prose_that_starts_lines_with_action_words_is_no_step_log():
    text = "Meeting notes\nAction: buy milk\nAction items: none\nThought of the day: rest\n"
    assert parse_log("notes.txt", text).log_format == "text"


def test_research_notes_that_narrate_actions_are_no_step_log():
    notes = (
        "Step 7:\n"
        "[Reasoning]: The script should be run.\n"
        "[Action]: Execute the script \"train_random_forest.py\".\n"
        "[Observation]: The validation accuracy is 0.72.\n"
        "Step 8:\n"
        "[Action]: List Files\n"
        'Action Input: {"dir_path": "."}\n'
        "[Observation]: train.csv\n"
    )
    reading = parse_log("env_log/research_log.log", notes)
    assert reading.log_format == "text"
    assert not [e for e in reading.events if e.kind in (K.COMMAND, K.CODE)]


def test_a_verb_tool_name_before_prose_is_no_command():
    log = _log("2025-03-04 09:12:11", 'Action: Execute the script "train.py" to see the score.', "")
    found = [(e.kind, e.text) for e in parse_log("logs/agent.log", log).events if e.kind is not K.MESSAGE]
    assert found[0] == (K.TOOL_CALL, 'Execute the script "train.py" to see the score.')
