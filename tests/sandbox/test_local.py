"""The bubblewrap backend: layout, user, read-only mounts, environment, limits, errors."""

from __future__ import annotations

import json
import os
import shutil
import signal

import pytest

from mleaudit.audit.run import load_run
from mleaudit.sandbox.errors import GpuUnavailable, RunDirError, SandboxUnavailable, SpecError
from mleaudit.sandbox.local import BubblewrapRunner, UnsafeLocalRunner, bwrap_works
from mleaudit.sandbox.runner import run_sandbox
from mleaudit.sandbox.spec import GpuRequest, Mount, NetworkPolicy, Resources, SandboxSpec

from tests.sandbox.conftest import _BWRAP, leaked

_BWRAP_OK = _BWRAP[0]

LAYOUT_AGENT = """\
set -u
id -u > /home/code/uid.txt
ls /home | tr '\\n' ' ' > /home/logs/home.txt
cat /home/data/train.csv > /home/code/train-copy.csv
echo "$SUBMISSION_DIR $COMPETITION_ID $HOME ${HOST_SECRET:-unset}" > /home/logs/env.txt
cp /home/data/sample_submission.csv /home/submission/submission.csv
/home/validate_submission.sh && echo "validated ok"
printf 'id,label\\n' > /tmp/bad.csv
/home/validate_submission.sh /tmp/bad.csv || echo "invalid as expected"
touch /home/data/new.csv 2>/dev/null && echo "DATA WRITABLE"
touch /home/agent/new.sh 2>/dev/null && echo "AGENT WRITABLE"
exit 3
"""


def test_a_run_produces_the_mle_bench_layout(run_agent, bwrap, toy, monkeypatch):
    monkeypatch.setenv("HOST_SECRET", "sk-do-not-leak")
    result = run_agent(LAYOUT_AGENT, runner=bwrap)
    run = result.run_dir
    assert result.status == "completed" and result.exit_code == 3
    assert sorted(p.name for p in run.iterdir()) == ["code", "logs", "run.json", "run.log", "submission"]
    assert (run / "code" / "uid.txt").read_text().strip() != "0"
    assert (run / "logs" / "home.txt").read_text().split() == [
        "agent", "code", "data", "logs", "submission", "validate.sock", "validate_submission.sh"]
    assert (run / "code" / "train-copy.csv").read_text() == (toy.public / "train.csv").read_text()
    assert (run / "logs" / "env.txt").read_text().split() == ["/home/submission", "toy", "/tmp", "unset"]
    log = (run / "run.log").read_text()
    assert "validated ok" in log and "invalid as expected" in log
    assert "WRITABLE" not in log
    assert sorted(p.name for p in toy.public.iterdir()) == ["sample_submission.csv", "test.csv", "train.csv"]
    record = json.loads((run / "run.json").read_text())
    assert record["status"] == "completed" and record["exit_code"] == 3 and record["backend"] == "bubblewrap"
    assert record["validation_calls"]["count"] == 2 and record["validation_calls"]["valid"] == 1
    assert record["isolation"]["sandbox"] is True and "net" in record["isolation"]["namespaces"]
    assert record["spec"]["hide"] == [str(toy.private)]
    calls = (run / "logs" / "validation_calls.jsonl").read_text().splitlines()
    assert [json.loads(c)["valid"] for c in calls] == [True, False]
    loaded = load_run(run)
    assert loaded.competition_id == "toy" and loaded.submission is not None
    assert leaked(result, toy.token) == []


def test_a_command_that_exits_at_once_is_recorded(run_agent, bwrap):
    result = run_agent("exit 0", runner=bwrap)
    assert (result.status, result.exit_code, result.submission) == ("completed", 0, None)
    assert result.run_log.read_text() == ""


def test_a_missing_interpreter_is_the_agents_exit_code_not_a_crash(run_agent, bwrap):
    result = run_agent("", runner=bwrap, command=("/no/such/binary",))
    assert result.status == "completed" and result.exit_code != 0
    assert "/no/such/binary" in result.run_log.read_text()


def test_the_time_limit_kills_and_is_recorded(run_agent, bwrap):
    result = run_agent("echo started; sleep 60; echo finished", runner=bwrap, time_limit_s=1.5)
    assert result.status == "timed_out" and result.timed_out and result.limits_hit == ("time",)
    assert result.duration_s < 20
    log = result.run_log.read_text()
    assert "started" in log and "finished" not in log
    record = json.loads(result.run_json.read_text())
    assert record["limits_hit"] == ["time"] and record["status"] == "timed_out"
    assert [e["limit"] for e in record["events"] if e["kind"] == "limit-hit"] == ["time"]


def test_a_non_empty_run_dir_is_refused(tmp_path, bwrap):
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "old.txt").write_text("x")
    with pytest.raises(RunDirError, match="not empty"):
        run_sandbox(SandboxSpec(command=("true",)), tmp_path / "run", runner=bwrap)


def test_a_missing_data_dir_is_refused_before_anything_is_written(tmp_path, bwrap):
    spec = SandboxSpec(command=("true",), data_dir=tmp_path / "nowhere")
    with pytest.raises(SpecError, match="nowhere"):
        run_sandbox(spec, tmp_path / "run", runner=bwrap)
    assert not (tmp_path / "run").exists()


def test_a_gpu_request_without_gpus_is_a_failed_start_that_a_rerun_replaces(tmp_path, bwrap):
    if any(p.startswith("nvidia") for p in os.listdir("/dev")):
        pytest.skip("this machine has NVIDIA devices")
    with pytest.raises(GpuUnavailable, match="no NVIDIA devices"):
        run_sandbox(SandboxSpec(command=("true",), gpus=GpuRequest()), tmp_path / "run", runner=bwrap)
    record = json.loads((tmp_path / "run" / "run.json").read_text())
    assert (record["status"], record["agent_started"]) == ("sandbox_failed", False)
    assert [e["kind"] for e in record["events"]] == ["sandbox-failed"]
    assert sorted(p.name for p in (tmp_path / "run").iterdir()) == ["run.json", "run.log"]
    result = run_sandbox(SandboxSpec(command=("true",)), tmp_path / "run", runner=bwrap)
    assert result.status == "completed"
    assert json.loads(result.run_json.read_text())["agent_started"] is True


def test_missing_bubblewrap_is_refused_with_a_clear_message(tmp_path, monkeypatch):
    monkeypatch.setattr(shutil, "which", lambda name, *a, **k: None)
    with pytest.raises(SandboxUnavailable, match="--unsafe-no-sandbox"):
        run_sandbox(SandboxSpec(command=("true",)), tmp_path / "run", runner=BubblewrapRunner())
    assert json.loads((tmp_path / "run" / "run.json").read_text())["status"] == "sandbox_failed"


def test_a_hidden_path_inside_an_extra_mount_is_covered(run_agent, bwrap, toy):
    # Mounting the whole data tree would expose the answers; the private folder is masked.
    script = "ls /mnt/tree/private | tr '\\n' ' '; cat /mnt/tree/private/answers.csv; ls /mnt/tree/public | wc -l"
    result = run_agent(script, runner=bwrap, mounts=(Mount(source=toy.root, target="/mnt/tree"),))
    assert toy.token not in result.run_log.read_text()
    assert result.run_log.read_text().strip().endswith("3")
    assert leaked(result, toy.token) == []


def test_binding_the_answers_folder_is_refused(tmp_path, toy, bwrap):
    spec = SandboxSpec(command=("true",), data_dir=toy.private, hidden=(toy.private,))
    with pytest.raises(SpecError, match="must stay out of the sandbox"):
        run_sandbox(spec, tmp_path / "run", runner=bwrap)


def test_the_unsafe_runner_substitutes_host_paths(run_agent, toy):
    spec_script = ('cp "$DATA_DIR/sample_submission.csv" "$SUBMISSION_DIR/submission.csv" && '
                   'sh "$VALIDATE_HELPER" "$SUBMISSION_DIR/submission.csv"')
    result = run_agent(spec_script, runner=UnsafeLocalRunner(), command=("/bin/sh", "-c", spec_script))
    assert result.status == "completed" and result.exit_code == 0
    assert result.submission is not None and result.validation.count == 1
    record = json.loads(result.run_json.read_text())
    assert record["isolation"]["sandbox"] is False and record["events"][0]["kind"] == "no-sandbox"


def test_resource_limits_are_applied_and_recorded(run_agent, bwrap):
    # Without a cgroup (see test_limits.py for the cgroup), the limits are rlimits.
    script = "import resource as r; print(r.getrlimit(r.RLIMIT_NPROC)[0], r.getrlimit(r.RLIMIT_AS)[0])"
    result = run_agent(script, runner=BubblewrapRunner(cgroups=False), name="limits.py",
                       resources=Resources(cpus=1, memory_bytes=512 * 1024**2, pids=100))
    nproc, vmem = result.run_log.read_text().split()
    assert int(vmem) == 512 * 1024**2 and int(nproc) in (100, 102)
    rlimits = json.loads(result.run_json.read_text())["isolation"]["rlimits"]
    assert rlimits["address_space_bytes"] == 512 * 1024**2 and len(rlimits["cpu_affinity"]) == 1


ALLOW_LIST_AGENT = """\
import json, os, urllib.request, urllib.error
print("proxy", os.environ["HTTP_PROXY"])
for url in ("http://127.0.0.1:{port}/allowed", "http://blocked.invalid/x"):
    try:
        with urllib.request.urlopen(url, timeout=10) as reply:
            print("GOT", reply.status, reply.read().decode())
    except urllib.error.HTTPError as exc:
        print("DENIED", exc.code)
"""


def test_an_allow_list_reaches_only_the_listed_hosts(run_agent, bwrap):
    import http.server
    import threading

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802
            self.send_response(200)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"ok")

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        port = server.server_address[1]
        result = run_agent(ALLOW_LIST_AGENT.replace("{port}", str(port)), runner=bwrap, name="net.py",
                           network=NetworkPolicy(allow=(f"127.0.0.1:{port}",)))
    finally:
        server.shutdown()
        server.server_close()
    log = result.run_log.read_text()
    assert "GOT 200 ok" in log and "DENIED 403" in log, log
    record = json.loads(result.run_json.read_text())
    assert record["network"]["allowed"] == 1 and record["network"]["denied"] == 1
    assert record["network"]["requests"][1]["host"] == "blocked.invalid"
    assert any(e["kind"] == "network-denied" for e in record["events"])


def test_a_non_root_caller_gets_a_user_namespace_and_keeps_its_uid(tmp_path, monkeypatch):
    import mleaudit.sandbox.local.bubblewrap as local

    monkeypatch.setattr(local.os, "geteuid", lambda: 1000)
    monkeypatch.setattr(local.os, "getegid", lambda: 1000)
    runner = BubblewrapRunner(bwrap="/usr/bin/bwrap")
    spec = SandboxSpec(command=("true",))
    from mleaudit.sandbox.runner import ExecutionPlan

    plan = ExecutionPlan(spec=spec, run_id="r", binds=(), masks=(), env={}, command=("true",), log_path=tmp_path / "l")
    args, _ = runner.build_args(plan)
    assert "--unshare-all" in args and "--cap-drop" in args and "setpriv" not in " ".join(args)
    assert runner.sandbox_owner(spec) == (1000, 1000)


def test_a_root_caller_switches_to_an_unprivileged_uid(tmp_path, monkeypatch):
    import mleaudit.sandbox.local.bubblewrap as local

    monkeypatch.setattr(local.os, "geteuid", lambda: 0)
    monkeypatch.setattr(local.shutil, "which", lambda name: f"/usr/bin/{name}")
    runner = BubblewrapRunner(bwrap="/usr/bin/bwrap")
    spec = SandboxSpec(command=("true",), user="2000:3000")
    from mleaudit.sandbox.runner import ExecutionPlan

    plan = ExecutionPlan(spec=spec, run_id="r", binds=(), masks=(), env={}, command=("true",), log_path=tmp_path / "l")
    args, _ = runner.build_args(plan)
    tail = args[args.index("--") + 1:]
    assert tail[:5] == ["/usr/bin/setpriv", "--reuid", "2000", "--regid", "3000"]
    assert "--no-new-privs" in tail and "--bounding-set=-all" in tail and tail[-1] == "true"
    assert "--unshare-net" in args and "--unshare-pid" in args


def test_sigterm_comes_first_and_a_submission_written_in_the_grace_period_is_kept(run_agent, bwrap):
    script = """\
import shutil, signal, sys, time

def stop(signum, frame):
    time.sleep(1.0)  # a last write that takes a moment
    shutil.copy("/home/data/sample_submission.csv", "/home/submission/submission.csv")
    print("submission written on SIGTERM", flush=True)
    sys.exit(0)

signal.signal(signal.SIGTERM, stop)
print("started", flush=True)
time.sleep(60)
"""
    result = run_agent(script, runner=bwrap, name="graceful.py", time_limit_s=1.5, stop_grace_s=5)
    assert result.status == "timed_out" and result.limits_hit == ("time",)
    assert (result.exit_code, result.exit_signal) == (0, None)
    assert result.submission is not None and result.submission.read_text().startswith("id,label")
    assert "submission written on SIGTERM" in result.run_log.read_text()
    assert result.duration_s < 6
    record = json.loads(result.run_json.read_text())
    assert record["exit_code"] == 0 and record["stopped_by"] == "time" and record["limits"]["stop_grace_s"] == 5


def test_an_agent_that_ignores_sigterm_is_killed_after_the_grace_period(run_agent, bwrap):
    script = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print('started', flush=True); time.sleep(60)"
    result = run_agent(script, runner=bwrap, name="stubborn.py", time_limit_s=1, stop_grace_s=1)
    assert result.status == "timed_out" and result.timed_out
    assert (result.exit_code, result.exit_signal) == (137, 9)
    assert 2 <= result.duration_s < 10
    record = json.loads(result.run_json.read_text())
    assert record["exit_code"] == 137 and record["exit_signal"] == 9


def test_a_stop_request_stops_the_sandbox_with_sigterm_first(bwrap, tmp_path):
    import threading

    from mleaudit.sandbox.runner import ExecutionPlan

    script = "trap 'echo got TERM; exit 5' TERM; echo started; sleep 30 & wait; echo finished"
    plan = ExecutionPlan(spec=SandboxSpec(command=("/bin/sh", "-c", script), stop_grace_s=5), run_id="stop", binds=(),
                         masks=(), env={"PATH": "/usr/bin:/bin"}, command=("/bin/sh", "-c", script),
                         log_path=tmp_path / "run.log")  # fmt: skip
    timer = threading.Timer(1.0, plan.stop.request, args=("disk", "the output folders reached 2 GiB"))
    timer.start()
    try:
        execution = bwrap.execute(plan)
    finally:
        timer.cancel()
    assert execution.limits_hit == ("disk",) and not execution.timed_out
    assert execution.limit_details["disk"] == "the output folders reached 2 GiB"
    assert (execution.exit_code, execution.exit_signal) == (5, None)
    log = (tmp_path / "run.log").read_text()
    assert "got TERM" in log and "finished" not in log
    assert execution.log_kept_bytes == len(log.encode())


def test_run_log_is_capped_and_the_truncation_recorded(run_agent, bwrap):
    script = "import sys\nfor _ in range(5):\n    sys.stdout.write('x' * 1024 * 1024)\nsys.stdout.flush()"
    result = run_agent(script, runner=bwrap, name="chatty.py", resources=Resources(log_bytes=1024**2))
    data = result.run_log.read_bytes()
    assert data.startswith(b"x" * 1024**2) and 1024**2 < len(data) < 1024**2 + 200
    assert b"capped at 1048576 bytes; 4194304 further bytes were dropped" in data
    record = json.loads(result.run_json.read_text())
    assert record["log"] == {"path": "run.log", "max_bytes": 1024**2, "kept_bytes": 1024**2, "dropped_bytes": 4 * 1024**2}
    event = next(e for e in record["events"] if e["kind"] == "log-truncated")
    assert event["dropped_bytes"] == 4 * 1024**2
    assert result.log_dropped_bytes == 4 * 1024**2


def test_a_read_only_venv_is_the_agents_python(run_agent, tmp_path):
    import subprocess

    if not _BWRAP_OK:
        pytest.skip("bubblewrap cannot create namespaces here")
    # The venv's python links to its base interpreter, which must be visible in the sandbox: /usr's.
    base = shutil.which("python3", path="/usr/bin:/bin")
    if base is None:
        pytest.skip("no system python3 in /usr/bin")
    venv = tmp_path / "venv"
    subprocess.run([base, "-m", "venv", "--without-pip", "--system-site-packages", str(venv)], check=True)
    script = "import sys; print(sys.prefix); open(sys.prefix + '/new', 'w')"
    result = run_agent(script, runner=BubblewrapRunner(extra_ro_paths=(str(venv),)), name="prefix.py",
                       command=("python3", "/home/agent/prefix.py"),
                       env={"PATH": f"{venv}/bin:/usr/bin:/bin"})  # fmt: skip
    log = result.run_log.read_text()
    assert log.splitlines()[0] == str(venv)
    assert "Read-only file system" in log and not (venv / "new").exists()
    assert json.loads(result.run_json.read_text())["isolation"]["extra_ro_paths"] == [str(venv)]


def test_a_rootfs_replaces_the_hosts_system_folders(run_agent, tmp_path):
    if not _BWRAP_OK:
        pytest.skip("bubblewrap cannot create namespaces here")
    rootfs = tmp_path / "rootfs"
    (rootfs / "etc").mkdir(parents=True)
    (rootfs / "etc" / "rootfs-marker").write_text("from the rootfs\n")
    # A minimal root: the host's /usr (a link is followed by the bind), its own /etc, merged-/usr links.
    (rootfs / "usr").symlink_to("/usr")
    for link in ("bin", "sbin", "lib", "lib64"):
        if os.path.exists(f"/usr/{link}"):
            (rootfs / link).symlink_to(f"usr/{link}")
    for path in (tmp_path, rootfs, rootfs / "etc"):
        path.chmod(0o755)
    script = "cat /etc/rootfs-marker; ls /etc | tr '\\n' ' '; echo; readlink /bin"
    result = run_agent(script, runner=BubblewrapRunner(rootfs=str(rootfs)))
    lines = result.run_log.read_text().splitlines()
    assert lines[0] == "from the rootfs" and lines[1].split() == ["rootfs-marker"] and lines[2] == "usr/bin"
    assert json.loads(result.run_json.read_text())["isolation"]["rootfs"] == str(rootfs)


def test_a_rootfs_without_usr_is_refused(tmp_path):
    runner = BubblewrapRunner(bwrap="/usr/bin/bwrap", rootfs=str(tmp_path))
    with pytest.raises(SandboxUnavailable, match="has no usr/"):
        runner._system_args()


BWRAP_ERRORS = [
    "bwrap: setting up uid map: Permission denied",
    "bwrap: No permissions to creating new namespace, likely because the kernel does not allow "
    "non-privileged user namespaces. On e.g. debian this can be enabled with 'sysctl kernel.unprivileged_userns_clone=1'.",
]


@pytest.mark.parametrize("message", BWRAP_ERRORS)
def test_a_bubblewrap_that_cannot_create_namespaces_is_a_failed_start_with_remedies(tmp_path, monkeypatch, message):
    fake = tmp_path / "bin" / "bwrap"
    fake.parent.mkdir()
    fake.write_text(f"#!/bin/sh\necho \"{message}\" >&2\nexit 1\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake.parent}:{os.environ['PATH']}")
    with pytest.raises(SandboxUnavailable) as info:
        run_sandbox(SandboxSpec(command=("true",)), tmp_path / "run", runner=BubblewrapRunner())
    error = info.value
    assert message in str(error)
    remedies = " ".join(error.remedies)
    for fix in ("kernel.apparmor_restrict_unprivileged_userns=0", "kernel.unprivileged_userns_clone=1",
                "user.max_user_namespaces", "as root", "--backend docker"):  # fmt: skip
        assert fix in remedies
    record = json.loads((tmp_path / "run" / "run.json").read_text())
    assert (record["status"], record["agent_started"], record["exit_code"]) == ("sandbox_failed", False, None)
    assert record["remedies"] == list(error.remedies)
    assert message in record["error"]
    ok, detail = bwrap_works()
    assert not ok and message in detail and "kernel.apparmor_restrict_unprivileged_userns=0" in detail


def test_the_unsafe_runner_stops_at_the_time_limit_with_an_exit_code(run_agent):
    result = run_agent("echo started; sleep 30", runner=UnsafeLocalRunner(), command=("/bin/sh", "-c", "echo started; sleep 30"),
                       time_limit_s=1, stop_grace_s=2)  # fmt: skip
    assert result.status == "timed_out" and result.limits_hit == ("time",)
    assert (result.exit_code, result.exit_signal) == (128 + signal.SIGTERM, signal.SIGTERM)
    assert result.duration_s < 5


def test_the_unsafe_runner_refuses_to_hide_paths_in_its_preflight(tmp_path):
    from mleaudit.sandbox.runner import ExecutionPlan

    plan = ExecutionPlan(spec=SandboxSpec(command=("true",)), run_id="r", binds=(), masks=("/home/data/private",),
                         env={}, command=("true",), log_path=tmp_path / "l")  # fmt: skip
    with pytest.raises(SpecError, match="without a sandbox"):
        UnsafeLocalRunner().preflight(plan)


# --- per-run sandbox users and keyrings --------------------------------------------------------

#: (add_key, request_key, keyctl) syscall numbers by machine.
_KEY_SYSCALLS = {"x86_64": (248, 249, 250), "aarch64": (217, 218, 219)}

_KEYS_AGENT = """\
import ctypes, os, shutil, sys
ADD_KEY, REQUEST_KEY, KEYCTL = {numbers}
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
L = ctypes.c_long
RINGS = {{"user": -4, "user-session": -5, "session": -3}}

def add(ring):
    found = libc.syscall(L(ADD_KEY), b"user", b"carried", b"probe-results", L(13), L(ring))
    return found, ctypes.get_errno()

def search(ring):
    found = libc.syscall(L(KEYCTL), L(10), L(ring), b"user", b"carried", L(0))  # KEYCTL_SEARCH
    return found, ctypes.get_errno()

print("uid", os.getuid(), os.getgid())
if sys.argv[1] == "store":
    for name, ring in RINGS.items():
        print("add", name, add(ring)[0] > 0, "found", search(ring)[0] > 0)
    shutil.copy("/home/data/sample_submission.csv", "/home/submission/submission.csv")
else:
    for name, ring in RINGS.items():
        found, errno = search(ring)
        print("search", name, found, errno)
    found = libc.syscall(L(REQUEST_KEY), b"user", b"carried", None, L(0))
    print("request_key", found, ctypes.get_errno())
"""


def _key_numbers() -> tuple[int, int, int]:
    import platform

    numbers = _KEY_SYSCALLS.get(platform.machine())
    if numbers is None:
        pytest.skip(f"no keyctl syscall numbers for {platform.machine()}")
    return numbers


def _keys_usable() -> None:
    """Skip where this process cannot use keyctl (a seccomp filter refusing it)."""
    import ctypes

    numbers = _key_numbers()
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    # KEYCTL_GET_KEYRING_ID of the thread keyring without creating it: ENOKEY when allowed.
    if libc.syscall(ctypes.c_long(numbers[2]), ctypes.c_long(0), ctypes.c_long(-1), ctypes.c_long(0)) < 0:
        if ctypes.get_errno() in (1, 38):  # EPERM, ENOSYS
            pytest.skip("keyctl is refused in this process")


def _wait_for_no_keys(uid: int) -> bool:
    import time

    from mleaudit.sandbox.run_user import key_owners

    end = time.monotonic() + 10
    while uid in key_owners():
        if time.monotonic() > end:
            return False
        time.sleep(0.1)
    return True


@pytest.mark.skipif(os.geteuid() != 0, reason="the per-run uid is for root callers")
def test_a_root_callers_runs_get_fresh_uids_and_keys_do_not_carry_over(run_agent, bwrap):
    from mleaudit.sandbox.run_user import RUN_UID_RANGE

    _keys_usable()
    script = _KEYS_AGENT.format(numbers=_key_numbers())
    first = run_agent(script, runner=bwrap, name="keys.py", command=("python3", "/home/agent/keys.py", "store"))
    log = first.run_log.read_text()
    assert first.status == "completed" and first.exit_code == 0, log
    for ring in ("user", "user-session", "session"):
        assert f"add {ring} True found True" in log, log
    uid1 = int(log.split("uid ")[1].split()[0])
    record = json.loads(first.run_json.read_text())
    assert record["isolation"]["user"] == f"{uid1}:{uid1}" and uid1 in RUN_UID_RANGE
    # The outputs come back owned by the caller.
    submission = first.run_dir / "submission" / "submission.csv"
    assert submission.is_file() and (submission.stat().st_uid, submission.stat().st_gid) == (0, 0)
    assert all(path.stat().st_uid == 0 for path in first.run_dir.rglob("*"))
    # The first run's keys are gone from the kernel, not only out of reach.
    assert _wait_for_no_keys(uid1), f"uid {uid1} still owns keys"

    second = run_agent(script, runner=bwrap, name="keys.py", command=("python3", "/home/agent/keys.py", "look"))
    log = second.run_log.read_text()
    assert second.status == "completed" and second.exit_code == 0, log
    uid2 = int(log.split("uid ")[1].split()[0])
    assert uid2 != uid1 and uid2 in RUN_UID_RANGE
    assert json.loads(second.run_json.read_text())["isolation"]["user"] == f"{uid2}:{uid2}"
    for ring in ("user", "user-session", "session"):
        assert f"search {ring} -1 126" in log, log  # ENOKEY
    assert "request_key -1 126" in log, log


def test_a_sandbox_neither_reads_nor_writes_the_callers_session_keyring(tmp_path, bwrap):
    import subprocess
    import sys

    _keys_usable()
    add_key, _, keyctl = _key_numbers()
    agent = tmp_path / "agent"
    agent.mkdir(mode=0o755)
    agent.chmod(0o755)
    tmp_path.chmod(0o755)
    (agent / "keys.py").write_text(_KEYS_AGENT.format(numbers=_key_numbers()))
    # A caller with a session keyring of its own (as a login or a service manager gives it),
    # holding a key: the sandbox must not find it, and what the sandbox adds must not land there.
    driver = f"""
import ctypes, sys
from pathlib import Path
from mleaudit.sandbox.local import BubblewrapRunner
from mleaudit.sandbox.runner import run_sandbox
from mleaudit.sandbox.spec import SandboxSpec
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
L = ctypes.c_long
assert libc.syscall(L({keyctl}), L(1), None) > 0  # KEYCTL_JOIN_SESSION_KEYRING
assert libc.syscall(L({add_key}), b"user", b"carried", b"host-secret", L(11), L(-3)) > 0
root = Path(sys.argv[1])
for n, mode in enumerate(("look", "store")):
    spec = SandboxSpec(command=("python3", "/home/agent/keys.py", mode), agent_dir=root / "agent", time_limit_s=60)
    result = run_sandbox(spec, root / f"run{{n}}", runner=BubblewrapRunner())
    print(result.run_log.read_text())
found = libc.syscall(L({keyctl}), L(10), L(-3), b"user", b"carried", L(0))
size = libc.syscall(L({keyctl}), L(11), L(found), None, L(0))  # KEYCTL_READ: the payload's length
print("caller's key size", size)
"""
    proc = subprocess.run([sys.executable, "-c", driver, str(tmp_path)], capture_output=True, text=True, timeout=120,
                          cwd=os.getcwd())  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "search session -1 126" in out, out
    assert "add session True found True" in out, out
    # The caller's key is its own still: a key the sandbox added would have replaced its payload.
    assert "caller's key size 11" in out, out


def test_the_sandbox_owner_is_drawn_once_per_run(monkeypatch):
    import mleaudit.sandbox.local.bubblewrap as local
    from mleaudit.sandbox.run_user import RUN_UID_RANGE, reserved_uids

    monkeypatch.setattr(local.os, "geteuid", lambda: 0)
    runner = BubblewrapRunner(bwrap="/usr/bin/bwrap")
    first, second = SandboxSpec(command=("true",)), SandboxSpec(command=("true",))
    owner = runner.sandbox_owner(first)
    assert owner[0] == owner[1] and owner[0] in RUN_UID_RANGE
    assert runner.sandbox_owner(first) == owner  # the staging folders, the pre-flight and the run agree
    assert runner.sandbox_owner(second) != owner  # a run in progress holds its uid
    runner.run_users.end(first)
    runner.run_users.end(second)
    assert owner[0] not in reserved_uids()
    # A spec with a user keeps it.
    assert runner.sandbox_owner(SandboxSpec(command=("true",), user="2000:3000")) == (2000, 3000)


def test_a_root_caller_without_a_user_gets_a_user_name_in_the_environment(tmp_path, monkeypatch):
    import mleaudit.sandbox.local.bubblewrap as local
    from mleaudit.sandbox.runner import ExecutionPlan

    monkeypatch.setattr(local.os, "geteuid", lambda: 0)
    plan = ExecutionPlan(spec=SandboxSpec(command=("true",)), run_id="r", binds=(), masks=(), env={}, command=("true",),
                         log_path=tmp_path / "l")  # fmt: skip
    env = BubblewrapRunner(bwrap="/usr/bin/bwrap")._env(plan, ())
    assert env["USER"] == env["LOGNAME"] == "sandbox"


def test_the_sandbox_s_first_process_shows_no_host_path(run_agent, bwrap, toy):
    # Process 1 of the sandbox is bubblewrap; its command line used to list every bind's host path.
    result = run_agent("tr '\\0' ' ' < /proc/1/cmdline; echo; ls /proc/self/fd | wc -l", runner=bwrap)
    first = result.run_log.read_text().splitlines()[0]
    assert first.startswith(("bwrap --args", f"{bwrap.bwrap or 'bwrap'} --args")) or "--args" in first, first
    assert str(toy.root) not in first and str(toy.public) not in first
