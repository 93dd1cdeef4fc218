"""The registry of built-in checks: :data:`CHECKS`, the :func:`check` decorator and :func:`get_check`.

The engine owns the registry and never imports a check: the check modules
(:mod:`mleaudit.audit.checks`) register themselves with :func:`check` when they are imported.
The pipeline imports :mod:`mleaudit.audit.checks`; every other loader of rules (``mleaudit
rules``, the rules' self-tests, a library caller of ``load_ruleset``) gets them through
:func:`load_builtin_checks`, which compiling a ``builtin`` matcher calls: it imports the modules
named in :data:`BUILTIN_CHECK_MODULES` (a plugin list, kept as data) once.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Callable

from mleaudit.audit.rules.context import RunContext
from mleaudit.audit.rules.match import Match

__all__ = ["CheckFn", "RegisteredCheck", "CHECKS", "BUILTIN_CHECK_MODULES", "check", "get_check", "load_builtin_checks"]

#: Signature of a check: ``fn(ctx, **params) -> list[Match]``.
CheckFn = Callable[..., list[Match]]


@dataclass(frozen=True, slots=True, kw_only=True)
class RegisteredCheck:
    """A check function with its name and the template values its matches provide."""

    name: str
    fn: CheckFn
    values: tuple[str, ...] = ()

    def __call__(self, ctx: RunContext, **params: object) -> list[Match]:
        return self.fn(ctx, **params)


#: Registry of built-in checks by name (filled when ``mleaudit.audit.checks`` is imported).
CHECKS: dict[str, RegisteredCheck] = {}

#: Modules whose import registers the built-in checks (:func:`load_builtin_checks`).
BUILTIN_CHECK_MODULES = ("mleaudit.audit.checks",)


def load_builtin_checks() -> dict[str, RegisteredCheck]:
    """:data:`CHECKS`, after importing :data:`BUILTIN_CHECK_MODULES` (a no-op once they are imported)."""
    for module in BUILTIN_CHECK_MODULES:
        importlib.import_module(module)
    return CHECKS


def check(name: str, *, values: tuple[str, ...] = ()) -> Callable[[CheckFn], CheckFn]:
    """Register ``fn`` as the built-in check ``name``.

    Parameters
    ----------
    name : str
        Kebab-case name rules use in ``builtin:``.
    values : tuple of str
        Names of the ``Match.values`` the check sets, so the loader can verify message
        placeholders before anything runs.

    Raises
    ------
    ValueError
        If ``name`` is already registered (two checks must not shadow each other).
    """

    def register(fn: CheckFn) -> CheckFn:
        if name in CHECKS:
            raise ValueError(f"built-in check {name!r} is already registered by {CHECKS[name].fn.__module__}")
        CHECKS[name] = RegisteredCheck(name=name, fn=fn, values=tuple(values))
        return fn

    return register


def get_check(name: str) -> RegisteredCheck:
    """The registered check ``name``.

    Raises
    ------
    KeyError
        If no check has that name; the message lists the known names.
    """
    try:
        return load_builtin_checks()[name]
    except KeyError:
        raise KeyError(f"unknown built-in check {name!r}; known: {', '.join(sorted(CHECKS)) or 'none'}") from None

