"""The allow-list proxy: CONNECT and plain HTTP to allowed hosts, 403 for the rest.

Only loopback is ever contacted: the upstream is an HTTP server on 127.0.0.1.
"""

from __future__ import annotations

import http.server
import socket
import tempfile
import threading
import time
from pathlib import Path

import pytest

from mleaudit.sandbox.proxy import AllowListProxy, host_allowed


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
    proxy = proxy_factory([f"127.0.0.1:{upstream}"])
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
     ("example.com", 80, ["*.example.com"], False), ("pypi.org", 8080, ["pypi.org:443"], False),
     # An entry without a port opens HTTP and HTTPS only.
     ("pypi.org", 22, ["pypi.org"], False), ("pypi.org", 80, ["pypi.org"], True),
     ("a.example.com", 8443, ["*.example.com"], False), ("pypi.org", 8443, ["pypi.org:8443"], True)],
)
def test_host_allowed(host, port, allow, expected):
    assert host_allowed(host, port, allow) is expected


def test_denied_events_group_refusals_per_host_and_port(proxy_factory):
    proxy = proxy_factory(["pypi.org"])
    for _ in range(3):
        assert _exchange(proxy.socket_path, b"CONNECT api.openai.com:443 HTTP/1.1\r\n\r\n").startswith(b"HTTP/1.1 403")
    _exchange(proxy.socket_path, b"CONNECT API.OpenAI.com.:443 HTTP/1.1\r\n\r\n")
    _exchange(proxy.socket_path, b"CONNECT www.kaggle.com:443 HTTP/1.1\r\n\r\n")
    first, second = proxy.denied_events()
    assert first["kind"] == "network-denied"
    assert (first["host"], first["port"], first["method"], first["count"]) == ("api.openai.com", 443, "CONNECT", 4)
    assert first["detail"] == "4 request(s) to api.openai.com:443 refused (not on the allow-list)"
    assert first["urls"] == [] and "url" not in first and first["first_ts"] <= first["last_ts"]
    assert (second["host"], second["count"]) == ("www.kaggle.com", 1)
    assert proxy.summary()["denied"] == 5  # the summary is unchanged


def test_plain_http_refusals_show_the_request_without_its_query(proxy_factory):
    proxy = proxy_factory(["pypi.org"])
    request = b"POST http://api.openai.com/v1/chat/completions?key=sk-secret HTTP/1.1\r\nHost: api.openai.com\r\n\r\n"
    assert _exchange(proxy.socket_path, request).startswith(b"HTTP/1.1 403")
    _exchange(proxy.socket_path, b"GET http://api.openai.com:8080/v1/models HTTP/1.1\r\n\r\n")
    by_port = {e["port"]: e for e in proxy.denied_events()}
    event = by_port[80]
    assert event["method"] == "POST" and event["url"] == "http://api.openai.com/v1/chat/completions?..."
    assert event["detail"] == ("1 request(s) to api.openai.com:80 refused (not on the allow-list); "
                               "first: POST http://api.openai.com/v1/chat/completions?...")
    assert by_port[8080]["urls"] == ["http://api.openai.com:8080/v1/models"]
    assert "sk-secret" not in repr(proxy.denied_events()) + repr(proxy.summary())


def test_requests_that_are_not_absolute_http_are_refused_under_the_host_they_name(proxy_factory):
    proxy = proxy_factory([])
    assert _exchange(proxy.socket_path, b"POST https://api.anthropic.com/v1/messages HTTP/1.1\r\n\r\n").startswith(b"HTTP/1.1 400")
    _exchange(proxy.socket_path, b"GET /index.html HTTP/1.1\r\n\r\n")
    named, unnamed = proxy.denied_events()
    assert (named["host"], named["port"], named["url"]) == ("api.anthropic.com", 443, "https://api.anthropic.com/v1/messages")
    assert named["detail"].startswith("1 request(s) to api.anthropic.com:443 refused (not an absolute http:// URL)")
    assert (unnamed["host"], unnamed["port"], unnamed["url"]) == ("(none)", 0, "/index.html")


def test_hostile_host_names_are_recorded_as_bounded_printable_ascii(proxy_factory):
    proxy = proxy_factory([])
    host = "evil\x1b[31m\u00e9" + "a" * 5000
    reply = _exchange(proxy.socket_path, f"CONNECT {host}:99999999999 HTTP/1.1\r\n\r\n".encode("latin-1", "replace"))
    assert reply.startswith(b"HTTP/1.1 403")
    (event,) = proxy.denied_events()
    assert len(event["host"]) <= 253 and event["host"].endswith("...") and event["port"] == 443
    assert all(" " < c <= "~" for c in event["host"]) and event["host"].startswith("evil?[31m?")
    assert len(event["detail"]) < 400


def test_denied_events_are_capped_and_the_rest_summed(proxy_factory, monkeypatch):
    import mleaudit.sandbox.proxy as proxy_module

    monkeypatch.setattr(proxy_module, "MAX_DENIED_TARGETS", 2)
    proxy = proxy_factory([])
    for n in range(5):
        _exchange(proxy.socket_path, f"CONNECT host{n}.example:443 HTTP/1.1\r\n\r\n".encode())
    _exchange(proxy.socket_path, b"CONNECT host4.example:443 HTTP/1.1\r\n\r\n")
    events = proxy.denied_events()
    assert [e["host"] for e in events] == ["host0.example", "host1.example", "*"]
    rest = events[-1]
    assert (rest["count"], rest["targets"], rest["port"]) == (4, 3, 0)
    assert rest["detail"].startswith("4 request(s) to 3 further host(s) refused")


def test_nothing_refused_gives_no_events(proxy_factory, upstream):
    proxy = proxy_factory([f"127.0.0.1:{upstream}"])
    _exchange(proxy.socket_path, f"GET http://127.0.0.1:{upstream}/ok HTTP/1.0\r\n\r\n".encode())
    assert proxy.denied_events() == []
    assert proxy.summary()["requests"][0]["url"] == f"http://127.0.0.1:{upstream}/ok"


def test_a_connection_flood_is_bounded_and_recorded(proxy_factory):
    proxy = proxy_factory(["pypi.org"])
    before = threading.active_count()
    held = []
    try:
        for _ in range(proxy.max_connections + 40):
            client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            client.connect(str(proxy.socket_path))
            held.append(client)
            try:
                client.sendall(b"CONN")  # a head that never ends
            except OSError:  # a connection over the bound is closed at once
                pass
        deadline = time.monotonic() + 10
        while proxy.overflowed < 40 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert proxy.overflowed >= 40
        assert threading.active_count() - before <= proxy.max_connections
    finally:
        for client in held:
            client.close()
    (flood,) = [e for e in proxy.denied_events() if e["kind"] == "network-flood"]
    assert flood["count"] == proxy.overflowed and proxy.summary()["overflowed_connections"] == proxy.overflowed


@pytest.mark.parametrize(
    ("head", "why"),
    [(b"CONNECT api.openai.com:443 HTTP/1.1\n\n", None),
     (b"CONNECT api.anthropic.com:443 HTTP/1.1\r\nX: y", "did not end"),
     (b"POST http://api.openai.com/v1/chat?key=sk-1 HTTP/1.1\r\n" + b"X: " + b"a" * 70_000, "size limit")],
    ids=["bare newlines", "never ends", "oversized"],
)
def test_a_request_that_never_completes_is_still_recorded(proxy_factory, monkeypatch, head, why):
    import mleaudit.sandbox.proxy as proxy_module

    monkeypatch.setattr(proxy_module, "_CONNECT_TIMEOUT_S", 1.0)
    proxy = proxy_factory(["pypi.org"])
    client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    client.connect(str(proxy.socket_path))
    try:
        client.sendall(head)
        client.settimeout(5)
        try:
            client.recv(4096)
        except OSError:
            pass
    finally:
        client.close()
    deadline = time.monotonic() + 5
    while not proxy.denied_events() and time.monotonic() < deadline:
        time.sleep(0.05)
    (event,) = proxy.denied_events()
    assert event["host"] in ("api.openai.com", "api.anthropic.com") and event["kind"] == "network-denied"
    if why is not None:
        assert any(why in (r["error"] or "") for r in proxy.summary()["requests"])
    assert "sk-1" not in str(proxy.denied_events())
