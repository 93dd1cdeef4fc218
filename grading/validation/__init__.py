"""Read and check submission files before a metric sees them.

Every check raises :class:`~mleaudit.grading.errors.InvalidSubmission` with a message that names the
column, the row and the id at fault, so an agent (or a reviewer) can fix the file. Rows are
counted from 1 over data rows, header excluded, in the order of the submission file. Ids are
compared as the exact text in the CSV (``"0001_01"`` and ``"1"`` stay text), as Kaggle
matches submission rows to the answer key; a row may be identified by several id columns
together (``tripId`` and ``UnixTimeMillis``), shown as a tuple.

Messages never contain answer values: the validation endpoint that agents may call echoes
them, and the held-out answers must not leak through it. Ids and column names are public
(they are in the public test file and sample submission), so they may appear.

The checks are vectorised (pandas hash indexes, numpy masks) so a million-row submission is
validated in a fraction of the time pandas needs to read it: a number column whose minimum and
maximum pass every value check is valid as a whole (the cell-by-cell checks run only to name
the first bad row), and array metrics get their aligned arrays from :func:`check_arrays`
without an aligned frame being built.

Routine Listings
----------------
keys
    Row keys of the id columns (composite ids joined).
messages
    How rejection messages quote columns, ids and rows.
reading
    :func:`read_csv`, :func:`read_submission`, :func:`read_answers`.
options
    :class:`ScoringOptions` and :func:`scoring_options`.
columns
    :func:`check_columns`: the header.
ids
    :func:`check_ids`, :func:`check_ids_in_order`, :func:`ids_by_number`: ids and alignment order.
values
    ``check_no_missing``, ``check_label_kind``, ``check_numeric``, ``check_probabilities``,
    ``check_value_range``, ``check_row_sums``: the cells of a target column.
checks
    The checks of a submission against the answer key, in their order.
frames
    :func:`check_frames`: checked and aligned frames.
arrays
    :class:`AlignedArrays`, :func:`check_arrays`, :func:`answer_arrays`, :func:`check_submission`.

Notes
-----
Every name is re-exported here, so callers import from ``mleaudit.grading.validation``.
Imports point down the listing above: a module imports only modules listed before it, plus
``mleaudit.grading.csvscan``, ``mleaudit.grading.errors`` and ``mleaudit.grading.metrics``; nothing
here imports ``mleaudit.audit`` or ``mleaudit.sandbox``. A new check of a column's cells goes in
``values`` (its message built with ``messages``), called from ``checks._validate`` at its place
in the order; a new scoring parameter is parsed in ``options``.
"""

from __future__ import annotations

import logging

from mleaudit.grading.validation import options as _options
from mleaudit.grading.validation import reading as _reading
from mleaudit.grading.validation.arrays import AlignedArrays, answer_arrays, check_arrays, check_submission
from mleaudit.grading.validation.columns import check_columns
from mleaudit.grading.validation.frames import check_frames
from mleaudit.grading.validation.ids import check_ids, check_ids_in_order, ids_by_number
from mleaudit.grading.validation.options import COLUMN_ORDERS, ScoringOptions, scoring_options
from mleaudit.grading.validation.reading import read_answers, read_csv, read_submission
from mleaudit.grading.validation.values import (
    check_label_kind,
    check_no_missing,
    check_numeric,
    check_probabilities,
    check_row_sums,
    check_value_range,
)

__all__ = [
    "read_csv",
    "read_submission",
    "read_answers",
    "ScoringOptions",
    "scoring_options",
    "check_columns",
    "COLUMN_ORDERS",
    "check_ids",
    "check_ids_in_order",
    "ids_by_number",
    "check_no_missing",
    "check_label_kind",
    "check_numeric",
    "check_probabilities",
    "check_value_range",
    "check_row_sums",
    "check_frames",
    "AlignedArrays",
    "check_arrays",
    "answer_arrays",
    "check_submission",
]

# Reached under this module's name though not in __all__.
NAN_TEXT = _options.NAN_TEXT
MISSING_VALUE_MODES = _options.MISSING_VALUE_MODES
_read_with_text = _reading._read_with_text

logger = logging.getLogger(__name__)

# Examples of the functions re-exported here run with this module's (``doctest.testmod``).
__test__ = {"check_submission": check_submission}
