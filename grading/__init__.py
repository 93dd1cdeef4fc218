"""Competitions, data preparation, local graders and Kaggle medals (MLE-bench compatible).

The public names below are imported on first use (PEP 562), so that importing a light module of
the package (``mleaudit.grading.errors``, ``mleaudit.grading.paths``, ``mleaudit.grading.cli``) does not load the graders'
scientific stack (pandas, scikit-learn, SciPy).
"""

from __future__ import annotations

from typing import Any

_EXPORTS = {
    "InvalidSubmission": "mleaudit.grading.errors",
    "GradeReport": "mleaudit.grading.grade",
    "grade_submission": "mleaudit.grading.grade",
    "Medal": "mleaudit.grading.medals",
    "find_competitions_root": "mleaudit.grading.paths",
    "resolve_data_dir": "mleaudit.grading.paths",
    "prepare_competition": "mleaudit.grading.prepare",
    "CompetitionRegistry": "mleaudit.grading.registry",
    "CompetitionSpec": "mleaudit.grading.spec",
}

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


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        import importlib

        value = getattr(importlib.import_module(_EXPORTS[name]), name)
        globals()[name] = value  # later lookups skip this function
        return value
    raise AttributeError(f"module 'mleaudit.grading' has no attribute {name!r}")
