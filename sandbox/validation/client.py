"""The host-side client of the endpoint: post a file to its socket and read the reply."""

from __future__ import annotations

import json
import socket
from pathlib import Path


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
