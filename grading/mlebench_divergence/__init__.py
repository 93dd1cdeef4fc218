"""Where MLE-bench's own grader would grade a submission differently from the checked grade.

MLE-bench's graders are loose in places where this project checks strictly: some pair rows by
position and never read the ids, some accept a test id twice, turn a missing or infinite
prediction into a number, truncate ``1.5`` to class 1, or decode a run-length mask with an odd
count of numbers. Each competition's config names its grader's looseness
(``mlebench_looseness``, vocabulary :data:`mleaudit.grading.spec.MLEBENCH_LOOSENESS_KINDS`);
:func:`find_mlebench_divergences` finds the looseness one submission file triggers and says what
MLE-bench's grader would make of that file.

MLE-bench's outcome is *emulated*, never obtained by running MLE-bench's code: the submission is
transformed the way its grader reads it (cells filled or truncated as it would, masks decoded as
it would, rows paired as it pairs them, each submission row then carrying the ids of the answer
row it is paired with) and scored with this project's metric. Where that cannot reproduce its
grader (the config says ``score: none``, or a cell's fate is not emulated) the record describes
the outcome without a score. A record is kept only when MLE-bench's outcome differs from the
checked grade, or cannot be computed: a trigger that changes nothing is not a divergence.

Submissions are untrusted: every failure to read or emulate becomes a reason in the result,
never an exception, and the work is a few vectorised passes over the file plus one scoring run.
Records name columns and the first rows of the file (1-based data rows, header excluded) and
never hold an answer value.

Routine Listings
----------------
records
    :data:`SHOWN_ROWS`, :class:`CheckedGrade`, :class:`Divergence`, :class:`DivergenceCheck`.
ids
    Ids as MLE-bench's graders compare and sort them, and as records quote them.
emulation
    The state of one emulation and the triggers it records.
cells
    Cell and column looseness: ``nan_inf_coerced``, ``labels_truncated``, ``odd_rle_accepted``,
    ``positional_columns``.
pairing
    Row looseness: how submission rows are paired with answer rows (``positional_rows``,
    ``sorted_rows``, ``duplicate_ids_accepted``, ``missing_rows_accepted``, ``header_only_valid``,
    ``row_order_required``).
outcome
    The checked grade, rounding, medals and outcomes in words.
find
    :func:`find_mlebench_divergences`: every looseness emulated, the outcomes compared.

Notes
-----
Every public name is re-exported here, so callers import from
``mleaudit.grading.mlebench_divergence``. Imports point down the listing above and out to
``mleaudit.grading.spec``, ``medals`` and ``errors``; ``mleaudit.grading.grade.reading`` and
``grade.scoring``, ``leaderboard`` and ``validation`` are imported inside functions (importing
``grade.*`` runs ``grade``'s ``__init__``, which imports this package), never ``grade`` itself.
Nothing here imports ``mleaudit.audit`` or ``mleaudit.sandbox``. A new looseness kind is declared
in :data:`mleaudit.grading.spec.MLEBENCH_LOOSENESS_KINDS`; its emulation goes in ``cells`` (what
it does to cells or columns) or ``pairing`` (what it does to rows), and ``find._find`` calls it.
"""

from __future__ import annotations

import logging

from mleaudit.grading.mlebench_divergence.find import find_mlebench_divergences
from mleaudit.grading.mlebench_divergence.records import SHOWN_ROWS, CheckedGrade, Divergence, DivergenceCheck

__all__ = [
    "SHOWN_ROWS",
    "CheckedGrade",
    "Divergence",
    "DivergenceCheck",
    "find_mlebench_divergences",
]

logger = logging.getLogger(__name__)

# Examples of the functions re-exported here run with this module's (``doctest.testmod``).
__test__ = {"find_mlebench_divergences": find_mlebench_divergences}
