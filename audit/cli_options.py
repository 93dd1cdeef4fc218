"""Shared click options of the ``mleaudit`` commands.

``InputError`` (exit code 2 for usage, config and input errors) and the competitions/data-dir
options are the grading CLI's, so every command spells them the same way.
"""

from __future__ import annotations

from pathlib import Path

import click

from audit.model import Severity
from grading.cli import GradingCliError as InputError
from grading.cli import competitions_option, data_dir_option

__all__ = [
    "InputError",
    "competitions_option",
    "data_dir_option",
    "rules_option",
    "format_option",
    "output_option",
    "fail_on_option",
]

rules_option = click.option(
    "--rules",
    type=click.Path(file_okay=False, path_type=Path),
    envvar="MLEAUDIT_RULES",
    default=None,
    help="Folder of YAML rules (default: rules/ of this checkout).",
)


def format_option(choices: list[str]):
    """``--format`` over the registered formatter names."""
    return click.option(
        "--format",
        "fmt",
        type=click.Choice(choices),
        default=None,
        help="Report format (default: text on the terminal, json for -o).",
    )


output_option = click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Write the report to this file (the terminal still gets a text summary).",
)

fail_on_option = click.option(
    "--fail-on",
    type=click.Choice([s.label for s in Severity if s >= Severity.LOW]),
    default="high",
    show_default=True,
    help="Exit with 1 when a finding has at least this severity.",
)
