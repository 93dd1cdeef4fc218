"""spaceship-titanic on real Kaggle files: MLE-bench's exact split, the real leaderboard, medals."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
import yaml

from mleaudit.grading import CompetitionRegistry, Medal, find_competitions_root, grade_submission, prepare_competition
from mleaudit.grading.prepare import compute_checksums
from mleaudit.grading.validation import read_csv
from tests.conftest import shared_path


@pytest.fixture(scope="module")
def prepared(tmp_path_factory: pytest.TempPathFactory) -> CompetitionRegistry:
    raw = shared_path("kaggle-raw", "spaceship-titanic")
    registry = CompetitionRegistry(find_competitions_root(), tmp_path_factory.mktemp("data"))
    result = prepare_competition(registry.get("spaceship-titanic"), registry, raw=raw)
    assert result.verified and not result.reused
    return registry


def test_prepared_files_are_byte_identical_to_mlebench(prepared: CompetitionRegistry) -> None:
    mlebench = yaml.safe_load(shared_path("mlebench", "competitions", "spaceship-titanic", "checksums.yaml").read_text())
    assert compute_checksums(prepared.public_dir("spaceship-titanic")) == mlebench["public"]
    assert compute_checksums(prepared.private_dir("spaceship-titanic")) == mlebench["private"]


def test_split_sizes(prepared: CompetitionRegistry) -> None:
    public = prepared.public_dir("spaceship-titanic")
    assert len(read_csv(public / "train.csv")) == 7823
    test = read_csv(public / "test.csv")
    assert len(test) == 870 and "Transported" not in test.columns


def test_answer_key_as_submission_earns_gold(prepared: CompetitionRegistry, tmp_path: Path) -> None:
    spec = prepared.get("spaceship-titanic")
    answers = read_csv(spec.answers_path(prepared.data_dir))
    answers[["PassengerId", "Transported"]].to_csv(tmp_path / "submission.csv", index=False)
    report = grade_submission(tmp_path / "submission.csv", spec, prepared.data_dir)
    assert report.valid_submission and report.score == 1.0
    assert report.gold_medal and report.medal is Medal.GOLD and report.above_median


def test_full_answers_file_is_graded_like_mlebench(prepared: CompetitionRegistry) -> None:
    # MLE-bench's grader reads PassengerId and Transported only: the private test file, with every
    # passenger column, is a perfect submission.
    spec = prepared.get("spaceship-titanic")
    report = grade_submission(spec.answers_path(prepared.data_dir), spec, prepared.data_dir)
    assert report.valid_submission, report.error
    assert report.score == 1.0 and report.medal is Medal.GOLD


def test_sample_submission_is_valid_without_medal_on_the_real_leaderboard(prepared: CompetitionRegistry) -> None:
    spec = prepared.get("spaceship-titanic")
    report = grade_submission(spec.sample_submission_path(prepared.data_dir), spec, prepared.data_dir)
    assert report.valid_submission and report.error is None
    assert report.score == 0.50345  # all False: 438 of 870 held-out passengers were not transported
    assert report.medal is Medal.NONE and not report.any_medal and not report.above_median
    assert report.leaderboard_source == "kaggle" and not report.is_lower_better

    # 2,288 teams: gold = top 10 + 0.2 % (position 14), silver = top 5 % (114), bronze = top 10 % (228).
    with shared_path("mlebench", "competitions", "spaceship-titanic", "leaderboard.csv").open(newline="") as handle:
        scores = [float(row["score"]) for row in csv.DictReader(handle)]
    assert len(scores) == 2288
    data = report.to_dict()
    assert data["gold_threshold"] == scores[13] == 0.82066
    assert data["silver_threshold"] == scores[113] == 0.81388
    assert data["bronze_threshold"] == scores[227] == 0.80967
    ordered = sorted(scores)
    assert data["median_threshold"] == (ordered[1143] + ordered[1144]) / 2


def test_committed_leaderboard_is_the_mlebench_snapshot() -> None:
    ours = find_competitions_root() / "spaceship-titanic" / "leaderboard.csv"
    theirs = shared_path("mlebench", "competitions", "spaceship-titanic", "leaderboard.csv")
    assert ours.read_bytes() == theirs.read_bytes()
