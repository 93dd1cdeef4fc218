"""The state of one emulation: MLE-bench's reading of the file, and the looseness it triggers."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from mleaudit.grading.spec import Looseness


# --- the emulation ---------------------------------------------------------------------------------


@dataclass(slots=True)
class _Trigger:
    entry: Looseness
    trigger: str
    column: str | None = None
    positions: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.intp))
    count: int = 0


@dataclass(slots=True)
class _Emulation:
    """MLE-bench's reading of the file, built step by step."""

    submission: pd.DataFrame
    answers: pd.DataFrame
    id_columns: tuple[str, ...]
    by_number: bool
    extra_ids: str
    answer_pos: np.ndarray | None = None  # answer row of each scored submission row
    submission_pos: np.ndarray | None = None
    invalid: str | None = None  # MLE-bench would reject the file: why
    uncomputed: str | None = None  # MLE-bench's score cannot be reproduced: why
    whole_score: float | None = None
    approximate: bool = False
    triggers: list[_Trigger] = field(default_factory=list)

    def reject(self, why: str) -> None:
        if self.invalid is None:
            self.invalid = why

    def give_up(self, why: str) -> None:
        if self.uncomputed is None:
            self.uncomputed = why
