"""The workspace as the benchmark gave it: the snapshots MLAgentBench saves before the agent writes."""

from __future__ import annotations

import re

from mleaudit.audit.logs.jsonregions import load_json

__all__ = ["SNAPSHOT", "untouched_snapshots"]

#: The high-level actions that leave the workspace's scripts as they were (MLAgentBench's
#: ``ResearchAgent`` tools; the research log is not a script). Any other action, and a step
#: whose action cannot be read, may have changed them.
_READ_ONLY_ACTIONS = frozenset({
    "List Files", "Read File", "Understand File", "Inspect Script Lines", "Reflection", "Final Answer",
    "Append Summary to Research Log", "Retrieval from Research Log",
})
#: A workspace snapshot the environment saves after each step: its root (the trace's folder),
#: the step number and the file's path in the workspace.
SNAPSHOT = re.compile(r"^(?P<root>(?:logs/(?:[^/]+/)+)?env_log/)traces/step_(?P<step>\d{1,9})_files/(?P<file>.+)$")


def untouched_snapshots(trace_text: str) -> int:
    """How many of the first workspace snapshots show the workspace's scripts as the benchmark gave them.

    The environment saves the workspace after each step (``env_log/traces/step_N_files/``, N
    from 0, after the step's action). While every action so far left the scripts as they were
    (:data:`_READ_ONLY_ACTIONS`: listing, reading, inspecting, reflecting), the snapshot holds
    the task's starter files, the same for every run of the task.

    Parameters
    ----------
    trace_text : str
        ``env_log/trace.json`` (untrusted; parsed up to where it breaks).

    Returns
    -------
    int
        The number of leading steps whose action is read-only: snapshots ``0`` to this number
        minus one hold the starter files. ``0`` when the first action may have written, or the
        trace has no readable ``steps``.

    Examples
    --------
    >>> untouched_snapshots('{"steps": [{"action": {"name": "List Files"}}, {"action": {"name": "Edit Script (AI)"}}]}')
    1
    >>> untouched_snapshots('{"steps": [{"action": {"name": "Execute Script"}}]}')
    0
    """
    value, _ = load_json(trace_text)
    steps = value.get("steps") if isinstance(value, dict) else None
    count = 0
    for step in steps if isinstance(steps, list) else ():
        action = step.get("action") if isinstance(step, dict) else None
        name = action.get("name") if isinstance(action, dict) else None
        if not isinstance(name, str) or " ".join(name.split()) not in _READ_ONLY_ACTIONS:
            break
        count += 1
    return count
