"""Properties every registered metric keeps, through the whole scoring path (files to score).

Each registry entry (every function and every MLE-bench label) has a case in
``tests/fixtures/grading/metrics/cases.yaml``: a small invented answer key, a perfect and a
degraded submission. For each case: the perfect submission scores the metric's best; row order
does not change a score; the degraded submission scores worse in the declared direction; a
wrong id, a missing row or an unexpected column makes the submission invalid with a message
naming the row or column.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import yaml

from mleaudit.grading.errors import InvalidSubmission
from mleaudit.grading.grade import score_csv
from mleaudit.grading.metrics import METRICS

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "grading" / "metrics"
CASES: list[dict[str, Any]] = yaml.safe_load((FIXTURES / "cases.yaml").read_text(encoding="utf-8"))
CASE_IDS = [case["metric"] for case in CASES]


def _answers(case: dict[str, Any]) -> Path:
    return FIXTURES / case["folder"] / case.get("answers", "answers.csv")


def _read(path: Path) -> pd.DataFrame:
    # Everything as text, so a rewritten file keeps each cell's exact spelling.
    return pd.read_csv(path, dtype=str, keep_default_na=False)


def _write(frame: pd.DataFrame, path: Path) -> Path:
    frame.to_csv(path, index=False, lineterminator="\n")
    return path


def _id_columns(case: dict[str, Any]) -> list[str]:
    metric = METRICS[case["metric"]]
    params = {**metric.defaults, **case.get("params", {})}
    return list(params.get("id_columns", [case["id_column"]]))


def _perfect(case: dict[str, Any], tmp_path: Path) -> Path:
    if "perfect" in case:
        return FIXTURES / case["folder"] / case["perfect"]
    answers = _read(_answers(case))
    metric = METRICS[case["metric"]]
    mapping = {**metric.defaults, **case.get("params", {})}.get("answer_columns", {})
    columns = {}
    for column in _id_columns(case):
        columns[column] = answers[column]
    for target in case["target_columns"]:
        columns[target] = answers[mapping.get(target, target)]
    return _write(pd.DataFrame(columns), tmp_path / "perfect.csv")


def _score(case: dict[str, Any], submission: Path) -> float:
    return score_csv(
        submission,
        _answers(case),
        metric=case["metric"],
        id_column=case["id_column"],
        target_columns=case["target_columns"],
        params=case.get("params"),
    )


def test_every_registered_metric_has_a_case() -> None:
    assert sorted(set(CASE_IDS)) == sorted(METRICS)
    assert len(CASE_IDS) == len(set(CASE_IDS))


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_perfect_submission_scores_best(case: dict[str, Any], tmp_path: Path) -> None:
    metric = METRICS[case["metric"]]
    expected = case.get("perfect_score", metric.best)
    # 1e-7: the arccos of a rounded dot product of equal unit vectors is ~1e-8 (mean angular error).
    assert _score(case, _perfect(case, tmp_path)) == pytest.approx(expected, abs=1e-7)


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_degraded_submission_scores_worse(case: dict[str, Any], tmp_path: Path) -> None:
    metric = METRICS[case["metric"]]
    perfect = _score(case, _perfect(case, tmp_path))
    degraded = _score(case, FIXTURES / case["folder"] / case["degraded"])
    assert math.isfinite(degraded)
    assert (degraded < perfect) if metric.higher_is_better else (degraded > perfect)


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
@pytest.mark.parametrize("which", ["perfect", "degraded"])
def test_row_order_does_not_matter(case: dict[str, Any], which: str, tmp_path: Path) -> None:
    path = _perfect(case, tmp_path) if which == "perfect" else FIXTURES / case["folder"] / case["degraded"]
    frame = _read(path)
    reversed_rows = _write(frame.iloc[::-1], tmp_path / "reversed.csv")
    shuffled = _write(frame.sample(frac=1.0, random_state=7), tmp_path / "shuffled.csv")
    score = _score(case, path)
    assert _score(case, reversed_rows) == pytest.approx(score, rel=1e-12, abs=1e-12)
    assert _score(case, shuffled) == pytest.approx(score, rel=1e-12, abs=1e-12)


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_wrong_id_is_invalid(case: dict[str, Any], tmp_path: Path) -> None:
    frame = _read(FIXTURES / case["folder"] / case["degraded"])
    id_column = _id_columns(case)[0]
    frame.loc[frame.index[1], id_column] = "not-a-test-id"
    with pytest.raises(InvalidSubmission, match=r"'not-a-test-id'|not-a-test-id|no row for id|missing id"):
        _score(case, _write(frame, tmp_path / "wrong_id.csv"))


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_missing_row_is_invalid(case: dict[str, Any], tmp_path: Path) -> None:
    frame = _read(_perfect(case, tmp_path))
    with pytest.raises(InvalidSubmission, match=r"expected \d+ \(one per test id\)|no row for id"):
        _score(case, _write(frame.iloc[1:], tmp_path / "short.csv"))


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_repeated_row_is_invalid(case: dict[str, Any], tmp_path: Path) -> None:
    frame = _read(_perfect(case, tmp_path))
    repeated = pd.concat([frame, frame.iloc[[0]]], ignore_index=True)
    with pytest.raises(InvalidSubmission, match=rf"^Submission repeats id .* at rows 1 and {len(frame) + 1}\.$"):
        _score(case, _write(repeated, tmp_path / "repeated.csv"))


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_unexpected_column_is_invalid(case: dict[str, Any], tmp_path: Path) -> None:
    frame = _read(_perfect(case, tmp_path)).assign(extra="x")
    with pytest.raises(InvalidSubmission, match=r"^Submission has unexpected column 'extra'"):
        _score(case, _write(frame, tmp_path / "extra.csv"))
