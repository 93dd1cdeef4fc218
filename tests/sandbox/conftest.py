"""Fixtures for sandbox tests: a toy competition layout, agent folders, and runners.

The toy layout mirrors a prepared competition: ``data/toy/prepared/public`` (what the agent may
read) next to ``data/toy/prepared/private/answers.csv``, whose rows carry a unique token so a
leak is detectable anywhere in a run's outputs.
"""

from __future__ import annotations

import os
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import pytest

from mleaudit.sandbox.feedback import ValidationOutcome
from mleaudit.sandbox.local import BubblewrapRunner, bwrap_works
from mleaudit.sandbox.runner import SandboxResult, run_sandbox
from mleaudit.sandbox.spec import SandboxSpec

_BWRAP = bwrap_works()


@dataclass
class Toy:
    """A toy competition on disk plus the token that marks its answers."""

    root: Path
    public: Path
    private: Path
    answers: Path
    token: str

    def validator(self, path: Path) -> ValidationOutcome:
        # A bound method of this dataclass pickles, so it runs in the endpoint's worker process.
        text = path.read_text(encoding="utf-8", errors="replace")
        if not text.startswith("id,label"):
            return ValidationOutcome(valid=False, reason="missing-column", column="label",
                                     detail="Submission must have the columns id and label.")
        rows = text.strip().splitlines()[1:]
        if len(rows) != 3:
            return ValidationOutcome(valid=False, reason="row-count", detail=f"Submission has {len(rows)} rows; expected 3.")
        return ValidationOutcome(valid=True, detail="Submission is valid.")


@pytest.fixture
def toy(tmp_path: Path) -> Toy:
    token = f"ANSWER-{uuid.uuid4().hex}"
    root = tmp_path / "data" / "toy" / "prepared"
    public, private = root / "public", root / "private"
    public.mkdir(parents=True)
    private.mkdir()
    (public / "train.csv").write_text("id,x,label\n1,0.5,a\n2,0.1,b\n", encoding="utf-8")
    (public / "test.csv").write_text("id,x\n10,0.3\n11,0.9\n12,0.2\n", encoding="utf-8")
    (public / "sample_submission.csv").write_text("id,label\n10,a\n11,a\n12,a\n", encoding="utf-8")
    answers = private / "answers.csv"
    answers.write_text(f"id,label\n10,{token}\n11,{token}\n12,{token}\n", encoding="utf-8")
    # Data folders as `prepare` leaves them: readable by other users (the sandbox user differs).
    for path in (tmp_path, tmp_path / "data", tmp_path / "data" / "toy", root, public, private):
        path.chmod(0o755)
    return Toy(root=root, public=public, private=private, answers=answers, token=token)


@pytest.fixture(scope="session")
def docker_client():
    """A client of the docker daemon in the environment (tests marked ``docker`` only)."""
    pytest.importorskip("docker", reason="the docker SDK (extra 'sandbox') is not installed")
    from mleaudit.sandbox.docker import docker_client as connect
    from mleaudit.sandbox.errors import SandboxUnavailable

    try:
        return connect(timeout=60)
    except SandboxUnavailable as exc:
        pytest.skip(str(exc))


@pytest.fixture(scope="session")
def agent_image(docker_client):
    """The agent image, built offline from this machine's binaries when missing."""
    import subprocess

    import docker

    from mleaudit.sandbox.docker import DEFAULT_IMAGE

    try:
        docker_client.images.get(DEFAULT_IMAGE)
        return DEFAULT_IMAGE
    except docker.errors.ImageNotFound:
        pass
    repo = Path(__file__).resolve().parents[2]
    rootfs = subprocess.run(["bash", str(repo / "images" / "build-rootfs.sh")], capture_output=True, check=True).stdout
    docker_client.api.import_image_from_data(rootfs, repository="mleaudit/rootfs", tag="local")
    docker_client.images.build(path=str(repo / "images" / "agent"), tag=DEFAULT_IMAGE, pull=False,
                               network_mode="none", buildargs={"BASE": "mleaudit/rootfs:local"}, rm=True)
    return DEFAULT_IMAGE


@pytest.fixture
def docker_runner(docker_client):
    from mleaudit.sandbox.docker import DockerRunner

    return DockerRunner(client=docker_client)


@pytest.fixture
def bwrap() -> BubblewrapRunner:
    ok, why = _BWRAP
    if not ok:
        pytest.skip(f"bubblewrap cannot create namespaces on this machine: {why}")
    return BubblewrapRunner()


def write_agent(folder: Path, name: str, text: str) -> Path:
    """Write an agent script readable by the sandbox user."""
    folder.mkdir(parents=True, exist_ok=True, mode=0o755)
    folder.chmod(0o755)
    path = folder / name
    path.write_text(text, encoding="utf-8")
    path.chmod(0o755)
    return path


@pytest.fixture
def run_agent(tmp_path: Path, toy: Toy) -> Callable[..., SandboxResult]:
    """Run a script as the agent: ``run_agent(script_text, runner=..., name="agent.sh", **spec_fields)``."""
    counter = iter(range(1000))

    def run(script: str, *, runner: Any, name: str = "agent.sh", validator: Any = "toy", **fields: Any) -> SandboxResult:
        n = next(counter)
        agent_dir = tmp_path / f"agent{n}"
        write_agent(agent_dir, name, script)
        interpreter = "python3" if name.endswith(".py") else "/bin/sh"
        fields.setdefault("command", (interpreter, f"/home/agent/{name}"))
        fields.setdefault("time_limit_s", 60)
        fields.setdefault("competition_id", "toy")
        spec = SandboxSpec(data_dir=toy.public, agent_dir=agent_dir, hidden=(toy.private,), **fields)
        chosen = toy.validator if validator == "toy" else validator
        return run_sandbox(spec, tmp_path / f"run{n}", runner=runner, validator=chosen)

    return run


def leaked(result: SandboxResult, token: str) -> list[str]:
    """Files of the run dir that contain the answers token."""
    hits = []
    for dirpath, _, files in os.walk(result.run_dir):
        for name in files:
            path = Path(dirpath) / name
            if not path.is_symlink() and token.encode() in path.read_bytes():
                hits.append(str(path.relative_to(result.run_dir)))
    return hits


def remove_deep_tree(root: Path) -> None:
    """Empty a folder of any depth without recursion (pytest's own clean-up recurses), by descriptor."""
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW
    stack = [os.open(root, flags)]
    while stack:
        fd = stack[-1]
        with os.scandir(fd) as listing:
            entries = [(e.name, e.is_dir(follow_symlinks=False)) for e in listing]
        child = next((name for name, is_dir in entries if is_dir), None)
        for name, is_dir in entries:
            if not is_dir:
                os.unlink(name, dir_fd=fd)
        if child is not None:
            stack.append(os.open(child, flags, dir_fd=fd))
            continue
        os.close(stack.pop())
        if stack:
            # This folder is empty now: remove it from its parent (the parent's first sub-folder).
            with os.scandir(stack[-1]) as listing:
                for entry in listing:
                    if entry.is_dir(follow_symlinks=False):
                        try:
                            os.rmdir(entry.name, dir_fd=stack[-1])
                        except OSError:
                            pass
