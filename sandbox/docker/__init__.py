"""The docker backend: the agent runs in a container created with the docker SDK.

Isolation
---------
The container runs as a non-root user: the spec's ``user`` when given; else, when the caller
is root, a uid/gid drawn at random for the run from
:data:`~mleaudit.sandbox.run_user.RUN_UID_RANGE` (2,000,000-2,999,999; no account, no process, no
keys, outside every subordinate range), held for the whole run (the staging folders, the
pre-flight container and the agent's container share it) and released when the run ends, its
user keyrings cleared first if it owns any (docker's default seccomp profile refuses the key
system calls, so it normally owns none); see :mod:`mleaudit.sandbox.run_user`. The kernel keeps limits
and state per uid that a container without a user namespace shares with every process of that
uid on the host (inotify instances and watches, ``RLIMIT_NPROC``, message-queue bytes, pipe
buffers, keys): one uid for every container, such as the agent image's ``1000``, made them a
channel between concurrent runs and a way for one run to exhaust another's, or a host user's
of the same uid. The drawn uid has no passwd entry: ``HOME`` is the image's (``/tmp`` in the
agent image) and ``USER``/``LOGNAME`` are set to ``sandbox``. A non-root caller's containers
run as the caller's own uid, so its files stay the caller's. The orchestrator gives the output
folders to that uid before the run and takes what the agent wrote back afterwards.

Every capability is dropped and ``no-new-privileges`` set; ``network_mode="none"`` (an
allow-list is served through the Unix-socket proxy, see :mod:`mleaudit.sandbox.proxy`, so the container
still has no interface); the plan's binds (public data and agent files read-only at
``/home/data`` and ``/home/agent``; ``/home/submission``, ``/home/logs``, ``/home/code``; the
validation socket and helper) and GPUs through ``device_requests`` (a count or device ids with
capability ``gpu``). The host's docker socket is never mounted. Images are never pulled: a
missing image is an error (build it from ``images/``).

Limits
------
Every limit holds for the whole container, i.e. for all of the agent's processes together:

* memory: the container's memory cgroup (``mem_limit``, and ``memswap_limit`` equal to it, so
  no swap on top). OOM kills are counted from three sources, because ``State.OOMKilled`` only
  reflects the main process on some docker versions: the daemon's ``oom`` events for the
  container, the ``oom_kill`` counter of the container's memory cgroup read on this host
  (``memory.oom_control`` under cgroup v1, ``memory.events`` under v2; best effort, polled while
  the container runs) and ``State.OOMKilled``.
* processes: the pids cgroup (``pids_limit``); forks refused at the limit are counted from the
  cgroup's ``pids.events`` (``max``), polled while the container runs (best effort: a fork
  refused in the last fraction of a second before the container exits can go uncounted).
* CPU: a CFS quota (``nano_cpus``).
* open files: ``RLIMIT_NOFILE`` of :data:`NOFILE_LIMIT` (soft and hard) for every process of the
  container, instead of the daemon's own (often a million or more). Each connection to the
  validation endpoint or the network proxy holds a descriptor on the host as well, so this
  bounds what one process of the agent can make the host hold open (the process limit bounds
  the number of processes). A daemon that runs with a lower limit of its own and may not raise
  it (no ``CAP_SYS_RESOURCE``, as in some nested setups) refuses to start such a container;
  its containers inherit its lower limit, so the container is started without the ulimit
  and ``isolation.ulimits`` says so.
* file systems: the root file system is read-only (``read_only=True``), so the container's
  writable layer, which lives on the daemon's disk, is never written and needs no
  ``storage_opt`` (which only overlay2 on xfs with project quotas supports). What the agent can
  write is the three output folders (host binds, bounded by the run's disk watch of the output
  folders, see :mod:`mleaudit.sandbox.watchdog`), ``/tmp`` and ``/var/tmp`` and ``/dev/shm``. Those are
  tmpfs file systems, each sized: ``/tmp`` and ``/var/tmp`` at the memory limit (half of this
  machine's memory without one, the kernel's own default written out), ``/dev/shm`` at the
  spec's ``shm`` or :data:`DEFAULT_SHM_BYTES` (never above the memory limit). Pages of a tmpfs
  are charged to the memory cgroup of the process that writes them, so everything the agent
  keeps there counts against the container's memory limit: filling ``/tmp`` ends in an OOM kill,
  recorded as the memory limit.
* time: a timer on the host. At the time limit, or when the run asks for a stop through the
  plan's :class:`~mleaudit.sandbox.runner.StopSignal` (the disk watch), the container is stopped:
  ``SIGTERM``, the spec's grace period (``stop_grace_s``, default
  :data:`mleaudit.sandbox.spec.DEFAULT_STOP_GRACE_S`), then ``SIGKILL``. The container's first process is docker's
  init (``init=True``), which forwards the signal to the agent's process group
  (``TINI_KILL_PROCESS_GROUP``) and reaps orphaned processes, so that zombies never hold the
  process limit. The exit code (and the signal, for ``128 + n``) is recorded in every case.

``run.json`` records the mechanism of each limit in ``limits.enforcement``
(``isolation.enforcement``) and what was measured for each limit hit.

Logs are streamed from the daemon chunk by chunk into ``run.log`` through a
:class:`~mleaudit.sandbox.logsink.CappedLog` of the plan's ``log_bytes``; the daemon's own copy is a
``json-file`` log bounded at two files of :data:`~mleaudit.sandbox.docker.config.LOG_MAX_SIZE`.

Before the agent, :meth:`DockerRunner.preflight` creates and starts a container running
``true`` with the same configuration (image, user, mounts, tmpfs, limits, GPUs, no network) and
removes it, so that a sandbox that cannot start is reported as such (with remedies) rather
than as an agent that failed. No container is left behind on any path unless ``keep`` is set.

The docker SDK is an optional extra (``pip install 'mleaudit[sandbox]'``) imported on first use.

Routine Listings
----------------
counters
    ``CgroupCounters`` (OOM kills, refused forks and peak memory read from the container's
    cgroups) and ``exit_status``.
config
    The sizes, limits and GPU requests a container is given (:data:`NOFILE_LIMIT`,
    :data:`DEFAULT_SHM_BYTES`, :func:`device_requests`, ``tmpfs_bytes``, ``shm_bytes``), the
    :data:`ENFORCEMENT` record and ``isolation_record`` for ``run.json``.
daemon
    :data:`DEFAULT_IMAGE`, the remedies (:data:`IMAGE_REMEDIES`, :data:`DAEMON_REMEDIES`,
    :data:`GPU_REMEDIES`), :func:`docker_client`, and the calls of a container's life (create
    and start, stop, wait, stream its logs, count its ``oom`` events, remove).
backend
    :class:`DockerRunner`: the runner protocol (``sandbox_owner``, ``preflight``, ``execute``)
    and ``container_config``.

Notes
-----
The names above are re-exported here, so callers import from ``mleaudit.sandbox.docker``.
Imports point down the listing: a module imports only modules listed before it, plus
``mleaudit.sandbox.errors``, ``logsink``, ``run_user``, ``runner`` (the plan and the
:class:`~mleaudit.sandbox.runner.Execution` it returns) and ``spec``; never ``mleaudit.audit``
or ``mleaudit.grading``. A new container option goes in ``DockerRunner.container_config`` (and,
when it is a limit, in ``ENFORCEMENT`` and ``isolation_record``); a new call to the daemon goes
in ``daemon``.
"""

from __future__ import annotations

from mleaudit.sandbox.docker.backend import DockerRunner
from mleaudit.sandbox.docker.config import DEFAULT_SHM_BYTES, ENFORCEMENT, NOFILE_LIMIT, device_requests
from mleaudit.sandbox.docker.daemon import DAEMON_REMEDIES, DEFAULT_IMAGE, GPU_REMEDIES, IMAGE_REMEDIES, docker_client

__all__ = [
    "DockerRunner",
    "docker_client",
    "device_requests",
    "DEFAULT_IMAGE",
    "NOFILE_LIMIT",
    "DEFAULT_SHM_BYTES",
    "ENFORCEMENT",
    "IMAGE_REMEDIES",
    "DAEMON_REMEDIES",
    "GPU_REMEDIES",
]
