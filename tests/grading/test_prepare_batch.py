"""Preparing several competitions: skipped, failed and prepared ones side by side; helpers."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pytest
import yaml

from mleaudit.grading import CompetitionRegistry, prepare_competition
from mleaudit.grading.errors import ChecksumMismatch, ConfigError
from mleaudit.grading.prepare import md5_file, one_hot_labels, prepare_competitions

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "grading"


@pytest.fixture
def toys(tmp_path: Path) -> CompetitionRegistry:
    """toy-auc (prepare + raw file), toy-custom (no prepare), toy-stale (wrong checksums)."""
    root = tmp_path / "competitions"
    shutil.copytree(FIXTURES / "competitions" / "toy-auc", root / "toy-auc")
    shutil.copytree(FIXTURES / "competitions" / "toy-custom", root / "toy-custom")
    stale = root / "toy-stale"
    shutil.copytree(FIXTURES / "competitions" / "toy-auc", stale)
    config = yaml.safe_load((stale / "config.yaml").read_text())
    config["id"] = "toy-stale"
    config["dataset"] = {"answers": "toy-stale/prepared/private/answers.csv",
                         "sample_submission": "toy-stale/prepared/public/sample_submission.csv",
                         "raw_files": ["labels.csv"]}
    (stale / "config.yaml").write_text(yaml.safe_dump(config))
    (stale / "checksums.yaml").write_text("public:\n  train.csv: d41d8cd98f00b204e9800998ecf8427e\nprivate: {}\n")
    raws = tmp_path / "raw"
    for name in ("toy-auc", "toy-stale"):
        shutil.copytree(FIXTURES / "raw" / "toy-auc", raws / name)
    return CompetitionRegistry(root, tmp_path / "data")


def test_outcomes_per_competition_and_the_batch_goes_on(toys: CompetitionRegistry, tmp_path: Path) -> None:
    specs = [toys.get(cid) for cid in ("toy-custom", "toy-stale", "toy-auc")]
    outcomes = prepare_competitions(specs, toys, raw_root=tmp_path / "raw")
    assert [(o.competition_id, o.status) for o in outcomes] == [
        ("toy-custom", "skipped"), ("toy-stale", "failed"), ("toy-auc", "prepared")
    ]
    assert outcomes[0].message.startswith("toy-custom: no prepare function in ")
    assert "MLE-bench's prepared public/ and private/ folders in" in outcomes[0].message
    assert "public/train.csv: MD5 " in outcomes[1].message and outcomes[1].result is None
    assert outcomes[2].message == f"prepared in {toys.data_dir / 'toy-auc' / 'prepared'} (no checksums recorded)"
    assert toys.is_prepared("toy-auc") and not toys.is_prepared("toy-stale")

    again = prepare_competitions([toys.get("toy-auc")], toys)
    assert again[0].status == "reused" and again[0].result.reused


def test_missing_raw_files_are_skipped_with_the_reason(toys: CompetitionRegistry, tmp_path: Path) -> None:
    outcome, = prepare_competitions([toys.get("toy-auc")], toys, raw_root=tmp_path / "elsewhere")
    assert outcome.status == "skipped"
    assert outcome.message.startswith("Competition 'toy-auc' needs the Kaggle file labels.csv in ")
    assert not (toys.data_dir / "toy-auc" / "prepared").exists()


def test_a_single_raw_dir_is_for_one_competition(toys: CompetitionRegistry, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="a single raw dir can only be given for one competition"):
        prepare_competitions([toys.get("toy-auc"), toys.get("toy-stale")], toys, raw=tmp_path / "raw" / "toy-auc")


def test_verify_false_prepares_and_reports_unverified(toys: CompetitionRegistry, tmp_path: Path) -> None:
    spec = toys.get("toy-stale")
    with pytest.raises(ChecksumMismatch):
        prepare_competition(spec, toys, raw=tmp_path / "raw" / "toy-stale")
    result = prepare_competition(spec, toys, raw=tmp_path / "raw" / "toy-stale", verify=False)
    assert not result.verified and not result.reused
    assert result.checksums["public"]["train.csv"] == md5_file(toys.public_dir("toy-stale") / "train.csv")


def test_no_prepare_function_is_a_config_error_saying_what_to_do(toys: CompetitionRegistry) -> None:
    with pytest.raises(ConfigError) as excinfo:
        prepare_competition(toys.get("toy-custom"), toys)
    assert str(excinfo.value) == (
        f"toy-custom: no prepare function in {toys.get('toy-custom').config_path} (this checkout does not "
        "reproduce MLE-bench's preparation of it); to grade it, put MLE-bench's prepared public/ and private/ "
        f"folders in {toys.data_dir / 'toy-custom' / 'prepared'}"
    )


def test_one_hot_labels_layout_and_bytes() -> None:
    frame = pd.DataFrame({"id": ["x", "y", "z"], "label": ["b", "a", "b"]}, index=[5, 2, 9])
    table = one_hot_labels(frame, "id", "label", ["a", "b", "c"])
    assert list(table.columns) == ["id", "a", "b", "c"] and list(table.index) == [5, 2, 9]
    assert table.to_csv(index=False, lineterminator="\n") == "id,a,b,c\nx,0,1,0\ny,1,0,0\nz,0,1,0\n"
    with pytest.raises(ValueError, match="labels not among the 3 classes: d"):
        one_hot_labels(pd.DataFrame({"id": [1], "label": ["d"]}), "id", "label", ["a", "b", "c"])
