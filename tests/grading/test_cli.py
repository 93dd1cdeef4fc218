"""The grading commands, invoked through a small root group as the product's root CLI does."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from grading.cli import competitions, grade_sample, prepare

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "grading"


@click.group()
def root() -> None:
    """Test root."""


root.add_command(prepare)
root.add_command(grade_sample)
root.add_command(competitions)


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
