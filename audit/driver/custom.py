"""Launches of an agent framework the vocabulary does not name (:func:`_custom_launches`).

After operator setup that hands over credentials, a cell that runs what the notebook cloned or
installed itself, calls something with a task and a data folder, or prints an agent's log is the
launch.
"""

from __future__ import annotations

import re
from typing import Mapping, Sequence

from mleaudit.audit.driver.vocabulary import Marker


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
