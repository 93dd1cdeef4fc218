"""The allow-list proxy: CONNECT and plain HTTP to allowed hosts, 403 for the rest.

Only loopback is ever contacted: the upstream is an HTTP server on 127.0.0.1.
"""

from __future__ import annotations

import http.server
import socket
import tempfile
import threading
from pathlib import Path

import pytest

from sandbox.proxy import AllowListProxy, host_allowed


@pytest.fixture
def upstream():
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802
            body = f"hello from {self.path}".encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


def _exchange(sock_path: Path, data: bytes, then: bytes = b"") -> bytes:
    client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    client.settimeout(10)
    client.connect(str(sock_path))
    client.sendall(data)
    reply = b""
    if then:
        while b"\r\n\r\n" not in reply:
            reply += client.recv(4096)
        client.sendall(then)
    while True:
        chunk = client.recv(4096)
        if not chunk:
            break
        reply += chunk
        if then and b"hello from" in reply:
            break
    client.close()
    return reply


@pytest.fixture
def proxy_factory():
    made = []

    def make(allow):
        folder = Path(tempfile.mkdtemp(prefix="ptest-"))
        proxy = AllowListProxy(folder / "p.sock", allow)
        proxy.start()
        made.append((proxy, folder))
        return proxy

    yield make
    for proxy, folder in made:
        proxy.stop()
        folder.rmdir()


def test_plain_http_to_an_allowed_host_is_forwarded(proxy_factory, upstream):
    proxy = proxy_factory(["127.0.0.1"])
    reply = _exchange(proxy.socket_path, f"GET http://127.0.0.1:{upstream}/pkg?x=1 HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n".encode())
    assert reply.startswith(b"HTTP/1.0 200") and reply.endswith(b"hello from /pkg?x=1")
    assert proxy.summary()["allowed"] == 1


def test_connect_to_an_allowed_host_opens_a_tunnel(proxy_factory, upstream):
    proxy = proxy_factory([f"127.0.0.1:{upstream}"])
    reply = _exchange(proxy.socket_path, f"CONNECT 127.0.0.1:{upstream} HTTP/1.1\r\n\r\n".encode(),
                      then=b"GET /tunnel HTTP/1.0\r\n\r\n")
    assert reply.startswith(b"HTTP/1.1 200 Connection established") and b"hello from /tunnel" in reply


def test_hosts_off_the_list_get_403_and_are_recorded(proxy_factory, upstream):
    proxy = proxy_factory(["pypi.org"])
    reply = _exchange(proxy.socket_path, f"CONNECT 127.0.0.1:{upstream} HTTP/1.1\r\n\r\n".encode())
    assert reply.startswith(b"HTTP/1.1 403")
    reply = _exchange(proxy.socket_path, b"GET http://evil.invalid/x HTTP/1.0\r\n\r\n")
    assert reply.startswith(b"HTTP/1.1 403")
    summary = proxy.summary()
    assert summary["denied"] == 2 and summary["allowed"] == 0
    assert [(r["host"], r["allowed"]) for r in summary["requests"]] == [("127.0.0.1", False), ("evil.invalid", False)]


@pytest.mark.parametrize(
    ("host", "port", "allow", "expected"),
    [("pypi.org", 443, ["pypi.org"], True), ("PyPI.org.", 443, ["pypi.org"], True),
     ("evilpypi.org", 443, ["pypi.org"], False), ("a.b.example.com", 80, ["*.example.com"], True),
     ("example.com", 80, ["*.example.com"], False), ("pypi.org", 8080, ["pypi.org:443"], False)],
)
def test_host_allowed(host, port, allow, expected):
    assert host_allowed(host, port, allow) is expected
