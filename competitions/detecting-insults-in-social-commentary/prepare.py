"""Detecting Insults in Social Commentary: Kaggle's labelled verification set as the test set.

Kaggle published the labels of its test set (``test_with_solutions.csv``), so, as MLE-bench
does, no split is made: Kaggle's train.csv is the public training set, the labelled test file
is the private answer key, and the public test set and sample submission are derived from it.
The test comments have no id; rows are matched by Date and Comment together (some comments
repeat, each time with another date). Every file is byte-identical to MLE-bench's prepared data
when the raw files are Kaggle's originals (see checksums.yaml): the private test.csv is the raw
file copied as it is, with Kaggle's ``Usage`` column (public/private leaderboard part).
"""

from __future__ import annotations

import shutil
from pathlib import Path

from mleaudit.grading.prepare import write_prepared_csv
from mleaudit.grading.validation import read_csv

COLUMNS = ["Insult", "Date", "Comment"]


def prepare(raw: Path, public: Path, private: Path) -> None:
    """Copy and derive the public and private files from Kaggle's two labelled files.

    Parameters
    ----------
    raw : pathlib.Path
        Folder with Kaggle's ``train.csv`` (3,947 comments) and ``test_with_solutions.csv``
        (2,647 comments with their Insult label).
    public : pathlib.Path
        Receives ``train.csv`` (copied), ``test.csv`` (Date, Comment) and
        ``sample_submission_null.csv`` (Insult, Date, Comment with every Insult 0).
    private : pathlib.Path
        Receives ``test.csv`` (the labelled test file, copied) and ``gold_submission.csv``
        (Insult, Date, Comment: a perfect submission).
    """
    raw, public, private = Path(raw), Path(public), Path(private)
    shutil.copyfile(raw / "train.csv", public / "train.csv")
    shutil.copyfile(raw / "test_with_solutions.csv", private / "test.csv")

    gold = read_csv(private / "test.csv")[COLUMNS]
    write_prepared_csv(gold, private / "gold_submission.csv")
    write_prepared_csv(gold.drop(columns=["Insult"]), public / "test.csv")
    sample = gold.copy()
    sample["Insult"] = 0
    write_prepared_csv(sample, public / "sample_submission_null.csv")
