"""Spec files written to break the loader: every one is a SpecError naming the file and the key, never a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from mleaudit.audit.cli import main
from mleaudit.sandbox.errors import SpecError
from mleaudit.sandbox.spec import MAX_SPEC_BYTES, MAX_SPEC_DEPTH, MAX_SPEC_NODES, SandboxSpec, load_sandbox_spec

LAUGHS = (
    b"a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n"
    + b"".join(
        b"%s: &%s [%s]\n" % (chr(98 + i).encode(), chr(98 + i).encode(), b", ".join([b"*" + chr(97 + i).encode()] * 9))
        for i in range(8)
    )
    + b"command: *i\n"
)


def load_error(tmp_path: Path, data: bytes) -> str:
    path = tmp_path / "spec.yaml"
    path.write_bytes(data)
    with pytest.raises(SpecError) as info:
        load_sandbox_spec(path)
    message = str(info.value)
    assert message.startswith(f"{path}: ")
    return message


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ("command: café\n".encode("latin-1"), "not UTF-8 text (byte 12: b'\\xe9')"),
        (b"", "invalid sandbox spec:\n  command: required"),
        (b"# only a comment\n", "invalid sandbox spec:\n  command: required"),
        (b"command: null\n", "invalid sandbox spec:\n  command: required, got null"),
        (b"command:\n", "invalid sandbox spec:\n  command: required, got null"),
        (b"- a\n- b\n", "expected a mapping at the top level, got list"),
        (b"command: [oops\n", "not valid YAML: "),
        (b"command: !!python/object/apply:os.system [ls]\n", "not valid YAML: could not determine a constructor"),
        (b"command: a\ncommand: b\n", "spec.yaml: not a usable sandbox spec: YAML with the key 'command' written twice in one mapping"),
        (b"command: x\ntime_limit: " + b"9" * 5000 + b"\n", "not a usable sandbox spec: ValueError: Exceeds the limit"),
    ],
)
def test_broken_files_name_the_file_and_the_cause(tmp_path: Path, data: bytes, expected: str) -> None:
    assert expected in load_error(tmp_path, data)


def test_deep_nesting_is_refused_before_the_recursive_composer_runs(tmp_path: Path) -> None:
    flow = load_error(tmp_path, b"command: " + b"[" * 100_000 + b"]" * 100_000 + b"\n")
    path = tmp_path / "spec.yaml"
    assert flow == f"{path}: not a usable sandbox spec: YAML with collections nested deeper than {MAX_SPEC_DEPTH} levels"
    block = b"".join(b"  " * i + b"k:\n" for i in range(100)) + b"  " * 100 + b"v\n"
    assert "nested deeper than" in load_error(tmp_path, block)


def test_aliases_that_expand_to_billions_of_values_are_refused(tmp_path: Path) -> None:
    message = load_error(tmp_path, LAUGHS)
    path = tmp_path / "spec.yaml"
    assert message == f"{path}: not a usable sandbox spec: YAML with more than {MAX_SPEC_NODES:,} values once its aliases are expanded"


def test_a_few_aliases_are_fine(tmp_path: Path) -> None:
    path = tmp_path / "spec.yaml"
    path.write_bytes(b"command: &c [python3, run.py]\nenv: &e {A: '1'}\n")
    assert load_sandbox_spec(path).command == ("python3", "run.py")


def test_files_over_the_size_cap_are_not_read(tmp_path: Path) -> None:
    message = load_error(tmp_path, b"command: " + b"x" * MAX_SPEC_BYTES + b"\n")
    assert message.endswith(f"not a sandbox spec: larger than {MAX_SPEC_BYTES:,} bytes")


WRONG_TYPES = b"""command: 5
image: [1]
competition: {a: 1}
agent: true
data: 7
agent_dir: [x]
mounts: {a: b}
hide: x
env: [1]
gpus: {device_ids: 5}
resources: [1]
network: 5
time_limit: [1]
user: [1]
workdir: 1.5
"""


def test_a_wrong_type_for_every_key_is_reported_key_by_key(tmp_path: Path) -> None:
    message = load_error(tmp_path, WRONG_TYPES)
    assert message.split("\n")[1:] == [
        "  command: expected a non-empty string or list of strings (no NUL byte), got 5",
        "  image: expected a non-empty string, got [1]",
        "  competition: expected a non-empty string, got {'a': 1}",
        "  agent: expected a non-empty string, got True",
        "  data: expected a path, got 7",
        "  agent_dir: expected a path, got ['x']",
        "  mounts: expected a list, got dict",
        "  hide: expected a list of paths, got str",
        "  env: expected a mapping of names to strings, got list",
        "  gpus.device_ids: expected a list of device ids, got 5",
        "  resources: expected a mapping, got list",
        "  network: expected 'none' or {allow: [hosts]}, got 5",
        "  time_limit: expected seconds or a duration such as 30m, got [1]",
        "  user: expected uid or uid:gid (numbers), got [1]",
        "  workdir: expected a non-empty string, got 1.5",
    ]


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ({"command": ["a", 1]}, "command: expected a non-empty string or list of strings"),
        ({"command": "a\0b"}, "command: expected a non-empty string or list of strings (no NUL byte)"),
        ({"command": "x", "mounts": [5]}, "mounts[0]: expected a mapping with source and target, got 5"),
        ({"command": "x", "mounts": [{"source": "/x", "target": [1]}]}, "mounts[0].target: expected an absolute path, got [1]"),
        ({"command": "x", "mounts": [{"source": "a\0b", "target": "/opt/x"}]}, "mounts[0].source: expected a path (no NUL byte"),
        ({"command": "x", "hide": [None]}, "hide[0]: expected a path, got None"),
        ({"command": "x", "data": "/" + "x" * 5000}, "data: expected a path (no NUL byte, at most 4096 characters)"),
        ({"command": "x", "env": {"A": [1]}}, "env.'A': expected a string, got [1]"),
        ({"command": "x", "env": {"A": "a\0b"}}, "env.'A': expected a string"),
        ({"command": "x", "gpus": {"count": {"count": 2}}}, "gpus.count: expected a number or 'all', got {'count': 2}"),
        ({"command": "x", "gpus": [True]}, "gpus: device ids must be numbers or strings"),
        ({"command": "x", "resources": {"cpus": float("inf")}}, "resources.cpus: expected a positive number, got inf"),
        ({"command": "x", "resources": {"cpus": float("nan")}}, "resources.cpus: expected a positive number, got nan"),
        ({"command": "x", "resources": {"cpus": 10**400}}, "resources.cpus: expected a positive number"),
        ({"command": "x", "resources": {"memory": 10**400}}, "resources.memory: must be positive and finite"),
        ({"command": "x", "resources": {"pids": 1.5}}, "resources.pids: expected a positive integer, got 1.5"),
        ({"command": "x", "network": {"allow": [1]}}, "network.allow: expected a list of host names, got [1]"),
        ({"command": "x", "network": {"mode": ["x"]}}, "network.mode: ['x'] does not fit allow=[]"),
        ({"command": "x", "time_limit": float("nan")}, "time_limit: must be positive and finite, got nan"),
        ({"command": "x", "time_limit": 10**400}, "time_limit: must be positive and finite"),
        ({"command": "x", "user": 1.5}, "user: expected uid or uid:gid (numbers), got 1.5"),
        ({"command": "x", "image": ["y" * 10_000] * 100}, "image: expected a non-empty string, got ['yyyy"),
    ],
)
def test_bad_values_name_their_key(data: dict, expected: str) -> None:
    with pytest.raises(SpecError) as info:
        SandboxSpec.from_dict(data, source="s.yaml")
    message = str(info.value)
    assert message.startswith("s.yaml: ") and expected in message
    assert len(message) < 1000  # long values are quoted cut short


def test_the_cli_reports_a_broken_spec_with_exit_code_2(tmp_path: Path) -> None:
    for data in ("command: café\n".encode("latin-1"), b"command: null\n", LAUGHS, b""):
        spec = tmp_path / "spec.yaml"
        spec.write_bytes(data)
        result = CliRunner().invoke(main, ["sandbox", "run", str(spec), "--run-dir", str(tmp_path / "r")])
        assert result.exit_code == 2, result.output
        assert result.exception is None or isinstance(result.exception, SystemExit)
        assert f"Error: {spec}: " in result.output
        assert not (tmp_path / "r").exists()
