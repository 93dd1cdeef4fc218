"""The host side of the validation endpoint, served over a Unix socket bound into the sandbox.

MLE-bench gives agents ``POST /validate`` (and ``/home/validate_submission.sh`` around it) to
check that a submission file is well formed. Here the server runs on the host, where the
answers are, and listens on a Unix socket that is bound into the sandbox at
``/home/validate.sock``, so it works with no network at all. It answers JSON
``{"valid": bool, "result": text}``, where the text is rendered only from the endpoint's own
templates (:mod:`mleaudit.sandbox.feedback`): a reason, at most a column name the submission itself has
(or a public expected column), a line number within the file (the header is line 1), counts of
the file's own rows and fields, public facts of the competition (the sample submission's row
count, what the metric needs) and the host's configured limits. Grading's own message, an
exception's text, ids, cells and answer values never reach the agent.

Every call that reached the validator is appended to a JSON Lines log that only the host can
write, one object per call::

    {"ts": "2024-05-01T12:00:00.123456+00:00", "valid": false, "message": "<the reply text>",
     "reason": "missing-value", "column": "label", "row": 7, "line": 8, "status": 200}

which the run dir keeps at ``logs/validation_calls.jsonl`` for the audit's probing checks.
``column`` and ``line`` are what the reply names (or ``null``); ``row`` is the data row whose
line the reply names (``null`` when it names none, or a line the parser found).
``status`` is 200 for a verdict, 504 when the validation ran out of time and 500 when the
validator failed. Refused requests are not calls: they are counted in :attr:`ValidationServer.stats`
and summarised by :meth:`ValidationServer.events` for ``run.json``.

Host cost is bounded (:class:`ValidationLimits`):

- request bodies are streamed to disk, never held in memory: a ``Content-Length`` over
  ``max_bytes`` is refused with 413 before any of the body is read, and a chunked body is
  refused with 413 as soon as it passes the cap; ``multipart/form-data`` bodies (``curl -F
  file=@submission.csv``, as MLE-bench's server takes) are parsed as they stream, with
  ``python-multipart``, and only the ``file`` part (else the first part with a file name) is
  kept; any other body is the raw file (``Content-Type: text/csv`` or ``application/octet-stream``);
- the validator runs in a separate worker process (:mod:`mleaudit.sandbox.validation_worker`) with an
  address-space limit and a wall-clock bound per call;
- one request is read and validated at a time; another waits at most ``busy_wait_s`` and is
  then refused with 429, and connections beyond :data:`MAX_CONNECTIONS` get 503 at once.
"""

from __future__ import annotations

import http.server
import json
import logging
import socket
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

from mleaudit.sandbox.feedback import PublicFacts, SubmissionShape, ValidationOutcome, as_outcome, render_reply, shown_fields
from mleaudit.sandbox.unix_service import UnixSocketService
from mleaudit.sandbox.validation_worker import ValidationWorker

__all__ = [
    "Validator",
    "ValidationLimits",
    "ValidationOutcome",
    "ValidationStats",
    "ValidationServer",
    "VALIDATION_CALLS_FILE",
    "post_submission",
]

logger = logging.getLogger(__name__)

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
_CHUNK = 1 << 20
#: A refused request's body up to this many bytes is read and thrown away before the reply, so the
#: client reads the refusal instead of failing with a broken pipe while it is still sending.
_DISCARD_LIMIT = 8 << 20
#: Longest line of a chunked body's framing, and of one multipart part's headers.
_MAX_LINE = 8192
_MAX_PART_HEADERS = 16384


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


class _Refused(Exception):
    """A request refused before validation: HTTP status, reply reason, and cause for the events."""

    def __init__(self, status: int, reason: str, cause: str) -> None:
        super().__init__(cause)
        self.status, self.reason, self.cause = status, reason, cause


#: ``run.json`` event text per refusal cause (``{n}`` requests, ``{max_bytes}`` the limit).
_REFUSAL_DETAILS = {
    "too-large": "{n} request(s) over the {max_bytes}-byte limit refused ({status})",
    "busy": "{n} request(s) refused while another validation was running ({status})",
    "connections": "{n} request(s) refused: more than {connections} connections at once ({status})",
    "closed": "{n} connection(s) closed unread: more than {served} open at once",
    "not-found": "{n} request(s) to a path other than /validate refused ({status})",
    "no-length": "{n} request(s) without a Content-Length or chunked body refused ({status})",
    "malformed": "{n} request(s) with a malformed body or no file refused ({status})",
    "slow": "{n} request(s) whose body did not arrive in time refused ({status})",
}


class _Handler(http.server.BaseHTTPRequestHandler):
    server_version = "mleaudit-validate/2"
    protocol_version = "HTTP/1.0"
    timeout = CLIENT_TIMEOUT_S

    # Unix sockets have no client address; the default would index an empty string.
    def address_string(self) -> str:
        return "sandbox"

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - the base class's name
        logger.debug("validation endpoint: " + format, *args)

    @property
    def owner(self) -> "ValidationServer":
        return self.server.owner  # type: ignore[attr-defined]

    def do_GET(self) -> None:  # noqa: N802 - http.server's naming
        if self.path.rstrip("/") in ("", "/health"):
            self._reply(200, {"status": "ok"})
        else:
            self._refuse(_Refused(404, "bad-request", "not-found"))

    def do_POST(self) -> None:  # noqa: N802 - http.server's naming
        owner = self.owner
        if not owner._connections.acquire(blocking=False):
            self._refuse(_Refused(503, "busy", "connections"), discard=False)
            return
        try:
            self._post(owner)
        finally:
            owner._connections.release()

    def _post(self, owner: "ValidationServer") -> None:
        try:
            if self.path.split("?", 1)[0].rstrip("/") != "/validate":
                raise _Refused(404, "bad-request", "not-found")
            chunked = "chunked" in self.headers.get("Transfer-Encoding", "").lower()
            length = None
            if not chunked:
                try:
                    length = int(self.headers.get("Content-Length", ""))
                except ValueError:
                    raise _Refused(411, "bad-request", "no-length") from None
                if length < 0:
                    raise _Refused(400, "bad-request", "malformed")
                if length > owner.limits.max_bytes:  # refused before reading any of the body
                    raise _Refused(413, "body-too-large", "too-large")
        except _Refused as refused:
            self._refuse(refused)
            return
        if not owner._busy.acquire(timeout=owner.limits.busy_wait_s):
            self._refuse(_Refused(429, "busy", "busy"))
            return
        try:
            with tempfile.TemporaryDirectory(prefix="validate-", dir=owner.scratch_dir) as scratch:
                try:
                    submission = self._receive(owner, Path(scratch), length)
                except _Refused as refused:
                    self._refuse(refused, discard=False)
                    return
                status, payload = owner.validate(submission)
        finally:
            owner._busy.release()
        self._reply(status, payload)

    def _body(self, owner: "ValidationServer", length: int | None) -> Iterator[bytes]:
        """The request body in pieces, at most ``max_bytes`` in all (413 past it)."""
        deadline = time.monotonic() + UPLOAD_TIMEOUT_S
        cap = owner.limits.max_bytes
        total = 0

        def read(n: int) -> bytes:
            if time.monotonic() > deadline:
                raise _Refused(408, "bad-request", "slow")
            try:
                return self.rfile.read(n)
            except OSError:
                raise _Refused(408, "bad-request", "slow") from None

        def exactly(count: int):
            remaining = count
            while remaining:
                piece = read(min(_CHUNK, remaining))
                if not piece:
                    raise _Refused(400, "bad-request", "malformed")
                remaining -= len(piece)
                yield piece

        if length is not None:
            yield from exactly(length)
            return
        while True:  # chunked transfer coding (RFC 9112 section 7.1)
            try:
                line = self.rfile.readline(_MAX_LINE)
            except OSError:
                raise _Refused(408, "bad-request", "slow") from None
            try:
                size = int(line.split(b";", 1)[0].strip(), 16)
            except ValueError:
                raise _Refused(400, "bad-request", "malformed") from None
            if size < 0:
                raise _Refused(400, "bad-request", "malformed")
            if size == 0:
                for _ in range(64):  # trailer fields, up to the blank line
                    trailer = self.rfile.readline(_MAX_LINE)
                    if trailer in (b"\r\n", b"\n", b""):
                        return
                raise _Refused(400, "bad-request", "malformed")
            total += size
            if total > cap:
                raise _Refused(413, "body-too-large", "too-large")
            yield from exactly(size)
            if self.rfile.readline(_MAX_LINE) not in (b"\r\n", b"\n"):
                raise _Refused(400, "bad-request", "malformed")

    def _receive(self, owner: "ValidationServer", scratch: Path, length: int | None) -> Path:
        """Stream the body to ``scratch`` and return the submission file's path."""
        content_type = self.headers.get("Content-Type", "")
        pieces = self._body(owner, length)
        if content_type.lower().startswith("multipart/form-data"):
            return _receive_multipart(pieces, content_type, scratch)
        submission = scratch / "submission.csv"
        with submission.open("wb") as handle:
            for piece in pieces:
                handle.write(piece)
        return submission

    def _refuse(self, refused: _Refused, *, discard: bool = True) -> None:
        owner = self.owner
        owner.record_refusal(refused.status, refused.cause)
        if discard:
            self._discard_body()
        self.close_connection = True
        text = render_reply(ValidationOutcome(valid=False, reason=refused.reason),
                            max_bytes=owner.limits.max_bytes, time_limit_s=owner.limits.time_limit_s)
        self._reply(refused.status, {"valid": False, "result": text},
                    headers={"Retry-After": "5"} if refused.status in (429, 503) else None)

    def _discard_body(self) -> None:
        try:
            remaining = min(max(int(self.headers.get("Content-Length", "0")), 0), _DISCARD_LIMIT)
        except ValueError:
            return
        try:
            while remaining > 0:
                chunk = self.rfile.read(min(_CHUNK, remaining))
                if not chunk:
                    break
                remaining -= len(chunk)
        except OSError:  # the client stopped sending (or timed out): reply anyway
            logger.debug("validation client stopped sending a refused body")

    def _reply(self, status: int, payload: dict, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(payload).encode("utf-8")
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)
        except OSError:
            logger.debug("validation client went away before the reply")


def _receive_multipart(pieces: Iterator[bytes], content_type: str, scratch: Path) -> Path:
    """Parse a multipart body as it streams; keep the ``file`` part (else the first with a file name).

    Parts that are neither are not written; each kept part goes to its own file in ``scratch``
    (their total is bounded by the body cap).

    Raises
    ------
    _Refused
        400 for a body that is not valid multipart or holds no file part.
    """
    from python_multipart.exceptions import MultipartParseError
    from python_multipart.multipart import MultipartParser, parse_options_header

    _, params = parse_options_header(content_type)
    boundary = params.get(b"boundary")
    if not boundary:
        raise _Refused(400, "bad-request", "malformed")
    state: dict[str, Any] = {"field": bytearray(), "value": bytearray(), "headers": {}, "size": 0,
                             "handle": None, "kept": []}  # fmt: skip

    def grow(buffer: bytearray, data: bytes, start: int, end: int) -> None:
        state["size"] += end - start
        if state["size"] > _MAX_PART_HEADERS:
            raise _Refused(400, "bad-request", "malformed")
        buffer.extend(data[start:end])

    def on_part_begin() -> None:
        state["headers"], state["size"] = {}, 0

    def on_header_end() -> None:
        name = bytes(state["field"]).decode("latin-1").strip().lower()
        state["headers"][name] = bytes(state["value"])
        state["field"], state["value"] = bytearray(), bytearray()

    def on_headers_finished() -> None:
        _, disposition = parse_options_header(state["headers"].get("content-disposition", b""))
        name, filename = disposition.get(b"name"), disposition.get(b"filename")
        if name == b"file" or filename is not None:
            path = scratch / f"part-{len(state['kept'])}"
            state["kept"].append((name == b"file", path))
            state["handle"] = path.open("wb")

    def on_part_data(data: bytes, start: int, end: int) -> None:
        if state["handle"] is not None:
            state["handle"].write(data[start:end])

    def on_part_end() -> None:
        if state["handle"] is not None:
            state["handle"].close()
            state["handle"] = None

    callbacks = {
        "on_part_begin": on_part_begin,
        "on_header_field": lambda d, s, e: grow(state["field"], d, s, e),
        "on_header_value": lambda d, s, e: grow(state["value"], d, s, e),
        "on_header_end": on_header_end,
        "on_headers_finished": on_headers_finished,
        "on_part_data": on_part_data,
        "on_part_end": on_part_end,
    }
    try:
        parser = MultipartParser(boundary, callbacks)
        for piece in pieces:
            parser.write(piece)
        parser.finalize()
    except (MultipartParseError, ValueError):
        raise _Refused(400, "bad-request", "malformed") from None
    finally:
        if state["handle"] is not None:
            state["handle"].close()
    kept = state["kept"]
    chosen = next((path for is_file, path in kept if is_file), None) or next((path for _, path in kept), None)
    if chosen is None:
        raise _Refused(400, "bad-request", "malformed")
    submission = scratch / "submission.csv"
    chosen.rename(submission)
    return submission


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

    handler_class = _Handler
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
            template = _REFUSAL_DETAILS.get(cause, "{n} request(s) refused ({status})")
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


def post_submission(socket_path: Path, submission: Path, *, timeout: float = 60.0) -> tuple[int, dict]:
    """Post a file to a validation socket (the host-side twin of ``validate_submission.sh``).

    Parameters
    ----------
    socket_path : pathlib.Path
        The endpoint's socket.
    submission : pathlib.Path
        The file, posted raw as ``text/csv``.
    timeout : float
        Socket timeout in seconds.

    Returns
    -------
    (int, dict)
        HTTP status and the decoded JSON reply.
    """
    import http.client

    class _Conn(http.client.HTTPConnection):
        def connect(self) -> None:
            self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            self.sock.settimeout(timeout)
            self.sock.connect(str(socket_path))

    conn = _Conn("localhost", timeout=timeout)
    try:
        with submission.open("rb") as handle:
            conn.request("POST", "/validate", body=handle, headers={
                "Content-Type": "text/csv", "Content-Length": str(submission.stat().st_size)})  # fmt: skip
        response = conn.getresponse()
        return response.status, json.loads(response.read() or b"{}")
    finally:
        conn.close()
