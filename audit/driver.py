"""Driver notebooks: notebooks that run an agent framework, and who wrote each of their cells.

A *driver* notebook is the operator's harness around an agent run (a Kaggle or Colab notebook
that installs AIDE and calls ``exp.run()``, a notebook that launches MLE-bench's
``run_agent.py``): its code is the operator's, and the outputs of the cell that runs the agent
are the scaffold's printed log, which holds the agent's code and commands. A notebook that runs
no framework is the agent's own work: all its code and outputs are the agent's.

The heuristic, applied to the code cells' source with comment lines left out:

1. **Markers.** :data:`VOCABULARY` lists, per framework, the ways a notebook calls into it:
   imports (``from aide import``), command lines (``!aide data_dir=...``, ``python -m aide``,
   ``python -u -m MLAgentBench.runner``, ``inspect eval``, ``bash run_agent.sh``,
   ``python run_agent.py``), API calls (``aide.Experiment(...)``, ``run_controller(``,
   ``inspect_ai.eval(``). Each entry is *strong* (the name is the framework's own) or *weak*
   (generic words: ``agent.run(``, ``run_agent(``, ``Agent(...).run(``, a subprocess running a
   ``run.py``). Variables assigned from a framework constructor
   (``exp = aide.Experiment(...)``) make ``exp.run(`` a run call too.
2. **Driver.** A notebook is a driver when a strong marker matches, or a weak run call does
   and a cell at or before it holds operator setup (:data:`SETUP_SIGNALS`: cloning a
   repository, ``pip install -e``/``git+``, setting an LLM provider's API key, reading
   Kaggle/Colab secrets, installing or preparing MLE-bench). Only a notebook at the run root
   (or given alone) can be a driver: one in any folder of the run (``code/``, ``logs/``,
   ``notebooks/`` ...) is something the agent could have written, and an agent could otherwise
   dress its own notebook up as a harness to have its code judged as the operator's (the
   agent writes the run's folders: MLE-bench's ``logs/``, ``code/`` and ``submission/``,
   AIDE's ``working/``, MLAgentBench's traces). Only the first
   :data:`MAX_SCANNED_CELL_CHARS` characters of a cell are scanned.
3. **Cells.** The *run* cells are those with a run call (a command line, a constructor or a
   ``.run(`` on one, not a bare import); a notebook that names a framework but never launches
   it is not a driver. Cells before the first run cell are ``setup``; after it, each cell is,
   first match wins: ``run`` (another run call); ``rerun`` (it runs or holds solution code:
   ``.fit(``, ``.predict(``, ``exec(``, ``%run``, a ``.py`` script; :data:`RERUN_SIGNALS`),
   even next to grading words; ``post`` when it grades (``mlebench grade-sample``, a helper
   that locates the answers to score the submission; :data:`GRADE_SIGNALS`); ``stream`` (it
   keeps showing the run: ``tail -f``, ``cat`` of a log, waiting on the run's process, reading
   the journal; :data:`STREAM_SIGNALS`); else ``rerun``: nothing says the operator wrote it.
4. **Actors.** Code of ``setup``, ``run``, ``stream`` and ``post`` cells is the OPERATOR's;
   ``rerun`` code is UNKNOWN (pasted or replayed agent code, so rules judge it). Outputs of
   ``run`` and ``stream`` cells are the SCAFFOLD's, and code or commands found in them are the
   AGENT's; outputs of ``setup`` and ``post`` cells are the OPERATOR's; outputs of ``rerun``
   cells are UNKNOWN. Markdown and raw cells are the operator's.

Everything here reads text with regular expressions; nothing is imported or run.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Mapping, Sequence

from mleaudit.audit.units import Actor

__all__ = [
    "AGENT_FOLDERS",
    "CellRole",
    "DriverReading",
    "Marker",
    "GRADE_SIGNALS",
    "RERUN_SIGNALS",
    "SETUP_SIGNALS",
    "STREAM_SIGNALS",
    "VOCABULARY",
    "read_driver",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class Marker:
    """One way a notebook calls into an agent framework.

    Attributes
    ----------
    framework : str
        The framework's name (``aide``, ``openhands``, ``mlagentbench``, ``inspect``,
        ``mle-bench``, ``generic``).
    pattern : str
        Regular expression (multiline), searched in a code cell without its comment lines.
    strong : bool
        Whether the match alone makes the notebook a driver (the framework's own name);
        a weak marker needs operator setup at or before its cell.
    runs : bool
        Whether the match launches or continues the run (its cell's outputs are the
        scaffold's log); imports and configuration only mark the notebook.
    what : str
        What the pattern stands for, for readers of this table and of reports.
    """

    framework: str
    pattern: str
    strong: bool
    runs: bool
    what: str


# Where a shell command starts: a line (after IPython's `!`), after `;`, `&&`, `|`, or a quote
# opening a command string (`os.system("aide ...")`, `get_ipython().system('aide ...')`).
_COMMAND_START = r"(?:^[ \t]*!?[ \t]*|[;&|][ \t]*|[\"'])"

#: The framework-call vocabulary (see the module docstring). Shell forms match with or without
#: IPython's ``!``/``%`` and inside ``subprocess`` argument lists written as one string.
VOCABULARY: tuple[Marker, ...] = (
    # AIDE (aideml): the Python API and the `aide` console script / module.
    Marker(framework="aide", pattern=r"^[ \t]*(?:from\s+aide(?:\.\w+)*\s+import\b|import\s+aide\b)", strong=True,
           runs=False, what="import of the aide package"),
    Marker(framework="aide", pattern=r"\baide\s*\.\s*Experiment\s*\(", strong=True, runs=True,
           what="aide.Experiment(...)"),
    Marker(framework="aide", pattern=_COMMAND_START + r"(?:python3?\s+(?:-u\s+)?-m\s+aide|aide)\b"
           r"(?=[ \t]+(?:[\w.]+=|--?\w)|[ \t]*$)", strong=True, runs=True,
           what="the aide command line (aide data_dir=... goal=..., python -m aide)"),
    Marker(framework="aide", pattern=r"[\"']aide[\"']\s*,\s*[\"'][\w.]+=", strong=True, runs=True,
           what="aide run through a subprocess argument list"),
    # OpenHands / OpenDevin.
    Marker(framework="openhands", pattern=r"^[ \t]*(?:from\s+(?:openhands|opendevin)(?:\.\w+)*\s+import\b|"
           r"import\s+(?:openhands|opendevin)\b)", strong=True, runs=False, what="import of openhands"),
    Marker(framework="openhands", pattern=r"\brun_controller\s*\(", strong=True, runs=True,
           what="openhands run_controller(...)"),
    Marker(framework="openhands", pattern=r"-m\s+(?:openhands|opendevin)\.core\.main\b|"
           r"\b(?:openhands|opendevin)/core/main\.py\b|all-hands-ai/openhands", strong=True, runs=True,
           what="the openhands main module or docker image"),
    # MLAgentBench.
    Marker(framework="mlagentbench", pattern=r"^[ \t]*(?:from\s+MLAgentBench(?:\.\w+)*\s+import\b|"
           r"import\s+MLAgentBench\b)", strong=True, runs=False, what="import of MLAgentBench"),
    Marker(framework="mlagentbench", pattern=r"-m\s+MLAgentBench\.runner\b|\bMLAgentBench/runner\.py\b",
           strong=True, runs=True, what="python -u -m MLAgentBench.runner"),
    # Inspect (UK AISI).
    Marker(framework="inspect", pattern=_COMMAND_START + r"inspect\s+eval(?:-set|-retry)?\b|"
           r"[\"']inspect[\"']\s*,\s*[\"']eval", strong=True, runs=True, what="the inspect eval command line"),
    Marker(framework="inspect", pattern=r"^[ \t]*(?:from\s+inspect_ai(?:\.\w+)*\s+import\b|import\s+inspect_ai\b)",
           strong=True, runs=False, what="import of inspect_ai"),
    Marker(framework="inspect", pattern=r"\binspect_ai\s*\.\s*eval(?:_set|_async|_retry)?\s*\(", strong=True,
           runs=True, what="inspect_ai.eval(...)"),
    # MLE-bench's agent runner and other scaffolds' entry points.
    Marker(framework="mle-bench", pattern=r"(?:python3?\s+(?:-u\s+)?|bash\s+|sh\s+|source\s+|\./|[\"'])\S{0,200}?"
           r"\brun_agent\.(?:py|sh)\b", strong=True, runs=True,
           what="MLE-bench's run_agent.py / a run_agent.sh launcher"),
    Marker(framework="mle-bench", pattern=r"--agent[-_]id\b", strong=True, runs=True,
           what="an --agent-id option (MLE-bench's agent registry)"),
    Marker(framework="autokaggle", pattern=r"^[ \t]*(?:from\s+multi_agents(?:\.\w+)*\s+import\b)|"
           r"\bAutoKaggle\b.*\bframework\.py\b|(?:python3?\s+)\S*framework\.py\b.*--competition",
           strong=True, runs=True, what="AutoKaggle's framework"),
    Marker(framework="generic", pattern=r"^[ \t]*(?:from\s+(?:smolagents|autogen|crewai|langgraph)(?:\.\w+)*\s+import\b"
           r"|import\s+(?:smolagents|autogen|crewai)\b)", strong=True, runs=False,
           what="import of a general agent framework (smolagents, autogen, crewai, langgraph)"),
    # Generic words: a weak marker needs operator setup at or before its cell.
    Marker(framework="generic", pattern=r"\b\w*agent\w*\s*\.\s*(?:run|solve|execute|start|invoke|kickoff)\w*\s*\(",
           strong=False, runs=True, what="agent.run(...) and the like"),
    Marker(framework="generic", pattern=r"\bAgent\w*\s*\([^()]*(?:\([^()]*\)[^()]*)*\)\s*\.\s*run\w*\s*\(",
           strong=False, runs=True, what="Agent(...).run(...)"),
    Marker(framework="generic", pattern=r"(?<![\w.])run_agent\s*\(", strong=False, runs=True, what="run_agent(...)"),
    Marker(framework="generic", pattern=r"\bsubprocess\s*\.\s*(?:run|Popen|call|check_call|check_output)\s*\("
           r"[^)\n]{0,500}?[\"'][^\"'\n]{0,300}\brun\w*\.(?:py|sh)\b", strong=False, runs=True,
           what="a subprocess running a run*.py / run*.sh launcher"),
    Marker(framework="generic", pattern=r"^[ \t]*!\s*(?:python3?|bash|sh)\s+(?:-u\s+)?\S*\brun\w*\.(?:py|sh)\b",
           strong=False, runs=True, what="!python run.py / !bash run.sh"),
)

#: Operator setup that makes a weak marker count (at or before its cell).
SETUP_SIGNALS: tuple[tuple[str, str], ...] = (
    ("git clone", r"\bgit\s+clone\b"),
    ("editable or git install", r"\bpip3?\s+install\b[^\n]*(?:\s-e\s|\s--editable\b|git\+)"),
    ("LLM API key set", r"(?:environ\s*\[\s*[\"']|environ\.setdefault\s*\(\s*[\"']|putenv\s*\(\s*[\"']|"
                        r"%env\s+|%set_env\s+|\bexport\s+)(?:OPENAI|ANTHROPIC|GEMINI|GOOGLE|OPENROUTER|TOGETHER|"
                        r"MISTRAL|GROQ|COHERE|DEEPSEEK|AZURE_OPENAI|LITELLM)\w*(?:API_KEY|_KEY|TOKEN)\b"),
    ("notebook secrets", r"\bUserSecretsClient\b|\buserdata\s*\.\s*get\s*\("),
    ("MLE-bench setup", r"\bmle-?bench\b"),
)

#: After a run cell: cells that grade or score the result (checked before the others: a grading
#: helper reads a subprocess's stdout or a log too, and is still the operator's post-run step).
GRADE_SIGNALS: tuple[tuple[str, str], ...] = (
    ("mlebench grading", r"\bmle-?bench\b[^\n]*\bgrade|\bgrade[-_]sample\b|\bgrade_csv\b|\bgrade_submission\b"),
    ("a grading helper", r"\bdef\s+\w*(?:grade|score|evaluat|answers?)\w*\s*\(|\b\w*grade\w*\s*\("),
    ("the held-out answers", r"\banswers?\b|\bprivate\b|\bmedal\b|\bleaderboard\b"),
)

#: After a run cell: cells that keep showing the run (their outputs are the scaffold's log).
STREAM_SIGNALS: tuple[tuple[str, str], ...] = (
    ("tail or cat of a log", r"\b(?:tail|cat|head|less)\s+[^\n|;]*(?:\.log|\.out|\.jsonl?|logs?/)"),
    ("tail -f", r"\btail\s+-[fF]\b|\btail\s+--follow\b"),
    ("waiting on the run's process",
     r"\.\s*(?:wait|communicate|poll)\s*\(|\bfor\s+\w+\s+in\s+(?:iter\(|\w+\.stdout\b)"),
    ("a log file read", r"open\s*\([^)\n]{0,300}(?:\.log|log/|logs/|journal)[^)\n]{0,300}\)"),
    ("the journal", r"\bjournal\b"),
)

#: After a run cell: cells that run or hold solution code (judged as UNKNOWN).
RERUN_SIGNALS: tuple[tuple[str, str], ...] = (
    ("model fitting", r"\.\s*fit(?:_transform)?\s*\("),
    ("prediction", r"\.\s*predict(?:_proba)?\s*\("),
    ("exec of code", r"\bexec\s*\("),
    ("%run / runpy", r"^[ \t]*%run\b|\brunpy\s*\."),
    ("a python script run", r"(?:^|[\s!;&|])python3?\s+(?!-m\b|-c\b)\S+\.py\b"),
)

#: Characters of a code cell scanned for framework markers, setup and role signals.
MAX_SCANNED_CELL_CHARS = 20_000

#: First path components of folders the run layout gives to the agent (never drivers).
AGENT_FOLDERS = frozenset({"code", "submission", "working", "workspace", "workspaces"})

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


class CellRole(enum.Enum):
    """What a code cell of a driver notebook does (see the module docstring)."""

    SETUP = "setup"
    RUN = "run"
    STREAM = "stream"
    RERUN = "rerun"
    POST = "post"
    AGENT = "agent"


#: Actor of a cell's code, of its outputs, and of code found in its outputs, per role.
_ACTORS: dict[CellRole, tuple[Actor, Actor, Actor]] = {
    CellRole.SETUP: (Actor.OPERATOR, Actor.OPERATOR, Actor.OPERATOR),
    CellRole.RUN: (Actor.OPERATOR, Actor.SCAFFOLD, Actor.AGENT),
    CellRole.STREAM: (Actor.OPERATOR, Actor.SCAFFOLD, Actor.AGENT),
    CellRole.RERUN: (Actor.UNKNOWN, Actor.UNKNOWN, Actor.UNKNOWN),
    CellRole.POST: (Actor.OPERATOR, Actor.OPERATOR, Actor.UNKNOWN),
    CellRole.AGENT: (Actor.AGENT, Actor.AGENT, Actor.AGENT),
}


@dataclass(frozen=True, slots=True, kw_only=True)
class DriverReading:
    """How a notebook was attributed.

    Attributes
    ----------
    driver : bool
        Whether the notebook is a driver.
    frameworks : tuple of str
        Frameworks whose markers matched (in vocabulary order).
    markers : tuple of (int, str)
        ``(cell index, what)`` of each marker match, in cell order.
    run_cells : tuple of int
        Cells whose outputs are the scaffold's log (``run`` and ``stream`` roles).
    roles : dict of int to CellRole
        Role of each code cell; every cell is ``agent`` in a notebook that is not a driver.
    reason : str
        One sentence saying why (or why not) the notebook is a driver.
    """

    driver: bool
    frameworks: tuple[str, ...] = ()
    markers: tuple[tuple[int, str], ...] = ()
    run_cells: tuple[int, ...] = ()
    roles: dict[int, CellRole] | None = None
    reason: str = ""

    def role(self, cell_index: int) -> CellRole:
        """The role of a cell (``agent`` outside drivers; ``setup`` for a driver's non-code cells)."""
        if self.roles is not None and cell_index in self.roles:
            return self.roles[cell_index]
        return CellRole.SETUP if self.driver else CellRole.AGENT

    def code_actor(self, cell_index: int) -> Actor:
        """Who wrote a cell's code."""
        return _ACTORS[self.role(cell_index)][0]

    def output_actor(self, cell_index: int) -> Actor:
        """Who produced a cell's outputs (and a markdown or raw cell's text)."""
        if self.driver and (self.roles is None or cell_index not in self.roles):
            return Actor.OPERATOR  # markdown and raw cells of a driver
        return _ACTORS[self.role(cell_index)][1]

    def found_code_actor(self, cell_index: int) -> Actor:
        """Who wrote code and commands found in a cell's outputs."""
        if self.driver and (self.roles is None or cell_index not in self.roles):
            return Actor.OPERATOR
        return _ACTORS[self.role(cell_index)][2]

    def describe(self) -> str:
        """One line for reports: ``driver notebook (aide: run cells 5, 6)`` or why not."""
        if not self.driver:
            return self.reason or "not a driver notebook"
        cells = ", ".join(str(c) for c in self.run_cells) or "none found"
        return f"driver notebook ({', '.join(self.frameworks) or 'agent framework'}; run cells {cells})"


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


#: Operator setup that hands the run its credentials: secrets or an API key put in the environment.
_CREDENTIALS = re.compile(
    r"\bUserSecretsClient\b|\buserdata\s*\.\s*get\s*\(|\bget_secret\s*\(|"
    r"(?:environ\s*\[\s*[\"']|environ\.setdefault\s*\(\s*[\"']|putenv\s*\(\s*[\"']|%env\s+|%set_env\s+|"
    r"\bexport\s+)\w*(?:API_KEY|_KEY|_TOKEN|SECRET)\b", re.MULTILINE)
_GIT_CLONE = re.compile(r"\bgit\s+clone\b((?:[ \t]+(?:-{1,2}[\w-]+(?:[ \t=]+\d+)?))*)[ \t]+[\"']?(\S+?)[\"']?"
                        r"(?:[ \t]+(?!&&|\|\||;)([\w./-]+))?[ \t]*(?:$|[;&|\n\"'])", re.MULTILINE)
_PIP_INSTALL = re.compile(r"\bpip3?\s+install\b([^\n;&|]*)")
_EDITABLE = re.compile(r"(?:-e|--editable)[ \t=]+[\"']?(\S+?)[\"']?(?=\s|$)|git\+\S+?/([\w.-]+?)(?:\.git)?(?:[@#]\S*)?(?=\s|$)"
                       r"|#egg=([\w.-]+)")
#: Arguments naming the task and the data a call or command line is given.
_TASK_NAMES = r"(?:task|competition|comp|competition[-_]id|task[-_]id|task[-_]name|challenge)"
_DATA_NAMES = r"(?:data[-_]?dir|data[-_]path|dataset[-_]dir|dataset[-_]path|input[-_]dir|data[-_]root|data)"
#: A keyword argument of a call (``(task=``, ``, data_dir=``) or an option of a command line (``--task x``).
_TASK_ARGUMENT = re.compile(r"--" + _TASK_NAMES + r"(?:=|[ \t]+)\S|[(,]\s*" + _TASK_NAMES + r"\s*=(?!=)",
                            re.IGNORECASE)
_DATA_ARGUMENT = re.compile(r"--" + _DATA_NAMES + r"(?:=|[ \t]+)\S|[(,]\s*" + _DATA_NAMES + r"\s*=(?!=)",
                            re.IGNORECASE)
_CALL = re.compile(r"(?<![\w.])[A-Za-z_][\w.]*\s*\(|^[ \t]*!|\bsubprocess\b|\bos\.system\b", re.MULTILINE)
#: Lines of a printed agent log: numbered steps, shell prompts, tool calls, code fences, LLM calls.
_AGENT_LOG_LINES = re.compile(
    r"^.{0,80}?\b(?:step|iteration|turn|node)\s*[#:]?\s*\d+\b|^.{0,80}?(?:\$|>>>)\s+\S|\btool[_ ]?calls?\b|"
    r"^[ \t]*```|\b(?:ACTION|OBSERVATION|Action Input|Observation)\b|/v1/(?:chat/completions|messages|responses)\b",
    re.MULTILINE | re.IGNORECASE)
#: Agent-log lines an output needs to read as the printed log of an agent run.
AGENT_LOG_MIN_LINES = 4


def _package_name(word: str) -> str:
    """``https://host/org/My-Agent.git`` and ``./My-Agent`` give ``my_agent``."""
    word = word.rstrip("/").rsplit("/", 1)[-1]
    word = word[:-4] if word.endswith(".git") else word
    return re.sub(r"[^\w]", "_", word).lower()


def _installed(texts: Sequence[tuple[int, str]]) -> dict[str, int]:
    """Names the notebook brings in itself, and the cell of each: cloned folders and repositories,
    editable and ``git+`` installs (``pip install -e my-agent`` gives ``my_agent``)."""
    found: dict[str, int] = {}
    for index, source in texts:
        if "clone" in source:
            for match in _GIT_CLONE.finditer(source):
                for word in (match.group(2), match.group(3)):
                    if word and word not in (".", ".."):
                        found.setdefault(_package_name(word), index)
        if "install" in source:
            for args in _PIP_INSTALL.findall(source):
                for match in _EDITABLE.finditer(args):
                    word = next((g for g in match.groups() if g), "")
                    if word and _package_name(word) not in ("", "_"):
                        found.setdefault(_package_name(word), index)
    return {name: cell for name, cell in found.items() if len(name) >= 2 and name not in _GENERIC_FOLDERS}


#: Folder names too common to be the framework a notebook brought in.
_GENERIC_FOLDERS = frozenset({"src", "data", "input", "output", "content", "kaggle", "working", "code", "repo", "tmp",
                              "home", "root", "lib", "_", "__"})


def _uses_installed(source: str, names: Mapping[str, int], index: int) -> str | None:
    """The installed name a cell imports from or runs (``from my_agent.runner import``,
    ``python my-agent/main.py``, ``python -m my_agent``, ``cd my-agent && python ...``)."""
    for name, at in names.items():
        if at > index:
            continue
        spelled = re.escape(name).replace("_", "[-_]")
        pattern = (r"^[ \t]*(?:from\s+" + spelled + r"(?:\.\w+)*\s+import\b|import\s+" + spelled + r"\b)"
                   r"|\bpython3?\s+(?:-u\s+)?(?:-m\s+" + spelled + r"\b|(?:\./)?(?:\S*/)?" + spelled + r"/\S+\.py\b)"
                   r"|\bcd\s+(?:\S*/)?" + spelled + r"\b[^\n]*(?:&&|;)\s*(?:python3?|bash|sh|\./)")
        if re.search(pattern, source, re.MULTILINE | re.IGNORECASE):
            return name
    return None


def _agent_log(output: str) -> bool:
    """Whether a cell's printed output reads as an agent run's log (steps, commands, tool calls)."""
    count = 0
    for _ in _AGENT_LOG_LINES.finditer(output[:2_000_000]):
        count += 1
        if count >= AGENT_LOG_MIN_LINES:
            return True
    return False


def _custom_launches(texts: Sequence[tuple[int, str]], outputs: Mapping[int, str]) -> list[tuple[int, Marker]]:
    """Launches of a framework the vocabulary does not name (see :func:`read_driver`).

    After operator setup that hands over credentials, the first code cell that imports from or
    runs what the notebook itself cloned or installed, calls something with a task and a data
    folder, or prints an agent's log (numbered steps, commands, tool calls) is the launch.
    """
    credentials = next((index for index, source in texts if _CREDENTIALS.search(source)), None)
    if credentials is None:
        return []
    names = _installed(texts)
    for index, source in texts:
        if index <= credentials and not _uses_installed(source, names, index):
            continue
        reason = None
        name = _uses_installed(source, names, index) if names else None
        if name is not None:
            reason = f"a call into {name}, which the notebook cloned or installed itself"
        elif _CALL.search(source) and _TASK_ARGUMENT.search(source) and _DATA_ARGUMENT.search(source):
            reason = "a call given a task and a data folder after operator setup"
        elif _agent_log(outputs.get(index, "")):
            reason = "a call whose output is an agent's log (steps, commands, tool calls)"
        if reason is not None:
            # Strong: the credentials it needs were checked above.
            return [(index, Marker(framework="custom", pattern="", strong=True, runs=True, what=reason))]
    return []


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
