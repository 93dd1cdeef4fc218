"""Grade every mutation with MLE-bench's grader and with mleaudit, and compare the two.

MLE-bench's graders run through ``scripts/mlebench_grade.py`` in a Python that holds the
libraries MLE-bench pins (one subprocess for all jobs); mleaudit's through
:func:`mleaudit.grading.grade.score_submission`, the path of ``mleaudit grade``. Both round a score to
five decimals; two grades agree when both reject the file, or both score it within ``1e-6``
(NaN with NaN, an infinity with the same infinity).
"""

from __future__ import annotations

import json
import math
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from mleaudit.grading.errors import InvalidSubmission, UndefinedScore
from mleaudit.grading.grade import round_score, score_submission
from mleaudit.grading.registry import CompetitionRegistry
from mleaudit.grading.spec import CompetitionSpec
from tests.grading.differential.keys import write_key
from tests.grading.differential.mutations import mutations

REPO = Path(__file__).resolve().parents[3]
RUNNER = REPO / "scripts" / "mlebench_grade.py"
TOLERANCE = 1e-6


@dataclass(frozen=True)
class Grade:
    """One grader's verdict on one file: ``score`` is None when the file is rejected."""

    score: float | None
    message: str | None = None

    @property
    def valid(self) -> bool:
        return self.score is not None


@dataclass(frozen=True)
class Outcome:
    """Both graders' verdicts on one competition's mutation."""

    competition: str
    mutation: str
    path: Path
    mleaudit: Grade
    mlebench: Grade

    @property
    def agree(self) -> bool:
        ours, theirs = self.mleaudit.score, self.mlebench.score
        if ours is None or theirs is None:
            return ours is None and theirs is None
        if math.isnan(ours) or math.isnan(theirs) or math.isinf(ours) or math.isinf(theirs):
            return (math.isnan(ours) and math.isnan(theirs)) or ours == theirs
        return abs(ours - theirs) <= TOLERANCE

    def describe(self) -> str:
        def side(grade: Grade) -> str:
            return f"{grade.score!r}" if grade.valid else f"rejected ({(grade.message or '')[:160]})"

        return f"{self.competition} {self.mutation}: mleaudit {side(self.mleaudit)}; MLE-bench {side(self.mlebench)}"


def _number(value: object) -> float | None:
    if value is None:
        return None
    return float(value)  # "nan", "inf" and "-inf" included


def grade_with_mleaudit(path: Path, spec: CompetitionSpec, data_dir: Path) -> Grade:
    """mleaudit's grade of one file, rounded to five decimals as its grading report is."""
    try:
        score = score_submission(path, spec, data_dir)
    except UndefinedScore as exc:  # a valid file whose metric is undefined: MLE-bench's would be NaN
        return Grade(math.nan, str(exc))
    except InvalidSubmission as exc:
        return Grade(None, str(exc))
    return Grade(round_score(score))


def run_mlebench(jobs: list[dict[str, str]], python: Path, src: Path, timeout: float = 1800) -> dict[str, Grade]:
    """MLE-bench's grade of each job's submission, by the submission's path."""
    completed = subprocess.run(
        [str(python), str(RUNNER), "--mlebench-src", str(src)],
        input=json.dumps(jobs),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    if completed.returncode != 0:
        raise RuntimeError(f"{RUNNER.name} failed ({completed.returncode}): {completed.stderr[-2000:]}")
    grades = {}
    for line in completed.stdout.splitlines():
        result = json.loads(line)
        grades[result["submission"]] = Grade(_number(result["score"]), result["error"])
    return grades


def differential(
    registry: CompetitionRegistry, competition_ids: Iterable[str], workdir: Path, python: Path, src: Path
) -> list[Outcome]:
    """Write every competition's key and mutations under ``workdir`` and grade them both ways."""
    jobs: list[dict[str, str]] = []
    ours: dict[str, Grade] = {}
    names: dict[str, tuple[str, str]] = {}
    for competition in competition_ids:
        spec = registry.get(competition)
        folder = workdir / competition
        data_dir = folder / "data"
        key = write_key(spec, data_dir)
        answers_csv = key.mlebench_answers.read_bytes() if key.mlebench_answers.suffix == ".csv" else None
        for mutation, content in mutations(spec, key.perfect, key.degraded, answers_csv=answers_csv):
            path = folder / f"{mutation}.csv"
            path.write_bytes(content)
            ours[str(path)] = grade_with_mleaudit(path, spec, data_dir)
            names[str(path)] = (competition, mutation)
            jobs.append({"competition": competition, "submission": str(path), "answers": str(key.mlebench_answers)})
    theirs = run_mlebench(jobs, python, src)
    return [
        Outcome(competition, mutation, Path(path), ours[path], theirs[path])
        for path, (competition, mutation) in names.items()
    ]
