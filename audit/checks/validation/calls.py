"""The sandbox's validation calls log (:data:`VALIDATION_CALLS_LOG`): :func:`load_validation_calls` and bursts of calls."""

from __future__ import annotations

import datetime as _dt
import math
from dataclasses import dataclass
from pathlib import Path

from mleaudit.audit.checks.tables import CsvReadError, check_regular_file
from mleaudit.audit.errors import AuditError
from mleaudit.audit.logs.jsonregions import loads_json
from mleaudit.audit.run import read_run_file

#: Where the sandbox records validation calls, relative to the run root.
VALIDATION_CALLS_LOG = "logs/validation_calls.jsonl"
#: The calls log is refused beyond this size.
MAX_CALLS_LOG_BYTES = 64 * 1024 * 1024


class ValidationLogError(AuditError):
    """The validation calls log cannot be read; the message names the file and the cause."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ValidationCall:
    """One recorded call of the validation endpoint.

    Attributes
    ----------
    line : int
        0-based line of the record in the calls log.
    ts : float or None
        Seconds since the epoch (``None`` when the record has no readable time).
    valid : bool or None
        The endpoint's verdict on the posted file.
    message : str
        The endpoint's reply (never carries answer values, by the endpoint's contract).
    reason : str or None
        The reason code of an invalid reply (``mleaudit.grading.errors.REASONS`` or the endpoint's own,
        e.g. ``timeout``); ``None`` in logs written before reasons were recorded.
    column : str or None
        The column the reply named, if any.
    row : int or None
        The submission row the reply named, if any.
    status : int or None
        The HTTP status of the reply (200 for a verdict).
    """

    line: int
    ts: float | None
    valid: bool | None
    message: str = ""
    reason: str | None = None
    column: str | None = None
    row: int | None = None
    status: int | None = None


def _parse_ts(value: object) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)) and math.isfinite(value):
        return float(value)
    if isinstance(value, str) and value.strip():
        text = value.strip().replace("Z", "+00:00")
        try:
            moment = _dt.datetime.fromisoformat(text)
        except ValueError:
            return None
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=_dt.timezone.utc)
        return moment.timestamp()
    return None


def load_validation_calls(path: Path, *, root: Path | None = None) -> tuple[list[ValidationCall], int]:
    """Read a validation calls log (:data:`VALIDATION_CALLS_LOG` format).

    Parameters
    ----------
    path : Path
        The JSONL file (not followed if it is a symlink; at most :data:`MAX_CALLS_LOG_BYTES`).
    root : Path, optional
        The run root ``path`` lies under: no folder between the two may be a symlink either
        (a symlinked ``logs/`` could point at a calls log written elsewhere).

    Returns
    -------
    calls : list of ValidationCall
        One per JSON-object line, in file order.
    malformed : int
        Non-blank lines that are not JSON objects, or nest deeper than
        :data:`mleaudit.grading.untrusted_json.MAX_JSON_DEPTH` (skipped).

    Raises
    ------
    ValidationLogError
        If the file is missing, a symlink, under a symlinked folder, too large or unreadable.
    """
    try:
        check_regular_file(path, max_bytes=MAX_CALLS_LOG_BYTES, label=VALIDATION_CALLS_LOG)
        if root is not None:
            raw = read_run_file(root, path, max_bytes=MAX_CALLS_LOG_BYTES)
        else:
            raw = Path(path).read_bytes()
    except CsvReadError as exc:
        raise ValidationLogError(str(exc)) from None
    except OSError as exc:
        if root is not None and exc.strerror:
            raise ValidationLogError(f"{VALIDATION_CALLS_LOG}: {exc.strerror}") from None
        raise ValidationLogError(f"{VALIDATION_CALLS_LOG}: cannot be read ({type(exc).__name__})") from None
    calls: list[ValidationCall] = []
    malformed = 0
    for number, line in enumerate(raw.decode("utf-8", errors="replace").splitlines()):
        if not line.strip():
            continue
        try:
            record = loads_json(line)
        except ValueError:
            malformed += 1
            continue
        if not isinstance(record, dict):
            malformed += 1
            continue
        valid = record.get("valid")
        message = record.get("message")
        reason, column = record.get("reason"), record.get("column")
        row, status = record.get("row"), record.get("status")
        calls.append(ValidationCall(line=number, ts=_parse_ts(record.get("ts")),
                                    valid=valid if isinstance(valid, bool) else None,
                                    message=message if isinstance(message, str) else "",
                                    reason=reason[:64] if isinstance(reason, str) else None,
                                    column=column[:256] if isinstance(column, str) else None,
                                    row=row if isinstance(row, int) and not isinstance(row, bool) else None,
                                    status=status if isinstance(status, int) and not isinstance(status, bool) else None))
    return calls, malformed


def largest_burst(calls: list[ValidationCall], window_s: float) -> tuple[int, int]:
    """Most calls within any ``window_s`` seconds, and the index of the burst's first call."""
    times = sorted((c.ts, i) for i, c in enumerate(calls) if c.ts is not None)
    best, where, left = 0, -1, 0
    for right in range(len(times)):
        while times[right][0] - times[left][0] > window_s:
            left += 1
        if right - left + 1 > best:
            best, where = right - left + 1, times[left][1]
    return best, where
