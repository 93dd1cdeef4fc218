"""A threaded server on a Unix socket that the host runs beside the sandbox for the length of a run.

The validation endpoint (:mod:`mleaudit.sandbox.validation`) and the network allow-list proxy
(:mod:`mleaudit.sandbox.proxy`) are both served this way: the socket is bind-mounted into the sandbox,
which has no network interface of its own, and every connection is handled in its own daemon
thread so that a stuck client cannot hold up the run's end.
"""

from __future__ import annotations

import logging
import os
import socketserver
import sys
import threading
from pathlib import Path

__all__ = ["UnixSocketService"]

logger = logging.getLogger(__name__)

#: Longest Unix socket path Linux accepts (``sun_path`` is 108 bytes with the terminating NUL).
MAX_SOCKET_PATH_BYTES = 107
#: Connections a service handles at once, each in its own thread; more are closed unread and counted.
MAX_CONNECTIONS = 64


class _ThreadingUnixServer(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True
    allow_reuse_address = False

    def process_request(self, request, client_address) -> None:  # noqa: ANN001 - socketserver's signature
        owner: UnixSocketService = self.owner  # type: ignore[attr-defined]
        # A thread per connection, but never more than the service's bound: a sandbox that opens
        # thousands of connections gets them closed at once instead of the host's threads and fds.
        if not owner._slots.acquire(blocking=False):
            owner.overflow(request)
            self.shutdown_request(request)
            return
        super().process_request(request, client_address)

    def process_request_thread(self, request, client_address) -> None:  # noqa: ANN001
        try:
            super().process_request_thread(request, client_address)
        finally:
            self.owner._slots.release()  # type: ignore[attr-defined]

    def handle_error(self, request, client_address) -> None:  # noqa: ANN001
        # One line, not a traceback per connection: a hostile client can fail many of them.
        logger.debug("%s: a connection failed: %r", self.owner.thread_name, sys.exc_info()[1])  # type: ignore[attr-defined]


class UnixSocketService:
    """Serve a ``socketserver`` request handler on a Unix socket in a background thread.

    Subclasses set :attr:`handler_class` and :attr:`thread_name`; handlers reach the service as
    ``self.server.owner``. Use as a context manager, or call :meth:`start` and :meth:`stop`.
    At most :attr:`max_connections` connections are served at once; others are closed unread
    and counted in :attr:`overflowed`.

    Parameters
    ----------
    socket_path : pathlib.Path
        Where to create the socket (at most 107 bytes; made connectable by any local user, since
        the sandbox user differs from the host's). It is removed on :meth:`stop`.

    Raises
    ------
    ValueError
        If the socket path is longer than Linux allows.
    """

    handler_class: type[socketserver.BaseRequestHandler]
    thread_name = "unix-socket-service"
    max_connections = MAX_CONNECTIONS

    def __init__(self, socket_path: Path) -> None:
        if len(os.fsencode(socket_path)) > MAX_SOCKET_PATH_BYTES:
            raise ValueError(f"{socket_path}: Unix socket paths are limited to {MAX_SOCKET_PATH_BYTES} bytes")
        self.socket_path = Path(socket_path)
        self._server: _ThreadingUnixServer | None = None
        self._thread: threading.Thread | None = None
        self._slots = threading.BoundedSemaphore(self.max_connections)
        self._overflow_lock = threading.Lock()
        self.overflowed = 0

    def overflow(self, request: object) -> None:
        """Count a connection closed because :attr:`max_connections` were already being served."""
        with self._overflow_lock:
            self.overflowed += 1

    def start(self) -> None:
        """Create the socket and serve in a background thread."""
        server = _ThreadingUnixServer(str(self.socket_path), self.handler_class)
        server.owner = self  # type: ignore[attr-defined]
        os.chmod(self.socket_path, 0o666)
        self._server = server
        self._thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                                        name=self.thread_name, daemon=True)  # fmt: skip
        self._thread.start()

    def stop(self) -> None:
        """Stop serving and remove the socket."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None
        try:
            self.socket_path.unlink()
        except FileNotFoundError:
            pass

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
