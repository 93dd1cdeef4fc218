"""A reader that recognises a file and finds nothing in it never leaves the file's text unread.

A SWE-agent trajectory saved as ``.json`` (``{"trajectory": [{"action": <command>, "observation":
<output>}]}``) has the keys of an OpenHands event list; read as one it gave no event at all, and
a run whose only log called a hosted LLM was CLEAN.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mleaudit.audit.logs import openhands, parse_log
from mleaudit.audit.pipeline import AuditOptions, audit_run
from mleaudit.audit.report import VerdictKind
from mleaudit.audit.rules.loader import load_ruleset
from mleaudit.audit.run import load_run
from mleaudit.audit.units import LogEventKind

CALL = "curl -s https://api.openai.com/v1/chat/completions -H 'Authorization: Bearer sk-test' -d @req.json"


def _trajectory(key: str = "trajectory") -> str:
    return json.dumps({"environment": "swe_main", key: [
        {"action": CALL, "observation": "ok", "response": "Asking a model.", "thought": "ask"},
        {"action": "python train.py", "observation": "done", "response": "", "thought": ""},
    ]}, indent=2)


@pytest.mark.parametrize("key", ["trajectory", "history", "events"])
def test_a_swe_agent_trajectory_is_not_an_openhands_event_list(key):
    reading = parse_log("logs/run.json", _trajectory(key))
    assert reading.log_format != openhands.NAME
    commands = [e.text for e in reading.events if e.kind is LogEventKind.COMMAND]
    assert CALL in commands and "python train.py" in commands


def test_openhands_records_are_still_recognised():
    text = json.dumps([
        {"id": 1, "source": "agent", "action": "run", "args": {"command": "ls -la", "thought": ""}},
        {"id": 2, "source": "agent", "observation": "run", "content": "total 0", "extras": {"command": "ls -la"}},
    ])
    reading = parse_log("events.json", text)
    assert reading.log_format == openhands.NAME
    assert [(e.kind, e.text) for e in reading.events] == [(LogEventKind.COMMAND, "ls -la"),
                                                          (LogEventKind.OUTPUT, "total 0")]


def test_a_claimed_file_with_nothing_found_goes_to_the_next_reader(monkeypatch):
    # Whatever the claiming reader: one that finds nothing and says nothing was left unread
    # hands the file on, and the report says so.
    monkeypatch.setattr(openhands, "_is_event_record", lambda item: True)
    reading = parse_log("logs/run.json", _trajectory())
    assert reading.log_format == "json"
    assert any("openhands reader" in note and "found nothing" in note for note in reading.notes)
    assert CALL in [e.text for e in reading.events]


def test_a_run_whose_trajectory_calls_a_hosted_model_is_flagged(tmp_path: Path):
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "run.json").write_text(_trajectory())
    (tmp_path / "solution.py").write_text("import pandas as pd\npd.read_csv('train.csv').to_csv('submission.csv')\n")
    report = audit_run(load_run(tmp_path), ruleset=load_ruleset(), options=AuditOptions())
    assert report.verdict.kind is VerdictKind.FLAGGED
    assert "llm-api-endpoint-url" in {f.rule_id for f in report.findings}


def test_records_of_another_shape_in_an_openhands_list_are_read():
    # One real OpenHands action makes the list an event list; the records around it that give
    # no OpenHands event (a SWE-agent step, a bare string) are still read.
    text = json.dumps({"history": [
        {"id": 1, "source": "agent", "action": "run", "args": {"command": "ls"}},
        {"action": CALL, "observation": "ok", "thought": "ask a model"},
        "import openai\nopenai.ChatCompletion.create(model='gpt-4')",
        {"id": 3, "source": "agent", "observation": "run", "content": "", "extras": {}},
    ]}, indent=1)
    reading = parse_log("events.json", text)
    assert reading.log_format == openhands.NAME
    found = [(e.kind, e.text) for e in reading.events]
    assert (LogEventKind.COMMAND, CALL) in found
    assert any("ask a model" in body for _, body in found)
    assert any("openai.ChatCompletion.create" in body for _, body in found)
    # an OpenHands record with nothing in it gives nothing (no noise event)
    assert len(found) == 4


def test_an_openhands_edit_reads_the_text_it_writes_beside_an_empty_content():
    # OpenHands' editor action sends ``content: ""`` next to the ``file_text`` (or ``new_str``) it writes.
    code = "import openai\nopenai.ChatCompletion.create(model='gpt-4')\n"
    text = json.dumps([
        {"id": 1, "source": "agent", "action": "edit", "args": {
            "path": "/w/llm.py", "command": "create", "file_text": code, "old_str": None, "new_str": None,
            "content": "", "thought": ""}},
        {"id": 2, "source": "agent", "action": "edit", "args": {
            "path": "/w/llm.py", "command": "str_replace", "old_str": "x", "new_str": code, "content": ""}},
    ])
    reading = parse_log("events.json", text)
    assert [(e.kind, e.text, e.location) for e in reading.events] == [
        (LogEventKind.CODE, code, "[0].args.file_text"), (LogEventKind.CODE, code, "[1].args.new_str")]


def test_a_repeated_key_in_a_printed_python_dict_is_read_and_reported():
    hidden = "import openai; openai.ChatCompletion.create(model='gpt-4')"
    log = ("> Entering new AgentExecutor chain...\n\nInvoking: `python_repl` with `{'query': 'import pandas as pd'}`\n\n"
           f"ok\n\nInvoking: `python_repl` with `{{'query': {hidden!r}, 'query': 'print(1)'}}`\n\nresult\n"
           "> Finished chain.\n")
    reading = parse_log("logs/agent.log", log)
    assert reading.log_format == "frameworks"
    assert any(hidden in e.text for e in reading.events)
    assert any("'query' written more than once" in problem for problem in reading.problems)


def test_openhands_contents_given_as_lists_of_parts_are_read():
    text = json.dumps([
        {"id": 1, "source": "agent", "action": "message",
         "args": {"content": [{"type": "text", "text": "Calling the API: " + CALL}, {"type": "image_url"}]}},
        {"id": 2, "source": "agent", "observation": "run", "content": [{"type": "text", "text": {"value": "total 0"}}],
         "extras": {}},
    ])
    reading = parse_log("events.json", text)
    assert [(e.kind, e.text) for e in reading.events] == [(LogEventKind.MESSAGE, "Calling the API: " + CALL),
                                                          (LogEventKind.OUTPUT, "total 0")]


def test_jsonl_logged_completions_thinking_and_value_parts_are_read():
    lines = [
        {"role": "user", "content": "go"},
        {"type": "response", "choices": [{"message": {"role": "assistant", "content": None, "tool_calls": [
            {"type": "function", "function": {"name": "bash", "arguments": json.dumps({"cmd": CALL})}}]}}]},
        {"role": "assistant", "content": [{"type": "thinking", "thinking": "I will run the call."}]},
        {"role": "assistant", "content": [{"type": "text", "text": {"value": "Done with the call."}}]},
    ]
    reading = parse_log("logs/trajectory.jsonl", "\n".join(json.dumps(line) for line in lines) + "\n")
    assert reading.log_format == "jsonl"
    assert [(e.kind, e.role, e.text) for e in reading.events] == [
        (LogEventKind.MESSAGE, "user", "go"), (LogEventKind.COMMAND, "assistant", CALL),
        (LogEventKind.MESSAGE, "assistant", "I will run the call."),
        (LogEventKind.MESSAGE, "assistant", "Done with the call.")]


def test_inspect_calls_only_in_the_event_transcript_and_other_part_types_are_read():
    called = {"id": "c1", "function": "bash", "arguments": {"cmd": "ls /home/data"}}
    sample = {"id": 1, "epoch": 1, "input": "task", "messages": [
        {"role": "user", "content": "Solve."},
        {"role": "Assistant", "content": [{"type": "output_text", "text": "Listing."},
                                          {"type": "reasoning", "reasoning": "", "summary": "Then the call."}],
         "tool_calls": [called]},
        {"role": "tool", "content": "train.csv", "tool_call_id": "c1", "function": "bash"},
    ], "events": [
        {"event": "tool", "function": "bash", "arguments": {"cmd": "ls /home/data"}},  # the same call again
        {"event": "tool", "function": "bash", "arguments": {"cmd": CALL}},  # a sub-agent's call, only here
    ]}
    text = json.dumps({"version": 2, "status": "success", "eval": {"task": "t", "model": "m"}, "samples": [sample]})
    reading = parse_log("logs/eval.json", text)
    assert reading.log_format == "inspect"
    found = [(e.kind, e.text) for e in reading.events]
    assert found.count((LogEventKind.COMMAND, "ls /home/data")) == 1
    assert (LogEventKind.COMMAND, CALL) in found
    assert (LogEventKind.MESSAGE, "Listing.") in found and (LogEventKind.MESSAGE, "Then the call.") in found


def test_mlagentbench_low_level_code_no_agent_step_ran_is_read():
    code = "import openai\nopenai.ChatCompletion.create(model='gpt-4')"
    listed = {"action": {"name": "List Files", "args": {"dir_path": "."}}, "observation": "train.py", "timestamp": 1.0}
    repl = {"action": {"name": "Python REPL", "args": {"command": code}}, "observation": "ok", "timestamp": 2.0}
    only_low = json.dumps({"steps": [listed], "low_level_steps": [repl]})
    both = json.dumps({"steps": [listed, repl], "low_level_steps": [repl]})
    assert code in [e.text for e in parse_log("env_log/trace.json", only_low).events]
    # a primitive call that repeats the agent's own step is read once, from the step
    assert [e.text for e in parse_log("env_log/trace.json", both).events].count(code) == 1


def test_aide_code_parts_and_other_journal_members_are_read():
    code = "import openai\nopenai.ChatCompletion.create(model='gpt-4')"
    first = {"id": "a", "step": 0, "plan": "p", "code": "print(1)", "_term_out": ["1\n"], "analysis": "ok"}
    parts = dict(first, id="b", step=1, code=[{"type": "text", "text": code}])
    for journal in ([first, parts], {"nodes": [first], "best_node": {"code": code}},
                    {"nodes": [first, [dict(first, id="c", code=code)]]}):
        reading = parse_log("logs/journal.json", json.dumps(journal))
        assert reading.log_format == "aide"
        assert (LogEventKind.CODE, code) in [(e.kind, e.text) for e in reading.events], journal


def test_a_message_marker_or_role_inside_an_assistants_message_text_splits_nothing():
    def message(number: int, role: str, value: str) -> str:
        return (f"Message(id='msg_{number}', assistant_id='asst_1', content=[TextContentBlock(text=Text("
                f"annotations=[], value={value!r}), type='text')], object='thread.message', role='{role}', "
                f"run_id='run_1', thread_id='thread_1')")

    said = "Let me run it: " + CALL + "\nNext: Message(id='m' and role='user' are only words here.\n"
    dump = ("SyncCursorPage[Message](data=[" + ", ".join([message(1, "assistant", said), message(2, "user", "Solve.")])
            + "], object='list', has_more=False)")
    reading = parse_log("logs/titanic_message.txt", dump)
    assert reading.log_format == "assistants"
    assert [(e.role, e.text) for e in reading.events if e.kind is LogEventKind.MESSAGE] == [
        ("assistant", said), ("user", "Solve.")]


@pytest.mark.parametrize("record", [
    {"type": "llm_response", "response": {"object": "chat.completion", "choices": [{"message": {
        "role": "assistant", "tool_calls": [{"function": {"name": "bash", "arguments": json.dumps({"cmd": CALL})}}]}}]}},
    {"event": "llm_call", "data": {"choices": [{"message": {"role": "assistant", "tool_calls": [
        {"function": {"name": "bash", "arguments": json.dumps({"cmd": CALL})}}]}}]}},
    {"object": "response", "output": [{"type": "function_call", "name": "bash", "arguments": json.dumps({"cmd": CALL})}]},
])
def test_jsonl_completions_in_envelopes_and_responses_output_are_read(record):
    text = json.dumps({"role": "user", "content": "go"}) + "\n" + json.dumps(record) + "\n"
    assert (LogEventKind.COMMAND, CALL) in [(e.kind, e.text) for e in parse_log("logs/t.jsonl", text).events]


def test_openhands_edit_target_under_another_key_and_aide_inline_children_are_read_as_code():
    code = "import openai\nopenai.ChatCompletion.create(model='gpt-4')"
    events = json.dumps([{"id": 1, "source": "agent", "action": "edit",
                          "args": {"file_path": "/w/llm.py", "command": "create", "file_text": code}}])
    assert (LogEventKind.CODE, code) in [(e.kind, e.text) for e in parse_log("events.json", events).events]
    node = {"id": "a", "step": 0, "plan": "p", "code": "print(1)", "_term_out": ["1\n"], "analysis": "ok",
            "children": [{"id": "b", "code": code}]}
    journal = parse_log("logs/journal.json", json.dumps([node]))
    assert (LogEventKind.CODE, code) in [(e.kind, e.text) for e in journal.events]


def test_inspect_calls_nested_in_subtasks_and_model_outputs_are_read():
    call = {"id": "c9", "function": "bash", "arguments": {"cmd": CALL}}
    code = {"id": "c8", "function": "python", "arguments": {"code": "import openai\nopenai.OpenAI()"}}
    sample = {"id": 1, "epoch": 1, "messages": [{"role": "user", "content": "Solve."}], "events": [
        {"event": "subtask", "name": "helper", "events": [{"event": "Tool", **call}]},
        {"event": "model", "output": {"choices": [{"message": {"role": "assistant", "tool_calls": [code]}}]}},
    ]}
    text = json.dumps({"version": 2, "status": "success", "eval": {"task": "t"}, "samples": [sample]})
    found = [(e.kind, e.text) for e in parse_log("logs/eval.json", text).events]
    assert (LogEventKind.COMMAND, CALL) in found
    assert (LogEventKind.CODE, "import openai\nopenai.OpenAI()") in found


def test_code_given_to_python_dash_c_is_read_as_python():
    from mleaudit.audit.expand.derived import inline_python_units
    from mleaudit.audit.units import CodeUnit

    text = ("cd /w && python3 -c \"import os; print(\\\"x\\\")\" && /usr/bin/python -u -c 'import openai' x\n"
            "echo -c python\n")
    unit = CodeUnit(path="run.sh", language="bash", text=text)
    found = inline_python_units(unit)
    assert [u.text for u in found] == ['import os; print("x")', "import openai"]
    assert text[found[1].origin.start_byte:found[1].origin.end_byte] == "import openai"


@pytest.mark.parametrize(("command", "code"), [
    ("env python -c 'import os'", "import os"),
    ("timeout 60 nohup python3 -u -c 'import os' > out.log 2>&1 &", "import os"),
    ("uv run python -Bc 'import os'", "import os"),
    ("python -c\"import os\"", "import os"),
    ("python -c $'import os\\nos.getcwd()'", "import os\nos.getcwd()"),
    ("python -c 'import os;'\"os.getcwd()\"", "import os;os.getcwd()"),
    ("pypy3 -W ignore -c 'import os'", "import os"),
    ("python train.py -c 'import os'", None),  # the script's own option
    ("python -m pytest -c setup.cfg", None),
    ("python -c 'import os'; echo " + "$(echo " * 1500 + "x" + ")" * 1500, "import os"),  # a tree too deep to walk
])
def test_the_ways_of_handing_python_inline_code(command, code):
    from mleaudit.audit.expand.derived import inline_python_units
    from mleaudit.audit.units import CodeUnit

    found = [u.text for u in inline_python_units(CodeUnit(path="run.sh", language="bash", text=command))]
    assert found == ([] if code is None else [code])


def test_a_hosted_model_called_through_python_dash_c_is_flagged(tmp_path: Path):
    (tmp_path / "logs").mkdir()
    command = "python -c \"import openai; openai.ChatCompletion.create(model='gpt-4')\""
    (tmp_path / "logs" / "events.json").write_text(json.dumps(
        [{"id": 1, "source": "agent", "action": "run", "args": {"command": command}}]))
    (tmp_path / "solution.py").write_text("import pandas as pd\npd.read_csv('train.csv').to_csv('submission.csv')\n")
    report = audit_run(load_run(tmp_path), ruleset=load_ruleset(), options=AuditOptions())
    assert report.verdict.kind is VerdictKind.FLAGGED
    assert "llm-external-api-call" in {f.rule_id for f in report.findings}
