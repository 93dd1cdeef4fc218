"""The examples in the docstrings of the audit and the sandbox run and give what they show (the
grading package has its own: tests/grading/test_doctests.py). Moving code between modules must
keep every example runnable where it now lives."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

PACKAGES = ("mleaudit.audit", "mleaudit.sandbox")


def _modules() -> list[str]:
    names = []
    for package in PACKAGES:
        root = importlib.import_module(package)
        names.append(package)
        names += [m.name for m in pkgutil.walk_packages(root.__path__, package + ".") if not m.name.endswith("__main__")]
    return sorted(names)


def test_every_docstring_example_runs() -> None:
    failed, attempted = [], 0
    for name in _modules():
        result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS, report=False)
        attempted += result.attempted
        if result.failed:
            failed.append(f"{name}: {result.failed} of {result.attempted} failed")
    assert attempted > 100, f"only {attempted} examples found: were the modules walked?"
    if failed:
        pytest.fail("docstring examples that fail (run `python -m doctest -v` on the module):\n" + "\n".join(failed),
                    pytrace=False)
