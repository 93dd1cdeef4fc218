"""Package dependency rules: no import cycles at module level; grading imports nothing of ours.

Reads our own sources with ``ast`` (our code, not audited code) and checks the import graph
with networkx.
"""

import ast
import importlib
from pathlib import Path

import networkx as nx
import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("audit", "grading", "sandbox")


def _modules():
    """``(dotted name, path)`` of every module: the folders are installed under ``mleaudit``."""
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = ["mleaudit", *path.relative_to(ROOT).with_suffix("").parts]
            if parts[-1] == "__init__":
                parts = parts[:-1]
            yield ".".join(parts), path


def _module_level_imports(path: Path, module: str, known: set[str]) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = set()
    for node in tree.body:  # module level only: imports inside functions are lazy by design
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            base = node.module
            if node.level:
                base = ".".join(module.split(".")[: -node.level] + [node.module])
            submodules = {f"{base}.{alias.name}" for alias in node.names} & known
            found.update(submodules)
            # `from pkg import submodule` does not need pkg's other names, only its __init__
            # when some imported name is not a submodule.
            if len(submodules) < len(node.names):
                found.add(base)
    return {name for name in found if name.split(".")[:2] in [["mleaudit", p] for p in PACKAGES]}


def _graph():
    modules = dict(_modules())
    graph = nx.DiGraph()
    for module, path in modules.items():
        graph.add_node(module)
        for target in _module_level_imports(path, module, set(modules)):
            if target in modules and target != module:
                graph.add_edge(module, target)
    return graph


def test_no_import_cycles():
    cycles = list(nx.simple_cycles(_graph()))
    assert cycles == []


def test_grading_depends_on_nothing_of_ours():
    graph = _graph()
    bad = [(a, b) for a, b in graph.edges if a.startswith("mleaudit.grading") and not b.startswith("mleaudit.grading")]
    assert bad == []


def test_sandbox_only_uses_the_run_layout():
    graph = _graph()
    bad = [(a, b) for a, b in graph.edges if a.startswith("mleaudit.sandbox") and not b.startswith(("mleaudit.sandbox", "mleaudit.audit.run"))]
    assert bad == []


@pytest.mark.parametrize("module", [m for m, _ in _modules()])
def test_every_module_imports(module):
    importlib.import_module(module)


def test_no_module_imports_a_folder_by_its_checkout_name():
    # installed, the folders exist only as mleaudit.audit, mleaudit.grading, mleaudit.sandbox; in a
    # checkout `import audit` would still work (the repository root is on the test path) and load a
    # second copy of every module it touches
    stale = []
    for folder in ("audit", "grading", "sandbox", "tests", "benchmarks", "scripts", "mleaudit"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            if any(part == "fixtures" or part.startswith("cases") for part in path.parts[len(ROOT.parts):]):
                continue  # agent code the tests and benchmarks audit, not ours
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for node in ast.walk(tree):
                names = ([alias.name for alias in node.names] if isinstance(node, ast.Import)
                         else [node.module] if isinstance(node, ast.ImportFrom) and node.module and not node.level
                         else [])
                stale += [f"{path.relative_to(ROOT)}:{node.lineno}: {name}" for name in names
                          if name.split(".")[0] in PACKAGES]
    assert stale == []
