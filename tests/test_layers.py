"""Import contracts: the layers of the ``[importlinter]`` contracts in ``setup.cfg``, and no import cycle.

The contracts are checked by import-linter (``lint-imports``), the cycles with grimp, the import graph
library under it; both read the sources and import nothing of ours. Imports inside functions count
like any other (a lazy import that closes a cycle is still a cycle), imports under ``TYPE_CHECKING``
do not close a cycle. The folders ``audit/``, ``grading/`` and ``sandbox/`` are installed as
``mleaudit.audit``, ``mleaudit.grading`` and ``mleaudit.sandbox`` by ``package_dir``, and grimp only
walks the one folder of a top-level package: each check runs in a child process with a folder of
symbolic links shaped like the installed ``mleaudit`` first on its path.

A failure names each offending import as ``path:line  importer -> imported``.
"""

from __future__ import annotations

import configparser
import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import networkx as nx
import pytest

pytest.importorskip("importlinter", reason="import-linter comes with the test extra: pip install -e '.[test]'")

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / "setup.cfg"
SUBPACKAGES = ("audit", "grading", "sandbox")

#: Contracts known to be broken, by contract id, with the offending imports as the reason (none now;
#: an entry turns the contract's test into an expected failure while a fix is under way).
KNOWN_BROKEN: dict[str, str] = {}

#: Run in the child process: every import between our modules, with its line numbers, as JSON.
_GRAPH_SCRIPT = """
import json, sys
import grimp
graph = grimp.build_graph("mleaudit", cache_dir=None, exclude_type_checking_imports=True)
json.dump([
    [importer, imported, sorted({d["line_number"] for d in graph.get_import_details(importer=importer, imported=imported)})]
    for importer in sorted(graph.modules)
    for imported in sorted(graph.find_modules_directly_imported_by(importer))
], sys.stdout)
"""
_LINT_SCRIPT = "import sys; from importlinter.cli import lint_imports_command; sys.exit(lint_imports_command())"

#: One import of a chain in lint-imports' report: ``mleaudit.a.b -> mleaudit.c (l.12, l.30)``.
_CHAIN_LINK = re.compile(r"(?P<importer>mleaudit[\w.]*) -> (?P<imported>mleaudit[\w.]*) \((?P<lines>l\.\d+(?:, l\.\d+)*)\)")


def _contracts() -> dict[str, str]:
    """The contracts of ``setup.cfg``: id -> name."""
    parser = configparser.ConfigParser(interpolation=None)
    parser.read(CONFIG, encoding="utf-8")
    prefix = "importlinter:contract:"
    return {section[len(prefix):]: parser[section]["name"] for section in parser.sections() if section.startswith(prefix)}


@pytest.fixture(scope="module")
def package_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder holding ``mleaudit`` laid out as installed: its own modules and the mapped folders, linked."""
    top = tmp_path_factory.mktemp("layers")
    package = top / "mleaudit"
    package.mkdir()
    own = Path(importlib.util.find_spec("mleaudit").origin).parent
    for path in own.glob("*.py"):
        (package / path.name).symlink_to(path)
    for name in SUBPACKAGES:
        folder = Path(importlib.util.find_spec(f"mleaudit.{name}").origin).parent
        (package / name).symlink_to(folder, target_is_directory=True)
    return top


def _run(tree: Path, *args: str) -> subprocess.CompletedProcess[str]:
    path = os.pathsep.join(filter(None, [str(tree), os.environ.get("PYTHONPATH")]))
    env = {**os.environ, "PYTHONPATH": path, "COLUMNS": "1000", "NO_COLOR": "1", "TERM": "dumb"}
    return subprocess.run([sys.executable, *args], cwd=tree, env=env, capture_output=True, text=True, timeout=300)


def _source(tree: Path, module: str) -> str:
    """The file of ``module``, relative to the checkout where it lies there."""
    base = tree.joinpath(*module.split("."))
    path = base.with_suffix(".py") if base.with_suffix(".py").exists() else base / "__init__.py"
    resolved = path.resolve()
    return str(resolved.relative_to(ROOT)) if resolved.is_relative_to(ROOT) else str(resolved)


def _with_places(tree: Path, text: str) -> str:
    """lint-imports' report with ``path:line`` after every import of a chain."""
    def place(match: re.Match[str]) -> str:
        where = _source(tree, match["importer"])
        lines = ",".join(re.findall(r"\d+", match["lines"]))
        return f"{match[0]}  [{where}:{lines}]"
    return _CHAIN_LINK.sub(place, text)


@pytest.fixture(scope="module")
def lint_report(package_tree: Path) -> dict[str, str]:
    """Every contract's verdict: name -> ``""`` when kept, else what lint-imports says about it."""
    done = _run(package_tree, "-c", _LINT_SCRIPT, str(CONFIG), "--no-cache", "--no-logo")
    output = _with_places(package_tree, done.stdout + done.stderr)
    names = _contracts().values()
    kept = {name for name in names if re.search(rf"^{re.escape(name)} KEPT\b", output, re.MULTILINE)}
    broken = [name for name in names if re.search(rf"^{re.escape(name)} BROKEN\b", output, re.MULTILINE)]
    if len(kept) + len(broken) < len(names):  # no verdicts: the configuration or the run failed
        return {name: output for name in names}
    _, _, details = output.partition("\nBroken contracts\n")
    report = dict.fromkeys(kept, "")
    for name in broken:
        start = details.find(f"\n{name}\n")
        ends = [details.find(f"\n{other}\n", start + 1) for other in broken if other != name]
        end = min([at for at in ends if at > start] or [len(details)])
        report[name] = details[start:end].strip() if start >= 0 else output
    return report


def _contract_params() -> list[object]:
    params = []
    for key in _contracts():
        marks = [pytest.mark.xfail(strict=False, reason=f"known: {KNOWN_BROKEN[key]}")] if key in KNOWN_BROKEN else []
        params.append(pytest.param(key, marks=marks, id=key))
    return params


@pytest.mark.parametrize("contract", _contract_params())
def test_import_contract(contract: str, lint_report: dict[str, str]) -> None:
    verdict = lint_report[_contracts()[contract]]
    if verdict:
        pytest.fail(f"contract {contract!r} of setup.cfg is broken:\n{verdict}", pytrace=False)


def test_no_import_cycle(package_tree: Path) -> None:
    done = _run(package_tree, "-c", _GRAPH_SCRIPT)
    assert done.returncode == 0, done.stderr
    graph = nx.DiGraph()
    lines = {}
    for importer, imported, numbers in json.loads(done.stdout):
        graph.add_edge(importer, imported)
        lines[importer, imported] = numbers
    assert len(graph) > 100, "the import graph is nearly empty: were the packages found?"
    groups = sorted((group for group in nx.strongly_connected_components(graph) if len(group) > 1), key=min)
    shown = []
    for group in groups:  # one shortest cycle through the group's first module, then the group
        sub = graph.subgraph(group)
        start = min(group)
        cycle = [start, *min((nx.shortest_path(sub, after, start) for after in sub.successors(start)), key=len)]
        chain = "\n".join(
            f"    {_source(package_tree, a)}:{','.join(map(str, lines[a, b]))}  {a} -> {b}" for a, b in zip(cycle, cycle[1:])
        )
        shown.append(f"  cycle among {len(group)} modules ({', '.join(sorted(group))}):\n{chain}")
    if shown:
        pytest.fail("import cycles:\n" + "\n".join(shown), pytrace=False)
