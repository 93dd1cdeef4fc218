"""The host-side HTTP(S) proxy that enforces a network allow-list.

With ``network: {allow: [...]}`` the sandbox still gets no network interface. Inside it a
loopback forwarder (``assets/forward.py``) relays connections through a Unix socket to this
proxy, which reads one request head, checks the target host against the allow-list and then
either refuses (``403``) or connects out and relays bytes both ways. It handles ``CONNECT
host:port`` (HTTPS and anything tunnelled) and absolute-form plain HTTP requests
(``GET http://host/path``). Name resolution happens here, on the host, for allowed hosts only,
so the sandbox needs no resolver. Every decision is recorded and ends up in ``run.json``.

Allow-list entries: ``host`` (any port), ``host:port``, ``*.domain`` (any sub-domain, not the
domain itself), ``*.domain:port``. Matching is on the name the client asked for, lower-cased.
"""

from __future__ import annotations

import logging
import select
import socket
import socketserver
import threading
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Sequence
from urllib.parse import urlsplit

from sandbox.unix_service import UnixSocketService

__all__ = ["ProxyDecision", "AllowListProxy", "host_allowed"]

logger = logging.getLogger(__name__)

_MAX_HEAD = 64 * 1024
_IDLE_S = 600.0
_CONNECT_TIMEOUT_S = 30.0
#: Decisions kept for run.json; later ones are only counted.
_MAX_RECORDED = 1000


def host_allowed(host: str, port: int, allow: Sequence[str]) -> bool:
    """Whether ``host:port`` matches an allow-list entry.

    Examples
    --------
    >>> host_allowed("files.pythonhosted.org", 443, ["*.pythonhosted.org"])
    True
    >>> host_allowed("pythonhosted.org", 443, ["*.pythonhosted.org"])
    False
    >>> host_allowed("pypi.org", 80, ["pypi.org:443"])
    False
    """
    host = host.lower().rstrip(".")
    for entry in allow:
        name, _, want_port = entry.lower().partition(":")
        if want_port and int(want_port) != port:
            continue
        if name.startswith("*."):
            if host.endswith(name[1:]) and host != name[2:]:
                return True
        elif host == name:
            return True
    return False


@dataclass(frozen=True, slots=True, kw_only=True)
class ProxyDecision:
    """One request the proxy saw: where to and whether it was let through."""

    ts: str
    host: str
    port: int
    method: str
    allowed: bool
    error: str | None = None

    def to_dict(self) -> dict[str, object]:
        return {"ts": self.ts, "host": self.host, "port": self.port, "method": self.method,
                "allowed": self.allowed, "error": self.error}  # fmt: skip


class _Handler(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        owner: AllowListProxy = self.server.owner  # type: ignore[attr-defined]
        client: socket.socket = self.request
        client.settimeout(_CONNECT_TIMEOUT_S)
        head = b""
        try:
            while b"\r\n\r\n" not in head:
                chunk = client.recv(4096)
                if not chunk:
                    return
                head += chunk
                if len(head) > _MAX_HEAD:
                    client.sendall(b"HTTP/1.1 431 Request Header Fields Too Large\r\n\r\n")
                    return
        except OSError:
            return
        header, _, rest = head.partition(b"\r\n\r\n")
        lines = header.split(b"\r\n")
        try:
            method, target, version = lines[0].decode("latin-1").split(" ", 2)
        except ValueError:
            client.sendall(b"HTTP/1.1 400 Bad Request\r\n\r\n")
            return
        if method.upper() == "CONNECT":
            host, _, port_text = target.rpartition(":")
            port = int(port_text) if port_text.isdigit() else 443
            forward = b""
        else:
            parts = urlsplit(target)
            if parts.scheme != "http" or not parts.hostname:
                owner.record(ProxyDecision(ts=_now(), host=target[:200], port=0, method=method, allowed=False,
                                           error="not an absolute http:// URL"))  # fmt: skip
                client.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")
                return
            host, port = parts.hostname, parts.port or 80
            path = parts.path or "/"
            if parts.query:
                path += "?" + parts.query
            kept = [h for h in lines[1:] if not h.lower().startswith((b"proxy-connection:", b"proxy-authorization:"))]
            forward = b"\r\n".join([f"{method} {path} {version}".encode("latin-1"), *kept]) + b"\r\n\r\n" + rest
        host = host.strip("[]")
        if not host_allowed(host, port, owner.allow):
            owner.record(ProxyDecision(ts=_now(), host=host, port=port, method=method, allowed=False))
            body = f"{host}:{port} is not on the sandbox's network allow-list\n".encode()
            client.sendall(b"HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain\r\nContent-Length: "
                           + str(len(body)).encode() + b"\r\n\r\n" + body)  # fmt: skip
            return
        try:
            upstream = socket.create_connection((host, port), timeout=_CONNECT_TIMEOUT_S)
        except OSError as exc:
            owner.record(ProxyDecision(ts=_now(), host=host, port=port, method=method, allowed=True,
                                       error=exc.strerror or str(exc)))  # fmt: skip
            client.sendall(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n")
            return
        owner.record(ProxyDecision(ts=_now(), host=host, port=port, method=method, allowed=True))
        try:
            if method.upper() == "CONNECT":
                client.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
                if rest:
                    upstream.sendall(rest)
            else:
                upstream.sendall(forward)
            _relay(client, upstream)
        except OSError:
            pass
        finally:
            upstream.close()


def _relay(a: socket.socket, b: socket.socket) -> None:
    pair = {a: b, b: a}
    for sock in pair:
        sock.settimeout(None)
    while True:
        readable, _, _ = select.select(list(pair), [], [], _IDLE_S)
        if not readable:
            return
        for sock in readable:
            data = sock.recv(65536)
            if not data:
                return
            pair[sock].sendall(data)


def _now() -> str:
    return datetime.now(timezone.utc).isoformat()


class AllowListProxy(UnixSocketService):
    """A filtering proxy on a Unix socket; see the module docstring.

    Parameters
    ----------
    socket_path : pathlib.Path
        Where to listen (made connectable by any local user, as the sandbox user differs).
    allow : sequence of str
        The allow-list.
    """

    handler_class = _Handler
    thread_name = "allow-list-proxy"

    def __init__(self, socket_path: Path, allow: Sequence[str]) -> None:
        super().__init__(socket_path)
        self.allow = tuple(allow)
        self._lock = threading.Lock()
        self._decisions: list[ProxyDecision] = []
        self._denied = 0
        self._allowed = 0

    def record(self, decision: ProxyDecision) -> None:
        with self._lock:
            if decision.allowed:
                self._allowed += 1
            else:
                self._denied += 1
            if len(self._decisions) < _MAX_RECORDED:
                self._decisions.append(decision)
        logger.info("network %s %s:%s -> %s", decision.method, decision.host, decision.port,
                    "allowed" if decision.allowed else "denied")  # fmt: skip

    def summary(self) -> dict[str, object]:
        """Counts and the first recorded decisions, for ``run.json``."""
        with self._lock:
            return {"allowed": self._allowed, "denied": self._denied,
                    "requests": [d.to_dict() for d in self._decisions]}  # fmt: skip
