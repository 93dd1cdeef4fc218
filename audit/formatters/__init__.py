"""Output formats of an :class:`~audit.report.AuditReport`, one module each, chosen by name.

A formatter is ``Callable[[AuditReport, TextIO], None]``; ``--format`` choices come from
:data:`FORMATTERS`, so adding a format is one module and one entry here.
"""

from __future__ import annotations

from typing import Callable, TextIO

from audit.formatters.json import write_json
from audit.formatters.text import write_text
from audit.report import AuditReport

__all__ = ["FORMATTERS", "Formatter", "get_formatter"]

Formatter = Callable[[AuditReport, TextIO], None]

FORMATTERS: dict[str, Formatter] = {
    "json": write_json,
    "text": write_text,
}


def get_formatter(name: str) -> Formatter:
    """The formatter called ``name``.

    Raises
    ------
    KeyError
        If no formatter has that name; the message lists the known ones.
    """
    try:
        return FORMATTERS[name]
    except KeyError:
        raise KeyError(f"unknown format {name!r}; known: {', '.join(sorted(FORMATTERS))}") from None
