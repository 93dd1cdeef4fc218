"""Leaf Classification: MLE-bench's split of Kaggle's labelled train.csv.

Kaggle kept the labels of its test.csv, so the held-out set is carved from the labelled
train.csv: 10 % of its 990 leaves (scikit-learn ``train_test_split``, ``random_state=0``) become
the new test set. The answers are one-hot, one column per species in the column order of
Kaggle's sample submission (the species names sorted by code point). The CSV files are
byte-identical to MLE-bench's prepared data (see checksums.yaml). When the raw dir also holds
Kaggle's ``images/`` folder, the leaf images of both sets are copied to ``public/images``.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from sklearn.model_selection import train_test_split

from mleaudit.grading.prepare import one_hot_labels, write_prepared_csv
from mleaudit.grading.validation import read_csv

ID = "id"
TARGET = "species"


def prepare(raw: Path, public: Path, private: Path) -> None:
    """Split ``raw/train.csv`` into public train/test/sample_submission and private answers.

    Parameters
    ----------
    raw : pathlib.Path
        Folder with Kaggle's ``train.csv`` (990 leaves, 192 features) and, optionally,
        ``images/<id>.jpg``.
    public : pathlib.Path
        Receives ``train.csv`` (891 rows with ``species``), ``test.csv`` (99 rows without it),
        ``sample_submission.csv`` (id and 99 species columns, each 1/99) and ``images/`` when the
        raw images are there.
    private : pathlib.Path
        Receives ``test.csv``: id and one-hot species columns, the answer key.
    """
    raw, public, private = Path(raw), Path(public), Path(private)
    labelled = read_csv(raw / "train.csv")
    kept, held_out = train_test_split(labelled, test_size=0.1, random_state=0)
    # Kaggle's sample submission orders the species by code point ("Quercus_x_..." after "Quercus_V...").
    classes = sorted(labelled[TARGET].unique())

    answers = one_hot_labels(held_out[[ID, TARGET]], ID, TARGET, classes)
    sample = answers.copy()
    sample[classes] = 1 / len(classes)

    images = raw / "images"
    if images.is_dir():
        (public / "images").mkdir(exist_ok=True)
        for leaf_id in [*kept[ID], *held_out[ID]]:
            shutil.copyfile(images / f"{leaf_id}.jpg", public / "images" / f"{leaf_id}.jpg")

    write_prepared_csv(kept, public / "train.csv")
    write_prepared_csv(answers, private / "test.csv")
    write_prepared_csv(held_out.drop(columns=[TARGET]), public / "test.csv")
    write_prepared_csv(sample, public / "sample_submission.csv")
