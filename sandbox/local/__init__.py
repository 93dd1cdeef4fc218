"""The local backend: the agent runs on this machine inside bubblewrap.

The sandbox gets new mount, PID, network, IPC, UTS and cgroup namespaces: only loopback exists,
the host's processes are invisible, and the file system is a fresh tmpfs root holding
read-only binds of the system folders (``/usr``, ``/etc``, ``/opt``, the ``/bin``/``/lib`` links;
the host's, or those of a root file system given as ``rootfs``), a private ``/tmp``,
``/var/tmp`` and ``/dev/shm``, a new ``/proc`` and a minimal ``/dev``, plus the plan's binds
(public data and agent files read-only; the three output folders, the validation socket and
helper) and any extra read-only folders (a virtual environment). Nothing else of the host is
visible, in particular neither the data dir's ``private/`` folders nor any home directory.

The agent never runs as root. A non-root caller gets bubblewrap's ``--unshare-all`` (a user
namespace too) and keeps its own uid. A root caller cannot rely on a user namespace for that
(a uid-0 owner bypasses the process-count limit), so bubblewrap sets up the namespaces without
one and ``setpriv`` then switches to an unprivileged uid with no capabilities and
``no_new_privs``: the spec's ``user`` when given, otherwise a uid/gid chosen at random for the
run in :data:`~mleaudit.sandbox.run_user.RUN_UID_RANGE` (see :mod:`mleaudit.sandbox.run_user`). The kernel keeps
state per uid that no namespace of a root caller's sandbox separates (the user keyrings, the
key quota, the ``RLIMIT_NPROC`` count); a uid shared by every run, as 65534 once was, let one
run leave data there for a later one. A fresh uid per run cannot reach what an earlier run
left, and after the run its user keyrings are emptied and invalidated
(:func:`~mleaudit.sandbox.run_user.clear_user_keys`). Each sandbox also starts in a new, empty session
keyring, so that it neither reads nor writes the caller's (a caller started by a login or a
service manager has one, and every run would inherit it).
A non-root caller's sandbox has its own user keyrings already: since Linux 5.3 they belong to
the user namespace. There is no seccomp filter: the key system calls stay available inside,
with nothing of an earlier run's to find.

Limits hold for the whole sandbox where the host allows a per-run control group
(:class:`mleaudit.sandbox.cgroups.RunCgroup`, v2 or v1): memory (tmpfs pages included, no swap),
processes and CPU bandwidth; bubblewrap joins the cgroup before it executes, and the OOM kills
and refused forks counted there are reported in ``Execution.limits_hit``. Without a cgroup the
limits fall back to rlimits inherited by every process: ``RLIMIT_AS`` (memory, per process),
``RLIMIT_NPROC`` (processes of the sandbox user) and a CPU affinity of ``ceil(cpus)`` cores
(advisory); their hits are seen only by the agent. ``run.json`` records which enforcement was
in force for each limit (``isolation.enforcement``). Every tmpfs has a size (``--size``): the
memory limit for ``/tmp``, ``/var/tmp`` and (without a ``shm`` limit) ``/dev/shm``.
``RLIMIT_CORE`` is 0 always. A memory or process limit not given is that of
:data:`mleaudit.sandbox.spec.DEFAULT_LIMITS`; a time limit not given means none (the CLI resolves it with
:meth:`mleaudit.sandbox.spec.SandboxSpec.with_defaults`).

Stopping (the time limit, or the plan's :class:`~mleaudit.sandbox.runner.StopSignal`): SIGTERM to every
process of the agent, the spec's ``stop_grace_s`` to finish (write the submission), then
SIGKILL to all of them; bubblewrap's ``--die-with-parent`` and the PID namespace take down
anything left. The agent's stdout and stderr go to ``run.log`` through a
:class:`~mleaudit.sandbox.logsink.CappedLog`.

Before the agent, :meth:`BubblewrapRunner.preflight` starts ``true`` with the same arguments and
limits, so that a host where bubblewrap cannot create its namespaces is reported as such
(:class:`~mleaudit.sandbox.errors.SandboxUnavailable` with the remedies) instead of as an agent that
failed.

:class:`UnsafeLocalRunner` runs the command with the same limits but no isolation at all; it
exists only behind the CLI's explicit ``--unsafe-no-sandbox``.

Routine Listings
----------------
host
    :func:`find_bwrap` and :func:`namespace_remedies`: bubblewrap on this host.
limits
    ``Limits`` and ``setup_limits``: the per-run cgroup, or the rlimits that stand in for it,
    and the ``preexec_fn`` that applies them.
process
    ``run_supervised``, ``report_limits`` and ``exit_status``: the sandbox's process run to its
    end, its time limit or its stop, output into ``run.log``.
gpus
    ``gpu_bind_args``: the NVIDIA devices bound in for the spec's GPU request.
bubblewrap
    :class:`BubblewrapRunner` (bubblewrap's argv, the pre-flight sandbox, the run) and
    :func:`bwrap_works`.
unsafe
    :class:`UnsafeLocalRunner`.

Notes
-----
The names above are re-exported here, so callers import from ``mleaudit.sandbox.local``.
Imports point down the listing: a module imports only modules listed before it, plus
``mleaudit.sandbox.cgroups``, ``errors``, ``logsink``, ``run_user``, ``runner`` (the plan and the
:class:`~mleaudit.sandbox.runner.Execution` it returns) and ``spec``; never ``mleaudit.audit`` or
``mleaudit.grading``. A new bubblewrap option goes in ``BubblewrapRunner.build_args`` (the
pre-flight sandbox gets it too); a new limit goes in ``setup_limits`` with its enforcement
recorded, and its hit in ``report_limits``.
"""

from __future__ import annotations

from mleaudit.sandbox.local.bubblewrap import BWRAP_PROCESSES, MASK_TMPFS_BYTES, NOBODY, BubblewrapRunner, bwrap_works
from mleaudit.sandbox.local.host import find_bwrap, namespace_remedies
from mleaudit.sandbox.local.unsafe import UnsafeLocalRunner

__all__ = [
    "BubblewrapRunner",
    "UnsafeLocalRunner",
    "find_bwrap",
    "bwrap_works",
    "namespace_remedies",
    "NOBODY",
    "BWRAP_PROCESSES",
    "MASK_TMPFS_BYTES",
]
