"""What a validator found, normalised: :class:`ValidationOutcome` and :func:`as_outcome`.

Whatever a validator returns (a :class:`mleaudit.grading.grade.SubmissionCheck`, a mapping, a
legacy pair) becomes an outcome whose fields are type-checked; grading's own message is kept
in ``detail``, for the host only.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

#: Reasons the endpoint itself gives (not grading's): the validation ran out of time, the
#: validator failed or crashed, another validation is running, the body is over the size limit,
#: the request was malformed.
ENDPOINT_REASONS = frozenset({"timeout", "validator-failed", "busy", "body-too-large", "bad-request"})

#: The counts a reply may use (:data:`mleaudit.grading.errors.COUNT_KEYS`): the file's own field counts
#: and the caps the host configured. Any other key is dropped.
COUNT_KEYS = frozenset({"fields", "expected_fields", "max_columns", "max_field_bytes", "max_line_bytes"})


@dataclass(frozen=True, slots=True, kw_only=True)
class ValidationOutcome:
    """What a validator found, as the endpoint passes it around (never sent as it stands).

    Attributes
    ----------
    valid : bool
        The verdict.
    reason : str or None
        ``None`` when valid; otherwise a code of :data:`mleaudit.grading.errors.REASONS` or
        :data:`ENDPOINT_REASONS`.
    column : str or None
        The submission column the problem is in.
    row : int or None
        The 1-based data row of the submission (header excluded) the problem is in.
    line : int or None
        The 1-based line of the file (the header is line 1) the problem is on, for problems
        found before there are rows (``csv-syntax``, ``too-large``).
    counts : dict of str to int
        Field counts of the file and configured caps, keyed by :data:`COUNT_KEYS`.
    detail : str
        Host-side text (grading's full message); logged on the host at debug level only.
    """

    valid: bool
    reason: str | None = None
    column: str | None = None
    row: int | None = None
    line: int | None = None
    counts: Mapping[str, int] = field(default_factory=dict)
    detail: str = ""

    def to_dict(self) -> dict[str, Any]:
        """The fields as a picklable, JSON-ready dict."""
        return {"valid": self.valid, "reason": self.reason, "column": self.column, "row": self.row,
                "line": self.line, "counts": dict(self.counts), "detail": self.detail}


def positive_int(value: object) -> int | None:
    """``value`` if it is an int of 1 or more (not a bool), else ``None``."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 1 else None


def _clean_counts(counts: object) -> dict[str, int]:
    if not isinstance(counts, Mapping):
        return {}
    return {k: v for k, v in counts.items()
            if k in COUNT_KEYS and isinstance(v, int) and not isinstance(v, bool) and v >= 0}


def as_outcome(result: object) -> ValidationOutcome:
    """Normalise what a validator returned into a :class:`ValidationOutcome`.

    Parameters
    ----------
    result : object
        A :class:`ValidationOutcome`; an object with ``valid``, ``reason``, ``column``, ``row``
        and ``message`` attributes (and optionally ``line`` and ``counts``:
        :class:`mleaudit.grading.grade.SubmissionCheck`); a mapping with those keys; a legacy
        ``(valid, message)`` pair (its message is kept for the host only and the reason is the
        generic ``"invalid"``); or a bare bool.

    Returns
    -------
    ValidationOutcome
        Fields type-checked: a non-str reason becomes ``"invalid"``, a non-str column and a
        row or line that is not a positive int become ``None``, and counts keep only
        :data:`COUNT_KEYS` with non-negative int values.
    """
    line: object = None
    counts: object = None
    if isinstance(result, ValidationOutcome):
        valid, reason, column, row, detail = result.valid, result.reason, result.column, result.row, result.detail
        line, counts = result.line, result.counts
    elif isinstance(result, Mapping):
        valid, reason = result.get("valid"), result.get("reason")
        column, row = result.get("column"), result.get("row")
        line, counts = result.get("line"), result.get("counts")
        detail = result.get("detail", result.get("message", ""))
    elif isinstance(result, tuple) and len(result) == 2:
        valid, reason, column, row, detail = result[0], None, None, None, result[1]
    elif isinstance(result, bool):
        valid, reason, column, row, detail = result, None, None, None, ""
    elif hasattr(result, "valid"):
        valid, reason = getattr(result, "valid"), getattr(result, "reason", None)
        column, row = getattr(result, "column", None), getattr(result, "row", None)
        line, counts = getattr(result, "line", None), getattr(result, "counts", None)
        detail = getattr(result, "message", getattr(result, "detail", ""))
    else:
        raise TypeError(f"a validator returned {type(result).__name__}; expected a ValidationOutcome, "
                        "a SubmissionCheck or a (valid, message) pair")
    valid = valid is True
    if valid:
        reason = None
    elif not isinstance(reason, str):
        reason = "invalid"
    column = column if isinstance(column, str) else None
    return ValidationOutcome(valid=valid, reason=reason, column=column, row=positive_int(row),
                             line=positive_int(line), counts=_clean_counts(counts),
                             detail=detail if isinstance(detail, str) else "")
