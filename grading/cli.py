"""Click commands for competitions: prepare data, grade, list and show, fetch notebooks.

The MLE-bench commands keep MLE-bench's names and options: ``prepare (-c ID | --lite | --all |
-l FILE)``, ``grade --submission JSONL --output-dir DIR``, ``grade-sample CSV ID``; next to
them are the ``competitions`` group (``list [--split S]``, ``show ID``) and the ``kernels``
group (``fetch ID --top N -o DIR``, which needs the optional ``kaggle`` package). The root
``mleaudit`` group registers them. Each command resolves its folders (``--competitions``,
``--data-dir`` or their environment variables), calls the library, and prints. Errors of the
grading package become :class:`GradingCliError` (exit code 2) with the library's message and
no traceback.
"""

from __future__ import annotations

import functools
import json
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator

import click

from mleaudit.grading.errors import ChecksumMismatch, GradingError
from mleaudit.grading.paths import COMPETITIONS_ENV, DATA_DIR_ENV, find_competitions_root, resolve_data_dir

if TYPE_CHECKING:
    from mleaudit.grading.registry import CompetitionRegistry

# The registry, graders, leaderboards and data preparation load pandas, scikit-learn and SciPy:
# they are imported inside the commands that use them, so that the root ``mleaudit`` command
# (its help, and every command that does not grade) starts without them.

__all__ = [
    "GradingCliError",
    "competitions_option",
    "data_dir_option",
    "prepare",
    "grade",
    "grade_sample",
    "competitions",
    "kernels",
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
    except ChecksumMismatch as exc:
        message = str(exc)
        if "--force" not in message:
            message += (
                "\nTo prepare from these files anyway, add --no-verify (the result is marked unverified and its "
                "scores may differ from MLE-bench's)."
            )
        raise GradingCliError(message) from None
    except GradingError as exc:
        raise GradingCliError(str(exc)) from None


def _with_registry(func: Callable[..., Any]) -> Callable[..., Any]:
    """Turn ``competitions_dir``/``data_dir`` options into a ``registry`` argument."""

    @functools.wraps(func)
    def wrapper(*args: Any, competitions_dir: Path | None, data_dir: Path | None, **kwargs: Any) -> Any:
        from mleaudit.grading.registry import CompetitionRegistry

        with _grading_errors():
            registry = CompetitionRegistry(find_competitions_root(competitions_dir), resolve_data_dir(data_dir))
            return func(*args, registry=registry, **kwargs)

    return wrapper


def _dump(data: Any) -> str:
    return json.dumps(data, sort_keys=True, indent=2)


def _read_id_list(path: Path) -> list[str]:
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise GradingCliError(f"--list {path}: cannot be read ({exc})") from None
    ids = [line.strip() for line in lines if line.strip() and not line.strip().startswith("#")]
    if not ids:
        raise GradingCliError(f"--list {path}: no competition ids in the file")
    return ids


def _single_raw_dir(raw: Path, competition_id: str, needed: tuple[str, ...]) -> Path:
    """``--raw`` for one competition: its own folder, or a folder of per-competition folders."""
    nested = raw / competition_id
    if needed and nested.is_dir() and not all((raw / name).is_file() for name in needed):
        return nested
    return raw


@click.command("prepare")
@click.option("-c", "--competition", "competition_id", default=None, metavar="ID", help="Prepare one competition.")
@click.option("--lite", is_flag=True, help="Prepare MLE-bench Lite (the low-complexity split).")
@click.option("-a", "--all", "all_", is_flag=True, help="Prepare every competition.")
@click.option(
    "-l", "--list", "list_file", type=click.Path(dir_okay=False, path_type=Path), default=None,
    help="Prepare the competitions listed in FILE, one id a line.",
)
@click.option(
    "--raw",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    default=None,
    help="Original Kaggle files: the competition's folder with -c, else a folder of <id>/ folders "
    "(default: <data-dir>/<id>/raw; not needed for sklearn-*).",
)
@click.option("--download", is_flag=True, help="Download missing Kaggle files first (needs the kaggle extra and credentials).")
@click.option("--force", is_flag=True, help="Rebuild even if the data is already prepared.")
@click.option(
    "--no-verify", "no_verify", is_flag=True,
    help="Do not enforce checksums.yaml (for raw files that differ from Kaggle's originals).",
)
@data_dir_option
@competitions_option
@_with_registry
def prepare(
    registry: CompetitionRegistry,
    competition_id: str | None,
    lite: bool,
    all_: bool,
    list_file: Path | None,
    raw: Path | None,
    download: bool,
    force: bool,
    no_verify: bool,
) -> None:
    """Prepare competitions' public/private splits in the data dir.

    Splits the original data into the public files an agent sees and the private answers used
    for grading, and checks them against each competition's checksums.yaml. Give exactly one of
    -c, --lite, --all or -l. With several competitions, one that cannot be prepared (no prepare
    function, raw files absent) is reported and the others go on; the exit code is 2 if any
    preparation failed (e.g. a checksum mismatch), else 0.

    Example:

    \b
        mleaudit prepare -c sklearn-digits
        mleaudit prepare -c spaceship-titanic --raw ~/kaggle/spaceship-titanic
        mleaudit prepare --lite --raw ~/kaggle --data-dir ~/mle-data
        mleaudit prepare -c leaf-classification --download
    """
    from mleaudit.grading.prepare import prepare_competition, prepare_competitions, verification_text

    chosen = [bool(competition_id), lite, all_, list_file is not None]
    if sum(chosen) != 1:
        raise click.UsageError("give exactly one of -c ID, --lite, --all or -l FILE")
    client = None
    if download:
        from mleaudit.grading.kaggle import connect_kaggle

        client = connect_kaggle()
    if competition_id:
        spec = registry.get(competition_id)
        raw_dir = _single_raw_dir(raw, spec.id, spec.raw_files) if raw is not None else None
        if client is not None and raw_dir is None and spec.prepare is not None and spec.raw_files:
            from mleaudit.grading.prepare import download_raw

            if force or not registry.is_prepared(spec.id):
                raw_dir = download_raw(spec, registry, client, verify=not no_verify)
        if client is not None:
            _download_missing_leaderboard(client, spec)
        result = prepare_competition(spec, registry, raw=raw_dir, force=force, verify=not no_verify)
        state = "already prepared" if result.reused else "prepared"
        click.echo(f"{spec.id}: {state} in {result.public_dir.parent} ({verification_text(spec, result)})")
        return
    if lite:
        ids = registry.ids_in_split("lite")
    elif all_:
        ids = registry.ids()
    else:
        ids = _read_id_list(list_file)
    specs = [registry.get(cid) for cid in ids]
    if client is not None:
        for spec in specs:
            _download_missing_leaderboard(client, spec)
    outcomes = prepare_competitions(specs, registry, raw_root=raw, force=force, verify=not no_verify, client=client)
    counts: dict[str, int] = {}
    for outcome in outcomes:
        counts[outcome.status] = counts.get(outcome.status, 0) + 1
        message = outcome.message if outcome.message.startswith(outcome.competition_id) else f"{outcome.competition_id}: {outcome.message}"
        click.echo(f"[{outcome.status}] {message}")
    summary = ", ".join(f"{counts.get(k, 0)} {k}" for k in ("prepared", "reused", "skipped", "failed"))
    click.echo(f"{len(outcomes)} competitions: {summary}")
    if counts.get("failed"):
        click.get_current_context().exit(2)


def _download_missing_leaderboard(client: Any, spec: Any) -> None:
    """Fetch a leaderboard the competition folder lacks (never overwrites a snapshot)."""
    if spec.leaderboard_path.is_file():
        return
    board = client.leaderboard(spec.id)
    board.to_csv(spec.leaderboard_path, index=False, lineterminator="\n")
    click.echo(f"{spec.id}: leaderboard written to {spec.leaderboard_path} ({len(board)} teams); "
               "set leaderboard.source and note in its config.yaml", err=True)


@click.command("grade")
@click.option(
    "--submission", "submission", required=True, type=click.Path(dir_okay=False, path_type=Path),
    help="JSONL of submissions: one {competition_id, submission_path} object a line.",
)
@click.option(
    "--output-dir", "output_dir", required=True, type=click.Path(file_okay=False, path_type=Path),
    help="Folder for <timestamp>_grading_report.json.",
)
@data_dir_option
@competitions_option
@_with_registry
def grade(registry: CompetitionRegistry, submission: Path, output_dir: Path) -> None:
    """Grade a submission JSONL and write MLE-bench's aggregate grading report.

    The report has MLE-bench's totals (total_runs, total_valid_submissions, total_medals,
    total_gold_medals ...) and one report per submission under competition_reports. A
    competition that is unknown or not prepared is graded as no valid submission, with the
    reason in its report's `error`; the batch goes on. The totals are printed. Each report also
    lists under `mlebench_divergence` where MLE-bench's own grader would grade the file
    differently (its looseness the file triggers, with MLE-bench's would-be score and medal).

    Example:

    \b
        mleaudit grade --submission runs/submission.jsonl --output-dir grades/
    """
    from mleaudit.grading.batch import grade_jsonl

    try:
        target, aggregate = grade_jsonl(submission, registry, output_dir)
    except OSError as exc:
        raise GradingCliError(f"cannot write the report to {output_dir}: {exc.strerror or exc}") from None
    totals = {k: v for k, v in aggregate.items() if k != "competition_reports"}
    click.echo(json.dumps(totals, indent=2))
    invalid = sum(not r["valid_submission"] for r in aggregate["competition_reports"])
    click.echo(f"report written to {target}", err=True)
    if invalid:
        click.echo(f"{invalid} submission(s) missing, invalid or not graded: see 'error' in their reports", err=True)
    _echo_divergences(aggregate["competition_reports"])


def _echo_divergences(reports: list[dict[str, Any]]) -> None:
    """One stderr line each for the submissions MLE-bench's grader would grade differently."""
    diverging = [r for r in reports if r.get("mlebench_divergence")]
    unchecked = [r for r in reports if r.get("mlebench_divergence_skipped")]
    medals = sum(any(d.get("medal_only_under_mlebench") for d in r["mlebench_divergence"]) for r in diverging)
    if diverging:
        click.echo(f"{len(diverging)} submission(s) MLE-bench's grader would grade differently, {medals} with a medal "
                   "only under MLE-bench's grader: see 'mlebench_divergence' in their reports", err=True)
    if unchecked:
        click.echo(f"{len(unchecked)} submission(s) not checked against MLE-bench's looseness: see "
                   "'mlebench_divergence_skipped' in their reports", err=True)


@click.command("grade-sample")
@click.argument("csv", type=click.Path(path_type=Path))
@click.argument("competition_id", metavar="ID")
@data_dir_option
@competitions_option
@_with_registry
def grade_sample(registry: CompetitionRegistry, csv: Path, competition_id: str) -> None:
    """Grade one submission CSV and print the grading report as JSON.

    The report has MLE-bench's fields (score, medal thresholds, gold_medal ... valid_submission)
    plus `error`, `leaderboard_source` and `mlebench_divergence` (where MLE-bench's own grader
    would grade the file differently). A missing or invalid submission is reported with
    valid_submission false and the reason in `error`; the exit code is 0 either way.

    Example:

    \b
        mleaudit grade-sample runs/r1/submission/submission.csv spaceship-titanic
    """
    from mleaudit.grading.grade import grade_submission

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
@click.option(
    "--split", "split", default=None, metavar="NAME",
    help="Only this MLE-bench split: lite (= low), low, medium, high, dev, split75, systemcard.",
)
@data_dir_option
@competitions_option
@_with_registry
def list_competitions(registry: CompetitionRegistry, split: str | None) -> None:
    """List competitions: id, metric, direction, leaderboard source and size, prepared or not.

    Example:

    \b
        mleaudit competitions list --data-dir ~/mle-data
        mleaudit competitions list --split lite
    """
    from mleaudit.grading.leaderboard import load_leaderboard

    ids = registry.ids_in_split(split) if split is not None else registry.ids()
    rows = [("ID", "METRIC", "BETTER", "LEADERBOARD", "TEAMS", "PREPARED")]
    for spec in (registry.get(cid) for cid in ids):
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
    from mleaudit.grading.leaderboard import load_leaderboard
    from mleaudit.grading.medals import medal_thresholds

    spec = registry.get(competition_id)
    info = spec.to_dict()
    if spec.has_leaderboard:
        leaderboard = load_leaderboard(spec.leaderboard_path)
        info["leaderboard_teams"] = leaderboard.n_teams
        info["medal_thresholds"] = medal_thresholds(leaderboard, spec.metric.higher_is_better).to_dict()
    else:
        info["leaderboard_teams"] = None
        info["medal_thresholds"] = None
    info["prepared"] = registry.is_prepared(spec.id)
    info["public_dir"] = str(registry.public_dir(spec.id))
    info["private_dir"] = str(registry.private_dir(spec.id))
    click.echo(_dump(info))


@click.group("kernels")
def kernels() -> None:
    """Fetch the public Kaggle notebooks of a competition as a reference corpus.

    Needs the optional kaggle package (pip install 'mleaudit[kaggle]') and Kaggle credentials.

    Example:

    \b
        mleaudit kernels fetch spaceship-titanic --top 20 -o corpus/spaceship-titanic
    """


@kernels.command("fetch")
@click.argument("competition_id", metavar="ID")
@click.option("--top", type=click.IntRange(min=1), default=50, show_default=True, help="How many notebooks, most voted first.")
@click.option(
    "-o", "--output", "output", required=True, type=click.Path(file_okay=False, path_type=Path),
    help="Corpus folder: receives <owner>/<slug>.<ext> files and kernels.txt.",
)
@data_dir_option
@competitions_option
@_with_registry
def fetch_kernels(registry: CompetitionRegistry, competition_id: str, top: int, output: Path) -> None:
    """Download the top public notebooks of a competition into a corpus folder.

    The notebooks are saved as <owner>/<slug>.ipynb (or .py, .r ...), the layout whose reference
    ids are Kaggle's owner/slug, with a kernels.txt manifest of what was saved. Pass the folder to
    `mleaudit audit --corpus`, or save it as competitions/<id>/kernels to make it the default
    corpus. Without the kaggle package, credentials or network it fails at once (exit 2).

    Example:

    \b
        mleaudit kernels fetch leaf-classification --top 10 -o corpus/leaf
    """
    from mleaudit.grading.kaggle import connect_kaggle, fetch_top_kernels

    spec = registry.get(competition_id)
    client = connect_kaggle()
    try:
        fetched = fetch_top_kernels(client, spec.id, output, top=top)
    except OSError as exc:
        raise GradingCliError(f"cannot write to {output}: {exc.strerror or exc}") from None
    for ref, reason in fetched.failed.items():
        click.echo(f"{ref}: not saved: {reason}", err=True)
    click.echo(f"{spec.id}: {len(fetched.saved)} notebook(s) saved in {output} (kernels.txt lists them)")
    if not fetched.saved:
        raise GradingCliError(f"no notebook of {spec.id} could be saved")
