"""The sandbox-events check: host-recorded events of run.json as matches with evidence in run.json."""

from __future__ import annotations

from pathlib import Path

import pytest

from mleaudit.audit.rules.context import RunContext
from mleaudit.audit.checks.sandbox_events import sandbox_events

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "checks"


def _ctx(name: str) -> RunContext:
    return RunContext(root=FIXTURES / name)


def test_events_of_the_given_kinds_point_at_their_run_json_line():
    (match,) = sandbox_events(_ctx("sandbox-escapes"), kinds=["spoofed-validation-log"])
    assert match.values["kind"] == "spoofed-validation-log" and match.values["events"] == 1
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


def test_event_fields_are_values_and_the_evidence_is_the_whole_event_object():
    matches = sandbox_events(_ctx("sandbox-incidents"), kinds=["network-denied"])
    assert [m.values["target"] for m in matches] == [
        "api.openai.com:443", "api.anthropic.com:80", "my-team.openai.azure.com:443", "www.kaggle.com:443",
        "raw.githubusercontent.com:443", "huggingface.co:80"]
    first = matches[0].values
    assert (first["host"], first["port"], first["method"], first["count"], first["events"]) == ("api.openai.com", 443, "CONNECT", 3, 6)
    assert "url" not in first and "limit" not in first  # absent fields have no value (a message shows ?)
    assert matches[1].values["url"] == "http://api.anthropic.com/v1/messages"
    (evidence,) = matches[1].evidence
    assert evidence.excerpt.lstrip().startswith("{") and evidence.excerpt.rstrip().endswith("},")
    assert '"url": "http://api.anthropic.com/v1/messages"' in evidence.excerpt and '"kind": "network-denied"' in evidence.excerpt
    assert evidence.span.end_line - evidence.span.start_line > 5


def test_where_and_where_not_filter_on_event_fields():
    ctx = _ctx("sandbox-incidents")
    kaggle = sandbox_events(ctx, kinds=["network-denied"], where={"host": r"(^|\.)kaggle\.com$"})
    assert [m.values["host"] for m in kaggle] == ["www.kaggle.com"]
    hf_data = sandbox_events(ctx, kinds=["network-denied"], where={"host": "huggingface", "url": "/datasets/"})
    assert [m.values["port"] for m in hf_data] == [80]
    not_time = sandbox_events(ctx, kinds=["limit-hit"], where_not={"limit": "^time$"})
    assert [m.values["limit"] for m in not_time] == ["memory"]
    by_number = sandbox_events(ctx, kinds=["network-denied"], where={"port": "^80$"})
    assert [m.values["host"] for m in by_number] == ["api.anthropic.com", "huggingface.co"]
    (cut,) = sandbox_events(ctx, kinds=["log-truncated"])
    assert (cut.values["path"], cut.values["kept_bytes"], cut.values["dropped_bytes"]) == ("run.log", 1048576, 52311)


def test_an_absent_field_is_matched_as_empty_text():
    (legacy,) = sandbox_events(_ctx("sandbox-escapes"), kinds=["limit-hit"], where_not={"limit": "^time$"})
    assert "limit" not in legacy.values
    assert sandbox_events(_ctx("sandbox-escapes"), kinds=["limit-hit"], where={"limit": "."}) == []


@pytest.mark.parametrize(("params", "message"), [
    ({"where": {"hostname": "x"}}, "`where` names the unknown event field 'hostname'"),
    ({"where": {"host": "("}}, r"`where.host` is not a valid regular expression"),
    ({"where_not": {"limit": ""}}, "`where_not.limit` must be a non-empty regular expression"),
    ({"where": ["host"]}, "`where` must be a non-empty mapping"),
    ({"detail_pattern": "["}, "`detail_pattern` is not a valid regular expression"),
    ({"kinds": "network-denied"}, "`kinds` must be a list of event kind names"),
])
def test_bad_params_are_errors_that_name_the_param(params, message):
    with pytest.raises(ValueError, match=message):
        sandbox_events(_ctx("sandbox-incidents"), **{"kinds": ["network-denied"], **params})


def test_values_from_a_hostile_run_json_are_printable_and_bounded(tmp_path):
    import json

    from mleaudit.audit.checks.sandbox_events import MAX_VALUE_CHARS

    events = [{"kind": "network-denied", "host": "evil\x1b[2J\u2028" + "a" * 5000, "port": True, "count": "3"}]
    (tmp_path / "run.json").write_text(json.dumps({"events": events}))
    (match,) = sandbox_events(RunContext(root=tmp_path), kinds=["network-denied"])
    assert match.values["host"].startswith("evil?[2J?") and len(match.values["host"]) == MAX_VALUE_CHARS
    assert "port" not in match.values and "count" not in match.values  # wrong types give no value
    assert match.evidence[0].span.start_line == 1


def test_events_are_located_in_the_top_level_events_array_and_past_non_object_items(tmp_path):
    text = ('{"x": {"events": [{"kind": "limit-hit"}]},\n'
            ' "events": [\n  "note",\n  [{"kind": "limit-hit"}],\n  {"kind": "limit-hit",\n   "limit": "pids"}\n ]\n}')
    (tmp_path / "run.json").write_text(text)
    (match,) = sandbox_events(RunContext(root=tmp_path), kinds=["limit-hit"])
    assert match.values["limit"] == "pids"
    assert (match.evidence[0].span.start_line, match.evidence[0].span.end_line) == (5, 6)


def test_an_events_key_written_twice_is_not_read_but_said(tmp_path):
    # A reader keeps only the last array: the first (a limit hit) would go unseen, so neither is trusted.
    (tmp_path / "run.json").write_text('{"events": [{"kind": "limit-hit", "limit": "disk"}], "events": []}')
    ctx = RunContext(root=tmp_path)
    assert sandbox_events(ctx, kinds=["limit-hit"]) == []
    assert any("'events' written more than once" in item.reason for item in ctx.skipped)
