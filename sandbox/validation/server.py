"""The endpoint's server: :class:`ValidationServer` validates in a worker, logs every call and counts refusals."""

from __future__ import annotations

import json
import logging
import threading
from collections import Counter
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Sequence

from mleaudit.sandbox.feedback import PublicFacts, SubmissionShape, ValidationOutcome, as_outcome, render_reply, shown_fields
from mleaudit.sandbox.unix_service import UnixSocketService
from mleaudit.sandbox.validation.handler import Handler
from mleaudit.sandbox.validation.limits import DEFAULT_MAX_BYTES, MAX_CONNECTIONS, ValidationLimits, Validator
from mleaudit.sandbox.validation_worker import ValidationWorker

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True, kw_only=True)
class ValidationStats:
    """Counts of validation calls during a run.

    Attributes
    ----------
    count : int
        Calls answered (valid + invalid; a timeout or a failed validator counts as invalid).
    valid, invalid : int
        Calls whose file was valid / invalid.
    refused : int
        Requests refused before validation (wrong path, body too large, malformed, busy).
    """

    count: int = 0
    valid: int = 0
    invalid: int = 0
    refused: int = 0

    def to_dict(self) -> dict[str, int]:
        """The counts as a dict (for ``run.json``)."""
        return {"count": self.count, "valid": self.valid, "invalid": self.invalid, "refused": self.refused}


#: ``run.json`` event text per refusal cause (``{n}`` requests, ``{max_bytes}`` the limit).
REFUSAL_DETAILS = {
    "too-large": "{n} request(s) over the {max_bytes}-byte limit refused ({status})",
    "busy": "{n} request(s) refused while another validation was running ({status})",
    "connections": "{n} request(s) refused: more than {connections} connections at once ({status})",
    "closed": "{n} connection(s) closed unread: more than {served} open at once",
    "not-found": "{n} request(s) to a path other than /validate refused ({status})",
    "no-length": "{n} request(s) without a Content-Length or chunked body refused ({status})",
    "malformed": "{n} request(s) with a malformed body or no file refused ({status})",
    "slow": "{n} request(s) whose body did not arrive in time refused ({status})",
}


class ValidationServer(UnixSocketService):
    """Serve the validation endpoint on a Unix socket, validate in a worker, log every call.

    Parameters
    ----------
    socket_path : pathlib.Path
        Where to create the socket (at most 107 bytes long; it is made connectable by any
        local user, since the sandbox user differs from the host's).
    validator : Validator
        Checks one submission file (picklable: it runs in the worker process). When it has
        ``expected_columns`` and ``max_submission_bytes`` attributes
        (:class:`mleaudit.sandbox.competition.CompetitionValidator`), they are the defaults of the
        parameters below.
    log_path : pathlib.Path
        JSON Lines calls log, appended to and flushed after every call.
    limits : ValidationLimits, optional
        Size, time, memory and waiting bounds (default: :class:`ValidationLimits` with
        ``max_bytes`` from the validator's ``max_submission_bytes`` when it has one).
    max_bytes : int, optional
        Overrides ``limits.max_bytes``.
    expected_columns : sequence of str, optional
        The competition's public columns (id and targets), which replies may always name.
    public : PublicFacts, optional
        Public facts replies may state (the sample submission's row count, what the metric
        needs); default: the validator's ``public_facts`` attribute when it has one
        (:attr:`mleaudit.sandbox.competition.CompetitionValidator.public_facts`), else none.

    Raises
    ------
    ValueError
        If the socket path is too long.
    TypeError
        If the validator cannot be pickled.

    Examples
    --------
    >>> server = ValidationServer(sock, setup.validator, log,
    ...                           limits=ValidationLimits(max_bytes=setup.max_submission_bytes))  # doctest: +SKIP
    >>> with server:                                          # doctest: +SKIP
    ...     run_the_agent()
    >>> server.stats.count, server.events()                   # doctest: +SKIP
    (3, [])
    """

    handler_class = Handler
    thread_name = "validation-endpoint"

    def __init__(
        self,
        socket_path: Path,
        validator: Validator,
        log_path: Path,
        *,
        limits: ValidationLimits | None = None,
        max_bytes: int | None = None,
        expected_columns: Sequence[str] | None = None,
        public: PublicFacts | None = None,
    ) -> None:
        super().__init__(socket_path)
        if limits is None:
            own = getattr(validator, "max_submission_bytes", None)
            limits = ValidationLimits(max_bytes=own if isinstance(own, int) and own > 0 else DEFAULT_MAX_BYTES)
        if max_bytes is not None:
            limits = ValidationLimits(max_bytes=max_bytes, time_limit_s=limits.time_limit_s,
                                      memory_bytes=limits.memory_bytes, busy_wait_s=limits.busy_wait_s)
        self.limits = limits
        if expected_columns is None:
            expected_columns = getattr(validator, "expected_columns", ()) or ()
        self.expected_columns = tuple(str(c) for c in expected_columns)
        if public is None:
            own_facts = getattr(validator, "public_facts", None)
            public = own_facts if isinstance(own_facts, PublicFacts) else PublicFacts()
        self.public = public
        self.validator = validator
        self.log_path = Path(log_path)
        self.scratch_dir = str(self.socket_path.parent)
        self._worker = ValidationWorker(validator, time_limit_s=limits.time_limit_s, memory_bytes=limits.memory_bytes)
        self._lock = threading.Lock()  # stats, refusals and the log
        self._busy = threading.Lock()  # one request read and validated at a time
        self._connections = threading.BoundedSemaphore(MAX_CONNECTIONS)
        self._stats = ValidationStats()
        self._refusals: Counter[tuple[int, str]] = Counter()
        self._failures: Counter[str] = Counter()
        self._log = None

    @property
    def max_bytes(self) -> int:
        """The body size limit in bytes (``limits.max_bytes``)."""
        return self.limits.max_bytes

    @property
    def stats(self) -> ValidationStats:
        """Counts so far (``refused`` includes connections closed unread past the service's bound)."""
        with self._lock:
            stats = self._stats
        if not self.overflowed:
            return stats
        return ValidationStats(count=stats.count, valid=stats.valid, invalid=stats.invalid,
                               refused=stats.refused + self.overflowed)

    def start(self) -> None:
        """Open the calls log, start the worker, create the socket and serve in a background thread."""
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log = self.log_path.open("a", encoding="utf-8")
        self._worker.start()
        super().start()

    def stop(self) -> None:
        """Stop serving, remove the socket, stop the worker and close the log."""
        super().stop()
        self._worker.stop()
        with self._lock:
            if self._log is not None:
                self._log.close()
                self._log = None

    def record_refusal(self, status: int = 400, cause: str = "malformed") -> None:
        """Count a request refused before validation.

        Parameters
        ----------
        status : int
            The HTTP status of the refusal.
        cause : str
            A key of the refusal causes (``too-large``, ``busy``, ``connections``, ``not-found``,
            ``no-length``, ``malformed``, ``slow``).
        """
        with self._lock:
            s = self._stats
            self._stats = ValidationStats(count=s.count, valid=s.valid, invalid=s.invalid, refused=s.refused + 1)
            self._refusals[(status, cause)] += 1

    def events(self) -> list[dict[str, Any]]:
        """``run.json`` events for refused requests and stopped validations, one per status and cause.

        Returns
        -------
        list of dict
            ``{"kind": "validation-refused", "detail": ..., "status": int, "count": int}`` per
            refusal status and cause (e.g. ``"2 request(s) over the 1048576-byte limit refused
            (413)"``), then ``{"kind": "validation-timeout" | "validation-failed", "detail": ...,
            "status": 504 | 500, "count": int}`` for validations the worker did not finish.
            Empty when nothing was refused.
        """
        with self._lock:
            refusals, failures = dict(self._refusals), dict(self._failures)
        if self.overflowed:
            # Connections past the service's bound, closed unread (mleaudit.sandbox.unix_service).
            refusals[(503, "closed")] = refusals.get((503, "closed"), 0) + self.overflowed
        events: list[dict[str, Any]] = []
        for (status, cause), n in sorted(refusals.items()):
            template = REFUSAL_DETAILS.get(cause, "{n} request(s) refused ({status})")
            detail = template.format(n=n, status=status, max_bytes=self.limits.max_bytes, connections=MAX_CONNECTIONS,
                                     served=self.max_connections)
            events.append({"kind": "validation-refused", "detail": detail, "status": status, "count": n})
        if failures.get("timeout"):
            n = failures["timeout"]
            events.append({"kind": "validation-timeout", "status": 504, "count": n,
                           "detail": f"{n} validation(s) stopped at the {self.limits.time_limit_s:g}-second bound "
                                     "(worker restarted)"})
        if failures.get("failed"):
            n = failures["failed"]
            events.append({"kind": "validation-failed", "status": 500, "count": n,
                           "detail": f"{n} validation(s) failed in the worker (validator error, crash or memory limit)"})
        return events

    def validate(self, submission: Path) -> tuple[int, dict[str, Any]]:
        """Validate one posted file in the worker, log the call, and return the HTTP reply.

        Parameters
        ----------
        submission : pathlib.Path
            The posted file on the host.

        Returns
        -------
        (int, dict)
            HTTP status (200, 504 on timeout, 500 if the validator failed) and the JSON reply
            ``{"valid": bool, "result": text}`` with the templated text.
        """
        result = self._worker.check(submission)
        shape = SubmissionShape()
        if result.status == "ok":
            outcome = as_outcome(result.outcome or {})
            if result.shape:
                shape = SubmissionShape.from_dict(result.shape)
            status = 200
        elif result.status == "timeout":
            outcome, status = ValidationOutcome(valid=False, reason="timeout"), 504
        else:
            logger.warning("validator failed on a posted submission: %s", result.error)
            outcome, status = ValidationOutcome(valid=False, reason="validator-failed"), 500
        if outcome.detail:
            logger.debug("validation detail (host only): %s", outcome.detail)
        text = render_reply(outcome, shape=shape, expected_columns=self.expected_columns, public=self.public,
                            max_bytes=self.limits.max_bytes, time_limit_s=self.limits.time_limit_s)
        # The log names no more than the reply does (and the data row of a line it names).
        column, line = shown_fields(outcome, shape=shape, expected_columns=self.expected_columns)
        row = outcome.row if line is not None and outcome.line is None else None
        entry = {"ts": datetime.now(timezone.utc).isoformat(), "valid": outcome.valid, "message": text,
                 "reason": outcome.reason, "column": column, "row": row, "line": line, "status": status}
        with self._lock:
            if result.status != "ok":
                self._failures[result.status] += 1
            if self._log is not None:
                self._log.write(json.dumps(entry, sort_keys=True) + "\n")
                self._log.flush()
            s = self._stats
            self._stats = ValidationStats(count=s.count + 1, valid=s.valid + int(outcome.valid),
                                          invalid=s.invalid + int(not outcome.valid), refused=s.refused)
        return status, {"valid": outcome.valid, "result": text}
