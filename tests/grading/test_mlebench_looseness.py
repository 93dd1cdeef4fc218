"""The ``mlebench_looseness`` block of competition configs: present for every MLE-bench competition, validated."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
import yaml

from mleaudit.grading.errors import ConfigError
from mleaudit.grading.spec import CELL_KINDS, MLEBENCH_LOOSENESS_KINDS, Looseness, load_competition_spec

REPO = Path(__file__).resolve().parents[2]
COMPETITIONS = REPO / "competitions"
MLEBENCH_COMPETITIONS = REPO.parent / "shared" / "mlebench-src" / "mlebench" / "competitions"


def _specs():
    return {folder.name: load_competition_spec(folder) for folder in sorted(COMPETITIONS.iterdir())
            if (folder / "config.yaml").is_file()}


SPECS = _specs()
#: The embedded competitions are this project's own, not MLE-bench's.
MLEBENCH_IDS = sorted(cid for cid, spec in SPECS.items() if not spec.is_embedded)


def test_every_mlebench_competition_declares_its_graders_looseness():
    assert len(MLEBENCH_IDS) == 82
    undeclared = [cid for cid in MLEBENCH_IDS if SPECS[cid].mlebench_looseness is None]
    assert undeclared == []
    for cid, spec in SPECS.items():
        if spec.is_embedded:
            assert spec.mlebench_looseness is None, cid


@pytest.mark.skipif(not MLEBENCH_COMPETITIONS.is_dir(), reason="MLE-bench's source is not in ../shared/mlebench-src")
def test_the_declared_competitions_are_mlebenchs():
    graded = sorted(p.name for p in MLEBENCH_COMPETITIONS.iterdir() if (p / "grade.py").is_file())
    assert graded == MLEBENCH_IDS


# What reading every grader found (the report of the change lists the reasons).
EXPECTED = {
    "champs-scalar-coupling": ["duplicate_ids_accepted"],
    "google-quest-challenge": ["sorted_rows"],
    "google-research-identify-contrails-reduce-global-warming": ["odd_rle_accepted"],
    "h-and-m-personalized-fashion-recommendations": ["duplicate_ids_accepted"],
    "herbarium-2020-fgvc7": ["labels_truncated"],
    "herbarium-2021-fgvc8": ["labels_truncated"],
    "herbarium-2022-fgvc9": ["labels_truncated"],
    "hms-harmful-brain-activity-classification": ["nan_inf_coerced"],
    "hubmap-kidney-segmentation": ["odd_rle_accepted"],
    "iwildcam-2019-fgvc6": ["labels_truncated"],
    "jigsaw-toxic-comment-classification-challenge": ["positional_columns", "duplicate_ids_accepted"],
    "jigsaw-unintended-bias-in-toxicity-classification": ["nan_inf_coerced"],
    "new-york-city-taxi-fare-prediction": ["sorted_rows"],
    "nomad2018-predict-transparent-conductors": ["positional_rows"],
    "osic-pulmonary-fibrosis-progression": ["missing_rows_accepted", "duplicate_ids_accepted", "nan_inf_coerced",
                                            "nan_inf_coerced"],
    "predict-volcanic-eruptions-ingv-oe": ["duplicate_ids_accepted"],
    "rsna-breast-cancer-detection": ["nan_inf_coerced"],
    "smartphone-decimeter-2022": ["positional_rows", "nan_inf_coerced"],
    "stanford-covid-vaccine": ["sorted_rows"],
    "tgs-salt-identification-challenge": ["odd_rle_accepted"],
    "uw-madison-gi-tract-image-segmentation": ["positional_rows", "missing_rows_accepted", "header_only_valid",
                                               "odd_rle_accepted"],
    "vesuvius-challenge-ink-detection": ["row_order_required", "odd_rle_accepted"],
    "vinbigdata-chest-xray-abnormalities-detection": ["duplicate_ids_accepted"],
}


def test_the_looseness_table():
    found = {cid: [e.kind for e in SPECS[cid].mlebench_looseness] for cid in MLEBENCH_IDS if SPECS[cid].mlebench_looseness}
    assert found == EXPECTED
    strict = [cid for cid in MLEBENCH_IDS if not SPECS[cid].mlebench_looseness]
    assert len(strict) == 82 - len(EXPECTED)


def test_every_kind_is_used_and_documented():
    used = {e.kind for spec in SPECS.values() for e in spec.mlebench_looseness or ()}
    assert used == set(MLEBENCH_LOOSENESS_KINDS)
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    section = readme.split("### Where MLE-bench's graders are loose", 1)[1].split("\n### ", 1)[0]
    for kind in MLEBENCH_LOOSENESS_KINDS:
        assert f"`{kind}`" in section, kind


def test_notes_are_one_line_and_name_what_the_grader_does():
    for cid in MLEBENCH_IDS:
        for entry in SPECS[cid].mlebench_looseness:
            assert isinstance(entry, Looseness)
            assert "\n" not in entry.note and len(entry.note) > 20, (cid, entry.kind)


def test_to_dict_carries_the_block():
    spec = SPECS["osic-pulmonary-fibrosis-progression"]
    block = spec.to_dict()["mlebench_looseness"]
    assert [b["kind"] for b in block] == ["missing_rows_accepted", "duplicate_ids_accepted", "nan_inf_coerced",
                                          "nan_inf_coerced"]
    assert block[0]["score"] == "none" and block[1]["pairing"] == "merge"
    assert block[2]["columns"] == ["Confidence"] and block[2]["whole_score"] == {"posinf": "-inf"}
    assert SPECS["spaceship-titanic"].to_dict()["mlebench_looseness"] == []
    assert SPECS["sklearn-digits"].to_dict()["mlebench_looseness"] is None
    assert set(SPECS["smartphone-decimeter-2022"].mlebench_looseness[1].cell_kinds) == set(CELL_KINDS)


# --- errors ----------------------------------------------------------------------------------------


def _with_block(tmp_path: Path, block) -> Path:
    folder = tmp_path / "nomad2018-predict-transparent-conductors"
    shutil.copytree(COMPETITIONS / folder.name, folder, ignore=shutil.ignore_patterns("kernels"))
    config = folder / "config.yaml"
    data = yaml.safe_load(config.read_text(encoding="utf-8"))
    data["mlebench_looseness"] = block
    config.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return folder


@pytest.mark.parametrize(
    ("block", "field", "message"),
    [
        ([{"kind": "rows_shuffled", "note": "x"}], "mlebench_looseness.0.kind", "is not one of"),
        ([{"kind": "positional_rows"}], "mlebench_looseness.0", "'note' is a required property"),
        ([{"kind": "positional_rows", "note": "two\nlines"}], "mlebench_looseness.0.note", "does not match"),
        ([{"kind": "positional_rows", "note": "x", "pairing": "merge"}], "mlebench_looseness.0.pairing",
         "a positional_rows entry takes within"),
        ([{"kind": "duplicate_ids_accepted", "note": "x"}], "mlebench_looseness.0.pairing", "required"),
        ([{"kind": "labels_truncated", "note": "x", "columns": ["id"]}], "mlebench_looseness.0.columns",
         "'id' is not a target column"),
        ([{"kind": "nan_inf_coerced", "note": "x"}], "mlebench_looseness.0.fill", "names the cells"),
        ([{"kind": "nan_inf_coerced", "note": "x", "fill": {"nan": 0}, "whole_score": {"nan": 0}}],
         "mlebench_looseness.0.whole_score", "'nan' is in fill too"),
        ([{"kind": "nan_inf_coerced", "note": "x", "fill": {"nul": 0}}], "mlebench_looseness.0.fill", ""),
        ([{"kind": "positional_rows", "note": "x"}, {"kind": "positional_rows", "note": "y"}],
         "mlebench_looseness.1.kind", "listed twice"),
        ([{"kind": "header_only_valid", "note": "x", "score": "maybe"}], "mlebench_looseness.0.score", ""),
        ({"kind": "positional_rows"}, "mlebench_looseness", "is not of type 'array'"),
    ],
)
def test_bad_entries_are_config_errors_naming_file_and_field(tmp_path, block, field, message):
    folder = _with_block(tmp_path, block)
    with pytest.raises(ConfigError) as caught:
        load_competition_spec(folder)
    text = str(caught.value)
    assert str(folder / "config.yaml") in text
    assert f"field '{field}'" in text
    assert message in text


def test_nan_inf_entries_may_repeat_on_other_columns(tmp_path):
    block = [{"kind": "nan_inf_coerced", "note": "x", "columns": ["bandgap_energy_ev"], "fill": {"nan": 0.0}},
             {"kind": "nan_inf_coerced", "note": "y", "columns": ["formation_energy_ev_natom"], "whole_score": {"nan": 0.0}}]
    spec = load_competition_spec(_with_block(tmp_path, block))
    assert [e.columns for e in spec.mlebench_looseness] == [("bandgap_energy_ev",), ("formation_energy_ev_natom",)]
    block[1]["columns"] = ["bandgap_energy_ev"]
    with pytest.raises(ConfigError, match=re.escape("field 'mlebench_looseness.1.kind': nan_inf_coerced is listed twice")):
        load_competition_spec(_with_block(tmp_path / "again", block))
