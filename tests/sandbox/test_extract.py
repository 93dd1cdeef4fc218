"""Finalising a run dir: links and special files removed, the calls log kept authoritative, masks."""

from __future__ import annotations

import json
import os

import pytest

from audit.run import load_run
from sandbox.errors import SpecError
from sandbox.extract import RunDirStage, finalize_run_dir, sanitize_outputs
from sandbox.runner import Bind, plan_masks


def test_links_and_special_files_are_removed_and_reported(tmp_path):
    out = tmp_path / "submission"
    (out / "sub").mkdir(parents=True)
    secret = tmp_path / "answers.csv"
    secret.write_text("id,label\n1,x\n")
    (out / "submission.csv").symlink_to(secret)
    (out / "sub" / "dir-link").symlink_to(tmp_path)
    os.mkfifo(out / "pipe")
    (out / "real.csv").write_text("id,label\n")
    os.link(out / "real.csv", out / "sub" / "twin.csv")
    events = sanitize_outputs(out, "submission")
    kinds = sorted((e["kind"], e["path"]) for e in events)
    assert kinds == [
        ("hard-link-copied", "submission/real.csv"),
        ("refused-output", "submission/pipe"),
        ("refused-output", "submission/sub/dir-link"),
        ("refused-output", "submission/submission.csv"),
    ] or kinds == [
        ("hard-link-copied", "submission/sub/twin.csv"),
        ("refused-output", "submission/pipe"),
        ("refused-output", "submission/sub/dir-link"),
        ("refused-output", "submission/submission.csv"),
    ]
    assert not os.path.lexists(out / "submission.csv") and not os.path.lexists(out / "pipe")
    assert secret.read_text() == "id,label\n1,x\n"
    assert os.stat(out / "real.csv").st_nlink == 1 and os.stat(out / "sub" / "twin.csv").st_nlink == 1


def test_finalize_keeps_the_host_calls_log_and_reports_a_spoofed_one(tmp_path):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    stage = RunDirStage.create(run_dir)
    (stage.writable["logs"] / "validation_calls.jsonl").write_text('{"ts": 1, "valid": true, "message": "fake"}\n')
    (stage.writable["submission"] / "submission.csv").write_text("id,label\n")
    stage.calls_log.write_text('{"ts": "2024-01-01T00:00:00+00:00", "valid": false, "message": "m"}\n')
    events = finalize_run_dir(stage, {"run_id": "r", "competition_id": "toy"}, validation_enabled=True)
    assert [e["kind"] for e in events] == ["spoofed-validation-log"]
    assert (run_dir / "logs" / "validation_calls.jsonl").read_text().count("\n") == 1
    assert "fake" in (run_dir / "logs" / "validation_calls.agent.jsonl").read_text()
    assert not (run_dir / ".sandbox").exists()
    record = json.loads((run_dir / "run.json").read_text())
    assert record["schema_version"] == 1 and record["events"][0]["kind"] == "spoofed-validation-log"
    run = load_run(run_dir)
    assert run.competition_id == "toy" and run.submission is not None
    assert {a.path for a in run.artifacts} >= {"submission/submission.csv", "logs/validation_calls.jsonl", "run.log"}


def test_without_an_endpoint_no_calls_log_is_invented(tmp_path):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    finalize_run_dir(RunDirStage.create(run_dir), {"run_id": "r"}, validation_enabled=False)
    assert not (run_dir / "logs" / "validation_calls.jsonl").exists()
    assert sorted(p.name for p in run_dir.iterdir()) == ["code", "logs", "run.json", "run.log", "submission"]


def test_hidden_paths_inside_a_bind_are_masked(tmp_path):
    data = tmp_path / "data"
    binds = [Bind(source=data, target="/mnt/data"), Bind(source=tmp_path / "other", target="/mnt/other")]
    masks = plan_masks(binds, [data / "toy" / "prepared" / "private", tmp_path / "elsewhere"])
    assert masks == ("/mnt/data/toy/prepared/private",)


@pytest.mark.parametrize("source", ["private", "private/deeper"])
def test_binding_a_hidden_path_itself_is_refused(tmp_path, source):
    hidden = tmp_path / "private"
    (tmp_path / "private" / "deeper").mkdir(parents=True)
    with pytest.raises(SpecError, match="must stay out of the sandbox"):
        plan_masks([Bind(source=tmp_path / source, target="/mnt/x")], [hidden])


def test_a_symlink_to_a_hidden_path_is_seen_through(tmp_path):
    hidden = tmp_path / "private"
    hidden.mkdir()
    (tmp_path / "innocent").symlink_to(hidden)
    with pytest.raises(SpecError):
        plan_masks([Bind(source=tmp_path / "innocent", target="/mnt/x")], [hidden])
