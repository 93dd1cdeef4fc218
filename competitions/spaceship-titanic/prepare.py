"""Spaceship Titanic: MLE-bench's split of Kaggle's labelled train.csv.

Kaggle never released the labels of its test.csv, so the held-out set is carved from the
labelled train.csv: 10 % of its rows (scikit-learn ``train_test_split``, ``random_state=0``)
become the new test set. The files are byte-identical to MLE-bench's prepared data (see
checksums.yaml): same rows, same order, pandas' default CSV formatting with ``\\n`` line ends.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from sklearn.model_selection import train_test_split

from mleaudit.grading.validation import read_csv

ID = "PassengerId"
TARGET = "Transported"


def _write(frame: pd.DataFrame, path: Path) -> None:
    # Explicit line terminator: pandas defaults to os.linesep, which would change the bytes on Windows.
    frame.to_csv(path, index=False, lineterminator="\n")


def prepare(raw: Path, public: Path, private: Path) -> None:
    """Split ``raw/train.csv`` into public train/test/sample_submission and private answers.

    Parameters
    ----------
    raw : pathlib.Path
        Folder with Kaggle's ``train.csv`` (8,693 passengers).
    public : pathlib.Path
        Receives ``train.csv`` (7,823 rows, with ``Transported``), ``test.csv`` (870 rows,
        without it) and ``sample_submission.csv`` (``PassengerId,Transported`` all ``False``).
    private : pathlib.Path
        Receives ``test.csv``: the 870 held-out rows with every column, the answer key.
    """
    labelled = read_csv(Path(raw) / "train.csv")
    kept, held_out = train_test_split(labelled, test_size=0.1, random_state=0)

    sample = held_out[[ID, TARGET]].copy()
    sample[TARGET] = False
    _write(sample, Path(public) / "sample_submission.csv")
    _write(held_out, Path(private) / "test.csv")
    _write(kept, Path(public) / "train.csv")
    _write(held_out.drop(columns=[TARGET]), Path(public) / "test.csv")
