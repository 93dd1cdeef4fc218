"""``_read_fd`` reads what a buffered ``read(limit + 1)`` reads, in reads sized by the file."""

from __future__ import annotations

import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mleaudit.audit.run import reading
from mleaudit.audit.run.reading import _OPEN_FLAGS, _read_fd


def _buffered(path, limit: int) -> bytes:
    with open(path, "rb") as handle:
        return handle.read(limit + 1)


@pytest.mark.parametrize("chunk", [1, 3, 1024 * 1024])
@settings(max_examples=60, deadline=None)
@given(size=st.integers(0, 40), limit=st.integers(0, 45))
def test_reads_as_a_buffered_read(tmp_path_factory, chunk, size, limit):
    path = tmp_path_factory.mktemp("r") / "f"
    path.write_bytes(bytes(range(256))[:size] if size <= 256 else b"x" * size)
    original = reading._READ_CHUNK
    reading._READ_CHUNK = chunk
    try:
        data = _read_fd(os.open(path, _OPEN_FLAGS), "f", limit)
    finally:
        reading._READ_CHUNK = original
    assert data == _buffered(path, limit)


@pytest.mark.parametrize("chunk", [1, 4])
def test_a_file_longer_than_its_size_at_open_is_read_on(tmp_path, monkeypatch, chunk):
    # fstat says 2 bytes; the file holds 10 (it grew): the reads go on to the end or the cap
    path = tmp_path / "f"
    path.write_bytes(b"0123456789")
    real_fstat = os.fstat

    def small_fstat(fd):
        info = real_fstat(fd)
        return os.stat_result((info.st_mode, info.st_ino, info.st_dev, info.st_nlink, info.st_uid, info.st_gid, 2,
                               info.st_atime, info.st_mtime, info.st_ctime))

    monkeypatch.setattr(reading.os, "fstat", small_fstat)
    monkeypatch.setattr(reading, "_READ_CHUNK", chunk)
    assert _read_fd(os.open(path, _OPEN_FLAGS), "f", 100) == b"0123456789"
    assert _read_fd(os.open(path, _OPEN_FLAGS), "f", 5) == b"012345"


def test_a_folder_is_refused_and_its_descriptor_closed(tmp_path):
    fd = os.open(tmp_path, os.O_RDONLY)
    with pytest.raises(OSError, match="not a regular file"):
        _read_fd(fd, "d", 10)
    with pytest.raises(OSError):
        os.fstat(fd)  # closed


# --- _relative_parts: plain paths split as strings, as pathlib splits them ----------------------

def _relative_parts_pathlib(root, path):
    from pathlib import Path

    candidate = Path(path)
    if candidate.is_absolute():
        try:
            candidate = candidate.relative_to(root)
        except ValueError:
            raise OSError("not under the run root") from None
    parts = candidate.parts
    if not parts or any(part in ("", ".", "..") for part in parts):
        raise OSError("not a plain path under the run root")
    return parts


_PATH_PIECES = ("a", "b.py", "..", ".", "", "/", "//", "x y", "é", "\udcff", "run", "logs")


@settings(max_examples=500, deadline=None)
@given(st.lists(st.sampled_from(_PATH_PIECES), max_size=6), st.sampled_from(["", "/work/run", "/work/run/", "/work"]),
       st.sampled_from(["/work/run", "/work", "/"]))
def test_relative_parts_as_pathlib(pieces, prefix, root):
    from pathlib import Path

    path = prefix + "/".join(pieces) if not prefix or prefix.endswith("/") else prefix + "/" + "/".join(pieces)
    for given_path in (path, Path(path) if path else path):
        try:
            expected = _relative_parts_pathlib(Path(root), given_path)
        except OSError:
            expected = None
        try:
            found = reading._relative_parts(Path(root), given_path)
        except OSError:
            found = None
        assert found == expected, (root, given_path)
