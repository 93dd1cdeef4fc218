"""Competitions, data preparation, local graders and Kaggle medals (MLE-bench compatible).

The public names below are imported on first use (PEP 562), so that importing a light module of
the package (``mleaudit.grading.errors``, ``mleaudit.grading.paths``, ``mleaudit.grading.cli``) does not load the graders'
scientific stack (pandas, scikit-learn, SciPy).

Routine Listings
----------------
errors, paths, untrusted_json, untrusted_yaml, csvscan
    Named errors; where competitions and prepared data live; readers of files that may have
    been written to break them.
spec, registry, embedded
    A competition's ``config.yaml`` read and typed; the registry of competition folders and
    their prepared data; the competitions built from scikit-learn's own data.
prepare, kaggle
    The public/private split of a competition and its checksums; Kaggle archives,
    leaderboards and public notebooks.
validation, metrics
    Submission files read and checked before a metric sees them; the built-in metrics.
grade, medals, leaderboard, mlebench_divergence
    One submission graded into MLE-bench's report, with its medal on the competition's
    leaderboard, and where MLE-bench's own grader would grade it differently.
batch, submission_list, cli
    A submission JSONL graded as ``mlebench grade`` does; the ``mleaudit grade`` and
    ``mleaudit competitions`` commands.

Notes
-----
This package imports nothing of :mod:`mleaudit.audit` or :mod:`mleaudit.sandbox`: both use it,
never the other way round (the ``grading-alone`` contract in ``setup.cfg``, checked by
``tests/test_layers.py``). Imports point down the listing above, and no module imports another
in a cycle.

A new metric is a documented function in the submodule of :mod:`mleaudit.grading.metrics` that
fits it (``classification``, ``probability``, ``regression``, ``ranking``, ``text``, ``masks``,
``detection``, ``fairness``), entered in that package's ``_FUNCTIONS`` table, and in
``MLEBENCH_LABELS`` when an MLE-bench grader names it by a label of its own. A new competition is
data, not code here: a folder ``competitions/<id>/`` with its ``config.yaml`` (layout in
:mod:`mleaudit.grading.spec`), ``leaderboard.csv`` and, when its files need splitting,
``prepare.py``; the registry finds it by its folder.
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
