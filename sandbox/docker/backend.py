"""The docker backend's runner: :class:`DockerRunner` creates, watches and removes the containers.

See :mod:`mleaudit.sandbox.docker` for the isolation and the limits it sets up.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

from mleaudit.sandbox.docker.config import (
    ENFORCEMENT,
    LOG_MAX_SIZE,
    MASK_TMPFS,
    NOFILE_LIMIT,
    WRITABLE_TMPFS,
    device_requests,
    isolation_record,
    shm_bytes,
    tmpfs_bytes,
)
from mleaudit.sandbox.docker.counters import CgroupCounters, exit_status
from mleaudit.sandbox.docker.daemon import (
    BUILD_COMMANDS,
    DAEMON_REMEDIES,
    IMAGE_REMEDIES,
    RlimitRefused,
    count_oom_events,
    create_and_start_once,
    docker_client,
    remove_container,
    stop_container,
    stream_logs,
    wait_for_exit,
)
from mleaudit.sandbox.errors import ImageNotFound, SandboxError, SandboxUnavailable
from mleaudit.sandbox.logsink import CappedLog
from mleaudit.sandbox.run_user import RunUsers
from mleaudit.sandbox.runner.plan import Execution, ExecutionPlan
from mleaudit.sandbox.spec import SandboxSpec

logger = logging.getLogger(__name__)

_REMOVE_TIMEOUT_S = 60
_PREFLIGHT_TIMEOUT_S = 60
#: Seconds between two looks at the container, the stop signal and the cgroup counters.
_POLL_S = 0.2


class DockerRunner:
    """Run plans in docker containers; see :mod:`mleaudit.sandbox.docker`.

    Parameters
    ----------
    client : docker.DockerClient, optional
        Default: :func:`docker_client` when a run starts.
    keep : bool
        Leave the agent's container in place after the run (for inspection); it is removed
        otherwise. The pre-flight container is always removed.
    nofile : int
        ``RLIMIT_NOFILE`` (soft and hard) of the container's processes (default
        :data:`NOFILE_LIMIT`). A daemon whose own limit is lower and that may not raise it
        cannot apply it: its containers then keep its lower limit, recorded as such.
    """

    name = "docker"

    def __init__(self, client: Any = None, *, keep: bool = False, nofile: int = NOFILE_LIMIT) -> None:
        self._client = client
        self.keep = keep
        self.nofile = int(nofile)
        # False once the daemon refused the nofile ulimit (it cannot raise its own, lower one).
        self._nofile_settable = True
        # The uid drawn for each run in progress (run_sandbox passes one spec object to
        # sandbox_owner, preflight and execute, and a new one for every run).
        self.run_users = RunUsers()

    @property
    def client(self) -> Any:
        """The docker SDK client (connected on first use).

        Raises
        ------
        SandboxUnavailable
            If the daemon cannot be reached.
        """
        if self._client is None:
            self._client = docker_client()
        return self._client

    def sandbox_owner(self, spec: SandboxSpec) -> tuple[int, int]:
        """The uid/gid the container runs as (the staging folders are given to it).

        A non-root caller's own; for a root caller the spec's ``user``, else a uid/gid drawn
        for this run (:func:`mleaudit.sandbox.run_user.choose_run_user`). The first call for a spec
        object draws it; later calls with the same object (the staging folders' owner, the
        pre-flight container, the agent's container) get the same ids until :meth:`execute`
        has finished with it, or :meth:`preflight` has failed; a call after that draws a new
        one (:class:`mleaudit.sandbox.run_user.RunUsers`).

        Parameters
        ----------
        spec : SandboxSpec
            The run's spec.

        Returns
        -------
        (int, int)
            uid and gid.

        Raises
        ------
        SandboxUnavailable
            If no free uid can be drawn.
        """
        return self.run_users.owner(spec)

    def container_config(self, plan: ExecutionPlan) -> dict[str, Any]:
        """Keyword arguments for ``client.containers.create`` (inspected by the tests).

        Parameters
        ----------
        plan : ExecutionPlan
            The resolved plan.

        Returns
        -------
        dict
            Image, command, user (:meth:`sandbox_owner`, drawn for the run on the first call
            for a root caller's spec without a ``user``), environment, mounts, tmpfs, limits
            and security options.

        Raises
        ------
        SandboxError
            If the plan has no image.
        """
        from docker.types import LogConfig, Mount, Ulimit

        spec = plan.spec
        if not spec.image:
            raise SandboxError("the docker backend needs an image (--image or the spec's image:)")
        mounts = [Mount(target=b.target, source=str(b.source), type="bind", read_only=b.read_only) for b in plan.binds]
        bound = {b.target.rstrip("/") for b in plan.binds}
        writable = tmpfs_bytes(spec)
        tmpfs: dict[str, str] = {}
        for target in WRITABLE_TMPFS:
            if target not in bound:
                tmpfs[target] = f"rw,exec,nosuid,nodev,size={writable},mode=1777"
        # An empty, read-only tmpfs over every hidden path that a bind would otherwise expose.
        for mask in plan.masks:
            tmpfs[mask] = MASK_TMPFS
        env = dict(plan.env)
        # docker's init (tini) then sends a stop's SIGTERM to the agent's whole process group.
        env.setdefault("TINI_KILL_PROCESS_GROUP", "1")
        uid, gid = self.sandbox_owner(spec)
        if self.run_users.drawn(spec):
            # The uid drawn for the run has no passwd entry; getpass.getuser() and the tools
            # that name their caches after the user read these first.
            env.setdefault("USER", "sandbox")
            env.setdefault("LOGNAME", "sandbox")
        config: dict[str, Any] = {
            "image": spec.image,
            "command": list(plan.command),
            "user": f"{uid}:{gid}",
            "working_dir": spec.workdir,
            "environment": env,
            "network_mode": "none",
            "mounts": mounts,
            "tmpfs": tmpfs,
            "read_only": True,
            "init": True,
            "cap_drop": ["ALL"],
            "security_opt": ["no-new-privileges"],
            "ipc_mode": "private",
            "hostname": "sandbox",
            "labels": {"mleaudit.run": plan.run_id},
            "log_config": LogConfig(type="json-file", config={"max-size": LOG_MAX_SIZE, "max-file": "2"}),
            "shm_size": shm_bytes(spec),
            "detach": True,
            "stdin_open": False,
            "tty": False,
        }
        if self._nofile_settable:
            config["ulimits"] = [Ulimit(name="nofile", soft=self.nofile, hard=self.nofile)]
        res = spec.resources
        if res.cpus is not None:
            config["nano_cpus"] = int(res.cpus * 1e9)
        if res.memory_bytes is not None:
            config["mem_limit"] = res.memory_bytes
            config["memswap_limit"] = res.memory_bytes  # no swap beyond the memory limit
        if res.pids is not None:
            config["pids_limit"] = res.pids
        requests = device_requests(spec.gpus)
        if requests:
            config["device_requests"] = requests
        return config

    def enforcement(self, spec: SandboxSpec) -> dict[str, str]:
        """How each limit of ``spec`` is enforced (``not limited`` for limits the spec leaves open)."""
        res = spec.resources
        record = dict(ENFORCEMENT)
        if res.memory_bytes is None:
            record["memory"] = "not limited"
        if res.pids is None:
            record["pids"] = "not limited"
        if res.cpus is None:
            record["cpu"] = "not limited"
        if not spec.time_limit_s:
            record["time"] = "not limited"
        return record

    # --- talking to the daemon ---------------------------------------------------------------

    def _image(self, spec: SandboxSpec) -> Any:
        import docker.errors

        try:
            return self.client.images.get(spec.image)
        except docker.errors.ImageNotFound:
            raise ImageNotFound(
                f"docker image {spec.image!r} is not present locally (images are never pulled); build it: "
                f"{BUILD_COMMANDS[0]} && {BUILD_COMMANDS[1]}",
                remedies=IMAGE_REMEDIES,
            ) from None
        except docker.errors.APIError as exc:
            raise SandboxUnavailable(f"docker could not look up image {spec.image!r}: {exc.explanation or exc}",
                                     remedies=DAEMON_REMEDIES) from None  # fmt: skip
        except Exception as exc:  # noqa: BLE001 - a dropped connection surfaces as requests' errors
            raise SandboxUnavailable(f"the docker daemon did not answer: {exc}", remedies=DAEMON_REMEDIES) from None

    def _create_and_start(self, spec: SandboxSpec, config: dict[str, Any], on_created: Any) -> Any:
        """Create and start a container; ``on_created(container)`` runs for each container created (for cleanup).

        A daemon that may not raise its own ``RLIMIT_NOFILE`` (no ``CAP_SYS_RESOURCE``) and
        holds less than the ``nofile`` ulimit asked for cannot start the container; its
        containers inherit its own, lower limit, so the container is created again without
        the ulimit (``config`` loses its ``ulimits``), and so are this runner's later ones.
        """
        attempt: list[Any] = []
        try:
            container = create_and_start_once(self.client, spec, config, attempt.append)
        except RlimitRefused as exc:
            for refused in attempt:
                remove_container(refused)
            if "ulimits" not in config:
                raise SandboxUnavailable(str(exc), remedies=exc.remedies) from None
            logger.warning("the docker daemon cannot set an open-files limit of %d (its own is lower, which its "
                           "containers inherit): %s", self.nofile, exc)  # fmt: skip
            self._nofile_settable = False
            del config["ulimits"]
            return create_and_start_once(self.client, spec, config, on_created)
        except BaseException:
            for created in attempt:
                on_created(created)
            raise
        for created in attempt:
            on_created(created)
        return container

    # --- the runner protocol -----------------------------------------------------------------

    def preflight(self, plan: ExecutionPlan) -> None:
        """Create, start and remove a container running ``true`` with the plan's configuration.

        Parameters
        ----------
        plan : ExecutionPlan
            The plan the agent will run with (image, user, mounts, tmpfs, limits, GPUs).

        Raises
        ------
        SandboxUnavailable
            If the daemon cannot be reached or the container cannot start or does not exit 0.
        ImageNotFound
            If the image is not present locally.
        GpuUnavailable
            If GPUs are requested and the daemon has no GPU runtime.

        Notes
        -----
        When it fails, the run ends here: a uid drawn for it (:meth:`sandbox_owner`) is released.
        """
        spec = plan.spec
        created: list[Any] = []
        failed = True
        try:
            config = self.container_config(plan)
            config["command"] = list(plan.preflight_command)
            config["labels"] = {"mleaudit.run": plan.run_id, "mleaudit.preflight": "1"}
            self._image(spec)
            container = self._create_and_start(spec, config, created.append)
            try:
                status = container.wait(timeout=_PREFLIGHT_TIMEOUT_S)
            except Exception as exc:  # noqa: BLE001 - a timeout or a dropped connection
                raise SandboxUnavailable(f"a container running `true` did not exit within {_PREFLIGHT_TIMEOUT_S} s: {exc}",
                                         remedies=DAEMON_REMEDIES) from None  # fmt: skip
            code = int(status.get("StatusCode", -1))
            if code != 0:
                try:
                    output = container.logs(stdout=True, stderr=True)[-2000:].decode("utf-8", "replace").strip()
                except Exception:  # noqa: BLE001
                    output = ""
                raise SandboxUnavailable(
                    f"a container of {spec.image!r} running `true` exited with {code}" + (f": {output}" if output else ""),
                    remedies=("check that the image has /bin/sh, `true` and python3 (build it from images/: "
                              f"{BUILD_COMMANDS[0]} && {BUILD_COMMANDS[1]})", *DAEMON_REMEDIES[1:]),
                )
            failed = False
        finally:
            for container in created:
                remove_container(container)
            if failed:  # the run ends here: no execute() will release the uid drawn for it
                self.run_users.end(spec)

    def execute(self, plan: ExecutionPlan) -> Execution:
        """Run the container to its end, the time limit or a stop; stream its logs to ``run.log``; remove it.

        Parameters
        ----------
        plan : ExecutionPlan
            The resolved plan.

        Returns
        -------
        Execution
            Exit code and signal, limits hit and what was measured, log counts, the container and
            image ids, and the isolation and enforcement record.

        Raises
        ------
        ImageNotFound
            If the image is not present locally.
        GpuUnavailable
            If GPUs are requested and the daemon has no GPU runtime.
        SandboxUnavailable
            If the daemon cannot be reached, or refuses or cannot start the container.

        Notes
        -----
        A uid drawn for the run (:meth:`sandbox_owner`) is released once the container is
        gone (or has exited, with ``keep``), its keyrings cleared first if it owns any.
        """
        try:
            return self._run(plan)
        finally:
            self.run_users.end(plan.spec)

    def _run(self, plan: ExecutionPlan) -> Execution:
        """:meth:`execute` without the release of the run's uid."""
        spec = plan.spec
        config = self.container_config(plan)
        image = self._image(spec)
        digest = (image.attrs.get("RepoDigests") or [None])[0] or image.id
        grace = float(spec.stop_grace_s)
        created: list[Any] = []
        log = CappedLog(plan.log_path, plan.log_bytes)
        limits: list[str] = []
        details: dict[str, str] = {}
        exit_code: int | None = None
        timed_out = False
        counters: CgroupCounters | None = None
        oom_killed = False
        oom_events = 0
        started = False
        try:
            since = int(time.time()) - 1
            container = self._create_and_start(spec, config, created.append)
            started = True
            streamer = threading.Thread(target=stream_logs, args=(container, log), name="container-logs", daemon=True)
            streamer.start()
            exited = threading.Event()
            outcome: dict[str, Any] = {}
            waiter = threading.Thread(target=wait_for_exit, args=(container, exited, outcome), name="container-wait", daemon=True)
            waiter.start()
            try:
                container.reload()
                pid = container.attrs.get("State", {}).get("Pid") or None
            except Exception:  # noqa: BLE001
                pid = None
            counters = CgroupCounters(container.id, pid)
            clock = time.monotonic()
            while True:
                counters.poll()
                if exited.wait(_POLL_S):
                    break
                if spec.time_limit_s and time.monotonic() - clock >= spec.time_limit_s:
                    plan.stop.request("time", f"the wall-clock limit of {spec.time_limit_s:g} s was reached")
                if plan.stop.is_set():
                    break
            counters.poll()
            if plan.stop.is_set():
                limit = plan.stop.limit or "stop"
                timed_out = limit == "time"
                limits.append(limit)
                running = not exited.is_set()
                if running:
                    started_stop = time.monotonic()
                    stop_container(container, grace)
                    exited.wait(_REMOVE_TIMEOUT_S)
                    how = f"SIGTERM, the agent ended {time.monotonic() - started_stop:.1f} s later (grace {grace:g} s, then SIGKILL)"
                else:
                    how = "the container had already exited"
                details[limit] = f"{plan.stop.detail or limit}; {how}"
            exited.wait(_REMOVE_TIMEOUT_S)
            streamer.join(timeout=30)
            state: dict[str, Any] = {}
            try:
                container.reload()
                state = container.attrs.get("State", {})
            except Exception as exc:  # noqa: BLE001
                logger.warning("could not inspect container %s after its end: %s", container.short_id, exc)
            code = state.get("ExitCode", outcome.get("StatusCode"))
            if code is not None and not state.get("Running", False):
                exit_code = int(code)
            oom_killed = bool(state.get("OOMKilled"))
            oom_events = count_oom_events(self.client, container.id, since)
        finally:
            log.close()
            # ``keep`` keeps a container that ran; one that never started is of no use and goes.
            if not (self.keep and started):
                for container in created:
                    remove_container(container)
        if counters is not None:
            counters.record_hits(limits, details, oom_killed=oom_killed, oom_events=oom_events,
                                 memory=spec.resources.memory_bytes, pids=spec.resources.pids)
        exit_code, exit_signal = exit_status(exit_code)
        gpus: tuple[str, ...] = ()
        if spec.gpus is not None:
            gpus = spec.gpus.device_ids or (("all",) if spec.gpus.count is None else (f"count={spec.gpus.count}",))
        container_id = created[0].id if created else None
        return Execution(
            exit_code=exit_code,
            exit_signal=exit_signal,
            timed_out=timed_out,
            limits_hit=tuple(dict.fromkeys(limits)),
            limit_details=details,
            log_kept_bytes=log.kept_bytes,
            log_dropped_bytes=log.dropped_bytes,
            container_id=container_id,
            image_digest=digest,
            gpus_visible=gpus,
            isolation=isolation_record(config, spec, grace=grace, enforcement=self.enforcement(spec), counters=counters,
                                       keep=self.keep, nofile=self.nofile),
        )
