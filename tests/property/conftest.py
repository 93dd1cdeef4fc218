"""Property-based tests over every parser entry point.

The default run keeps example counts modest and derandomised (deterministic in CI); with
``--run-slow`` (the option ``tests/conftest.py`` defines) every property runs 1000 random
examples instead (see :func:`tests.property.support.budget`).
"""

from __future__ import annotations

import pytest

from tests.property import support


def pytest_configure(config: pytest.Config) -> None:
    # Called as soon as this conftest is registered, before the test modules of this folder
    # are imported, so that their @settings see the chosen profile.
    support.DEEP = bool(config.getoption("--run-slow", default=False))


class Shared:
    """A session object with a short repr: Hypothesis prints every argument of a failing test
    case, and a whole ruleset or competition spec would bury the generated example."""

    def __init__(self, name: str, **values) -> None:
        self.__dict__.update(values)
        self._name = name

    def __repr__(self) -> str:
        return f"<{self._name}>"


@pytest.fixture(scope="session")
def ruleset():
    """The checkout's ruleset, loaded once (``.rules``)."""
    from mleaudit.audit.rules.loader import find_rules_root, load_ruleset

    return Shared("checkout ruleset", rules=load_ruleset([find_rules_root()]))


@pytest.fixture(scope="session")
def digits(tmp_path_factory):
    """The embedded ``sklearn-digits`` competition prepared in a session data dir
    (``.registry``, ``.spec``)."""
    from mleaudit.grading import CompetitionRegistry, find_competitions_root, prepare_competition

    registry = CompetitionRegistry(find_competitions_root(), tmp_path_factory.mktemp("property-data"))
    spec = registry.get("sklearn-digits")
    if not registry.is_prepared(spec.id):
        prepare_competition(spec, registry)
    return Shared("prepared sklearn-digits", registry=registry, spec=spec)
