"""How many worker processes a command starts: the one meaning of ``-j``/``--jobs`` everywhere.

``-j N`` starts N worker processes; ``-j 0`` one per CPU this process may run on
(:func:`usable_cpus`); without ``-j``, one per CPU the machine's load leaves idle
(:func:`idle_cpus`), so a command never crowds out what already runs on a shared machine.
"""

from __future__ import annotations

import os

__all__ = ["idle_cpus", "resolve_jobs", "usable_cpus"]


def usable_cpus() -> int:
    """The number of CPUs this process may run on (its affinity mask; at least 1)."""
    return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1))


def idle_cpus() -> int:
    """The CPUs this process may run on, less the machine's one-minute load average, rounded.

    A busy machine gets one process; an idle one gets every CPU.

    Returns
    -------
    int
        Between 1 and :func:`usable_cpus`; 1 where the platform reports no load average.

    Examples
    --------
    >>> 1 <= idle_cpus() <= usable_cpus()
    True
    """
    cpus = usable_cpus()
    try:
        load = os.getloadavg()[0]
    except (AttributeError, OSError):  # no load average on this platform
        return 1
    return max(1, min(cpus, int(cpus - load + 0.5)))


def resolve_jobs(jobs: int | None) -> int:
    """Worker processes for a ``-j`` value: ``None`` (not given) idle CPUs, ``0`` every usable CPU, else ``jobs``.

    Raises
    ------
    ValueError
        For a negative value.
    """
    if jobs is None:
        return idle_cpus()
    if jobs < 0:
        raise ValueError(f"-j must be 0 or more, not {jobs}")
    return jobs or usable_cpus()
