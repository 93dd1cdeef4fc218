"""The agent-facing paths every backend provides, and the limits in force when none is given."""

from __future__ import annotations

import os
from types import MappingProxyType

from mleaudit.sandbox.logsink import DEFAULT_LOG_BYTES
from mleaudit.sandbox.watchdog import DEFAULT_DISK_BYTES

#: The agent-facing paths every backend provides (MLE-bench's container layout).
AGENT_PATHS = MappingProxyType(
    {
        "data": "/home/data",
        "submission": "/home/submission",
        "logs": "/home/logs",
        "code": "/home/code",
        "agent": "/home/agent",
        "validate_socket": "/home/validate.sock",
        "validate_helper": "/home/validate_submission.sh",
        "support": "/home/.sandbox",
    }
)

#: Seconds between the SIGTERM that asks the agent to stop (time limit, disk limit) and the
#: SIGKILL that ends it: long enough to write a submission file from a signal handler.
DEFAULT_STOP_GRACE_S = 30.0
#: Wall-clock limit of a run when none is given, in seconds: MLE-bench gives an agent 24 hours
#: per competition (Chan et al. 2024, "MLE-bench", sec. 2.2).
DEFAULT_TIME_LIMIT_S = 24 * 3600.0
#: Share of the host's physical memory an agent may use when no memory limit is given: the
#: rest is left to the host (the orchestrator, the validation endpoint, the page cache).
DEFAULT_MEMORY_FRACTION = 0.75

#: The limits in force when none is given (``mleaudit run`` with no flag, a spec without the
#: key), as :meth:`Resources.with_defaults` and :meth:`SandboxSpec.with_defaults` resolve them:
#:
#: - ``time_limit_s``: 24 hours, MLE-bench's limit per competition run (Chan et al. 2024, sec. 2.2);
#: - ``memory_fraction``: :data:`DEFAULT_MEMORY_FRACTION` of the host's physical memory
#:   (:func:`default_memory_bytes`);
#: - ``pids``: 4096 processes and threads (docker's ``--pids-limit`` has no default; 4096 is far
#:   above what a training job with data-loader workers starts, and far below a host's limit);
#: - ``disk_bytes``: :data:`mleaudit.sandbox.watchdog.DEFAULT_DISK_BYTES` for the output folders;
#: - ``log_bytes``: :data:`mleaudit.sandbox.logsink.DEFAULT_LOG_BYTES` for ``run.log``;
#: - ``cpus``: ``None``, every core of the host;
#: - ``stop_grace_s``: :data:`DEFAULT_STOP_GRACE_S`.
DEFAULT_LIMITS = MappingProxyType(
    {
        "time_limit_s": DEFAULT_TIME_LIMIT_S,
        "memory_fraction": DEFAULT_MEMORY_FRACTION,
        "pids": 4096,
        "disk_bytes": DEFAULT_DISK_BYTES,
        "log_bytes": DEFAULT_LOG_BYTES,
        "cpus": None,
        "stop_grace_s": DEFAULT_STOP_GRACE_S,
    }
)


#: Smallest memory limit accepted: below it not even the sandbox's own first processes start, and
#: the failure would look like a broken sandbox (``--memory 4`` meant as 4 GiB, say).
MIN_MEMORY_BYTES = 32 * 1024**2


def default_memory_bytes() -> int:
    """The default memory limit: ``DEFAULT_LIMITS["memory_fraction"]`` of the host's physical memory.

    Returns
    -------
    int
        Bytes (physical pages times the page size, from :func:`os.sysconf`), rounded down to
        a MiB; 4 GiB when the host does not say.
    """
    try:
        total = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError):
        total = 0
    if total <= 0:
        return 4 * 1024**3
    share = int(total * DEFAULT_LIMITS["memory_fraction"])
    return max(share - share % (1024**2), 1024**2)
