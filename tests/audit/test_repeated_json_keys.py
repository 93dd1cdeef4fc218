"""A key written twice in one JSON object never hides what its other value holds.

``json.loads`` keeps the last value of a repeated key, so ``{"code": <copied kernel>, "code":
"print(1)"}`` would show the audit ``print(1)`` only. Every value is read, and the file is a gap
(the run is not clean), in journals, notebooks, JSONL logs and tool calls printed in text, in
documents whole or cut short.
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest

from mleaudit.audit.expand import expand_run
from mleaudit.audit.run import load_run
from mleaudit.audit.logs import parse_log
from mleaudit.audit.logs.jsonregions import load_json, loads_json
from mleaudit.audit.logs.toolcalls import call_expressions
from mleaudit.audit.units import LogEventKind
from mleaudit.grading import untrusted_json
from mleaudit.grading.untrusted_json import ShadowedMember, collect_shadowed
from tests.audit.invented_kernels import LANTERN_KERNEL, audit_against

KERNEL = LANTERN_KERNEL
DECOY = "print('hello')"


def _pair(key: str, hidden: object, shown: object, *, hidden_first: bool = True) -> str:
    first, second = (hidden, shown) if hidden_first else (shown, hidden)
    return f'"{key}": {json.dumps(first)}, "{key}": {json.dumps(second)}'


# -- the decoders ---------------------------------------------------------------------------------------------------


def test_the_decoder_keeps_the_last_value_and_reports_the_hidden_one() -> None:
    with collect_shadowed() as hidden:
        value = untrusted_json.loads('{"a": 1, "b": {"c": "x", "c": "y"}, "a": 2}')
    assert value == {"a": 2, "b": {"c": "y"}}
    assert sorted((m.key, m.value) for m in hidden) == [("a", 1), ("c", "x")]


def test_without_a_collector_nothing_is_kept_and_nothing_fails() -> None:
    assert untrusted_json.loads('{"a": 1, "a": 2}') == {"a": 2}
    assert loads_json('{"a": 1, "a": 2}') == {"a": 2}


def test_an_enclosing_collector_hears_of_what_an_inner_one_collected() -> None:
    with collect_shadowed() as outer:
        with collect_shadowed() as inner:
            loads_json('{"k": "v1", "k": "v2"}')
    assert inner == outer == [ShadowedMember("k", "v1")]


def test_the_hidden_members_kept_are_bounded_and_the_overflow_is_said() -> None:
    text = "{" + ", ".join(f'"k": {i}' for i in range(untrusted_json.MAX_SHADOWED + 500)) + "}"
    with collect_shadowed() as hidden:
        assert untrusted_json.loads(text) == {"k": untrusted_json.MAX_SHADOWED + 499}
    assert len(hidden) == untrusted_json.MAX_SHADOWED and hidden.overflowed
    reading = parse_log("log.json", '{"nodes": [{"code": "x = 1"}], ' + text[1:])
    assert any("more values hidden by repeated keys than are kept" in p for p in reading.problems)


def test_small_hidden_values_never_crowd_out_a_later_one() -> None:
    filler = ", ".join('"x": 1' for _ in range(5000))
    text = '{"nodes": [{"id": "n0", ' + filler + ", " + _pair("code", KERNEL, DECOY) + "}]}"
    reading = parse_log("journal.json", text)
    assert any(e.text == KERNEL and e.kind is LogEventKind.CODE for e in reading.events)
    assert not any("more values hidden" in p for p in reading.problems)


@pytest.mark.parametrize(("record", "expected"), [
    # a bash tool's input: the hidden command is a command whatever the member's name
    ('{"type": "tool_use", "name": "bash", ' + _pair("input", "kaggle competitions download -c x", "ls") + "}",
     (LogEventKind.COMMAND, "kaggle competitions download -c x")),
    # arguments held as a JSON string, written twice: the hidden string is decoded and read
    ('{"role": "assistant", "tool_calls": [{"function": {"name": "python", '
     + _pair("arguments", json.dumps({"code": KERNEL}), json.dumps({"code": DECOY})) + "}}]}",
     (LogEventKind.CODE, KERNEL)),
    # a snippet under a name of no vocabulary
    ('{"name": "execute", "arguments": {' + _pair("snippet", KERNEL, DECOY) + "}}", (LogEventKind.CODE, KERNEL)),
    # a prompt typed in printed output
    ('{"type": "observation", ' + _pair("text", "$ kaggle competitions download -c x\nDownloading", "ok") + "}",
     (LogEventKind.COMMAND, "kaggle competitions download -c x")),
], ids=["bash-input", "arguments-string", "snippet", "prompt-in-output"])
def test_a_hidden_text_is_read_for_what_it_says(record: str, expected: tuple) -> None:
    reading = parse_log("agent.jsonl", record + "\n")
    assert any((e.kind, e.text.strip()) == (expected[0], expected[1].strip()) for e in reading.events), reading.events


def test_a_cached_document_reports_its_hidden_members_on_every_read() -> None:
    text = '{"nodes": [], "code": "first", "code": "second"}'
    for _ in range(2):
        with collect_shadowed() as hidden:
            value, broke = load_json(text)
        assert broke is None and value["code"] == "second"
        assert hidden == [ShadowedMember("code", "first")]


def test_a_document_cut_short_keeps_the_last_value_as_a_whole_one_does() -> None:
    text = '{"nodes": [{"code": "first", "code": "second", "plan": "unfinish'
    with collect_shadowed() as hidden:
        value, broke = load_json(text)
    assert broke is not None and value["nodes"][0]["code"] == "second"
    assert ShadowedMember("code", "first") in hidden


def test_a_tool_call_printed_in_text_gives_one_call_per_value() -> None:
    calls = call_expressions('functions.execute_code({"code": "A = 1", "code": "B = 2"})')
    assert [arguments for _, _, _, arguments in calls] == [{"code": "B = 2"}, {"code": "A = 1"}]


# -- the log readers ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("hidden_first", [True, False])
def test_both_values_of_a_journal_code_member_are_read_and_the_log_is_partly_read(hidden_first: bool) -> None:
    text = '{"nodes": [{"id": "n0", "step": 0, "plan": "p", ' + _pair("code", KERNEL, DECOY, hidden_first=hidden_first) \
        + "}]}"
    reading = parse_log("logs/journal.json", text)
    assert reading.log_format == "aide"
    codes = [e for e in reading.events if e.kind is LogEventKind.CODE]
    assert {e.text for e in codes} == {KERNEL, DECOY}
    assert any("'code' written more than once" in p for p in reading.problems)


def test_a_node_list_written_twice_is_read_as_nodes_both_times() -> None:
    text = ('{"nodes": [{"id": "n0", "step": 0, "plan": "p", "code": ' + json.dumps(KERNEL) + '}], '
            '"nodes": [{"id": "n1", "step": 0, "plan": "p", "code": ' + json.dumps(DECOY) + "}]}")
    reading = parse_log("journal.json", text)
    hidden = [e for e in reading.events if e.kind is LogEventKind.CODE and e.text == KERNEL]
    assert hidden and hidden[0].location.startswith("hidden nodes") and hidden[0].language == "python"
    assert any("'nodes' written more than once" in p for p in reading.problems)


def test_the_shown_value_keeps_its_exact_span_and_the_hidden_one_its_line() -> None:
    text = '{"nodes": [\n{"id": "n0", "step": 0,\n "code": ' + json.dumps(KERNEL) + ',\n "code": "x = 2"}\n]}'
    reading = parse_log("journal.json", text)
    shown = next(e for e in reading.events if e.text == "x = 2")
    assert text[shown.span.start_byte:shown.span.end_byte] == "x = 2"
    hidden = next(e for e in reading.events if e.text == KERNEL)
    assert hidden.span.start_line == 3


def test_a_jsonl_record_with_a_command_written_twice_runs_both_commands(tmp_path: Path) -> None:
    record = ('{"role": "assistant", "type": "tool_call", "name": "bash", '
              + _pair("command", "kaggle competitions download -c spaceship-titanic", "ls -la") + "}")
    reading = parse_log("agent.jsonl", record + '\n{"role": "tool", "content": "ok"}\n')
    commands = {e.text for e in reading.events if e.kind is LogEventKind.COMMAND}
    assert "kaggle competitions download -c spaceship-titanic" in commands and "ls -la" in commands
    assert reading.problems


def test_a_journal_without_repeated_keys_reads_as_before() -> None:
    text = '{"nodes": [{"id": "n0", "step": 0, "plan": "p", "code": ' + json.dumps(KERNEL) + "}]}"
    reading = parse_log("journal.json", text)
    assert not reading.problems and not any(e.location.startswith("hidden") for e in reading.events)


def test_arguments_written_twice_inside_an_eval_archive_argument_string_are_read(tmp_path: Path) -> None:
    arguments = '{' + _pair("code", KERNEL, DECOY) + '}'
    sample = ('{"id": "s1", "epoch": 1, "messages": [{"role": "assistant", "content": "running", '
              '"tool_calls": [{"id": "c1", "function": "python", "arguments": ' + json.dumps(arguments) + "}]}]}")
    with zipfile.ZipFile(tmp_path / "task.eval", "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("header.json", json.dumps({"version": 2, "status": "success", "eval": {"task": "t"}}))
        archive.writestr("samples/s1_epoch_1.json", sample)
    units = expand_run(load_run(tmp_path))
    assert any(u.text == KERNEL for u in units.code_units)
    assert any("written more than once" in s.reason for s in units.skipped)


def test_a_message_written_twice_in_an_eval_archive_sample_is_read(tmp_path: Path) -> None:
    sample = ('{"id": "s1", "epoch": 1, "messages": [{"role": "assistant", "content": "running", '
              '"tool_calls": [{"id": "c1", "function": "python", "arguments": {'
              + _pair("code", KERNEL, DECOY) + "}}]}]}")
    with zipfile.ZipFile(tmp_path / "task.eval", "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("header.json", json.dumps({"version": 2, "status": "success", "eval": {"task": "t"}}))
        archive.writestr("samples/s1_epoch_1.json", sample)
    units = expand_run(load_run(tmp_path))
    assert any(u.text == KERNEL for u in units.code_units) and any(u.text == DECOY for u in units.code_units)
    assert any("written more than once" in s.reason for s in units.skipped)


# -- the audit ------------------------------------------------------------------------------------------------------


def _audit(tmp_path: Path, files: dict[str, str]) -> dict:
    return audit_against(tmp_path, {"lantern.py": KERNEL}, files)


NOTEBOOK = ('{"cells": [{"cell_type": "code", "metadata": {}, "outputs": [], ' + _pair("source", KERNEL, DECOY)
            + '}], "metadata": {"kernelspec": {"name": "python3", "language": "python"}}, "nbformat": 4, '
            '"nbformat_minor": 5}')
JOURNAL = '{"nodes": [{"id": "n0", "step": 0, "plan": "p", ' + _pair("code", KERNEL, DECOY) + "}]}"
JOURNAL_NODES = ('{"nodes": [{"id": "n0", "step": 0, "code": ' + json.dumps(KERNEL) + '}], '
                 '"nodes": [{"id": "n1", "step": 0, "code": ' + json.dumps(DECOY) + "}]}")


@pytest.mark.parametrize("files", [
    {"logs/journal.json": JOURNAL},
    {"logs/journal.json": JOURNAL_NODES},
    {"solution.ipynb": NOTEBOOK},
], ids=["journal-code", "journal-nodes", "notebook-source"])
def test_a_copy_behind_a_repeated_key_is_flagged_and_the_run_is_not_clean(tmp_path: Path, files: dict) -> None:
    report = _audit(tmp_path, files)
    assert report["verdict"]["kind"] != "clean"
    assert any(f["rule_id"] == "plag-kernel-containment" for f in report["findings"])
    path = next(iter(files))
    assert any(s["path"] == path and "written more than once" in s["reason"] for s in report["skipped"])


def test_hidden_values_past_the_event_limit_are_said_to_be_unread() -> None:
    from mleaudit.audit.logs import shadowed

    many = json.dumps([{"code": f"x_{i} = {i}"} for i in range(shadowed._MAX_EVENTS + 5)])
    reading = parse_log("journal.json", '{"nodes": [{"code": "y = 1"}], "steps": ' + many + ', "steps": []}')
    assert any("the most read from them" in p for p in reading.problems)



def test_run_metadata_and_sandbox_records_with_a_repeated_key_are_not_read(tmp_path: Path) -> None:
    run = tmp_path / "run"
    (run / "code").mkdir(parents=True)
    (run / "code" / "train.py").write_text("print(1)\n")
    (run / "run.json").write_text('{"run_id": "r", "events": [{"kind": "network-denied", "host": "api.openai.com", '
                                  '"port": 443, "count": 5}], "events": []}')
    units = expand_run(load_run(run))
    assert any(s.path == "run.json" and "'events' written more than once" in s.reason for s in load_run(run).skipped)
    assert units is not None


def test_a_lenient_action_input_with_a_repeated_key_hides_nothing() -> None:
    from mleaudit.audit.logs.mlagentbench.actions import parse_input

    with collect_shadowed() as hidden:
        args = parse_input('{"command": "print(1)", "command": "import os",}')
    assert args == {"command": "import os"} and hidden == [ShadowedMember("command", "print(1)")]
