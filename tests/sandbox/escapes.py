"""Shared driver for the escape-attempt scripts in tests/fixtures/sandbox/escapes/ (both backends)."""

from __future__ import annotations

import json
import os
import socket
import threading
import time
from pathlib import Path
from typing import Any, Callable

from mleaudit.sandbox.runner import SandboxResult

from tests.sandbox.conftest import Toy, leaked

ESCAPES = Path(__file__).resolve().parents[1] / "fixtures" / "sandbox" / "escapes"
SCRIPTS = sorted(p.name for p in ESCAPES.iterdir() if p.suffix in (".py", ".sh"))


class HostListener:
    """A TCP listener on the host's 127.0.0.1 that counts the connections it accepts."""

    def __init__(self) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.accepted = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            self.accepted += 1
            conn.close()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=2)
        self.sock.close()


def render(name: str, toy: Toy, listener: HostListener) -> str:
    text = (ESCAPES / name).read_text(encoding="utf-8")
    return (
        text.replace("{{ANSWERS}}", str(toy.answers))
        .replace("{{PRIVATE}}", str(toy.private))
        .replace("{{SUPERVISOR_PID}}", str(os.getpid()))
        .replace("{{HOST_PORT}}", str(listener.port))
    )


def run_escape(name: str, run_agent: Callable[..., SandboxResult], toy: Toy, listener: HostListener, runner: Any,
               **fields: Any) -> tuple[SandboxResult, str, dict]:
    """Run one escape script; check the invariants every attempt must leave intact."""
    public_before = {p.name: p.read_bytes() for p in toy.public.iterdir()}
    command = ("python3" if name.endswith(".py") else "/bin/sh", f"/home/agent/{name}")
    result = run_agent(render(name, toy, listener), runner=runner, name=name, command=command, **fields)
    log = result.run_log.read_text(encoding="utf-8", errors="replace")
    record = json.loads(result.run_json.read_text(encoding="utf-8"))
    assert "ESCAPED" not in log, log
    assert "UNSAFE" not in log, log
    assert leaked(result, toy.token) == []
    assert {p.name: p.read_bytes() for p in toy.public.iterdir()} == public_before
    assert listener.accepted == 0
    assert record["status"] in ("completed", "timed_out") and record["error"] is None
    return result, log, record


def heartbeat_stopped(result: SandboxResult) -> bool:
    """Whether a detached heartbeat process stopped writing once the run ended."""
    beat = result.run_dir / "code" / "heartbeat"
    if not beat.exists():
        return True
    first = beat.read_text()
    time.sleep(0.6)
    return beat.read_text() == first
