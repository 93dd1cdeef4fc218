"""Code the run executes but does not hold whole: scripts and modules run by commands the write sites cannot see, and sources abbreviated in the run (``# ... 8 epochs AdamW``, ``...``, ``<truncated>``)."""

from __future__ import annotations

import re
import sys
from pathlib import PurePosixPath

from mleaudit.audit.checks.provenance.traces import file_name
from mleaudit.audit.checks.writes import find_write_sites, scripts_run
from mleaudit.audit.units import CodeUnit

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
    return [file_name(m.group(1)) for m in _SCRIPT_TOKEN.finditer(segment)]


def _user_module(name: str) -> bool:
    top = name.split(".")[0]
    return top not in _TOOL_MODULES and top not in sys.stdlib_module_names


def executed_elsewhere(unit: CodeUnit) -> tuple[list[str], list[str]]:
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


def run_by_executed_files(file_units: list[CodeUnit], scripts: list[str], modules: list[str]) -> None:
    """Add to ``scripts`` and ``modules`` what the run's executed files run in turn (``run.sh`` that
    runs ``python train.py``, a script that calls ``subprocess.run(["python", "gen.py"])``), to
    any depth; each file is read once."""
    done: set[int] = set()
    while True:
        names = set(scripts)
        in_modules = {id(unit) for module in set(modules) for unit in module_sources(module, file_units)}
        todo = [(number, unit) for number, unit in enumerate(file_units) if number not in done
                and (PurePosixPath(unit.path).name in names or id(unit) in in_modules)]
        if not todo:
            return
        for number, unit in todo:
            done.add(number)
            scripts.extend(scripts_run(unit))
            more_scripts, more_modules = executed_elsewhere(unit)
            scripts.extend(more_scripts)
            modules.extend(more_modules)


def module_sources(name: str, file_units: list[CodeUnit]) -> list[CodeUnit]:
    """The code files of the run that make up module ``name`` (``pkg.train`` -> ``pkg/train.py``,
    ``pkg/__main__.py``, any file under a ``pkg/`` folder)."""
    top = name.split(".")[0]
    found = []
    for unit in file_units:
        parts = PurePosixPath(unit.path).parts
        if top in parts[:-1] or parts[-1] == f"{top}.py" or parts[-1] == f"{name.rsplit('.', 1)[-1]}.py":
            found.append(unit)
    return found


def abbreviated_source(scripts: set[str], modules: list[str], file_units: list[CodeUnit],
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
        candidates.extend((unit, f"`python -m {module}`") for unit in module_sources(module, file_units))
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
