"""Detecting Insults: rows are paired by Comment, a repeated comment's rows in file order.

Uses Kaggle's raw files from the shared data, in place. Some test comments repeat (each with one
label), so a reordered copy of the answers must still pair every row, and Date, which MLE-bench
never reads, must not decide whether a row is a test row, nor be required.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import roc_auc_score

from mleaudit.grading import CompetitionRegistry, Medal, find_competitions_root, grade_submission, prepare_competition
from mleaudit.grading.validation import read_csv
from tests.conftest import shared_path

CID = "detecting-insults-in-social-commentary"
COLUMNS = ["Insult", "Date", "Comment"]


@pytest.fixture(scope="module")
def registry(tmp_path_factory: pytest.TempPathFactory) -> CompetitionRegistry:
    registry = CompetitionRegistry(find_competitions_root(), tmp_path_factory.mktemp("insults-data"))
    # The shared answer file lacks Kaggle's Usage column, so its checksum cannot match.
    prepare_competition(registry.get(CID), registry, raw=shared_path("kaggle-raw", CID), verify=False)
    return registry


@pytest.fixture(scope="module")
def answers(registry: CompetitionRegistry) -> pd.DataFrame:
    return read_csv(registry.private_dir(CID) / "test.csv")[COLUMNS]


def mlebench_reference_score(submission: pd.DataFrame, answers: pd.DataFrame) -> float:
    """MLE-bench's pairing: both files sorted by Comment, then the ROC AUC."""
    submission, answers = submission.sort_values("Comment"), answers.sort_values("Comment")
    assert (submission["Comment"].to_numpy() == answers["Comment"].to_numpy()).all()
    return float(roc_auc_score(answers["Insult"].to_numpy(), submission["Insult"].to_numpy()))


def test_repeated_comments_share_one_label(registry: CompetitionRegistry, answers: pd.DataFrame) -> None:
    repeated = answers[answers["Comment"].duplicated(keep=False)]
    assert (len(repeated), repeated["Comment"].nunique()) == (29, 9)
    # One label per comment: any pairing of a repeated comment's rows gives the same AUC.
    assert (repeated.groupby("Comment")["Insult"].nunique() == 1).all()
    assert dict(registry.get(CID).metric.params) == {"repeated_ids": "in_order", "extra_columns": "ignore"}


def test_answers_in_any_order_earn_gold(registry: CompetitionRegistry, answers: pd.DataFrame, tmp_path: Path) -> None:
    spec = registry.get(CID)
    answers.sample(frac=1.0, random_state=5).to_csv(tmp_path / "shuffled.csv", index=False)
    report = grade_submission(tmp_path / "shuffled.csv", spec, registry.data_dir)
    assert report.valid_submission, report.error
    assert report.score == 1.0 and report.medal is Medal.GOLD
    sample = grade_submission(spec.sample_submission_path(registry.data_dir), spec, registry.data_dir)
    assert sample.valid_submission and sample.score == 0.5 and sample.medal is Medal.NONE


def test_imperfect_predictions_score_as_mlebench_in_any_order(
    registry: CompetitionRegistry, answers: pd.DataFrame, tmp_path: Path
) -> None:
    spec = registry.get(CID)
    rng = np.random.default_rng(0)
    noisy = answers.assign(Insult=np.clip(0.3 * answers["Insult"] + 0.7 * rng.random(len(answers)), 0, 1))
    expected = round(mlebench_reference_score(noisy, answers), 5)
    assert 0.8 < expected < 0.9
    for name, frame in (("ordered", noisy), ("shuffled", noisy.sample(frac=1.0, random_state=6))):
        frame.to_csv(tmp_path / f"{name}.csv", index=False)
        report = grade_submission(tmp_path / f"{name}.csv", spec, registry.data_dir)
        assert report.valid_submission, report.error
        assert report.score == expected, name


def test_dates_are_not_compared(registry: CompetitionRegistry, answers: pd.DataFrame, tmp_path: Path) -> None:
    spec = registry.get(CID)
    changed = answers.assign(Date="20000101000000Z").sample(frac=1.0, random_state=7)
    changed.to_csv(tmp_path / "changed.csv", index=False)
    report = grade_submission(tmp_path / "changed.csv", spec, registry.data_dir)
    assert report.valid_submission, report.error
    assert report.score == 1.0


def test_only_comment_and_insult_are_read(registry: CompetitionRegistry, answers: pd.DataFrame, tmp_path: Path) -> None:
    # MLE-bench's grader reads Comment and Insult only: without Date, or with another column, the
    # submission is graded the same; without Insult it is not.
    spec = registry.get(CID)
    rng = np.random.default_rng(1)
    noisy = answers.assign(Insult=np.clip(0.3 * answers["Insult"] + 0.7 * rng.random(len(answers)), 0, 1))
    expected = round(mlebench_reference_score(noisy, answers), 5)
    variants = {
        "no date": noisy[["Comment", "Insult"]],
        "extra column": noisy.assign(Usage="PrivateTest", Id=range(len(noisy))).sample(frac=1.0, random_state=8),
    }
    for name, frame in variants.items():
        frame.to_csv(tmp_path / f"{name}.csv", index=False)
        report = grade_submission(tmp_path / f"{name}.csv", spec, registry.data_dir)
        assert report.valid_submission, (name, report.error)
        assert report.score == expected, name
    noisy[["Comment", "Date"]].to_csv(tmp_path / "no insult.csv", index=False)
    report = grade_submission(tmp_path / "no insult.csv", spec, registry.data_dir)
    assert not report.valid_submission and "missing column 'Insult'" in report.error


def test_a_comment_on_too_few_rows_is_named_with_both_counts(
    registry: CompetitionRegistry, answers: pd.DataFrame, tmp_path: Path
) -> None:
    spec = registry.get(CID)
    comments = answers["Comment"]
    dropped = int(np.flatnonzero(comments.duplicated().to_numpy())[0])  # a repeated comment's later row
    comment = comments[dropped]
    want = int((comments == comment).sum())
    # Every row whose comment comes earlier in the test set keeps its rows: the dropped comment
    # is the first test id on a different number of rows.
    short = answers.drop(index=dropped)
    short.to_csv(tmp_path / "short.csv", index=False)
    report = grade_submission(tmp_path / "short.csv", spec, registry.data_dir)
    assert not report.valid_submission
    first = int(np.flatnonzero((comments == comment).to_numpy())[0])
    assert report.error == (
        f"Submission has id {comment!r} on {want - 1} {'row' if want == 2 else 'rows'}, the test set on {want} "
        f"(its first test row is row {first + 1}); each id must stand on as many rows as in the test set "
        f"({len(answers)} rows in all; the submission has {len(short)}), paired in file order."
    )
