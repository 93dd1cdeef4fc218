"""The examples in the metric modules' docstrings run and give the values they show."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = [
    "mleaudit.grading.metrics.arrowtext",
    "mleaudit.grading.metrics.classification",
    "mleaudit.grading.metrics.detection",
    "mleaudit.grading.metrics.masks",
    "mleaudit.grading.metrics.probability",
    "mleaudit.grading.metrics.ranking",
    "mleaudit.grading.metrics.regression",
    "mleaudit.grading.metrics.text",
    "mleaudit.grading.metrics.tokens",
    "mleaudit.grading.grade",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0
    assert result.failed == 0
