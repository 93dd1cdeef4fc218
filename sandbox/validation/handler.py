"""The HTTP side of the endpoint: one request on the Unix socket, refused or validated, and its JSON reply.

The handler reads no more of a request than its checks need (a ``Content-Length`` over the
cap is refused before any of the body is read), takes the endpoint's connection and
one-at-a-time locks, and leaves the validation itself to
:meth:`mleaudit.sandbox.validation.server.ValidationServer.validate`.
"""

from __future__ import annotations

import http.server
import json
import logging
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from mleaudit.sandbox.feedback import ValidationOutcome, render_reply
from mleaudit.sandbox.validation.body import CHUNK, Refused, body_pieces, receive_multipart
from mleaudit.sandbox.validation.limits import CLIENT_TIMEOUT_S

if TYPE_CHECKING:
    from mleaudit.sandbox.validation.server import ValidationServer

logger = logging.getLogger(__name__)

#: A refused request's body up to this many bytes is read and thrown away before the reply, so the
#: client reads the refusal instead of failing with a broken pipe while it is still sending.
_DISCARD_LIMIT = 8 << 20


class Handler(http.server.BaseHTTPRequestHandler):
    """One request on the endpoint's socket: ``GET /health``, or ``POST /validate`` with a submission."""

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
            self._refuse(Refused(404, "bad-request", "not-found"))

    def do_POST(self) -> None:  # noqa: N802 - http.server's naming
        owner = self.owner
        if not owner._connections.acquire(blocking=False):
            self._refuse(Refused(503, "busy", "connections"), discard=False)
            return
        try:
            self._post(owner)
        finally:
            owner._connections.release()

    def _post(self, owner: "ValidationServer") -> None:
        try:
            if self.path.split("?", 1)[0].rstrip("/") != "/validate":
                raise Refused(404, "bad-request", "not-found")
            chunked = "chunked" in self.headers.get("Transfer-Encoding", "").lower()
            length = None
            if not chunked:
                try:
                    length = int(self.headers.get("Content-Length", ""))
                except ValueError:
                    raise Refused(411, "bad-request", "no-length") from None
                if length < 0:
                    raise Refused(400, "bad-request", "malformed")
                if length > owner.limits.max_bytes:  # refused before reading any of the body
                    raise Refused(413, "body-too-large", "too-large")
        except Refused as refused:
            self._refuse(refused)
            return
        if not owner._busy.acquire(timeout=owner.limits.busy_wait_s):
            self._refuse(Refused(429, "busy", "busy"))
            return
        try:
            with tempfile.TemporaryDirectory(prefix="validate-", dir=owner.scratch_dir) as scratch:
                try:
                    submission = self._receive(owner, Path(scratch), length)
                except Refused as refused:
                    self._refuse(refused, discard=False)
                    return
                status, payload = owner.validate(submission)
        finally:
            owner._busy.release()
        self._reply(status, payload)

    def _receive(self, owner: "ValidationServer", scratch: Path, length: int | None) -> Path:
        """Stream the body to ``scratch`` and return the submission file's path."""
        content_type = self.headers.get("Content-Type", "")
        pieces = body_pieces(self.rfile, owner.limits.max_bytes, length)
        if content_type.lower().startswith("multipart/form-data"):
            return receive_multipart(pieces, content_type, scratch)
        submission = scratch / "submission.csv"
        with submission.open("wb") as handle:
            for piece in pieces:
                handle.write(piece)
        return submission

    def _refuse(self, refused: Refused, *, discard: bool = True) -> None:
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
                chunk = self.rfile.read(min(CHUNK, remaining))
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
