"""The examples in the metric modules' docstrings run and give the values they show."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = [
    "grading.metrics.arrowtext",
    "grading.metrics.classification",
    "grading.metrics.detection",
    "grading.metrics.masks",
    "grading.metrics.probability",
    "grading.metrics.ranking",
    "grading.metrics.regression",
    "grading.metrics.text",
    "grading.metrics.tokens",
    "grading.grade",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0
    assert result.failed == 0
