"""What to run and under which limits: :class:`SandboxSpec` and the YAML form it is loaded from.

A spec names the agent command, the image (docker) or none (the local bubblewrap backend), the
public data and agent folders, extra mounts, environment, GPUs, resource limits, the network
policy (``none`` unless an allow-list of hosts is given) and the wall-clock time limit. Host
paths listed under ``hide`` (the competition's held-out answers) must never be reachable from
inside the sandbox: a mount whose source lies inside one is refused, and one that contains one
gets the hidden part covered by an empty tmpfs.

YAML form (every key but ``command`` is optional; unknown keys are an error)::

    command: python /home/agent/solve.py      # a string runs under /bin/sh -c; a list is argv
    image: mleaudit/agent:local               # docker backend only
    competition: sklearn-digits
    agent: my-agent
    data: /data/sklearn-digits/prepared/public  # read-only at /home/data
    agent_dir: ./agents/baseline              # read-only at /home/agent
    mounts: [{source: /opt/models, target: /mnt/models, read_only: true}]   # not under /usr, /etc, /opt
    hide: [/data/sklearn-digits/prepared/private]
    env: {OMP_NUM_THREADS: "2"}
    gpus: all                                 # or a count (2) or device ids ["0", "1"]
    resources: {cpus: 2, memory: 4g, shm: 1g, pids: 256, disk: 20g, log: 256m}
    network: none                             # or {allow: ["pypi.org", "*.pythonhosted.org:443"]}
    time_limit: 2h                            # seconds, or a number with s/m/h
    stop_grace: 30s                           # SIGTERM, then this long, then SIGKILL
    user: "1000:1000"
    workdir: /home

Routine Listings
----------------
values
    :func:`parse_size`, :func:`parse_duration` and ``show_value`` (a value quoted in a message,
    cut short).
defaults
    :data:`AGENT_PATHS`, :data:`DEFAULT_LIMITS` (with :data:`DEFAULT_TIME_LIMIT_S`,
    :data:`DEFAULT_STOP_GRACE_S`, ``DEFAULT_MEMORY_FRACTION``, ``MIN_MEMORY_BYTES``) and
    :func:`default_memory_bytes`.
parts
    :class:`Mount`, :class:`GpuRequest`, :class:`Resources`, :class:`NetworkPolicy`.
model
    :class:`SandboxSpec`: its fields, ``from_dict`` (the YAML keys above, every problem listed),
    ``to_dict`` (recorded in ``run.json``), ``with_defaults`` and the checks of ``__post_init__``.
loading
    :func:`load_sandbox_spec` and its bounds on the file (``MAX_SPEC_BYTES``, ``MAX_SPEC_DEPTH``,
    ``MAX_SPEC_NODES``).

Notes
-----
The names above are re-exported here, so callers import from ``mleaudit.sandbox.spec``.
Imports point down the listing: a module imports only modules listed before it, plus
``mleaudit.sandbox.errors``, ``logsink`` and ``watchdog`` (for their default caps);
``loading`` imports ``mleaudit.grading.untrusted_yaml`` inside :func:`load_sandbox_spec`, and
nothing here imports ``mleaudit.audit``. A new key of the YAML form is added to ``model``'s
``_KEYS``, converted in ``SandboxSpec.from_dict``, checked in ``_check_spec`` and written by
``to_dict``; a new resource limit goes in :class:`Resources` (and its default in
:data:`DEFAULT_LIMITS`).
"""

from __future__ import annotations

from mleaudit.sandbox.spec.defaults import (
    AGENT_PATHS,
    DEFAULT_LIMITS,
    DEFAULT_MEMORY_FRACTION,
    DEFAULT_STOP_GRACE_S,
    DEFAULT_TIME_LIMIT_S,
    MIN_MEMORY_BYTES,
    default_memory_bytes,
)
from mleaudit.sandbox.spec.loading import MAX_SPEC_BYTES, MAX_SPEC_DEPTH, MAX_SPEC_NODES, load_sandbox_spec
from mleaudit.sandbox.spec.model import SandboxSpec
from mleaudit.sandbox.spec.parts import GpuRequest, Mount, NetworkPolicy, Resources
from mleaudit.sandbox.spec.values import parse_duration, parse_size

__all__ = [
    "AGENT_PATHS",
    "Mount",
    "GpuRequest",
    "Resources",
    "NetworkPolicy",
    "SandboxSpec",
    "DEFAULT_LIMITS",
    "DEFAULT_STOP_GRACE_S",
    "DEFAULT_TIME_LIMIT_S",
    "default_memory_bytes",
    "parse_size",
    "parse_duration",
    "load_sandbox_spec",
    "DEFAULT_MEMORY_FRACTION",
    "MIN_MEMORY_BYTES",
    "MAX_SPEC_BYTES",
    "MAX_SPEC_DEPTH",
    "MAX_SPEC_NODES",
]
