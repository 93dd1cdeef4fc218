"""Logs read by content that the run itself runs with Python (``python3 peek``, ``exec(open("peek").read())``):
their text is read as Python code too, so that code saved without an extension is not let through
as a log the code rules never see."""

from __future__ import annotations

import re
from collections import defaultdict
from pathlib import PurePosixPath

from mleaudit.audit.expand.derived import _with_heredocs
from mleaudit.audit.model import Skipped
from mleaudit.audit.run import python_by_content
from mleaudit.audit.units import CodeUnit, LogEvent, LogEventKind


#: What starts Python on a file in a command or in code: an interpreter, ``sys.executable``, or
#: Python's own ways to run a file's text (``exec``, ``compile``, ``runpy``, a source loader).
_PYTHON_LAUNCH = re.compile(r"python|pypy|sys\.executable|\bexec\b|\bcompile\b|runpy|run_path|SourceFileLoader")
#: The plain words of :data:`_PYTHON_LAUNCH` (found anywhere, as the pattern finds them) and the
#: two it takes only as whole words. The regex tries every alternative at every position of a long
#: text; ``in`` scans for a word in C.
_LAUNCH_WORDS = ("python", "pypy", "sys.executable", "runpy", "run_path", "SourceFileLoader")
_LAUNCH_WHOLE_WORDS = {word: re.compile(rf"\b{word}\b") for word in ("exec", "compile")}


def _starts_python(text: str) -> bool:
    """Whether :data:`_PYTHON_LAUNCH` finds something in ``text`` (the same answer, found faster)."""
    if any(word in text for word in _LAUNCH_WORDS):
        return True
    for word, whole in _LAUNCH_WHOLE_WORDS.items():
        found = text.find(word)
        while found != -1:
            if whole.match(text, found) is not None:  # ``\b`` sees the character before ``found``
                return True
            found = text.find(word, found + 1)
    return False


def _run_as_python(unnamed_logs: dict[str, str], code_units: list[CodeUnit], log_events: list[LogEvent],
                   notes: list[Skipped]) -> list[CodeUnit]:
    """Logs read by content (their name says nothing) that the run may run with Python, as
    Python code units too.

    A file is taken when a command, a code block or a code unit of the run that starts Python
    (:data:`_PYTHON_LAUNCH`: ``python3 -X dev peek``, ``cat peek | python``,
    ``subprocess.run([sys.executable, "peek"])``, ``exec(open("peek").read())``) names it — its
    file name as a word, since commands name paths from the agent's working folder, not from the
    run root, and options, pipes and variables stand between interpreter and file — and its text
    parses as Python without a syntax error and calls, imports or defines something
    (:func:`mleaudit.audit.run.python_by_content` as for the top of a run). Call-only code outside
    the agent's folders was read as a log, which the code rules never see. A log that only holds
    Python lines (a traceback piped to ``tee output``) does not parse, and stays a log.
    """
    if not unnamed_logs:
        return []
    by_name: dict[str, list[str]] = defaultdict(list)
    for path in unnamed_logs:
        by_name[PurePosixPath(path).name].append(path)
    names_at = re.compile("(?<![\\w.-])(" + "|".join(map(re.escape, sorted(by_name, key=len, reverse=True)))
                          + ")(?![\\w-])")
    sources = [e.text for e in log_events if e.kind in (LogEventKind.COMMAND, LogEventKind.CODE, LogEventKind.TOOL_CALL)]
    sources += [u.text for u in code_units]
    named: set[str] = set()
    for text in sources:
        if _starts_python(text):
            named.update(names_at.findall(text))
    units = []
    for name in sorted(named):
        for path in by_name[name]:
            # parsed up to the same limit as any file read by content: a stdout log a command names
            # (`python train.py | tee output`) may be megabytes of prose, seconds to parse
            why = python_by_content(unnamed_logs[path], agent_folder=False, top=True)
            if why is None:
                continue
            notes.append(Skipped(path=path, reason=f"named by a command or code of the run that starts Python, and "
                                                   f"{why.removesuffix(', at the top of the run')}: read as Python "
                                                   "code too"))
            units.extend(_with_heredocs(CodeUnit(path=path, language="python", text=unnamed_logs[path], source="file")))
    return units
