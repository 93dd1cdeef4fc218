"""``mleaudit contamination``: which runs of a competition reproduced public notebook code, and fetched it or not.

Audits the runs (as ``mleaudit audit batch`` does, without grading) against a corpus of public
notebooks, then classifies each flagged pair with the run's logs (:mod:`mleaudit.audit.contamination`).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from mleaudit.audit.cli_options import InputError, competitions_option, data_dir_option, jobs_option, rules_option

__all__ = ["contamination"]


def _kernel_refs(corpus: Path) -> dict[str, list[str]]:
    """Notebook file stem → ``owner/slug`` names from the corpus's ``kernels.txt`` (one ref a line)."""
    refs: dict[str, list[str]] = {}
    listing = corpus / "kernels.txt"
    if not listing.is_file():
        return refs
    for line in listing.read_text(encoding="utf-8", errors="replace").splitlines():
        ref = line.strip()
        if not ref or ref.startswith("#") or "/" not in ref:
            continue
        slug = ref.rstrip("/").rsplit("/", 1)[-1]
        refs.setdefault(slug, []).append(ref)
    return refs


def _entries(source: Path, competition_id: str):
    from mleaudit.audit.batch import BatchEntry, BatchSourceError, discover_runs, looks_like_run

    if source.is_dir() and looks_like_run(source):
        return [BatchEntry(run_id=source.resolve().name, run_dir=source, competition_id=competition_id, listed_at=str(source))]
    try:
        # Runs whose source names no competition are taken as runs of this one.
        entries = discover_runs(source, competition=competition_id)
    except BatchSourceError as exc:
        raise InputError(str(exc)) from exc
    return [e for e in entries if e.competition_id == competition_id or e.refused is not None]


def _print(result: dict, stream) -> None:
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    console = Console(file=stream, highlight=False, soft_wrap=True)
    table = Table(title=f"contamination: {escape(result['competition_id'])}", title_justify="left")
    for column in ("run", "status", "notebook", "longest fragment", "score", "evidence"):
        table.add_column(column)
    for run in result["runs"]:
        if not run["pairs"]:
            table.add_row(escape(run["run_id"]), run["status"], "", "", "", "")
        for pair in run["pairs"]:
            evidence = "; ".join(f"{e['kind']} at {e['where']}" for e in pair["evidence"][:3]) or "-"
            table.add_row(escape(run["run_id"]), pair["status"], escape(pair["reference_id"]), str(pair["longest_fragment"]),
                          f"{pair['score']:.3f}", escape(evidence))
    console.print(table)
    for row in result["competitions"]:
        console.print(f"{escape(row['competition_id'])}: {row['reproduced']} of {row['runs']} run(s) reproduced public code "
                      f"without retrieval ({100 * row['reproduced_share']:.0f} %), {row['retrieved']} retrieved it")
    for failed in result["not_audited"]:
        console.print(f"not audited {escape(failed['run_id'])}: {escape(failed['error'])}")


@click.command("contamination")
@click.argument("competition_id")
@click.option("--runs", "source", type=click.Path(path_type=Path), required=True,
              help="A run folder, an MLE-bench run-group folder, a folder of runs in any layout, a quoted glob "
                   "pattern, or a submission JSONL (as for `audit batch`).")
@click.option("--corpus", type=click.Path(file_okay=False, path_type=Path), required=True,
              help="Folder of the competition's public notebooks (.ipynb/.py; optional kernels.txt of owner/slug refs).")
@jobs_option("audit the runs, one run each at a time")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default=None,
              help="Output format (default: text on the terminal, json for -o).")
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), default=None, help="Write the result here.")
@competitions_option
@data_dir_option
@rules_option
def contamination(competition_id: str, source: Path, corpus: Path, jobs: int, fmt: str | None, output: Path | None,
                  competitions_dir: Path | None, data_dir: Path | None, rules: Path | None) -> None:
    """Per run, the longest fragments shared with public notebooks, fetched or reproduced from memory.

    A flagged pair is "retrieved" when the run's logs or code name the notebook, download
    notebooks (kaggle kernels pull), show the copied lines in a tool output before the agent
    wrote them, or break an external-resource rule; "reproduced" when the logs show none of
    that; "unknown" when the run has no logs. Per competition: the share of runs that
    reproduced public code without retrieval.

    Example:

        mleaudit contamination spaceship-titanic --runs runs/my-run-group --corpus kernels/spaceship-titanic
    """
    from mleaudit.audit.batch import BatchOptions, audit_batch
    from mleaudit.audit.contamination import analyse_run, summarize_contamination
    from mleaudit.audit.errors import AuditError
    from mleaudit.audit.expand import expand_run
    from mleaudit.audit.run import load_run

    if not corpus.is_dir():
        raise InputError(f"{corpus}: no such corpus folder")
    entries = _entries(source, competition_id)
    if not entries:
        raise InputError(f"{source}: no runs of competition {competition_id}")
    options = BatchOptions(jobs=jobs, grade=False, corpus_dir=corpus,
                           competitions_root=competitions_dir, data_dir=data_dir, rules_root=rules)
    results = audit_batch(entries, options)
    refs = _kernel_refs(corpus)
    analysed, failed = [], []
    for result in results:
        if result.report is None:
            failed.append({"run_id": result.entry.run_id, "error": result.error})
            continue
        if (result.report.get("run") or {}).get("competition_id") not in (None, competition_id):
            continue
        try:
            units = expand_run(load_run(result.entry.run_dir))
        except AuditError as exc:
            failed.append({"run_id": result.entry.run_id, "error": str(exc)})
            continue
        analysis = analyse_run(result.report, code_units=units.code_units, log_events=units.log_events, kernel_refs=refs)
        analysed.append(analysis)
    payload = {
        "competition_id": competition_id,
        "corpus": str(corpus),
        "runs": [a.to_dict() for a in analysed],
        "competitions": summarize_contamination(analysed),
        "not_audited": failed,
    }
    if output is not None:
        try:
            with output.open("w", encoding="utf-8") as stream:
                if (fmt or "json") == "json":
                    json.dump(payload, stream, indent=2)
                    stream.write("\n")
                else:
                    _print(payload, stream)
        except OSError as exc:
            raise InputError(f"cannot write {output}: {exc.strerror or exc}") from exc
        click.echo(f"written to {output}", err=True)
    elif fmt == "json":
        json.dump(payload, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        _print(payload, sys.stdout)
