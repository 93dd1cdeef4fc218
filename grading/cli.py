"""Click commands for competitions: prepare data, grade one submission, list and show.

These are plain commands and one ``competitions`` group; the root ``mleaudit`` group
registers them. Each command resolves its folders (``--competitions``, ``--data-dir`` or
their environment variables), calls the library, and prints. Errors of the grading package
become :class:`GradingCliError` (exit code 2) with the library's message and no traceback.
"""

from __future__ import annotations

import functools
import json
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator

import click

from grading.errors import GradingError
from grading.grade import grade_submission
from grading.leaderboard import load_leaderboard
from grading.medals import medal_thresholds
from grading.paths import COMPETITIONS_ENV, DATA_DIR_ENV, find_competitions_root, resolve_data_dir
from grading.prepare import prepare_competition
from grading.registry import CompetitionRegistry

__all__ = [
    "GradingCliError",
    "competitions_option",
    "data_dir_option",
    "prepare",
    "grade_sample",
    "competitions",
]


class GradingCliError(click.ClickException):
    """A config, data or input problem, reported as ``Error: <message>`` with exit code 2."""

    exit_code = 2


def competitions_option(func: Callable[..., Any]) -> Callable[..., Any]:
    """``--competitions DIR`` (env ``MLEAUDIT_COMPETITIONS``): the competitions root."""
    return click.option(
        "--competitions",
        "competitions_dir",
        type=click.Path(file_okay=False, path_type=Path),
        envvar=COMPETITIONS_ENV,
        show_envvar=True,
        default=None,
        help="Folder of competition folders (default: the checkout's competitions/).",
    )(func)


def data_dir_option(func: Callable[..., Any]) -> Callable[..., Any]:
    """``--data-dir DIR`` (env ``MLEAUDIT_DATA_DIR``): the prepared-data dir."""
    return click.option(
        "--data-dir",
        "data_dir",
        type=click.Path(file_okay=False, path_type=Path),
        envvar=DATA_DIR_ENV,
        show_envvar=True,
        default=None,
        help="Prepared data: <DIR>/<id>/prepared/{public,private} (default: the user cache dir).",
    )(func)


@contextmanager
def _grading_errors() -> Iterator[None]:
    try:
        yield
    except GradingError as exc:
        raise GradingCliError(str(exc)) from None


def _with_registry(func: Callable[..., Any]) -> Callable[..., Any]:
    """Turn ``competitions_dir``/``data_dir`` options into a ``registry`` argument."""

    @functools.wraps(func)
    def wrapper(*args: Any, competitions_dir: Path | None, data_dir: Path | None, **kwargs: Any) -> Any:
        with _grading_errors():
            registry = CompetitionRegistry(find_competitions_root(competitions_dir), resolve_data_dir(data_dir))
            return func(*args, registry=registry, **kwargs)

    return wrapper


def _dump(data: Any) -> str:
    return json.dumps(data, sort_keys=True, indent=2)


@click.command("prepare")
@click.option("-c", "--competition", "competition_id", required=True, metavar="ID", help="Competition id.")
@click.option(
    "--raw",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    default=None,
    help="Folder with the original Kaggle files (default: <data-dir>/<id>/raw; not needed for sklearn-*).",
)
@click.option("--force", is_flag=True, help="Rebuild even if the data is already prepared.")
@data_dir_option
@competitions_option
@_with_registry
def prepare(registry: CompetitionRegistry, competition_id: str, raw: Path | None, force: bool) -> None:
    """Prepare a competition's public/private split in the data dir.

    Splits the original data into the public files an agent sees and the private answers
    used for grading, and checks them against the competition's checksums.yaml.

    Example:

    \b
        mleaudit prepare -c sklearn-digits
        mleaudit prepare -c spaceship-titanic --raw ~/kaggle/spaceship-titanic
    """
    spec = registry.get(competition_id)
    result = prepare_competition(spec, registry, raw=raw, force=force)
    state = "already prepared" if result.reused else "prepared"
    check = "checksums verified" if result.verified else "no checksums recorded"
    click.echo(f"{spec.id}: {state} in {result.public_dir.parent} ({check})")


@click.command("grade-sample")
@click.argument("csv", type=click.Path(path_type=Path))
@click.argument("competition_id", metavar="ID")
@data_dir_option
@competitions_option
@_with_registry
def grade_sample(registry: CompetitionRegistry, csv: Path, competition_id: str) -> None:
    """Grade one submission CSV and print the grading report as JSON.

    The report has MLE-bench's fields (score, medal thresholds, gold_medal ... valid_submission)
    plus `error` and `leaderboard_source`. A missing or invalid submission is reported with
    valid_submission false and the reason in `error`; the exit code is 0 either way.

    Example:

    \b
        mleaudit grade-sample runs/r1/submission/submission.csv spaceship-titanic
    """
    spec = registry.get(competition_id)
    report = grade_submission(csv, spec, registry.data_dir)
    click.echo(_dump(report.to_dict()))


@click.group("competitions")
def competitions() -> None:
    """List and inspect the competitions mleaudit can grade.

    Example:

    \b
        mleaudit competitions list
        mleaudit competitions show spaceship-titanic
    """


@competitions.command("list")
@data_dir_option
@competitions_option
@_with_registry
def list_competitions(registry: CompetitionRegistry) -> None:
    """List competitions: id, metric, direction, leaderboard source and size, prepared or not.

    Example:

    \b
        mleaudit competitions list --data-dir ~/mle-data
    """
    rows = [("ID", "METRIC", "BETTER", "LEADERBOARD", "TEAMS", "PREPARED")]
    for spec in registry.specs():
        teams = str(load_leaderboard(spec.leaderboard_path).n_teams) if spec.leaderboard_path.is_file() else "-"
        rows.append(
            (
                spec.id,
                spec.metric.name,
                "higher" if spec.metric.higher_is_better else "lower",
                spec.leaderboard_source,
                teams,
                "yes" if registry.is_prepared(spec.id) else "no",
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        click.echo("  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip())


@competitions.command("show")
@click.argument("competition_id", metavar="ID")
@data_dir_option
@competitions_option
@_with_registry
def show_competition(registry: CompetitionRegistry, competition_id: str) -> None:
    """Show one competition's config, medal thresholds and data paths as JSON.

    Example:

    \b
        mleaudit competitions show sklearn-diabetes
    """
    spec = registry.get(competition_id)
    leaderboard = load_leaderboard(spec.leaderboard_path)
    info = spec.to_dict()
    info["leaderboard_teams"] = leaderboard.n_teams
    info["medal_thresholds"] = medal_thresholds(leaderboard, spec.metric.higher_is_better).to_dict()
    info["prepared"] = registry.is_prepared(spec.id)
    info["public_dir"] = str(registry.public_dir(spec.id))
    info["private_dir"] = str(registry.private_dir(spec.id))
    click.echo(_dump(info))
