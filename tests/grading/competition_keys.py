"""Small invented answer keys and submissions in any competition's columns.

Each registered metric has a property case in ``tests/fixtures/grading/metrics/cases.yaml``: a
small answer key, a perfect and a degraded submission in the case's own columns. For a
competition, :func:`competition_key` renames the case's id and target columns to the
competition's, moves numbers into its value range, and sets its row mask and unscored columns,
so the three files are shaped as the competition's answers file and submissions are.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from mleaudit.grading.metrics import METRICS, SCORING_PARAMS
from mleaudit.grading.spec import CompetitionSpec
from mleaudit.grading.validation import ScoringOptions, scoring_options

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "grading" / "metrics"
CASES: dict[str, dict[str, Any]] = {
    case["metric"]: case for case in yaml.safe_load((FIXTURES / "cases.yaml").read_text(encoding="utf-8"))
}


@dataclass
class CompetitionKey:
    """An answer key and two submissions for one competition, every cell as text.

    Attributes
    ----------
    answers : pandas.DataFrame
        The answers file's columns.
    perfect, degraded : pandas.DataFrame
        A submission equal to the answers, and a plausible imperfect one.
    params : dict
        The scoring parameters that go with the three (the competition's, plus the case's own
        where the competition has none: identity columns of the small key ...).
    """

    answers: pd.DataFrame
    perfect: pd.DataFrame
    degraded: pd.DataFrame
    params: dict[str, Any] = field(default_factory=dict)


def options_for(metric_name: str, id_column: Any, target_columns: Any, params: dict[str, Any]) -> ScoringOptions:
    """The resolved scoring options of a metric for the given columns and parameters."""
    return scoring_options(METRICS[metric_name], id_column=id_column, target_columns=target_columns, params=params)[0]


def read_text_csv(path: Path) -> pd.DataFrame:
    """A CSV with every cell as its exact text (no NA conversion)."""
    return pd.read_csv(path, dtype=str, keep_default_na=False)


def _renamed(frame: pd.DataFrame, ids: dict[str, str], targets: list[tuple[str, str]], old: list[str]) -> pd.DataFrame:
    """``frame`` with its id columns renamed and its target columns ``old`` replaced by ``targets``.

    ``targets`` pairs each new column with the case column whose values it takes; a case column
    may feed several new ones (a case with one class column, a competition with eleven) or none.
    """
    kept = frame.drop(columns=[c for c in old if c in frame.columns]).rename(columns=ids)
    assert not {new for new, _ in targets} & set(kept.columns)
    return kept.assign(**{new: frame[source] for new, source in targets})


def _class_probabilities(ids: str, classes: list[str]) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """An answer key with one class per row (each class once), its perfect submission, and rows of
    probabilities summing to 1 where half the rows put most weight on the true class, half on the next.
    """
    n = len(classes)
    rest = 0.5 / (n - 1)
    keys = [f"row{i:03d}" for i in range(n)]
    answers = pd.DataFrame({ids: keys, **{c: [str(int(i == j)) for i in range(n)] for j, c in enumerate(classes)}})
    top = [i if i % 2 == 0 else (i + 1) % n for i in range(n)]
    degraded = pd.DataFrame({ids: keys, **{c: [str(0.5 if top[i] == j else rest) for i in range(n)] for j, c in enumerate(classes)}})
    return answers, answers.copy(), degraded


def _case_perfect(case: dict[str, Any], key: pd.DataFrame, case_options: ScoringOptions) -> pd.DataFrame:
    if "perfect" in case:
        return read_text_csv(FIXTURES / case["folder"] / case["perfect"])
    columns = {c: key[c] for c in case_options.id_columns}
    for target, answer in zip(case_options.target_columns, case_options.answer_target_columns):
        columns[target] = key[answer]
    return pd.DataFrame(columns)


def competition_key(spec: CompetitionSpec) -> CompetitionKey:
    """Answers, a perfect and a degraded submission shaped as ``spec``'s files.

    Parameters
    ----------
    spec : CompetitionSpec
        The competition; its metric must have a property case.

    Returns
    -------
    CompetitionKey
        Text frames; ``perfect`` scores the metric's best (or the case's ``perfect_score``).
    """
    case = CASES[spec.metric.name]
    # The case's own metric parameters (identity columns of its small key ...), then the competition's.
    params = {k: v for k, v in case.get("params", {}).items() if k not in SCORING_PARAMS}
    params.update(spec.metric.params or {})
    case_options = options_for(case["metric"], case["id_column"], case["target_columns"], case.get("params", {}))
    options = options_for(spec.metric.name, spec.id_column, spec.target_columns, params)
    if options.row_sum_tolerance is not None and len(options.target_columns) != len(case_options.target_columns):
        answers, perfect, degraded = _class_probabilities(options.id_columns[0], list(options.target_columns))
    else:
        assert len(options.id_columns) == len(case_options.id_columns)
        ids = dict(zip(case_options.id_columns, options.id_columns))
        m = len(case_options.target_columns)
        answer_targets = [
            (new, case_options.answer_target_columns[j % m]) for j, new in enumerate(options.answer_target_columns)
        ]
        submission_targets = [(new, case_options.target_columns[j % m]) for j, new in enumerate(options.target_columns)]
        key = read_text_csv(FIXTURES / case["folder"] / case.get("answers", "answers.csv"))
        # Some targets have no answer column (osic's Confidence).
        answers = _renamed(
            key,
            ids,
            [(new, source) for new, source in answer_targets if source in key.columns],
            list(case_options.answer_target_columns),
        )
        old_targets = list(case_options.target_columns)
        perfect = _renamed(_case_perfect(case, key, case_options), ids, submission_targets, old_targets)
        degraded = _renamed(
            read_text_csv(FIXTURES / case["folder"] / case["degraded"]), ids, submission_targets, old_targets
        )
    if options.value_range is not None:
        # The case's numbers, moved linearly into the competition's range (all files alike).
        low, high = options.value_range
        columns = [c for c in options.target_columns if c in degraded.columns]
        answer_columns = [options.answer_columns.get(c, c) for c in columns]
        values = pd.concat(
            [degraded[columns].astype(float), answers[answer_columns].astype(float).set_axis(columns, axis=1)]
        )
        least, most = float(values.min().min()), float(values.max().max())

        def moved(frame: pd.DataFrame, names: list[str]) -> dict[str, pd.Series]:
            if not math.isfinite(high - low):  # a half-open range: shifted above its bound only
                return {c: (frame[c].astype(float) + max(0.0, low - least)).map(repr) for c in names}
            return {c: (low + (frame[c].astype(float) - least) / (most - least) * (high - low)).map(repr) for c in names}

        degraded = degraded.assign(**moved(degraded, columns))
        perfect = perfect.assign(**moved(perfect, columns))
        answers = answers.assign(**moved(answers, answer_columns))
    if options.missing_values == "error":
        # No empty predictions where the grader rejects them: such a cell takes its answer.
        id_column = options.id_columns[0]
        for column, answer_column in zip(options.target_columns, options.answer_target_columns):
            if answer_column not in answers.columns:  # one answer row per box: no cell to copy
                continue
            truth = answers.drop_duplicates(id_column).set_index(id_column)[answer_column]
            for frame in (degraded, perfect):
                empty = frame[column] == ""
                frame.loc[empty, column] = frame.loc[empty, id_column].map(truth)
    if options.row_mask is not None:
        # Every answer row is scored but the last.
        column, value = options.row_mask
        other = (not value) if isinstance(value, bool) else value + 1
        if options.row_mask_equals:
            answers[column] = [str(value)] * (len(answers) - 1) + [str(other)]
        else:
            answers[column] = [str(other)] * (len(answers) - 1) + [str(value)]
    for column in options.unscored_columns:
        degraded[column] = "0.5"
        perfect[column] = "0.5"
    return CompetitionKey(answers=answers, perfect=perfect, degraded=degraded, params=params)
