"""Ids as MLE-bench's graders compare them, sort them and messages quote them."""

from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd

from mleaudit.grading.mlebench_divergence.records import SHOWN_ROWS


_KEY_SEPARATOR = "\x1f"


# --- reading ids ----------------------------------------------------------------------------------


def _text(values: pd.Series) -> pd.Series:
    """Cells as Python strings (missing cells as ``None``), index reset, object dtype."""
    missing = values.isna().to_numpy()
    cells = values.to_numpy(dtype=object)
    return pd.Series([None if gone else (cell if isinstance(cell, str) else str(cell))
                      for cell, gone in zip(cells, missing)], dtype=object)


def _id_keys(frame: pd.DataFrame, columns: Sequence[str], *, by_number: bool) -> np.ndarray | None:
    """One comparable key per row (``None`` when a column is missing).

    Ids are compared as this project's grading compares them: as text, or by number where the
    competition matches ids by number and a cell reads as one.
    """
    if not columns or any(c not in frame.columns for c in columns):
        return None
    parts = []
    for column in columns:
        values = frame[column]
        if not by_number and not values.isna().any():
            parts.append(values.astype(str).to_numpy(dtype=object))
            continue
        text = _text(values)
        if by_number:
            numbers = pd.to_numeric(text, errors="coerce")
            text = text.where(numbers.isna(), numbers.map(lambda x: repr(float(x))))
        parts.append(text.fillna("\x00").astype(str).to_numpy(dtype=object))
    if len(parts) == 1:
        return parts[0]
    return np.array([_KEY_SEPARATOR.join(p) for p in zip(*parts)], dtype=object)


class _Shown:
    """Ids of a frame's rows as the file spells them, looked up one row at a time (for messages)."""

    def __init__(self, frame: pd.DataFrame, columns: Sequence[str]) -> None:
        self._columns = [frame[c] for c in columns if c in frame.columns]

    def __getitem__(self, row: int) -> str:
        cells = []
        for values in self._columns:
            cell = values.iloc[int(row)]
            cells.append("\x00" if pd.isna(cell) else str(cell))
        return _KEY_SEPARATOR.join(cells) if cells else "\x00"


def _pandas_order(frame: pd.DataFrame, column: str) -> np.ndarray:
    """Row positions in the order ``frame.sort_values(column)`` gives when pandas read the file.

    pandas reads a column of numbers as numbers and sorts it numerically, anything else as
    text; missing ids go last. Ties keep file order (pandas' own sort does not promise one).
    """
    text = _text(frame[column])
    numbers = pd.to_numeric(text, errors="coerce")
    present = text.notna().to_numpy()
    if bool(numbers[present].notna().all()):
        keys = numbers.to_numpy(dtype=float)
        keys = np.where(present, keys, np.inf)
        return np.argsort(keys, kind="stable")
    # Text ids sort by code point, as pandas compares Python strings; missing ids go last.
    order = np.argsort(text.fillna("").to_numpy(dtype=object), kind="stable")
    return np.concatenate([order[present[order]], order[~present[order]]])


def _rows_text(positions: Sequence[int] | np.ndarray, verb: str = "") -> str:
    """``rows 1, 2, 5 (9 in all)`` for 0-based positions, with ``is``/``are`` when ``verb`` asks."""
    shown = [int(p) + 1 for p in list(positions)[:SHOWN_ROWS]]
    count = len(positions)
    text = ", ".join(map(str, shown))
    word = "row" if count == 1 else "rows"
    more = f" ({count} in all)" if count > len(shown) else ""
    tail = f" {'is' if count == 1 else 'are'}" if verb else ""
    return f"{word} {text}{more}{tail}"


def _quote(key: str) -> str:
    text = str(key).replace(_KEY_SEPARATOR, ", ")
    if text == "\x00":
        return "(empty)"
    return repr(text[:80])
