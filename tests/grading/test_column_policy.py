"""Which submission columns each MLE-bench competition tolerates beyond the ones it scores.

MLE-bench's ``grade.py`` either selects the columns it scores by name, so a submission that keeps
the sample submission's other columns (or the unnamed index column ``to_csv`` writes by default)
is graded as usual, or compares the submission's column set or shape with a fixed list and
rejects anything else. Competitions of the first kind set ``extra_columns: ignore`` in
``metric.params``; those of the second kind keep the default and reject extra columns, as
MLE-bench does.

For every competition that ignores extra columns, a small invented answer key and an imperfect
submission (the metric's property case in ``tests/fixtures/grading/metrics/cases.yaml``, renamed
to the competition's id and target columns) score the same with extra columns as without, and
the same file is rejected once ``extra_columns`` is set back to ``error``.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from mleaudit.grading import CompetitionRegistry, find_competitions_root
from mleaudit.grading.errors import ConfigError, InvalidSubmission
from mleaudit.grading.grade import score_csv
from mleaudit.grading.spec import CompetitionSpec
from mleaudit.grading.validation import check_columns
from tests.grading.competition_keys import competition_key, options_for

ROOT = find_competitions_root()
REGISTRY = CompetitionRegistry(ROOT, ROOT / ".unused")
MLEBENCH_IDS = [cid for cid in REGISTRY.ids() if not REGISTRY.get(cid).is_embedded]

#: MLE-bench graders that reject a submission with any column beyond the ones they read.
REJECTS_EXTRA_COLUMNS = {
    "freesound-audio-tagging-2019": "header must be fname then the 80 classes, in order",
    "google-quest-challenge": "exactly 31 columns",
    "h-and-m-personalized-fashion-recommendations": "column set must be {customer_id, prediction}",
    # Kaggle's KL-divergence metric checks every non-id column of the submission as a
    # probability and each row to sum to 1, so any non-zero extra column fails it.
    "hms-harmful-brain-activity-classification": "every non-id column is a probability column",
    "icecube-neutrinos-in-deep-ice": "column set must be {event_id, azimuth, zenith}",
    # All non-id columns go to roc_auc_score by position: an extra column breaks the shape.
    "jigsaw-toxic-comment-classification-challenge": "every non-id column is scored, by position",
    "leaf-classification": "column set must be id and the 99 species",
    "plant-pathology-2020-fgvc7": "column set must be image_id and the 4 classes",
    "spooky-author-identification": "shape must be (rows, 4)",
    "tgs-salt-identification-challenge": "column set must be {id, rle_mask}",
    "vesuvius-challenge-ink-detection": "each row must have exactly 2 cells",
    "whale-categorization-playground": "column set must be {Image, Id}",
}
#: Competitions whose grader's handling of other columns is not confirmed: they keep the default.
UNCONFIRMED: set[str] = set()


def _policy(spec: CompetitionSpec) -> str:
    return (spec.metric.params or {}).get("extra_columns", "error")


IGNORES_EXTRA_COLUMNS = [cid for cid in MLEBENCH_IDS if _policy(REGISTRY.get(cid)) == "ignore"]


def test_only_lenient_graders_ignore_extra_columns() -> None:
    assert len(MLEBENCH_IDS) == 82
    assert set(REJECTS_EXTRA_COLUMNS) | UNCONFIRMED <= set(MLEBENCH_IDS)
    assert not set(IGNORES_EXTRA_COLUMNS) & (set(REJECTS_EXTRA_COLUMNS) | UNCONFIRMED)
    # The 82 graders less the 12 strict ones and two lenient ones whose current
    # column handling other tests pin (lmsys-chatbot-arena's parameters, spaceship-titanic's
    # rejection of the full answers file).
    assert len(IGNORES_EXTRA_COLUMNS) >= 67


@pytest.mark.parametrize("competition_id", sorted(REJECTS_EXTRA_COLUMNS) + sorted(UNCONFIRMED))
def test_strict_graders_keep_rejecting_extra_columns(competition_id: str) -> None:
    assert _policy(REGISTRY.get(competition_id)) == "error"


def _pair(spec: CompetitionSpec, tmp_path: Path) -> tuple[Path, pd.DataFrame, dict[str, Any]]:
    """The answers file, an imperfect submission and the scoring parameters for ``spec``'s columns."""
    key = competition_key(spec)
    answers_path = tmp_path / "answers.csv"
    key.answers.to_csv(answers_path, index=False, lineterminator="\n")
    return answers_path, key.degraded, key.params


@pytest.mark.parametrize("competition_id", IGNORES_EXTRA_COLUMNS)
def test_extra_columns_are_left_out_as_mlebench_does(competition_id: str, tmp_path: Path) -> None:
    spec = REGISTRY.get(competition_id)
    answers_path, submission, params = _pair(spec, tmp_path)

    def score(path: Path, **changes: Any) -> float:
        return score_csv(
            path,
            answers_path,
            metric=spec.metric.name,
            id_column=spec.id_column,
            target_columns=spec.target_columns,
            params={**params, **changes},
        )

    plain = tmp_path / "plain.csv"
    submission.to_csv(plain, index=False, lineterminator="\n")
    # The sample submission's other columns and the unnamed index column of to_csv's default.
    extra = tmp_path / "extra.csv"
    submission.assign(note="kept from the sample", fold="3").to_csv(extra, index=True, lineterminator="\n")
    expected = score(plain)
    assert score(extra) == expected
    with pytest.raises(InvalidSubmission, match=r"^Submission has unexpected columns 'Unnamed: 0', 'note', 'fold'"):
        score(extra, extra_columns="error")


#: MLE-bench graders that read columns by position, and the order they need.
ORDERED_COLUMNS = {
    "freesound-audio-tagging-2019": "as_listed",  # header == ["fname", *CLASS_NAMES]
    "spooky-author-identification": "id_first",  # submission.iloc[:, 1:] are the authors
}


def test_only_positional_graders_check_column_order() -> None:
    orders = {cid: (REGISTRY.get(cid).metric.params or {}).get("column_order", "any") for cid in MLEBENCH_IDS}
    assert {cid: order for cid, order in orders.items() if order != "any"} == ORDERED_COLUMNS


@pytest.mark.parametrize("competition_id", sorted(ORDERED_COLUMNS))
def test_column_order_is_checked_as_mlebench_does(competition_id: str, tmp_path: Path) -> None:
    spec = REGISTRY.get(competition_id)
    answers_path, submission, params = _pair(spec, tmp_path)
    id_column, targets = spec.id_column, list(spec.target_columns)

    def score(columns: list[str], **changes: Any) -> float:
        path = tmp_path / "submission.csv"
        submission[columns].to_csv(path, index=False, lineterminator="\n")
        return score_csv(
            path, answers_path, metric=spec.metric.name, id_column=id_column, target_columns=targets,
            params={**params, **changes},
        )

    expected = score([id_column, *targets])
    # The id column last: rejected by both orders, accepted when the order is free.
    with pytest.raises(InvalidSubmission, match=rf"^Submission has column '{targets[0]}' in place 1, where '{id_column}' must be"):
        score([*targets, id_column])
    assert score([*targets, id_column], column_order="any") == expected
    # The same classes in reverse order after the id: by name for id_first, rejected for as_listed.
    reversed_classes = [id_column, *targets[::-1]]
    if ORDERED_COLUMNS[competition_id] == "id_first":
        assert score(reversed_classes) == pytest.approx(expected, abs=1e-12)
    else:
        with pytest.raises(InvalidSubmission, match=rf"in place 2, where '{targets[0]}' must be \(columns in this order: '{id_column}', '{targets[0]}', .*, \.\.\., '{re.escape(targets[-1])}': 81 columns\)\.$"):
            score(reversed_classes)
        assert score(reversed_classes, column_order="id_first") == expected


def test_check_columns_order_rules() -> None:
    frame = pd.DataFrame(columns=["b", "a", "id", "key"])
    check_columns(frame, id_column=["id", "key"], target_columns=["a", "b"])
    with pytest.raises(InvalidSubmission, match=r"^Submission has column 'b' in place 1, where 'id' must be \(the id columns come first, in this order\)\.$"):
        check_columns(frame, id_column=["id", "key"], target_columns=["a", "b"], column_order="id_first")
    ordered = pd.DataFrame(columns=["id", "key", "b", "a"])
    check_columns(ordered, id_column=["id", "key"], target_columns=["a", "b"], column_order="id_first")
    with pytest.raises(InvalidSubmission, match=r"^Submission has column 'b' in place 3, where 'a' must be \(columns in this order: 'id', 'key', 'a', 'b'\)\.$"):
        check_columns(ordered, id_column=["id", "key"], target_columns=["a", "b"], column_order="as_listed")
    # Missing and unexpected columns are named before any order.
    with pytest.raises(InvalidSubmission, match=r"^Submission is missing column 'a'"):
        check_columns(pd.DataFrame(columns=["b", "id"]), id_column="id", target_columns=["a", "b"], column_order="as_listed")
    with pytest.raises(ValueError, match="column_order must be one of"):
        check_columns(ordered, id_column=["id", "key"], target_columns=["a", "b"], column_order="sorted")


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"column_order": "sorted"}, r"'column_order' must be one of 'any', 'id_first', 'as_listed', not 'sorted'"),
        ({"column_order": "as_listed", "extra_columns": "ignore"}, r"'column_order: as_listed' admits no extra columns"),
    ],
)
def test_column_order_parameter_is_checked(params: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        options_for("accuracy", "id", ["label"], params)
