"""Prepare a competition's public/private split and verify it by checksum.

Preparation follows MLE-bench: the competition's ``prepare(raw, public, private)`` turns the
original Kaggle files (or data shipped inside a package) into a public dir (what an agent
sees) and a private dir (the held-out answers). It writes into a temporary folder next to the
target and moves it into place only when it is complete and, if the competition has a
``checksums.yaml``, when every prepared file has the recorded MD5 — so an interrupted or
non-reproducible preparation never leaves a half-written or different dataset behind.

Checksums are MLE-bench's: MD5 hex digests of the files directly inside each dir whose
extension is one of csv, json, jsonl, parquet, bson (``description.md`` is not covered).

:func:`prepare_competitions` prepares several competitions and reports each outcome instead of
stopping at the first that cannot be prepared; :func:`download_raw` fetches a competition's
Kaggle archive (see :mod:`mleaudit.grading.kaggle`), checks it against the ``zip`` MD5 MLE-bench
recorded, and extracts it into the raw dir. :func:`one_hot_labels` and
:func:`write_prepared_csv` are the helpers competitions' ``prepare.py`` files use to write
MLE-bench's formats byte for byte.

Routine Listings
----------------
formats
    :func:`write_prepared_csv`, :func:`one_hot_labels`: MLE-bench's prepared formats.
checksums
    :data:`CHECKSUM_EXTENSIONS`, :func:`md5_file`, :func:`compute_checksums`,
    :func:`verify_checksums`, :func:`archive_checksum`.
preparing
    :class:`PreparedData`, :func:`prepare_competition`, :func:`verification_text`,
    :func:`not_preparable_reason`: one competition prepared into place.
download
    :func:`download_raw`: a competition's Kaggle archive fetched, checked and extracted.
batch
    :class:`PrepareOutcome`, :func:`prepare_competitions`: several competitions, each outcome
    reported.

Notes
-----
Every name is re-exported here, so callers (and competitions' ``prepare.py`` files) import from
``mleaudit.grading.prepare``. Imports point down the listing above and out to
``mleaudit.grading.paths``, ``registry``, ``spec`` and ``errors``; ``mleaudit.grading.kaggle`` is
imported inside :func:`download_raw` (and for type checking) only, and nothing here imports
``mleaudit.audit`` or ``mleaudit.sandbox``. A new helper for competitions' ``prepare.py`` files goes in ``formats``.
"""

from __future__ import annotations

import logging

from mleaudit.grading.prepare.batch import PrepareOutcome, prepare_competitions
from mleaudit.grading.prepare.checksums import (
    CHECKSUM_EXTENSIONS,
    archive_checksum,
    compute_checksums,
    md5_file,
    verify_checksums,
)
from mleaudit.grading.prepare.download import download_raw
from mleaudit.grading.prepare.formats import one_hot_labels, write_prepared_csv
from mleaudit.grading.prepare.preparing import PreparedData, not_preparable_reason, prepare_competition, verification_text

__all__ = [
    "CHECKSUM_EXTENSIONS",
    "PreparedData",
    "one_hot_labels",
    "write_prepared_csv",
    "md5_file",
    "compute_checksums",
    "verify_checksums",
    "prepare_competition",
    "not_preparable_reason",
    "verification_text",
    "archive_checksum",
    "download_raw",
    "PrepareOutcome",
    "prepare_competitions",
]

logger = logging.getLogger(__name__)

# Examples of the functions re-exported here run with this module's (``doctest.testmod``).
__test__ = {"one_hot_labels": one_hot_labels}
