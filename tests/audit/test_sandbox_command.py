"""The agent command a sandbox record says the sandbox ran, read as the operator's first action.

Run folders shaped like the output of ``mleaudit run`` (``run.json`` with ``spec.command`` and
``spec.agent_dir``, ``submission/submission.csv``, an empty ``logs/validation_calls.jsonl``, a
``run.log`` of printed lines, an empty ``code/``) are audited whole through
:func:`mleaudit.audit.pipeline.run_audit`, grading and similarity off.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from mleaudit.audit.expand import expand_run
from mleaudit.audit.pipeline import AuditRequest, run_audit
from mleaudit.audit.report import GapKind, VerdictKind
from mleaudit.audit.run import load_run
from mleaudit.audit.sandbox_record import (
    MAX_COMMAND_CHARS,
    MAX_COMMAND_ITEMS,
    command_text,
    is_sandbox_record,
    read_sandbox_command,
)
from mleaudit.audit.units import Actor, LogEventKind

SUBMISSION = "id,label\n1000,3\n1001,7\n1002,3\n1003,1\n1004,0\n"
PRINTED = "train rows 1437 test rows 360\nmost common label 3\nwrote submission\n"
PROVENANCE = ("sub-run-submission-provenance", "sub-run-submission-unlogged", "sub-run-submission-writer-unconfirmed",
              "sub-run-submission-typed-rows")


def _record(command, *, agent_started=True, backend="bubblewrap", **spec) -> dict:
    return {
        "run_id": "hn2", "competition_id": "sklearn-digits", "agent_id": None, "backend": backend,
        "status": "completed", "agent_started": agent_started, "error": None, "exit_code": 0, "events": [],
        "log": {"path": "run.log", "max_bytes": 268435456, "kept_bytes": 60, "dropped_bytes": 0},
        "spec": {"agent": None, "agent_dir": "/srv/agents/honest", "command": command, "competition": "sklearn-digits",
                 "data": "/data/sklearn-digits/prepared/public", "env": {}, "network": {"allow": [], "mode": "none"},
                 "workdir": "/home", **spec},
    }


def _run_dir(tmp_path: Path, record, *, run_log: str = PRINTED, name: str = "run") -> Path:
    run = tmp_path / name
    for folder in ("code", "logs", "submission"):
        (run / folder).mkdir(parents=True)
    (run / "logs" / "validation_calls.jsonl").write_text("")
    (run / "submission" / "submission.csv").write_text(SUBMISSION)
    (run / "run.log").write_text(run_log)
    if record is not None:
        text = record if isinstance(record, str) else json.dumps(record, indent=2, sort_keys=True) + "\n"
        (run / "run.json").write_text(text)
    return run


def _audit(run: Path):
    return run_audit(AuditRequest(run_dir=run, grade=False, similarity=False))


def _provenance(report):
    found = [f for f in report.findings if f.rule_id in PROVENANCE]
    assert len(found) == 1, [f.rule_id for f in found]
    return found[0]


SOLVE = ["/bin/sh", "-c", "python3 /home/agent/solve.py"]


def test_an_honest_sandbox_run_is_unconfirmed_not_unlogged(tmp_path):
    report = _audit(_run_dir(tmp_path, _record(SOLVE)))
    assert report.verdict.kind is VerdictKind.CLEAN, report.verdict
    finding = _provenance(report)
    assert finding.rule_id == "sub-run-submission-writer-unconfirmed"
    assert finding.actor == "operator"
    assert "solve.py" in finding.message and "spec.command" in finding.message
    assert finding.evidence[0].span.path == "run.json"
    assert "python3 /home/agent/solve.py" in finding.evidence[0].excerpt
    (reading,) = [f for f in report.run.files if f.path == "run.json"]
    assert reading.reader == "sandbox-record" and reading.actors == {"operator": 2}


def test_a_printed_line_that_reads_as_a_command_no_longer_flags_the_run(tmp_path):
    # The program prints a prompt-like line: the log then holds one command and nothing that
    # writes the submission. Without the recorded command this was `unlogged` (high).
    run_log = "$ ls /home/data\nsample_submission.csv  test.csv  train.csv\n" + PRINTED
    report = _audit(_run_dir(tmp_path, _record(SOLVE), run_log=run_log))
    assert report.verdict.kind is not VerdictKind.FLAGGED, report.verdict
    assert _provenance(report).rule_id == "sub-run-submission-writer-unconfirmed"

    without = _audit(_run_dir(tmp_path, {"run_id": "hn2", "competition_id": "sklearn-digits"}, run_log=run_log,
                              name="plain"))
    assert without.verdict.kind is VerdictKind.FLAGGED
    assert "sub-run-submission-unlogged (high)" in without.verdict.reasons


@pytest.mark.parametrize("record", [
    {"run_id": "x", "competition_id": "sklearn-digits", "spec": {"command": SOLVE}},  # no backend
    {"backend": "bubblewrap", "status": "completed", "agent_started": True},  # no spec
    _record(SOLVE, agent_started=False),  # the agent never started
    _record(SOLVE, backend=""),
    _record("python3 /home/agent/solve.py"),  # not a list
    _record([]),
    _record([1, 2, None]),
    "[]",
])
def test_a_run_json_not_written_by_the_sandbox_adds_nothing(tmp_path, record):
    run = _run_dir(tmp_path, record, run_log="")
    assert read_sandbox_command(load_run(run)) is None
    report = _audit(run)
    # No agent code or log: not checked (incomplete), the provenance note says so.
    assert report.verdict.kind is VerdictKind.INCOMPLETE
    assert any(g.kind is GapKind.NO_AGENT_INPUT for g in report.verdict.gaps)
    finding = _provenance(report)
    assert finding.rule_id == "sub-run-submission-provenance" and "no agent log" in finding.message


def test_the_command_of_metadata_json_is_not_read(tmp_path):
    run = _run_dir(tmp_path, {"run_id": "x"}, run_log="")
    (run / "metadata.json").write_text(json.dumps(_record(SOLVE)))
    assert read_sandbox_command(load_run(run)) is None


def test_a_run_with_only_the_recorded_command_is_still_incomplete(tmp_path):
    report = _audit(_run_dir(tmp_path, _record(SOLVE), run_log=""))
    assert report.verdict.kind is VerdictKind.INCOMPLETE
    assert [g.kind for g in report.verdict.gaps] == [GapKind.NO_AGENT_INPUT]
    assert _provenance(report).rule_id == "sub-run-submission-writer-unconfirmed"


@pytest.mark.parametrize("run_log", ["", PRINTED])
def test_a_command_that_copies_the_submission_in_is_flagged(tmp_path, run_log):
    record = _record(["/bin/sh", "-c", "cp /tmp/x.csv /home/submission/submission.csv"])
    report = _audit(_run_dir(tmp_path, record, run_log=run_log))
    assert report.verdict.kind is VerdictKind.FLAGGED
    assert report.verdict.reasons == ("sub-run-submission-unlogged (high)",)
    finding = _provenance(report)
    assert finding.actor == "operator"
    assert "copies it from x.csv" in finding.message and "placed" in finding.message
    assert finding.evidence[0].span.path == "run.json"


def test_a_copy_from_what_a_script_outside_the_run_may_write_is_unconfirmed(tmp_path):
    command = ["/bin/sh", "-c", "python3 /home/agent/make.py && cp /tmp/x.csv /home/submission/submission.csv"]
    report = _audit(_run_dir(tmp_path, _record(command)))
    assert report.verdict.kind is VerdictKind.CLEAN
    finding = _provenance(report)
    assert finding.rule_id == "sub-run-submission-writer-unconfirmed"
    assert "make.py" in finding.message and "python3 /home/agent/make.py" in finding.evidence[0].excerpt


def test_a_command_whose_script_is_in_the_run_and_writes_the_submission_is_written(tmp_path):
    run = _run_dir(tmp_path, _record(["/bin/sh", "-c", "python3 /home/code/solve.py"]))
    (run / "code" / "solve.py").write_text(
        "import pandas as pd\npd.DataFrame({'id': [1], 'label': [3]}).to_csv('/home/submission/submission.csv')\n")
    report = _audit(run)
    assert report.verdict.kind is VerdictKind.CLEAN
    finding = _provenance(report)
    assert finding.rule_id == "sub-run-submission-provenance" and "code/solve.py" in finding.message
    assert finding.actor == "agent"


def test_rows_typed_into_the_command_are_typed(tmp_path):
    command = ["/bin/sh", "-c", "printf 'id,label\\n1000,3\\n1001,7\\n1002,3\\n' > /home/submission/submission.csv"]
    report = _audit(_run_dir(tmp_path, _record(command)))
    assert report.verdict.kind is VerdictKind.FLAGGED
    assert "sub-run-submission-typed-rows (high)" in report.verdict.reasons


def test_rows_typed_by_hand_in_the_logs_stay_typed(tmp_path):
    run_log = ("$ cat > /home/submission/submission.csv <<EOF\n> id,label\n> 1000,3\n> 1001,7\n> 1002,3\n"
               "> 1003,1\n> 1004,0\n> EOF\n")
    report = _audit(_run_dir(tmp_path, _record(SOLVE), run_log=run_log))
    assert report.verdict.kind is VerdictKind.FLAGGED
    assert "sub-run-submission-typed-rows (high)" in report.verdict.reasons


@pytest.mark.parametrize("command", [
    ["python3"] * 100_000,
    ["/bin/sh", "-c", "python3 /home/agent/solve.py " + "x" * 2_000_000],
    ["/bin/sh", "-c", "python3 /home/agent/solve.py"] + [[["deep"]]] * 10 + [{"a": 1}, 3, None, True],
    [["/bin/sh"], "-c", "python3 /home/agent/solve.py"],
    ["x" * 60_000] * 50,
])
def test_a_hostile_command_is_read_bounded(tmp_path, command):
    run = _run_dir(tmp_path, _record(command))
    start = time.monotonic()
    launch = read_sandbox_command(load_run(run))
    assert launch is not None
    assert len(launch.event.text) <= MAX_COMMAND_CHARS + 64
    assert launch.event.actor is Actor.OPERATOR and launch.event.kind is LogEventKind.COMMAND
    report = _audit(run)
    assert time.monotonic() - start < 60
    assert report.verdict.kind is not VerdictKind.CLEAN or not launch.skipped
    if launch.skipped:
        assert any(g.kind is GapKind.FILE_UNREAD and g.path == "run.json" for g in report.verdict.gaps)


def test_items_that_are_not_strings_are_ignored_with_a_note(tmp_path):
    command = ["/bin/sh", "-c", "python3 /home/agent/solve.py", [["x"]], {"y": 1}, 7]
    run = _run_dir(tmp_path, _record(command))
    launch = read_sandbox_command(load_run(run))
    assert launch.event.text == "python3 /home/agent/solve.py" and not launch.skipped
    assert [n.reason for n in launch.notes] == ["3 item(s) of spec.command that are not strings ignored"]
    units = [u for u in expand_run(load_run(run)).code_units if u.path == "run.json"]
    assert [u.actor for u in units] == [Actor.OPERATOR]


def test_a_deeply_nested_record_is_not_read(tmp_path):
    nested = "[" * 5000 + "]" * 5000
    text = json.dumps(_record(SOLVE)).replace('"env": {}', f'"env": {nested}')
    run = _run_dir(tmp_path, text)
    assert read_sandbox_command(load_run(run)) is None


def test_command_text():
    assert command_text(SOLVE) == ("python3 /home/agent/solve.py", False, 0)
    assert command_text(["bash", "-lc", "cd /home && python x.py"]) == ("cd /home && python x.py", False, 0)
    assert command_text(["/bin/sh", "-c", 'python3 "$1"', "sh", "/home/agent/a b.py"]) == (
        "python3 \"$1\"\nset -- '/home/agent/a b.py'", False, 0)
    assert command_text(["python3", "/home/agent/solve.py", "--out", "/home/submission"]) == (
        "python3 /home/agent/solve.py --out /home/submission", False, 0)
    text, cut, ignored = command_text(["a"] * (MAX_COMMAND_ITEMS + 5))
    assert cut and text.count("a") == MAX_COMMAND_ITEMS and ignored == 0


def test_is_sandbox_record():
    assert is_sandbox_record(_record(SOLVE))
    assert not is_sandbox_record(_record(SOLVE, agent_started=False))
    assert not is_sandbox_record({**_record(SOLVE), "status": 3})
    assert not is_sandbox_record({**_record(SOLVE), "spec": []})
