"""Competitions built from data shipped inside scikit-learn, for offline use and tests.

These competitions never ran on Kaggle: their data comes from ``sklearn.datasets`` (no
download, no ``--raw``), their split is fixed by a seed, and their leaderboards are made by
training documented baseline models (``scripts/make_reference_leaderboard.py``). They follow
the same public/private layout as Kaggle competitions so every grading path can be exercised
without Kaggle files.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.model_selection import train_test_split

__all__ = ["EMBEDDED_TEST_SIZE", "EMBEDDED_SEED", "integral_to_int", "write_csv", "write_embedded_split"]

#: Share of rows held out as the private test set.
EMBEDDED_TEST_SIZE = 0.2
#: Seed of the split (and of every baseline), so prepared bytes are reproducible.
EMBEDDED_SEED = 0


def integral_to_int(frame: pd.DataFrame) -> pd.DataFrame:
    """Cast float columns whose values are all whole numbers to int64 (``5`` rather than ``5.0``)."""
    out = frame.copy()
    for column in out.columns:
        values = out[column].to_numpy()
        if np.issubdtype(values.dtype, np.floating) and np.all(np.isfinite(values)) and np.all(values == np.round(values)):
            out[column] = values.astype(np.int64)
    return out


def write_csv(frame: pd.DataFrame, path: Path) -> None:
    """Write a CSV without the index and with ``\\n`` line ends on every platform."""
    frame.to_csv(path, index=False, lineterminator="\n")


def write_embedded_split(
    frame: pd.DataFrame,
    *,
    id_column: str,
    target_column: str,
    sample_value: object,
    public: Path,
    private: Path,
    stratify: bool = False,
) -> None:
    """Split a labelled table into MLE-bench's public and private files.

    Parameters
    ----------
    frame : pandas.DataFrame
        Columns ``[id_column, *features, target_column]``, one row per example.
    id_column, target_column : str
        Names of the id and label columns.
    sample_value : object
        The constant prediction written in ``sample_submission.csv``.
    public : pathlib.Path
        Receives ``train.csv`` (with the target), ``test.csv`` (without it) and
        ``sample_submission.csv`` (``[id_column, target_column]``).
    private : pathlib.Path
        Receives ``test.csv`` with ``[id_column, target_column]``: the answer key.
    stratify : bool
        Keep class proportions in both parts (classification).
    """
    train, test = train_test_split(
        frame,
        test_size=EMBEDDED_TEST_SIZE,
        random_state=EMBEDDED_SEED,
        stratify=frame[target_column] if stratify else None,
    )
    sample = test[[id_column]].copy()
    sample[target_column] = sample_value
    write_csv(train, Path(public) / "train.csv")
    write_csv(test.drop(columns=[target_column]), Path(public) / "test.csv")
    write_csv(sample, Path(public) / "sample_submission.csv")
    write_csv(test[[id_column, target_column]], Path(private) / "test.csv")
