"""The ``mleaudit`` command line: thin click commands over the library.

Exit codes (:mod:`mleaudit.audit.report`): 0 = clean (no finding at or above ``--fail-on``, nothing left
unchecked); 1 = at least one finding at or above ``--fail-on``; 2 = usage, config or input error
(:class:`mleaudit.audit.cli_options.InputError`); 3 = no such finding, but the audit is incomplete (verdict
``incomplete``); 4 = an unexpected internal error (never a traceback).
"""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path


def _load_numpy_with_one_blas_thread() -> None:
    """Load numpy with a one-thread BLAS, leaving the environment as it was.

    No command multiplies matrices, but OpenBLAS starts a thread per CPU when numpy loads:
    some 50 ms of CPU that delay the start on a busy machine, and threads that keep spinning
    for a while afterwards on the CPUs the similarity commands fork their workers onto. A
    value the user set is kept. OpenBLAS reads the variable once, when it loads, so it is
    removed again: processes the commands start (sandboxed agents) see the environment
    unchanged.
    """
    if "numpy" in sys.modules or "OPENBLAS_NUM_THREADS" in os.environ:
        return
    os.environ["OPENBLAS_NUM_THREADS"] = "1"
    try:
        import numpy  # noqa: F401
    finally:
        del os.environ["OPENBLAS_NUM_THREADS"]


_load_numpy_with_one_blas_thread()

import click  # noqa: E402

from mleaudit.audit import __version__  # noqa: E402
from mleaudit.audit.cli_options import (  # noqa: E402
    DefaultCommandGroup,
    check_corpus_index,
    corpus_index_option,
    index_exhaustive_option,
    InputError,
    baseline_option,
    competitions_option,
    data_dir_option,
    fail_on_option,
    format_option,
    output_option,
    rules_option,
)
from mleaudit.audit.errors import AuditError  # noqa: E402
from mleaudit.audit.formatters import FORMATTERS, get_formatter  # noqa: E402
from mleaudit.audit.formatters.terminal import terminal_safe  # noqa: E402
from mleaudit.audit.model import Severity  # noqa: E402
from mleaudit.audit.report import EXIT_INTERNAL_ERROR, exit_code  # noqa: E402
from mleaudit.grading.cli import competitions as competitions_group  # noqa: E402
from mleaudit.grading.cli import grade, grade_sample, kernels, prepare  # noqa: E402
from mleaudit.grading.errors import GradingError  # noqa: E402

__all__ = ["main"]

#: Exit code when the output's reader closed the pipe early: 128 + SIGPIPE, as a shell reports it.
EXIT_BROKEN_PIPE = 141


class _FailClosedGroup(click.Group):
    """The root group: an unexpected exception becomes a one-line error and exit code 4.

    A traceback would exit with 1, the code for "findings", and could be read as an audit
    result; the traceback itself is logged at debug level (``-vv``).
    """

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except (click.ClickException, click.exceptions.Exit, click.Abort, KeyboardInterrupt, SystemExit):
            raise
        except BrokenPipeError:
            # The reader of the output went away (`| head`): stop quietly, as Unix tools do, with
            # 128 + SIGPIPE; the output was cut, so nothing is concluded from the exit code 0/1.
            try:  # Python's final flush of stdout must not fail again
                os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            except (OSError, ValueError):
                pass  # no real file behind stdout (a test runner's buffer)
            raise SystemExit(EXIT_BROKEN_PIPE) from None
        except Exception as exc:  # noqa: BLE001 - the last line of defence of every command
            logging.getLogger("mleaudit.audit.cli").debug("internal error", exc_info=True)
            message = terminal_safe(f"{type(exc).__name__}: {exc}")[:2000]
            error = click.ClickException(f"internal error, nothing may be concluded from this run: {message} "
                                         "(run with -vv for the traceback)")
            error.exit_code = EXIT_INTERNAL_ERROR
            raise error from None


@click.group(cls=_FailClosedGroup,
             context_settings={"help_option_names": ["-h", "--help"], "auto_envvar_prefix": "MLEAUDIT"})
@click.version_option(__version__, prog_name="mleaudit")
@click.option("-v", "--verbose", count=True, help="More logging on stderr (-vv for debug).")
def main(verbose: int) -> None:
    """Audit MLE-bench agent runs: grade, check the rules, compare with public notebooks.

    Example:

        mleaudit audit examples/runs/llm-digits
    """
    level = logging.WARNING - 10 * min(verbose, 2)
    logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s", stream=sys.stderr)


@main.group("audit", cls=DefaultCommandGroup)
def audit_group() -> None:
    """Audit agent runs ('mleaudit audit RUN_DIR' audits one run).

    'mleaudit audit RUN_DIR' is short for 'mleaudit audit run RUN_DIR'; its options
    (--competition, --corpus, -o, --format, --fail-on, ...) are listed by
    'mleaudit audit run --help'.

    Example:

        mleaudit audit examples/runs/honest-digits -o report.json
    """


@audit_group.command("run")
@click.argument("run_dir", type=click.Path(path_type=Path))
@click.option("-c", "--competition", "competition_id", default=None, help="Competition id (default: from the run's metadata).")
@click.option("--corpus", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Folder of reference notebooks (default: the competition's kernels folder).")
@corpus_index_option
@index_exhaustive_option
@click.option("--no-similarity", is_flag=True, help="Skip the comparison with reference notebooks.")
@click.option("--no-grade", is_flag=True, help="Do not grade the submission.")
@click.option("--include-experimental", is_flag=True, help="Also run experimental rules.")
@baseline_option
@competitions_option
@data_dir_option
@rules_option
@format_option(sorted(FORMATTERS))
@output_option
@fail_on_option
def audit_run_command(run_dir: Path, competition_id: str | None, corpus: Path | None, corpus_index: Path | None,
                      index_exhaustive: bool, no_similarity: bool,
                      no_grade: bool, include_experimental: bool, baseline: Path | None, competitions_dir: Path | None, data_dir: Path | None,
                      rules: Path | None, fmt: str | None, output: Path | None, fail_on: str) -> None:
    """Audit one run: grade its submission, apply the rules, compare its code with the corpus.

    RUN_DIR is an MLE-bench run directory (submission/, logs/, code/, run.log) or a bare folder
    of .py/.ipynb/.log/.json files. Without -o the report goes to the terminal; with -o the file
    gets the report (json unless --format says otherwise) and the terminal a text summary.

    Example:

        mleaudit audit examples/runs/llm-digits

        mleaudit audit runs/x --competition spaceship-titanic --corpus kernels/ -o report.json
    """
    from mleaudit.audit.pipeline import AuditRequest, run_audit

    check_corpus_index(corpus_index, corpus, no_similarity, index_exhaustive)
    request = AuditRequest(
        run_dir=run_dir,
        competition_id=competition_id,
        corpus_dir=corpus,
        corpus_index=corpus_index,
        index_exhaustive=index_exhaustive,
        similarity=not no_similarity,
        grade=not no_grade,
        include_experimental=include_experimental,
        competitions_root=competitions_dir,
        data_dir=data_dir,
        rules_root=rules,
        baseline_path=baseline,
        fail_on=Severity.parse(fail_on),
    )
    if output is not None and not output.parent.is_dir():
        raise InputError(f"cannot write the report to {output}: folder {output.parent} does not exist")
    try:
        report = run_audit(request, progress=lambda msg: click.echo(msg, err=True))
    except (AuditError, GradingError) as exc:
        raise InputError(str(exc)) from exc
    except OSError as exc:  # e.g. --data-dir names a file, a folder that cannot be created
        raise InputError(f"{exc.filename or ''}: {exc.strerror or exc}".lstrip(": ")) from exc
    if output is not None:
        try:
            with output.open("w", encoding="utf-8") as stream:
                get_formatter(fmt or "json")(report, stream)
        except OSError as exc:
            raise InputError(f"cannot write the report to {output}: {exc.strerror or exc}") from exc
        get_formatter("text")(report, sys.stdout)
        click.echo(f"report written to {output}", err=True)
    else:
        get_formatter(fmt or "text")(report, sys.stdout)
    code = exit_code(report, Severity.parse(fail_on))
    if code:
        sys.exit(code)


main.add_command(prepare)
main.add_command(grade)
main.add_command(grade_sample)
main.add_command(kernels)
main.add_command(competitions_group)
from mleaudit.audit.similarity.corpus_cli import corpus as corpus_group
main.add_command(corpus_group)
from mleaudit.audit.similarity.cli import similarity as similarity_group
main.add_command(similarity_group)
from mleaudit.audit.rules.cli import rules as rules_group
main.add_command(rules_group)
from mleaudit.audit.batch_cli import audit_batch_command
audit_group.add_command(audit_batch_command)
from mleaudit.audit.review_cli import review as review_group
main.add_command(review_group)
from mleaudit.audit.contamination_cli import contamination as contamination_command
main.add_command(contamination_command)
from mleaudit.sandbox import cli as sandbox_cli


def _audit_after_sandbox_run(run_dir: Path, competition_id: str | None, competitions_dir: Path | None,
                             data_dir: Path | None) -> int:
    """``mleaudit run --audit``: audit the run dir the sandbox just wrote, print the text report and
    return the exit code of ``--fail-on high`` (the sandbox calls it; it never imports the audit)."""
    from mleaudit.audit.pipeline import AuditRequest, run_audit

    request = AuditRequest(run_dir=run_dir, competition_id=competition_id, competitions_root=competitions_dir,
                           data_dir=data_dir)
    try:
        report = run_audit(request, progress=lambda msg: click.echo(msg, err=True))
    except (AuditError, GradingError) as exc:
        raise sandbox_cli.SandboxCliError(f"audit of {run_dir}: {exc}") from None
    get_formatter("text")(report, sys.stdout)
    return exit_code(report, Severity.HIGH)


sandbox_cli.audit_after_run = _audit_after_sandbox_run
main.add_command(sandbox_cli.run_command)
main.add_command(sandbox_cli.sandbox)
