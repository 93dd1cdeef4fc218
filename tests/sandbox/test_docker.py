"""The docker backend.

Container configuration (user, network, mounts, limits, GPUs through ``device_requests``) is
checked without a daemon. Tests marked ``docker`` run real containers (``--run-docker``); they
build the agent image from a local root filesystem when it is missing (``images/``), never
pulling anything.
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
from pathlib import Path

import pytest

from mleaudit.sandbox.errors import GpuUnavailable, ImageNotFound, SandboxUnavailable
from mleaudit.sandbox.runner import Bind, ExecutionPlan, run_sandbox
from mleaudit.sandbox.spec import GpuRequest, Mount, NetworkPolicy, Resources, SandboxSpec

from tests.sandbox.conftest import leaked
from tests.sandbox.escapes import HostListener, heartbeat_stopped, run_escape

docker_sdk = pytest.importorskip("docker", reason="the docker SDK (extra 'sandbox') is not installed")

from mleaudit.sandbox.docker import DEFAULT_IMAGE, DEFAULT_SHM_BYTES, ENFORCEMENT, NOFILE_LIMIT, DockerRunner  # noqa: E402
from mleaudit.sandbox.run_user import RUN_UID_RANGE, reserved_uids  # noqa: E402

REPO = Path(__file__).resolve().parents[2]


def _plan(tmp_path: Path, **fields) -> ExecutionPlan:
    spec = SandboxSpec(command=("python3", "solve.py"), image="img:test", **fields)
    binds = (Bind(source=tmp_path / "public", target="/home/data"),
             Bind(source=tmp_path / "out", target="/home/submission", read_only=False))
    return ExecutionPlan(spec=spec, run_id="r1", binds=binds, masks=("/home/data/private",), env={"A": "1"},
                         command=spec.command, log_path=tmp_path / "run.log")


def test_container_config_is_locked_down(tmp_path):
    runner = DockerRunner(client=object())
    plan = _plan(tmp_path)
    config = runner.container_config(plan)
    runner.run_users.end(plan.spec)
    assert config["network_mode"] == "none"
    assert config["cap_drop"] == ["ALL"] and config["security_opt"] == ["no-new-privileges"]
    assert config["user"] != "0" and not config["user"].startswith("0:")
    assert [dict(u) for u in config["ulimits"]] == [{"Name": "nofile", "Soft": NOFILE_LIMIT, "Hard": NOFILE_LIMIT}]
    mounts = {m["Target"]: (m["Source"], m["ReadOnly"], m["Type"]) for m in config["mounts"]}
    assert mounts == {"/home/data": (str(tmp_path / "public"), True, "bind"),
                      "/home/submission": (str(tmp_path / "out"), False, "bind")}
    assert "/home/data/private" in config["tmpfs"]
    assert not any("docker.sock" in m["Source"] for m in config["mounts"])
    assert "device_requests" not in config and "privileged" not in config
    drawn = {"USER": "sandbox", "LOGNAME": "sandbox"} if os.geteuid() == 0 else {}
    assert config["environment"] == {"A": "1", "TINI_KILL_PROCESS_GROUP": "1", **drawn}
    assert config["read_only"] is True and config["init"] is True


def _as_root(monkeypatch) -> None:
    import mleaudit.sandbox.run_user

    monkeypatch.setattr(mleaudit.sandbox.run_user.os, "geteuid", lambda: 0)


def test_a_root_callers_containers_run_as_a_uid_drawn_for_the_run(tmp_path, monkeypatch):
    _as_root(monkeypatch)
    runner = DockerRunner(client=object())
    first, second = _plan(tmp_path), _plan(tmp_path)
    owner = runner.sandbox_owner(first.spec)
    try:
        assert owner[0] == owner[1] and owner[0] in RUN_UID_RANGE and owner[0] != 1000
        # The staging folders, the pre-flight container and the agent's container agree.
        assert runner.container_config(first)["user"] == f"{owner[0]}:{owner[1]}"
        assert runner.sandbox_owner(first.spec) == owner
        other = runner.sandbox_owner(second.spec)
        assert other != owner and other[0] in RUN_UID_RANGE
        env = runner.container_config(first)["environment"]
        assert env["USER"] == env["LOGNAME"] == "sandbox"
    finally:
        runner.run_users.end(first.spec)
        runner.run_users.end(second.spec)
    assert not {owner[0], other[0]} & reserved_uids()
    # A spec's user is kept as given, with no user name set.
    given = _plan(tmp_path, user="2000:3000")
    config = runner.container_config(given)
    assert config["user"] == "2000:3000" and "USER" not in config["environment"]


def test_a_run_that_ends_early_releases_its_uid(tmp_path, monkeypatch):
    _as_root(monkeypatch)
    runner = DockerRunner(client=object())  # no daemon: the image look-up fails
    plan = _plan(tmp_path)
    uid, _ = runner.sandbox_owner(plan.spec)
    with pytest.raises(SandboxUnavailable):
        runner.preflight(plan)
    assert uid not in reserved_uids() and not runner.run_users.drawn(plan.spec)
    plan = _plan(tmp_path)
    uid, _ = runner.sandbox_owner(plan.spec)
    with pytest.raises(SandboxUnavailable):
        runner.execute(plan)
    assert uid not in reserved_uids() and not runner.run_users.drawn(plan.spec)


def test_resource_limits_map_to_the_docker_api(tmp_path):
    plan = _plan(tmp_path, resources=Resources(cpus=1.5, memory_bytes=2**30, shm_bytes=2**28, pids=128))
    config = DockerRunner(client=object()).container_config(plan)
    assert config["nano_cpus"] == 1_500_000_000
    assert config["mem_limit"] == config["memswap_limit"] == 2**30
    assert config["shm_size"] == 2**28 and config["pids_limit"] == 128
    # The writable tmpfs file systems are sized at the memory limit (charged to the memory cgroup).
    for target in ("/tmp", "/var/tmp"):
        assert f"size={2**30}" in config["tmpfs"][target] and "rw" in config["tmpfs"][target]
    assert config["tmpfs"]["/home/data/private"].startswith("ro,") and "size=" in config["tmpfs"]["/home/data/private"]


def test_every_tmpfs_is_sized_without_limits_too(tmp_path):
    config = DockerRunner(client=object()).container_config(_plan(tmp_path))
    assert all("size=" in options for options in config["tmpfs"].values())
    assert config["shm_size"] == DEFAULT_SHM_BYTES
    assert "mem_limit" not in config and "pids_limit" not in config
    small = DockerRunner(client=object()).container_config(_plan(tmp_path, resources=Resources(memory_bytes=2**28)))
    assert small["shm_size"] == 2**28  # never above the memory limit


def test_enforcement_names_the_mechanism_of_each_limit(tmp_path):
    runner = DockerRunner(client=object())
    spec = _plan(tmp_path, resources=Resources(cpus=1, memory_bytes=2**30, pids=64), time_limit_s=5).spec
    assert runner.enforcement(spec) == {**ENFORCEMENT}
    assert ENFORCEMENT["memory"] == "docker (cgroup)" and ENFORCEMENT["time"] == "host timer"
    assert ENFORCEMENT["disk"] == "host watch of the output folders"
    assert runner.enforcement(_plan(tmp_path).spec)["memory"] == "not limited"


@pytest.mark.parametrize(
    ("gpus", "count", "ids"),
    [(GpuRequest(), -1, []), (GpuRequest(count=2), 2, []), (GpuRequest(device_ids=("0", "GPU-1f")), 0, ["0", "GPU-1f"])],
)
def test_gpus_are_requested_through_device_requests(tmp_path, gpus, count, ids):
    config = DockerRunner(client=object()).container_config(_plan(tmp_path, gpus=gpus))
    (request,) = config["device_requests"]
    assert request["Capabilities"] == [["gpu"]]
    assert (request["Count"], request["DeviceIDs"]) == (count, ids)


@pytest.mark.parametrize("layout", ["v1", "v2"])
def test_cgroup_counters_are_read_from_the_containers_cgroup(tmp_path, layout):
    from mleaudit.sandbox.docker.counters import CgroupCounters

    cid = "c0ffee" * 10
    if layout == "v1":
        memory, pids = tmp_path / "memory" / "docker" / cid, tmp_path / "pids" / "docker" / cid
        memory.mkdir(parents=True)
        pids.mkdir(parents=True)
        (memory / "memory.oom_control").write_text("oom_kill_disable 0\nunder_oom 0\noom_kill 3\n")
        (memory / "memory.max_usage_in_bytes").write_text("1073741824\n")
    else:
        (tmp_path / "cgroup.controllers").write_text("cpu memory pids\n")
        memory = pids = tmp_path / "system.slice" / f"docker-{cid}.scope"
        memory.mkdir(parents=True)
        (memory / "memory.events").write_text("low 0\nhigh 0\nmax 12\noom 4\noom_kill 3\n")
        (memory / "memory.peak").write_text("1073741824\n")
    (pids / "pids.events").write_text("max 17\n")
    counters = CgroupCounters(cid, None, root=tmp_path)
    counters.poll()
    assert (counters.oom_kills, counters.pids_refused, counters.memory_peak) == (3, 17, 2**30)
    (pids / "pids.events").unlink()  # the cgroup goes with the container: the highest value seen stays
    counters.poll()
    assert counters.pids_refused == 17
    other = CgroupCounters("f" * 64, os.getpid(), root=tmp_path)
    assert other.describe() == {"oom": "not found on this host", "pids": "not found on this host",
                                "memory_peak": "not found on this host"}


def test_an_allow_list_still_means_no_network_interface(tmp_path):
    config = DockerRunner(client=object()).container_config(_plan(tmp_path, network=NetworkPolicy(allow=("pypi.org",))))
    assert config["network_mode"] == "none"


def test_an_unreachable_daemon_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-daemon.sock")
    spec = SandboxSpec(command=("true",), image="img:test")
    with pytest.raises(SandboxUnavailable, match="cannot reach the docker daemon") as info:
        run_sandbox(spec, tmp_path / "run", runner=DockerRunner())
    assert any("DOCKER_HOST" in remedy for remedy in info.value.remedies)
    record = json.loads((tmp_path / "run" / "run.json").read_text())
    assert (record["status"], record["agent_started"]) == ("sandbox_failed", False)
    assert any("DOCKER_HOST" in remedy for remedy in record["remedies"])


# --- against a real daemon -------------------------------------------------------------------


def _no_containers_left(client, run_id: str) -> bool:
    return not client.containers.list(all=True, filters={"label": f"mleaudit.run={run_id}"})


def _containers(client, **labels) -> list:
    filters = [f"{key}={value}" for key, value in labels.items()] or ["mleaudit.run"]
    return client.containers.list(all=True, filters={"label": filters})


def _limit_events(record: dict) -> dict[str, str]:
    return {e["limit"]: e["detail"] for e in record["events"] if e["kind"] == "limit-hit"}


@pytest.mark.docker
def test_docker_missing_image_is_a_failed_start_with_remedies(tmp_path, docker_runner, docker_client):
    before = {c.id for c in _containers(docker_client)}
    spec = SandboxSpec(command=("true",), image="mleaudit/no-such-image:never")
    with pytest.raises(ImageNotFound, match="never pulled") as info:
        run_sandbox(spec, tmp_path / "run", runner=docker_runner)
    assert any("docker build --network none" in r and "build-rootfs.sh" in r for r in info.value.remedies)
    record = json.loads((tmp_path / "run" / "run.json").read_text())
    assert (record["status"], record["agent_started"]) == ("sandbox_failed", False)
    assert "no-such-image" in record["error"] and record["remedies"] == list(info.value.remedies)
    assert {c.id for c in _containers(docker_client)} == before


@pytest.mark.docker
def test_docker_gpu_request_without_a_gpu_runtime_is_a_failed_start(tmp_path, docker_runner, docker_client, agent_image):
    if "nvidia" in (docker_client.info().get("Runtimes") or {}):
        pytest.skip("this daemon has a GPU runtime")
    spec = SandboxSpec(command=("true",), image=agent_image, gpus=GpuRequest())
    with pytest.raises(GpuUnavailable, match="no GPU runtime") as info:
        run_sandbox(spec, tmp_path / "run", runner=docker_runner)
    assert any("nvidia-container-toolkit" in r for r in info.value.remedies)
    assert any("drop --gpus" in r for r in info.value.remedies)
    record = json.loads((tmp_path / "run" / "run.json").read_text())
    assert (record["status"], record["agent_started"]) == ("sandbox_failed", False)
    assert not _containers(docker_client, **{"mleaudit.run": "run"})
    # Straight to execute, with keep: a container that never started is removed all the same.
    plan = ExecutionPlan(spec=spec, run_id="gpu-keep", binds=(), masks=(), env={}, command=("true",),
                         log_path=tmp_path / "run.log")
    with pytest.raises(GpuUnavailable):
        DockerRunner(client=docker_client, keep=True).execute(plan)
    assert not _containers(docker_client, **{"mleaudit.run": "gpu-keep"})


@pytest.mark.docker
def test_docker_preflight_runs_true_and_leaves_nothing(tmp_path, docker_runner, docker_client, agent_image):
    (tmp_path / "out").mkdir()
    (tmp_path / "public").mkdir()
    (tmp_path / "public" / "private").mkdir()
    plan = ExecutionPlan(spec=SandboxSpec(command=("false",), image=agent_image,
                                          resources=Resources(memory_bytes=2**28, pids=32, cpus=1)),
                         run_id="preflight-test", binds=(Bind(source=tmp_path / "public", target="/home/data"),
                                                         Bind(source=tmp_path / "out", target="/home/submission", read_only=False)),
                         masks=("/home/data/private",), env={}, command=("false",), log_path=tmp_path / "run.log")
    docker_runner.preflight(plan)
    assert not _containers(docker_client, **{"mleaudit.run": "preflight-test"})
    bad = ExecutionPlan(spec=SandboxSpec(command=("true",), image=agent_image), run_id="preflight-bad",
                        binds=(Bind(source=tmp_path / "missing", target="/home/extra"),), masks=(), env={},
                        command=("true",), log_path=tmp_path / "l")
    with pytest.raises(SandboxUnavailable) as info:
        docker_runner.preflight(bad)
    assert info.value.remedies
    assert not _containers(docker_client, **{"mleaudit.run": "preflight-bad"})


LAYOUT_AGENT = """\
id -u > /home/code/uid.txt
cat /home/data/train.csv > /home/code/copy.csv
cp /home/data/sample_submission.csv /home/submission/submission.csv
/home/validate_submission.sh
for path in /home/x /etc/x /usr/x /x; do touch $path 2>/dev/null && echo "ROOT WRITABLE $path"; done
for path in /tmp/x /var/tmp/x /dev/shm/x; do touch $path && echo "writable $path"; done
python3 -c 'import os; s = os.statvfs("/tmp"); print("tmp-bytes", s.f_blocks * s.f_frsize)'
python3 -c 'import socket; print("interfaces", " ".join(n for _, n in socket.if_nameindex()))'
python3 -c 'import getpass, os, resource; print("nofile", *resource.getrlimit(resource.RLIMIT_NOFILE)); print("python3 runs as", getpass.getuser(), os.environ["HOME"])'
"""


@pytest.mark.docker
def test_docker_run_produces_the_layout(run_agent, docker_runner, docker_client, agent_image, toy):
    result = run_agent(LAYOUT_AGENT, runner=docker_runner, image=agent_image,
                       resources=Resources(memory_bytes=256 * 1024**2, pids=64, cpus=1))
    assert result.status == "completed" and result.exit_code == 0
    uid = int((result.run_dir / "code" / "uid.txt").read_text().strip())
    record = json.loads(result.run_json.read_text())
    if os.geteuid() == 0:
        assert record["isolation"]["user"] == f"{uid}:{uid}"
        assert uid in RUN_UID_RANGE and uid not in reserved_uids()
        # What the agent wrote comes back owned by the caller.
        assert all((p.stat().st_uid, p.stat().st_gid) == (0, 0) for p in result.run_dir.rglob("*"))
        # The drawn uid has no passwd entry; the image's HOME and a user name stand in.
        assert "python3 runs as sandbox /tmp" in result.run_log.read_text()
    else:
        assert record["isolation"]["user"] == f"{os.geteuid()}:{os.getegid()}" and uid == os.geteuid()
    # The open-files limit is ours, or the daemon's own when that is lower and cannot be raised.
    soft, hard = (int(v) for v in result.run_log.read_text().split("nofile ", 1)[1].split()[:2])
    if isinstance(record["isolation"]["ulimits"]["nofile"], dict):
        assert record["isolation"]["ulimits"] == {"nofile": {"soft": NOFILE_LIMIT, "hard": NOFILE_LIMIT}}
        assert (soft, hard) == (NOFILE_LIMIT, NOFILE_LIMIT)
    assert soft <= hard <= NOFILE_LIMIT
    assert "python3 runs as" in result.run_log.read_text()
    # The validation endpoint is reachable at /home/validate.sock through the helper.
    assert result.validation.count == 1 and result.validation.valid == 1
    log = result.run_log.read_text()
    assert '"valid": true' in log
    assert "ROOT WRITABLE" not in log
    assert all(f"writable {p}" in log for p in ("/tmp/x", "/var/tmp/x", "/dev/shm/x"))
    assert f"tmp-bytes {256 * 1024**2}" in log
    # No network interface but loopback.
    assert "interfaces lo\n" in log
    assert record["backend"] == "docker" and record["image_digest"] and record["container_id"]
    assert record["limits"]["enforcement"]["memory"] == "docker (cgroup)"
    assert record["limits"]["enforcement"]["time"] == "host timer"
    assert record["isolation"]["read_only_root"] is True
    assert record["log"]["kept_bytes"] == len(result.run_log.read_bytes()) and record["log"]["dropped_bytes"] == 0
    assert _no_containers_left(docker_client, result.run_id)


@pytest.mark.docker
def test_docker_open_files_limit_holds_in_the_container(run_agent, docker_client, agent_image):
    runner = DockerRunner(client=docker_client, nofile=1024)  # below any daemon's own limit
    script = ("import os, resource\nprint('nofile', *resource.getrlimit(resource.RLIMIT_NOFILE))\n"
              "fds = []\ntry:\n    while True:\n        fds.append(os.open('/dev/null', os.O_RDONLY))\n"
              "except OSError as exc:\n    print('stopped at', len(fds), exc.errno)\n")
    result = run_agent(script, name="files.py", runner=runner, image=agent_image)
    log = result.run_log.read_text()
    assert "nofile 1024 1024" in log, log
    opened = int(log.split("stopped at ")[1].split()[0])
    assert 1000 < opened < 1024 and log.split("stopped at ")[1].split()[1] == "24"  # EMFILE
    record = json.loads(result.run_json.read_text())
    assert record["isolation"]["ulimits"] == {"nofile": {"soft": 1024, "hard": 1024}}


INOTIFY_AGENT = """\
import ctypes, os, sys, time
libc = ctypes.CDLL(None, use_errno=True)
limit = int(open("/proc/sys/fs/inotify/max_user_instances").read())
mode = sys.argv[1]
want = limit - 8 if mode == "hold" else limit + 8
fds = []
while len(fds) < want:
    fd = libc.inotify_init1(0)
    if fd < 0:
        break
    fds.append(fd)
print("uid", os.getuid(), "limit", limit, "created", len(fds), flush=True)
if mode == "hold":
    end = time.monotonic() + 60
    while not os.path.exists("/mnt/shared/done") and time.monotonic() < end:
        time.sleep(0.1)
    print("released", flush=True)
"""


def _inotify_report(log: str) -> tuple[int, int, int]:
    words = log.split("uid ", 1)[1].split()
    return int(words[0]), int(words[2]), int(words[4])


@pytest.mark.docker
@pytest.mark.skipif(os.geteuid() != 0, reason="the per-run uid is for root callers")
def test_docker_concurrent_runs_do_not_share_per_user_kernel_limits(run_agent, docker_runner, agent_image, tmp_path):
    # Run A holds all but 8 of its uid's inotify instances while run B, started meanwhile,
    # takes as many as it can: with a uid shared by both runs B would get 8.
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o755)
    shared.chmod(0o755)
    mount = (Mount(source=shared, target="/mnt/shared"),)
    results: dict[str, object] = {}

    def hold() -> None:
        try:
            results["a"] = run_agent(INOTIFY_AGENT, name="inotify.py", runner=docker_runner, image=agent_image,
                                     mounts=mount, command=("python3", "/home/agent/inotify.py", "hold"))
        except BaseException as exc:  # noqa: BLE001 - reported by the main thread
            results["a"] = exc

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        log_a = tmp_path / "run0" / "run.log"
        end = time.monotonic() + 60
        while not (log_a.is_file() and "created" in log_a.read_text()):
            assert holder.is_alive() and time.monotonic() < end, results.get("a")
            time.sleep(0.1)
        b = run_agent(INOTIFY_AGENT, name="inotify.py", runner=docker_runner, image=agent_image,
                      command=("python3", "/home/agent/inotify.py", "take"))
    finally:
        (shared / "done").write_text("")
        holder.join(timeout=120)
    a = results["a"]
    assert not isinstance(a, BaseException), a
    log_a, log_b = a.run_log.read_text(), b.run_log.read_text()
    uid_a, limit, held = _inotify_report(log_a)
    uid_b, _, taken = _inotify_report(log_b)
    assert "released" in log_a and held == limit - 8
    assert taken == limit, (held, taken)  # B saw none of A's instances
    assert uid_a != uid_b and {uid_a, uid_b} <= set(RUN_UID_RANGE) and 1000 not in (uid_a, uid_b)
    records = [json.loads(r.run_json.read_text()) for r in (a, b)]
    assert [r["isolation"]["user"] for r in records] == [f"{uid_a}:{uid_a}", f"{uid_b}:{uid_b}"]
    assert not {uid_a, uid_b} & reserved_uids()
    for result in (a, b):
        assert all(p.stat().st_uid == 0 for p in result.run_dir.rglob("*"))


@pytest.mark.docker
def test_docker_a_hidden_path_inside_an_extra_mount_is_covered(run_agent, docker_runner, agent_image, toy):
    # each figure labelled: the run log interleaves the shell's stdout with cat's stderr in any order
    script = ("echo private=$(ls -A /mnt/tree/private | wc -l | tr -d ' '); cat /mnt/tree/private/answers.csv; "
              "touch /mnt/tree/private/x || echo ro; echo public=$(ls /mnt/tree/public | wc -l | tr -d ' ')")
    result = run_agent(script, runner=docker_runner, image=agent_image, mounts=(Mount(source=toy.root, target="/mnt/tree"),))
    log = result.run_log.read_text()
    words = log.split()
    assert toy.token not in log and "private=0" in words and "ro" in words and "public=3" in words
    assert leaked(result, toy.token) == []


@pytest.mark.docker
def test_docker_keep_leaves_the_container(run_agent, docker_client, agent_image):
    result = run_agent("echo kept", runner=DockerRunner(client=docker_client, keep=True), image=agent_image)
    container = docker_client.containers.get(result.container_id)
    try:
        assert container.attrs["HostConfig"]["NetworkMode"] == "none"
        assert container.attrs["HostConfig"]["ReadonlyRootfs"] is True
        assert container.attrs["Config"]["User"] != "0"
    finally:
        container.remove(force=True)
    # Only the agent's container was kept: the pre-flight one is always removed.
    assert not _containers(docker_client, **{"mleaudit.run": result.run_id, "mleaudit.preflight": "1"})


@pytest.mark.docker
def test_docker_time_limit_stops_and_records_the_exit(run_agent, docker_runner, docker_client, agent_image):
    result = run_agent("echo started; sleep 60", runner=docker_runner, image=agent_image, time_limit_s=2)
    assert result.status == "timed_out" and result.limits_hit == ("time",)
    assert "started" in result.run_log.read_text()
    record = json.loads(result.run_json.read_text())
    # docker's init passes SIGTERM to the agent's process group: sh and sleep end at once.
    assert record["exit_code"] == 128 + 15 and record["exit_signal"] == 15
    assert result.duration_s < 15
    assert _no_containers_left(docker_client, result.run_id)


TERM_AGENT = """\
import signal, sys, time

def finish(signum, frame):
    with open("/home/submission/submission.csv", "w") as out:
        out.write("id,label\\n10,a\\n11,a\\n12,a\\n")
    print("wrote the submission on SIGTERM", flush=True)
    sys.exit(7)

signal.signal(signal.SIGTERM, finish)
print("working", flush=True)
while True:
    time.sleep(0.1)
"""


@pytest.mark.docker
def test_docker_time_limit_lets_the_agent_finish_within_the_grace(run_agent, docker_runner, agent_image):
    result = run_agent(TERM_AGENT, name="term.py", runner=docker_runner, image=agent_image, time_limit_s=2)
    assert result.status == "timed_out" and result.limits_hit == ("time",)
    assert result.submission is not None and result.submission.read_text().startswith("id,label")
    assert "wrote the submission on SIGTERM" in result.run_log.read_text()
    record = json.loads(result.run_json.read_text())
    assert (record["exit_code"], record["exit_signal"]) == (7, None)
    assert "wall-clock limit" in _limit_events(record)["time"]
    assert result.duration_s < 15


@pytest.mark.docker
def test_docker_an_agent_ignoring_sigterm_is_killed_after_the_grace(run_agent, docker_runner, agent_image):
    result = run_agent("trap '' TERM; echo ignoring; sleep 60", runner=docker_runner, image=agent_image,
                       time_limit_s=1.5, stop_grace_s=2)
    record = json.loads(result.run_json.read_text())
    assert record["status"] == "timed_out" and (record["exit_code"], record["exit_signal"]) == (137, 9)
    assert 3 <= result.duration_s < 15


MEMORY_CHILDREN = """\
import os, time
pids = []
for i in range(4):
    pid = os.fork()
    if pid == 0:
        block = b"x" * (700 * 1024**2)
        time.sleep(3)
        os._exit(0)
    pids.append(pid)
codes = [os.waitpid(pid, 0)[1] for pid in pids]
print("children", " ".join(str(c) for c in codes), flush=True)
"""


@pytest.mark.docker
def test_docker_memory_limit_holds_for_all_processes_together(run_agent, docker_runner, agent_image):
    result = run_agent(MEMORY_CHILDREN, name="children.py", runner=docker_runner, image=agent_image,
                       resources=Resources(memory_bytes=1024**3))
    record = json.loads(result.run_json.read_text())
    assert result.status == "completed" and result.exit_code == 0  # the parent survives; children were killed
    codes = [int(c) for c in result.run_log.read_text().split("children", 1)[1].split()]
    assert any(c & 0x7F == 9 for c in codes), codes
    assert "memory" in record["limits_hit"]
    detail = _limit_events(record)["memory"]
    assert "OOM kill(s) in the container's memory cgroup" in detail and "(limit 1,073,741,824 bytes)" in detail


TMP_FILLER = """\
import sys
written = 0
try:
    with open("/tmp/fill", "wb") as out:
        chunk = b"x" * 2**20
        while written < 2 * 1024**3:
            out.write(chunk)
            written += len(chunk)
    print("WROTE", written, flush=True)
except OSError as exc:
    print("STOPPED after", written, exc, flush=True)
"""


@pytest.mark.docker
def test_docker_tmp_is_bounded_by_the_memory_limit(run_agent, docker_runner, agent_image):
    result = run_agent(f"python3 - <<'PY'\n{TMP_FILLER}PY\necho after $?", runner=docker_runner, image=agent_image,
                       resources=Resources(memory_bytes=512 * 1024**2))
    log = result.run_log.read_text()
    record = json.loads(result.run_json.read_text())
    assert "WROTE" not in log
    assert "memory" in record["limits_hit"] or "No space left" in log, log
    assert "memory" in _limit_events(record) or "No space left" in log


BOMB = """\
import os, time
refused = 0
while refused < 200:
    try:
        if os.fork() == 0:
            time.sleep(20)
            os._exit(0)
    except OSError:
        refused += 1
        time.sleep(0.005)
print("BLOCKED", refused, flush=True)
time.sleep(1)
"""


@pytest.mark.docker
def test_docker_fork_bomb_hits_the_process_limit(run_agent, docker_runner, agent_image):
    result = run_agent(BOMB, name="bomb.py", runner=docker_runner, image=agent_image, resources=Resources(pids=64))
    record = json.loads(result.run_json.read_text())
    assert "BLOCKED 200" in result.run_log.read_text()
    assert "pids" in record["limits_hit"]
    assert "refused at the process limit of 64" in _limit_events(record)["pids"]
    assert result.duration_s < 20


@pytest.mark.docker
def test_docker_run_log_is_capped(run_agent, docker_runner, agent_image):
    script = "import sys\nfor _ in range(5 * 1024):\n    sys.stdout.write('y' * 1023 + '\\n')\n"
    result = run_agent(script, name="print.py", runner=docker_runner, image=agent_image,
                       resources=Resources(log_bytes=2**20))
    record = json.loads(result.run_json.read_text())
    assert result.status == "completed" and result.exit_code == 0
    (event,) = [e for e in record["events"] if e["kind"] == "log-truncated"]
    assert event["kept_bytes"] == 2**20 and event["dropped_bytes"] == 5 * 2**20 - 2**20
    assert record["log"]["dropped_bytes"] == 4 * 2**20
    assert 2**20 <= result.run_log.stat().st_size < 2**20 + 200


@pytest.mark.docker
def test_docker_a_stop_request_stops_the_container(tmp_path, docker_runner, docker_client, agent_image):
    (tmp_path / "code").mkdir()
    os.chmod(tmp_path / "code", 0o777)
    script = "trap 'echo got TERM; exit 3' TERM; echo running; while true; do sleep 0.1; done"
    spec = SandboxSpec(command=("/bin/sh", "-c", script), image=agent_image, time_limit_s=60)
    plan = ExecutionPlan(spec=spec, run_id="stop-test", binds=(Bind(source=tmp_path / "code", target="/home/code", read_only=False),),
                         masks=(), env={"PATH": "/usr/bin:/bin"}, command=spec.command, log_path=tmp_path / "run.log")
    timer = threading.Timer(1.5, plan.stop.request, args=("disk", "the output folders reached 2 bytes (limit 1)"))
    timer.start()
    try:
        execution = docker_runner.execute(plan)
    finally:
        timer.cancel()
    assert execution.limits_hit == ("disk",) and not execution.timed_out
    assert execution.exit_code == 3 and execution.exit_signal is None
    assert "the output folders reached" in execution.limit_details["disk"]
    assert "got TERM" in (tmp_path / "run.log").read_text()
    assert not _containers(docker_client, **{"mleaudit.run": "stop-test"})


@pytest.mark.docker
def test_docker_disk_watch_stops_the_run(run_agent, docker_runner, agent_image):
    script = "python3 -c 'open(\"/home/code/big\", \"wb\").write(b\"x\" * 8 * 2**20)'; sleep 30"
    result = run_agent(script, runner=docker_runner, image=agent_image, resources=Resources(disk_bytes=2**20))
    record = json.loads(result.run_json.read_text())
    assert record["status"] == "stopped" and "disk" in record["limits_hit"] and record["exit_code"] is not None
    assert result.duration_s < 20


@pytest.fixture
def listener():
    host = HostListener()
    yield host
    host.close()


@pytest.mark.docker
@pytest.mark.parametrize(
    ("name", "fields"),
    [
        ("answers_by_path.py", {}),
        ("answers_by_glob.py", {}),
        ("answers_via_proc.py", {}),
        ("docker_socket.py", {}),
        ("network_host_loopback.py", {}),
        ("network_dns.py", {}),
        ("network_outside.py", {}),
        ("write_outside.sh", {}),
        ("fork_bomb.py", {"resources": Resources(pids=40)}),
        ("kill_supervisor.sh", {}),
        ("spoof_validation_log.sh", {}),
        ("symlink_submission.sh", {}),
        ("privilege_escalation.py", {}),
    ],
)
def test_docker_escapes_fail(name, fields, run_agent, toy, listener, docker_runner, agent_image):
    _, log, record = run_escape(name, run_agent, toy, listener, docker_runner, image=agent_image, **fields)
    assert "BLOCKED" in log or name in ("spoof_validation_log.sh", "symlink_submission.sh")
    if name == "spoof_validation_log.sh":
        assert [e["kind"] for e in record["events"]] == ["spoofed-validation-log"]
    if name == "symlink_submission.sh":
        assert any(e["path"] == "submission/submission.csv" for e in record["events"])


@pytest.mark.docker
def test_docker_memory_limit_is_an_oom_kill(run_agent, toy, listener, docker_runner, agent_image):
    _, log, record = run_escape("memory_hog.py", run_agent, toy, listener, docker_runner, image=agent_image,
                                resources=Resources(memory_bytes=256 * 1024**2))
    assert "memory" in record["limits_hit"] or "BLOCKED: MemoryError" in log
    if "memory" in record["limits_hit"]:
        assert record["exit_code"] is not None


@pytest.mark.docker
def test_docker_detached_process_dies_at_the_time_limit(run_agent, toy, listener, docker_runner, agent_image):
    result, _, record = run_escape("outlive_time_limit.sh", run_agent, toy, listener, docker_runner,
                                   image=agent_image, time_limit_s=3)
    assert record["status"] == "timed_out" and heartbeat_stopped(result)
    assert record["exit_code"] is not None


@pytest.mark.docker
def test_docker_a_daemon_left_behind_dies_with_the_run(run_agent, toy, listener, docker_runner, agent_image):
    result, _, record = run_escape("leave_daemon.sh", run_agent, toy, listener, docker_runner, image=agent_image)
    assert record["status"] == "completed" and heartbeat_stopped(result)


@pytest.mark.docker
@pytest.mark.gpu
def test_nvidia_smi_runs_in_a_container(run_agent, docker_runner, agent_image):
    result = run_agent("nvidia-smi -L", runner=docker_runner, image=os.environ.get("MLEAUDIT_GPU_IMAGE", agent_image),
                       gpus=GpuRequest())
    assert result.exit_code == 0 and "GPU 0" in result.run_log.read_text()
