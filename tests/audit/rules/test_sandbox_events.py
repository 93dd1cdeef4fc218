"""The sandbox-events check: host-recorded events of run.json as matches with evidence in run.json."""

from __future__ import annotations

from pathlib import Path

import pytest

from audit.checks import RunContext
from audit.checks.sandbox_events import sandbox_events

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "checks"


def _ctx(name: str) -> RunContext:
    return RunContext(root=FIXTURES / name)


def test_events_of_the_given_kinds_point_at_their_run_json_line():
    (match,) = sandbox_events(_ctx("sandbox-escapes"), kinds=["spoofed-validation-log"])
    assert match.values["kind"] == "spoofed-validation-log" and match.values["count"] == 1
    (evidence,) = match.evidence
    assert evidence.span.path == "run.json" and evidence.span.start_line == 9
    assert "spoofed-validation-log" in evidence.excerpt


def test_patterns_split_links_to_the_answers_from_other_refused_outputs():
    to_answers = sandbox_events(_ctx("sandbox-escapes"), kinds=["refused-output"], detail_pattern="private|answers")
    others = sandbox_events(_ctx("sandbox-escapes"), kinds=["refused-output"], exclude_pattern="private|answers")
    assert [m.values["path"] for m in to_answers] == ["submission/submission.csv"]
    assert [m.values["path"] for m in others] == ["code/pipe"]
    assert others[0].evidence[0].span.start_line == 8  # the second refused-output line, not the first


@pytest.mark.parametrize("name", ["sandbox-clean", "sandbox-no-run-json", "sandbox-broken-run-json"])
def test_runs_without_such_events_give_nothing(name):
    assert sandbox_events(_ctx(name), kinds=["refused-output", "spoofed-validation-log", "network-denied"]) == []


def test_a_rule_without_kinds_is_an_error():
    with pytest.raises(ValueError, match="at least one event kind"):
        sandbox_events(_ctx("sandbox-escapes"), kinds=[])
