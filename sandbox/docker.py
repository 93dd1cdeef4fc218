"""The docker backend: the agent runs in a container created with the docker SDK.

The container runs as a non-root user (``1000:1000``, the agent image's ``agent``, when the
caller is root; the caller's own uid otherwise, so its files stay the caller's), with every
capability dropped and ``no-new-privileges``, ``network_mode="none"`` (an allow-list is served
through the Unix-socket proxy, see :mod:`sandbox.proxy`, so the container still has no
interface), the plan's binds (public data and agent files read-only at ``/home/data`` and
``/home/agent``; ``/home/submission``, ``/home/logs``, ``/home/code``; the validation socket and
helper), GPUs through ``device_requests`` (a count or device ids with capability ``gpu``), and
the spec's CPU, memory (no extra swap), shared-memory and process limits. The host's docker
socket is never mounted.

Logs are streamed from the daemon to ``run.log`` chunk by chunk. At the wall-clock limit the
container is killed and the run recorded as timed out; an OOM kill is recorded as the memory
limit. The container is removed in every case unless ``keep`` is set. Images are never pulled:
a missing image is an error (build it from ``images/``).

The docker SDK is an optional extra (``pip install 'mleaudit[sandbox]'``) imported on first use.
"""

from __future__ import annotations

import logging
import os
import threading
from typing import Any

from sandbox.errors import GpuUnavailable, ImageNotFound, SandboxError, SandboxUnavailable
from sandbox.runner import Execution, ExecutionPlan
from sandbox.spec import GpuRequest, SandboxSpec

__all__ = ["DockerRunner", "docker_client", "device_requests", "DEFAULT_IMAGE", "AGENT_USER"]

logger = logging.getLogger(__name__)

#: The image built from ``images/agent/Dockerfile``.
DEFAULT_IMAGE = "mleaudit/agent:local"
#: The agent image's user, used when the caller is root.
AGENT_USER = (1000, 1000)
_LOG_MAX_SIZE = "50m"
_REMOVE_TIMEOUT_S = 60


def docker_client(timeout: int = 120) -> Any:
    """A docker SDK client for the daemon in the environment (``DOCKER_HOST`` or the local socket).

    Raises
    ------
    SandboxUnavailable
        If the docker SDK is not installed or the daemon does not answer.
    """
    try:
        import docker
    except ImportError:
        raise SandboxUnavailable("the docker backend needs the docker SDK: pip install 'mleaudit[sandbox]'") from None
    try:
        client = docker.from_env(timeout=timeout)
        client.ping()
    except Exception as exc:  # noqa: BLE001 - the SDK raises several unrelated types for "no daemon"
        raise SandboxUnavailable(f"cannot reach the docker daemon ({os.environ.get('DOCKER_HOST') or 'local socket'}): {exc}") from None
    return client


def device_requests(gpus: GpuRequest | None) -> list[Any]:
    """The ``device_requests`` for a GPU request: a count (``-1`` for all) or device ids, capability ``gpu``.

    Examples
    --------
    >>> [r["Count"] for r in device_requests(GpuRequest())]        # doctest: +SKIP
    [-1]
    """
    if gpus is None:
        return []
    from docker.types import DeviceRequest

    if gpus.device_ids:
        return [DeviceRequest(device_ids=list(gpus.device_ids), capabilities=[["gpu"]])]
    return [DeviceRequest(count=-1 if gpus.count is None else gpus.count, capabilities=[["gpu"]])]


def _user(spec: SandboxSpec) -> str:
    if spec.user:
        return spec.user if ":" in spec.user else f"{spec.user}:{spec.user}"
    if os.geteuid() == 0:
        return f"{AGENT_USER[0]}:{AGENT_USER[1]}"
    return f"{os.geteuid()}:{os.getegid()}"


class DockerRunner:
    """Run plans in docker containers; see the module docstring.

    Parameters
    ----------
    client : docker.DockerClient, optional
        Default: :func:`docker_client` when a run starts.
    keep : bool
        Leave the container in place after the run (for inspection); it is removed otherwise.
    """

    name = "docker"

    def __init__(self, client: Any = None, *, keep: bool = False) -> None:
        self._client = client
        self.keep = keep

    @property
    def client(self) -> Any:
        if self._client is None:
            self._client = docker_client()
        return self._client

    def sandbox_owner(self, spec: SandboxSpec) -> tuple[int, int]:
        """The uid/gid the container runs as (the staging folders are given to it)."""
        uid, _, gid = _user(spec).partition(":")
        return int(uid), int(gid or uid)

    def container_config(self, plan: ExecutionPlan) -> dict[str, Any]:
        """Keyword arguments for ``client.containers.create`` (inspected by the tests).

        Raises
        ------
        SandboxError
            If the plan has no image.
        """
        from docker.types import LogConfig, Mount

        spec = plan.spec
        if not spec.image:
            raise SandboxError("the docker backend needs an image (--image or the spec's image:)")
        mounts = [Mount(target=b.target, source=str(b.source), type="bind", read_only=b.read_only) for b in plan.binds]
        config: dict[str, Any] = {
            "image": spec.image,
            "command": list(plan.command),
            "user": _user(spec),
            "working_dir": spec.workdir,
            "environment": dict(plan.env),
            "network_mode": "none",
            "mounts": mounts,
            # An empty tmpfs over every hidden path that a bind would otherwise expose.
            "tmpfs": {mask: "rw,noexec,nosuid,size=64k" for mask in plan.masks},
            "cap_drop": ["ALL"],
            "security_opt": ["no-new-privileges"],
            "ipc_mode": "private",
            "hostname": "sandbox",
            "labels": {"mleaudit.run": plan.run_id},
            "log_config": LogConfig(type="json-file", config={"max-size": _LOG_MAX_SIZE, "max-file": "2"}),
            "detach": True,
            "stdin_open": False,
            "tty": False,
        }
        res = spec.resources
        if res.cpus is not None:
            config["nano_cpus"] = int(res.cpus * 1e9)
        if res.memory_bytes is not None:
            config["mem_limit"] = res.memory_bytes
            config["memswap_limit"] = res.memory_bytes  # no swap beyond the memory limit
        if res.shm_bytes is not None:
            config["shm_size"] = res.shm_bytes
        if res.pids is not None:
            config["pids_limit"] = res.pids
        requests = device_requests(spec.gpus)
        if requests:
            config["device_requests"] = requests
        return config

    def execute(self, plan: ExecutionPlan) -> Execution:
        """Create, start and wait for the container; stream its logs to ``run.log``; remove it.

        Raises
        ------
        ImageNotFound
            If the image is not present locally.
        GpuUnavailable
            If GPUs are requested and the daemon has no GPU runtime.
        SandboxUnavailable
            If the daemon cannot be reached.
        SandboxError
            If the daemon refuses the container for another reason.
        """
        import docker.errors
        import requests.exceptions

        client = self.client
        spec = plan.spec
        config = self.container_config(plan)
        try:
            image = client.images.get(spec.image)
        except docker.errors.ImageNotFound:
            raise ImageNotFound(
                f"docker image {spec.image!r} is not present locally (images are never pulled); build it: "
                "images/build-rootfs.sh | docker import - mleaudit/rootfs:local && docker build --network none "
                "--build-arg BASE=mleaudit/rootfs:local -t mleaudit/agent:local images/agent"
            ) from None
        except docker.errors.APIError as exc:
            raise SandboxUnavailable(f"docker could not look up image {spec.image!r}: {exc.explanation or exc}") from None
        digest = (image.attrs.get("RepoDigests") or [None])[0] or image.id
        container = None
        timed_out = False
        exit_code: int | None = None
        limits: list[str] = []
        try:
            try:
                container = client.containers.create(**config)
            except docker.errors.APIError as exc:
                raise SandboxError(f"docker refused to create the container: {exc.explanation or exc}") from None
            try:
                container.start()
            except docker.errors.APIError as exc:
                message = str(exc.explanation or exc)
                if spec.gpus is not None and ("device driver" in message or "gpu" in message.lower()):
                    raise GpuUnavailable(f"GPUs were requested but the docker daemon has no GPU runtime: {message}") from None
                raise SandboxError(f"docker could not start the container: {message}") from None
            streamer = threading.Thread(target=self._stream_logs, args=(container, plan), name="container-logs", daemon=True)
            streamer.start()
            try:
                status = container.wait(timeout=spec.time_limit_s) if spec.time_limit_s else container.wait()
                exit_code = int(status.get("StatusCode", -1))
            except (requests.exceptions.ReadTimeout, requests.exceptions.ConnectionError):
                timed_out = True
                limits.append("time")
                try:
                    container.kill()
                except docker.errors.APIError as exc:
                    logger.warning("could not kill container %s: %s", container.short_id, exc)
                container.wait(timeout=_REMOVE_TIMEOUT_S)
            streamer.join(timeout=30)
            container.reload()
            if container.attrs.get("State", {}).get("OOMKilled"):
                limits.append("memory")
        finally:
            if container is not None and not self.keep:
                try:
                    container.remove(force=True)
                except docker.errors.APIError as exc:
                    logger.warning("could not remove container %s: %s", container.short_id, exc)
        gpus: tuple[str, ...] = ()
        if spec.gpus is not None:
            gpus = spec.gpus.device_ids or (("all",) if spec.gpus.count is None else (f"count={spec.gpus.count}",))
        return Execution(
            exit_code=None if timed_out else exit_code,
            exit_signal=exit_code - 128 if exit_code is not None and exit_code > 128 and not timed_out else None,
            timed_out=timed_out,
            limits_hit=tuple(limits),
            container_id=container.id if container is not None else None,
            image_digest=digest,
            gpus_visible=gpus,
            isolation={
                "sandbox": True,
                "tool": "docker",
                "user": config["user"],
                "network_mode": config["network_mode"],
                "cap_drop": config["cap_drop"],
                "security_opt": config["security_opt"],
                "kept": self.keep,
            },
        )

    @staticmethod
    def _stream_logs(container: Any, plan: ExecutionPlan) -> None:
        try:
            with plan.log_path.open("ab") as log:
                for chunk in container.logs(stream=True, follow=True, stdout=True, stderr=True):
                    log.write(chunk)
                    log.flush()
        except Exception as exc:  # noqa: BLE001 - a broken log stream must not hide the run's result
            logger.warning("log stream of container %s ended: %s", getattr(container, "short_id", "?"), exc)
