"""The host-side HTTP(S) proxy that enforces a network allow-list.

The sandbox never gets a network interface. Inside it a
loopback forwarder (``assets/forward.py``) relays connections through a Unix socket to this
proxy, which reads one request head, checks the target host against the allow-list and then
either refuses (``403``) or connects out and relays bytes both ways. It handles ``CONNECT
host:port`` (HTTPS and anything tunnelled) and absolute-form plain HTTP requests
(``GET http://host/path``). Name resolution happens here, on the host, for allowed hosts only,
so the sandbox needs no resolver. Every decision is recorded and ends up in ``run.json``:
:meth:`AllowListProxy.summary` gives the counts and the first decisions, and
:meth:`AllowListProxy.denied_events` one ``network-denied`` event per refused ``host:port``
(what the audit's ``sandbox-events`` check reads). Host names and URLs are recorded as printable
ASCII of bounded length, and a URL's query string is never kept (it may carry an API key): a
refused ``POST http://api.example.com/v1/chat?key=...`` is recorded as
``POST http://api.example.com/v1/chat?...``. Through ``CONNECT`` only the host and port are
visible.

The proxy runs for every sandboxed run, with an empty allow-list when the policy is ``none``:
then it refuses everything, but a request made through the proxy settings is still recorded (and
reported by the audit) instead of failing unseen.

Allow-list entries: ``host`` (ports 80 and 443 only, :data:`DEFAULT_PORTS`), ``host:port``,
``*.domain`` (any sub-domain, not the domain itself), ``*.domain:port``. Matching is on the name
the client asked for, lower-cased.
"""

from __future__ import annotations

import logging
import re
import select
import socket
import socketserver
import threading
import time
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Sequence
from urllib.parse import urlsplit

from mleaudit.sandbox.unix_service import UnixSocketService

__all__ = ["ProxyDecision", "AllowListProxy", "host_allowed", "printable"]

logger = logging.getLogger(__name__)

_MAX_HEAD = 64 * 1024
#: The end of a request head: a blank line, after CRLF or bare LF line ends.
_HEAD_END = re.compile(rb"\r?\n\r?\n")
_LINE_END = re.compile(rb"\r?\n")
_MAX_FIRST_LINE = 8192
_IDLE_S = 600.0
_CONNECT_TIMEOUT_S = 30.0
#: Decisions kept for run.json; later ones are only counted.
_MAX_RECORDED = 1000
#: Longest host name recorded (a DNS name has at most 253 characters).
MAX_HOST_CHARS = 253
#: Longest request URL recorded (scheme, host, port and path; the query is never kept).
MAX_URL_CHARS = 300
#: Distinct refused ``host:port`` pairs given an event each; refusals beyond are summed in one
#: last event for the host ``*``.
MAX_DENIED_TARGETS = 100
#: Distinct URLs kept per refused ``host:port``.
MAX_URLS_PER_TARGET = 5
#: Host recorded for a refused request that named none (``GET /path`` sent to the proxy).
NO_HOST = "(none)"
#: Distinct targets past :data:`MAX_DENIED_TARGETS` that are counted (memory stays bounded).
_MAX_TARGETS_COUNTED = 10_000


def printable(text: str, limit: int) -> str:
    """``text`` as printable ASCII (others become ``?``), cut to ``limit`` characters.

    A cut text ends with ``...`` (within ``limit``), so a reader sees that it was cut.

    Examples
    --------
    >>> printable("api.openai.com\\x00\\u00e9", 50)
    'api.openai.com??'
    >>> printable("a" * 10, 8)
    'aaaaa...'
    """
    clean = "".join(c if " " < c <= "~" else "?" for c in text)
    if len(clean) > limit:
        clean = clean[: max(limit - 3, 0)] + "..."
    return clean


def _port(text: str, *, default: int) -> int:
    """A TCP port given as text (ASCII digits, 1-65535), else ``default``."""
    if text.isascii() and text.isdigit() and len(text) <= 5 and 0 < int(text) <= 65535:
        return int(text)
    return default


def _request_url(scheme: str, host: str, port: int, path: str, has_query: bool) -> str:
    """The URL of a plain-HTTP request as recorded: no query, bounded, printable."""
    default = {"http": 80, "https": 443}.get(scheme)
    where = host if ":" not in host else f"[{host}]"
    if port and port != default:
        where += f":{port}"
    return printable(f"{scheme}://{where}{path or '/'}{'?...' if has_query else ''}", MAX_URL_CHARS)


#: Ports an allow-list entry without a port opens: HTTP and HTTPS (an entry such as
#: ``pypi.org`` must not open ``pypi.org:22``).
DEFAULT_PORTS = frozenset({80, 443})


def host_allowed(host: str, port: int, allow: Sequence[str]) -> bool:
    """Whether ``host:port`` matches an allow-list entry.

    An entry without a port allows :data:`DEFAULT_PORTS` only.

    Examples
    --------
    >>> host_allowed("files.pythonhosted.org", 443, ["*.pythonhosted.org"])
    True
    >>> host_allowed("pythonhosted.org", 443, ["*.pythonhosted.org"])
    False
    >>> host_allowed("pypi.org", 80, ["pypi.org:443"])
    False
    >>> host_allowed("pypi.org", 22, ["pypi.org"])
    False
    """
    host = host.lower().rstrip(".")
    for entry in allow:
        name, _, want_port = entry.lower().partition(":")
        if want_port and int(want_port) != port:
            continue
        if not want_port and port not in DEFAULT_PORTS:
            continue
        if name.startswith("*."):
            if host.endswith(name[1:]) and host != name[2:]:
                return True
        elif host == name:
            return True
    return False


@dataclass(frozen=True, slots=True, kw_only=True)
class ProxyDecision:
    """One request the proxy saw: where to and whether it was let through.

    ``url`` is set for plain-HTTP requests (absolute form, query left out); a ``CONNECT``
    tunnel shows only ``host`` and ``port``.
    """

    ts: str
    host: str
    port: int
    method: str
    allowed: bool
    error: str | None = None
    url: str | None = None

    def to_dict(self) -> dict[str, object]:
        return {"ts": self.ts, "host": self.host, "port": self.port, "method": self.method,
                "allowed": self.allowed, "error": self.error, "url": self.url}  # fmt: skip


class _Handler(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        owner: AllowListProxy = self.server.owner  # type: ignore[attr-defined]
        client: socket.socket = self.request
        client.settimeout(_CONNECT_TIMEOUT_S)
        head = b""
        # One deadline for the whole request head: a client sending a byte at a time holds its
        # connection no longer than one that sends nothing.
        deadline = time.monotonic() + _CONNECT_TIMEOUT_S
        try:
            while _HEAD_END.search(head) is None:
                left = deadline - time.monotonic()
                if left <= 0:
                    _record_unfinished(owner, head, "the request head did not end in time")
                    return
                client.settimeout(left)
                chunk = client.recv(4096)
                if not chunk:
                    _record_unfinished(owner, head, "the connection closed before the request head ended")
                    return
                head += chunk
                if len(head) > _MAX_HEAD:
                    _record_unfinished(owner, head, "request head over the size limit")
                    client.sendall(b"HTTP/1.1 431 Request Header Fields Too Large\r\n\r\n")
                    return
        except TimeoutError:
            _record_unfinished(owner, head, "the request head did not end in time")
            return
        except OSError:
            _record_unfinished(owner, head, "the connection failed before the request head ended")
            return
        end = _HEAD_END.search(head)
        header, rest = head[: end.start()], head[end.end():]
        lines = _LINE_END.split(header)
        try:
            method, target, version = lines[0].decode("latin-1").split(" ", 2)
        except ValueError:
            _record_unfinished(owner, head, "malformed request line")
            client.sendall(b"HTTP/1.1 400 Bad Request\r\n\r\n")
            return
        if method.upper() == "CONNECT":
            host, _, port_text = target.rpartition(":")
            port = _port(port_text, default=443)
            forward = b""
            url = None
        else:
            try:
                parts = urlsplit(target)
                given_port = parts.port
            except ValueError:
                parts, given_port = urlsplit(""), None
            if parts.scheme != "http" or not parts.hostname:
                # Refused: an origin-form request (``GET /path``) or another scheme (``https://``
                # sent as plain text). Recorded under the host it names, if any.
                named = parts.hostname or ""
                port = given_port or {"http": 80, "https": 443}.get(parts.scheme, 0)
                url = (_request_url(parts.scheme, named, port, parts.path, bool(parts.query)) if named
                       else printable(target.partition("?")[0], MAX_URL_CHARS))
                owner.record(ProxyDecision(ts=_now(), host=named or NO_HOST, port=port if named else 0,
                                           method=method, allowed=False, url=url,
                                           error="not an absolute http:// URL"))  # fmt: skip
                client.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")
                return
            host, port = parts.hostname, given_port or 80
            url = _request_url("http", host, port, parts.path, bool(parts.query))
            path = parts.path or "/"
            if parts.query:
                path += "?" + parts.query
            kept = [h for h in lines[1:] if not h.lower().startswith((b"proxy-connection:", b"proxy-authorization:"))]
            forward = b"\r\n".join([f"{method} {path} {version}".encode("latin-1"), *kept]) + b"\r\n\r\n" + rest
        host = host.strip("[]")
        if not host_allowed(host, port, owner.allow):
            owner.record(ProxyDecision(ts=_now(), host=host, port=port, method=method, allowed=False, url=url))
            body = f"{printable(host, MAX_HOST_CHARS)}:{port} is not on the sandbox's network allow-list\n".encode()
            client.sendall(b"HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain\r\nContent-Length: "
                           + str(len(body)).encode() + b"\r\n\r\n" + body)  # fmt: skip
            return
        try:
            upstream = socket.create_connection((host, port), timeout=_CONNECT_TIMEOUT_S)
        except OSError as exc:
            owner.record(ProxyDecision(ts=_now(), host=host, port=port, method=method, allowed=True, url=url,
                                       error=exc.strerror or str(exc)))  # fmt: skip
            client.sendall(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n")
            return
        owner.record(ProxyDecision(ts=_now(), host=host, port=port, method=method, allowed=True, url=url))
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


def _record_unfinished(owner: "AllowListProxy", head: bytes, why: str) -> None:
    """Record a request that never became complete under the host its first line names, refused.

    A client must not keep a request out of the record by never ending its head, ending lines
    with bare newlines or sending an oversized one: whatever target the first line names is
    recorded as refused, with the reason.
    """
    first = _LINE_END.split(head, maxsplit=1)[0][:_MAX_FIRST_LINE].decode("latin-1")
    parts = first.split(" ")
    if len(parts) < 2 or not parts[0]:
        return
    method, target = parts[0][:20], parts[1]
    if method.upper() == "CONNECT":
        host, _, port_text = target.rpartition(":")
        host, port, url = host or target, _port(port_text, default=443), None
    else:
        try:
            named = urlsplit(target)
            host, port = named.hostname or "", named.port or {"http": 80, "https": 443}.get(named.scheme, 0)
        except ValueError:
            return
        url = _request_url(named.scheme, host, port, named.path, bool(named.query)) if host else None
    host = host.strip("[]")
    if not host:
        return
    owner.record(ProxyDecision(ts=_now(), host=host, port=port, method=method, allowed=False, error=why, url=url))


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
        self._refused: dict[tuple[str, int], _Refusals] = {}
        self._refused_beyond = _Refusals(method="", first_ts="")
        self._targets_beyond: set[tuple[str, int]] = set()

    def record(self, decision: ProxyDecision) -> None:
        """Count one decision and keep it (the first :data:`_MAX_RECORDED` are kept).

        The host name and method are stored as bounded printable ASCII (:func:`printable`),
        since both come from the request line the agent sent.
        """
        decision = replace(decision, host=printable(decision.host.lower().rstrip("."), MAX_HOST_CHARS),
                           method=printable(decision.method.upper(), 16))
        with self._lock:
            if decision.allowed:
                self._allowed += 1
            else:
                self._denied += 1
                self._count_refusal(decision)
            if len(self._decisions) < _MAX_RECORDED:
                self._decisions.append(decision)
        logger.info("network %s %s:%s -> %s", decision.method, decision.host, decision.port,
                    "allowed" if decision.allowed else "denied")  # fmt: skip

    def _count_refusal(self, decision: ProxyDecision) -> None:
        key = (decision.host, decision.port)
        group = self._refused.get(key)
        if group is None:
            if len(self._refused) >= MAX_DENIED_TARGETS:
                group = self._refused_beyond
                if len(self._targets_beyond) < _MAX_TARGETS_COUNTED:
                    self._targets_beyond.add(key)
                if not group.first_ts:
                    group.method, group.first_ts = decision.method, decision.ts
            else:
                group = self._refused[key] = _Refusals(method=decision.method, first_ts=decision.ts,
                                                       error=decision.error)
        group.count += 1
        group.last_ts = decision.ts
        if decision.method not in group.methods and len(group.methods) < 8:
            group.methods.append(decision.method)
        if decision.url is not None and decision.url not in group.urls and len(group.urls) < MAX_URLS_PER_TARGET:
            group.urls.append(decision.url)

    def summary(self) -> dict[str, object]:
        """Counts and the first recorded decisions, for ``run.json``."""
        with self._lock:
            return {"allowed": self._allowed, "denied": self._denied, "overflowed_connections": self.overflowed,
                    "requests": [d.to_dict() for d in self._decisions]}  # fmt: skip

    def denied_events(self) -> list[dict[str, object]]:
        """One ``network-denied`` event per refused ``host:port``, for ``run.json``'s ``events``.

        Returns
        -------
        list of dict
            In the order the targets were first refused, each with ``kind``
            (``network-denied``), ``host`` (lower-case printable ASCII, at most
            :data:`MAX_HOST_CHARS` characters; :data:`NO_HOST` when the request named none),
            ``port`` (``0`` when unknown), ``method`` (the first one seen) and ``methods`` (the
            distinct ones), ``count``, ``first_ts``, ``last_ts``, ``urls`` (up to
            :data:`MAX_URLS_PER_TARGET` distinct plain-HTTP request URLs, without query; empty
            for ``CONNECT``), ``url`` (the first of them, when there is one) and ``detail``
            (one sentence naming the count and the target, then the first request seen as
            ``METHOD URL`` when its URL is known). At most :data:`MAX_DENIED_TARGETS` targets are
            listed; refusals to further targets are summed in one last event with ``host`` ``*``,
            ``port`` ``0`` and ``targets`` (how many such targets); connections closed unread
            because too many were open at once are one ``network-flood`` event. Empty when nothing was
            refused.

        Examples
        --------
        One refused ``CONNECT api.openai.com:443``, three times::

            {"kind": "network-denied", "host": "api.openai.com", "port": 443,
             "method": "CONNECT", "methods": ["CONNECT"], "count": 3, "urls": [],
             "first_ts": "...", "last_ts": "...",
             "detail": "3 request(s) to api.openai.com:443 refused (not on the allow-list)"}
        """
        with self._lock:
            events = [group.event(host, port) for (host, port), group in self._refused.items()]
            if self._refused_beyond.count:
                event = self._refused_beyond.event("*", 0)
                targets = len(self._targets_beyond)
                event["targets"] = targets
                at_least = "at least " if targets >= _MAX_TARGETS_COUNTED else ""
                event["detail"] = (f"{event['count']} request(s) to {at_least}{targets} further host(s) refused (not on the "
                                   f"allow-list; over the {MAX_DENIED_TARGETS}-host cap, not listed one by one)")
                events.append(event)
        if self.overflowed:
            events.append({"kind": "network-flood", "count": self.overflowed,
                           "detail": f"{self.overflowed} connection(s) to the proxy closed unread: more than "
                                     f"{self.max_connections} at once"})  # fmt: skip
        return events


@dataclass(slots=True, kw_only=True)
class _Refusals:
    """The refusals of one ``host:port`` (or of all targets past the cap).

    ``error`` is the first refusal's reason when it was not the allow-list (a malformed request).
    """

    method: str
    first_ts: str
    last_ts: str = ""
    count: int = 0
    methods: list[str] = field(default_factory=list)
    urls: list[str] = field(default_factory=list)
    error: str | None = None

    def event(self, host: str, port: int) -> dict[str, object]:
        reason = "not an absolute http:// URL" if self.error else "not on the allow-list"
        detail = f"{self.count} request(s) to {host}:{port} refused ({reason})"
        if self.urls:
            detail += f"; first: {self.method} {self.urls[0]}"
        event: dict[str, object] = {
            "kind": "network-denied", "host": host, "port": port, "method": self.method,
            "methods": list(self.methods), "count": self.count, "first_ts": self.first_ts,
            "last_ts": self.last_ts, "urls": list(self.urls), "detail": detail,
        }  # fmt: skip
        if self.urls:
            event["url"] = self.urls[0]
        return event
