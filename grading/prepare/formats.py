"""Helpers competitions' ``prepare.py`` files use to write MLE-bench's formats byte for byte."""

from __future__ import annotations

import os

import numpy as np
import pandas as pd


def write_prepared_csv(frame: pd.DataFrame, path: str | os.PathLike[str]) -> None:
    """Write a prepared table as MLE-bench does: no index, pandas' default number formatting.

    The line terminator is fixed to ``\\n`` (pandas would use ``os.linesep``), so the bytes,
    and with them the checksums, are the same on every platform.
    """
    frame.to_csv(path, index=False, lineterminator="\n")


def one_hot_labels(frame: pd.DataFrame, id_column: str, target_column: str, classes: list[str]) -> pd.DataFrame:
    """Turn one label per row into MLE-bench's one-hot answer table.

    Parameters
    ----------
    frame : pandas.DataFrame
        Columns ``[id_column, target_column, ...]``, one row per example.
    id_column, target_column : str
        The id and the class-label columns.
    classes : list of str
        Every class, in the column order of the competition's sample submission.

    Returns
    -------
    pandas.DataFrame
        Columns ``[id_column, *classes]`` with integer 0/1 values, one 1 per row, and the
        index of ``frame`` (MLE-bench's ``df_to_one_hot`` layout).

    Raises
    ------
    ValueError
        If a label is not one of ``classes``.

    Examples
    --------
    >>> import pandas as pd
    >>> one_hot_labels(pd.DataFrame({"id": [7, 9], "y": ["b", "a"]}), "id", "y", ["a", "b"]).values.tolist()
    [[7, 0, 1], [9, 1, 0]]
    """
    position = {name: j for j, name in enumerate(classes)}
    labels = frame[target_column].tolist()
    unknown = sorted({str(label) for label in labels if label not in position})
    if unknown:
        raise ValueError(f"labels not among the {len(classes)} classes: {', '.join(unknown[:5])}")
    matrix = np.zeros((len(frame), len(classes)), dtype=np.int64)
    matrix[np.arange(len(frame)), [position[label] for label in labels]] = 1
    table = pd.DataFrame(matrix, index=frame.index, columns=list(classes))
    table.insert(0, id_column, frame[id_column])
    return table
