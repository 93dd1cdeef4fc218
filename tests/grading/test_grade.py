"""Grading reports: MLE-bench's fields, missing and invalid submissions, custom graders."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

import pytest

from mleaudit.grading import CompetitionRegistry, GradeReport, Medal, grade_submission, prepare_competition
from mleaudit.grading.errors import DatasetNotPrepared
from mleaudit.grading.grade import summarize_grades, validate_submission
from mleaudit.grading.validation import read_csv

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "grading"
WHEN = datetime(2025, 1, 2, 3, 4, 5, tzinfo=timezone.utc)

MLEBENCH_FIELDS = [
    "competition_id", "score", "gold_threshold", "silver_threshold", "bronze_threshold", "median_threshold",
    "any_medal", "gold_medal", "silver_medal", "bronze_medal", "above_median", "submission_exists",
    "valid_submission", "is_lower_better", "created_at", "submission_path",
]


@pytest.fixture(scope="module")
def toy(tmp_path_factory: pytest.TempPathFactory) -> CompetitionRegistry:
    registry = CompetitionRegistry(FIXTURES / "competitions", tmp_path_factory.mktemp("data"))
    prepare_competition(registry.get("toy-auc"), registry, raw=FIXTURES / "raw" / "toy-auc")
    custom = registry.private_dir("toy-custom")
    custom.mkdir(parents=True)
    (custom / "test.csv").write_text("id,label\n1,a\n2,b\n3,c\n", encoding="utf-8")
    return registry


def submit(tmp_path: Path, text: str, name: str = "submission.csv") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def grade(toy: CompetitionRegistry, path: Path, competition_id: str = "toy-auc") -> GradeReport:
    return grade_submission(path, toy.get(competition_id), toy.data_dir, created_at=WHEN)


def test_report_dict_has_exactly_mlebench_fields_plus_ours(toy: CompetitionRegistry, tmp_path: Path) -> None:
    path = submit(tmp_path, "id,target\nb01,0.1\nb02,0.8\nb03,0.3\nb04,0.4\n")
    data = grade(toy, path).to_dict()
    assert list(data) == MLEBENCH_FIELDS + ["error", "leaderboard_source", "mlebench_divergence",
                                            "mlebench_divergence_skipped"]
    assert data == {
        "competition_id": "toy-auc",
        "score": 0.75,
        "gold_threshold": 1.0,
        "silver_threshold": 1.0,
        "bronze_threshold": 0.875,
        "median_threshold": 0.75,
        "any_medal": False,
        "gold_medal": False,
        "silver_medal": False,
        "bronze_medal": False,
        "above_median": False,
        "submission_exists": True,
        "valid_submission": True,
        "is_lower_better": False,
        "created_at": "2025-01-02T03:04:05+00:00",
        "submission_path": str(path),
        "error": None,
        "leaderboard_source": "reference-baselines",
        "mlebench_divergence": [],
        "mlebench_divergence_skipped": None,
    }
    json.dumps(data)  # JSON-ready


def test_medal_and_median(toy: CompetitionRegistry, tmp_path: Path) -> None:
    perfect = grade(toy, submit(tmp_path, "id,target\nb04,0.2\nb03,0.7\nb02,0.9\nb01,0.1\n"))
    assert perfect.score == 1.0 and perfect.medal is Medal.GOLD and perfect.above_median
    median = grade(toy, submit(tmp_path, "id,target\nb01,0.1\nb02,0.9\nb03,0.5\nb04,0.6\n"))
    assert median.score == 0.75 and median.medal is Medal.NONE
    assert not median.above_median  # 0.75 is the median itself
    bronze = grade(toy, submit(tmp_path, "id,target\nb01,0.1\nb02,0.9\nb03,0.6\nb04,0.6\n"))
    assert bronze.score == 0.875 and bronze.medal is Medal.BRONZE and bronze.above_median


def test_score_is_rounded_to_five_decimals(embedded_registry: CompetitionRegistry, tmp_path: Path) -> None:
    spec = embedded_registry.get("sklearn-digits")
    answers = read_csv(spec.answers_path(embedded_registry.data_dir))
    answers.loc[0, "label"] = (answers.loc[0, "label"] + 1) % 10  # one wrong row of 360
    answers.to_csv(tmp_path / "one-wrong.csv", index=False)
    report = grade_submission(tmp_path / "one-wrong.csv", spec, embedded_registry.data_dir)
    assert report.score == 0.99722  # 359 / 360 = 0.997222...


def test_missing_submission(toy: CompetitionRegistry, tmp_path: Path) -> None:
    report = grade(toy, tmp_path / "nothing.csv")
    assert (report.submission_exists, report.valid_submission, report.score) == (False, False, None)
    assert report.error == f"No submission file at {tmp_path / 'nothing.csv'}."
    assert report.medal is Medal.NONE and not report.above_median
    assert report.to_dict()["gold_threshold"] == 1.0  # thresholds are reported all the same


def test_not_a_csv_file(toy: CompetitionRegistry, tmp_path: Path) -> None:
    report = grade(toy, submit(tmp_path, "id,target\n", "submission.parquet"))
    assert not report.submission_exists and not report.valid_submission
    assert report.error == f"Submission file {tmp_path / 'submission.parquet'} is not a .csv file."
    report = grade(toy, tmp_path)
    assert report.error == f"Submission path {tmp_path} is not a file."


def test_invalid_submission_has_no_score_and_says_why(toy: CompetitionRegistry, tmp_path: Path) -> None:
    report = grade(toy, submit(tmp_path, "id,target\nb01,0.1\nb02,1.8\nb03,0.3\nb04,0.4\n"))
    assert report.submission_exists and not report.valid_submission
    assert report.score is None and report.medal is Medal.NONE
    assert report.error == "Submission column 'target' has 1.8 at row 2 (id 'b02'), outside [0, 1]; expected a probability."
    assert report.to_dict()["score"] is None


def test_empty_submission(toy: CompetitionRegistry, tmp_path: Path) -> None:
    path = submit(tmp_path, "")
    report = grade(toy, path)
    assert report.submission_exists and not report.valid_submission
    assert report.error == f"Submission file '{path}' is empty."


def test_not_prepared(tmp_path: Path) -> None:
    registry = CompetitionRegistry(FIXTURES / "competitions", tmp_path / "empty-data")
    with pytest.raises(DatasetNotPrepared) as excinfo:
        grade_submission(tmp_path / "s.csv", registry.get("toy-auc"), registry.data_dir)
    answers = tmp_path / "empty-data" / "toy-auc" / "prepared" / "private" / "answers.csv"
    assert str(excinfo.value) == (
        f"Competition 'toy-auc' is not prepared: no answers file {answers}. Run `mleaudit prepare -c toy-auc` first."
    )


def test_custom_grader(toy: CompetitionRegistry, tmp_path: Path) -> None:
    assert grade(toy, submit(tmp_path, "id,label\n1,a\n2,b\n3,c\n"), "toy-custom").medal is Medal.GOLD
    rejected = grade(toy, submit(tmp_path, "id,label\n1,bad\n2,b\n3,c\n"), "toy-custom")
    assert rejected.error == "label 'bad' is not allowed" and rejected.score is None
    crashed = grade(toy, submit(tmp_path, "id,label\n1,boom\n2,b\n3,c\n"), "toy-custom")
    assert crashed.error == "the grader could not score the submission: RuntimeError('grader bug')"
    assert not crashed.valid_submission


def test_from_dict_round_trip(toy: CompetitionRegistry, tmp_path: Path) -> None:
    report = grade(toy, submit(tmp_path, "id,target\nb01,0.1\nb02,0.9\nb03,0.65\nb04,0.6\n"))
    again = GradeReport.from_dict(report.to_dict(), n_teams=report.thresholds.n_teams)
    assert again == report
    mlebench_only = {k: v for k, v in report.to_dict().items() if k in MLEBENCH_FIELDS}
    assert GradeReport.from_dict(mlebench_only).to_dict()["leaderboard_source"] == "kaggle"


def test_validate_submission(toy: CompetitionRegistry, tmp_path: Path) -> None:
    spec = toy.get("toy-auc")
    good = submit(tmp_path, "id,target\nb01,0.1\nb02,0.9\nb03,0.3\nb04,0.4\n")
    assert validate_submission(good, spec, toy.data_dir) == (True, "Submission is valid.")
    bad = submit(tmp_path, "id,target\nb01,0.1\n", "short.csv")
    assert validate_submission(bad, spec, toy.data_dir) == (
        False,
        "Submission has 1 row; expected 4 (one per test id). First missing id: 'b02' (row 2 of the test set).",
    )


def test_summarize_grades(toy: CompetitionRegistry, tmp_path: Path) -> None:
    reports = [
        grade(toy, submit(tmp_path, "id,target\nb04,0.2\nb03,0.7\nb02,0.9\nb01,0.1\n", "gold.csv")),
        grade(toy, submit(tmp_path, "id,target\nb01,0.1\nb02,0.9\nb03,0.6\nb04,0.6\n", "bronze.csv")),
        grade(toy, tmp_path / "missing.csv"),
    ]
    summary = summarize_grades(reports)
    assert {k: v for k, v in summary.items() if k != "competition_reports"} == {
        "total_runs": 3,
        "total_runs_with_submissions": 2,
        "total_valid_submissions": 2,
        "total_medals": 2,
        "total_gold_medals": 1,
        "total_silver_medals": 0,
        "total_bronze_medals": 1,
        "total_above_median": 2,
    }
    assert [r["submission_path"] for r in summary["competition_reports"]] == [r.submission_path for r in reports]
