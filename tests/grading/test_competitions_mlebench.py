"""The 82 MLE-bench competition folders agree with MLE-bench's own facts (shared data, in place)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
import yaml

from mleaudit.grading import CompetitionRegistry, find_competitions_root
from mleaudit.grading.spec import load_kernel_refs
from tests.conftest import shared_path

ROOT = find_competitions_root()
REGISTRY = CompetitionRegistry(ROOT, ROOT / ".unused")
MLEBENCH_IDS = [cid for cid in REGISTRY.ids() if not cid.startswith("sklearn-")]
#: Competitions whose MLE-bench config names a grader label that does not match what its grade.py
#: computes (or that another competition uses for another metric); the config references the
#: metric actually computed by its function name, and its description says why.
RELABELLED = {
    "3d-object-detection-for-autonomous-vehicles": ("mean-average-precision", "box3d_map_score"),
    "stanford-covid-vaccine": ("multi-class-log-loss", "rmse_error"),
    "tensorflow2-question-answering": ("micro-f1-score", "answer_span_accuracy_score"),
    "ventilator-pressure-prediction": ("dice-hausdorff-combo", "mae_error"),
}
#: Competitions graded from rows their prepare.py derives from MLE-bench's answer file, which it
#: writes beside them: {id: (MLE-bench's answers, the rows graded)}.
DERIVED_ANSWERS = {
    "tensorflow2-question-answering": (
        "tensorflow2-question-answering/prepared/private/test.jsonl",
        "tensorflow2-question-answering/prepared/private/rows/answers.csv",
    ),
}
SPLIT_SIZES = {"low": 22, "medium": 38, "high": 15, "dev": 7, "split75": 75, "systemcard": 30}


def md5(path: Path) -> str:
    return hashlib.md5(path.read_bytes()).hexdigest()


def shared_config(competition_id: str) -> dict:
    return yaml.safe_load(shared_path("mlebench", "competitions", competition_id, "config.yaml").read_text())


def test_every_mlebench_competition_has_a_folder() -> None:
    shared = sorted(p.name for p in shared_path("mlebench", "competitions").iterdir() if p.is_dir())
    assert len(shared) == 82
    assert MLEBENCH_IDS == shared


@pytest.mark.parametrize("competition_id", MLEBENCH_IDS)
def test_config_facts_match_mlebench(competition_id: str) -> None:
    spec = REGISTRY.get(competition_id)
    shared = shared_config(competition_id)
    assert spec.name == shared["name"].strip()
    mlebench_answers, graded = DERIVED_ANSWERS.get(competition_id, (shared["dataset"]["answers"], None))
    assert mlebench_answers == shared["dataset"]["answers"]
    assert spec.answers == (graded or mlebench_answers)
    assert spec.sample_submission == shared["dataset"]["sample_submission"]
    assert spec.awards_medals is shared["awards_medals"]
    assert spec.competition_type == shared["competition_type"]
    label = shared["grader"]["name"]
    if competition_id in RELABELLED:
        assert (label, spec.metric.name) == RELABELLED[competition_id]
        assert label in spec.description  # the config says why
    else:
        assert spec.metric.name == label


@pytest.mark.parametrize("competition_id", MLEBENCH_IDS)
def test_leaderboard_kernels_and_checksums_are_mlebench_s(competition_id: str) -> None:
    spec = REGISTRY.get(competition_id)
    folder = shared_path("mlebench", "competitions", competition_id)
    if (folder / "leaderboard.csv").is_file():
        assert spec.leaderboard_source == "kaggle"
        assert md5(spec.leaderboard_path) == md5(folder / "leaderboard.csv")
        assert "byte-identical" in spec.leaderboard_note
    else:
        assert spec.leaderboard_source == "unavailable" and not spec.leaderboard_path.exists()
    assert spec.kernel_refs == load_kernel_refs(folder / "kernels.txt")
    shared = yaml.safe_load((folder / "checksums.yaml").read_text())
    assert spec.checksums["public"] == (shared["public"] or {})
    assert spec.checksums["private"] == shared["private"]
    mine = yaml.safe_load((spec.root / "checksums.yaml").read_text())
    assert mine["zip"] == shared["zip"]


def test_splits_match_mlebench_lists() -> None:
    for split, size in SPLIT_SIZES.items():
        listed = shared_path("mlebench", "splits", f"{split}.txt").read_text().split()
        assert len(listed) == size
        assert REGISTRY.ids_in_split(split) == sorted(listed), split
    assert REGISTRY.ids_in_split("lite") == REGISTRY.ids_in_split("low")
    assert REGISTRY.split_names() == sorted(SPLIT_SIZES)


def test_raw_checksums_are_those_of_the_shared_kaggle_files() -> None:
    for spec in REGISTRY.specs():
        for name, digest in (spec.checksums or {}).get("raw", {}).items():
            assert md5(shared_path("kaggle-raw", spec.id, name)) == digest, f"{spec.id}/{name}"
