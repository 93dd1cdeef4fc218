"""Row keys of the id columns: one hashable text per row, composite ids joined."""

from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd


# Joins the parts of a composite id into one hashable key; a control character no CSV id holds.
_KEY_SEPARATOR = "\x1f"


def _as_tuple(columns: str | Sequence[str] | None) -> tuple[str, ...]:
    if columns is None:
        return ()
    if isinstance(columns, str):
        return (columns,)
    return tuple(columns)


def _id_keys(frame: pd.DataFrame, id_columns: Sequence[str]) -> pd.Series:
    """One text key per row: the id, or the id columns joined.

    A single id is missing when its cell is empty. A composite id is missing only when all its
    parts are: an empty part (a comment without a date) is the empty text.
    """
    first = frame[id_columns[0]]
    if len(id_columns) == 1:
        if not (pd.api.types.is_string_dtype(first.dtype) and not pd.api.types.is_object_dtype(first.dtype)):
            first = first.astype(str).where(first.notna())
        return first.reset_index(drop=True)
    parts = [frame[c] for c in id_columns]
    texts = [part.astype(str).where(part.notna(), "") for part in parts]
    keys = texts[0].str.cat(texts[1:], sep=_KEY_SEPARATOR)
    all_missing = np.logical_and.reduce([part.isna().to_numpy() for part in parts])
    return keys.where(~all_missing).reset_index(drop=True)
