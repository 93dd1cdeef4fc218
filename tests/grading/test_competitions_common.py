"""Checks every competition folder passes: config, leaderboard, direction, and grading invariants."""

from __future__ import annotations

import csv
import importlib.util
import math
import sys
from pathlib import Path

import pandas as pd
import pytest

from mleaudit.grading import CompetitionRegistry, Medal, find_competitions_root, grade_submission, prepare_competition
from mleaudit.grading.leaderboard import LEADERBOARD_COLUMNS, check_direction, load_leaderboard
from mleaudit.grading.registry import CompetitionRegistry as _Registry
from mleaudit.grading.spec import LEADERBOARD_SOURCES
from mleaudit.grading.validation import read_csv

ROOT = find_competitions_root()
_CHECKOUT = _Registry(ROOT, ROOT / ".unused")
ALL_IDS = _CHECKOUT.ids()
EMBEDDED_IDS = [cid for cid in ALL_IDS if _CHECKOUT.get(cid).is_embedded]
BOARD_IDS = [cid for cid in ALL_IDS if _CHECKOUT.get(cid).has_leaderboard]
SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "make_reference_leaderboard.py"


def test_expected_competitions_are_present() -> None:
    assert {"spaceship-titanic", "sklearn-digits", "sklearn-diabetes"} <= set(ALL_IDS)
    assert set(EMBEDDED_IDS) == {"sklearn-digits", "sklearn-diabetes"}
    # The 82 MLE-bench competitions (75 + 7 dev) and the two embedded ones.
    assert len(ALL_IDS) == 84
    assert set(ALL_IDS) - set(BOARD_IDS) == {"ventilator-pressure-prediction"}


@pytest.mark.parametrize("competition_id", ALL_IDS)
def test_config_is_valid_and_complete(checkout_registry: CompetitionRegistry, competition_id: str) -> None:
    spec = checkout_registry.get(competition_id)
    assert spec.metric.metric is not None or spec.metric.grader is not None
    assert spec.leaderboard_source in LEADERBOARD_SOURCES
    assert spec.leaderboard_note, "say where the leaderboard comes from"
    assert spec.checksums is not None
    assert spec.answers.startswith(f"{competition_id}/prepared/private/")
    # A few MLE-bench competitions keep their sample submission with the answers.
    assert spec.sample_submission.startswith((f"{competition_id}/prepared/public/", f"{competition_id}/prepared/private/"))
    assert len(spec.description) > 100, "describe the task, the submission format and the metric"
    if spec.leaderboard_source == "reference-baselines":
        assert "scripts/make_reference_leaderboard.py" in spec.leaderboard_note
        assert spec.is_embedded and spec.kernels_path.is_dir()
    else:
        assert spec.splits, "every MLE-bench competition belongs to a split"
        assert (spec.root / "kernels.txt").is_file()
        assert spec.competition_type in ("simple", "code")
    if spec.raw_files:
        assert spec.prepare is not None
        # Recorded raw checksums cover only files prepare reads.
        assert set(spec.checksums.get("raw", {})) <= set(spec.raw_files)
    elif not spec.is_embedded:
        assert spec.prepare is None, "a prepare that reads Kaggle files must list them in dataset.raw_files"


@pytest.mark.parametrize("competition_id", BOARD_IDS)
def test_leaderboard_has_mlebench_columns_and_agrees_with_direction(
    checkout_registry: CompetitionRegistry, competition_id: str
) -> None:
    spec = checkout_registry.get(competition_id)
    with spec.leaderboard_path.open(newline="") as handle:
        header = next(csv.reader(handle))
    assert tuple(header) == LEADERBOARD_COLUMNS
    board = load_leaderboard(spec.leaderboard_path)
    check_direction(board, spec.metric.higher_is_better)
    scored = [s for s in board.scores if not math.isnan(s)]
    ordered = sorted(scored, reverse=spec.metric.higher_is_better)
    assert scored == ordered, "leaderboard must be listed best first"
    if spec.leaderboard_source == "reference-baselines":
        assert 100 <= board.n_teams < 250  # the 100-249 tier: gold is the top 10


@pytest.mark.parametrize("competition_id", EMBEDDED_IDS)
def test_reference_leaderboard_rows_map_to_the_documented_grid(
    checkout_registry: CompetitionRegistry, competition_id: str
) -> None:
    module_spec = importlib.util.spec_from_file_location("make_reference_leaderboard", SCRIPT)
    script = importlib.util.module_from_spec(module_spec)
    sys.modules["make_reference_leaderboard"] = script  # its dataclass needs its module registered
    try:
        module_spec.loader.exec_module(script)
    finally:
        del sys.modules["make_reference_leaderboard"]
    grid = script.GRIDS[competition_id]()
    labels = [b.label for b in grid]
    assert len(set(labels)) == len(labels)
    board = pd.read_csv(checkout_registry.get(competition_id).leaderboard_path)
    assert sorted(board["teamId"]) == list(range(1, len(grid) + 1))


@pytest.mark.parametrize("competition_id", EMBEDDED_IDS)
def test_embedded_prepare_needs_no_raw_and_matches_checksums(
    embedded_registry: CompetitionRegistry, competition_id: str
) -> None:
    spec = embedded_registry.get(competition_id)
    assert embedded_registry.is_prepared(competition_id)
    public, private = embedded_registry.public_dir(competition_id), embedded_registry.private_dir(competition_id)
    train, test = read_csv(public / "train.csv"), read_csv(public / "test.csv")
    answers = read_csv(spec.answers_path(embedded_registry.data_dir))
    target = spec.target_columns[0]
    assert target in train.columns and target not in test.columns
    assert set(train[spec.id_column]).isdisjoint(test[spec.id_column])
    assert answers[spec.id_column].tolist() == test[spec.id_column].tolist()
    assert 0.15 < len(test) / (len(train) + len(test)) < 0.25
    result = prepare_competition(spec, embedded_registry)
    assert result.reused and result.verified


@pytest.mark.parametrize("competition_id", EMBEDDED_IDS)
def test_answers_earn_gold_and_the_best_score(embedded_registry: CompetitionRegistry, competition_id: str) -> None:
    spec = embedded_registry.get(competition_id)
    report = grade_submission(spec.answers_path(embedded_registry.data_dir), spec, embedded_registry.data_dir)
    assert report.valid_submission and report.error is None
    assert report.score == pytest.approx(spec.metric.metric.best)
    assert report.medal is Medal.GOLD and report.gold_medal and report.any_medal
    assert report.above_median


@pytest.mark.parametrize("competition_id", EMBEDDED_IDS)
def test_shuffled_rows_score_the_same(
    embedded_registry: CompetitionRegistry, competition_id: str, tmp_path: Path
) -> None:
    spec = embedded_registry.get(competition_id)
    sample = read_csv(spec.sample_submission_path(embedded_registry.data_dir))
    answers = read_csv(spec.answers_path(embedded_registry.data_dir))
    # A deliberately imperfect prediction: the answers with every third row replaced by the sample value.
    noisy = answers.copy()
    noisy.loc[::3, spec.target_columns[0]] = sample[spec.target_columns[0]].iloc[0]
    noisy.to_csv(tmp_path / "ordered.csv", index=False)
    noisy.sample(frac=1.0, random_state=1).to_csv(tmp_path / "shuffled.csv", index=False)
    first = grade_submission(tmp_path / "ordered.csv", spec, embedded_registry.data_dir)
    second = grade_submission(tmp_path / "shuffled.csv", spec, embedded_registry.data_dir)
    assert first.valid_submission and second.valid_submission
    assert first.score == second.score
    assert first.score != pytest.approx(spec.metric.metric.best)


@pytest.mark.parametrize("competition_id", EMBEDDED_IDS)
def test_sample_submission_is_valid_without_medal(embedded_registry: CompetitionRegistry, competition_id: str) -> None:
    spec = embedded_registry.get(competition_id)
    report = grade_submission(spec.sample_submission_path(embedded_registry.data_dir), spec, embedded_registry.data_dir)
    assert report.valid_submission
    assert report.medal is Medal.NONE and not report.above_median


@pytest.mark.parametrize("competition_id", EMBEDDED_IDS)
def test_wrong_length_is_invalid(embedded_registry: CompetitionRegistry, competition_id: str, tmp_path: Path) -> None:
    spec = embedded_registry.get(competition_id)
    sample = read_csv(spec.sample_submission_path(embedded_registry.data_dir))
    sample.iloc[:-1].to_csv(tmp_path / "short.csv", index=False)
    report = grade_submission(tmp_path / "short.csv", spec, embedded_registry.data_dir)
    assert not report.valid_submission and report.score is None
    assert report.error.startswith(f"Submission has {len(sample) - 1} rows; expected {len(sample)} (one per test id).")


@pytest.mark.slow
def test_reference_leaderboards_are_reproducible() -> None:
    import subprocess

    done = subprocess.run([sys.executable, str(SCRIPT), "--check"], capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout + done.stderr
