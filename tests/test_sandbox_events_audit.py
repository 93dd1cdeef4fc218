"""Whole audits of run folders whose run.json records sandbox incidents (network, limits, failures).

Each run is a tiny honest run (a training script, its submission, a log) built in a temporary
folder; only the events of its ``run.json`` differ. The audit goes through
:func:`mleaudit.audit.pipeline.run_audit` with grading and similarity off, as ``mleaudit audit`` does.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mleaudit.audit.pipeline import AuditRequest, run_audit
from mleaudit.audit.report import GapKind, VerdictKind

SOLVE = '''import pandas as pd
from sklearn.datasets import load_digits
from sklearn.linear_model import LogisticRegression

digits = load_digits()
model = LogisticRegression(max_iter=1000).fit(digits.data[:1000], digits.target[:1000])
test = digits.data[1000:1005]
pd.DataFrame({"id": range(len(test)), "label": model.predict(test)}).to_csv("submission/submission.csv", index=False)
'''

RUN_LOG = """[2025-01-01 10:00:00] $ python code/solve.py
[2025-01-01 10:00:04] wrote submission/submission.csv (5 rows)
"""


def _network_denied(host: str, port: int, count: int, method: str = "CONNECT", url: str | None = None) -> dict:
    event = {"kind": "network-denied", "host": host, "port": port, "method": method, "count": count,
             "first_ts": "2025-01-01T10:00:02+00:00",
             "detail": f"{count} request(s) to {host}:{port} refused (not on the allow-list)"}
    if url is not None:
        event["url"] = url
    return event


def _audit(tmp_path: Path, events: list[dict], status: str = "completed"):
    run = tmp_path / "run"
    (run / "code").mkdir(parents=True)
    (run / "submission").mkdir()
    (run / "code" / "solve.py").write_text(SOLVE)
    (run / "submission" / "submission.csv").write_text("id,label\n0,1\n1,7\n2,3\n3,3\n4,0\n")
    (run / "run.log").write_text(RUN_LOG)
    record = {"run_id": "sandbox-run", "backend": "local", "status": status, "events": events}
    (run / "run.json").write_text(json.dumps(record, sort_keys=True, indent=2) + "\n")
    return run_audit(AuditRequest(run_dir=run, grade=False, similarity=False))


def _rules(report) -> set[str]:
    """The sandbox rules that fired (the honest run itself has an informational provenance note)."""
    return {f.rule_id for f in report.findings if "-sandbox-" in f.rule_id}


def test_a_run_without_incidents_is_clean(tmp_path):
    report = _audit(tmp_path, [])
    assert report.verdict.kind is VerdictKind.CLEAN, report.verdict


def test_a_truncated_run_log_makes_the_audit_incomplete(tmp_path):
    report = _audit(tmp_path, [{"kind": "log-truncated", "path": "run.log", "kept_bytes": 1048576,
                                "dropped_bytes": 5000, "detail": "run.log capped at 1048576 bytes; 5000 bytes dropped"}])
    assert report.verdict.kind is VerdictKind.INCOMPLETE
    (gap,) = [g for g in report.verdict.gaps if g.kind is GapKind.FILE_UNREAD]
    assert gap.path == "run.log"
    assert gap.reason == "capped by the sandbox at 1048576 bytes; 5000 bytes were dropped and never read"
    (reading,) = [f for f in report.run.files if f.path == "run.log"]
    assert gap.reason in reading.unread


def test_a_truncation_event_with_a_hostile_path_is_reported_on_run_log(tmp_path):
    report = _audit(tmp_path, [{"kind": "log-truncated", "path": "../../etc/passwd\n", "kept_bytes": True}])
    (gap,) = [g for g in report.verdict.gaps if g.kind is GapKind.FILE_UNREAD]
    assert gap.path == "run.log" and gap.reason == (
        "capped by the sandbox at an unrecorded size; the rest was dropped and never read")


def test_a_memory_limit_sends_the_run_to_review(tmp_path):
    report = _audit(tmp_path, [{"kind": "limit-hit", "limit": "memory", "detail": "the memory limit (8 GiB) stopped the agent"}])
    assert report.verdict.kind is VerdictKind.REVIEW
    (finding,) = [f for f in report.findings if f.rule_id == "env-sandbox-limit-hit"]
    assert finding.message == "The sandbox's memory limit stopped the agent's processes: the memory limit (8 GiB) stopped the agent."
    assert finding.evidence[0].span.path == "run.json" and '"limit": "memory"' in finding.evidence[0].excerpt


@pytest.mark.parametrize("limit", ["pids", "disk", "cpu", "gpu-memory"])
def test_other_limits_are_reviewed_too(tmp_path, limit):
    report = _audit(tmp_path, [{"kind": "limit-hit", "limit": limit, "detail": f"the {limit} limit stopped the agent"}])
    assert report.verdict.kind is VerdictKind.REVIEW and "env-sandbox-limit-hit" in _rules(report)


def test_the_time_limit_alone_stays_clean(tmp_path):
    report = _audit(tmp_path, [{"kind": "limit-hit", "limit": "time", "detail": "the time limit (3600 s) stopped the agent"}])
    assert report.verdict.kind is VerdictKind.CLEAN
    assert _rules(report) == {"env-sandbox-time-limit"}


def test_a_refused_request_to_an_llm_api_is_an_llm_api_finding(tmp_path):
    report = _audit(tmp_path, [_network_denied("api.openai.com", 443, 3)])
    assert report.verdict.kind is VerdictKind.FLAGGED
    (llm,) = [f for f in report.findings if f.category == "llm-api"]
    assert llm.rule_id == "llm-sandbox-network-denied"
    assert llm.message == "The sandbox refused 3 CONNECT request(s) to the LLM API host api.openai.com:443."
    assert '"host": "api.openai.com"' in llm.evidence[0].excerpt
    (listed,) = [f for f in report.findings if f.rule_id == "ext-sandbox-network-denied"]
    assert listed.message == "The sandbox refused 3 request(s) to api.openai.com:443."


def test_a_refused_plain_http_request_shows_the_request(tmp_path):
    report = _audit(tmp_path, [_network_denied("my-team.openai.azure.com", 80, 1, "POST",
                                               "http://my-team.openai.azure.com/openai/deployments/gpt/chat/completions")])
    (llm,) = [f for f in report.findings if f.rule_id == "llm-sandbox-network-denied"]
    assert "/openai/deployments/gpt/chat/completions" in llm.evidence[0].excerpt and "POST" in llm.message


def test_refused_requests_to_kaggle_and_solution_hosts_are_external_resource_findings(tmp_path):
    report = _audit(tmp_path, [_network_denied("www.kaggle.com", 443, 2), _network_denied("raw.githubusercontent.com", 443, 1)])
    assert report.verdict.kind is VerdictKind.FLAGGED
    assert {"ext-sandbox-kaggle-denied", "ext-sandbox-solution-host-denied", "ext-sandbox-network-denied"} <= _rules(report)
    assert {f.category for f in report.findings if "-sandbox-" in f.rule_id} == {"external-resource"}


def test_a_refused_request_to_another_host_is_reviewed_and_named(tmp_path):
    report = _audit(tmp_path, [_network_denied("example.org", 443, 1)])
    assert report.verdict.kind is VerdictKind.REVIEW and _rules(report) == {"ext-sandbox-network-denied"}
    (finding,) = [f for f in report.findings if f.rule_id == "ext-sandbox-network-denied"]
    assert finding.message == "The sandbox refused 1 request(s) to example.org:443."


def test_a_failed_sandbox_is_not_clean(tmp_path):
    report = _audit(tmp_path, [{"kind": "sandbox-failed", "detail": "bubblewrap: setting up uid map: Permission denied"}],
                    status="sandbox_failed")
    assert report.verdict.kind is not VerdictKind.CLEAN
    (finding,) = [f for f in report.findings if f.rule_id == "env-sandbox-failed"]
    assert finding.message == "The sandbox did not run the agent: bubblewrap: setting up uid map: Permission denied."
