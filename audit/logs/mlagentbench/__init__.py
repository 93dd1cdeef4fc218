"""MLAgentBench log folders (ResearchAgent): the agent's transcript, its LLM calls, the environment's trace.

An MLAgentBench run writes, under its log folder (paths relative to the run root):

``agent_log/main_log`` (no extension)
    The agent's whole transcript: the scaffold's prompt (tool descriptions, research problem,
    instructions) up to ``Step 0:``, then per step the agent's response (``Reflection``,
    ``Research Plan and Status``, ``Fact Check``, ``Thought``, ``Action``, ``Action Input``)
    and the environment's ``Observation``.
``agent_log/step_N_log.log``
    The agent's own LLM call of step N: the prompt the scaffold built and the agent's response.
``agent_log/step_N_summary_log.log``, ``agent_log/step_N_summarize_observation_log.log_K``,
``env_log/tool_logs/step_N_tool_log.log[_K]``
    The scaffold's helper LLM calls (summaries, Understand File, Edit Script (AI) ...).
``agent_log/agent_<i>_<j>.json``
    The scaffold's saved state: ``args``, tool descriptions, prompts and ``history_steps``.
``env_log/trace.json``
    The environment's record: ``steps`` (the high-level actions with their arguments and
    observations) and ``low_level_steps`` (the primitive actions it ran for them).
``log`` (at the top, no extension)
    The scaffold's standard output: its ``Namespace(...)`` arguments, a banner, the output of
    the scripts it executed and the agent responses it discarded.
``env_log/overall_time.txt``
    The run's duration.

Who wrote what (:class:`~mleaudit.audit.units.Actor`):

- prompts, tool descriptions, configuration, summaries and the helper LLMs' answers: the
  **scaffold** (MESSAGE events);
- the agent's responses (MESSAGE), its actions (TOOL_CALL events whose text names the tool and
  its arguments), what the environment returned for them (OUTPUT), and every fenced code block
  of the LLM call logs (CODE: the Edit Script (AI) tool writes the agent's solution code): the
  **agent**. ``Execute Script`` also gives a COMMAND ``python <script>`` and ``Python REPL`` a
  CODE event, as the environment runs them; ``Write File``/``Append File`` of a ``.py`` or
  ``.sh`` file give a CODE event of the content;
- the research-log bookkeeping the scaffold does on its own after each step (``Append Summary
  to Research Log``, ``Retrieval from Research Log``) and the primitive actions the environment
  runs for a high-level tool (``low_level_steps``): the **scaffold**, except the code a
  primitive ``Write File`` writes, which is the agent's.

The JSON state and trace are never read as code: their prompts are messages. The logs were
made on Windows at times: a script name written with backslashes (``scripts\\train.py``) is run
as ``python scripts/train.py``. Detection is by path pattern and content together, so a file of
another format that happens to share a name is left to the other readers.

Routine Listings
----------------
events
    :class:`Events`: the events of one file, numbered in file order (free text, JSON values).
actions
    What an action's input asks for: :func:`parse_input` (lenient JSON) and :func:`derived`
    (the command ``Execute Script`` runs, the code ``Python REPL`` runs or ``Write File`` writes).
transcript
    ``agent_log/main_log`` step by step, and the LLM call logs.
state
    The JSON state (``agent_*.json``) and the environment's ``env_log/trace.json``.
stdout
    The scaffold's standard output (``log``).
snapshots
    :data:`SNAPSHOT` and :func:`untouched_snapshots`: which workspace snapshots hold the starter files.

Notes
-----
This package is the ``mlagentbench`` adapter: :data:`NAME`, :func:`detect` (path and content)
and :func:`read_events`, which hands each kind of file to its reader. Imports point down the
listing above (``events`` and ``actions`` first); the modules import only the shared log
helpers (:mod:`~mleaudit.audit.logs.common`, :mod:`~mleaudit.audit.logs.jsonregions`,
:mod:`~mleaudit.audit.logs.text`, :mod:`~mleaudit.audit.logs.llmcalls`), the event model and
:mod:`mleaudit.grading.untrusted_json`. A new MLAgentBench file gets a path pattern and a kind in
:func:`_kind_of`, a reader module here, and a branch in :func:`read_events`.
"""

from __future__ import annotations

import functools
import re
from pathlib import PurePosixPath
from typing import Any

from mleaudit.audit.logs import llmcalls
from mleaudit.audit.logs.jsonregions import load_json
from mleaudit.audit.logs.mlagentbench.events import Events
from mleaudit.audit.logs.mlagentbench.snapshots import SNAPSHOT, untouched_snapshots
from mleaudit.audit.logs.mlagentbench.state import read_state, read_trace
from mleaudit.audit.logs.mlagentbench.stdout import read_stdout
from mleaudit.audit.logs.mlagentbench.transcript import STEP, read_call_log, read_main_log
from mleaudit.audit.units import Actor, LogEvent, LogEventKind

__all__ = ["NAME", "SNAPSHOT", "detect", "read_events", "untouched_snapshots"]

NAME = "mlagentbench"

#: Where an MLAgentBench log folder may sit: at the run root, or in a folder under the layout's
#: ``logs/`` (a run whose logs were copied there). Never at any depth: a file the agent writes
#: (``code/agent_log/main_log``) must not pass for the scaffold's.
_ROOT = r"^(?:logs/(?:[^/]+/)+)?"
_MAIN_LOG = re.compile(_ROOT + r"agent_log/main_log$")
_AGENT_CALL_LOG = re.compile(_ROOT + r"agent_log/step_\d+_log\.log(?:_\d+)?$")
_SCAFFOLD_CALL_LOG = re.compile(
    _ROOT + r"(?:agent_log/step_\d+_[a-z_]*log\.log(?:_\d+)?|env_log/tool_logs/step_\d+_tool_log\.log(?:_\d+)?)$"
)
_AGENT_STATE = re.compile(_ROOT + r"agent_log/agent_\d+_\d+\.json$")
_TRACE = re.compile(_ROOT + r"env_log/trace\.json$")
#: The scaffold's standard output: ``log`` at the top of the run only.
_STDOUT = re.compile(r"^log$")
#: Folders a run layout gives the agent: nothing under them is the scaffold's log.
_AGENT_FOLDERS = frozenset({"code", "working", "workspace", "submission"})
_OVERALL_TIME = re.compile(_ROOT + r"env_log/overall_time\.txt$")


def _json_object(text: str) -> dict[str, Any] | None:
    if text.lstrip()[:1] != "{":
        return None
    value, _ = load_json(text)
    return value if isinstance(value, dict) else None


@functools.lru_cache(maxsize=8192)
def _in_agent_folder(path: str) -> bool:
    """Whether a folder on ``path`` is one the agent writes (a function of the path: cached)."""
    return any(part in _AGENT_FOLDERS for part in PurePosixPath(path).parts[:-1])


def _kind_of(path: str, text: str) -> str | None:
    """Which MLAgentBench file ``path`` is, when its content agrees; else ``None``."""
    head = text[:200_000]
    if _in_agent_folder(path):
        return None
    if _MAIN_LOG.search(path):
        if STEP.search(head) or "Enabled Tools in Prompt" in head[:2000] or re.search(r"^Action:", head, re.M):
            return "main"
        return None
    if _AGENT_CALL_LOG.search(path) or _SCAFFOLD_CALL_LOG.search(path):
        # a prompt section is a prompt banner (llmcalls.split_sections); the first one tells
        if not any(banner.group("prompt") for banner in llmcalls.banner_matches(head)):
            return None
        return "agent-call" if _AGENT_CALL_LOG.search(path) else "scaffold-call"
    if _AGENT_STATE.search(path):
        state = _json_object(text)
        return "state" if state is not None and {"history_steps", "initial_prompt", "args"} & set(state) else None
    if _TRACE.search(path):
        trace = _json_object(text)
        return "trace" if trace is not None and {"steps", "low_level_steps"} & set(trace) else None
    if _STDOUT.search(path):
        return "stdout" if text.lstrip().startswith("Namespace(") else None
    if _OVERALL_TIME.search(path):
        return "time" if re.fullmatch(r"[\d.\s]+", text) else None
    return None


def detect(path: str, text: str) -> bool:
    """An MLAgentBench file by its path (see the module docstring) whose content agrees."""
    return _kind_of(path, text) is not None


def read_events(path: str, text: str, notes: list[str] | None = None) -> list[LogEvent]:
    """Events of one MLAgentBench file, in file order (see the module docstring).

    Parameters
    ----------
    path : str
        The file's POSIX path relative to the run root (it says which file it is).
    text : str
        The whole file text.
    notes : list of str, optional
        Receives a sentence when a JSON file is cut short (read up to the break).

    Returns
    -------
    list of LogEvent
        Indexed from 0, each with its :class:`~mleaudit.audit.units.Actor`.

    Raises
    ------
    ValueError
        If the file is not an MLAgentBench file this reader knows (the caller then reads it
        as plain text).
    """
    kind = _kind_of(path, text)
    out = Events(text, path)
    if kind == "main":
        read_main_log(out)
    elif kind in ("agent-call", "scaffold-call"):
        read_call_log(out, agent_call=kind == "agent-call")
    elif kind == "state":
        read_state(out, notes)
    elif kind == "trace":
        read_trace(out, notes)
    elif kind == "stdout":
        read_stdout(out)
    elif kind == "time":
        out.add(LogEventKind.MESSAGE, 0, len(text), Actor.SCAFFOLD, role="scaffold")
    else:
        raise ValueError(f"{path}: not an MLAgentBench log")
    return out.events
