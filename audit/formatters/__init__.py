"""Output formats of an :class:`~mleaudit.audit.report.AuditReport`, one module each, chosen by name.

A formatter is ``Callable[[AuditReport, TextIO], None]``; ``--format`` choices come from
:data:`FORMATTERS`. The markdown, SARIF and HTML writers render the report's JSON form
(``AuditReport.to_dict()``); their ``render_*`` / ``build_sarif`` functions also take a list of
reports (batch output).

Routine Listings
----------------
common
    Helpers of the formats that render the JSON form: report dicts, grade status, medals,
    similarity pairs and their labels, span locations.
terminal
    :func:`~mleaudit.audit.formatters.terminal.terminal_safe`: audited text that cannot drive a
    terminal (escapes, bidirectional overrides shown as visible escapes).
json
    ``--format json``: ``to_dict()`` with sorted keys.
text
    ``--format text``: a terminal table (rich).
markdown
    ``--format markdown``.
sarif
    ``--format sarif``: SARIF 2.1.0 for code-scanning tools.
html
    ``--format html``: one self-contained page (a package; its ``__init__`` lists its parts).

Notes
-----
Formatters sit just above the report: modules here import :mod:`mleaudit.audit.report`, the
report's model (:mod:`mleaudit.audit.model`) and each other (``common`` and ``terminal`` below
the formats); never the rules engine, the checks, the pipeline or the command line, so a stored
JSON report renders without auditing anything. (The HTML batch summary imports
:func:`mleaudit.audit.batch_summary.describe_seeds` lazily, when a batch summary is given.)
Every text from a report is untrusted: each format escapes it for its medium.

Adding a format: a module ``audit/formatters/<name>.py`` (a package when it outgrows ~400
lines) with ``write_<name>(report, stream)``, and one entry in :data:`FORMATTERS`; tests in
``tests/audit/test_formatters.py``.
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
