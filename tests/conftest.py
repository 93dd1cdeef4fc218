"""Shared pytest setup: opt-in markers (slow, docker, gpu) and paths to real shared data."""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO_ROOT.parent / "shared" / "data"

# The suite keeps its caches (rule documents, prepared references) to itself, never in the user's,
# and removes them when it ends (they reach tens of MB a run).
if "MLEAUDIT_CACHE_DIR" not in os.environ:
    _TEST_CACHE = tempfile.mkdtemp(prefix="mleaudit-test-cache-")
    os.environ["MLEAUDIT_CACHE_DIR"] = _TEST_CACHE
    atexit.register(shutil.rmtree, _TEST_CACHE, ignore_errors=True)

_OPT_IN = {"slow": "--run-slow", "docker": "--run-docker", "gpu": "--run-gpu"}


def pytest_addoption(parser: pytest.Parser) -> None:
    for marker, flag in _OPT_IN.items():
        parser.addoption(flag, action="store_true", default=False, help=f"run tests marked {marker}")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for marker, flag in _OPT_IN.items():
        if config.getoption(flag):
            continue
        skip = pytest.mark.skip(reason=f"needs {flag}")
        for item in items:
            if marker in item.keywords:
                item.add_marker(skip)


def shared_path(*parts: str) -> Path:
    """A path under ``../shared/data``; the calling test is skipped when it is absent."""
    path = SHARED_DATA.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"real data not available: {path} (the ../shared checkout is absent)")
    return path


@pytest.fixture
def repo_root() -> Path:
    return REPO_ROOT


@pytest.fixture(autouse=True)
def _fresh_similarity_caches():
    """Each test starts without the process's prepared corpus (a test that patches the tokenizer or
    the decoder must see its patch used); tests/audit/similarity/test_reference_side.py checks reuse."""
    import sys

    for name, attribute in (("mleaudit.audit.similarity.reference_side", "_PREPARED"),
                            ("mleaudit.audit.similarity.corpus", "_DECODED"),
                            ("mleaudit.audit.similarity.corpus", "_SEEN")):
        module = sys.modules.get(name)
        if module is not None:
            getattr(module, attribute).clear()
    yield
