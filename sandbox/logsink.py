"""``run.log`` with a byte cap: what the agent prints, up to a limit, then a marker and a count.

An agent can print without end (a loop over ``print``, a progress bar at 1 kHz); the host must
not fill its disk with it, and the audit must know when part of the log is missing. Every
backend writes the agent's stdout and stderr through a :class:`CappedLog`: bytes up to
``max_bytes`` are kept, later ones are counted and dropped, and on close a one-line marker
states the cap and how many bytes were dropped. The run orchestrator records the counts in
``run.json`` (a ``log-truncated`` event), which makes the audit of such a run incomplete.
"""

from __future__ import annotations

import logging
import os
import threading
from pathlib import Path
from typing import BinaryIO

__all__ = ["CappedLog", "DEFAULT_LOG_BYTES", "TRUNCATION_MARKER"]

logger = logging.getLogger(__name__)

#: Default cap of ``run.log`` (bytes): far above what a 24-hour agent run prints when it is not
#: printing on purpose (MLE-bench's reference runs print a few megabytes).
DEFAULT_LOG_BYTES = 256 * 1024 * 1024
#: The marker line appended when bytes were dropped; ``{kept}`` and ``{dropped}`` are byte counts.
TRUNCATION_MARKER = "\n[mleaudit: run.log capped at {kept} bytes; {dropped} further bytes were dropped]\n"
_CHUNK = 1 << 16


class CappedLog:
    """Append the agent's output to a file, keeping at most ``max_bytes`` bytes of it.

    Thread-safe: the local backend pumps a pipe into it, the docker backend streams the
    container's log chunks. Use :meth:`pump` for a pipe, :meth:`write` for chunks, and always
    :meth:`close` (which writes the marker when something was dropped).

    Parameters
    ----------
    path : pathlib.Path
        ``run.log`` (created, or appended to).
    max_bytes : int
        Bytes of agent output kept (the marker comes on top). Must be positive.

    Raises
    ------
    ValueError
        If ``max_bytes`` is not positive.
    OSError
        If the file cannot be opened.
    """

    def __init__(self, path: Path, max_bytes: int = DEFAULT_LOG_BYTES) -> None:
        if max_bytes <= 0:
            raise ValueError(f"run.log cap must be positive, got {max_bytes}")
        self.path = Path(path)
        self.max_bytes = int(max_bytes)
        self._lock = threading.Lock()
        self._file = self.path.open("ab")
        self._kept = 0
        self._dropped = 0
        self._closed = False

    @property
    def kept_bytes(self) -> int:
        """Bytes of agent output written to the file."""
        with self._lock:
            return self._kept

    @property
    def dropped_bytes(self) -> int:
        """Bytes of agent output dropped after the cap (0 when nothing was)."""
        with self._lock:
            return self._dropped

    @property
    def truncated(self) -> bool:
        """Whether anything was dropped."""
        return self.dropped_bytes > 0

    def write(self, data: bytes) -> None:
        """Keep what fits under the cap, count the rest; a closed log counts everything as dropped."""
        if not data:
            return
        with self._lock:
            if self._closed:
                self._dropped += len(data)
                return
            room = self.max_bytes - self._kept
            kept = data[: max(room, 0)]
            if kept:
                try:
                    self._file.write(kept)
                    self._file.flush()
                except OSError as exc:  # a full disk must not stop the run; the bytes count as dropped
                    logger.warning("cannot write %s: %s", self.path, exc)
                    self._dropped += len(data)
                    return
                self._kept += len(kept)
            self._dropped += len(data) - len(kept)

    def pump(self, stream: BinaryIO | int, *, name: str = "run-log") -> threading.Thread:
        """Copy a pipe into the log in a daemon thread until end of file.

        Parameters
        ----------
        stream : binary file or int
            The read end of the agent's stdout/stderr pipe (closed when the copy ends).
        name : str
            The thread's name.

        Returns
        -------
        threading.Thread
            Started; join it (with a timeout) once the agent has exited.
        """
        fd = stream if isinstance(stream, int) else stream.fileno()

        def copy() -> None:
            try:
                while True:
                    try:
                        chunk = os.read(fd, _CHUNK)
                    except InterruptedError:
                        continue
                    except OSError:
                        break
                    if not chunk:
                        break
                    self.write(chunk)
            finally:
                try:
                    if isinstance(stream, int):
                        os.close(fd)
                    else:
                        stream.close()
                except OSError:
                    pass

        thread = threading.Thread(target=copy, name=name, daemon=True)
        thread.start()
        return thread

    def close(self) -> None:
        """Write the truncation marker if bytes were dropped, and close the file (idempotent)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            try:
                if self._dropped:
                    self._file.write(TRUNCATION_MARKER.format(kept=self._kept, dropped=self._dropped).encode())
                self._file.close()
            except OSError as exc:
                logger.warning("cannot finish %s: %s", self.path, exc)

    def event(self) -> dict[str, object] | None:
        """The ``log-truncated`` run.json event, or ``None`` when nothing was dropped."""
        with self._lock:
            if not self._dropped:
                return None
            return {"kind": "log-truncated", "path": "run.log", "kept_bytes": self._kept,
                    "dropped_bytes": self._dropped,
                    "detail": f"run.log capped at {self._kept} bytes; {self._dropped} bytes dropped"}  # fmt: skip

    def __enter__(self) -> "CappedLog":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
