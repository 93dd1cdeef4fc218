"""Competitions, data preparation, local graders and Kaggle medals (MLE-bench compatible)."""

from grading.errors import InvalidSubmission
from grading.grade import GradeReport, grade_submission
from grading.medals import Medal
from grading.paths import find_competitions_root, resolve_data_dir
from grading.prepare import prepare_competition
from grading.registry import CompetitionRegistry
from grading.spec import CompetitionSpec

__all__ = [
    "CompetitionRegistry",
    "CompetitionSpec",
    "grade_submission",
    "GradeReport",
    "Medal",
    "InvalidSubmission",
    "prepare_competition",
    "resolve_data_dir",
    "find_competitions_root",
]
