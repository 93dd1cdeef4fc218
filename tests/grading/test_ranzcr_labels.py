"""ranzcr-clip-catheter-line-classification grades the nine labels of MLE-bench's sample submission.

The answers hold eleven labels; MLE-bench's grader averages the ROC AUC over nine of them (its
``classes.py`` leaves out ``CVC - Normal`` and ``Swan Ganz Catheter Present``), and its sample
submission has exactly those nine columns.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from mleaudit.grading import CompetitionRegistry, find_competitions_root
from mleaudit.grading.grade import score_csv

ROOT = find_competitions_root()
SPEC = CompetitionRegistry(ROOT, ROOT / ".unused").get("ranzcr-clip-catheter-line-classification")
NINE = ["ETT - Abnormal", "ETT - Borderline", "ETT - Normal", "NGT - Abnormal", "NGT - Borderline",
        "NGT - Incompletely Imaged", "NGT - Normal", "CVC - Abnormal", "CVC - Borderline"]
UNGRADED = ["CVC - Normal", "Swan Ganz Catheter Present"]


def _csv(path: Path, columns: list[str], rows: list[list[object]]) -> Path:
    path.write_text(",".join(["StudyInstanceUID", *columns]) + "\n"
                    + "".join(",".join(map(str, row)) + "\n" for row in rows), encoding="utf-8")
    return path


@pytest.fixture
def answers(tmp_path: Path) -> Path:
    # Each graded label has both classes; the ungraded ones are constant (AUC undefined there).
    rows = [[f"1.2.{i}", *[(i + j) % 2 for j in range(9)], 1, 0] for i in range(4)]
    return _csv(tmp_path / "answers.csv", NINE + UNGRADED, rows)


def test_the_graded_labels_are_mlebench_s_nine() -> None:
    assert list(SPEC.target_columns) == NINE


@pytest.mark.parametrize("extra", [[], UNGRADED], ids=["sample-submission format", "all eleven"])
def test_a_perfect_submission_scores_one_in_either_format(answers: Path, tmp_path: Path, extra: list[str]) -> None:
    rows = [[f"1.2.{i}", *[(i + j) % 2 for j in range(9)], *[0.5] * len(extra)] for i in range(4)]
    submission = _csv(tmp_path / "submission.csv", NINE + extra, rows)
    score = score_csv(submission, answers, metric=SPEC.metric.metric, id_column=SPEC.id_column,
                      target_columns=SPEC.target_columns, params=SPEC.metric.params)
    assert score == pytest.approx(1.0)
