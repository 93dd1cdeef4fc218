"""The vocabulary of driver notebooks: how a notebook calls into an agent framework, and the signals
that give each cell after the launch its role (see :mod:`mleaudit.audit.driver`).

Tables only, of regular expressions searched in code cells without their comment lines; a new
framework's imports, command lines and API calls are added to :data:`VOCABULARY`.
"""

from __future__ import annotations

from dataclasses import dataclass


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
