"""Reading a request's body, streamed and bounded: ``Content-Length``, chunked, or ``multipart/form-data``.

Nothing is held in memory: the pieces go to a file in a scratch folder, the body's total is
capped as it arrives (413 past it) and so is the time it may take (408). A request that
cannot be read is a :class:`Refused`, with its HTTP status, the reply's reason and the cause
counted in ``run.json``.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, BinaryIO, Iterator

from mleaudit.sandbox.validation.limits import UPLOAD_TIMEOUT_S

CHUNK = 1 << 20
#: Longest line of a chunked body's framing, and of one multipart part's headers.
_MAX_LINE = 8192
_MAX_PART_HEADERS = 16384


class Refused(Exception):
    """A request refused before validation: HTTP status, reply reason, and cause for the events."""

    def __init__(self, status: int, reason: str, cause: str) -> None:
        super().__init__(cause)
        self.status, self.reason, self.cause = status, reason, cause


def body_pieces(rfile: BinaryIO, max_bytes: int, length: int | None) -> Iterator[bytes]:
    """The request body read from ``rfile`` in pieces, at most ``max_bytes`` in all (413 past it).

    ``length`` is the ``Content-Length``; ``None`` reads the chunked transfer coding.
    """
    deadline = time.monotonic() + UPLOAD_TIMEOUT_S
    total = 0

    def read(n: int) -> bytes:
        if time.monotonic() > deadline:
            raise Refused(408, "bad-request", "slow")
        try:
            return rfile.read(n)
        except OSError:
            raise Refused(408, "bad-request", "slow") from None

    def exactly(count: int):
        remaining = count
        while remaining:
            piece = read(min(CHUNK, remaining))
            if not piece:
                raise Refused(400, "bad-request", "malformed")
            remaining -= len(piece)
            yield piece

    if length is not None:
        yield from exactly(length)
        return
    while True:  # chunked transfer coding (RFC 9112 section 7.1)
        try:
            line = rfile.readline(_MAX_LINE)
        except OSError:
            raise Refused(408, "bad-request", "slow") from None
        try:
            size = int(line.split(b";", 1)[0].strip(), 16)
        except ValueError:
            raise Refused(400, "bad-request", "malformed") from None
        if size < 0:
            raise Refused(400, "bad-request", "malformed")
        if size == 0:
            for _ in range(64):  # trailer fields, up to the blank line
                trailer = rfile.readline(_MAX_LINE)
                if trailer in (b"\r\n", b"\n", b""):
                    return
            raise Refused(400, "bad-request", "malformed")
        total += size
        if total > max_bytes:
            raise Refused(413, "body-too-large", "too-large")
        yield from exactly(size)
        if rfile.readline(_MAX_LINE) not in (b"\r\n", b"\n"):
            raise Refused(400, "bad-request", "malformed")


def receive_multipart(pieces: Iterator[bytes], content_type: str, scratch: Path) -> Path:
    """Parse a multipart body as it streams; keep the ``file`` part (else the first with a file name).

    Parts that are neither are not written; each kept part goes to its own file in ``scratch``
    (their total is bounded by the body cap).

    Raises
    ------
    Refused
        400 for a body that is not valid multipart or holds no file part.
    """
    from python_multipart.exceptions import MultipartParseError
    from python_multipart.multipart import MultipartParser, parse_options_header

    _, params = parse_options_header(content_type)
    boundary = params.get(b"boundary")
    if not boundary:
        raise Refused(400, "bad-request", "malformed")
    state: dict[str, Any] = {"field": bytearray(), "value": bytearray(), "headers": {}, "size": 0,
                             "handle": None, "kept": []}  # fmt: skip

    def grow(buffer: bytearray, data: bytes, start: int, end: int) -> None:
        state["size"] += end - start
        if state["size"] > _MAX_PART_HEADERS:
            raise Refused(400, "bad-request", "malformed")
        buffer.extend(data[start:end])

    def on_part_begin() -> None:
        state["headers"], state["size"] = {}, 0

    def on_header_end() -> None:
        name = bytes(state["field"]).decode("latin-1").strip().lower()
        state["headers"][name] = bytes(state["value"])
        state["field"], state["value"] = bytearray(), bytearray()

    def on_headers_finished() -> None:
        _, disposition = parse_options_header(state["headers"].get("content-disposition", b""))
        name, filename = disposition.get(b"name"), disposition.get(b"filename")
        if name == b"file" or filename is not None:
            path = scratch / f"part-{len(state['kept'])}"
            state["kept"].append((name == b"file", path))
            state["handle"] = path.open("wb")

    def on_part_data(data: bytes, start: int, end: int) -> None:
        if state["handle"] is not None:
            state["handle"].write(data[start:end])

    def on_part_end() -> None:
        if state["handle"] is not None:
            state["handle"].close()
            state["handle"] = None

    callbacks = {
        "on_part_begin": on_part_begin,
        "on_header_field": lambda d, s, e: grow(state["field"], d, s, e),
        "on_header_value": lambda d, s, e: grow(state["value"], d, s, e),
        "on_header_end": on_header_end,
        "on_headers_finished": on_headers_finished,
        "on_part_data": on_part_data,
        "on_part_end": on_part_end,
    }
    try:
        parser = MultipartParser(boundary, callbacks)
        for piece in pieces:
            parser.write(piece)
        parser.finalize()
    except (MultipartParseError, ValueError):
        raise Refused(400, "bad-request", "malformed") from None
    finally:
        if state["handle"] is not None:
            state["handle"].close()
    kept = state["kept"]
    chosen = next((path for is_file, path in kept if is_file), None) or next((path for _, path in kept), None)
    if chosen is None:
        raise Refused(400, "bad-request", "malformed")
    submission = scratch / "submission.csv"
    chosen.rename(submission)
    return submission
