"""Review decisions: the baseline file, its errors, and `audit --baseline` honouring it across shifted lines."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from mleaudit.audit.cli import main
from mleaudit.audit.model import Confidence, Evidence, Finding, Severity, Span
from mleaudit.audit.report import decide_verdict
from mleaudit.audit.review import Baseline, BaselineError, apply_baseline, load_baseline, new_decision, resolve_fingerprint, save_baseline

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "runs"
FP = "a" * 64


def _finding(fingerprint=FP, severity=Severity.HIGH):
    span = Span(path="code/x.py", start_line=3, end_line=3, start_col=0, end_col=5, start_byte=10, end_byte=15)
    return Finding(rule_id="r", title="t", category="llm-api", severity=severity, confidence=Confidence.HIGH,
                   message="m", evidence=(Evidence(span=span, excerpt="x"),), fingerprint=fingerprint)


def test_dismissed_findings_stay_but_do_not_count():
    baseline = Baseline().with_decision(new_decision(FP, "dismissed", "comment only", decided_by="rev"))
    marked = apply_baseline([_finding(), _finding("b" * 64)], baseline, run_id="run-1")
    assert marked[0].review["decision"] == "dismissed" and marked[0].review["scope"] == "all runs"
    assert marked[1].review is None
    assert decide_verdict(marked[:1]).kind.value == "clean"
    assert decide_verdict(marked).kind.value == "flagged"
    assert marked[0].to_dict()["review"]["note"] == "comment only"
    assert "review" not in marked[1].to_dict()


def test_run_scoped_decision_wins_and_stays_in_its_run():
    baseline = (Baseline()
                .with_decision(new_decision(FP, "confirmed", "global", decided_by="a"))
                .with_decision(new_decision(FP, "dismissed", "only run-2", run_id="run-2", decided_by="a")))
    assert baseline.lookup(FP, "run-2").decision == "dismissed"
    assert baseline.lookup(FP, "run-1").decision == "confirmed"
    again = baseline.with_decision(new_decision(FP, "confirmed", "changed my mind", run_id="run-2", decided_by="a"))
    assert len(again.decisions) == 2 and again.lookup(FP, "run-2").note == "changed my mind"


def test_baseline_round_trip_is_sorted_and_diffable(tmp_path):
    path = tmp_path / "baseline.json"
    baseline = Baseline()
    for fingerprint in ("c" * 64, "a" * 64, "b" * 64):
        baseline = baseline.with_decision(new_decision(fingerprint, "dismissed", "n", decided_by="rev"))
    save_baseline(baseline, path)
    text = path.read_text()
    assert text.endswith("\n") and text.index('"aaaa') < text.index('"bbbb') < text.index('"cccc')
    assert load_baseline(path) == baseline


@pytest.mark.parametrize("content,message", [
    ("{", "not valid JSON"),
    ('{"version": 2, "decisions": []}', "expected"),
    ('{"version": 1, "decisions": [{"fingerprint": "xyz", "decision": "dismissed", "note": ""}]}', "decisions[0]: field 'fingerprint'"),
    ('{"version": 1, "decisions": [{"fingerprint": "' + FP + '", "decision": "maybe", "note": ""}]}', "field 'decision'"),
    ('{"version": 1, "decisions": [{"fingerprint": "' + FP + '", "decision": "dismissed", "note": "", "extra": 1}]}', "unknown field"),
])
def test_bad_baseline_files_are_named(tmp_path, content, message):
    path = tmp_path / "b.json"
    path.write_text(content)
    with pytest.raises(BaselineError, match=message.replace("[", r"\[").replace("]", r"\]")):
        load_baseline(path)


def test_decisions_need_a_note_and_a_full_fingerprint():
    with pytest.raises(BaselineError, match="note"):
        new_decision(FP, "dismissed", "  ")
    with pytest.raises(BaselineError, match="64 hex digits"):
        new_decision("abc123", "dismissed", "why")


def test_fingerprint_prefixes_must_be_unambiguous():
    findings = [{"fingerprint": "abcdef01" + "0" * 56, "rule_id": "r1"}, {"fingerprint": "abcdef02" + "0" * 56, "rule_id": "r2"}]
    assert resolve_fingerprint("abcdef01", findings)["rule_id"] == "r1"
    with pytest.raises(BaselineError, match="several findings"):
        resolve_fingerprint("abcdef", findings)
    with pytest.raises(BaselineError, match="at least 6"):
        resolve_fingerprint("abc", findings)


def test_decision_survives_shifted_lines_end_to_end(tmp_path):
    run = tmp_path / "llm-run"
    shutil.copytree(EXAMPLES / "llm-digits", run)
    data = tmp_path / "data"
    baseline = tmp_path / "decisions.json"
    runner = CliRunner()
    report = tmp_path / "r.json"
    first = runner.invoke(main, ["audit", str(run), "--no-similarity", "--data-dir", str(data), "-o", str(report)])
    assert first.exit_code == 1, first.output
    findings = json.loads(report.read_text())["findings"]
    finding = next(f for f in findings if f["rule_id"] == "llm-external-api-call")
    for high in (f for f in findings if f["severity"] in ("high", "critical")):
        decided = runner.invoke(main, ["review", "decide", high["fingerprint"][:10], "--dismiss", "--note", "sandbox mock",
                                       "--from", str(report), "--baseline", str(baseline), "--by", "reviewer"])
        assert decided.exit_code == 0, decided.output
    # shift every line of the flagged file down by three
    code = run / "code" / "refine_with_llm.py"
    code.write_text("# notes\n# more notes\n\n" + code.read_text())
    second = runner.invoke(main, ["audit", str(run), "--no-similarity", "--data-dir", str(data), "--baseline", str(baseline),
                                  "--format", "json"])
    assert second.exit_code == 0, second.output  # every high finding is dismissed
    again = json.loads(second.output[second.output.index("{"):])
    moved = next(f for f in again["findings"] if f["rule_id"] == "llm-external-api-call")
    assert moved["fingerprint"] == finding["fingerprint"]
    assert moved["evidence"][0]["start_line"] == finding["evidence"][0]["start_line"] + 3
    assert moved["review"]["decision"] == "dismissed" and moved["review"]["note"] == "sandbox mock"
    shown = runner.invoke(main, ["review", str(report), "--baseline", str(baseline), "--format", "json"])
    assert shown.exit_code == 0, shown.output
    statuses = {row["rule_id"]: row["status"] for row in json.loads(shown.output)["findings"]}
    assert statuses["llm-external-api-call"] == "dismissed"


def test_review_commands_reject_bad_input(tmp_path):
    runner = CliRunner()
    missing = runner.invoke(main, ["review", str(tmp_path / "nothing.json")])
    assert missing.exit_code == 2 and "no such run folder or report file" in missing.output
    no_decision = runner.invoke(main, ["review", "decide", FP, "--note", "x", "--baseline", str(tmp_path / "b.json")])
    assert no_decision.exit_code == 2 and "--confirm or --dismiss" in no_decision.output
    both = runner.invoke(main, ["review", "decide", FP, "--confirm", "--dismiss", "--note", "x",
                                "--baseline", str(tmp_path / "b.json")])
    assert both.exit_code == 2 and "contradict" in both.output and not (tmp_path / "b.json").exists()
    broken = tmp_path / "broken.json"
    broken.write_text("[1, 2")
    bad = runner.invoke(main, ["audit", str(EXAMPLES / "honest-digits"), "--no-similarity", "--no-grade", "--baseline", str(broken)])
    assert bad.exit_code == 2 and "not valid JSON" in bad.output


def test_hostile_baseline_and_report_files_are_named_errors(tmp_path):
    deep = "[" * 1000 + "]" * 1000
    baseline = tmp_path / "b.json"
    baseline.write_text('{"version": 1, "decisions": ' + deep + "}")
    with pytest.raises(BaselineError, match=r"b\.json: not valid JSON \(nested"):
        load_baseline(baseline)
    report = tmp_path / "r.json"
    report.write_text('{"findings": ' + deep + "}")
    result = CliRunner().invoke(main, ["review", str(report), "--baseline", str(tmp_path / "none.json")])
    assert result.exit_code == 2 and "r.json: not valid JSON" in result.output and "Traceback" not in result.output
    result = CliRunner().invoke(main, ["review", "decide", FP, "--dismiss", "--note", "n", "--baseline", str(baseline)])
    assert result.exit_code == 2 and "nested" in result.output


def test_recording_a_decision_keeps_the_file_mode_and_leaves_no_temporary_file(tmp_path):
    from mleaudit.audit.review import record_decision

    baseline = tmp_path / "b.json"
    record_decision(baseline, new_decision(FP, "dismissed", "first", decided_by="a"))
    baseline.chmod(0o640)
    record_decision(baseline, new_decision("b" * 64, "confirmed", "second", decided_by="a"))
    assert baseline.stat().st_mode & 0o777 == 0o640
    assert [d.note for d in load_baseline(baseline).decisions] == ["first", "second"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b.json", "b.json.lock"]
