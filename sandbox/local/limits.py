"""The limits of one local run: a per-run cgroup where the host allows one, rlimits otherwise.

:func:`setup_limits` resolves the spec's limits (the defaults of
:data:`mleaudit.sandbox.spec.DEFAULT_LIMITS` where not given), creates the run's
:class:`~mleaudit.sandbox.cgroups.RunCgroup` and builds the ``preexec_fn`` that joins it and sets
the rlimits that stand in for each controller the cgroup lacks; :class:`Limits` records which
mechanism enforces each limit.
"""

from __future__ import annotations

import math
import os
import resource
from dataclasses import dataclass, field
from typing import Any, Callable

from mleaudit.sandbox.cgroups import RunCgroup
from mleaudit.sandbox.spec import DEFAULT_LIMITS, SandboxSpec, default_memory_bytes


@dataclass
class Limits:
    """The limits of one run as enforced: values, the cgroup (if any), rlimits, and what enforces each."""

    memory_bytes: int
    pids: int
    cpus: float | None
    tmpfs_bytes: int
    shm_bytes: int
    cgroup: RunCgroup | None
    rlimits: dict[str, Any]
    enforcement: dict[str, str]
    preexec: Callable[[], None]
    notes: list[str] = field(default_factory=list)

    def record(self) -> dict[str, Any]:
        """The ``isolation`` entries of ``run.json`` for these limits."""
        record: dict[str, Any] = {
            "enforcement": dict(self.enforcement),
            "limits": {"memory_bytes": self.memory_bytes, "pids": self.pids, "cpus": self.cpus,
                       "tmpfs_bytes": self.tmpfs_bytes, "shm_bytes": self.shm_bytes},  # fmt: skip
            "rlimits": dict(self.rlimits),
        }
        if self.cgroup is not None:
            record["cgroup"] = dict(self.cgroup.describe())
        if self.notes:
            record["enforcement_notes"] = list(self.notes)
        return record

    def release(self) -> None:
        if self.cgroup is not None:
            self.cgroup.remove()


def setup_limits(spec: SandboxSpec, name: str, *, use_cgroup: bool, cgroup_extra_procs: int = 0,
                 rlimit_extra_procs: int = 0, in_sandbox: bool = True) -> Limits:  # fmt: skip
    """Resolve the spec's limits (defaults where not given), create the run cgroup, build the ``preexec_fn``.

    Parameters
    ----------
    spec : SandboxSpec
        Its ``resources``.
    name : str
        Names the cgroup (the run id).
    use_cgroup : bool
        Try a per-run cgroup; the rlimits stand in for each limit whose controller is missing.
    cgroup_extra_procs, rlimit_extra_procs : int
        Processes the tool itself runs besides the agent, added to the process limit: those in
        the cgroup, and those running as the sandbox user (RLIMIT_NPROC counts per user).
    in_sandbox : bool
        Whether the tmpfs sizes apply (bubblewrap) or not (no sandbox).
    """
    res = spec.resources
    memory = res.memory_bytes if res.memory_bytes is not None else default_memory_bytes()
    pids = res.pids if res.pids is not None else int(DEFAULT_LIMITS["pids"])
    cpus = res.cpus
    cgroup = RunCgroup.create(name, memory_bytes=memory, pids=pids + cgroup_extra_procs, cpus=cpus) if use_cgroup else None
    in_cgroup = cgroup.controllers if cgroup is not None else frozenset()
    enforcement: dict[str, str] = {}
    rlimits: dict[str, Any] = {"core": 0}
    notes: list[str] = []
    affinity: list[int] | None = None
    if "memory" in in_cgroup:
        enforcement["memory"] = cgroup.enforcement  # type: ignore[union-attr]
        address_space = None
    else:
        enforcement["memory"] = "rlimit (per process)"
        address_space = memory
        rlimits["address_space_bytes"] = memory
        notes.append("memory: RLIMIT_AS bounds each process, not the sandbox; an allocation past it fails "
                     "inside the agent (MemoryError, ENOMEM) and is not visible to the host")  # fmt: skip
    if "pids" in in_cgroup:
        enforcement["pids"] = cgroup.enforcement  # type: ignore[union-attr]
        nproc = None
    else:
        enforcement["pids"] = "rlimit (per user)"
        nproc = pids + rlimit_extra_procs
        rlimits["processes"] = nproc
        notes.append("pids: RLIMIT_NPROC counts every process of the sandbox user on the host; a refused fork "
                     "fails inside the agent (EAGAIN) and is not visible to the host")  # fmt: skip
    if cpus is None:
        enforcement["cpu"] = "none (all cores)"
    elif "cpu" in in_cgroup:
        enforcement["cpu"] = cgroup.enforcement  # type: ignore[union-attr]
    else:
        available = sorted(os.sched_getaffinity(0))
        affinity = available[: max(1, min(len(available), math.ceil(cpus)))]
        rlimits["cpu_affinity"] = affinity
        enforcement["cpu"] = "cpu affinity (advisory)"
    enforcement["tmpfs"] = "bwrap --size" if in_sandbox else "none (no sandbox)"
    enforcement["time"] = "host timer"
    join = cgroup.join_fn() if cgroup is not None else None

    def apply() -> None:  # runs in the child between fork and exec: no logging, no allocation-heavy work
        if join is not None:
            join()
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        if address_space is not None:
            resource.setrlimit(resource.RLIMIT_AS, (address_space, address_space))
        if nproc is not None:
            resource.setrlimit(resource.RLIMIT_NPROC, (nproc, nproc))
        if affinity is not None:
            os.sched_setaffinity(0, affinity)

    return Limits(memory_bytes=memory, pids=pids, cpus=cpus, tmpfs_bytes=memory,
                   shm_bytes=res.shm_bytes if res.shm_bytes is not None else memory, cgroup=cgroup,
                   rlimits=rlimits, enforcement=enforcement, preexec=apply, notes=notes)  # fmt: skip
