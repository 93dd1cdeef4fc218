"""mleaudit's grades against MLE-bench's own graders, on every MLE-bench competition.

For each of the 82 competitions, :mod:`tests.grading.differential` writes a small invented
answer key and about forty submissions (perfect, random, perturbed, shuffled, re-id'd, missing,
repeated and extra rows and columns, odd cells, changed header case, header only ...), grades
each with MLE-bench's grader (its source in ``../shared/mlebench-src``, run in place by
``scripts/mlebench_grade.py`` in ``.venv-mlebench``, the environment ``.ci/run`` builds with the
library versions MLE-bench pins) and with mleaudit, and compares validity and the score rounded
as both report it (to 1e-6).

Every disagreement must be either

- one of the deliberate deviations listed in README.md's table "Deliberate deviations from
  MLE-bench's graders" (the table's rows name the competitions and differential cases), or
- MLE-bench's grader being loose where the competition's config says so: the audit's
  :func:`mleaudit.grading.mlebench_divergence.find_mlebench_divergences` then finds the divergence in
  the file and reports it (rule ``grade-mlebench-divergence``).

Where the divergence record emulates MLE-bench's score exactly, it must be MLE-bench's score.
The test is skipped, with the reason, when MLE-bench's source or its environment is absent.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from mleaudit.grading import CompetitionRegistry, find_competitions_root
from mleaudit.grading.mlebench_divergence import find_mlebench_divergences
from tests.grading.differential.compare import Outcome, differential

REPO = Path(__file__).resolve().parents[2]
ROOT = find_competitions_root()
REGISTRY = CompetitionRegistry(ROOT, ROOT / ".unused")
MLEBENCH_IDS = [cid for cid in REGISTRY.ids() if not REGISTRY.get(cid).is_embedded]
MLEBENCH_SRC = Path(os.environ.get("MLEAUDIT_MLEBENCH_SRC", REPO.parent / "shared" / "mlebench-src"))
MLEBENCH_PYTHON = Path(os.environ.get("MLEAUDIT_MLEBENCH_PYTHON", REPO / ".venv-mlebench" / "bin" / "python"))
#: What MLE-bench's graders import besides the standard library and its own package.
GRADER_IMPORTS = "numpy, pandas, sklearn, scipy, yaml, tqdm, py7zr, Levenshtein, pycocotools, pyquaternion, shapely"
TABLE_TITLE = "### Deliberate deviations from MLE-bench's graders"


def deviation_table(readme: Path = REPO / "README.md") -> list[tuple[set[str], set[str]]]:
    """The README's deviations table: per row, the competitions and the differential cases it covers."""
    text = readme.read_text(encoding="utf-8")
    assert TABLE_TITLE in text, f"README.md has no section {TABLE_TITLE!r}"
    section = text.split(TABLE_TITLE, 1)[1]
    rows = []
    for line in section.splitlines():
        if line.startswith("#"):
            break
        if not line.startswith("|") or set(line) <= set("|- "):
            continue
        cells = [c.strip() for c in line.strip("|").split("|")]
        if cells[0].lower().startswith("competition"):
            continue
        competitions = set(re.findall(r"`([^`]+)`", cells[0]))
        cases = set(re.findall(r"`([^`]+)`", cells[1]))
        assert competitions and cases, f"README deviation row names no competition or case: {line}"
        rows.append((competitions, cases))
    assert rows, "README's deviation table is empty"
    return rows


def _covered(outcome: Outcome, table: list[tuple[set[str], set[str]]]) -> bool:
    return any(outcome.competition in comps and outcome.mutation in cases for comps, cases in table)


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory: pytest.TempPathFactory) -> list[Outcome]:
    if not (MLEBENCH_SRC / "mlebench" / "grade_helpers.py").is_file():
        pytest.skip(f"MLE-bench's grading code is not available at {MLEBENCH_SRC} (set MLEAUDIT_MLEBENCH_SRC)")
    if not MLEBENCH_PYTHON.is_file():
        pytest.skip(
            f"no Python with MLE-bench's pinned grader libraries at {MLEBENCH_PYTHON} "
            "(.ci/run builds .venv-mlebench from scripts/mlebench-grader-requirements.txt; or set MLEAUDIT_MLEBENCH_PYTHON)"
        )
    probe = subprocess.run(
        [str(MLEBENCH_PYTHON), "-c", f"import {GRADER_IMPORTS}"], capture_output=True, text=True, timeout=120, check=False
    )
    if probe.returncode != 0:
        pytest.skip(f"{MLEBENCH_PYTHON} lacks a library MLE-bench's graders import: {probe.stderr.strip()[-300:]}")
    return differential(REGISTRY, MLEBENCH_IDS, tmp_path_factory.mktemp("differential"), MLEBENCH_PYTHON, MLEBENCH_SRC)


@pytest.fixture(scope="module")
def divergences(outcomes: list[Outcome]) -> dict[Path, object]:
    """The audit's divergence check of every file the two graders disagree on."""
    checks = {}
    for outcome in outcomes:
        if outcome.agree:
            continue
        spec = REGISTRY.get(outcome.competition)
        data_dir = outcome.path.parent / "data"
        checks[outcome.path] = find_mlebench_divergences(outcome.path, spec, spec.answers_path(data_dir))
    return checks


def test_every_competition_and_case_is_graded(outcomes: list[Outcome]) -> None:
    assert {o.competition for o in outcomes} == set(MLEBENCH_IDS)
    per_competition = Counter(o.competition for o in outcomes)
    assert min(per_competition.values()) >= 30
    # Both graders score the perfect file everywhere (it is the key itself).
    perfect = [o for o in outcomes if o.mutation == "perfect"]
    assert all(o.mleaudit.valid and o.mlebench.valid for o in perfect), [o.describe() for o in perfect if not o.agree]


def test_disagreements_are_deviations_or_reported_looseness(outcomes: list[Outcome], divergences: dict) -> None:
    table = deviation_table()
    unexplained = [
        o.describe()
        for o in outcomes
        if not o.agree and not _covered(o, table) and not divergences[o.path].records
    ]
    agreed = sum(o.agree for o in outcomes)
    assert not unexplained, (
        f"{len(unexplained)} disagreements with MLE-bench's graders are neither in README's deviation table nor "
        f"found as MLE-bench looseness ({agreed} of {len(outcomes)} files agree):\n" + "\n".join(unexplained)
    )


def test_every_documented_deviation_still_occurs(outcomes: list[Outcome]) -> None:
    disagreeing = {(o.competition, o.mutation) for o in outcomes if not o.agree}
    stale = [
        (sorted(comps), sorted(cases))
        for comps, cases in deviation_table()
        if not any((c, m) in disagreeing for c in comps for m in cases)
    ]
    assert not stale, f"README deviation rows that no longer match a disagreement: {stale}"
    named = {c for comps, _ in deviation_table() for c in comps}
    assert named <= set(MLEBENCH_IDS), f"unknown competitions in README's deviation table: {sorted(named - set(MLEBENCH_IDS))}"


def test_emulated_mlebench_grades_are_mlebench_s(outcomes: list[Outcome], divergences: dict) -> None:
    wrong = []
    for outcome in outcomes:
        check = divergences.get(outcome.path)
        if check is None:
            continue
        for record in check.records:
            if record.score_basis != "exact" or record.mlebench_valid is None:
                continue
            theirs = outcome.mlebench
            if record.mlebench_valid != theirs.valid:
                wrong.append(f"{outcome.describe()} | emulated valid={record.mlebench_valid} ({record.kind})")
            elif theirs.valid and record.mlebench_score is not None and not _close(record.mlebench_score, theirs.score):
                wrong.append(f"{outcome.describe()} | emulated {record.mlebench_score!r} ({record.kind})")
    assert not wrong, "emulated MLE-bench grades that are not MLE-bench's:\n" + "\n".join(wrong)


def _close(ours: float, theirs: float | None) -> bool:
    if theirs is None:
        return False
    if ours != ours or theirs != theirs:  # NaN
        return ours != ours and theirs != theirs
    return ours == theirs or abs(round(ours, 5) - theirs) <= 1e-6
