"""``read_driver``: whether a notebook is a driver, and the role of each of its code cells."""

from __future__ import annotations

import re
from pathlib import PurePosixPath
from typing import Mapping, Sequence

from mleaudit.audit.driver.custom import _custom_launches
from mleaudit.audit.driver.roles import CellRole, DriverReading
from mleaudit.audit.driver.vocabulary import (
    AGENT_FOLDERS,
    GRADE_SIGNALS,
    MAX_SCANNED_CELL_CHARS,
    RERUN_SIGNALS,
    SETUP_SIGNALS,
    STREAM_SIGNALS,
    VOCABULARY,
    Marker,
)


_COMMENT_LINE = re.compile(r"^[ \t]*#(?![!]).*$", re.MULTILINE)
_CONSTRUCTED = re.compile(
    r"^[ \t]*(\w+)\s*=\s*(?:aide\s*\.\s*)?(?:Experiment|\w*Agent|\w*Runner|\w*Controller|Crew)\s*\(", re.MULTILINE
)
_COMPILED = tuple((marker, re.compile(marker.pattern, re.MULTILINE)) for marker in VOCABULARY)
# Words every marker of the vocabulary contains (a cell without any cannot match one).
_PREFILTER = re.compile(r"aide|openhands|opendevin|MLAgentBench|inspect|agent|Agent|AutoKaggle|multi_agents|"
                        r"framework\.py|smolagents|autogen|crewai|langgraph|run_controller|run\w*\.(?:py|sh)")
#: Names that run the agent when a framework module exports them (``from inspect_ai import eval``).
_RUN_NAMES = frozenset({"eval", "eval_set", "eval_async", "eval_retry", "run", "main", "run_controller", "run_agent",
                        "run_experiment", "Experiment", "solve"})
_FRAMEWORK_IMPORT = re.compile(
    r"^[ \t]*from\s+(?:aide|openhands|opendevin|MLAgentBench|inspect_ai|smolagents|autogen|crewai|langgraph|multi_agents)"
    r"(?:\.\w+)*\s+import\s+\(?([\w \t,\n]+)", re.MULTILINE)


def _compile(table: tuple[tuple[str, str], ...]) -> tuple[tuple[str, re.Pattern[str]], ...]:
    return tuple((name, re.compile(pattern, re.MULTILINE)) for name, pattern in table)


_SETUP = _compile(SETUP_SIGNALS)
_GRADE = _compile(GRADE_SIGNALS)
_STREAM = _compile(STREAM_SIGNALS)
_RERUN = _compile(RERUN_SIGNALS)


def _without_comments(source: str) -> str:
    return _COMMENT_LINE.sub("", source) if "#" in source else source


def _run_aliases(names: str) -> list[str]:
    """Local names of the run functions in an import list (``eval as run_eval`` gives ``run_eval``)."""
    found = []
    for item in names.replace("\n", " ").split(","):
        words = item.split()
        if words and words[0] in _RUN_NAMES:
            found.append(words[2] if len(words) == 3 and words[1] == "as" else words[0])
    return found


def _matches(table, source: str) -> list[str]:
    return [name for name, pattern in table if pattern.search(source)]


def read_driver(path: str, cells: Sequence[tuple[int, str]], outputs: Mapping[int, str] | None = None
                ) -> DriverReading:
    """Decide whether a notebook is a driver and give each code cell its role.

    Parameters
    ----------
    path : str
        The notebook's path relative to the run root (notebooks in :data:`AGENT_FOLDERS` are
        never drivers).
    cells : sequence of (int, str)
        ``(cell index, source)`` of each code cell, in order (:func:`mleaudit.audit.notebooks.cell_sources`).
    outputs : mapping of int to str, optional
        The printed text of each code cell's outputs, by cell index (a launch of a framework
        the vocabulary does not name is told by an agent's log in its output).

    Returns
    -------
    DriverReading
        ``driver=False`` with every cell ``agent`` unless the heuristic of the module
        docstring finds a driver.

    Examples
    --------
    >>> cells = [(0, "!git clone https://example.org/aide && pip install -e aide"),
    ...          (1, "import aide"), (2, "exp = aide.Experiment(data_dir='in', goal='g')\\nexp.run(steps=3)"),
    ...          (3, "grade(read_answers())")]
    >>> reading = read_driver("driver.ipynb", cells)
    >>> reading.driver, [reading.role(i).value for i in range(4)]
    (True, ['setup', 'setup', 'run', 'post'])
    >>> read_driver("code/driver.ipynb", cells).driver
    False
    """
    if "/" in path.strip("/"):
        # Harness notebooks are the run itself or sit at its root; a notebook in any folder of
        # the run is something the agent could have written, and is judged as the agent's.
        return DriverReading(driver=False, reason="not at the run root: read as the agent's notebook")
    # A launch is a short cell; scanning only a cell's head keeps hostile cells linear.
    cells = [(index, source[:MAX_SCANNED_CELL_CHARS]) for index, source in cells]
    markers: list[tuple[int, Marker]] = []
    for index, source in cells:
        if not _PREFILTER.search(source):
            continue
        source = _without_comments(source)
        for marker, pattern in _COMPILED:
            if pattern.search(source):
                markers.append((index, marker))
    texts = [(index, _without_comments(source)) for index, source in cells]
    if not any(m.strong or m.runs for _, m in markers):
        markers.extend(_custom_launches(texts, outputs or {}))
        markers.sort(key=lambda item: item[0])
    if not markers:
        return DriverReading(driver=False, reason="no agent-framework call in its code cells")
    top = PurePosixPath(path).parts[0] if len(PurePosixPath(path).parts) > 1 else ""
    if top in AGENT_FOLDERS:
        return DriverReading(driver=False, markers=tuple((i, m.what) for i, m in markers),
                             reason=f"calls an agent framework but lies in {top}/, the agent's folder: read as the "
                                    "agent's notebook")
    strong = [(i, m) for i, m in markers if m.strong]
    setup_at: int | None = None
    for index, source in texts:
        if _matches(_SETUP, source):
            setup_at = index
            break
    weak_ok = [(i, m) for i, m in markers if not m.strong and setup_at is not None and setup_at <= i]
    if not strong and not weak_ok:
        return DriverReading(driver=False, markers=tuple((i, m.what) for i, m in markers),
                             reason="only generic agent calls and no operator setup before them: read as the "
                                    "agent's notebook")
    counted = sorted(strong + weak_ok, key=lambda item: item[0])
    # Variables bound to a framework object: `exp.run(` runs it.
    constructed = {m.group(1) for _, source in texts for m in _CONSTRUCTED.finditer(source)}
    object_run = (re.compile(r"\b(?:" + "|".join(re.escape(n) for n in sorted(constructed)) + r")\s*\.\s*run\w*\s*\(")
                  if constructed else None)
    run_cells = {i for i, m in counted if m.runs}
    imported = {alias for _, source in texts for names in _FRAMEWORK_IMPORT.findall(source)
                for alias in _run_aliases(names)}
    if imported:
        name_run = re.compile(r"(?<![\w.])(?:" + "|".join(re.escape(n) for n in sorted(imported)) + r")\s*\(")
        run_cells.update(i for i, source in texts if name_run.search(source))
    if object_run is not None:
        first_marker = counted[0][0]
        run_cells.update(i for i, source in texts if i >= first_marker and object_run.search(source))
    if not run_cells:
        # A framework imported or named but never launched: nothing tells where the run is.
        return DriverReading(driver=False, markers=tuple((i, m.what) for i, m in counted),
                             reason="names an agent framework but never launches it: read as the agent's notebook")
    first_run = min(run_cells)
    roles: dict[int, CellRole] = {}
    for index, source in texts:
        if index < first_run:
            roles[index] = CellRole.SETUP
        elif index in run_cells:
            roles[index] = CellRole.RUN
        elif _matches(_RERUN, source):
            # Solution code run again after the agent (even next to grading words) is judged.
            roles[index] = CellRole.RERUN
        elif _matches(_GRADE, source):
            roles[index] = CellRole.POST
        elif _matches(_STREAM, source):
            roles[index] = CellRole.STREAM
        else:
            # Nothing says the operator wrote it: judged like the agent's code.
            roles[index] = CellRole.RERUN
    frameworks = tuple(dict.fromkeys(m.framework for _, m in counted))
    shown = tuple(sorted(i for i, r in roles.items() if r in (CellRole.RUN, CellRole.STREAM)))
    return DriverReading(driver=True, frameworks=frameworks, markers=tuple((i, m.what) for i, m in counted),
                         run_cells=shown, roles=roles,
                         reason=f"calls {', '.join(frameworks)} from cell {first_run}")
