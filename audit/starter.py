"""Starter code: the scripts a benchmark gave the agent before the agent acted.

Every run of a task starts from the same files (MLAgentBench's ``train.py`` to fill in, the
baseline implementation an AIDE task prompt shows), so runs that share them copied nothing from
one another. A batch's run-to-run copy clusters therefore leave out the starter code that at
least two of its runs declare (:mod:`mleaudit.audit.clusters`): a unit whose text is that code is
not compared, and its fingerprints are boilerplate (copydetect's term: they never count as a
match). The run reports keep comparing every unit with the public notebooks: what a run declares
as its starter is read from files an agent may write, so it never clears the run's own code,
and the rules judge every unit.

Declared starters (never under a folder the agent writes: ``code/``, ``working/``,
``workspace/``, ``submission/``, nor under ``logs/``, which an MLE-bench agent writes too):

- MLAgentBench's workspace snapshots taken while every action so far only read
  (:func:`mleaudit.audit.logs.mlagentbench.untouched_snapshots`);
- the Python blocks of a run's transcript before the agent's first response, when the run has
  one transcript (a log with both prompts and responses, such as AIDE's ``history.txt``): later
  prompts repeat the agent's own code, and with several call logs nothing tells which came first.
"""

from __future__ import annotations

from typing import Callable, Iterable

from mleaudit.audit.logs.mlagentbench.snapshots import SNAPSHOT, untouched_snapshots
from mleaudit.audit.run import RunLayout, in_agent_folder
from mleaudit.audit.units import CodeUnit, LogEvent, LogEventKind

__all__ = ["starter_units"]


def starter_units(units: Iterable[CodeUnit], text_of: Callable[[str], str | None] | None,
                  events: Iterable[LogEvent] = ()) -> tuple[CodeUnit, ...]:
    """The starter code of one run, each text once.

    Parameters
    ----------
    units : iterable of CodeUnit
        The run's code units.
    text_of : callable or None
        The decoded text of a run file by its run-relative path, or ``None`` when the run has no
        such file (the environment's trace is read through it); ``None``: no snapshot is starter.
    events : iterable of LogEvent
        The run's log events (its transcript's first prompt).

    Returns
    -------
    tuple of CodeUnit
        Python files of a workspace snapshot whose trace says no action before it wrote (in the
        order of ``units``), then the Python blocks of the first prompt of the run's only
        transcript (as units of that log, ``source="log"``); none under a folder the agent
        writes; empty when the run records neither. What a run declares is not proof: see the
        module docstring for how it is used.
    """
    picked: list[CodeUnit] = []
    seen: set[str] = set()

    def keep(unit: CodeUnit) -> None:
        if unit.text.strip() and unit.text not in seen:
            seen.add(unit.text)
            picked.append(unit)

    untouched: dict[str, int] = {}
    for unit in units:
        found = (SNAPSHOT.match(unit.path) if unit.source == "file" and unit.language == "python"
                 and not _agent_may_write(unit.path) else None)
        if found is None or text_of is None:
            continue
        root = found.group("root")
        if root not in untouched:
            trace = text_of(f"{root}trace.json")
            untouched[root] = untouched_snapshots(trace) if trace is not None else 0
        if int(found.group("step")) < untouched[root]:
            keep(unit)
    for event in _first_prompt_code(events):
        keep(CodeUnit(path=event.span.path, language="python", text=event.text, origin=event.span, source="log",
                      actor=event.actor))
    return tuple(picked)


def _first_prompt_code(events: Iterable[LogEvent]) -> list[LogEvent]:
    """The Python blocks before the first response of the run's only transcript (see the module docstring)."""
    by_path: dict[str, list[LogEvent]] = {}
    for event in events:
        if not _agent_may_write(event.span.path):
            by_path.setdefault(event.span.path, []).append(event)
    transcripts = [listed for listed in by_path.values()
                   if any(e.role == "assistant" for e in listed) and any(e.role in _PROMPT_ROLES for e in listed)]
    if len(transcripts) != 1:
        return []
    code = []
    for event in sorted(transcripts[0], key=lambda e: e.index):
        if event.role == "assistant":
            break
        if event.role in _PROMPT_ROLES and event.kind is LogEventKind.CODE and event.language == "python":
            code.append(event)
    return code


#: The roles of a prompt's parts (the scaffold's system and user messages).
_PROMPT_ROLES = frozenset({"system", "user"})


def _agent_may_write(path: str) -> bool:
    """Whether the agent may have written ``path``: under its folders or under ``logs/``."""
    return in_agent_folder(path) or path.startswith(f"{RunLayout.LOGS_DIR}/")
