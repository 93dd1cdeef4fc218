"""The failures of Kaggle access: the package or credentials missing, or a call refused."""

from __future__ import annotations

from mleaudit.grading.errors import GradingError


class KaggleUnavailable(GradingError):
    """The ``kaggle`` package or Kaggle credentials are missing: nothing was sent."""


class KaggleError(GradingError):
    """A call to Kaggle failed (network, permission, unknown competition or notebook)."""


def _describe(exc: BaseException) -> str:
    if isinstance(exc, SystemExit):
        return f"it exited with status {exc.code}"
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__
