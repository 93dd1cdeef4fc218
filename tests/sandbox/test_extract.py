"""Finalising a run dir: links and special files removed, the calls log kept authoritative, masks."""

from __future__ import annotations

import json
import os
import socket
import stat
import time
from pathlib import Path

import pytest

from mleaudit.audit.run import load_run
from mleaudit.sandbox.errors import SpecError
from mleaudit.sandbox.extract import RunDirStage, finalize_run_dir, sanitize_outputs
from mleaudit.sandbox.runner import Bind, plan_masks


def test_links_and_special_files_are_removed_and_reported(tmp_path):
    out = tmp_path / "submission"
    (out / "sub").mkdir(parents=True)
    secret = tmp_path / "answers.csv"
    secret.write_text("id,label\n1,x\n")
    (out / "submission.csv").symlink_to(secret)
    (out / "sub" / "dir-link").symlink_to(tmp_path)
    os.mkfifo(out / "pipe")
    (out / "real.csv").write_text("id,label\n")
    os.link(out / "real.csv", out / "sub" / "twin.csv")
    events = sanitize_outputs(out, "submission")
    kinds = sorted((e["kind"], e["path"]) for e in events)
    assert kinds == [
        ("hard-link-copied", "submission/real.csv"),
        ("refused-output", "submission/pipe"),
        ("refused-output", "submission/sub/dir-link"),
        ("refused-output", "submission/submission.csv"),
    ] or kinds == [
        ("hard-link-copied", "submission/sub/twin.csv"),
        ("refused-output", "submission/pipe"),
        ("refused-output", "submission/sub/dir-link"),
        ("refused-output", "submission/submission.csv"),
    ]
    assert not os.path.lexists(out / "submission.csv") and not os.path.lexists(out / "pipe")
    assert secret.read_text() == "id,label\n1,x\n"
    assert os.stat(out / "real.csv").st_nlink == 1 and os.stat(out / "sub" / "twin.csv").st_nlink == 1


def test_finalize_keeps_the_host_calls_log_and_reports_a_spoofed_one(tmp_path):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    stage = RunDirStage.create(run_dir)
    (stage.writable["logs"] / "validation_calls.jsonl").write_text('{"ts": 1, "valid": true, "message": "fake"}\n')
    (stage.writable["submission"] / "submission.csv").write_text("id,label\n")
    stage.calls_log.write_text('{"ts": "2024-01-01T00:00:00+00:00", "valid": false, "message": "m"}\n')
    events = finalize_run_dir(stage, {"run_id": "r", "competition_id": "toy"}, validation_enabled=True)
    assert [e["kind"] for e in events] == ["spoofed-validation-log"]
    assert (run_dir / "logs" / "validation_calls.jsonl").read_text().count("\n") == 1
    assert "fake" in (run_dir / "logs" / "validation_calls.agent.jsonl").read_text()
    assert not (run_dir / ".sandbox").exists()
    record = json.loads((run_dir / "run.json").read_text())
    assert record["schema_version"] == 1 and record["events"][0]["kind"] == "spoofed-validation-log"
    run = load_run(run_dir)
    assert run.competition_id == "toy" and run.submission is not None
    assert {a.path for a in run.artifacts} >= {"submission/submission.csv", "logs/validation_calls.jsonl", "run.log"}


def test_without_an_endpoint_no_calls_log_is_invented(tmp_path):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    finalize_run_dir(RunDirStage.create(run_dir), {"run_id": "r"}, validation_enabled=False)
    assert not (run_dir / "logs" / "validation_calls.jsonl").exists()
    assert sorted(p.name for p in run_dir.iterdir()) == ["code", "logs", "run.json", "run.log", "submission"]


def test_hidden_paths_inside_a_bind_are_masked(tmp_path):
    data = tmp_path / "data"
    binds = [Bind(source=data, target="/mnt/data"), Bind(source=tmp_path / "other", target="/mnt/other")]
    masks = plan_masks(binds, [data / "toy" / "prepared" / "private", tmp_path / "elsewhere"])
    assert masks == ("/mnt/data/toy/prepared/private",)


@pytest.mark.parametrize("source", ["private", "private/deeper"])
def test_binding_a_hidden_path_itself_is_refused(tmp_path, source):
    hidden = tmp_path / "private"
    (tmp_path / "private" / "deeper").mkdir(parents=True)
    with pytest.raises(SpecError, match="must stay out of the sandbox"):
        plan_masks([Bind(source=tmp_path / source, target="/mnt/x")], [hidden])


def test_a_symlink_to_a_hidden_path_is_seen_through(tmp_path):
    hidden = tmp_path / "private"
    hidden.mkdir()
    (tmp_path / "innocent").symlink_to(hidden)
    with pytest.raises(SpecError):
        plan_masks([Bind(source=tmp_path / "innocent", target="/mnt/x")], [hidden])


# -- trees the agent may leave: deep, long, oddly named, locked ----------------------------------

_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW


def _descend(root, names, *, create=True):
    """Open (creating them first) the folders ``names`` below ``root`` one by one; return the last fd."""
    fd = os.open(root, _DIR)
    for name in names:
        if create:
            os.mkdir(name, dir_fd=fd)
        child = os.open(name, _DIR, dir_fd=fd)
        os.close(fd)
        fd = child
    return fd


def _remove_chain(root, name, depth):
    """Remove a chain of ``depth`` folders ``name`` below ``root`` (emptied first), bottom up, by fd."""
    fd = _descend(root, [name] * depth, create=False)
    for _ in range(depth):
        parent = os.open(b"..", _DIR, dir_fd=fd)
        os.close(fd)
        os.rmdir(name, dir_fd=parent)
        fd = parent
    os.close(fd)


def _open_fds():
    """Descriptors of this process open on folders (other tests' threads open pipes and sockets meanwhile)."""
    count = 0
    for name in os.listdir("/proc/self/fd"):
        try:
            count += os.path.isdir(os.readlink(f"/proc/self/fd/{name}"))
        except OSError:
            pass
    return count


def _owner():
    return (os.geteuid(), os.getegid())


def test_a_tree_deeper_than_path_max_is_cleaned_and_listed(tmp_path):
    out = tmp_path / "submission"
    out.mkdir()
    outside = tmp_path / "answers.csv"
    outside.write_text("id,label\n1,secret\n")
    names = [bytes([ord("a") + i % 26]) * 200 for i in range(40)]
    assert sum(len(n) + 1 for n in names) > 4096
    fd = _descend(out, names)
    cwd = os.getcwd()
    try:
        os.symlink("/etc/passwd", b"submission.csv", dir_fd=fd)
        os.mkfifo(b"pipe", dir_fd=fd)
        os.fchdir(fd)
        with socket.socket(socket.AF_UNIX) as sock:
            sock.bind("sock")
        os.chdir(cwd)
        try:
            os.mknod(b"null", 0o666 | stat.S_IFCHR, os.makedev(1, 3), dir_fd=fd)
            device = True
        except PermissionError:
            device = False
        os.link(outside, b"twin.csv", dst_dir_fd=fd)
        keep = os.open(b"run.sh", os.O_WRONLY | os.O_CREAT, 0o700, dir_fd=fd)
        os.write(keep, b"echo hi\n")
        os.fchmod(keep, 0o4777)
        os.close(keep)
    finally:
        os.chdir(cwd)
        os.close(fd)
    fds = _open_fds()
    events = sanitize_outputs(out, "submission", owner=_owner())
    assert _open_fds() == fds
    by_name = {e["path"].rsplit("/", 1)[1]: e for e in events}
    expected = {"submission.csv", "pipe", "sock", "twin.csv"} | ({"null"} if device else set())
    assert set(by_name) == expected
    assert by_name["twin.csv"]["kind"] == "hard-link-copied"
    assert all(by_name[n]["kind"] == "refused-output" for n in expected - {"twin.csv"})
    assert "'/etc/passwd'" in by_name["submission.csv"]["detail"]
    assert "FIFO (mode prw" in by_name["pipe"]["detail"] and "socket (mode srw" in by_name["sock"]["detail"]
    if device:
        assert "character device (mode crw" in by_name["null"]["detail"]
    for event in events:
        path = event["path"]
        assert len(path) <= 1100 and path.isprintable()
        assert path.startswith("submission/" + "a" * 200) and "depth 41]" in path
    fd = _descend(out, names, create=False)
    try:
        assert sorted(os.listdir(fd)) == ["run.sh", "twin.csv"]
        twin = os.stat(b"twin.csv", dir_fd=fd, follow_symlinks=False)
        assert stat.S_ISREG(twin.st_mode) and twin.st_nlink == 1
        assert stat.S_IMODE(os.stat(b"run.sh", dir_fd=fd).st_mode) == 0o755
        copy = os.open(b"twin.csv", os.O_RDONLY, dir_fd=fd)
        assert os.read(copy, 100) == b"id,label\n1,secret\n"
        os.close(copy)
    finally:
        os.close(fd)
    assert outside.stat().st_nlink == 1 and outside.read_text() == "id,label\n1,secret\n"


def test_names_with_newlines_and_bytes_that_are_not_utf8(tmp_path):
    out = tmp_path / "logs"
    out.mkdir()
    fd = _descend(out, [b"dir\nx\xff"])
    try:
        os.symlink(b"/etc/\xfe\npasswd", b"link\n\xfe\\", dir_fd=fd)
        os.mkfifo(b"\x1b[31mred\xe2\x80\xaeevil", dir_fd=fd)
        os.close(os.open(b"ok\xff.txt", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd))
        names = sorted(os.listdir(fd))
    finally:
        os.close(fd)
    events = sanitize_outputs(out, "logs")
    paths = sorted(e["path"] for e in events if e["kind"] == "refused-output")
    assert paths == ["logs/dir\\nx\\xff/\\x1b[31mred\\u202eevil", "logs/dir\\nx\\xff/link\\n\\xfe\\\\"]
    link = next(e for e in events if "link" in e["path"])
    assert link["detail"] == "symbolic link to '/etc/\\xfe\\npasswd' removed"
    assert all("\n" not in json.dumps(e) for e in events)
    assert names and os.listdir(out / os.fsdecode(b"dir\nx\xff")) == [os.fsdecode(b"ok\xff.txt")]


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to leave a folder its owner cannot enter")
def test_locked_folders_are_opened_and_given_a_sane_mode(tmp_path):
    out = tmp_path / "code"
    (out / "locked" / "inner").mkdir(parents=True)
    (out / "locked" / "inner" / "link").symlink_to("/etc/shadow")
    (out / "locked" / "data.bin").write_bytes(b"x")
    os.chmod(out / "locked" / "data.bin", 0)
    os.chmod(out / "locked" / "inner", 0)
    os.chmod(out / "locked", 0)
    events = sanitize_outputs(out, "code", owner=_owner())
    assert [(e["kind"], e["path"]) for e in events] == [("refused-output", "code/locked/inner/link")]
    assert stat.S_IMODE(os.stat(out / "locked").st_mode) == 0o755
    assert stat.S_IMODE(os.stat(out / "locked" / "inner").st_mode) == 0o755
    assert stat.S_IMODE(os.stat(out / "locked" / "data.bin").st_mode) == 0o644
    assert os.listdir(out / "locked" / "inner") == []


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to switch to an unprivileged user")
def test_an_unprivileged_owner_opens_its_own_locked_folder(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    os.chown(work, 65534, 65534)
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - runs in the child
        status = 1
        try:
            os.close(read_end)
            os.chdir(work)
            os.setgroups([])
            os.setgid(65534)
            os.setuid(65534)
            os.makedirs("out/locked")
            os.symlink("/etc/passwd", "out/locked/link")
            os.chmod("out/locked", 0)
            events = sanitize_outputs(Path("out"), "code")
            mode = stat.S_IMODE(os.stat("out/locked").st_mode)
            os.write(write_end, json.dumps({"events": events, "mode": mode, "left": os.listdir("out/locked")}).encode())
            status = 0
        finally:
            os._exit(status)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as pipe:
        data = pipe.read()
    _, status = os.waitpid(pid, 0)
    assert status == 0
    result = json.loads(data)
    assert [(e["kind"], e["path"]) for e in result["events"]] == [("refused-output", "code/locked/link")]
    assert result["mode"] == 0o755 and result["left"] == []


def test_a_chain_twenty_thousand_folders_deep(tmp_path):
    out = tmp_path / "code"
    out.mkdir()
    depth = 20_000
    fd = _descend(out, [b"d"] * depth)
    os.symlink("/etc/passwd", b"link", dir_fd=fd)
    os.mkfifo(b"pipe", dir_fd=fd)
    os.close(fd)
    fds = _open_fds()
    started = time.monotonic()
    events = sanitize_outputs(out, "code", owner=_owner())
    elapsed = time.monotonic() - started
    try:
        assert _open_fds() == fds
        assert sorted(e["detail"].split(" ")[0] for e in events) == ["FIFO", "symbolic"]
        assert all(f"depth {depth + 1}]" in e["path"] and len(e["path"]) <= 1100 for e in events)
        assert all(e["path"].endswith(("/d/link", "/d/pipe")) for e in events)
        fd = _descend(out, [b"d"] * depth, create=False)
        assert os.listdir(fd) == []
        os.close(fd)
        assert elapsed < 30
    finally:
        _remove_chain(out, b"d", depth)


def test_a_linked_folder_is_removed_and_never_followed(tmp_path):
    out = tmp_path / "submission"
    (out / "a" / "b").mkdir(parents=True)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    canary = elsewhere / "canary.txt"
    canary.write_text("keep me\n")
    os.chmod(canary, 0o600)
    (elsewhere / "inner-link").symlink_to("/etc/passwd")
    os.mkfifo(elsewhere / "inner-pipe")
    (out / "a" / "b" / "via").symlink_to(elsewhere, target_is_directory=True)
    (out / "a" / "file.txt").write_text("x")
    before = canary.stat()
    owner = (4242, 4243) if os.geteuid() == 0 else None
    events = sanitize_outputs(out, "submission", owner=owner)
    assert [(e["kind"], e["path"]) for e in events] == [("refused-output", "submission/a/b/via")]
    assert str(elsewhere) in events[0]["detail"]
    after = canary.stat()
    assert canary.read_text() == "keep me\n"
    assert (after.st_uid, after.st_gid, after.st_mode) == (before.st_uid, before.st_gid, before.st_mode)
    assert (elsewhere / "inner-link").is_symlink() and stat.S_ISFIFO(os.lstat(elsewhere / "inner-pipe").st_mode)
    if owner is not None:
        inside = [out, out / "a", out / "a" / "b", out / "a" / "file.txt"]
        assert {(p.stat().st_uid, p.stat().st_gid) for p in inside} == {owner}


def test_a_hard_linked_file_over_the_copy_budget_is_removed(tmp_path, monkeypatch):
    import mleaudit.sandbox.extract.sanitize as sanitize

    monkeypatch.setattr(sanitize, "MAX_HARD_LINK_COPY_BYTES", 10)
    out = tmp_path / "code"
    out.mkdir()
    big = tmp_path / "big.bin"
    big.write_bytes(b"x" * 100)
    os.link(big, out / "big.bin")
    (out / "small.txt").write_text("12345")
    os.link(out / "small.txt", out / "small-twin.txt")
    events = sanitize_outputs(out, "code")
    kinds = {e["path"]: e["kind"] for e in events}
    assert kinds.pop("code/big.bin") == "refused-output"
    assert list(kinds.values()) == ["hard-link-copied"]
    assert sorted(os.listdir(out)) == ["small-twin.txt", "small.txt"] and big.stat().st_nlink == 1


def test_finalize_leaves_no_link_and_sane_modes(tmp_path):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    stage = RunDirStage.create(run_dir)
    sub = stage.writable["submission"]
    (sub / "submission.csv").symlink_to("/etc/passwd")
    (sub / "deep" / "er").mkdir(parents=True)
    (sub / "deep" / "er" / "dir-link").symlink_to(tmp_path, target_is_directory=True)
    os.chmod(sub / "deep", 0o700 if os.geteuid() else 0)
    (stage.writable["logs"] / "validation_calls.jsonl").symlink_to("/etc/passwd")
    os.chmod(stage.writable["code"], 0o777)
    events = finalize_run_dir(stage, {"run_id": "r"}, validation_enabled=True)
    assert sorted(e["path"] for e in events) == [
        "logs/validation_calls.jsonl",
        "submission/deep/er/dir-link",
        "submission/submission.csv",
    ]
    for top, dirs, files in os.walk(run_dir):
        assert stat.S_IMODE(os.lstat(top).st_mode) == 0o755 or top == str(run_dir)
        for name in dirs + files:
            assert not os.path.islink(os.path.join(top, name))
    assert (run_dir / "logs" / "validation_calls.jsonl").read_text() == ""
    assert not (run_dir / ".sandbox").exists()


def test_many_links_and_hard_links_in_one_folder_are_all_handled(tmp_path):
    out = tmp_path / "logs"
    out.mkdir()
    (out / "shared.txt").write_text("same\n")
    for i in range(300):
        (out / f"link{i}").symlink_to("/etc/passwd")
        os.link(out / "shared.txt", out / f"twin{i}.txt")
    events = sanitize_outputs(out, "logs")
    kinds = [e["kind"] for e in events]
    assert kinds.count("refused-output") == 300 and kinds.count("hard-link-copied") == 300
    names = os.listdir(out)
    assert len(names) == 301 and not any(n.startswith(".") for n in names)
    assert {os.lstat(out / n).st_nlink for n in names} == {1}
    assert {(out / n).read_text() for n in names} == {"same\n"}


def test_the_way_back_up_is_found_by_name_when_dotdot_cannot_be_used(tmp_path, monkeypatch):
    from mleaudit.sandbox.extract import walk

    out = tmp_path / "code"
    out.mkdir()
    depth = walk.MAX_HELD_DIR_FDS * 3
    fd = _descend(out, [b"d"] * depth)
    os.symlink("/etc/passwd", b"bottom", dir_fd=fd)
    os.close(fd)
    for level in (1, depth // 2):
        (out.joinpath(*["d"] * level) / f"link{level}").symlink_to("/etc/passwd")
    real_open = os.open

    def no_dotdot(path, flags, *args, **kwargs):
        if path == b"..":
            raise PermissionError(13, "refused for the test")
        return real_open(path, flags, *args, **kwargs)

    fds = _open_fds()
    monkeypatch.setattr(os, "open", no_dotdot)
    events = sanitize_outputs(out, "code")
    monkeypatch.undo()
    assert _open_fds() == fds
    assert sorted(e["path"].rsplit("/", 1)[1] for e in events) == ["bottom", "link1", f"link{depth // 2}"]
    assert {e["kind"] for e in events} == {"refused-output"}


def test_a_flood_of_minor_events_never_pushes_a_link_to_the_answers_out_of_the_record(tmp_path):
    from mleaudit.sandbox.extract.events import MAX_EVENTS, bounded_events

    flood = [{"kind": "hard-link-copied", "detail": "copied", "path": f"code/f{i}"} for i in range(MAX_EVENTS + 5)]
    link = {"kind": "refused-output", "detail": "symbolic link to '/data/private/test.csv' removed", "path": "submission/x"}
    spoof = {"kind": "spoofed-validation-log", "detail": "spoofed", "path": "logs/x"}
    events = bounded_events([*flood, link, spoof])
    assert len(events) == MAX_EVENTS + 1
    assert link in events and spoof in events
    assert events[-1]["kind"] == "events-truncated" and events[-1]["dropped"] == {"hard-link-copied": 7}
    assert bounded_events([link]) == [link]


def test_extended_attributes_and_acls_are_removed_and_counted(tmp_path):
    out = tmp_path / "code"
    (out / "sub").mkdir(parents=True)
    (out / "sub" / "model.bin").write_bytes(b"m")
    try:
        os.setxattr(out / "sub" / "model.bin", "user.note", b"from run 1")
        os.setxattr(out / "sub", "user.note", b"folder")
    except OSError as exc:
        pytest.skip(f"this file system has no user attributes: {exc}")
    events = sanitize_outputs(out, "code", owner=_owner())
    assert os.listxattr(out / "sub" / "model.bin") == [] and os.listxattr(out / "sub") == []
    assert [(e["kind"], e["path"]) for e in events] == [("attributes-removed", "code")]
    assert events[0]["detail"].startswith("2 extended attribute(s)")
