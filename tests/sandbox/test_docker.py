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
from pathlib import Path

import pytest

from sandbox.errors import GpuUnavailable, ImageNotFound, SandboxUnavailable
from sandbox.runner import Bind, ExecutionPlan, run_sandbox
from sandbox.spec import GpuRequest, NetworkPolicy, Resources, SandboxSpec

from tests.sandbox.escapes import HostListener, heartbeat_stopped, run_escape

docker_sdk = pytest.importorskip("docker", reason="the docker SDK (extra 'sandbox') is not installed")

from sandbox.docker import DEFAULT_IMAGE, DockerRunner  # noqa: E402

REPO = Path(__file__).resolve().parents[2]


def _plan(tmp_path: Path, **fields) -> ExecutionPlan:
    spec = SandboxSpec(command=("python3", "solve.py"), image="img:test", **fields)
    binds = (Bind(source=tmp_path / "public", target="/home/data"),
             Bind(source=tmp_path / "out", target="/home/submission", read_only=False))
    return ExecutionPlan(spec=spec, run_id="r1", binds=binds, masks=("/home/data/private",), env={"A": "1"},
                         command=spec.command, log_path=tmp_path / "run.log")


def test_container_config_is_locked_down(tmp_path):
    config = DockerRunner(client=object()).container_config(_plan(tmp_path))
    assert config["network_mode"] == "none"
    assert config["cap_drop"] == ["ALL"] and config["security_opt"] == ["no-new-privileges"]
    assert config["user"] != "0" and not config["user"].startswith("0:")
    mounts = {m["Target"]: (m["Source"], m["ReadOnly"], m["Type"]) for m in config["mounts"]}
    assert mounts == {"/home/data": (str(tmp_path / "public"), True, "bind"),
                      "/home/submission": (str(tmp_path / "out"), False, "bind")}
    assert "/home/data/private" in config["tmpfs"]
    assert not any("docker.sock" in m["Source"] for m in config["mounts"])
    assert "device_requests" not in config and "privileged" not in config
    assert config["environment"] == {"A": "1"}


def test_resource_limits_map_to_the_docker_api(tmp_path):
    plan = _plan(tmp_path, resources=Resources(cpus=1.5, memory_bytes=2**30, shm_bytes=2**28, pids=128))
    config = DockerRunner(client=object()).container_config(plan)
    assert config["nano_cpus"] == 1_500_000_000
    assert config["mem_limit"] == config["memswap_limit"] == 2**30
    assert config["shm_size"] == 2**28 and config["pids_limit"] == 128


@pytest.mark.parametrize(
    ("gpus", "count", "ids"),
    [(GpuRequest(), -1, []), (GpuRequest(count=2), 2, []), (GpuRequest(device_ids=("0", "GPU-1f")), 0, ["0", "GPU-1f"])],
)
def test_gpus_are_requested_through_device_requests(tmp_path, gpus, count, ids):
    config = DockerRunner(client=object()).container_config(_plan(tmp_path, gpus=gpus))
    (request,) = config["device_requests"]
    assert request["Capabilities"] == [["gpu"]]
    assert (request["Count"], request["DeviceIDs"]) == (count, ids)


def test_an_allow_list_still_means_no_network_interface(tmp_path):
    config = DockerRunner(client=object()).container_config(_plan(tmp_path, network=NetworkPolicy(allow=("pypi.org",))))
    assert config["network_mode"] == "none"


def test_an_unreachable_daemon_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-daemon.sock")
    spec = SandboxSpec(command=("true",), image="img:test")
    with pytest.raises(SandboxUnavailable, match="cannot reach the docker daemon"):
        run_sandbox(spec, tmp_path / "run", runner=DockerRunner())
    assert json.loads((tmp_path / "run" / "run.json").read_text())["status"] == "error"


# --- against a real daemon -------------------------------------------------------------------


@pytest.fixture(scope="session")
def docker_client():
    from sandbox.docker import docker_client as connect

    try:
        return connect(timeout=60)
    except SandboxUnavailable as exc:
        pytest.skip(str(exc))


@pytest.fixture(scope="session")
def agent_image(docker_client):
    """The agent image, built offline from this machine's binaries when missing."""
    try:
        docker_client.images.get(DEFAULT_IMAGE)
        return DEFAULT_IMAGE
    except docker_sdk.errors.ImageNotFound:
        pass
    rootfs = subprocess.run(["bash", str(REPO / "images" / "build-rootfs.sh")], capture_output=True, check=True).stdout
    docker_client.api.import_image_from_data(rootfs, repository="mleaudit/rootfs", tag="local")
    docker_client.images.build(path=str(REPO / "images" / "agent"), tag=DEFAULT_IMAGE, pull=False,
                               network_mode="none", buildargs={"BASE": "mleaudit/rootfs:local"}, rm=True)
    return DEFAULT_IMAGE


@pytest.fixture
def docker_runner(docker_client):
    return DockerRunner(client=docker_client)


def _no_containers_left(client, run_id: str) -> bool:
    return not client.containers.list(all=True, filters={"label": f"mleaudit.run={run_id}"})


@pytest.mark.docker
def test_docker_run_produces_the_layout(run_agent, docker_runner, docker_client, agent_image, toy):
    script = ("id -u > /home/code/uid.txt; cat /home/data/train.csv > /home/code/copy.csv; "
              "cp /home/data/sample_submission.csv /home/submission/submission.csv; /home/validate_submission.sh")
    result = run_agent(script, runner=docker_runner, image=agent_image)
    assert result.status == "completed" and result.exit_code == 0
    assert (result.run_dir / "code" / "uid.txt").read_text().strip() == ("1000" if os.geteuid() == 0 else str(os.geteuid()))
    assert result.validation.count == 1 and result.validation.valid == 1
    assert '"valid": true' in result.run_log.read_text()
    record = json.loads(result.run_json.read_text())
    assert record["backend"] == "docker" and record["image_digest"] and record["container_id"]
    assert _no_containers_left(docker_client, result.run_id)


@pytest.mark.docker
def test_docker_keep_leaves_the_container(run_agent, docker_client, agent_image):
    result = run_agent("echo kept", runner=DockerRunner(client=docker_client, keep=True), image=agent_image)
    container = docker_client.containers.get(result.container_id)
    try:
        assert container.attrs["HostConfig"]["NetworkMode"] == "none"
        assert container.attrs["Config"]["User"] != "0"
    finally:
        container.remove(force=True)


@pytest.mark.docker
def test_docker_missing_image_is_recorded(tmp_path, docker_runner):
    spec = SandboxSpec(command=("true",), image="mleaudit/no-such-image:never")
    with pytest.raises(ImageNotFound, match="never pulled"):
        run_sandbox(spec, tmp_path / "run", runner=docker_runner)
    record = json.loads((tmp_path / "run" / "run.json").read_text())
    assert record["status"] == "error" and "no-such-image" in record["error"]


@pytest.mark.docker
def test_docker_gpu_request_without_a_gpu_runtime_is_recorded(tmp_path, docker_runner, docker_client, agent_image):
    if "nvidia" in (docker_client.info().get("Runtimes") or {}):
        pytest.skip("this daemon has a GPU runtime")
    spec = SandboxSpec(command=("true",), image=agent_image, gpus=GpuRequest())
    with pytest.raises(GpuUnavailable, match="no GPU runtime"):
        run_sandbox(spec, tmp_path / "run", runner=docker_runner)
    assert json.loads((tmp_path / "run" / "run.json").read_text())["status"] == "error"
    assert not docker_client.containers.list(all=True, filters={"label": "mleaudit.run=run"})


@pytest.mark.docker
def test_docker_time_limit_kills_and_removes(run_agent, docker_runner, docker_client, agent_image):
    result = run_agent("echo started; sleep 60", runner=docker_runner, image=agent_image, time_limit_s=3)
    assert result.status == "timed_out" and result.limits_hit == ("time",)
    assert "started" in result.run_log.read_text()
    assert _no_containers_left(docker_client, result.run_id)


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


@pytest.mark.docker
def test_docker_detached_process_dies_at_the_time_limit(run_agent, toy, listener, docker_runner, agent_image):
    result, _, record = run_escape("outlive_time_limit.sh", run_agent, toy, listener, docker_runner,
                                   image=agent_image, time_limit_s=3)
    assert record["status"] == "timed_out" and heartbeat_stopped(result)


@pytest.mark.docker
@pytest.mark.gpu
def test_nvidia_smi_runs_in_a_container(run_agent, docker_runner, agent_image):
    result = run_agent("nvidia-smi -L", runner=docker_runner, image=os.environ.get("MLEAUDIT_GPU_IMAGE", agent_image),
                       gpus=GpuRequest())
    assert result.exit_code == 0 and "GPU 0" in result.run_log.read_text()
