"""The grading commands, invoked through a small root group as the product's root CLI does."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from mleaudit.grading.cli import competitions, grade, grade_sample, kernels, prepare

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "grading"


@click.group()
def root() -> None:
    """Test root."""


root.add_command(prepare)
root.add_command(grade)
root.add_command(grade_sample)
root.add_command(competitions)
root.add_command(kernels)


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    comps = tmp_path / "competitions"
    shutil.copytree(FIXTURES / "competitions", comps)
    return {"MLEAUDIT_COMPETITIONS": str(comps), "MLEAUDIT_DATA_DIR": str(tmp_path / "data")}


def run(args: list[str], env: dict[str, str] | None = None) -> click.testing.Result:
    return CliRunner().invoke(root, args, env=env or {}, catch_exceptions=False)


def walk(command: click.Command, prefix: str = "") -> list[tuple[str, click.Command]]:
    found = [(prefix.strip(), command)]
    if isinstance(command, click.Group):
        for name, sub in sorted(command.commands.items()):
            found.extend(walk(sub, f"{prefix} {name}"))
    return found


@pytest.mark.parametrize(("name", "command"), walk(root)[1:], ids=lambda v: v if isinstance(v, str) else "")
def test_every_command_has_help_with_an_example(name: str, command: click.Command) -> None:
    result = run([*name.split(), "--help"])
    assert result.exit_code == 0
    assert "Example:" in result.output
    assert "mleaudit " in result.output


def test_prepare_then_grade_sample(env: dict[str, str], tmp_path: Path) -> None:
    raw = FIXTURES / "raw" / "toy-auc"
    result = run(["prepare", "-c", "toy-auc", "--raw", str(raw)], env)
    assert result.exit_code == 0
    assert result.output == f"toy-auc: prepared in {tmp_path / 'data' / 'toy-auc' / 'prepared'} (no checksums recorded)\n"
    assert "already prepared" in run(["prepare", "-c", "toy-auc"], env).output

    submission = tmp_path / "submission.csv"
    submission.write_text("id,target\nb01,0.1\nb02,0.9\nb03,0.3\nb04,0.2\n", encoding="utf-8")
    result = run(["grade-sample", str(submission), "toy-auc"], env)
    assert result.exit_code == 0
    report = json.loads(result.output)
    assert report["score"] == 1.0 and report["gold_medal"] is True and report["valid_submission"] is True
    assert result.output.startswith('{\n  "above_median": true,\n  "any_medal": true,')  # sort_keys, indent 2


def test_grade_sample_invalid_submission_is_a_report(env: dict[str, str], tmp_path: Path) -> None:
    run(["prepare", "-c", "toy-auc", "--raw", str(FIXTURES / "raw" / "toy-auc")], env)
    result = run(["grade-sample", str(tmp_path / "missing.csv"), "toy-auc"], env)
    assert result.exit_code == 0
    report = json.loads(result.output)
    assert report["submission_exists"] is False and report["score"] is None
    assert report["error"] == f"No submission file at {tmp_path / 'missing.csv'}."


def test_errors_exit_2_with_a_message(env: dict[str, str], tmp_path: Path) -> None:
    result = run(["grade-sample", str(tmp_path / "s.csv"), "toy-au"], env)
    assert result.exit_code == 2
    assert result.output == f"Error: No competition 'toy-au' in {env['MLEAUDIT_COMPETITIONS']}. Did you mean: toy-auc, toy-custom?\n"
    result = run(["grade-sample", str(tmp_path / "s.csv"), "toy-auc"], env)
    assert result.exit_code == 2
    assert "is not prepared" in result.output and "Run `mleaudit prepare -c toy-auc` first." in result.output
    result = run(["prepare", "-c", "toy-auc"], env)
    assert result.exit_code == 2
    assert result.output.startswith("Error: Competition 'toy-auc' needs the Kaggle file labels.csv in ")
    assert "Traceback" not in result.output


def test_options_override_environment(env: dict[str, str], tmp_path: Path) -> None:
    result = run(["competitions", "list", "--competitions", str(tmp_path / "nowhere")], env)
    assert result.exit_code == 2
    assert result.output == f"Error: --competitions {tmp_path / 'nowhere'}: not a directory\n"


def test_competitions_list(env: dict[str, str]) -> None:
    result = run(["competitions", "list"], env)
    assert result.exit_code == 0
    lines = result.output.splitlines()
    assert lines[0].split() == ["ID", "METRIC", "BETTER", "LEADERBOARD", "TEAMS", "PREPARED"]
    assert lines[1].split() == ["toy-auc", "roc_auc_score", "higher", "reference-baselines", "12", "no"]
    assert lines[2].split() == ["toy-custom", "exact_match_count", "higher", "reference-baselines", "3", "no"]


def test_competitions_list_checkout(tmp_path: Path) -> None:
    result = run(["competitions", "list", "--data-dir", str(tmp_path)])
    assert result.exit_code == 0
    ids = [line.split()[0] for line in result.output.splitlines()[1:]]
    assert {"sklearn-diabetes", "sklearn-digits", "spaceship-titanic"} <= set(ids)


def test_competitions_show(env: dict[str, str]) -> None:
    result = run(["competitions", "show", "toy-auc"], env)
    assert result.exit_code == 0
    info = json.loads(result.output)
    assert info["id"] == "toy-auc"
    assert info["metric"] == {"name": "roc_auc_score", "higher_is_better": True, "params": {"average": "macro"}, "custom_grader": False}
    assert info["medal_thresholds"] == {
        "gold": 1.0, "silver": 1.0, "bronze": 0.875, "median": 0.75, "n_teams": 12, "higher_is_better": True
    }
    assert info["prepared"] is False
    assert info["audit"]["allow_urls"] == ["huggingface.co"]
    assert result.output == json.dumps(info, sort_keys=True, indent=2) + "\n"


def test_prepare_needs_exactly_one_selection(env: dict[str, str], tmp_path: Path) -> None:
    for args in ([], ["-c", "toy-auc", "--all"], ["--lite", "-l", str(tmp_path / "ids.txt")]):
        result = run(["prepare", *args], env)
        assert result.exit_code == 2
        assert "Error: give exactly one of -c ID, --lite, --all or -l FILE" in result.output


def test_prepare_several_reports_each_and_goes_on(env: dict[str, str], tmp_path: Path) -> None:
    ids = tmp_path / "ids.txt"
    ids.write_text("toy-custom\n# a comment\ntoy-auc\n", encoding="utf-8")
    # --raw with several competitions is a folder of <id>/ folders (MLE-bench's layout).
    result = run(["prepare", "-l", str(ids), "--raw", str(FIXTURES / "raw")], env)
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0].startswith("[skipped] toy-custom: no prepare function in ")
    assert lines[1] == f"[prepared] toy-auc: prepared in {tmp_path / 'data' / 'toy-auc' / 'prepared'} (no checksums recorded)"
    assert lines[2] == "2 competitions: 1 prepared, 0 reused, 1 skipped, 0 failed"
    result = run(["prepare", "--all"], env)
    assert result.exit_code == 0
    assert result.output.splitlines()[-1] == "2 competitions: 0 prepared, 1 reused, 1 skipped, 0 failed"


def test_prepare_single_accepts_a_folder_of_raw_folders(env: dict[str, str], tmp_path: Path) -> None:
    result = run(["prepare", "-c", "toy-auc", "--raw", str(FIXTURES / "raw")], env)
    assert result.exit_code == 0, result.output
    assert result.output.startswith("toy-auc: prepared in ")


def test_prepare_checksum_mismatch_names_the_way_past_it(env: dict[str, str]) -> None:
    checksums = Path(env["MLEAUDIT_COMPETITIONS"]) / "toy-auc" / "checksums.yaml"
    checksums.write_text("public:\n  train.csv: d41d8cd98f00b204e9800998ecf8427e\nprivate: {}\n", encoding="utf-8")
    result = run(["prepare", "-c", "toy-auc", "--raw", str(FIXTURES / "raw" / "toy-auc")], env)
    assert result.exit_code == 2
    assert "\npublic/train.csv: MD5 " in result.output
    assert "add --no-verify (the result is marked unverified" in result.output


def test_prepare_failure_in_a_batch_exits_2(env: dict[str, str], tmp_path: Path) -> None:
    checksums = Path(env["MLEAUDIT_COMPETITIONS"]) / "toy-auc" / "checksums.yaml"
    checksums.write_text("public:\n  train.csv: d41d8cd98f00b204e9800998ecf8427e\nprivate: {}\n", encoding="utf-8")
    result = run(["prepare", "--all", "--raw", str(FIXTURES / "raw")], env)
    assert result.exit_code == 2
    assert "[failed] toy-auc: Checksums do not match for toy-auc:\npublic/sample_submission.csv: not recorded" in result.output
    assert "\npublic/train.csv: MD5 " in result.output
    assert result.output.splitlines()[-1] == "2 competitions: 0 prepared, 0 reused, 1 skipped, 1 failed"
    result = run(["prepare", "-c", "toy-auc", "--raw", str(FIXTURES / "raw" / "toy-auc"), "--no-verify"], env)
    assert result.exit_code == 0 and result.output.endswith("(checksums not verified)\n")


def test_grade_jsonl_writes_mlebench_report_and_goes_on(env: dict[str, str], tmp_path: Path) -> None:
    run(["prepare", "-c", "toy-auc", "--raw", str(FIXTURES / "raw" / "toy-auc")], env)
    (tmp_path / "perfect.csv").write_text("id,target\nb01,0.1\nb02,0.9\nb03,0.8\nb04,0.2\n", encoding="utf-8")
    (tmp_path / "short.csv").write_text("id,target\nb01,0.1\n", encoding="utf-8")
    lines = [
        {"competition_id": "toy-auc", "submission_path": "perfect.csv", "logs_path": None, "code_path": None},
        {"competition_id": "toy-auc", "submission_path": str(tmp_path / "short.csv")},
        {"competition_id": "toy-auc", "submission_path": None},
        {"competition_id": "toy-custom", "submission_path": "perfect.csv"},
        {"competition_id": "no-such-competition", "submission_path": "perfect.csv"},
    ]
    jsonl = tmp_path / "submissions.jsonl"
    jsonl.write_text("# made for the test\n" + "\n".join(json.dumps(line) for line in lines) + "\n", encoding="utf-8")
    result = run(["grade", "--submission", str(jsonl), "--output-dir", str(tmp_path / "out")], env)
    assert result.exit_code == 0, result.output
    reports = list((tmp_path / "out").iterdir())
    assert len(reports) == 1 and re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d-UTC_grading_report\.json", reports[0].name)
    aggregate = json.loads(reports[0].read_text())
    assert list(aggregate) == [
        "total_runs", "total_runs_with_submissions", "total_valid_submissions", "total_medals", "total_gold_medals",
        "total_silver_medals", "total_bronze_medals", "total_above_median", "competition_reports",
    ]
    totals = {k: v for k, v in aggregate.items() if k != "competition_reports"}
    assert totals == {
        "total_runs": 5, "total_runs_with_submissions": 4, "total_valid_submissions": 1, "total_medals": 1,
        "total_gold_medals": 1, "total_silver_medals": 0, "total_bronze_medals": 0, "total_above_median": 1,
    }
    assert json.loads(result.output.split("report written")[0]) == totals
    perfect, short, missing, unprepared, unknown = aggregate["competition_reports"]
    assert perfect["score"] == 1.0 and perfect["gold_medal"] and perfect["submission_path"] == str(tmp_path / "perfect.csv")
    assert short["valid_submission"] is False and short["error"].startswith("Submission has 1 row")
    assert missing["submission_exists"] is False and missing["submission_path"] is None
    assert missing["error"] == f"No submission: submission_path is null at {jsonl}:4."
    assert missing["gold_threshold"] == perfect["gold_threshold"]
    assert unprepared["valid_submission"] is False and unprepared["gold_threshold"] is not None
    assert unprepared["error"].startswith("competition 'toy-custom' is not prepared in ")
    assert unknown["error"].startswith("not graded: No competition 'no-such-competition' in ")
    assert unknown["gold_threshold"] is None and unknown["is_lower_better"] is None
    assert set(unknown) == set(perfect)


def test_grade_jsonl_bad_lines_exit_2(env: dict[str, str], tmp_path: Path) -> None:
    jsonl = tmp_path / "bad.jsonl"
    jsonl.write_text('{"competition_id": "toy-auc"}\nnot json\n[1]\n', encoding="utf-8")
    result = run(["grade", "--submission", str(jsonl), "--output-dir", str(tmp_path / "out")], env)
    assert result.exit_code == 2
    assert result.output == (
        f"Error: {jsonl}:1: field 'submission_path' is missing\n"
        f"{jsonl}:2: not JSON (Expecting value at column 1)\n"
        f"{jsonl}:3: expected a JSON object\n"
    )
    assert not (tmp_path / "out").exists()


def test_competitions_list_by_split(tmp_path: Path) -> None:
    result = run(["competitions", "list", "--split", "lite", "--data-dir", str(tmp_path)])
    assert result.exit_code == 0
    ids = [line.split()[0] for line in result.output.splitlines()[1:]]
    assert len(ids) == 22 and "spaceship-titanic" not in ids and "leaf-classification" in ids
    result = run(["competitions", "list", "--split", "dev", "--data-dir", str(tmp_path)])
    assert [line.split()[0] for line in result.output.splitlines()[1:]][-1] == "spaceship-titanic"
    result = run(["competitions", "list", "--split", "nope", "--data-dir", str(tmp_path)])
    assert result.exit_code == 2
    assert result.output == (
        "Error: No competition in split 'nope'. Known splits: dev, high, low, medium, split75, systemcard; "
        "also lite (= low).\n"
    )


def test_competitions_show_without_leaderboard(tmp_path: Path) -> None:
    result = run(["competitions", "show", "ventilator-pressure-prediction", "--data-dir", str(tmp_path)])
    assert result.exit_code == 0
    info = json.loads(result.output)
    assert info["leaderboard_source"] == "unavailable" and info["medal_thresholds"] is None
    assert info["splits"] == ["medium", "split75", "systemcard"] and len(info["kernel_refs"]) == 50
