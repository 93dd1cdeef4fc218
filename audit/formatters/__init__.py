"""Output formats of an :class:`~mleaudit.audit.report.AuditReport`, one module each, chosen by name.

A formatter is ``Callable[[AuditReport, TextIO], None]``; ``--format`` choices come from
:data:`FORMATTERS`, so adding a format is one module and one entry here. The markdown, SARIF and
HTML writers render the report's JSON form (``AuditReport.to_dict()``); their ``render_*`` /
``build_sarif`` functions also take a list of reports (batch output).
"""

from __future__ import annotations

from typing import Callable, TextIO

from mleaudit.audit.formatters.html import write_html
from mleaudit.audit.formatters.json import write_json
from mleaudit.audit.formatters.markdown import write_markdown
from mleaudit.audit.formatters.sarif import write_sarif
from mleaudit.audit.formatters.text import write_text
from mleaudit.audit.report import AuditReport

__all__ = ["FORMATTERS", "Formatter", "get_formatter"]

Formatter = Callable[[AuditReport, TextIO], None]

FORMATTERS: dict[str, Formatter] = {
    "json": write_json,
    "text": write_text,
    "markdown": write_markdown,
    "sarif": write_sarif,
    "html": write_html,
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
