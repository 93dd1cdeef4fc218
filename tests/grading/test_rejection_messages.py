"""Every rejection says where the file is wrong: the column, and for a cell or row the first bad row.

The differential test's submissions (:mod:`tests.grading.differential`: about forty per MLE-bench
competition, with odd cells, bad ids, missing and extra rows and columns) are graded by
mleaudit alone here, so this runs without MLE-bench's environment. Each rejection must carry a
known reason code, and

- a reason about a cell or a row (a bad value, an id) names the column (for cells) and the first
  bad row, in the message and in the exception's ``column``/``row`` attributes (a whole column
  without a value names the column only);
- a reason about columns names the column;
- a row-count or missing-ids reason names the first missing test id, or says no row holds one.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from mleaudit.grading import CompetitionRegistry, find_competitions_root
from mleaudit.grading.errors import REASONS, InvalidSubmission, UndefinedScore
from mleaudit.grading.grade import score_submission
from tests.grading.differential.keys import write_key
from tests.grading.differential.mutations import mutations

ROOT = find_competitions_root()
REGISTRY = CompetitionRegistry(ROOT, ROOT / ".unused")
MLEBENCH_IDS = [cid for cid in REGISTRY.ids() if not REGISTRY.get(cid).is_embedded]
CELL_REASONS = {"bad-value", "missing-value", "non-finite", "unknown-label", "incomparable", "row-sum"}
ROW_REASONS = {"empty-id", "duplicate-id", "unknown-id"}
COLUMN_REASONS = {"missing-column", "extra-column", "duplicate-column", "column-order"}


def _problems(error: InvalidSubmission) -> list[str]:
    message, reason = str(error), error.reason
    if reason not in REASONS:
        return [f"unknown reason {reason!r}"]
    problems = []
    if reason in CELL_REASONS | ROW_REASONS and not (reason == "missing-value" and "no value in any" in message):
        if error.row is None or not re.search(rf"\brows? (\d+ and )?{error.row}\b", message):
            problems.append(f"names no first bad row (row={error.row})")
    if reason in CELL_REASONS | COLUMN_REASONS:
        if error.column is None or repr(error.column) not in message:
            problems.append(f"names no column (column={error.column!r})")
    if reason in ("row-count", "missing-ids") and not (
        re.search(r"\bid:? [('\"]", message) or "no rows with test ids" in message
    ):
        problems.append("names no missing id")
    return problems


@pytest.mark.parametrize("competition_id", MLEBENCH_IDS)
def test_rejections_name_column_and_first_bad_row(competition_id: str, tmp_path: Path) -> None:
    spec = REGISTRY.get(competition_id)
    key = write_key(spec, tmp_path / "data")
    vague = []
    for mutation, content in mutations(spec, key.perfect, key.degraded):
        path = tmp_path / f"{mutation}.csv"
        path.write_bytes(content)
        try:
            score_submission(path, spec, tmp_path / "data")
        except UndefinedScore:
            continue
        except InvalidSubmission as error:
            vague += [f"{mutation}: {problem}: {error}" for problem in _problems(error)]
    assert not vague, "\n".join(vague)
