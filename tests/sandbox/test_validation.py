"""The host-side validation endpoint: raw and multipart posts, refusals, the calls log contract."""

from __future__ import annotations

import http.client
import json
import socket
import tempfile
from pathlib import Path

import pytest

from audit.checks.validation import load_validation_calls
from sandbox.validation import ValidationServer, post_submission


class _UnixConnection(http.client.HTTPConnection):
    def __init__(self, path: Path) -> None:
        super().__init__("localhost", timeout=10)
        self._path = str(path)

    def connect(self) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(self._path)


def _request(sock: Path, method: str, path: str, body: bytes = b"", headers: dict | None = None) -> tuple[int, dict]:
    conn = _UnixConnection(sock)
    try:
        conn.request(method, path, body=body, headers=headers or {})
        response = conn.getresponse()
        return response.status, json.loads(response.read() or b"{}")
    finally:
        conn.close()


def _validator(path: Path) -> tuple[bool, str]:
    text = path.read_text(encoding="utf-8")
    if text.startswith("id,label"):
        return True, "Submission is valid."
    return False, f"Submission file {path} lacks the columns id and label."


@pytest.fixture
def server(tmp_path: Path):
    sockets = Path(tempfile.mkdtemp(prefix="vtest-"))
    srv = ValidationServer(sockets / "v.sock", _validator, tmp_path / "calls.jsonl", max_bytes=4096)
    with srv:
        yield srv
    sockets.rmdir()


def test_raw_post_is_validated_and_logged(server, tmp_path):
    good = tmp_path / "good.csv"
    good.write_text("id,label\n1,a\n", encoding="utf-8")
    assert post_submission(server.socket_path, good) == (200, {"valid": True, "result": "Submission is valid."})
    status, reply = _request(server.socket_path, "POST", "/validate", b"x,y\n1,2\n", {"Content-Type": "text/csv"})
    assert status == 200 and reply["valid"] is False
    # The host's temporary path never reaches the agent.
    assert reply["result"] == "Submission file submission.csv lacks the columns id and label."
    assert server.stats.count == 2 and server.stats.valid == 1 and server.stats.invalid == 1
    lines = [json.loads(line) for line in server.log_path.read_text().splitlines()]
    assert [sorted(line) for line in lines] == [["message", "ts", "valid"]] * 2
    assert [line["valid"] for line in lines] == [True, False]


def test_multipart_post_like_curl_dash_F(server):
    boundary = "----mleauditboundary"
    body = (
        f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"submission.csv\"\r\n"
        f"Content-Type: text/csv\r\n\r\nid,label\n1,a\n\r\n--{boundary}--\r\n"
    ).encode()
    status, reply = _request(server.socket_path, "POST", "/validate", body,
                             {"Content-Type": f"multipart/form-data; boundary={boundary}"})
    assert (status, reply["valid"]) == (200, True)


def test_refusals_are_counted_but_not_logged_as_calls(server):
    assert _request(server.socket_path, "POST", "/grade", b"id,label\n")[0] == 404
    assert _request(server.socket_path, "POST", "/validate", b"x" * 5000, {"Content-Type": "text/csv"})[0] == 413
    assert _request(server.socket_path, "GET", "/health") == (200, {"status": "ok"})
    assert server.stats.refused == 2 and server.stats.count == 0
    assert server.log_path.read_text() == ""


def test_a_failing_validator_gives_a_generic_reply(tmp_path):
    def broken(path: Path) -> tuple[bool, str]:
        raise RuntimeError("answers at /secret/answers.csv unreadable")

    sockets = Path(tempfile.mkdtemp(prefix="vtest-"))
    with ValidationServer(sockets / "v.sock", broken, tmp_path / "calls.jsonl") as srv:
        status, reply = _request(srv.socket_path, "POST", "/validate", b"id,label\n", {"Content-Type": "text/csv"})
    assert status == 200 and reply == {"valid": False, "result": "The submission could not be validated."}
    assert "/secret" not in (tmp_path / "calls.jsonl").read_text()


def test_the_audit_reads_the_calls_log_this_server_writes(server, tmp_path):
    sub = tmp_path / "s.csv"
    sub.write_text("id,label\n", encoding="utf-8")
    for _ in range(3):
        post_submission(server.socket_path, sub)
    calls, malformed = load_validation_calls(server.log_path)
    assert malformed == 0
    assert len(calls) == 3 and all(c.valid is True and c.ts is not None for c in calls)


def test_socket_paths_longer_than_the_kernel_allows_are_refused(tmp_path):
    with pytest.raises(ValueError, match="107 bytes"):
        ValidationServer(tmp_path / ("x" * 120) / "v.sock", _validator, tmp_path / "calls.jsonl")
