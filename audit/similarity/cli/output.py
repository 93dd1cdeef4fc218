"""What ``mleaudit similarity`` writes: terminal-safe text, tables, JSON, notes on stderr."""

from __future__ import annotations

import json
from typing import Any, Iterable

import click

from mleaudit.audit.model import Skipped

#: What a pair of files without one fingerprint each says instead of figures of 0.
TOO_SHORT = "too short to compare"


def _warn_skipped(skipped: Iterable[Skipped]) -> None:
    for item in skipped:
        click.echo(f"skipped {_safe(item.path)}: {_safe(item.reason)}", err=True)


def _safe(value: Any) -> str:
    """A value for the terminal or a table cell: file names and notes come from audited runs and
    corpora, so control, format and line-break characters (tabs too) are shown as escapes."""
    from mleaudit.audit.formatters.terminal import terminal_safe

    return terminal_safe(value)


def _tsv(rows: Iterable[Iterable[Any]]) -> None:
    for row in rows:
        click.echo("\t".join(_safe(value) for value in row))


def _echo_json(data: Any) -> None:
    click.echo(json.dumps(data, indent=2, sort_keys=True))


def _reasons(skipped: list[Skipped] | tuple[Skipped, ...], shown: int = 5) -> str:
    """`` (N skipped: path: reason; ...)`` for an error message, or ``""``."""
    if not skipped:
        return ""
    listed = "; ".join(f"{s.path}: {s.reason}" for s in skipped[:shown])
    more = f"; and {len(skipped) - shown} more" if len(skipped) > shown else ""
    return f" ({len(skipped)} skipped: {listed}{more})"



def _too_short(agent_total: int, reference_total: int) -> bool:
    """Whether either file has no fingerprint (fewer tokens than one k-gram): no figure means anything."""
    return agent_total == 0 or reference_total == 0
