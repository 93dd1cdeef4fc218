"""Submission provenance: which logged code or command wrote the graded ``submission.csv``.

MLE-bench requires the submission to be the output of code the agent ran. The check looks for
*write sites* (:mod:`mleaudit.audit.checks.writes`) whose destination names the submission file or its
folder (``./submission/submission.csv`` as AIDE writes it, ``/home/submission/``,
``os.path.join(OUT, "submission.csv")``, ``cp preds.csv /home/submission/``, a redirect, a
path passed to a script) in code the logs show running:

- code and commands inside the logs (agent actions: commands, code cells, AIDE nodes, written
  files) count as run;
- a code file of the run counts as run when an agent action names it (``python train.py``,
  ``{"script_name": "train.py"}``), when its text is a code block of the logs (AIDE's
  ``best_solution.py``), or, for a notebook, when it has executed cells.

It also looks for the submission's own data rows typed into agent actions (a file-write tool
call, a here-document, a literal in code): rows an agent typed were not computed.

The agent command a sandbox record says the sandbox ran (``spec.command`` of the ``run.json``
that ``mleaudit run`` writes, an operator command: :mod:`mleaudit.audit.sandbox_record`) counts as an
action run first: ``python3 /home/agent/solve.py`` runs a script the run does not contain (the
agent's files are not copied into the run), so a submission nothing else writes is
``unconfirmed``, not ``unlogged``; rows typed into it are ``typed``. The sandbox ran nothing but
that command, so a copy it makes from a file that nothing the run executed writes (``cp
/tmp/x.csv /home/submission/submission.csv``) is no writer: the file was placed, not computed,
and the outcome is ``unlogged`` when everything the run executed is visible. Other operator
code (a driver notebook's setup and grading cells) is not looked at.

Outcomes (one per run, most serious first):

``typed``
    at least ``min_typed_rows`` data rows of the file appear verbatim in agent-typed text;
``unlogged``
    the logs hold agent actions, everything they execute is visible in the run, and nothing
    writes the submission: the file appeared without a logged writer (hand-placed or copied in).
    This is claimed only when all the run executed can be read: the logs whole, and every
    script, notebook and module they run present and not abbreviated;
``unconfirmed``
    the only writers are code the logs never show running, a write to a path the code computes
    elsewhere, or a copy (in the logs) from a file no logged code wrote; or no writer was found but the logs
    run code the run does not contain (``python x.py``, ``bash x.sh``, ``jupyter nbconvert
    --execute x.ipynb``, ``torchrun x.py``, ``subprocess.run(["python", "x.py"])``, ``python -m
    pkg`` for a module that is neither the standard library nor a known tool), directly or
    through a file of the run they execute (``run.sh`` that runs ``python fit.py``); or a tool
    call writes to the submission (``write_file /home/submission/submission.csv``) and the log
    does not show what it wrote; or the header the logs print differs from the file's;
``written``
    a run writer was found (the evidence is the write site);
``unverifiable``
    the run has a submission but no agent actions in its logs, so there is nothing to check it
    against; or nothing writes it but the logs are cut short (a log over the size cap read in
    part, a code block the log ends inside), or a script or module the logs execute is in the
    run only abbreviated (a line such as ``# ... 8 epochs AdamW``, a bare ``...``, ``# (rest
    omitted)``, ``<truncated>``), so its writer may be in the part that is missing: where it
    came from is unknown, which is no sign of anything;
``absent``
    no submission (a run may end without one; nothing to report).

Row counts printed by ``wc -l`` are compared with the file and reported in the detail only:
benchmark copies of runs often truncate submissions, so a different count is not evidence.
"""

from __future__ import annotations

import logging
import os
import re
import stat
import sys
import textwrap
from dataclasses import dataclass, replace
from pathlib import Path, PurePosixPath

from mleaudit.audit.checks.evidence import action_events, event_evidence, file_line_evidence, unit_evidence, unit_location
from mleaudit.audit.rules.context import RunContext
from mleaudit.audit.rules.registry import check
from mleaudit.audit.checks.tables import CsvHead, CsvReadError, read_csv_head
from mleaudit.audit.checks.writes import WriteSite, find_write_sites, scripts_run
from mleaudit.audit.logs.common import is_cut_short
from mleaudit.audit.model import Evidence
from mleaudit.audit.rules.match import Match
from mleaudit.audit.run import RunLayout, read_run_file
from mleaudit.audit.sandbox_record import RECORD_PATH, is_sandbox_command
from mleaudit.audit.units import Actor, CodeUnit, LogEvent, LogEventKind
from mleaudit.grading import untrusted_json

__all__ = ["OUTCOMES", "Provenance", "SUBMISSION_TARGET", "assess_provenance", "submission_provenance"]

logger = logging.getLogger(__name__)

#: Outcomes of :func:`assess_provenance`, most serious first.
OUTCOMES = ("typed", "unlogged", "unconfirmed", "written", "unverifiable", "absent")

#: A destination that names the submission file or folder (not the sample submission or the
#: validation helper, which merely contain the word).
SUBMISSION_TARGET = re.compile(r"(?i)(?<!sample_)(?<!sample)(?<!validate_)submission")
_WRITE_KINDS_UNRESOLVED = frozenset({"to_csv", "open", "write_text"})
_SCRIPT_NAME = re.compile(r"[\"']?script_name[\"']?\s*[:=]\s*[\"']([^\"'\n]+)[\"']")
_WC_LINE = re.compile(r"^\s*(\d+)\s+(\S*?(?<!sample_)submission\.csv)\s*$", re.MULTILINE)
_QUOTED_TEXT = re.compile(r"[\"']([^\"'\n]+)[\"']")
_ROW_TOKEN = re.compile(r"[^\s'\"`()\[\]{}<>|;\\]+")
_MIN_ROW_CHARS = 6


@dataclass(frozen=True, slots=True, kw_only=True)
class Provenance:
    """What :func:`assess_provenance` found for one run.

    Attributes
    ----------
    outcome : str
        One of :data:`OUTCOMES`.
    detail : str
        One sentence for a reviewer: the writer found, or why none counts.
    searched : str
        What was searched ("9 commands, 4 code blocks and 2 tool calls in logs/agent.log; 2 code files").
    evidence : tuple of Evidence
        The write site, the typed rows, or the submission's header line.
    typed_rows : int
        How many of the file's data rows appear in agent-typed text (0 when not ``typed``).
    """

    outcome: str
    detail: str
    searched: str = ""
    evidence: tuple[Evidence, ...] = ()
    typed_rows: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class _Site:
    unit: CodeUnit
    site: WriteSite
    ran: bool
    exact: bool
    when: tuple[str, int] = ("", -1)  # the log place that runs it, to order writers in time


def _file_name(path: str) -> str:
    """The file name of a path as a tool call spells it: POSIX, Windows (``scripts\\train.py``,
    the backslash doubled when the call is JSON text) or both."""
    return PurePosixPath(path.replace("\\", "/")).name


def _normalise_code(text: str) -> str:
    lines = [line.rstrip() for line in textwrap.dedent(text.replace("\r\n", "\n")).strip().splitlines()]
    return "\n".join(line for line in lines if line)


def _notebook_ran(root: Path, rel: str) -> bool:
    """Whether a notebook file of the run has executed code cells (an execution count or outputs).

    The file is read without following links below ``root`` and decoded with bounded nesting;
    one that cannot be read counts as not run.
    """
    try:
        info = os.lstat(root / rel)
        if not stat.S_ISREG(info.st_mode) or info.st_size > RunLayout.MAX_FILE_BYTES:
            return False
        data = untrusted_json.loads(read_run_file(root, rel, max_bytes=RunLayout.MAX_FILE_BYTES))
    except (OSError, ValueError):
        return False
    cells = data.get("cells") if isinstance(data, dict) else None
    if cells is None and isinstance(data, dict):  # nbformat 3 keeps cells in worksheets
        cells = [c for ws in data.get("worksheets") or [] if isinstance(ws, dict) for c in ws.get("cells") or []]
    for cell in cells or []:
        if isinstance(cell, dict) and cell.get("cell_type") == "code":
            if cell.get("execution_count") or cell.get("prompt_number") or cell.get("outputs"):
                return True
    return False


def _last_mention(name: str, events: list[LogEvent]) -> tuple[str, int] | None:
    """``(log path, offset)`` of the last agent action that names ``name`` (a script file)."""
    pattern = re.compile(r"(?<![\w.-])" + re.escape(name) + r"(?![\w-])")
    last = None
    for event in events:
        if name in event.text and pattern.search(event.text):
            last = (event.span.path, event.span.start_byte)
    return last


def _targets_submission(site: WriteSite) -> bool:
    if site.kind == "script-argument":
        # Only a path passed to a script, not any argument that mentions the word.
        return bool(SUBMISSION_TARGET.search(site.target)) and ("/" in site.target or site.target.endswith(".csv"))
    return bool(SUBMISSION_TARGET.search(site.resolved))


def _data_rows(head: CsvHead) -> set[str]:
    return {line.strip() for line in head.lines if len(line.strip()) >= _MIN_ROW_CHARS}


def _typed_rows(text: str, rows: set[str]) -> tuple[int, int, int]:
    """How many distinct submission rows ``text`` contains verbatim, and where the first is.

    Returns ``(count, start, end)``; ``start``/``end`` are offsets of the first matching line in
    ``text`` (or of the text holding it, when escaped newlines had to be decoded).
    """
    decoded = text.replace("\\r\\n", "\n").replace("\\n", "\n") if "\\n" in text else text
    found: list[str] = []
    seen: set[str] = set()
    for line in decoded.splitlines():
        candidates = {line.strip().strip("'\",")}
        candidates.update(m.group(0).strip(",") for m in _ROW_TOKEN.finditer(line) if "," in m.group(0))
        hits = sorted((candidates & rows) - seen)
        seen.update(hits)
        found.extend(hits)
    if not found:
        return 0, -1, -1
    # Locate the first row in the original text (escaped rows sit on one line there).
    start = text.find(found[0])
    if start < 0:
        return len(found), 0, len(text)
    return len(found), start, start + len(found[0])


def _printed_counts(ctx: RunContext) -> list[int]:
    counts = []
    for event in ctx.log_events:
        if event.kind is LogEventKind.OUTPUT and "submission.csv" in event.text:
            counts.extend(int(m.group(1)) for m in _WC_LINE.finditer(event.text))
    return counts


def _printed_headers(ctx: RunContext) -> list[tuple[LogEvent, str]]:
    """Header lines the logs print for the submission (output of ``head ... submission.csv``)."""
    printed = []
    events = ctx.log_events
    for i, event in enumerate(events[:-1]):
        if event.kind is not LogEventKind.COMMAND or not re.search(r"\bhead\b", event.text):
            continue
        if not re.search(r"(?<!sample_)submission\.csv", event.text):
            continue
        nxt = events[i + 1]
        if nxt.kind is not LogEventKind.OUTPUT or nxt.span.path != event.span.path:
            continue
        for line in nxt.text.splitlines():
            # The first CSV-looking line; `{"result": ...}` replies and blank lines come first at times.
            if "," in line and not line.lstrip().startswith(("{", "[")):
                printed.append((nxt, line.strip()))
                break
    return printed


def _cut_logs(ctx: RunContext) -> str | None:
    """Why the run's logs are known to be incomplete, or ``None``: a log the loader read only in
    part (larger than ``RunLayout.MAX_LOG_BYTES`` on disk), or a code block a log ends inside."""
    cut = next((event for event in ctx.log_events if is_cut_short(event)), None)
    if cut is not None:
        return (f"{cut.span.path} ends inside the code block opened at line {cut.span.start_line} "
                "(the log is cut short)")
    root = Path(ctx.root)
    for path in dict.fromkeys(event.span.path.split("!/", 1)[0] for event in ctx.log_events):
        try:
            info = os.lstat(root / path)
        except (OSError, ValueError):
            continue
        if stat.S_ISREG(info.st_mode) and info.st_size > RunLayout.MAX_LOG_BYTES:
            return (f"{path} is {info.st_size} bytes and only its first {RunLayout.MAX_LOG_BYTES} were read "
                    "(the log cap)")
    return None


#: A line that stands for code left out: ``# ... 8 epochs AdamW``, a bare ``...`` or ``…``,
#: ``# (training loop omitted)``, ``# rest of the code unchanged``, ``<truncated>``,
#: ``[... 40 lines ...]``.
_ELISION = re.compile(
    r"^[ \t]*(?:#|//|--|rem\b)?[ \t]*(?:\.\.\.|\u2026)(?:[ \t]|$)"
    r"|^[ \t]*(?:#|//)[^\n]{0,200}?(?:\b(?:omitted|truncated|elided|abridged|redacted)\b"
    r"|\brest of (?:the )?(?:code|file|script|function|loop|training|pipeline)\b"
    r"|\b(?:code|lines?|content|body|loop|details?|steps?)[ \t]+(?:not shown|hidden|skipped|left out)\b"
    r"|\bsame as (?:before|above|earlier)\b"
    r"|\b(?:rest|remainder|everything else)\b[^\n]{0,40}\bunchanged\b)"
    r"|^[ \t]*[<\[][ \t]*(?:\.\.\.|\u2026)?[ \t]*(?:\d+[ \t]+(?:more[ \t]+)?lines?|truncated|omitted|snip)"
    r"[^\n]{0,80}[>\]][ \t]*$",
    re.MULTILINE | re.IGNORECASE,
)
#: Where a command runs code that is not named as a script argument: an interpreter (``-m``
#: may follow), a launcher (``torchrun train.py``, ``accelerate launch``), a Python call that runs
#: a script (``subprocess.run(["python", "x.py"])``, ``runpy.run_path``, ``%run``, ``exec(open``).
_INTERPRETER = re.compile(r"(?<![\w./-])(?:python[\d.]*|ipython[\d.]*|pypy[\d.]*)(?=[ \t])")
_MODULE_OPTION = re.compile(r"[ \t]+-m[ \t]*([A-Za-z_][\w.]{0,200})|[ \t]+-[A-Za-z]+(?:[ \t]+[^\s-][^\s]*)?")
_LAUNCHER = re.compile(r"(?<![\w./-])(?:torchrun|accelerate[ \t]+launch|deepspeed|horovodrun|mpirun|srun)(?=[ \t])")
_PY_RUNNER = re.compile(r"\bsubprocess\.\w+|\bos\.(?:system|popen|exec\w*|spawn\w*)|\brun_path\b|%run\b|"
                        r"\bexec\([ \t]*open\b")
_RUN_MODULE = re.compile(r"\brun_module\([ \t]*[\"']([A-Za-z_][\w.]{0,200})[\"']")
_SCRIPT_TOKEN = re.compile(r"(?<![\w./~-])([\w./~-]{1,300}\.(?:py|sh|bash|ipynb))(?![\w-])")
#: At most this many places per unit are looked at, each up to this many characters.
_MAX_RUN_SITES = 1000
_RUN_SITE_CHARS = 400
#: Modules ``python -m`` runs that are tools or libraries, not the agent's code.
_TOOL_MODULES = frozenset({
    "pip", "venv", "virtualenv", "pytest", "ipykernel", "jupyter", "nbconvert", "notebook", "jupyterlab", "papermill",
    "tensorboard", "black", "ruff", "flake8", "mypy", "pylint", "isort", "uvicorn", "gunicorn", "spacy", "nltk",
    "gdown", "kaggle", "huggingface_hub", "transformers", "datasets", "torch", "tensorflow", "accelerate",
    "deepspeed", "pipx", "build", "twine", "setuptools", "wheel", "poetry", "conda", "gpustat", "nvitop",
    "sklearn", "lightgbm", "xgboost", "catboost", "timm", "onnxruntime", "optuna", "pre_commit", "coverage",
})


def _script_after(text: str, pos: int) -> list[str]:
    """Script names on the rest of the line from ``pos`` (at most :data:`_RUN_SITE_CHARS` characters)."""
    line_end = text.find("\n", pos, pos + _RUN_SITE_CHARS)
    segment = text[pos : pos + _RUN_SITE_CHARS if line_end == -1 else line_end]
    return [_file_name(m.group(1)) for m in _SCRIPT_TOKEN.finditer(segment)]


def _user_module(name: str) -> bool:
    top = name.split(".")[0]
    return top not in _TOOL_MODULES and top not in sys.stdlib_module_names


def _executed_elsewhere(unit: CodeUnit) -> tuple[list[str], list[str]]:
    """Scripts and modules a log unit runs that :func:`mleaudit.audit.checks.writes.scripts_run` does not
    name: launchers (``torchrun train.py``, ``accelerate launch``, ``python -m torch.distributed.run
    x.py``, ``python -m cProfile x.py``), Python calls that run a script (``subprocess.run(["python",
    "x.py"])``, ``runpy.run_path``, ``%run``), and modules run with ``python -m`` or
    ``runpy.run_module`` that are neither tools nor the standard library.

    Returns
    -------
    (list of str, list of str)
        Script base names and module names. At most :data:`_MAX_RUN_SITES` places per unit
        are read (hostile text cannot make this slow).
    """
    text = unit.text
    scripts: list[str] = []
    modules: list[str] = []
    if unit.language == "bash":
        for count, match in enumerate(_INTERPRETER.finditer(text)):
            if count >= _MAX_RUN_SITES:
                break
            pos = match.end()
            for _ in range(32):  # options before ``-m``: ``python -u -X dev -m pkg``
                option = _MODULE_OPTION.match(text, pos, min(len(text), pos + _RUN_SITE_CHARS))
                if option is None:
                    break
                if option.group(1):
                    if _user_module(option.group(1).rstrip(".")):
                        modules.append(option.group(1).rstrip("."))
                    # A script the module runs: ``-m torch.distributed.run x.py``, ``-m cProfile x.py``.
                    scripts.extend(_script_after(text, option.end())[:1])
                    break
                pos = option.end()
        for count, match in enumerate(_LAUNCHER.finditer(text)):
            if count >= _MAX_RUN_SITES:
                break
            scripts.extend(_script_after(text, match.end())[:1])
    elif unit.language == "python":
        for count, match in enumerate(_PY_RUNNER.finditer(text)):
            if count >= _MAX_RUN_SITES:
                break
            scripts.extend(_script_after(text, match.end())[:1])
        modules.extend(m.group(1) for m in _RUN_MODULE.finditer(text) if _user_module(m.group(1)))
    return scripts, modules


def _run_by_executed_files(file_units: list[CodeUnit], scripts: list[str], modules: list[str]) -> None:
    """Add to ``scripts`` and ``modules`` what the run's executed files run in turn (``run.sh`` that
    runs ``python train.py``, a script that calls ``subprocess.run(["python", "gen.py"])``), to
    any depth; each file is read once."""
    done: set[int] = set()
    while True:
        names = set(scripts)
        in_modules = {id(unit) for module in set(modules) for unit in _module_sources(module, file_units)}
        todo = [(number, unit) for number, unit in enumerate(file_units) if number not in done
                and (PurePosixPath(unit.path).name in names or id(unit) in in_modules)]
        if not todo:
            return
        for number, unit in todo:
            done.add(number)
            scripts.extend(scripts_run(unit))
            more_scripts, more_modules = _executed_elsewhere(unit)
            scripts.extend(more_scripts)
            modules.extend(more_modules)


def _module_sources(name: str, file_units: list[CodeUnit]) -> list[CodeUnit]:
    """The code files of the run that make up module ``name`` (``pkg.train`` -> ``pkg/train.py``,
    ``pkg/__main__.py``, any file under a ``pkg/`` folder)."""
    top = name.split(".")[0]
    found = []
    for unit in file_units:
        parts = PurePosixPath(unit.path).parts
        if top in parts[:-1] or parts[-1] == f"{top}.py" or parts[-1] == f"{name.rsplit('.', 1)[-1]}.py":
            found.append(unit)
    return found


def _abbreviated_source(scripts: set[str], modules: list[str], file_units: list[CodeUnit],
                        log_units: list[CodeUnit]) -> tuple[CodeUnit, int, str] | None:
    """The first code the run executed whose source in the run is abbreviated: ``(unit, offset of
    the elision line, what ran)``, else ``None``.

    The sources looked at are the code files named like an executed script or making up an
    executed module, and the log units that write an executed script (``cat > train.py <<EOF``).
    """
    candidates: list[tuple[CodeUnit, str]] = []
    for unit in file_units:
        name = PurePosixPath(unit.path).name
        if name in scripts:
            candidates.append((unit, name))
    for module in modules:
        candidates.extend((unit, f"`python -m {module}`") for unit in _module_sources(module, file_units))
    for unit in log_units:
        for site in find_write_sites(unit):
            name = PurePosixPath(site.target.strip("'\" ").replace("\\", "/")).name
            if name in scripts:
                candidates.append((unit, name))
                break
    for unit, name in candidates:
        start = _elision(unit.text)
        if start is not None:
            return unit, start, name
    return None


_STUB_OWNER = re.compile(r"[ \t]*(?:async[ \t]+)?def[ \t]|[ \t]*class[ \t]|[ \t]*@")


def _stub_body(text: str, start: int) -> bool:
    """Whether the line at ``start`` follows a ``def ...:``/``class ...:`` line (blank lines between)."""
    end = start - 1
    for _ in range(50):
        if end < 0:
            return False
        begin = text.rfind("\n", 0, end) + 1
        previous = text[begin:end]
        if previous.strip():
            return bool(_STUB_OWNER.match(previous)) and previous.rstrip().endswith(":")
        end = begin - 1
    return False


def _elision(text: str) -> int | None:
    """Where the first line that stands for left-out code starts (:data:`_ELISION`), else ``None``.

    A bare ``...`` that is the whole body of a ``def`` or ``class`` is a stub, not an elision.
    """
    for count, match in enumerate(_ELISION.finditer(text)):
        if count >= _MAX_RUN_SITES:
            break
        start = match.start()
        if text[start:match.end()].strip() in ("...", "\u2026"):
            if _stub_body(text, start):
                continue
        return start
    return None


#: A tool call that writes files: its name or arguments say so (``write_file``, ``save``,
#: ``str_replace_editor create``, ``copy``, ``upload``), as a word of its text.
_WRITING_TOOL = re.compile(r"(?i)(?<![a-z])(?:write|save|create|edit|copy|cp|move|mv|put|upload|submit|str_replace|"
                           r"insert|append|overwrite|dump|export)(?![a-z])")
_SUBMISSION_FILE = re.compile(r"(?i)(?<![\w-])submission\.csv\b")


def _tool_call_writer(actions: list[LogEvent]) -> tuple[LogEvent, int, int] | None:
    """The last tool call that writes the submission file: a TOOL_CALL event whose text names
    ``submission.csv`` and a writing verb (:data:`_WRITING_TOOL`). Returns ``(event, start, end)``
    of the file name in the event's text, else ``None``."""
    found = None
    for event in actions:
        if event.kind is not LogEventKind.TOOL_CALL or "submission" not in event.text.lower():
            continue
        head = event.text[:100_000]
        target = _SUBMISSION_FILE.search(head)
        if target is not None and _WRITING_TOOL.search(head) is not None:
            found = (event, target.start(), target.end())
    return found


def _provenance_view(ctx: RunContext) -> RunContext:
    """``ctx`` without the operator's code and events, except the sandbox's recorded agent command
    (the rules of this check judge the operator for that command only)."""
    units = tuple(u for u in ctx.code_units if u.actor is not Actor.OPERATOR or is_sandbox_command(u))
    events = tuple(e for e in ctx.log_events if e.actor is not Actor.OPERATOR or is_sandbox_command(e))
    if len(units) == len(ctx.code_units) and len(events) == len(ctx.log_events):
        return ctx
    return replace(ctx, code_units=units, log_events=events, skipped=ctx.skipped, memo=ctx.memo)


def _searched(ctx: RunContext, file_units: list[CodeUnit]) -> str:
    counts = {LogEventKind.COMMAND: 0, LogEventKind.CODE: 0, LogEventKind.TOOL_CALL: 0}
    logs: list[str] = []
    for event in action_events(ctx):
        counts[event.kind] += 1
        if event.span.path not in logs:
            logs.append(event.span.path)
    files = sorted({u.path for u in file_units})

    def count(n: int, noun: str) -> str:
        return f"{n} {noun}{'' if n == 1 else 's'}"

    text = (f"{count(counts[LogEventKind.COMMAND], 'command')}, {count(counts[LogEventKind.CODE], 'code block')} "
            f"and {count(counts[LogEventKind.TOOL_CALL], 'tool call')} in {', '.join(logs) or 'no log'}")
    return text + f"; {count(len(files), 'code file')}"


def assess_provenance(ctx: RunContext, *, min_typed_rows: int = 3) -> Provenance:
    """Decide where the run's submission came from.

    Parameters
    ----------
    ctx : RunContext
        Needs ``submission_path``, ``code_units`` and ``log_events``.
    min_typed_rows : int
        Data rows of the submission that must appear verbatim in agent-typed text for the
        outcome ``typed`` (rows shorter than 6 characters are ignored as too common).

    Returns
    -------
    Provenance
        See the module docstring for the outcomes.
    """
    if ctx.submission_path is None or not Path(ctx.submission_path).is_file():
        return Provenance(outcome="absent", detail="the run has no submission file")
    ctx = _provenance_view(ctx)
    submission = Path(ctx.submission_path)
    rel = ctx.relative(submission)
    header_evidence = file_line_evidence(ctx, submission, 0, "submission header")
    head: CsvHead | None
    notes: list[str] = []
    try:
        head = read_csv_head(submission, label=rel)
    except CsvReadError as exc:
        head = None
        notes.append(f"its content could not be read ({exc})")
        ctx.skip(rel, f"submission provenance: {exc}")

    actions = action_events(ctx)
    log_units = [u for u in ctx.code_units if u.source == "log"]
    file_units = [u for u in ctx.code_units if u.source != "log"]
    searched = _searched(ctx, file_units)
    if not actions:
        return Provenance(outcome="unverifiable", searched=searched, evidence=(header_evidence,),
                          detail=f"not checked, the run has no agent log of commands or code to trace {rel} to")

    # --- typed rows ---------------------------------------------------------------------
    if head is not None:
        rows = _data_rows(head)
        enough = min(min_typed_rows, max(1, len(rows)))
        if rows:
            typed: dict[str, tuple[int, int, int]] = {}  # by text: logs repeat their tool outputs

            def typed_rows(text: str) -> tuple[int, int, int]:
                found = typed.get(text)
                if found is None:
                    found = typed[text] = _typed_rows(text, rows)
                return found

            for event in actions:
                count, start, end = typed_rows(event.text)
                if count >= enough:
                    evidence = event_evidence(event, "typed rows", start, end)
                    where = f"{event.span.path} {event.kind.value} event {event.index}"
                    return Provenance(
                        outcome="typed", searched=searched, evidence=(evidence, header_evidence), typed_rows=count,
                        detail=f"{count} of its data rows appear verbatim in agent-typed text ({where})")
            for unit in file_units:
                count, start, end = typed_rows(unit.text)
                if count >= enough:
                    evidence = unit_evidence(unit, start, end, "typed rows")
                    return Provenance(
                        outcome="typed", searched=searched, evidence=(evidence, header_evidence), typed_rows=count,
                        detail=f"{count} of its data rows appear verbatim in {unit_location(unit, start)}")

    # --- write sites ----------------------------------------------------------------------
    logged_code: dict[str, tuple[str, int]] = {}
    for unit in log_units:
        if unit.language == "python" and unit.origin is not None:
            logged_code[_normalise_code(unit.text)] = (unit.origin.path, unit.origin.start_byte)
    sites: list[_Site] = []
    written_names: set[str] = set()
    for unit in ctx.code_units:
        when: tuple[str, int] | None
        if is_sandbox_command(unit):
            when = ("", 0)  # the command that started the run: before anything a log records
        elif unit.source == "log":
            when = (unit.origin.path, unit.origin.start_byte) if unit.origin is not None else (unit.path, 0)
        else:
            when = _last_mention(PurePosixPath(unit.path).name, actions)
            if when is None and unit.source == "notebook" and _notebook_ran(Path(ctx.root), unit.path):
                when = (unit.path, 0)
            elif when is None and unit.source != "notebook":
                when = logged_code.get(_normalise_code(unit.text))
        ran = when is not None
        for site in find_write_sites(unit):
            # Every file name the destination may resolve to (os.path.join parts, f-string tails).
            # An in-place edit (`sed -i`) shows a change, not the file: what it edits is still
            # code the run does not contain.
            pieces = [] if site.kind == "edit" else [site.target.strip("'\" "), *_QUOTED_TEXT.findall(site.resolved)]
            for piece in pieces:
                base = PurePosixPath(piece.rsplit("}", 1)[-1]).name
                if base:
                    written_names.add(base)
            exact = _targets_submission(site)
            if exact or (not site.literal and site.kind in _WRITE_KINDS_UNRESOLVED):
                sites.append(_Site(unit=unit, site=site, ran=ran, exact=exact, when=when or ("", -1)))
    # In the order the logs run them, so the last one is the writer that left the file.
    sites.sort(key=lambda item: (item.when, item.site.start))

    def copied_from_unknown(item: _Site) -> list[str]:
        if item.site.kind not in ("copy", "move"):
            return []
        unknown = []
        for source in item.site.sources:
            name = PurePosixPath(source.strip("'\" ")).name
            if not name or "/home/data" in source or "/input/" in source or source.startswith(("./input", "input/")):
                continue
            if name not in written_names and not SUBMISSION_TARGET.search(name):
                unknown.append(name)
        return unknown

    def describe(item: _Site) -> str:
        target = item.site.target.strip()
        target = target if len(target) <= 80 else target[:77] + "..."
        return f"{item.site.kind} to `{target}` at {unit_location(item.unit, item.site.start)}"

    def site_evidence(item: _Site, label: str) -> Evidence:
        return unit_evidence(item.unit, item.site.start, item.site.end, label)

    confirmed = [s for s in sites if s.ran and s.exact and not copied_from_unknown(s)]
    # The sandbox ran nothing but its command: what the command copies from a file nothing
    # executed writes came from outside the run. Such a copy is no writer (see the module doc).
    placed = [s for s in sites if s.ran and s.exact and is_sandbox_command(s.unit) and copied_from_unknown(s)]
    placed_ids = {id(s) for s in placed}
    sites = [s for s in sites if id(s) not in placed_ids]

    def placed_text(item: _Site) -> str:
        names = ", ".join(copied_from_unknown(item))
        return (f"the sandbox's agent command ({RECORD_PATH} spec.command) copies it from {names}, which nothing "
                f"the run executed writes ({describe(item)})")

    # --- what the logs print about the file -------------------------------------------------
    mismatch = ""
    if head is not None:
        printed = _printed_headers(ctx)
        if printed:
            event, line = printed[-1]
            columns = [c.strip() for c in line.split(",")]
            if columns != list(head.header) and not set(head.header) <= set(columns):
                mismatch = (f"the header the logs last print ({event.span.path} {event.kind.value} event "
                            f"{event.index}) has {len(columns)} columns that differ from the file's {len(head.header)}")
        counts = _printed_counts(ctx)
        if counts and head.line_count is not None:
            if counts[-1] == head.line_count:
                notes.append(f"the logs print its line count ({counts[-1]})")
            else:
                notes.append(f"the logs last print {counts[-1]} lines, the file has {head.line_count}")

    def with_notes(text: str) -> str:
        return text + ("; " + "; ".join(notes) if notes else "")

    if confirmed and placed:
        best = confirmed[-1]
        return Provenance(outcome="unconfirmed", searched=searched,
                          evidence=(site_evidence(best, "write site"), site_evidence(placed[-1], "copy"), header_evidence),
                          detail=with_notes(f"{placed_text(placed[-1])}, although {describe(best)} writes it"))
    if confirmed and not mismatch:
        best = confirmed[-1]  # the last write is the one that left the file
        return Provenance(outcome="written", searched=searched, evidence=(site_evidence(best, "write site"),),
                          detail=with_notes(f"written by {describe(best)}"))
    if confirmed and mismatch:
        best = confirmed[-1]
        return Provenance(outcome="unconfirmed", searched=searched,
                          evidence=(site_evidence(best, "write site"), header_evidence),
                          detail=with_notes(f"{mismatch}, although {describe(best)} writes it"))
    if sites:
        item = sites[-1]
        if not item.ran:
            reason = f"the only writer is {describe(item)}, which the logs never show running"
        elif not item.exact:
            reason = f"the only candidate writer is {describe(item)}, whose path is computed elsewhere"
        else:
            names = ", ".join(copied_from_unknown(item))
            reason = f"it is copied by {describe(item)} from {names}, which no logged code writes"
        return Provenance(outcome="unconfirmed", searched=searched,
                          evidence=(site_evidence(item, "candidate writer"), header_evidence),
                          detail=with_notes(reason))

    tool_writer = _tool_call_writer(actions)
    if tool_writer is not None:
        # A tool (not code) wrote it, and the log does not show what the tool put there.
        event, start, end = tool_writer
        return Provenance(outcome="unconfirmed", searched=searched,
                          evidence=(event_evidence(event, "tool call", start, end), header_evidence),
                          detail=with_notes(f"no code writes it, but the tool call at {event.span.path}:"
                                            f"{event.span.start_line} ({event.kind.value} event {event.index}) "
                                            "writes to it, and the log does not show what it wrote"))

    available = {PurePosixPath(u.path).name for u in file_units} | written_names
    run_scripts: list[str] = []
    modules: list[str] = []
    launched: set[str] = set()  # what the sandbox's recorded command runs
    for unit in log_units:
        scripts, units_modules = _executed_elsewhere(unit)
        scripts = scripts_run(unit) + scripts
        run_scripts.extend(scripts)
        modules.extend(units_modules)
        if is_sandbox_command(unit):
            launched.update(scripts)
            launched.update(f"{name} (python -m)" for name in units_modules)
    for event in actions:
        if event.kind is LogEventKind.TOOL_CALL:
            run_scripts.extend(_file_name(m.group(1)) for m in _SCRIPT_NAME.finditer(event.text))
    _run_by_executed_files(file_units, run_scripts, modules)
    missing = sorted({name for name in run_scripts if name not in available}
                     | {f"{name} (python -m)" for name in modules if not _module_sources(name, file_units)})
    if missing:
        def listed(names: list[str]) -> str:
            return ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")

        from_command = [name for name in missing if name in launched]
        from_logs = [name for name in missing if name not in launched]
        reasons = []
        if from_command:
            reasons.append(f"the sandbox's command ({RECORD_PATH} spec.command) runs code the run does not contain "
                           f"({listed(from_command)}; the agent's files at /home/agent are not copied into it)")
        if from_logs:
            reasons.append(f"the logs run scripts the run does not contain ({listed(from_logs)})")
        evidence = (header_evidence,)
        command = next((e for e in actions if is_sandbox_command(e)), None)
        if from_command and command is not None:
            evidence = (event_evidence(command, "sandbox command"), header_evidence)
        text = "no write site found, but " + " and ".join(reasons)
        if placed:
            text += f"; that code may write {', '.join(copied_from_unknown(placed[-1]))}, which the command copies to it"
        return Provenance(outcome="unconfirmed", searched=searched, evidence=evidence, detail=with_notes(text))
    cut = _cut_logs(ctx)
    if cut is not None:
        # The writer may be in what the logs lost: no claim either way.
        return Provenance(outcome="unverifiable", searched=searched, evidence=(header_evidence,),
                          detail=with_notes(f"unknown: nothing in the logs read writes {rel}, but {cut}, so its "
                                            "writer may be in the part that is missing"))
    partial = _abbreviated_source(set(run_scripts), modules, file_units, log_units)
    if partial is not None:
        # The run executed code it shows only in part: the writer may be in what is left out.
        unit, start, name = partial
        line_end = unit.text.find("\n", start)
        end = len(unit.text) if line_end == -1 else line_end
        return Provenance(outcome="unverifiable", searched=searched,
                          evidence=(unit_evidence(unit, start, end, "abbreviated source"), header_evidence),
                          detail=with_notes(f"unknown: the run executed {name}, whose source here is abbreviated "
                                            f"({unit_location(unit, start)}), so the writer of {rel} may be in the "
                                            "part not shown"))
    if placed:
        # Everything the run executed is visible and only the sandbox's command puts the file in place.
        return Provenance(outcome="unlogged", searched=searched,
                          evidence=(site_evidence(placed[-1], "copy"), header_evidence),
                          detail=with_notes(f"{placed_text(placed[-1])}: the file was placed in the run, not "
                                            "computed by it"))
    return Provenance(outcome="unlogged", searched=searched, evidence=(header_evidence,),
                      detail=with_notes(f"nothing the agent ran writes {rel} or its folder"))


@check("submission-provenance", values=("outcome", "detail", "searched", "typed_rows"))
def submission_provenance(ctx: RunContext, *, outcomes: list[str] | tuple[str, ...] = ("written",),
                          min_typed_rows: int = 3) -> list[Match]:
    """Report the run's submission provenance when its outcome is one of ``outcomes``.

    Parameters
    ----------
    ctx : RunContext
        Needs ``submission_path``, ``code_units`` and ``log_events``.
    outcomes : list of str
        Which outcomes of :func:`assess_provenance` produce a match (each rule picks the ones
        whose severity it states).
    min_typed_rows : int
        See :func:`assess_provenance`.

    Returns
    -------
    list of Match
        At most one match, with values ``outcome``, ``detail`` (a sentence), ``searched``,
        ``typed_rows`` and ``actor`` (who wrote the file of the first evidence: ``operator``
        for the sandbox's recorded command), and the evidence of the assessment.

    Raises
    ------
    ValueError
        If ``outcomes`` names an unknown outcome.
    """
    unknown = sorted(set(outcomes) - set(OUTCOMES))
    if unknown:
        raise ValueError(f"submission-provenance: unknown outcomes {unknown} (known: {', '.join(OUTCOMES)})")
    result = ctx.memoize(f"provenance:{min_typed_rows}", lambda: assess_provenance(ctx, min_typed_rows=min_typed_rows))
    if result.outcome not in outcomes:
        return []
    return [Match(values={"outcome": result.outcome, "detail": result.detail, "searched": result.searched,
                          "typed_rows": result.typed_rows, "actor": _evidence_actor(ctx, result.evidence)},
                  evidence=result.evidence)]


def _evidence_actor(ctx: RunContext, evidence: tuple[Evidence, ...]) -> str:
    """Who wrote the file of the first evidence, among what the assessment looked at: the one
    actor of its units and events, else ``unknown`` (empty when there is no evidence)."""
    if not evidence:
        return ""
    path = evidence[0].span.path
    view = _provenance_view(ctx)
    actors = {u.actor for u in view.code_units if u.path == path} | {e.actor for e in view.log_events
                                                                      if e.span.path == path}
    return next(iter(actors)).value if len(actors) == 1 else Actor.UNKNOWN.value
