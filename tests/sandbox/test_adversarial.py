"""Escape attempts against the bubblewrap backend: every one fails and run.json records the run.

The scripts live in tests/fixtures/sandbox/escapes/. Every run also checks (``run_escape``) that
nothing printed ``ESCAPED``, no file of the run dir holds the answers' token, the public data is
unchanged and the host's loopback listener saw no connection.
"""

from __future__ import annotations

import os

import pytest

from mleaudit.sandbox.spec import Resources

from tests.sandbox.escapes import SCRIPTS, HostListener, heartbeat_stopped, run_escape


@pytest.fixture
def listener():
    host = HostListener()
    yield host
    host.close()


@pytest.fixture
def escape(run_agent, toy, listener, bwrap):
    def run(name, **fields):
        return run_escape(name, run_agent, toy, listener, bwrap, **fields)

    return run


def test_there_are_at_least_twelve_escape_scripts():
    assert len(SCRIPTS) >= 12


@pytest.mark.parametrize("name", ["answers_by_path.py", "answers_by_glob.py", "answers_via_proc.py"])
def test_the_answers_cannot_be_read(escape, name):
    result, log, record = escape(name)
    assert "BLOCKED" in log and record["exit_code"] == 0
    assert result.submission is None or "ANSWER-" not in result.submission.read_text()


def test_no_container_runtime_socket(escape):
    _, log, _ = escape("docker_socket.py")
    assert log.count("BLOCKED") == 4


@pytest.mark.parametrize("name", ["network_host_loopback.py", "network_dns.py", "network_outside.py"])
def test_no_network(escape, name):
    _, log, record = escape(name)
    assert "BLOCKED" in log and record["network"]["mode"] == "none"


def test_nothing_outside_the_output_folders_is_writable(escape, toy):
    _, log, record = escape("write_outside.sh")
    assert log.count("BLOCKED") == 9
    assert record["isolation"]["read_only_root"] is True


def test_a_fork_bomb_hits_the_process_limit(escape):
    result, log, record = escape("fork_bomb.py", resources=Resources(pids=40))
    assert "BLOCKED: fork failed after" in log
    children = int(log.split("fork failed after ")[1].split()[0])
    assert children < 40
    assert record["limits"]["pids"] == 40 and record["isolation"]["limits"]["pids"] == 40
    if record["isolation"]["enforcement"]["pids"].startswith("cgroup"):
        assert "pids" in record["limits_hit"]
    else:
        assert record["isolation"]["rlimits"]["processes"] >= 40


def test_memory_past_the_limit_fails(escape):
    # A per-process rlimit makes the allocation fail; a cgroup lets it happen and OOM-kills at first touch.
    _, log, record = escape("memory_hog.py", resources=Resources(memory_bytes=256 * 1024**2))
    assert record["limits"]["memory"] == 256 * 1024**2
    if record["isolation"]["enforcement"]["memory"].startswith("cgroup"):
        assert "memory" in record["limits_hit"] and record["exit_signal"] == 9
        assert any(e["kind"] == "limit-hit" and "OOM kill" in e["detail"] for e in record["events"])
    else:
        assert "BLOCKED: MemoryError" in log


def test_a_detached_process_does_not_outlive_the_time_limit(escape):
    result, log, record = escape("outlive_time_limit.sh", time_limit_s=1.5)
    assert record["status"] == "timed_out" and record["limits_hit"] == ["time"]
    assert "started heartbeat" in log
    assert heartbeat_stopped(result)


def test_a_daemon_left_behind_dies_with_the_run(escape):
    result, log, record = escape("leave_daemon.sh")
    assert record["status"] == "completed" and record["exit_code"] == 0
    assert (result.run_dir / "code" / "heartbeat").exists()
    assert heartbeat_stopped(result)


def test_the_supervisor_cannot_be_killed(escape):
    _, log, record = escape("kill_supervisor.sh")
    assert log.count("BLOCKED: kill") == 2 and "ESCAPED" not in log
    # `kill -9 -1` also reaches the sandbox's own init (it runs as the agent), which ends the run
    # (137); the script's last line is printed only when it wins that race (0).
    assert record["exit_code"] in (0, 137), (log, record)
    assert record["exit_code"] == 137 or "only the sandbox's own processes were reachable" in log, (log, record)
    os.kill(os.getpid(), 0)  # still alive


def test_a_spoofed_validation_log_is_replaced_and_reported(escape):
    result, _, record = escape("spoof_validation_log.sh")
    assert record["validation_calls"]["count"] == 2
    assert len((result.run_dir / "logs" / "validation_calls.jsonl").read_text().splitlines()) == 2
    assert [e["kind"] for e in record["events"]] == ["spoofed-validation-log"]


def test_links_to_the_answers_are_removed_before_anyone_reads_them(escape):
    result, _, record = escape("symlink_submission.sh")
    refused = sorted(e["path"] for e in record["events"] if e["kind"] == "refused-output")
    assert refused == ["code/private", "logs/pipe", "submission/submission.csv"]
    assert result.submission is None


def test_privileges_cannot_be_raised(escape):
    _, log, record = escape("privilege_escalation.py")
    assert "BLOCKED: setuid(0)" in log
    assert record["isolation"]["user"].split(":")[0] != "0"


def test_the_audit_flags_an_attempt_to_read_the_answers(escape):
    from mleaudit.audit.pipeline import AuditRequest, run_audit
    from mleaudit.audit.report import VerdictKind

    result, _, _ = escape("answers_by_path.py", competition_id=None)
    report = run_audit(AuditRequest(run_dir=result.run_dir, similarity=False, grade=False))
    assert report.verdict.kind is VerdictKind.FLAGGED
    assert "leak-read-private-data" in {f.rule_id for f in report.findings}
