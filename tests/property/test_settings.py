"""The suite's own settings: the deep profile follows ``--run-slow``."""

from __future__ import annotations

from tests.property import support


def test_the_example_budget_follows_run_slow(request):
    deep = bool(request.config.getoption("--run-slow"))
    assert support.DEEP is deep
    settings = support.budget(25)
    assert settings.max_examples == (support.DEEP_EXAMPLES if deep else 25)
    assert settings.derandomize is not deep and settings.deadline is None
