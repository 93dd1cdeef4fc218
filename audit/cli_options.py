"""Shared click options and the CLI's error type (exit code 2 for usage, config and input errors)."""

from __future__ import annotations

from pathlib import Path

import click

from audit.model import Severity

__all__ = [
    "InputError",
    "competitions_option",
    "data_dir_option",
    "rules_option",
    "format_option",
    "output_option",
    "fail_on_option",
]


class InputError(click.ClickException):
    """A usage, configuration or input error: printed as ``Error: …`` with exit code 2."""

    exit_code = 2


def _dir_option(*names: str, envvar: str, help: str):
    return click.option(
        *names,
        type=click.Path(file_okay=False, path_type=Path),
        envvar=envvar,
        default=None,
        help=help,
    )


competitions_option = _dir_option(
    "--competitions",
    envvar="MLEAUDIT_COMPETITIONS",
    help="Folder of competition configs (default: competitions/ of this checkout).",
)
data_dir_option = _dir_option(
    "--data-dir",
    envvar="MLEAUDIT_DATA_DIR",
    help="Where prepared competition data lives (<data>/<id>/prepared/{public,private}).",
)
rules_option = _dir_option(
    "--rules",
    envvar="MLEAUDIT_RULES",
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
