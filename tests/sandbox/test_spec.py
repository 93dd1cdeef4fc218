"""SandboxSpec: the YAML form, validation with every problem reported, sizes, durations, GPUs."""

from __future__ import annotations

from pathlib import Path

import pytest

from mleaudit.sandbox.errors import SpecError
from mleaudit.sandbox.spec import GpuRequest, Mount, NetworkPolicy, SandboxSpec, load_sandbox_spec, parse_duration, parse_size

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "sandbox"


def test_full_spec_loads_with_paths_relative_to_the_file():
    spec = load_sandbox_spec(FIXTURES / "agent-spec.yaml")
    assert spec.command == ("/bin/sh", "-c", "python3 /home/agent/solve.py")
    assert spec.agent_dir == FIXTURES / "agents" / "baseline"
    assert spec.mounts == (Mount(source=FIXTURES / "models", target="/opt/models", read_only=True),)
    assert spec.hidden == (FIXTURES / "private",)
    assert dict(spec.env) == {"OMP_NUM_THREADS": "2"}
    assert spec.gpus is not None and spec.gpus.all
    assert spec.resources.memory_bytes == 4 * 1024**3 and spec.resources.shm_bytes == 512 * 1024**2
    assert spec.resources.cpus == 2.0 and spec.resources.pids == 256
    assert spec.network.allow == ("pypi.org", "*.pythonhosted.org:443") and spec.network.mode == "allowlist"
    assert spec.time_limit_s == 7200.0
    assert spec.to_dict()["time_limit"] == 7200.0


def test_unknown_keys_and_bad_values_are_all_reported():
    with pytest.raises(SpecError) as info:
        load_sandbox_spec(FIXTURES / "bad-spec.yaml")
    message = str(info.value)
    assert "bad-spec.yaml" in message
    assert "imagee" in message and "privileged" in message
    assert "resources.memory" in message
    assert "gpus" in message


def test_command_is_required_and_network_defaults_to_none():
    with pytest.raises(SpecError, match="command: required"):
        SandboxSpec.from_dict({"image": "x"})
    spec = SandboxSpec.from_dict({"command": ["true"]})
    assert spec.network == NetworkPolicy() and spec.network.mode == "none"


@pytest.mark.parametrize("target", ["/home/submission", "/home/data", "relative/path", "/opt/../etc", "/"])
def test_mount_targets_that_would_shadow_the_layout_are_refused(target):
    with pytest.raises(SpecError, match=r"mounts\[0\]\.target"):
        SandboxSpec(command=("true",), mounts=(Mount(source=Path("/srv"), target=target),))


@pytest.mark.parametrize("entry", ["http://pypi.org", "pypi.org/simple", "*", "host:99999", ""])
def test_bad_allow_list_entries_are_refused(entry):
    with pytest.raises(SpecError, match="network.allow"):
        SandboxSpec(command=("true",), network=NetworkPolicy(allow=(entry,)))


def test_env_names_are_checked():
    with pytest.raises(SpecError, match="not a valid variable name"):
        SandboxSpec(command=("true",), env={"BAD-NAME": "1"})


@pytest.mark.parametrize(
    ("text", "expected"),
    [("512m", 512 * 1024**2), ("4g", 4 * 1024**3), ("1.5GiB", int(1.5 * 1024**3)), (2048, 2048), ("10k", 10240)],
)
def test_parse_size(text, expected):
    assert parse_size(text) == expected


@pytest.mark.parametrize("bad", ["lots", "-1g", 0, True, "4 gigs"])
def test_parse_size_refuses(bad):
    with pytest.raises(SpecError):
        parse_size(bad)


@pytest.mark.parametrize(("text", "expected"), [("90s", 90.0), ("30m", 1800.0), ("2h", 7200.0), (1.5, 1.5), ("45", 45.0)])
def test_parse_duration(text, expected):
    assert parse_duration(text) == expected


@pytest.mark.parametrize("bad", ["soon", 0, -3, "1w"])
def test_parse_duration_refuses(bad):
    with pytest.raises(SpecError):
        parse_duration(bad)


@pytest.mark.parametrize(
    ("value", "count", "ids"),
    [("all", None, ()), (2, 2, ()), ("3", 3, ()), (["0", "1"], None, ("0", "1")), ("0,1", None, ("0", "1")),
     ("device=GPU-abc", None, ("GPU-abc",)), ({"count": 1}, 1, ()), ({"device_ids": [2]}, None, ("2",))],
)
def test_gpu_requests(value, count, ids):
    request = GpuRequest.parse(value)
    assert (request.count, request.device_ids) == (count, ids)


@pytest.mark.parametrize("bad", [0, -1, "some", True, [], {"count": 1, "device_ids": ["0"]}, {"driver": "nvidia"}])
def test_bad_gpu_requests(bad):
    with pytest.raises(SpecError, match="gpus"):
        GpuRequest.parse(bad)


def test_spec_is_immutable_and_round_trips_through_its_dict():
    spec = load_sandbox_spec(FIXTURES / "agent-spec.yaml")
    with pytest.raises(AttributeError):
        spec.image = "other"  # type: ignore[misc]
    with pytest.raises(TypeError):
        spec.env["X"] = "1"  # type: ignore[index]
    again = SandboxSpec.from_dict({k: v for k, v in spec.to_dict().items()})
    assert again == spec


def test_disk_log_and_stop_grace_are_read_from_yaml_and_recorded():
    from mleaudit.sandbox.spec import Resources

    spec = SandboxSpec.from_dict({"command": "x", "stop_grace": "10s", "resources": {"disk": "2g", "log": "1m"}})
    assert spec.stop_grace_s == 10.0
    assert spec.resources == Resources(disk_bytes=2 * 1024**3, log_bytes=1024**2)
    assert spec.to_dict()["stop_grace"] == 10.0
    assert spec.to_dict()["resources"]["disk"] == 2 * 1024**3 and spec.to_dict()["resources"]["log"] == 1024**2
    assert SandboxSpec(command=("true",)).stop_grace_s == 30.0


@pytest.mark.parametrize(("data", "field"), [
    ({"stop_grace": "soon"}, "stop_grace"),
    ({"stop_grace": -1}, "stop_grace"),
    ({"resources": {"disk": "lots"}}, "resources.disk"),
    ({"resources": {"log": 0}}, "resources.log"),
])  # fmt: skip
def test_bad_limits_are_refused_with_the_field_named(data, field):
    with pytest.raises(SpecError, match=field.replace(".", r"\.")):
        SandboxSpec.from_dict({"command": "x", **data})


def test_a_negative_grace_period_built_in_code_is_refused():
    with pytest.raises(SpecError, match="stop_grace"):
        SandboxSpec(command=("true",), stop_grace_s=-1)


def test_defaults_fill_in_what_was_not_given():
    import os

    from mleaudit.sandbox.logsink import DEFAULT_LOG_BYTES
    from mleaudit.sandbox.spec import DEFAULT_LIMITS, DEFAULT_TIME_LIMIT_S, Resources, default_memory_bytes
    from mleaudit.sandbox.watchdog import DEFAULT_DISK_BYTES

    resolved = Resources(pids=64).with_defaults()
    assert resolved.pids == 64 and resolved.cpus is None and resolved.shm_bytes is None
    assert resolved.memory_bytes == default_memory_bytes()
    total = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    assert total * 0.74 < resolved.memory_bytes <= total * DEFAULT_LIMITS["memory_fraction"]
    assert resolved.disk_bytes == DEFAULT_DISK_BYTES == DEFAULT_LIMITS["disk_bytes"] == 20 * 1024**3
    assert resolved.log_bytes == DEFAULT_LOG_BYTES == DEFAULT_LIMITS["log_bytes"]
    assert Resources().with_defaults().pids == DEFAULT_LIMITS["pids"] == 4096
    spec = SandboxSpec(command=("true",)).with_defaults()
    assert spec.time_limit_s == DEFAULT_TIME_LIMIT_S == 24 * 3600 and spec.resources.memory_bytes == default_memory_bytes()
    assert SandboxSpec(command=("true",), time_limit_s=60).with_defaults().time_limit_s == 60
