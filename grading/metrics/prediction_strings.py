"""Prediction strings read as groups of tokens, numbers parsed, a malformed string named by row and id."""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import pandas as pd

from mleaudit.grading.errors import ConfigError
from mleaudit.grading.metrics.base import invalid_cell


def _cells(values: pd.Series) -> list[str]:
    return values.fillna("").astype(str).tolist()


def _groups(
    text: str,
    size: int,
    numeric: Sequence[int],
    *,
    where: tuple[pd.DataFrame, int, str] | None,
    what: str,
    single_spaced: bool = False,
) -> list[list[Any]]:
    """Split a prediction string into groups of ``size`` tokens, converting ``numeric`` positions.

    ``single_spaced`` (predictions only): tokens must be separated by single spaces, as MLE-bench's
    graders that split on ``" "`` read them (kuzushiji, vinbigdata, the Lyft 3D boxes): a
    leading, trailing or repeated space there makes an empty token, which they refuse.
    """

    def fail(problem: str) -> Exception:
        if where is None:
            return ConfigError(f"{what}: an answer cell has {problem}")
        frame, position, column = where
        return invalid_cell(frame, position, column, problem)

    if single_spaced and where is not None and text and "" in text.split(" "):
        raise fail("a prediction string with a leading, trailing or repeated space (tokens are separated by single spaces)")
    tokens = text.split()
    if not tokens:
        return []

    if len(tokens) % size:
        raise fail(f"a prediction string of {len(tokens)} tokens, not a multiple of {size} per object")
    groups = []
    for i in range(0, len(tokens), size):
        group: list[Any] = tokens[i : i + size]
        for j in numeric:
            try:
                value = float(group[j])
            except ValueError:
                raise fail(f"a prediction string with {group[j]!r} where a number is expected") from None
            if not np.isfinite(value):
                raise fail(f"a prediction string with the non-finite number {group[j]!r}")
            group[j] = value
        groups.append(group)
    return groups
