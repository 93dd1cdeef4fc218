"""What the validation endpoint may say to the agent: replies rendered from our own templates only.

Grading's messages are written for the host (``mleaudit grade``): they quote cells and ids and,
for a few metric errors, the scoring library's text, which can list the answers' labels. The
endpoint never forwards them. A reply is rendered from a template keyed by the reason code of
:data:`mleaudit.grading.errors.REASONS` (or one of the endpoint's own codes, :data:`ENDPOINT_REASONS`),
filled with at most:

- a column name, shown only if it is one of the submission's own header cells (read here, with
  the :mod:`csv` module, within :data:`HEADER_SCAN_BYTES`) or one of the competition's public
  expected columns (id and target columns);
- a line number of the submission file, shown only if it is within the file's own line count;
- counts about the submission file itself: its data rows, the fields on a line and in its
  header;
- numbers the host configures (the size limit, the time bound, the caps on a line's fields and
  bytes, :class:`mleaudit.grading.csvscan.CsvLimits`);
- public facts of the competition (:class:`PublicFacts`): the sample submission's row count,
  and the kind of value the metric needs, as the competition's config and metric say.

Never an exception's text, never a value from the answers, never an id or a cell value, never a
count taken from the answers. A reason without a template gets the generic one.

Positions are lines of the file
-------------------------------
Every reply names a place in the submission as a **line of the file**, numbered as an editor
numbers them: the header is line 1, and a line ends at ``\n``, ``\r\n`` or a lone ``\r``.
Grading names a problem in a value by its data row (the 1-based row of the table pandas read,
header excluded); the endpoint turns it into the line where that row starts, by reading the
file with the :mod:`csv` module (:func:`read_shape`), so blank lines and quoted cells that span
lines are counted as the file has them. Parser and pre-scan problems (``csv-syntax``,
``too-large``) come with their line from grading (:attr:`mleaudit.grading.errors.InvalidSubmission.line`).
A row whose line cannot be found is not named. "Rows" in a reply are only ever counted, never
numbered: the data rows of the file, blank lines not counted.

Routine Listings
----------------
outcome
    :class:`ValidationOutcome`, :func:`as_outcome`, :data:`ENDPOINT_REASONS`, :data:`COUNT_KEYS`.
templates
    :data:`TEMPLATES`: every text a reply may be rendered from.
public
    :class:`PublicFacts` and :data:`TARGET_KINDS`.
shape
    :class:`SubmissionShape` and :func:`read_shape`: what is read of the file itself.
reply
    :func:`render_reply` and :func:`shown_fields`: what a reply may name, and the reply.

Notes
-----
The names above are re-exported here, so callers import from ``mleaudit.sandbox.feedback``.
Imports point down the listing: a module imports only modules listed before it, and nothing
outside the standard library (no ``mleaudit.audit``, no ``mleaudit.grading``). A new reason
gets its template in :data:`TEMPLATES` (a reason of grading's must also be in
:data:`mleaudit.grading.errors.REASONS`); a new placeholder is filled in ``render_reply`` or,
when only some reasons use it, in ``reply._choose``.
"""

from __future__ import annotations

from mleaudit.sandbox.feedback.outcome import COUNT_KEYS, ENDPOINT_REASONS, ValidationOutcome, as_outcome
from mleaudit.sandbox.feedback.public import TARGET_KINDS, PublicFacts
from mleaudit.sandbox.feedback.reply import render_reply, shown_fields
from mleaudit.sandbox.feedback.shape import SubmissionShape, read_shape
from mleaudit.sandbox.feedback.templates import TEMPLATES

__all__ = [
    "COUNT_KEYS",
    "ENDPOINT_REASONS",
    "TARGET_KINDS",
    "TEMPLATES",
    "PublicFacts",
    "SubmissionShape",
    "ValidationOutcome",
    "as_outcome",
    "read_shape",
    "render_reply",
    "shown_fields",
]
