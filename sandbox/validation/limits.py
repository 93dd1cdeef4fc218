"""What the validation endpoint allows: the validator's type, the calls log's name, and the bounds of a request."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

#: A function that checks one submission file and returns a :class:`ValidationOutcome` (or a
#: :class:`mleaudit.grading.grade.SubmissionCheck`, or a legacy ``(valid, message)`` pair whose message is
#: kept for the host only); never a score. It must be picklable: it runs in a worker process.
Validator = Callable[[Path], Any]

#: Name of the calls log inside the run's ``logs/`` folder (read by the audit).
VALIDATION_CALLS_FILE = "validation_calls.jsonl"
#: Largest request body accepted when neither the limits nor the validator say otherwise, in bytes.
DEFAULT_MAX_BYTES = 256 * 1024 * 1024
#: Default wall-clock bound of one validation, in seconds.
DEFAULT_TIME_LIMIT_S = 120.0
#: Default address-space limit of the worker process, in bytes.
DEFAULT_MEMORY_BYTES = 4 * 1024 * 1024 * 1024
#: Default seconds a request waits for another one's validation before a 429 reply.
DEFAULT_BUSY_WAIT_S = 5.0
#: Seconds a client may stay silent before its connection is closed.
CLIENT_TIMEOUT_S = 60.0
#: Seconds a whole request body may take to arrive.
UPLOAD_TIMEOUT_S = 300.0
#: Connections served at once; more get 503 without being read.
MAX_CONNECTIONS = 16


@dataclass(frozen=True, slots=True, kw_only=True)
class ValidationLimits:
    """Bounds on what one validation request may cost the host.

    Attributes
    ----------
    max_bytes : int
        Largest request body accepted, in bytes (413 above it). A competition's setup derives
        it from the public sample submission (:attr:`mleaudit.sandbox.competition.CompetitionSetup.max_submission_bytes`).
    time_limit_s : float
        Wall-clock bound of one validation in the worker, in seconds (then the worker is
        killed and restarted, and the reply is the ``timeout`` template with status 504).
    memory_bytes : int or None
        ``RLIMIT_AS`` of the worker process, in bytes (``None``: no limit).
    busy_wait_s : float
        Seconds a request waits while another is being validated before a 429 reply.

    Raises
    ------
    ValueError
        If a bound is not positive.
    """

    max_bytes: int = DEFAULT_MAX_BYTES
    time_limit_s: float = DEFAULT_TIME_LIMIT_S
    memory_bytes: int | None = DEFAULT_MEMORY_BYTES
    busy_wait_s: float = DEFAULT_BUSY_WAIT_S

    def __post_init__(self) -> None:
        if not isinstance(self.max_bytes, int) or self.max_bytes < 1:
            raise ValueError(f"ValidationLimits.max_bytes must be a positive int, not {self.max_bytes!r}")
        if not self.time_limit_s > 0:
            raise ValueError(f"ValidationLimits.time_limit_s must be positive, not {self.time_limit_s!r}")
        if self.memory_bytes is not None and self.memory_bytes < (64 << 20):
            raise ValueError(f"ValidationLimits.memory_bytes must be at least 64 MiB, not {self.memory_bytes!r}")
        if not self.busy_wait_s >= 0:
            raise ValueError(f"ValidationLimits.busy_wait_s must be >= 0, not {self.busy_wait_s!r}")
