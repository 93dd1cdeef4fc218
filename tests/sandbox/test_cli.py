"""``mleaudit run`` and ``mleaudit sandbox``: end to end on an embedded competition, and bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from mleaudit.audit.cli import main

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "sandbox"


@pytest.fixture(scope="session")
def digits_data(tmp_path_factory):
    from mleaudit.sandbox.competition import setup_competition

    data = tmp_path_factory.mktemp("sandbox-data")
    setup_competition("sklearn-digits", data_dir=data)
    return data


def _invoke(args, **kwargs):
    return CliRunner().invoke(main, args, catch_exceptions=False, **kwargs)


def test_run_writes_a_run_dir_and_audits_it(tmp_path, digits_data, bwrap):
    agent = tmp_path / "agent"
    agent.mkdir()
    (agent / "solve.sh").write_text(
        "cp /home/data/sample_submission.csv /home/submission/submission.csv\n"
        "/home/validate_submission.sh\n"
        "cp /home/agent/solve.sh /home/code/\n"
    )
    run_dir = tmp_path / "runs" / "r1"
    result = _invoke(["run", "-c", "sklearn-digits", "--agent", "sh /home/agent/solve.sh", "--agent-dir", str(agent),
                      "--run-dir", str(run_dir), "--time-limit", "60", "--pids", "64", "--audit",
                      "--data-dir", str(digits_data)])
    assert result.exit_code == 0, result.output
    assert "status:      completed (exit code 0" in result.output
    assert "validation:  1 call(s) (1 valid, 0 invalid, 0 refused)" in result.output
    assert "Verdict:" in result.output
    record = json.loads((run_dir / "run.json").read_text())
    assert record["competition_id"] == "sklearn-digits" and record["limits"]["pids"] == 64
    private = digits_data / "sklearn-digits" / "prepared" / "private"
    assert str(private) in record["spec"]["hide"]
    assert len((run_dir / "logs" / "validation_calls.jsonl").read_text().splitlines()) == 1
    assert (run_dir / "code" / "solve.sh").is_file()


def test_run_refuses_an_unknown_competition(tmp_path, digits_data):
    result = _invoke(["run", "-c", "no-such-comp", "--agent", "true", "--run-dir", str(tmp_path / "r"),
                      "--data-dir", str(digits_data)])
    assert result.exit_code == 2 and "no-such-comp" in result.output


def test_run_refuses_a_non_empty_run_dir(tmp_path, digits_data, bwrap):
    (tmp_path / "r").mkdir()
    (tmp_path / "r" / "x").write_text("")
    result = _invoke(["run", "-c", "sklearn-digits", "--agent", "true", "--run-dir", str(tmp_path / "r"),
                      "--data-dir", str(digits_data)])
    assert result.exit_code == 2 and "not empty" in result.output


def test_run_with_a_missing_image_records_the_error(tmp_path, digits_data):
    run_dir = tmp_path / "r"
    result = _invoke(["run", "-c", "sklearn-digits", "--agent", "true", "--run-dir", str(run_dir), "--backend", "docker",
                      "--image", "mleaudit/no-such-image:never", "--data-dir", str(digits_data)])
    assert result.exit_code == 2
    assert "not present locally" in result.output or "cannot reach the docker daemon" in result.output
    assert "recorded in" in result.output
    assert json.loads((run_dir / "run.json").read_text())["status"] == "sandbox_failed"


@pytest.mark.parametrize(
    ("args", "message"),
    [(["--gpus", "zero"], "--gpus"), (["--time-limit", "soon"], "--time-limit"), (["--memory", "lots"], "--memory"),
     (["--env", "NOEQUALS"], "NAME=VALUE"), (["--backend", "docker", "--unsafe-no-sandbox"], "only applies")],
)
def test_run_option_errors(tmp_path, digits_data, args, message):
    result = _invoke(["run", "-c", "sklearn-digits", "--agent", "true", "--run-dir", str(tmp_path / "r"),
                      "--data-dir", str(digits_data), *args])
    assert result.exit_code == 2 and message in result.output
    assert not (tmp_path / "r").exists()


def test_sandbox_run_reports_every_spec_problem(tmp_path):
    result = _invoke(["sandbox", "run", str(FIXTURES / "bad-spec.yaml"), "--run-dir", str(tmp_path / "r")])
    assert result.exit_code == 2
    assert "imagee" in result.output and "privileged" in result.output and "resources.memory" in result.output


def test_sandbox_run_from_a_spec_file(tmp_path, bwrap):
    spec = tmp_path / "spec.yaml"
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "train.csv").write_text("a\n1\n")
    spec.write_text("command: cat /home/data/train.csv\ndata: data\ntime_limit: 30s\nresources: {pids: 32}\n")
    result = _invoke(["sandbox", "run", str(spec), "--run-dir", str(tmp_path / "r")])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "r" / "run.log").read_text() == "a\n1\n"


def test_sandbox_check_reports_each_backend():
    result = CliRunner().invoke(main, ["sandbox", "check", "--json"])
    assert result.exit_code in (0, 2)
    items = {item["name"]: item for item in json.loads(result.output)}
    assert set(items) == {"bubblewrap", "docker daemon", "docker image", "host GPUs", "docker GPUs"}
    assert all(set(item) == {"name", "ok", "detail"} for item in items.values())


def test_run_audit_is_the_hook_the_audit_command_line_installs(monkeypatch, tmp_path):
    """The sandbox never imports the audit: ``--audit`` calls what ``mleaudit.audit.cli`` installed."""
    import mleaudit.audit.cli  # noqa: F401 - installs the hook, as the console script does
    from mleaudit.sandbox import cli as sandbox_cli

    assert sandbox_cli.audit_after_run is not None
    calls = []
    monkeypatch.setattr(sandbox_cli, "audit_after_run", lambda *args: calls.append(args) or 7)
    assert sandbox_cli._audit(tmp_path, "c", None, None) == 7 and calls == [(tmp_path, "c", None, None)]
    monkeypatch.setattr(sandbox_cli, "audit_after_run", None)
    with pytest.raises(sandbox_cli.SandboxCliError, match="--audit needs the audit's command line"):
        sandbox_cli._audit(tmp_path, "c", None, None)
