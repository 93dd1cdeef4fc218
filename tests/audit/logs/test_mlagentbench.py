"""MLAgentBench log folders: layout, submission, and who wrote each event of each file.

The small run under ``tests/fixtures/logs/mlagentbench/toy_run`` is written for these tests in
MLAgentBench's formats (Windows separators included); the real runs in ``../shared`` are read
too when present.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mleaudit.audit.expand import expand_run
from mleaudit.audit.logs import detect_log_format, parse_log
from mleaudit.audit.logs import mlagentbench
from mleaudit.audit.run import ArtifactKind, RunLayout, load_run
from mleaudit.audit.units import Actor
from mleaudit.audit.units import LogEventKind as K
from tests.conftest import shared_path

TOY = Path(__file__).resolve().parents[2] / "fixtures" / "logs" / "mlagentbench" / "toy_run"

LOGS = [
    "agent_log/main_log", "agent_log/step_2_log.log", "agent_log/step_0_summary_log.log",
    "env_log/tool_logs/step_1_tool_log.log_0", "agent_log/agent_2_0.json", "env_log/trace.json", "log",
    "env_log/overall_time.txt",
]  # fmt: skip


def _read(rel: str):
    text = (TOY / rel).read_text(encoding="utf-8")
    reading = parse_log(rel, text)
    assert reading.log_format == "mlagentbench", rel
    assert reading.problems == ()
    return text, reading.events


def _summary(events):
    return [(e.kind, e.actor) for e in events]


def test_layout_submission_and_kinds():
    run = load_run(TOY)
    assert run.layout == "mlagentbench"
    assert run.submission is not None
    assert run.submission.path == "env_log/traces/step_final_files/submission.csv"
    arts = {a.path: a for a in run.artifacts}
    # Earlier snapshots' submissions are data files of the workspace.
    assert arts["env_log/traces/step_1_files/submission.csv"].kind is ArtifactKind.DATA
    backup = arts["env_log/traces/step_final_files/backup/train.py_2024-02-04_14-26-56"]
    assert (backup.kind, backup.language) == (ArtifactKind.CODE, "python")
    for rel in ("agent_log/main_log", "log", "env_log/tool_logs/step_1_tool_log.log_0"):
        assert arts[rel].kind is ArtifactKind.LOG and arts[rel].sniffed == "read as a log by content (text)"
    assert run.skipped == ()
    assert RunLayout.submission_candidates("mlagentbench")[-1] == run.submission.path


def test_every_log_is_read_by_the_adapter():
    units = expand_run(load_run(TOY))
    formats = dict(units.log_formats)
    assert {rel: formats.get(rel) for rel in LOGS} == {rel: "mlagentbench" for rel in LOGS}
    assert units.skipped == ()


def test_main_log_events():
    text, events = _read("agent_log/main_log")
    first_step = next(e.index for e in events if e.text == "Step 0:")
    # The scaffold's prompt, tool usage examples included, is the scaffold's.
    assert {(e.kind, e.actor) for e in events[:first_step + 1]} == {(K.MESSAGE, Actor.SCAFFOLD)}
    calls = [e for e in events if e.kind is K.TOOL_CALL]
    assert [c.text.split("\n")[0] for c in calls] == ["List Files", "Edit Script (AI)", "Execute Script", "Final Answer"]
    assert all(c.actor is Actor.AGENT for c in calls)
    assert calls[0].text == 'List Files\nAction Input:  {\n    "dir_path": "."\n}'
    commands = [e for e in events if e.kind is K.COMMAND]
    # ``scripts\train.py`` as Windows wrote it, run as a POSIX path.
    assert [(c.text, c.language, c.actor) for c in commands] == [("python scripts/train.py", "bash", Actor.AGENT)]
    assert commands[0].span.start_line == 71
    outputs = [e for e in events if e.kind is K.OUTPUT]
    assert outputs[0].text == "backup/\ntrain.csv\ntrain.py"
    # "Observation:" twice, then the fence: the output is the fenced text.
    assert outputs[1].text.startswith("The edited file is saved to train.py.")
    # An observation that quotes field names stays one output.
    assert outputs[-1].text == "Reflection: an observation may quote field names.\nAction: not an action"
    assert all(o.actor is Actor.AGENT for o in outputs)
    thoughts = [e.text for e in events if e.kind is K.MESSAGE and e.actor is Actor.AGENT]
    assert thoughts[:4] == ["This is the first step.", "1. Look at the files.", "None.", "List the files first."]
    for event in events:
        if event.kind is not K.COMMAND:
            assert text[event.span.start_byte:event.span.end_byte] == event.text


def test_the_agents_own_llm_call():
    _, events = _read("agent_log/step_2_log.log")
    assert _summary(events) == [(K.MESSAGE, Actor.SCAFFOLD)] * 4 + [(K.MESSAGE, Actor.AGENT), (K.MESSAGE, Actor.SCAFFOLD)]
    assert events[4].text.startswith("Reflection:  The edit is correct.") and events[4].role == "assistant"
    assert events[-1].text.startswith("Number of prompt tokens: 120")


def test_helper_llm_calls_are_the_scaffolds_and_their_code_the_agents():
    _, events = _read("agent_log/step_0_summary_log.log")
    assert {e.actor for e in events} == {Actor.SCAFFOLD}
    text, events = _read("env_log/tool_logs/step_1_tool_log.log_0")
    code = [e for e in events if e.kind is K.CODE]
    assert [(c.actor, c.role, c.language) for c in code] == [(Actor.AGENT, "user", "python"),
                                                           (Actor.AGENT, "assistant", "python")]
    # The template indents the fence and the first line of the script: the code starts after it.
    assert code[0].text == 'import pandas as pd\ntrain = pd.read_csv("train.csv")'
    assert code[1].text.endswith('.to_csv("submission.csv", index=False)')
    assert all(text[c.span.start_byte:c.span.end_byte] == c.text for c in code)


def test_scaffold_state_is_never_code():
    text, events = _read("agent_log/agent_2_0.json")
    assert not [e for e in events if e.kind in (K.CODE, K.COMMAND)]
    prompt = next(e for e in events if e.location == "initial_prompt")
    assert (prompt.kind, prompt.actor) == (K.MESSAGE, Actor.SCAFFOLD) and "requests.get" in prompt.text
    assert next(e for e in events if e.location == "args.log_dir").text == "logs\\toy\\0"
    call = next(e for e in events if e.kind is K.TOOL_CALL)
    assert (call.actor, call.location) == (Actor.AGENT, "history_steps[0].action.Action")
    assert call.text == 'List Files\nAction Input: {\n    "dir_path": "."\n}'
    observation = next(e for e in events if e.kind is K.OUTPUT)
    assert (observation.actor, observation.text) == (Actor.AGENT, "backup/\ntrain.csv\ntrain.py")
    assert {e.actor for e in events if e.location.startswith("history_steps[0].action.")} == {Actor.AGENT}
    for event in events:
        if event.kind is not K.TOOL_CALL:
            assert json.loads(f'"{text[event.span.start_byte:event.span.end_byte]}"') == event.text


def test_environment_trace():
    _, events = _read("env_log/trace.json")
    high = [e for e in events if e.location.startswith("steps[")]
    assert [(e.kind, e.actor, e.text.split(" {")[0]) for e in high if e.kind is not K.OUTPUT] == [
        (K.TOOL_CALL, Actor.AGENT, "List Files"),
        # Research-log bookkeeping is done by the scaffold after every step.
        (K.TOOL_CALL, Actor.SCAFFOLD, "Append Summary to Research Log"),
        (K.TOOL_CALL, Actor.AGENT, "Edit Script (AI)"),
        (K.TOOL_CALL, Actor.AGENT, "Execute Script"),
        (K.COMMAND, Actor.AGENT, "python scripts/train.py"),
    ]
    assert '"script_name": "train.py"' in high[4].text
    low = [e for e in events if e.location.startswith("low_level_steps[")]
    assert {e.actor for e in low if e.kind in (K.TOOL_CALL, K.OUTPUT)} == {Actor.SCAFFOLD}
    written = [e for e in low if e.kind is K.CODE]
    assert [(e.actor, e.language, e.location) for e in written] == [(Actor.AGENT, "python", "low_level_steps[1].action")]
    assert 'to_csv("submission.csv"' in written[0].text
    # The primitive Execute Script repeats the agent's step: no second command.
    assert not [e for e in low if e.kind is K.COMMAND]
    assert events[-1].location == "task_description" and events[-1].actor is Actor.SCAFFOLD


def test_scaffold_stdout():
    _, events = _read("log")
    assert [(e.kind, e.actor, e.text.split("\n")[0][:24]) for e in events] == [
        (K.MESSAGE, Actor.SCAFFOLD, "Namespace(task='toy', lo"),
        (K.MESSAGE, Actor.SCAFFOLD, "Executing script now..."),
        (K.OUTPUT, Actor.AGENT, "Validation Accuracy: 0.7"),
        (K.MESSAGE, Actor.SCAFFOLD, "Step 3"),
        (K.MESSAGE, Actor.AGENT, "Reflection:  an invalid "),
        (K.MESSAGE, Actor.SCAFFOLD, "========================"),
        (K.MESSAGE, Actor.SCAFFOLD, "Final message:  Finished"),
    ]
    _, events = _read("env_log/overall_time.txt")
    assert _summary(events) == [(K.MESSAGE, Actor.SCAFFOLD)]


@pytest.mark.parametrize(
    ("path", "text"),
    [
        ("logs/main_log", "Step 0:\nAction: List Files\nAction Input: {}\n"),  # not under agent_log/
        ("agent_log/main_log", "just some notes\n"),
        ("env_log/trace.json", '["a", "list"]'),
        ("env_log/trace.json", '{"other": 1}'),
        ("agent_log/agent_1_0.json", '{"unrelated": "state"}'),
        ("log", "plain output, no Namespace line\n"),
        ("env_log/overall_time.txt", "twelve seconds"),
        ("env_log/tool_logs/step_1_tool_log.log", "no prompt banner here\n"),
    ],
)
def test_detection_needs_path_and_content(path, text):
    assert not mlagentbench.detect(path, text)
    assert detect_log_format(path, text) != "mlagentbench"


@pytest.mark.parametrize(
    "text",
    [
        '{"steps": [{"action": {"name": "Execute Script", "args": {"script_name": "a.py"}}, "observation": "x',
        '{"steps": [' + "[" * 500 + "]" * 500 + "]}",
        '{"steps": [{"action": "not an object"}, 3, null, {"action": {"name": 5, "args": [1]}}]}',
        '{"steps": "nope", "low_level_steps": [{"action": {"name": "Write File", "args": {"file_name": 1}}}]}',
    ],
    ids=["cut", "deep", "odd-types", "odd-args"],
)
def test_hostile_traces_do_not_raise(text):
    reading = parse_log("env_log/trace.json", text)
    assert reading.log_format in ("mlagentbench", "text")


def test_hostile_transcripts_do_not_raise():
    text = "Step 0:\nAction: Execute Script\nAction Input: {\"script_name\": \"x; rm -rf /\"\n" * 3
    reading = parse_log("agent_log/main_log", text + "Action Input:\nObservation:\n```\n")
    assert reading.log_format == "mlagentbench"
    commands = [e.text for e in reading.events if e.kind is K.COMMAND]
    # Broken JSON is read as far as it goes; the name is quoted as one shell word.
    assert commands == ["python 'x; rm -rf /'"] * 3


def test_real_runs_are_read_whole():
    root = shared_path("runs", "mlagentbench")
    for run_dir in sorted(p for p in root.iterdir() if p.is_dir()):
        run = load_run(run_dir)
        assert run.layout == "mlagentbench", run_dir
        assert run.skipped == (), run_dir
        assert not [a.path for a in run.artifacts if a.kind is ArtifactKind.OTHER], run_dir
        if (run_dir / "env_log/traces/step_final_files/submission.csv").exists():
            assert run.submission is not None and run.submission.path.startswith("env_log/traces/step_final_files/")


def test_a_real_run_audits_without_gaps():
    from mleaudit.audit.pipeline import audit_run
    from mleaudit.audit.rules.loader import find_rules_root, load_ruleset

    run_dir = shared_path("runs", "mlagentbench", "gemini-pro__spaceship-titanic__0")
    run = load_run(run_dir)
    units = expand_run(run)
    formats = dict(units.log_formats)
    assert formats["agent_log/main_log"] == formats["env_log/trace.json"] == "mlagentbench"
    assert not [e for e in units.log_events if e.span.path.endswith(".json") and e.kind.value == "code"
                and e.span.path.startswith("agent_log/")]
    report = audit_run(run, ruleset=load_ruleset([find_rules_root(None)]))
    assert [g for g in report.verdict.gaps if g.kind.value == "file-unread"] == []
    assert [f.rule_id for f in report.findings if f.severity.label in ("medium", "high", "critical")] == []


def test_a_windows_script_name_is_found_in_the_run(tmp_path):
    from mleaudit.audit.checks.provenance import assess_provenance
    from mleaudit.audit.rules.context import RunContext
    from mleaudit.audit.model import Span
    from mleaudit.audit.units import CodeUnit, LogEvent

    submission = tmp_path / "submission.csv"
    submission.write_text("id,y\n1,0\n", encoding="utf-8")
    text = 'Execute Script {"script_name": "scripts\\\\train.py"}'
    call = LogEvent(index=0, kind=K.TOOL_CALL, text=text, span=Span.from_offsets(text, "env_log/trace.json", 0, len(text)))
    unit = CodeUnit(path="env_log/traces/step_final_files/train.py", language="python", text="print(1)\n")
    ctx = RunContext(root=tmp_path, submission_path=submission, code_units=(unit,), log_events=(call,))
    # ``scripts\train.py`` is the run's train.py: no script is missing, and nothing writes the file.
    assert assess_provenance(ctx).outcome == "unlogged"
