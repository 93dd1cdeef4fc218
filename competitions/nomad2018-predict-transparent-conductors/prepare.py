"""Nomad2018 Predicting Transparent Conductors: MLE-bench's split of Kaggle's train.csv.

10 % of the 2,400 labelled materials (scikit-learn ``train_test_split``, ``random_state=0``)
become the held-out test set; both parts are renumbered 1, 2, ... in their split order, as
MLE-bench does, so an id says nothing about the original row. The sample submission holds the
constants MLE-bench chose (formation energy 0.1779, bandgap 1.8892). The CSV files are
byte-identical to MLE-bench's prepared data (see checksums.yaml). When the raw dir also holds
Kaggle's per-material geometry files (``train/<id>/geometry.xyz``, at any depth below
``train/``), they are copied under the new ids to ``public/train`` and ``public/test``.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
from sklearn.model_selection import train_test_split

from mleaudit.grading.prepare import write_prepared_csv
from mleaudit.grading.validation import read_csv

ID = "id"
TARGETS = ["formation_energy_ev_natom", "bandgap_energy_ev"]
SAMPLE_VALUES = {"formation_energy_ev_natom": 0.1779, "bandgap_energy_ev": 1.8892}


def _renumber(frame: pd.DataFrame) -> tuple[pd.DataFrame, dict[int, int]]:
    mapping = {old: new for new, old in enumerate(frame[ID], start=1)}
    renumbered = frame.copy()
    renumbered[ID] = renumbered[ID].map(mapping)
    return renumbered, mapping


def _copy_geometry(raw: Path, public: Path, mappings: dict[str, dict[int, int]]) -> None:
    sources = sorted((raw / "train").glob("**/geometry.xyz")) if (raw / "train").is_dir() else []
    for source in sources:
        if not source.parent.name.isdigit():
            continue
        old_id = int(source.parent.name)
        for side, mapping in mappings.items():
            if old_id in mapping:
                target = public / side / str(mapping[old_id])
                target.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(source, target / "geometry.xyz")


def prepare(raw: Path, public: Path, private: Path) -> None:
    """Split ``raw/train.csv`` into public train/test/sample_submission and private answers.

    Parameters
    ----------
    raw : pathlib.Path
        Folder with Kaggle's ``train.csv`` (2,400 materials) and, optionally, ``train/``
        geometry files.
    public : pathlib.Path
        Receives ``train.csv`` (2,160 rows with both targets), ``test.csv`` (240 rows without
        them), ``sample_submission.csv`` (id and the two targets) and geometry folders when the
        raw ones are there.
    private : pathlib.Path
        Receives ``test.csv``: the 240 held-out rows with every column, the answer key.
    """
    raw, public, private = Path(raw), Path(public), Path(private)
    labelled = read_csv(raw / "train.csv")
    kept, held_out = train_test_split(labelled, test_size=0.1, random_state=0)
    kept, train_ids = _renumber(kept)
    held_out, test_ids = _renumber(held_out)

    write_prepared_csv(kept, public / "train.csv")
    write_prepared_csv(held_out, private / "test.csv")
    write_prepared_csv(held_out.drop(columns=TARGETS), public / "test.csv")
    _copy_geometry(raw, public, {"train": train_ids, "test": test_ids})
    sample = pd.DataFrame({ID: held_out[ID], **SAMPLE_VALUES})
    write_prepared_csv(sample, public / "sample_submission.csv")
