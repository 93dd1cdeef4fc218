"""``mleaudit audit batch``: audit every run of a run group, a folder of runs, a glob pattern or a submission JSONL.

Writes ``DIR/runs/<slug>-<hash>.json`` (one audit report per run, named by
:func:`mleaudit.audit.batch.report_file_name`), ``DIR/summary.json`` (see :mod:`mleaudit.audit.batch_summary`),
``DIR/summary.html`` (the summary and every run's report in one self-contained page) and
``DIR/results.sarif`` (one SARIF run per audited run), and prints the summary's tables on the
terminal. Every file is written whole (a temporary file renamed over it), so an interrupted
batch leaves no half-written report; running it again writes the same reports.
"""

from __future__ import annotations

import json
import sys
from functools import partial
from pathlib import Path

import click

from mleaudit.audit.cli_options import (InputError, baseline_option, check_corpus_index, competitions_option,
                               corpus_index_option, data_dir_option, index_exhaustive_option, fail_on_option,
                               jobs_option, rules_option)
from mleaudit.audit.model import Severity
from mleaudit.audit.report import EXIT_FINDINGS, EXIT_INCOMPLETE

__all__ = ["audit_batch_command"]


def _write_json(path: Path, data) -> None:
    from mleaudit.audit.batch import write_text_atomic

    try:
        write_text_atomic(path, json.dumps(data, indent=2, sort_keys=False, default=str) + "\n")
    except OSError as exc:
        raise InputError(f"cannot write {path}: {exc.strerror or exc}") from exc


def _check_report_names(entries) -> None:
    """Refuse a batch in which two runs would write one report file (also on a case-insensitive file system)."""
    from mleaudit.audit.batch import report_file_name

    owners: dict[str, str] = {}
    for entry in entries:
        name = report_file_name(entry.run_id).casefold()
        if name in owners:
            raise InputError(f"runs {owners[name]!r} and {entry.run_id!r} would write the same report file {name}")
        owners[name] = entry.run_id


#: Control characters (C0, DEL, C1) and bidirectional overrides: shown as escapes, never sent to the terminal.
_UNPRINTABLE = {code: f"\\x{code:02x}" for code in [*range(0x20), *range(0x7F, 0xA0)]}
_UNPRINTABLE.update({code: f"\\u{code:04x}" for code in [*range(0x202A, 0x202F), *range(0x2066, 0x206A)]})


def _shown(value) -> str:
    """Text from a run (its id, an error naming its files) as rich markup that prints it literally."""
    from rich.markup import escape

    # a run id from a file name that is not UTF-8 holds lone surrogates: shown as escapes
    text = str(value).encode("utf-8", "backslashreplace").decode("utf-8")
    return escape(text.translate(_UNPRINTABLE))


def _print_summary(summary: dict, stream) -> None:
    from rich.console import Console
    from rich.table import Table

    from mleaudit.audit.batch_summary import describe_seeds
    from mleaudit.audit.formatters.common import cluster_side_label

    console = Console(file=stream, highlight=False, soft_wrap=True)
    totals, kept = summary["totals"], summary["totals_excluding_flagged"]
    table = Table(title="MLE-bench totals", title_justify="left")
    table.add_column("field")
    table.add_column("all runs", justify="right")
    table.add_column("uncertified runs disqualified", justify="right")
    for key in totals:
        table.add_row(key, str(totals[key]), str(kept[key]))
    console.print(table)
    coverage = summary.get("coverage") or {}
    if coverage:
        without = coverage['not_graded'] - coverage['not_graded_with_submission']
        console.print(f"runs: {coverage['runs']}; graded {coverage['graded']}; not graded {coverage['not_graded']} "
                      f"({coverage['not_graded_with_submission']} with a submission, {without} without); "
                      f"not audited {coverage['not_audited']}")
    verdicts = summary["verdicts"]
    console.print("verdicts: " + ", ".join(f"{kind} {count}" for kind, count in verdicts.items()))
    for kind, row in (summary.get("not_certified") or {}).items():
        if row["runs"]:
            console.print(f"not certified ({kind}): {row['runs']} run(s), {row['medals']} medal(s) not counted after "
                          "disqualification")
    for label, key in (("all runs", "seeds"), ("uncertified disqualified", "seeds_excluding_flagged")):
        seeds = summary[key]
        if seeds and seeds.get("metrics"):
            medal = seeds["metrics"]["any_medal_percentage"]
            console.print(f"any medal ({label}): {medal['mean']:.1f} ± {medal['standard_error']:.1f} % "
                          f"over {seeds['num_seeds_averaged']} seed(s) × {seeds['num_competitions_per_seed']} competition(s)"
                          + (" (missing runs padded as failed)" if seeds.get("pad_missing") else ""))
        elif seeds:
            console.print(f"any medal ({label}): no seed averaged")
    for line in describe_seeds(summary.get("seeds")):
        console.print(f"[yellow]{_shown(line)}[/yellow]", markup=True)
    if summary["rules"]:
        rules = Table(title="Rules", title_justify="left")
        for column in ("rule", "category", "severity", "runs", "findings", "dismissed"):
            rules.add_column(column, justify="right" if column in ("runs", "findings", "dismissed") else "left")
        for row in summary["rules"]:
            rules.add_row(*(_shown(row.get(key, 0)) for key in ("rule_id", "category", "severity", "runs", "findings",
                                                                "dismissed")))
        console.print(rules)
    for cluster in (summary.get("copy_clusters") or {}).get("clusters", []):
        console.print(f"copy cluster: runs {', '.join(_shown(r) for r in cluster['runs'])}"
                      + (f" with notebooks {', '.join(_shown(n) for n in cluster['notebooks'])}" if cluster["notebooks"] else ""))
        for edge in cluster["edges"]:
            score = edge.get("score")
            console.print(f"  {_shown(cluster_side_label(edge, 'left'))} — {_shown(cluster_side_label(edge, 'right'))}"
                          + (f" (score {score:.2f})" if isinstance(score, (int, float)) else ""))
    skipped = summary.get("source_skipped") or []
    if skipped:
        console.print(f"[yellow]not taken as runs ({len(skipped)}):[/yellow]", markup=True)
        for item in skipped[:20]:
            console.print(f"  {_shown(item['path'])}: {_shown(item['reason'])}")
        if len(skipped) > 20:
            console.print(f"  … {len(skipped) - 20} more (summary.json source_skipped)")
    errors = [run for run in summary["runs"] if run["error"]]
    for run in errors:
        reason = str(run["error"]).removesuffix("; not audited")
        console.print(f"[red]not audited[/red] {_shown(run['run_id'])}: {_shown(reason)}", markup=True)


class _RunFiles:
    """The text of a run's files by run-relative path, for the log origins of the run's flagged
    pairs: the run is loaded on the first look (most runs are never looked at), then kept."""

    def __init__(self, run_dir: Path) -> None:
        self._run_dir = run_dir
        self._run = None
        self._unreadable = False

    def __call__(self, path: str) -> str | None:
        from mleaudit.audit.errors import AuditError
        from mleaudit.audit.pipeline import artifact_text
        from mleaudit.audit.run import load_run

        if self._run is None and not self._unreadable:
            try:
                self._run = load_run(self._run_dir)
            except (AuditError, OSError):
                self._unreadable = True  # no node ids or steps then, as for a journal that cannot be read
        return artifact_text(self._run, path) if self._run is not None else None


def _read_run_code(result):
    """A run's code for the clusters, read and expanded here (an audit that did not hand it back)."""
    from mleaudit.audit.clusters import RunCode
    from mleaudit.audit.errors import AuditError
    from mleaudit.audit.expand import expand_run
    from mleaudit.audit.pipeline import artifact_text
    from mleaudit.audit.report_similarity import record_locations
    from mleaudit.audit.run import load_run
    from mleaudit.audit.starter import starter_units

    try:
        run = load_run(result.entry.run_dir)
        expanded = expand_run(run)
    except AuditError:
        return None  # its report already says what could not be read
    host_text = partial(artifact_text, run)
    return RunCode(run_id=result.entry.run_id, units=expanded.code_units,
                   locations=record_locations(expanded.log_events), host_text=host_text,
                   starter=starter_units(expanded.code_units, host_text, expanded.log_events))


def _clusters(results, jobs: int = 1) -> dict:
    """Copy clusters of the batch: each run's flagged notebook pairs and its code against the other runs'.

    A run's code is the one its audit handed back (``BatchResult.code``: the audit's own
    expansion, its files read again only for the log origins of its flagged pairs); a run
    audited without handing it back is read and expanded here.
    """
    from dataclasses import replace

    from mleaudit.audit.clusters import copy_clusters

    code = []
    for result in results:
        if result.report is None:
            continue
        if result.code is not None:
            code.append(replace(result.code, run_id=result.entry.run_id, host_text=_RunFiles(result.entry.run_dir)))
            continue
        read = _read_run_code(result)
        if read is not None:
            code.append(read)
    return copy_clusters({r.entry.run_id: r.report for r in results if r.report is not None}, code, jobs=jobs)


def _write_batch_views(output_dir: Path, results, summary: dict) -> None:
    """``summary.html`` (summary and every run, self-contained) and ``results.sarif`` (one SARIF run per audited run)."""
    from mleaudit.audit.batch import write_text_atomic
    from mleaudit.audit.formatters.html import render_html
    from mleaudit.audit.formatters.sarif import build_sarif

    reports = [r.report for r in results if r.report is not None]
    try:
        write_text_atomic(output_dir / "summary.html", render_html(reports, title=f"mleaudit · batch of {len(results)} runs",
                                                                   summary=summary))
        write_text_atomic(output_dir / "results.sarif", json.dumps(build_sarif(reports), indent=2) + "\n")
    except OSError as exc:
        raise InputError(f"cannot write to {output_dir}: {exc.strerror or exc}") from exc


def _check_competition(competition_id: str, competitions_dir: Path | None) -> set[str]:
    """Refuse a --competition the registry does not know (every run would go ungraded); the known ids."""
    from mleaudit.grading import CompetitionRegistry, find_competitions_root
    from mleaudit.grading.errors import CompetitionNotFound, GradingError, competition_not_found

    try:
        registry = CompetitionRegistry(find_competitions_root(competitions_dir), Path("."))
        registry.get(competition_id)
        return set(registry.ids())
    except CompetitionNotFound as exc:
        raise InputError(f"--competition: {competition_not_found(exc)}") from exc
    except GradingError as exc:
        raise InputError(f"--competition {competition_id}: {exc}") from exc


@click.command("batch")
@click.argument("source", type=click.Path(path_type=Path))
@click.option("-o", "--output-dir", "output_dir", type=click.Path(file_okay=False, path_type=Path), required=True,
              help="Folder for runs/<slug>-<hash>.json (one report per run), summary.json, summary.html and "
                   "results.sarif (created if missing).")
@jobs_option("audit the runs, one run each at a time")
@click.option("--executor", type=click.Choice(["local", "dask"]), default="local", show_default=True,
              help="Where the runs are audited: a local process pool, or the workers of a dask.distributed "
                   "cluster (--scheduler; the workers must see the run folders and --corpus or --index).")
@click.option("--scheduler", default=None, envvar="MLEAUDIT_DASK_SCHEDULER", show_envvar=True,
              help="The dask scheduler's address for --executor dask (tcp://HOST:8786).")
@click.option("-c", "--competition", "competition_id", default=None,
              help="Competition id of the runs whose source names none (no metadata, no competition_id in the "
                   "JSONL line, no <competition-id>_<uuid> folder name).")
@click.option("--corpus", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Folder of reference notebooks for every run (default: each competition's kernels folder).")
@corpus_index_option
@index_exhaustive_option
@click.option("--no-similarity", is_flag=True, help="Skip the comparison with reference notebooks.")
@click.option("--no-grade", is_flag=True, help="Do not grade the submissions.")
@click.option("--include-experimental", is_flag=True, help="Also run experimental rules.")
@click.option("--pad-missing", is_flag=True,
              help="Seed figures: keep every seed up to the largest number of runs of one competition and count a "
                   "competition without a run for a seed as a failed run (no submission, no medal), as MLE-bench's "
                   "aggregate_grading_reports.py --pad-missing does. Default: average complete seeds only and list "
                   "the runs left out.")
@baseline_option
@competitions_option
@data_dir_option
@rules_option
@fail_on_option
def audit_batch_command(source: Path, output_dir: Path, jobs: int, executor: str, scheduler: str | None,
                        competition_id: str | None,
                        corpus: Path | None, corpus_index: Path | None, index_exhaustive: bool, no_similarity: bool,
                        no_grade: bool, include_experimental: bool, pad_missing: bool, baseline: Path | None,
                        competitions_dir: Path | None, data_dir: Path | None, rules: Path | None, fail_on: str) -> None:
    """Audit every run of a run group, a folder of runs, a glob pattern or a submission JSONL.

    SOURCE is an MLE-bench run-group folder (runs/<run-group>/ with metadata.json and one
    <competition-id>_<uuid> folder per run), a folder of runs in any layout `mleaudit audit`
    reads (each sub-folder a run; in a folder without sub-folders each code, notebook or log
    file a single-file run), a quoted glob pattern ('runs/*/seed-*') whose matches are the
    runs, or a submission JSONL (competition_id, submission_path, logs_path, code_path per
    line). A run whose folder resolves outside the run group (or the JSONL's folder), and a
    malformed JSONL line, are listed as not audited with the reason; the batch goes on.
    --competition names the competition of the runs whose source names none. Each run gets its report in
    OUTPUT_DIR/runs/<run-id>-<hash>.json (summary.json names each run's file);
    OUTPUT_DIR/summary.json holds MLE-bench's totals with and
    without the flagged runs, mean ± SEM over seeds, pass@k, per-rule, per-category and
    per-competition counts and copy clusters; when competitions have uneven numbers of runs
    it names every run the seed figures leave out (or, with --pad-missing, every padded
    competition and seed); summary.html shows it with every run's report
    (self-contained) and results.sarif holds every run's findings (SARIF 2.1.0). A run that cannot be audited is listed with its reason; the batch
    goes on. Exit code 1 when some run has a finding at or above --fail-on, else 3 when some
    run is incomplete or not audited, else 0; 2 for a source or option that cannot be used.

    Example:

        mleaudit audit batch runs/2024-10-01T00-00-00-GMT_run-group_aide -j 4 -o audit-out/
    """
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from mleaudit.audit.batch import BatchOptions, BatchSourceError, audit_batch, discover_runs, report_file_name
    from mleaudit.audit.batch_dask import DaskUnavailable
    from mleaudit.audit.batch_summary import summarize_batch

    if executor == "dask" and not scheduler:
        raise InputError("--executor dask needs --scheduler ADDRESS (or MLEAUDIT_DASK_SCHEDULER)")
    if executor == "dask" and click.get_current_context().get_parameter_source(
            "jobs") is click.core.ParameterSource.COMMANDLINE:
        raise InputError("-j sets the local pool's processes; with --executor dask the cluster's workers decide")
    known = _check_competition(competition_id, competitions_dir) if competition_id is not None else None
    check_corpus_index(corpus_index, corpus, no_similarity, index_exhaustive)
    if executor == "local" and scheduler and click.get_current_context().get_parameter_source(
            "scheduler") is click.core.ParameterSource.COMMANDLINE:
        raise InputError("--scheduler is for --executor dask; the local executor uses no scheduler")
    try:
        entries = discover_runs(source, competition=competition_id, known_competitions=known)
    except BatchSourceError as exc:
        raise InputError(str(exc)) from exc
    _check_report_names(entries)
    if output_dir.exists() and not output_dir.is_dir():
        raise InputError(f"{output_dir} exists and is not a folder")
    runs_dir = output_dir / "runs"
    try:
        runs_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"cannot create {runs_dir}: {exc.strerror or exc}") from exc
    options = BatchOptions(
        jobs=jobs,
        similarity=not no_similarity,
        grade=not no_grade,
        corpus_dir=corpus,
        corpus_index=corpus_index,
        index_exhaustive=index_exhaustive,
        include_experimental=include_experimental,
        competitions_root=competitions_dir,
        data_dir=data_dir,
        rules_root=rules,
        baseline_path=baseline,
        fail_on=Severity.parse(fail_on),
    )
    if baseline is not None:
        from mleaudit.audit.review import BaselineError, load_baseline

        try:
            load_baseline(baseline)  # fail once, before any run is audited
        except BaselineError as exc:
            raise InputError(str(exc)) from exc
    with Progress(TextColumn("auditing"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  TextColumn("{task.description}"), console=None, transient=True,
                  disable=not sys.stderr.isatty()) as progress:
        task = progress.add_task("", total=len(entries))

        def advance(result) -> None:
            if result.report is not None:
                _write_json(runs_dir / report_file_name(result.entry.run_id), result.report)
            progress.update(task, advance=1, description=_shown(result.entry.run_id))

        try:
            results = audit_batch(entries, options, progress=advance,
                                  scheduler=scheduler if executor == "dask" else None)
        except DaskUnavailable as exc:
            raise InputError(str(exc)) from exc
    # the run — run comparison uses the local pool's processes (with dask, this machine's one)
    clusters = _clusters(results, jobs if executor == "local" else 1) if options.similarity else None
    summary = summarize_batch(results, clusters=clusters, pad_missing=pad_missing)
    summary = {"source": str(source),
               "source_skipped": [{"path": path, "reason": reason} for path, reason in entries.skipped], **summary}
    _write_json(output_dir / "summary.json", summary)
    _write_batch_views(output_dir, results, summary)
    _print_summary(summary, sys.stdout)
    audited = sum(1 for result in results if result.report is not None)
    click.echo(f"{audited} of {len(results)} run(s) audited; reports in {runs_dir}, summary in "
               f"{output_dir / 'summary.json'}", err=True)
    threshold = Severity.parse(fail_on)
    worst = [Severity.parse(f["severity"]) for r in results if r.report for f in r.report.get("findings", [])
             if (f.get("review") or {}).get("decision") != "dismissed"]
    if worst and max(worst) >= threshold:
        sys.exit(EXIT_FINDINGS)
    if any(kind in ("incomplete", "error") for kind in (run["verdict"] for run in summary["runs"])):
        # Nothing at or above --fail-on, but some run was not fully audited (or not at all).
        sys.exit(EXIT_INCOMPLETE)
