"""The reply templates: every text the endpoint may send, by reason."""

from __future__ import annotations

from typing import Mapping

#: Reply templates by reason, and a few variants a reason is rendered with when the details
#: allow (``csv-syntax-fields``, ``too-large-*``, ``unnamed-*``). Placeholders:
#:
#: - ``{where}``: `` in column 'x'``, `` at line N``, both or nothing;
#: - ``{col}``: `` 'x'`` (or nothing); ``{expected}``: the public expected columns;
#: - ``{at}``: `` at line N`` (or nothing); ``{subject}``: ``line N`` (or ``a line``);
#: - ``{line}``, ``{fields}``, ``{header_fields}``, ``{expected_fields}``: a line and field
#:   counts of the submission; ``{position}``: a column's place in the header;
#: - ``{cap}``: the configured cap a line broke;
#: - ``{counts}``: the submission's row count, and the sample submission's when it is public;
#: - ``{needs}``: what the metric needs, from the competition's config and metric;
#: - ``{max_bytes}`` and ``{time_limit_s}``: the host's configured limits.
#:
#: Nothing else is ever substituted.
TEMPLATES: Mapping[str, str] = {
    "valid": "Submission is valid.",
    "unreadable": "Submission is invalid: the file could not be read.",
    "empty": "Submission is invalid: the file is empty.",
    "csv-syntax": "Submission is invalid: the file is not a readable CSV{at} (check quoting, delimiters and UTF-8 encoding).",
    "csv-syntax-fields": "Submission is invalid: line {line} has {fields} fields; the header has {header_fields}.",
    "csv-syntax-fields-expected": "Submission is invalid: line {line} has {fields} fields, where {expected_fields} are expected.",
    "too-large": "Submission is invalid: a row or cell is larger than a submission may hold.",
    "too-large-columns": "Submission is invalid: {subject} has more than {cap} fields (the most a submission may have).",
    "too-large-field": "Submission is invalid: {subject} has a cell over {cap} bytes (the most one cell may hold).",
    "too-large-line": "Submission is invalid: {subject} is over {cap} bytes (the most one row may hold).",
    "no-columns": "Submission is invalid: the header has no columns.",
    "missing-column": "Submission is invalid: required column{col} is missing.{expected}",
    "extra-column": "Submission is invalid: unexpected column{col}.{expected}",
    "duplicate-column": "Submission is invalid: column{col} appears more than once.",
    "column-order": "Submission is invalid: column{col} is out of place.{expected}",
    "unnamed-index": "Submission is invalid: an unnamed first column (an index written by to_csv? use index=False).{expected}",
    "unnamed-column": "Submission is invalid: column {position} of the header has no name.{expected}",
    "empty-id": "Submission is invalid: empty id{where}.",
    "duplicate-id": "Submission is invalid: repeated id{where}.",
    "unknown-id": "Submission is invalid: an id that is not a test id{where}.",
    "missing-ids": "Submission is invalid: some test ids have no row{counts} (one row per test id is expected).",
    "row-count": "Submission is invalid: the number of rows differs from the test set{counts} (one row per test id is expected).",
    "bad-value": "Submission is invalid: a value of the wrong type or outside the allowed range{where}{needs}.",
    "missing-value": "Submission is invalid: a missing value{where}.",
    "non-finite": "Submission is invalid: a non-finite number{where}.",
    "row-sum": "Submission is invalid: probabilities of a row do not sum to 1{where}.",
    "unknown-label": "Submission is invalid: a label the metric cannot use{where}{needs}.",
    "incomparable": "Submission is invalid: predictions{where} are not of the type the answers hold{needs}.",
    "undefined-score": "Submission is valid.",
    "non-finite-score": "Submission is invalid: the metric is not finite for these predictions.",
    "grader-failed": "Submission is invalid: the competition's grader could not score it.",
    "invalid": "Submission is invalid.",
    "timeout": "The submission could not be validated within {time_limit_s} seconds; it was not checked.",
    "validator-failed": "The submission could not be validated.",
    "busy": "Another validation is running; try again in a few seconds.",
    "body-too-large": "The request body is over the {max_bytes}-byte limit; the file was not checked.",
    "bad-request": "The request could not be read; post the file as the request body or as the multipart field 'file'.",
}
