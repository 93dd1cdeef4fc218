"""The disk watch of the output folders: measured by descriptor, any depth, failing closed."""

from __future__ import annotations

import os
from pathlib import Path

from mleaudit.sandbox.runner import StopSignal
from mleaudit.sandbox.watchdog import MAX_DEPTH, OutputWatch, used_bytes

from tests.sandbox.conftest import remove_deep_tree


def _chain(root: Path, depth: int) -> int:
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    for _ in range(depth):
        os.mkdir("d", dir_fd=fd)
        child = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
        os.close(fd)
        fd = child
    return fd


def test_files_are_counted_by_allocated_blocks_and_hard_links_once(tmp_path):
    (tmp_path / "a.bin").write_bytes(b"x" * 300_000)
    os.link(tmp_path / "a.bin", tmp_path / "b.bin")
    with open(tmp_path / "sparse.bin", "wb") as handle:
        handle.truncate(10**9)
    (tmp_path / "link").symlink_to("/usr")
    used, entries, cut = used_bytes(tmp_path)
    assert 300_000 <= used < 400_000 and entries == 4 and not cut


def test_a_tree_deeper_than_recursion_allows_stops_the_run(tmp_path):
    fd = _chain(tmp_path, 1500)
    with open(os.open("big", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd), "wb") as handle:
        handle.write(b"y" * 4096)
    os.close(fd)
    stop = StopSignal()
    watch = OutputWatch({"code": tmp_path}, 10**12, stop)
    try:
        watch.measure()
        assert watch.exceeded and stop.is_set() and stop.limit == "disk"
        assert f"nested more than {MAX_DEPTH} deep" in stop.detail
    finally:
        remove_deep_tree(tmp_path)


def test_a_tree_at_the_depth_bound_is_measured(tmp_path):
    fd = _chain(tmp_path, MAX_DEPTH)
    with open(os.open("w", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd), "wb") as handle:
        handle.write(b"z" * 100_000)
    os.close(fd)
    used, _, cut = used_bytes(tmp_path)
    assert not cut and used >= 100_000


def test_a_walk_that_breaks_fails_closed(tmp_path, monkeypatch):
    import mleaudit.sandbox.watchdog as watchdog

    def broken(*args, **kwargs):
        raise RecursionError("deep")

    monkeypatch.setattr(watchdog, "used_bytes", broken)
    stop = StopSignal()
    watch = OutputWatch({"code": tmp_path}, 10**12, stop)
    watch.measure()
    assert stop.is_set() and "could not be measured (RecursionError)" in stop.detail


def test_under_the_limit_nothing_is_requested(tmp_path):
    (tmp_path / "f").write_bytes(b"a" * 10_000)
    stop = StopSignal()
    watch = OutputWatch({"code": tmp_path}, 10**9, stop, interval_s=0.05)
    watch.start()
    watch.close()
    assert not stop.is_set() and watch.peak_bytes >= 10_000
