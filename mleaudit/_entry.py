"""Start-up of ``mleaudit`` and ``python -m mleaudit``: nothing is imported from the current directory.

An audited run folder is written by the agent under audit, and the command line is often started
from inside one (``cd runs/r1 && mleaudit audit .``). Python puts the current directory first on
``sys.path`` for ``python -m`` (and for ``-c``, and for every ``''``, ``.`` or relative entry of
``PYTHONPATH``), so a ``numpy.py`` or ``yaml.py`` the agent left there would be imported, that is
run, by the audit itself. :func:`clean_sys_path` takes those entries out before the command line
imports anything else; :func:`main` is the console script's entry point.

This module imports only ``sys`` (built in) and ``os`` (frozen into the interpreter and loaded
at start-up), so importing it cannot itself pick a module up from the current directory.
"""

import os
import sys

__all__ = ["clean_sys_path", "main"]


def _same_place(entry: str, cwd_real: str | None) -> bool:
    if cwd_real is None:
        return False
    try:
        return os.path.realpath(entry) == cwd_real
    except (OSError, ValueError):
        return True  # an entry that cannot be resolved is not trusted either


def clean_sys_path() -> list[str]:
    """Remove every ``sys.path`` entry that means the current directory or depends on it.

    Removed: ``''``, ``.``, any relative entry, and any entry that resolves to the current
    directory. The packages themselves are found through their install (``pip install .`` or
    ``pip install -e .``), never through the current directory.

    Returns
    -------
    list of str
        The entries removed, in their former order.
    """
    try:
        cwd_real: str | None = os.path.realpath(os.getcwd())
    except OSError:  # the current directory was removed: nothing can resolve to it
        cwd_real = None
    kept: list[str] = []
    removed: list[str] = []
    for entry in sys.path:
        if not isinstance(entry, str) or not entry or not os.path.isabs(entry) or _same_place(entry, cwd_real):
            removed.append(entry)
        else:
            kept.append(entry)
    if removed:
        sys.path[:] = kept
        # Finders cached for the removed entries must not answer later imports.
        import importlib

        importlib.invalidate_caches()
    return removed


def main() -> None:
    """The ``mleaudit`` console script: clean ``sys.path``, then run the click command line."""
    clean_sys_path()
    from mleaudit.audit.cli import main as cli_main

    cli_main()
