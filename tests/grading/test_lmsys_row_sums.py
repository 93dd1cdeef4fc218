"""LMSYS Chatbot Arena: a row's probabilities are accepted exactly when MLE-bench's grader accepts them.

MLE-bench's grader requires ``submission[classes].sum(axis=1).round(6).eq(1)``; the competition
config expresses that as ``row_sum_tolerance: 5e-7``. The rows tried here lie on both sides of
the two boundaries, down to the last representable sum.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from mleaudit.grading import CompetitionRegistry, find_competitions_root
from mleaudit.grading.errors import InvalidSubmission
from mleaudit.grading.grade import score_frames

CID = "lmsys-chatbot-arena"
CLASSES = ["winner_model_a", "winner_model_b", "winner_tie"]
SPEC = CompetitionRegistry(find_competitions_root(), find_competitions_root() / ".unused").get(CID)
ANSWERS = pd.DataFrame(
    {"id": ["30192", "53567"], "winner_model_a": [1, 0], "winner_model_b": [0, 0], "winner_tie": [0, 1]}
)


def mlebench_accepts(row: list[float]) -> bool:
    return bool(pd.DataFrame([row], columns=CLASSES).sum(axis=1).round(6).eq(1).all())


def last_accepted(inside: float, outside: float) -> float:
    """The accepted sum next to the refused ones, between an accepted and a refused sum.

    Bisects over the bit patterns of positive floats, which are ordered as the floats are.
    """
    accepted, refused = np.float64(inside).view(np.int64), np.float64(outside).view(np.int64)
    while abs(int(refused) - int(accepted)) > 1:
        middle = np.int64((int(accepted) + int(refused)) // 2)
        if mlebench_accepts(row_summing_to(float(middle.view(np.float64)))):
            accepted = middle
        else:
            refused = middle
    return float(accepted.view(np.float64))


def row_summing_to(total: float) -> list[float]:
    # total - 0.5 is exact near 1 (Sterbenz), so the row sums to total exactly, in any order.
    return [total - 0.5, 0.5, 0.0]


def submission(row: list[float]) -> pd.DataFrame:
    return pd.DataFrame([["30192", *row], ["53567", 0.2, 0.3, 0.5]], columns=["id", *CLASSES])


def score(row: list[float], params: dict | None) -> float:
    return score_frames(
        submission(row), ANSWERS, metric=SPEC.metric.name, id_column=SPEC.id_column,
        target_columns=SPEC.target_columns, params=params,
    )


HIGH = last_accepted(1 + 4e-7, 1 + 6e-7)
LOW = last_accepted(1 - 4e-7, 1 - 6e-7)
SUMS = [
    1.0, HIGH, float(np.nextafter(HIGH, 2.0)), LOW, float(np.nextafter(LOW, 0.0)),
    1 + 4e-7, 1 - 4e-7, 1 + 6e-7, 1 - 6e-7, 1 + 1e-5, 1 - 1e-5,
]


def test_the_config_sets_mlebench_s_tolerance() -> None:
    assert SPEC.metric.name == "multi-class-log-loss"
    assert dict(SPEC.metric.params) == {"row_sum_tolerance": 5e-7, "extra_columns": "ignore", "id_match": "number"}


@pytest.mark.parametrize("total", SUMS)
def test_a_row_is_valid_exactly_when_mlebench_accepts_it(total: float) -> None:
    row = row_summing_to(total)
    assert sum(row) == total
    if mlebench_accepts(row):
        assert np.isfinite(score(row, SPEC.metric.params))
    else:
        message = r"sum to .* at row 1 \(id '30192'\); each row must sum to 1 \(within 5e-07\)"
        with pytest.raises(InvalidSubmission, match=message):
            score(row, SPEC.metric.params)


def test_the_boundaries_are_those_of_rounding_to_six_decimals() -> None:
    assert HIGH - 1 <= 5e-7 < float(np.nextafter(HIGH, 2.0)) - 1
    assert 1 - LOW <= 5e-7 < 1 - float(np.nextafter(LOW, 0.0))
    # The label's own tolerance, np.isclose's, would accept rows MLE-bench refuses here.
    row = row_summing_to(1 + 6e-7)
    assert not mlebench_accepts(row)
    assert np.isfinite(score(row, None))
