"""Talking to the docker daemon: the client, the image, and the calls of a container's life.

Every call turns the SDK's errors into :class:`~mleaudit.sandbox.errors.SandboxUnavailable`
(or :class:`~mleaudit.sandbox.errors.ImageNotFound`, :class:`~mleaudit.sandbox.errors.GpuUnavailable`)
with remedies. Images are never pulled. The docker SDK is imported on first use.
"""

from __future__ import annotations

import logging
import math
import os
import threading
import time
from typing import Any, Mapping

from mleaudit.sandbox.errors import GpuUnavailable, ImageNotFound, SandboxUnavailable
from mleaudit.sandbox.logsink import CappedLog
from mleaudit.sandbox.spec import SandboxSpec

logger = logging.getLogger(__name__)

#: The image built from ``images/agent/Dockerfile``.
DEFAULT_IMAGE = "mleaudit/agent:local"

#: The commands that build the agent image offline (quoted by the remedies).
BUILD_COMMANDS = (
    "images/build-rootfs.sh | docker import - mleaudit/rootfs:local",
    "docker build --network none --build-arg BASE=mleaudit/rootfs:local -t mleaudit/agent:local images/agent",
)
#: What to do when the image is missing.
IMAGE_REMEDIES = (
    f"build the agent image offline from this repository: {BUILD_COMMANDS[0]} && {BUILD_COMMANDS[1]}",
    "or name an image that is present locally (docker images lists them) with --image or the spec's image:",
)
#: What to do when the daemon cannot be reached.
DAEMON_REMEDIES = (
    "start the docker daemon (systemctl start docker), or point DOCKER_HOST at a running one "
    "(export DOCKER_HOST=unix:///path/to/docker.sock)",
    "make sure this user may use the daemon's socket (root, or a member of the docker group)",
    "or use the local backend (--backend local, bubblewrap)",
)
#: What to do when GPUs are requested and the daemon cannot provide them.
GPU_REMEDIES = (
    "install the NVIDIA Container Toolkit (apt-get install nvidia-container-toolkit), configure docker's "
    "runtime (nvidia-ctk runtime configure --runtime=docker) and restart the daemon (systemctl restart docker)",
    "or run without GPUs: drop --gpus (or the spec's gpus:)",
)


def docker_client(timeout: int = 120) -> Any:
    """A docker SDK client for the daemon in the environment (``DOCKER_HOST`` or the local socket).

    Parameters
    ----------
    timeout : int
        Seconds the client waits for an answer to one request.

    Returns
    -------
    docker.DockerClient
        A client whose daemon answered a ping.

    Raises
    ------
    SandboxUnavailable
        If the docker SDK is not installed or the daemon does not answer (with remedies).
    """
    try:
        import docker
    except ImportError:
        raise SandboxUnavailable(
            "the docker backend needs the docker SDK: pip install 'mleaudit[sandbox]'",
            remedies=("pip install 'mleaudit[sandbox]'", "or use the local backend (--backend local, bubblewrap)"),
        ) from None
    try:
        client = docker.from_env(timeout=timeout)
        client.ping()
    except Exception as exc:  # noqa: BLE001 - the SDK raises several unrelated types for "no daemon"
        raise SandboxUnavailable(
            f"cannot reach the docker daemon ({os.environ.get('DOCKER_HOST') or 'local socket'}): {exc}",
            remedies=DAEMON_REMEDIES,
        ) from None
    return client


class RlimitRefused(SandboxUnavailable):
    """The container's runtime may not set an rlimit asked for (above its own, without ``CAP_SYS_RESOURCE``)."""


def create_and_start_once(client: Any, spec: SandboxSpec, config: Mapping[str, Any], on_created: Any) -> Any:
    """One attempt to create and start a container; ``on_created(container)`` runs before the start."""
    import docker.errors

    try:
        container = client.containers.create(**config)
    except docker.errors.ImageNotFound:
        raise ImageNotFound(f"docker image {spec.image!r} is not present locally (images are never pulled)",
                            remedies=IMAGE_REMEDIES) from None  # fmt: skip
    except docker.errors.APIError as exc:
        raise SandboxUnavailable(f"docker refused to create the container: {exc.explanation or exc}",
                                 remedies=DAEMON_REMEDIES) from None  # fmt: skip
    except Exception as exc:  # noqa: BLE001
        raise SandboxUnavailable(f"the docker daemon did not answer: {exc}", remedies=DAEMON_REMEDIES) from None
    on_created(container)
    try:
        container.start()
    except docker.errors.APIError as exc:
        message = str(exc.explanation or exc)
        if spec.gpus is not None and ("device driver" in message or "gpu" in message.lower() or "nvidia" in message.lower()):
            raise GpuUnavailable(f"GPUs were requested but the docker daemon has no GPU runtime: {message}",
                                 remedies=GPU_REMEDIES) from None  # fmt: skip
        remedies = DAEMON_REMEDIES
        if "setting rlimit" in message and "operation not permitted" in message:
            raise RlimitRefused(f"docker could not start the container: {message}", remedies=remedies) from None
        if "docker-init" in message or "init binary" in message:
            remedies = ("install docker's init (Debian/Ubuntu: apt-get install tini; it provides docker-init) "
                        "and restart the daemon", *DAEMON_REMEDIES)
        raise SandboxUnavailable(f"docker could not start the container: {message}", remedies=remedies) from None
    except Exception as exc:  # noqa: BLE001
        raise SandboxUnavailable(f"the docker daemon did not answer: {exc}", remedies=DAEMON_REMEDIES) from None
    return container


def remove_container(container: Any) -> None:
    """Remove a container, forcibly; best effort (a failure is logged)."""
    try:
        container.remove(force=True)
    except Exception as exc:  # noqa: BLE001 - removal is best effort; the label names the run
        logger.warning("could not remove container %s (label mleaudit.run): %s", getattr(container, "short_id", "?"), exc)


def wait_for_exit(container: Any, exited: threading.Event, outcome: dict[str, Any]) -> None:
    """Block until the container exits (or the daemon drops the connection); then set ``exited``."""
    try:
        outcome.update(container.wait())
    except Exception as exc:  # noqa: BLE001 - the container was removed, or the daemon went away
        outcome["error"] = str(exc)
    finally:
        exited.set()


def stop_container(container: Any, grace: float) -> None:
    """SIGTERM through docker's stop, SIGKILL after ``grace`` seconds; a kill if the stop call fails."""
    try:
        container.stop(timeout=max(0, math.ceil(grace)))  # docker takes whole seconds; never shorten the grace
    except Exception as exc:  # noqa: BLE001
        logger.warning("docker stop of %s failed (%s); killing it", container.short_id, exc)
        try:
            container.kill()
        except Exception as kill_exc:  # noqa: BLE001
            logger.warning("could not kill container %s: %s", container.short_id, kill_exc)


def count_oom_events(client: Any, container_id: str, since: int) -> int:
    """Number of ``oom`` events the daemon reported for the container since ``since``."""
    try:
        # ``until`` in the past, as seconds.nanoseconds: the query returns at once (the container has exited).
        stream = client.events(since=since, until=f"{time.time():.9f}", decode=True,
                                    filters={"container": container_id, "event": "oom"})  # fmt: skip
        return sum(1 for event in stream if event.get("status") == "oom" or event.get("Action") == "oom")
    except Exception as exc:  # noqa: BLE001 - best effort; the cgroup counter and State.OOMKilled remain
        logger.debug("docker events for %s unavailable: %s", container_id, exc)
        return 0


def stream_logs(container: Any, log: CappedLog) -> None:
    """Copy the container's output, chunk by chunk, into ``log`` until the stream ends."""
    try:
        for chunk in container.logs(stream=True, follow=True, stdout=True, stderr=True):
            log.write(chunk)
    except Exception as exc:  # noqa: BLE001 - a broken log stream must not hide the run's result
        logger.warning("log stream of container %s ended: %s", getattr(container, "short_id", "?"), exc)
