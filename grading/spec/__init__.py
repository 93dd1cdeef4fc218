"""Competition specs: one ``competitions/<id>/config.yaml`` read, validated and typed.

A competition folder is data, not a package: it holds ``config.yaml``, ``leaderboard.csv``,
optionally ``prepare.py`` (``prepare(raw, public, private)``), ``grade.py`` (a custom grader,
only when no built-in metric fits), ``checksums.yaml`` (MD5 of the prepared files, as in
MLE-bench) and a folder of reference kernels. The Python files are the project's own and are
loaded by file path, because competition ids contain hyphens and cannot be imported as
modules. Paths to data (``dataset.answers``, ``dataset.sample_submission``) are relative to
the prepared-data dir, exactly as in MLE-bench configs (``<id>/prepared/private/test.csv``).

``config.yaml`` layout::

    id: spaceship-titanic                 # must equal the folder name
    name: Spaceship Titanic
    description: ...                      # optional
    metric: {name: accuracy_score, higher_is_better: true, params: {}}   # or grader: grade.py:grade
    id_column: PassengerId
    target_columns: [Transported]
    dataset:
      answers: spaceship-titanic/prepared/private/test.csv
      sample_submission: spaceship-titanic/prepared/public/sample_submission.csv
      raw_files: [train.csv]              # Kaggle files prepare needs; [] when none
    leaderboard: {path: leaderboard.csv, source: kaggle, note: ...}
    prepare: prepare.py:prepare
    kernels: kernels                      # reference-notebook folder, relative to the folder
    kernels_list: kernels.txt             # optional: top public notebooks, one owner/slug a line
    awards_medals: true                   # optional: whether Kaggle awarded medals (default true)
    competition_type: simple              # optional: simple, or code (Kaggle's notebook-only entries)
    splits: [low, split75]                # optional: MLE-bench splits the competition belongs to
    audit:                                # audit policy (see rules/README.md, "Competition policy")
      allow_urls: [download.pytorch.org]  # hosts or host/path prefixes whose downloads are allowed
      label_leak_columns: []              # test-data columns known to leak the label
      public_data_dirs: [/home/data]
      boilerplate: []
    mlebench_looseness:                   # where MLE-bench's grader accepts what this one rejects
      - kind: positional_rows             # one of MLEBENCH_LOOSENESS_KINDS; [] where it is strict
        note: pairs submission rows with answer rows by file position; ids are never read

Routine Listings
----------------
schema
    :data:`CONFIG_FILE`, :data:`CHECKSUMS_FILE`, :data:`CONFIG_SCHEMA` and the vocabulary it uses
    (:data:`LEADERBOARD_SOURCES`, :data:`COMPETITION_TYPES`, :data:`AUDIT_POLICY_KEYS`,
    :data:`MLEBENCH_LOOSENESS_KINDS`, :data:`CELL_KINDS`, :data:`LOOSENESS_SCORES`).
records
    :class:`Looseness`, :class:`MetricSpec`, :class:`CompetitionSpec`.
side_files
    :func:`load_checksums`, :func:`load_kernel_refs`: the files beside ``config.yaml``.
callables
    A competition's ``prepare`` and custom grader, loaded by file path.
loading
    :func:`load_competition_spec`: one folder read, validated and typed.

Notes
-----
Every public name is re-exported here, so callers import from ``mleaudit.grading.spec``. Imports
point down the listing above and out to ``mleaudit.grading.errors`` and
``mleaudit.grading.untrusted_yaml``; the metrics and ``mleaudit.grading.validation`` (which load
pandas, scikit-learn and SciPy) are imported inside functions only, so that the constants come
without them. Nothing here imports ``mleaudit.audit`` or ``mleaudit.sandbox``. A new config field
is declared in ``schema`` (:data:`CONFIG_SCHEMA`), carried by a field of :class:`CompetitionSpec`
in ``records`` and read in ``loading``; a new looseness kind is added to
:data:`MLEBENCH_LOOSENESS_KINDS` (and its options to ``_LOOSENESS_OPTIONS``) in ``schema``.
"""

from __future__ import annotations

import logging

from mleaudit.grading.spec import schema as _schema
from mleaudit.grading.spec.loading import load_competition_spec
from mleaudit.grading.spec.records import CompetitionSpec, Looseness, MetricSpec
from mleaudit.grading.spec.schema import (
    AUDIT_POLICY_KEYS,
    CELL_KINDS,
    CHECKSUMS_FILE,
    COMPETITION_TYPES,
    CONFIG_FILE,
    CONFIG_SCHEMA,
    LEADERBOARD_SOURCES,
    MLEBENCH_LOOSENESS_KINDS,
)
from mleaudit.grading.spec.side_files import load_checksums, load_kernel_refs

__all__ = [
    "CONFIG_FILE",
    "CHECKSUMS_FILE",
    "CONFIG_SCHEMA",
    "LEADERBOARD_SOURCES",
    "COMPETITION_TYPES",
    "AUDIT_POLICY_KEYS",
    "MLEBENCH_LOOSENESS_KINDS",
    "CELL_KINDS",
    "Looseness",
    "MetricSpec",
    "CompetitionSpec",
    "load_competition_spec",
    "load_checksums",
    "load_kernel_refs",
]

# Reached under this module's name though not in __all__.
LOOSENESS_SCORES = _schema.LOOSENESS_SCORES

logger = logging.getLogger(__name__)
