"""Spooky Author Identification: MLE-bench's split of Kaggle's labelled train.csv.

Kaggle never released the labels of its test.csv, so 10 % of the 19,579 labelled excerpts
(scikit-learn ``train_test_split``, ``random_state=0``) become the held-out test set. The
answers are one-hot (EAP, HPL, MWS) and the sample submission repeats the class frequencies
Kaggle's own sample submission used. The files are byte-identical to MLE-bench's prepared data
(see checksums.yaml).
"""

from __future__ import annotations

from pathlib import Path

from sklearn.model_selection import train_test_split

from mleaudit.grading.prepare import one_hot_labels, write_prepared_csv
from mleaudit.grading.validation import read_csv

ID = "id"
TARGET = "author"
AUTHORS = ["EAP", "HPL", "MWS"]
#: The constant probabilities of Kaggle's sample submission, kept as MLE-bench keeps them.
SAMPLE_PROBABILITIES = {"EAP": 0.403493538995863, "HPL": 0.287808366106543, "MWS": 0.308698094897594}


def prepare(raw: Path, public: Path, private: Path) -> None:
    """Split ``raw/train.csv`` into public train/test/sample_submission and private answers.

    Parameters
    ----------
    raw : pathlib.Path
        Folder with Kaggle's ``train.csv`` (columns id, text, author).
    public : pathlib.Path
        Receives ``train.csv`` (17,621 rows), ``test.csv`` (1,958 rows, id and text) and
        ``sample_submission.csv`` (id, EAP, HPL, MWS).
    private : pathlib.Path
        Receives ``test.csv``: id and one-hot EAP, HPL, MWS columns, the answer key.
    """
    raw, public, private = Path(raw), Path(public), Path(private)
    labelled = read_csv(raw / "train.csv")
    kept, held_out = train_test_split(labelled, test_size=0.1, random_state=0)

    answers = one_hot_labels(held_out[[ID, TARGET]], ID, TARGET, AUTHORS)
    sample = answers.copy()
    for author, probability in SAMPLE_PROBABILITIES.items():
        sample[author] = probability

    write_prepared_csv(kept, public / "train.csv")
    write_prepared_csv(held_out.drop(columns=[TARGET]), public / "test.csv")
    write_prepared_csv(sample, public / "sample_submission.csv")
    write_prepared_csv(answers, private / "test.csv")
