"""Actors: who produced each unit and event, the defaults by layout, and rules that judge only some actors."""

from __future__ import annotations

import json

import pytest

from mleaudit.audit.attribution import attribute_event, attribute_units
from mleaudit.audit.rules.context import RunContext
from mleaudit.audit.model import Span
from mleaudit.audit.rules.engine import evaluate_rules
from mleaudit.audit.rules.spec import DEFAULT_ACTORS, RuleSpec
from mleaudit.audit.units import Actor, CodeUnit, LogEvent, LogEventKind

from .rules.conftest import make_rule

KAGGLE = {"match": {"regex": r"(?P<x>kaggle competitions download)"}, "focus": "x"}


def _event(text, path="logs/agent.log", kind=LogEventKind.COMMAND, actor=Actor.UNKNOWN, start=0):
    span = Span.from_offsets(" " * start + text, path, start, start + len(text))
    return LogEvent(index=0, kind=kind, text=text, span=span, language="bash", actor=actor)


def test_actor_parse_names_the_allowed_values():
    assert Actor.parse("Scaffold") is Actor.SCAFFOLD
    with pytest.raises(ValueError, match="agent, scaffold, operator, unknown"):
        Actor.parse("harness")


def test_rules_judge_the_agent_and_unknown_by_default():
    assert DEFAULT_ACTORS == {Actor.AGENT, Actor.UNKNOWN}
    rule = make_rule({**KAGGLE, "target": ["code", "log"], "events": ["command"]})
    text = "kaggle competitions download -c x"
    units = [CodeUnit(path=f"code/{a.value}.sh", language="bash", text=text, actor=a) for a in Actor]
    events = [_event(text, path=f"logs/{a.value}.log", actor=a) for a in Actor]
    found = evaluate_rules([rule], code_units=units, log_events=events)
    assert sorted({f.actor for f in found}) == ["agent", "unknown"]
    assert all(f.evidence[0].span.path.split("/")[1].split(".")[0] == f.actor for f in found)


def test_a_rule_that_names_the_scaffold_judges_it_and_not_the_operator():
    rule = make_rule({**KAGGLE, "target": "log", "events": ["command"], "actors": ["agent", "scaffold", "unknown"]})
    events = [_event("kaggle competitions download -c x", path=f"logs/{a.value}.log", actor=a) for a in Actor]
    found = evaluate_rules([rule], log_events=events)
    assert sorted(f.actor for f in found) == ["agent", "scaffold", "unknown"]


def test_unknown_actor_in_a_rule_file_is_refused():
    data = {"id": "ext-test", "title": "t", "message": "m", "severity": "high", "confidence": "high",
            "category": "external-resource", "target": "log", "actors": ["harness"], **KAGGLE,
            "metadata": {"rationale": "r"}}
    with pytest.raises(Exception, match="harness"):
        RuleSpec.from_dict(data)


def test_run_level_checks_see_only_the_units_of_their_actors():
    from mleaudit.audit.rules.registry import CHECKS, RegisteredCheck

    seen = []

    def spy(ctx):
        seen.append(tuple(sorted(u.actor.value for u in ctx.code_units)))
        return []

    CHECKS["test-actor-spy"] = RegisteredCheck(name="test-actor-spy", fn=spy)
    try:
        rule = make_rule({"match": {"builtin": "test-actor-spy"}, "target": "run", "actors": ["operator"],
                          "message": "spied", "languages": None})
        units = tuple(CodeUnit(path="a.py", language="python", text="x = 1", actor=a) for a in Actor)
        evaluate_rules([rule], run_context=RunContext(root=".", code_units=units))
    finally:
        CHECKS.pop("test-actor-spy", None)
    assert seen == [("operator",)]


def test_defaults_place_the_host_log_with_the_scaffold_and_tool_use_with_the_agent():
    host = _event("curl https://api.openai.com/v1/chat", path="run.log", kind=LogEventKind.OUTPUT)
    assert attribute_event(host, "mlebench").actor is Actor.SCAFFOLD
    assert attribute_event(host, "folder").actor is Actor.AGENT  # not MLE-bench's host log
    typed = _event("kaggle competitions download -c x", path="run.log")
    assert attribute_event(typed, "mlebench").actor is Actor.UNKNOWN  # a command there is judged
    thought = _event("I will train a model", kind=LogEventKind.MESSAGE)
    assert attribute_event(thought, "mlebench").actor is Actor.UNKNOWN
    told = _event("pip install x", actor=Actor.OPERATOR)
    assert attribute_event(told, "mlebench") is told


def test_units_cut_from_a_log_take_their_event_s_actor_and_files_are_the_agent_s():
    log_text = "$ ls\n$ kaggle competitions download -c x\n"
    first = _event("ls", path="notes.log", start=2, actor=Actor.OPERATOR)
    second = _event("kaggle competitions download -c x", path="notes.log", start=7)
    from_first = CodeUnit(path="notes.log", language="bash", text="ls", origin=first.span, source="log")
    from_second = CodeUnit(path="notes.log", language="bash", text=second.text, origin=second.span, source="log")
    file_unit = CodeUnit(path="code/train.py", language="python", text="x = 1")
    placed = CodeUnit(path="driver.ipynb", language="python", text="x = 1", source="notebook", actor=Actor.OPERATOR)
    units, events = attribute_units([from_first, from_second, file_unit, placed], [first, second], "folder")
    assert [u.actor for u in units] == [Actor.OPERATOR, Actor.AGENT, Actor.AGENT, Actor.OPERATOR]
    assert [e.actor for e in events] == [Actor.OPERATOR, Actor.AGENT]
    assert log_text  # the offsets above follow this log's layout


def test_report_shows_the_actor_and_what_was_read(tmp_path):
    from click.testing import CliRunner

    from mleaudit.audit.cli import main

    run = tmp_path / "run"
    (run / "code").mkdir(parents=True)
    (run / "code" / "get.sh").write_text("kaggle competitions download -c spaceship-titanic\n")
    (run / "logs").mkdir()
    (run / "logs" / "agent.log").write_text("THOUGHT: look\n")
    out = tmp_path / "r.json"
    result = CliRunner().invoke(main, ["audit", str(run), "--no-similarity", "--no-grade", "-o", str(out)])
    assert result.exit_code == 1, result.output
    assert "[agent]" in result.output
    report = json.loads(out.read_text())
    assert {f["actor"] for f in report["findings"]} == {"agent"}
    files = {f["path"]: f for f in report["run"]["files"]}
    assert files["code/get.sh"]["reader"] == "bash" and files["code/get.sh"]["actors"] == {"agent": 1}
    assert files["logs/agent.log"]["reader"] != "none"
