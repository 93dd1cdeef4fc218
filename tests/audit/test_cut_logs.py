"""Logs cut short: what comes before the cut is read, the cut is said, and no writer is claimed missing.

A run killed mid-write, or a log over the size cap, ends in the middle of what the agent did.
The events up to the cut are audited; the code block the log ends inside is marked; and the
submission-provenance check does not report a submission "without a logged writer" when the
writer may be in the part that is missing.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from mleaudit.audit.checks.provenance import assess_provenance
from mleaudit.audit.rules.context import RunContext
from mleaudit.audit.expand import expand_run
from mleaudit.audit.logs import parse_log
from mleaudit.audit.logs.common import CUT_SHORT, is_cut_short
from mleaudit.audit.model import Severity
from mleaudit.audit.pipeline import AuditOptions, audit_run
from mleaudit.audit.report import GapKind
from mleaudit.audit.rules.loader import find_rules_root, load_ruleset
from mleaudit.audit.run import RunLayout, load_run
from mleaudit.audit.units import LogEventKind as K

BEFORE = """I will load the data and train a model, then write the predictions.

```python
import pandas as pd
train = pd.read_csv("/home/data/train.csv")
test = pd.read_csv("/home/data/test.csv")
model = train.groupby("x")["y"].mean()
"""
CLOSED = BEFORE + "```\n\nThe model is trained.\n"


@pytest.fixture(scope="module")
def ruleset():
    return load_ruleset([find_rules_root(None)])


def _run(root: Path, log: str) -> Path:
    (root / "logs").mkdir(parents=True)
    (root / "submission").mkdir()
    (root / "logs" / "agent.log").write_text(log, encoding="utf-8")
    (root / "submission" / "submission.csv").write_text("id,y\n1,0.5\n2,0.25\n3,0.75\n", encoding="utf-8")
    return root


def test_a_log_cut_inside_a_code_block_is_read_up_to_the_cut():
    reading = parse_log("logs/agent.log", BEFORE)
    code = [e for e in reading.events if e.kind is K.CODE]
    assert len(code) == 1 and code[0].text.endswith('model = train.groupby("x")["y"].mean()')
    assert code[0].location == CUT_SHORT and is_cut_short(code[0])
    assert reading.problems == ("the log ends inside the code block opened at line 4 (cut short): read up to its "
                                "end; what followed it is not in the log",)
    closed = parse_log("logs/agent.log", CLOSED)
    assert not [e for e in closed.events if is_cut_short(e)] and closed.problems == ()


def test_a_stray_fence_before_prose_is_no_cut():
    reading = parse_log("notes.log", "Summary of step 15:\n\n```\n\nStep 16: the script ran.\n")
    assert not [e for e in reading.events if is_cut_short(e)] and reading.problems == ()


def test_an_honest_run_cut_before_its_submission_write_is_not_flagged(tmp_path, ruleset):
    report = audit_run(load_run(_run(tmp_path / "cut", BEFORE)), ruleset=ruleset, options=AuditOptions())
    serious = [f.rule_id for f in report.findings if f.severity >= Severity.MEDIUM]
    assert serious == []
    [info] = [f for f in report.findings if f.rule_id == "sub-run-submission-provenance"]
    assert "unknown" in info.message and "cut short" in info.message
    # The cut is a gap: the audit did not see all the agent did.
    assert [(g.kind, g.path) for g in report.verdict.gaps] == [(GapKind.FILE_UNREAD, "logs/agent.log")]


def test_the_same_run_with_a_whole_log_is_flagged(tmp_path, ruleset):
    # The control: with the log whole, nothing writes the submission, and that is reported.
    report = audit_run(load_run(_run(tmp_path / "whole", CLOSED)), ruleset=ruleset, options=AuditOptions())
    assert "sub-run-submission-unlogged" in {f.rule_id for f in report.findings if f.severity >= Severity.HIGH}


def test_a_log_over_the_cap_makes_provenance_unknown(tmp_path, monkeypatch):
    monkeypatch.setattr(RunLayout, "MAX_LOG_BYTES", 400)
    root = _run(tmp_path / "big", CLOSED + "".join(f"step {i}: still working\n" for i in range(100)))
    run = load_run(root)
    [log] = [a for a in run.artifacts if a.path == "logs/agent.log"]
    assert log.truncated
    units = expand_run(run)
    ctx = RunContext(root=run.root, submission_path=run.submission.abs_path, code_units=units.code_units,
                     log_events=units.log_events)
    result = assess_provenance(ctx)
    assert result.outcome == "unverifiable"
    assert "logs/agent.log is" in result.detail and "the log cap" in result.detail
