"""Fixtures for grading tests: the checkout's competitions with embedded data prepared once."""

from __future__ import annotations

from pathlib import Path

import pytest

from mleaudit.grading import CompetitionRegistry, find_competitions_root, prepare_competition

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "grading"


@pytest.fixture(scope="session")
def checkout_registry(tmp_path_factory: pytest.TempPathFactory) -> CompetitionRegistry:
    """The checkout's competitions, with a fresh data dir shared by the session."""
    return CompetitionRegistry(find_competitions_root(), tmp_path_factory.mktemp("data"))


@pytest.fixture(scope="session")
def embedded_registry(checkout_registry: CompetitionRegistry) -> CompetitionRegistry:
    """The checkout registry with every competition that needs no raw files prepared."""
    for spec in checkout_registry.specs():
        if spec.is_embedded and not checkout_registry.is_prepared(spec.id):
            prepare_competition(spec, checkout_registry)
    return checkout_registry
