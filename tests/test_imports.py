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
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
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
    return {name for name in found if name.split(".")[0] in PACKAGES}


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
    bad = [(a, b) for a, b in graph.edges if a.startswith("grading") and not b.startswith("grading")]
    assert bad == []


def test_sandbox_only_uses_the_run_layout():
    graph = _graph()
    bad = [(a, b) for a, b in graph.edges if a.startswith("sandbox") and not b.startswith(("sandbox", "audit.run"))]
    assert bad == []


@pytest.mark.parametrize("module", [m for m, _ in _modules()])
def test_every_module_imports(module):
    importlib.import_module(module)
