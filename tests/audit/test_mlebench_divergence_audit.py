"""``mleaudit audit``: a submission MLE-bench's grader would grade differently is a finding, never CLEAN.

The run is a tiny nomad2018-predict-transparent-conductors run (an invented four-row answer key in a
data dir of the test's own): its code trains a model and writes the submission, its log runs the code.
nomad2018's MLE-bench grader pairs rows by position, so the same predictions written in another row
order are graded differently there.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from mleaudit.audit.cli import main
from mleaudit.audit.model import Severity
from mleaudit.audit.pipeline import AuditRequest, run_audit
from mleaudit.grading.spec import load_competition_spec

REPO = Path(__file__).resolve().parents[2]
NOMAD = "nomad2018-predict-transparent-conductors"
HEADER = "id,formation_energy_ev_natom,bandgap_energy_ev\n"
ANSWERS = HEADER + "1,0.1,1.0\n2,0.2,2.0\n3,0.3,3.0\n4,0.4,4.0\n"
IN_ORDER = HEADER + "1,0.11,1.1\n2,0.19,2.2\n3,0.31,2.9\n4,0.42,4.1\n"
SHUFFLED = HEADER + "3,0.31,2.9\n1,0.11,1.1\n4,0.42,4.1\n2,0.19,2.2\n"

TRAIN = '''"""Fit a ridge regression per target on the lattice features and write the submission."""
import pandas as pd
from sklearn.linear_model import Ridge

train = pd.read_csv("/home/data/train.csv")
test = pd.read_csv("/home/data/test.csv")
features = [c for c in train.columns if c not in ("id", "formation_energy_ev_natom", "bandgap_energy_ev")]
out = pd.DataFrame({"id": test["id"]})
for target in ("formation_energy_ev_natom", "bandgap_energy_ev"):
    out[target] = Ridge(alpha=1.0).fit(train[features], train[target]).predict(test[features]).clip(0)
out.to_csv("/home/submission/submission.csv", index=False)
print("wrote", len(out), "rows")
'''
LOG = """[agent] Task: nomad2018-predict-transparent-conductors. I will fit a ridge regression per target.
$ python /home/code/train.py
wrote 4 rows
[agent] Done.
"""


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    spec = load_competition_spec(REPO / "competitions" / NOMAD)
    data = tmp_path / "data"
    answers = spec.answers_path(data)
    answers.parent.mkdir(parents=True)
    answers.write_text(ANSWERS, encoding="utf-8")
    sample = spec.sample_submission_path(data)
    sample.parent.mkdir(parents=True)
    sample.write_text(HEADER + "".join(f"{i},0.1879,1.8\n" for i in range(1, 5)), encoding="utf-8")
    return data


def make_run(root: Path, submission: str) -> Path:
    run = root / "run"
    (run / "code").mkdir(parents=True)
    (run / "logs").mkdir()
    (run / "submission").mkdir()
    (run / "code" / "train.py").write_text(TRAIN, encoding="utf-8")
    (run / "logs" / "agent.log").write_text(LOG, encoding="utf-8")
    (run / "submission" / "submission.csv").write_text(submission, encoding="utf-8")
    (run / "run.json").write_text(json.dumps({"run_id": "nomad-run", "competition_id": NOMAD}), encoding="utf-8")
    return run


def _divergence_findings(report):
    return [f for f in report.findings if f.rule_id == "grade-mlebench-divergence"]


def test_rows_out_of_the_answers_order_are_a_finding_and_not_clean(tmp_path, data_dir):
    run = make_run(tmp_path, SHUFFLED)
    report = run_audit(AuditRequest(run_dir=run, data_dir=data_dir, similarity=False))
    grade = report.grade
    assert grade["valid_submission"] and grade["score"] is not None and grade["gold_medal"]
    records = grade["mlebench_divergence"]
    assert [r["kind"] for r in records] == ["positional_rows"]
    assert records[0]["mlebench_valid"] is True and records[0]["mlebench_medal"] == "none"
    findings = _divergence_findings(report)
    assert len(findings) == 1
    finding = findings[0]
    assert finding.severity is Severity.MEDIUM
    assert "positional_rows" in finding.message and "row 1 has id '3'" in finding.message
    assert f"MLE-bench: valid, score {records[0]['mlebench_score']}, no medal" in finding.message
    assert "checked grade: valid, score" in finding.message
    evidence = finding.evidence[0]
    assert evidence.span.path == "submission/submission.csv" and evidence.span.start_line == 2
    assert evidence.excerpt == "3,0.31,2.9"
    assert report.verdict.kind.value != "clean"
    as_json = report.to_dict()
    assert as_json["grade"]["mlebench_divergence"][0]["kind"] == "positional_rows"


def test_a_file_in_the_answers_order_does_not_fire(tmp_path, data_dir):
    run = make_run(tmp_path, IN_ORDER)
    report = run_audit(AuditRequest(run_dir=run, data_dir=data_dir, similarity=False))
    assert report.grade["valid_submission"] and report.grade["mlebench_divergence"] == []
    assert _divergence_findings(report) == []
    assert report.verdict.kind.value == "clean", report.verdict


def test_the_cli_reports_the_finding(tmp_path, data_dir):
    run = make_run(tmp_path, SHUFFLED)
    result = CliRunner().invoke(main, ["audit", str(run), "--data-dir", str(data_dir), "--no-similarity",
                                       "--format", "json", "--fail-on", "medium"])
    assert result.exit_code == 1, result.output
    report = json.loads(result.output)
    assert any(f["rule_id"] == "grade-mlebench-divergence" for f in report["findings"])
    assert report["verdict"]["kind"] != "clean"
