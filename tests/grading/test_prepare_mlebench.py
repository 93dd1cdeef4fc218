"""MLE-bench's preparation reproduced byte for byte from Kaggle's raw files (shared data, in place)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from mleaudit.grading import CompetitionRegistry, Medal, find_competitions_root, grade_submission, prepare_competition
from mleaudit.grading.errors import ChecksumMismatch
from mleaudit.grading.prepare import compute_checksums
from mleaudit.grading.validation import read_csv
from tests.conftest import shared_path

#: Competitions whose shared raw files are Kaggle's originals: every prepared file must match.
EXACT = ["leaf-classification", "nomad2018-predict-transparent-conductors", "spooky-author-identification"]
INSULTS = "detecting-insults-in-social-commentary"


@pytest.fixture(scope="module")
def registry(tmp_path_factory: pytest.TempPathFactory) -> CompetitionRegistry:
    return CompetitionRegistry(find_competitions_root(), tmp_path_factory.mktemp("mlebench-data"))


@pytest.fixture(scope="module")
def prepared(registry: CompetitionRegistry) -> CompetitionRegistry:
    for competition_id in EXACT:
        result = prepare_competition(registry.get(competition_id), registry, raw=shared_path("kaggle-raw", competition_id))
        assert result.verified and not result.reused
    return registry


def perfect_submission(registry: CompetitionRegistry, competition_id: str, tmp_path: Path) -> Path:
    """The answers restricted to the columns of the sample submission, in its column order."""
    spec = registry.get(competition_id)
    columns = list(read_csv(spec.sample_submission_path(registry.data_dir), nrows=0).columns)
    answers = read_csv(spec.answers_path(registry.data_dir))
    path = tmp_path / "perfect.csv"
    answers[columns].to_csv(path, index=False)
    return path


@pytest.mark.parametrize("competition_id", EXACT)
def test_prepared_files_match_mlebench_checksums(prepared: CompetitionRegistry, competition_id: str) -> None:
    spec = prepared.get(competition_id)
    actual = {
        "public": compute_checksums(prepared.public_dir(competition_id)),
        "private": compute_checksums(prepared.private_dir(competition_id)),
    }
    assert actual == {"public": dict(spec.checksums["public"]), "private": dict(spec.checksums["private"])}


@pytest.mark.parametrize("competition_id", EXACT)
def test_answers_earn_gold_and_sample_is_valid_without_medal(
    prepared: CompetitionRegistry, competition_id: str, tmp_path: Path
) -> None:
    spec = prepared.get(competition_id)
    perfect = grade_submission(perfect_submission(prepared, competition_id, tmp_path), spec, prepared.data_dir)
    assert perfect.valid_submission, perfect.error
    assert perfect.score == pytest.approx(spec.metric.metric.best)
    assert perfect.medal is Medal.GOLD and perfect.above_median
    sample = grade_submission(spec.sample_submission_path(prepared.data_dir), spec, prepared.data_dir)
    assert sample.valid_submission, sample.error
    assert sample.medal is Medal.NONE and not sample.above_median


@pytest.mark.parametrize("competition_id", EXACT)
def test_shuffled_rows_score_the_same(prepared: CompetitionRegistry, competition_id: str, tmp_path: Path) -> None:
    spec = prepared.get(competition_id)
    sample = read_csv(spec.sample_submission_path(prepared.data_dir))
    answers = read_csv(spec.answers_path(prepared.data_dir))[list(sample.columns)]
    # Halfway between the perfect and the sample submission: valid, imperfect, order-free.
    blend = answers.copy()
    blend[list(spec.target_columns)] = (answers[list(spec.target_columns)] + sample[list(spec.target_columns)].to_numpy()) / 2
    blend.to_csv(tmp_path / "ordered.csv", index=False)
    blend.sample(frac=1.0, random_state=3).to_csv(tmp_path / "shuffled.csv", index=False)
    ordered = grade_submission(tmp_path / "ordered.csv", spec, prepared.data_dir)
    shuffled = grade_submission(tmp_path / "shuffled.csv", spec, prepared.data_dir)
    assert ordered.valid_submission and shuffled.valid_submission
    assert ordered.score == shuffled.score
    assert ordered.score != pytest.approx(spec.metric.metric.best)


def test_the_split_is_mlebench_s(prepared: CompetitionRegistry) -> None:
    # Ids renumbered from 1 in split order, targets kept only in the answers.
    nomad = "nomad2018-predict-transparent-conductors"
    train = read_csv(prepared.public_dir(nomad) / "train.csv")
    test = read_csv(prepared.public_dir(nomad) / "test.csv")
    assert (len(train), len(test)) == (2160, 240)
    assert train["id"].tolist() == list(range(1, 2161)) and test["id"].tolist() == list(range(1, 241))
    leaf = read_csv(prepared.private_dir("leaf-classification") / "test.csv")
    assert leaf.shape == (99, 100) and (leaf.drop(columns="id").sum(axis=1) == 1).all()


def test_insults_match_except_the_answer_file_whose_raw_copy_lacks_usage(registry: CompetitionRegistry) -> None:
    raw = shared_path("kaggle-raw", INSULTS)
    spec = registry.get(INSULTS)
    # Kaggle's test_with_solutions.csv has a Usage column (public/private part of the board); the
    # shared copy does not, so the private answer file, a verbatim copy, cannot match.
    assert "Usage" not in pd.read_csv(raw / "test_with_solutions.csv", nrows=0).columns
    with pytest.raises(ChecksumMismatch, match=r"private/test\.csv: MD5 [0-9a-f]{32}, expected 76d6e15e475a2fd634bdd8cdfb4746c0"):
        prepare_competition(spec, registry, raw=raw)
    assert not registry.is_prepared(INSULTS)  # nothing left behind
    result = prepare_competition(spec, registry, raw=raw, verify=False)
    assert not result.verified
    expected = {section: dict(spec.checksums[section]) for section in ("public", "private")}
    assert result.checksums["public"] == expected["public"]
    assert result.checksums["private"]["gold_submission.csv"] == expected["private"]["gold_submission.csv"]
    assert result.checksums["private"]["test.csv"] != expected["private"]["test.csv"]


def test_insults_gold_submission_earns_gold_and_sample_none(registry: CompetitionRegistry) -> None:
    spec = registry.get(INSULTS)
    if not registry.is_prepared(INSULTS):
        prepare_competition(spec, registry, raw=shared_path("kaggle-raw", INSULTS), verify=False)
    # Rows are matched by Date and Comment: 9 comments appear on 29 rows, each with its own date.
    gold = grade_submission(registry.private_dir(INSULTS) / "gold_submission.csv", spec, registry.data_dir)
    assert gold.valid_submission, gold.error
    assert gold.score == 1.0 and gold.medal is Medal.GOLD
    sample = grade_submission(spec.sample_submission_path(registry.data_dir), spec, registry.data_dir)
    assert sample.valid_submission and sample.score == 0.5 and sample.medal is Medal.NONE
