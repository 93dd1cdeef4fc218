"""The host side of the validation endpoint, served over a Unix socket bound into the sandbox.

MLE-bench gives agents ``POST /validate`` (and ``/home/validate_submission.sh`` around it) to
check that a submission file is well formed. Here the server runs on the host, where the
answers are, and listens on a Unix socket that is bound into the sandbox at
``/home/validate.sock``, so it works with no network at all. It answers JSON
``{"valid": bool, "result": message}``: valid or invalid and the validator's message (which names
columns, rows and ids, never answer values, and never a score). The temporary host path of the
posted file is replaced by ``submission.csv`` in messages.

Every call is appended to a JSON Lines log that only the host can write, one object per call::

    {"ts": "2024-05-01T12:00:00.123456+00:00", "valid": false, "message": "..."}

which the run dir keeps at ``logs/validation_calls.jsonl`` for the audit's probing check.

Request bodies are either ``multipart/form-data`` with a ``file`` field (``curl -F
file=@submission.csv``, as MLE-bench's server takes) or the raw file (``Content-Type: text/csv``
or ``application/octet-stream``); bodies over ``max_bytes`` are refused.
"""

from __future__ import annotations

import email.parser
import email.policy
import http.server
import json
import logging
import socket
import tempfile
import threading
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable

from sandbox.unix_service import UnixSocketService

__all__ = ["Validator", "ValidationStats", "ValidationServer", "VALIDATION_CALLS_FILE", "post_submission"]

logger = logging.getLogger(__name__)

#: A function that checks one submission file: ``(valid, message)``, never a score.
Validator = Callable[[Path], "tuple[bool, str]"]

#: Name of the calls log inside the run's ``logs/`` folder (read by the audit).
VALIDATION_CALLS_FILE = "validation_calls.jsonl"
#: Largest request body accepted, in bytes.
DEFAULT_MAX_BYTES = 512 * 1024 * 1024
#: Seconds a client may stay silent before its connection is closed.
CLIENT_TIMEOUT_S = 60.0
_CHUNK = 1 << 20
#: A refused request's body up to this many bytes is read and thrown away before the reply, so the
#: client reads the refusal instead of failing with a broken pipe while it is still sending.
_DISCARD_LIMIT = 8 << 20


@dataclass(frozen=True, slots=True, kw_only=True)
class ValidationStats:
    """Counts of validation calls during a run.

    Attributes
    ----------
    count : int
        Calls answered (valid + invalid + failed).
    valid, invalid : int
        Calls whose file was valid / invalid.
    refused : int
        Requests refused before validation (wrong path or method, body too large, no file).
    """

    count: int = 0
    valid: int = 0
    invalid: int = 0
    refused: int = 0

    def to_dict(self) -> dict[str, int]:
        return {"count": self.count, "valid": self.valid, "invalid": self.invalid, "refused": self.refused}


class _Handler(http.server.BaseHTTPRequestHandler):
    server_version = "mleaudit-validate/1"
    protocol_version = "HTTP/1.0"
    timeout = CLIENT_TIMEOUT_S

    # Unix sockets have no client address; the default would index an empty string.
    def address_string(self) -> str:
        return "sandbox"

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - the base class's name
        logger.debug("validation endpoint: " + format, *args)

    def do_GET(self) -> None:  # noqa: N802 - http.server's naming
        if self.path.rstrip("/") in ("", "/health"):
            self._reply(200, {"status": "ok"})
        else:
            self._refuse(404, "POST the submission file to /validate")

    def do_POST(self) -> None:  # noqa: N802 - http.server's naming
        owner: ValidationServer = self.server.owner  # type: ignore[attr-defined]
        if self.path.split("?", 1)[0].rstrip("/") != "/validate":
            self._refuse(404, "POST the submission file to /validate")
            return
        try:
            length = int(self.headers.get("Content-Length", ""))
        except ValueError:
            self._refuse(411, "a Content-Length header is required")
            return
        if length < 0 or length > owner.max_bytes:
            self._refuse(413, f"the request body is over the {owner.max_bytes}-byte limit")
            return
        with tempfile.TemporaryDirectory(prefix="validate-", dir=owner.scratch_dir) as scratch:
            body = Path(scratch) / "body"
            with body.open("wb") as handle:
                remaining = length
                while remaining:
                    chunk = self.rfile.read(min(_CHUNK, remaining))
                    if not chunk:
                        break
                    handle.write(chunk)
                    remaining -= len(chunk)
            if remaining:
                self._refuse(400, "the request body ended early")
                return
            submission = Path(scratch) / "submission.csv"
            content_type = self.headers.get("Content-Type", "")
            if content_type.lower().startswith("multipart/form-data"):
                if not _extract_multipart(body, content_type, submission):
                    self._refuse(400, "no 'file' field in the multipart form")
                    return
            else:
                body.rename(submission)
            valid, message = owner.validate(submission, scratch)
        self._reply(200, {"valid": valid, "result": message})

    def _refuse(self, status: int, message: str) -> None:
        self.server.owner.record_refusal()  # type: ignore[attr-defined]
        self._discard_body()
        self._reply(status, {"valid": False, "result": message})

    def _discard_body(self) -> None:
        try:
            remaining = min(max(int(self.headers.get("Content-Length", "0")), 0), _DISCARD_LIMIT)
        except ValueError:
            return
        self.close_connection = True
        try:
            while remaining > 0:
                chunk = self.rfile.read(min(_CHUNK, remaining))
                if not chunk:
                    break
                remaining -= len(chunk)
        except OSError:  # the client stopped sending (or timed out): reply anyway
            logger.debug("validation client stopped sending a refused body")

    def _reply(self, status: int, payload: dict) -> None:
        data = json.dumps(payload).encode("utf-8")
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except OSError:
            logger.debug("validation client went away before the reply")


def _extract_multipart(body: Path, content_type: str, out: Path) -> bool:
    """Write the ``file`` part (or the first part) of a multipart body to ``out``; False if none."""
    parser = email.parser.BytesParser(policy=email.policy.HTTP)
    with body.open("rb") as handle:
        head = f"Content-Type: {content_type}\r\nMIME-Version: 1.0\r\n\r\n".encode("latin-1")
        message = parser.parsebytes(head + handle.read())
    if not message.is_multipart():
        return False
    parts = list(message.iter_parts())
    chosen = next((p for p in parts if p.get_param("name", header="content-disposition") == "file"), None)
    chosen = chosen or next((p for p in parts if p.get_filename()), None)
    if chosen is None:
        return False
    payload = chosen.get_payload(decode=True)
    if payload is None:
        return False
    out.write_bytes(payload)
    return True


class ValidationServer(UnixSocketService):
    """Serve the validation endpoint on a Unix socket and log every call.

    Parameters
    ----------
    socket_path : pathlib.Path
        Where to create the socket (at most 107 bytes long; it is made connectable by any
        local user, since the sandbox user differs from the host's).
    validator : Validator
        Checks one submission file and returns ``(valid, message)``.
    log_path : pathlib.Path
        JSON Lines calls log, appended to and flushed after every call.
    max_bytes : int
        Largest request body accepted.

    Examples
    --------
    >>> server = ValidationServer(sock, validator, log)      # doctest: +SKIP
    >>> with server:                                          # doctest: +SKIP
    ...     run_the_agent()
    >>> server.stats.count                                    # doctest: +SKIP
    3
    """

    handler_class = _Handler
    thread_name = "validation-endpoint"

    def __init__(self, socket_path: Path, validator: Validator, log_path: Path, *, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        super().__init__(socket_path)
        self.validator = validator
        self.log_path = Path(log_path)
        self.max_bytes = max_bytes
        self.scratch_dir = str(self.socket_path.parent)
        self._lock = threading.Lock()
        self._stats = ValidationStats()
        self._log = None

    @property
    def stats(self) -> ValidationStats:
        """Counts so far."""
        with self._lock:
            return self._stats

    def start(self) -> None:
        """Open the calls log, create the socket and serve in a background thread."""
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log = self.log_path.open("a", encoding="utf-8")
        super().start()

    def stop(self) -> None:
        """Stop serving, remove the socket and close the log."""
        super().stop()
        with self._lock:
            if self._log is not None:
                self._log.close()
                self._log = None

    def record_refusal(self) -> None:
        with self._lock:
            s = self._stats
            self._stats = ValidationStats(count=s.count, valid=s.valid, invalid=s.invalid, refused=s.refused + 1)

    def validate(self, submission: Path, scratch: str) -> tuple[bool, str]:
        """Run the validator on one posted file, log the call and return ``(valid, message)``."""
        # One validation at a time: it reads the answers and must not be used to load the host.
        with self._lock:
            try:
                valid, message = self.validator(submission)
                valid, message = bool(valid), str(message)
            except Exception as exc:  # noqa: BLE001 - the agent gets a generic reply, the host log the cause
                logger.warning("validator failed on a posted submission: %r", exc)
                valid, message = False, "The submission could not be validated."
            # Host paths mean nothing to the agent and tell it about the host's layout.
            message = message.replace(str(submission), "submission.csv").replace(scratch, ".")
            entry = {"ts": datetime.now(timezone.utc).isoformat(), "valid": valid, "message": message}
            if self._log is not None:
                self._log.write(json.dumps(entry, sort_keys=True) + "\n")
                self._log.flush()
            s = self._stats
            self._stats = ValidationStats(
                count=s.count + 1, valid=s.valid + int(valid), invalid=s.invalid + int(not valid), refused=s.refused
            )
        return valid, message


def post_submission(socket_path: Path, submission: Path, *, timeout: float = 60.0) -> tuple[int, dict]:
    """Post a file to a validation socket (the host-side twin of ``validate_submission.sh``).

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
