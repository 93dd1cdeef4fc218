"""Shared click options of the ``mleaudit`` commands.

``InputError`` (exit code 2 for usage, config and input errors) and the competitions/data-dir
options are the grading CLI's, so every command spells them the same way.
"""

from __future__ import annotations

from pathlib import Path

import click

from mleaudit.audit.model import Severity
from mleaudit.grading.cli import GradingCliError as InputError
from mleaudit.grading.cli import competitions_option, data_dir_option

__all__ = [
    "DefaultCommandGroup",
    "InputError",
    "competitions_option",
    "data_dir_option",
    "rules_option",
    "format_option",
    "output_option",
    "fail_on_option",
    "baseline_option",
    "jobs_option",
    "corpus_index_option",
    "index_exhaustive_option",
    "check_corpus_index",
]

rules_option = click.option(
    "--rules",
    type=click.Path(file_okay=False, path_type=Path),
    envvar="MLEAUDIT_RULES", show_envvar=True,
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

baseline_option = click.option(
    "--baseline",
    type=click.Path(dir_okay=False, path_type=Path),
    envvar="MLEAUDIT_BASELINE", show_envvar=True,
    default=None,
    help="Reviewer decisions (JSON, from `mleaudit review decide`): dismissed findings are marked and stop counting.",
)


class DefaultCommandGroup(click.Group):
    """A group that runs ``default_command`` when the first argument names no subcommand.

    ``mleaudit audit RUN_DIR`` is then the same as ``mleaudit audit run RUN_DIR`` while
    ``mleaudit audit batch …`` can still be added as a sibling command. A subclass sets
    ``default_command`` to another name.
    """

    default_command = "run"

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and args[0] not in ("-h", "--help"):
            args = [self.default_command, *args]
        return super().parse_args(ctx, args)


def _jobs_value(ctx: click.Context, param: click.Parameter, value: int | None) -> int:
    from mleaudit.audit.cpus import resolve_jobs

    return resolve_jobs(value)


def jobs_option(work: str, *, dest: str = "jobs"):
    """``-j``/``--jobs``: the same meaning on every command (:mod:`mleaudit.audit.cpus`); the value given to
    the command is the number of worker processes.

    Parameters
    ----------
    work : str
        What the processes do, for the help (``"audit the runs"``).
    dest : str
        The command's parameter name.
    """
    return click.option("-j", "--jobs", dest, type=click.IntRange(min=0), default=None, callback=_jobs_value,
                        help=f"Worker processes that {work}; 0: one per CPU (default: one per CPU the machine's "
                             "load leaves idle).")



#: ``--index``: a corpus index instead of a folder of reference notebooks (``audit`` and ``audit batch``).
corpus_index_option = click.option(
    "--index", "corpus_index", type=click.Path(dir_okay=False, path_type=Path), default=None,
    help="A corpus index built with `mleaudit corpus build` to compare the code with, instead of --corpus: the "
         "corpus is read from the index (the 5 closest references per file and every one the copy detector "
         "flags), not re-read for each run. The report then holds no reference texts.")


#: ``--index-exhaustive``: the copy search through a corpus index without its budget.
index_exhaustive_option = click.option(
    "--index-exhaustive", is_flag=True,
    help="With --index: check every reference the copy detector's bounds cannot exclude, however many (slower on "
         "a large corpus). Without it, a code unit with more such references than the search checks is a gap "
         "(similarity-incomplete) and the verdict cannot be CLEAN.")


def check_corpus_index(corpus_index: Path | None, corpus: Path | None, no_similarity: bool,
                       exhaustive: bool = False) -> None:
    """Refuse ``--index`` with ``--corpus`` or ``--no-similarity``, ``--index-exhaustive`` without
    ``--index``, and an index that cannot be opened, before any run is audited (an
    :class:`InputError` naming the file)."""
    if corpus_index is None:
        if exhaustive and no_similarity:
            raise InputError("--index-exhaustive is about the copy search through a corpus index and --no-similarity "
                             "skips the comparison: leave --index-exhaustive out")
        if exhaustive:
            raise InputError("--index-exhaustive is about the copy search through a corpus index: give --index INDEX "
                             "too, or leave it out")
        return
    if corpus is not None:
        raise InputError("give one of --corpus DIR and --index INDEX, not both")
    if no_similarity:
        raise InputError("--index compares the code with a corpus index and --no-similarity skips the comparison: "
                         "give one of them")
    from mleaudit.audit.similarity.index import CorpusIndexError, load_corpus_index

    try:
        with load_corpus_index(corpus_index) as index:
            index.check_usable()
    except CorpusIndexError as exc:
        message = str(exc)  # it names the file first, as a rule
        if str(corpus_index) not in message:
            message = f"{corpus_index}: {message}"
        raise InputError(f"cannot read the corpus index {message}") from exc
