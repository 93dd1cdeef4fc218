"""``mleaudit similarity compare``: agent files scored against reference kernels, a batch at a time."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Iterator

import click

from mleaudit.audit.cli_options import InputError, jobs_option, rules_option
from mleaudit.audit.errors import AuditError
from mleaudit.audit.model import Skipped
from mleaudit.audit.similarity.cli.compare_output import (
    _compare_order,
    _compare_record,
    _compare_tsv_row,
    _kept_rows,
    _Spill,
    _write_compare,
)
from mleaudit.audit.similarity.cli.inputs import _collect
from mleaudit.audit.similarity.cli.output import _reasons, _safe
from mleaudit.audit.units import CodeUnit

#: Agent files compared per call of the comparison by ``similarity compare``: the pairs (with
#: their fragments) of one batch are written out before the next batch is measured, so memory
#: stays bounded whatever the number of agent files. Each call sets up the corpus once more (a few
#: seconds on hundreds of kernels), hence whole batches rather than single files.
COMPARE_BATCH_FILES = 16
#: With ``--all`` every pair carries every fragment (tens of megabytes per agent file): smaller batches.
COMPARE_BATCH_FILES_ALL = 4


def _batches(agents: list[CodeUnit], size: int) -> Iterator[list[CodeUnit]]:
    """``agents`` in batches of ``size`` files; the units of one path stay together."""
    by_path: dict[str, list[CodeUnit]] = {}
    for unit in agents:
        by_path.setdefault(unit.path, []).append(unit)
    groups = list(by_path.values())
    for start in range(0, len(groups), size):
        yield [unit for group in groups[start:start + size] for unit in group]



@click.command("compare")
@click.argument("agent_paths", nargs=-1, required=True)
@click.option("--reference", "reference_dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Folder of reference kernels (.py/.ipynb, searched recursively).")
@click.option("--index", "index_path", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="A corpus index built with `mleaudit corpus build` (instead of --reference).")
@click.option("--boilerplate", "boilerplate_dirs", multiple=True, type=click.Path(file_okay=False, path_type=Path),
              help="Folder of starter code that never counts as copied (repeatable; with --reference).")
@click.option("--top", type=click.IntRange(min=1), default=None,
              help="Keep the N highest-scoring references per agent file. Without it, each agent file "
                   "lists the pairs the comparison keeps: its 10 highest-scoring references, its 10 of "
                   "highest agent containment, and every flagged one. With --index, the index scores "
                   "its first N candidates per agent file (default 5) plus every kernel the copy detector "
                   "flags: all that its evidence bounds cannot exclude when they are at most 256 (after 1,024 "
                   "by the cheapest bound), else the 64 best, and a note names the files so cut.")
@click.option("--all", "all_pairs", is_flag=True,
              help="List every (agent file, reference) pair; with --index, score every candidate and every "
                   "kernel the evidence bound cannot exclude (slow and large on big corpora; not with --top).")
@jobs_option("score the agent files", dest="compare_jobs")
@click.option("--format", "fmt", type=click.Choice(["tsv", "json"]), default="tsv", show_default=True,
              help="Output format (json adds the fragments with line spans on both sides).")
@rules_option
def compare_command(agent_paths: tuple[str, ...], reference_dir: Path | None, index_path: Path | None,
                    boilerplate_dirs: tuple[Path, ...], top: int | None, all_pairs: bool, compare_jobs: int,
                    fmt: str, rules: Path | None) -> None:
    """Score agent files against reference kernels with the copy detector.

    One row per (agent file, reference kernel): agent, reference, similarity,
    agent_containment, reference_containment, longest_fragment, total_overlap, score, flagged;
    sorted by score, highest first; per agent file, the 10 highest-scoring references, the 10
    of highest agent containment and every flagged one (--top N: the N highest-scoring; --all:
    every reference). `score` (in [0, 1)) says how likely the agent file copied
    code from that kernel, renamed or split up or not; `flagged` is true when it reaches the
    threshold of the similarity rule in rules/plagiarism/ (the `audit` command applies the same
    rule). The JSON output adds each pair's fragments with line spans on both sides (notebook
    cell and line for .ipynb). A file too short for one fingerprint (fewer tokens than one
    k-gram) has no figure: its rows say "too short to compare" (JSON: "too_short": true and
    null similarity and containments).

    The agent files are compared a batch at a time (16 files; 4 with --all, whose pairs carry
    every fragment) and each batch's rows go to a temporary file at once, so memory stays
    bounded however many agent files are given; the output (the same sorted table or JSON
    document) is written from that file, the JSON pair by pair.

    Example:

        mleaudit similarity compare runs/x/code --reference kernels/titanic --top 5

        mleaudit similarity compare solution.py --index titanic.index --format json

        mleaudit similarity compare runs/x/code --reference kernels/ -j 0
    """
    from mleaudit.audit.similarity import (
        DEFAULT_MAX_PAIRS_PER_AGENT,
        SimilarityOptions,
        compare,
        load_reference_corpus,
    )
    from mleaudit.audit.score_threshold import load_score_threshold
    from mleaudit.audit.similarity.comparison import decodings_of_pairs

    if (reference_dir is None) == (index_path is None):
        raise InputError("give exactly one of --reference DIR and --index INDEX")
    if index_path is not None and boilerplate_dirs:
        raise InputError("--boilerplate applies to --reference; an index keeps the boilerplate it was built with")
    if top is not None and all_pairs:
        raise InputError("give at most one of --top N and --all")
    decodings: dict = {}
    agent_decodings: list = []
    agents, skipped = _collect(agent_paths, agent_decodings)
    decodings.update((d.path, d) for d in agent_decodings)
    # An empty file has no code to compare: say so rather than list pairs of zeros.
    skipped.extend(Skipped(path=u.path, reason="empty file (no code)") for u in agents if not u.text.strip())
    agents = [u for u in agents if u.text.strip()]
    if not agents:
        raise InputError("no readable .py/.ipynb agent file" + _reasons(skipped))
    corpus = None
    boilerplate: list[CodeUnit] = []
    if reference_dir is not None:
        # Read the inputs before the rules, so that a wrong folder is reported at once.
        try:
            corpus = load_reference_corpus(reference_dir)
            for folder in boilerplate_dirs:
                boilerplate.extend(load_reference_corpus(folder).units)
        except AuditError as exc:
            raise InputError(str(exc)) from exc
        if not corpus.units:
            raise InputError(f"{reference_dir}: no readable .py/.ipynb reference kernel" + _reasons(corpus.skipped))
    threshold = load_score_threshold(rules)
    options = SimilarityOptions(score_threshold=threshold,
                                max_pairs_per_agent=None if all_pairs else (top or DEFAULT_MAX_PAIRS_PER_AGENT))
    batch = COMPARE_BATCH_FILES_ALL if all_pairs else COMPARE_BATCH_FILES
    if corpus is not None:
        skipped.extend(corpus.skipped)
    spill = _Spill()
    digest, report_options, warned_scores = "", options, False
    try:
        for number, group in enumerate(_batches(agents, batch)):
            try:
                if corpus is None:
                    report = _compare_with_index(index_path, group, options, top=top, all_pairs=all_pairs,
                                                 corpus_skipped=number == 0)
                else:
                    report = compare(group, corpus.units, options, boilerplate=boilerplate,
                                     jobs=compare_jobs)
            except AuditError as exc:
                raise InputError(str(exc)) from exc
            skipped.extend(report.skipped)
            kept = list(_kept_rows(report.pairs, top))
            # the kernels of the rows written, however they were read
            listed = decodings_of_pairs(kept, report.decodings if corpus is None else corpus.decodings)
            for decoding in listed:
                if decoding.path not in decodings and fmt != "json":
                    click.echo(f"read reference {_safe(decoding.path)} as {_safe(decoding.encoding)}: "
                               f"{_safe(decoding.note)}", err=True)
                decodings[decoding.path] = decoding
            digest, report_options = report.corpus_digest, report.options
            warned_scores = warned_scores or any(p.score or p.evidence_fragments for p in report.pairs)
            for pair in kept:
                if fmt == "json":
                    text = json.dumps(_compare_record(pair), indent=2, sort_keys=True).replace("\n", "\n    ")
                    spill.add(_compare_order(pair), text)
                else:
                    spill.add(_compare_order(pair), "\t".join(
                        _safe(value) for value in _compare_tsv_row(pair)) + "\n")
            del report
        if index_path is not None and len(spill) and not warned_scores:
            click.echo(f"warning: the corpus index {index_path} returned no copy-detector scores; every pair has "
                       "score 0 and is not flagged (compare with --reference for scores)", err=True)
        _write_compare(spill, fmt, threshold=threshold, options=report_options, digest=digest, skipped=skipped,
                       decodings=[decodings[path] for path in sorted(decodings)])
    finally:
        spill.close()



def _compare_with_index(index_path: Path, agents: list[CodeUnit], options, *, top: int | None, all_pairs: bool,
                        corpus_skipped: bool = True):
    """``load_corpus_index(path).compare(agents, options, top=...)``, every failure an input error.

    ``--top N`` scores the first N candidates of each agent file (plus the flagged pairs among
    the references checked with the evidence bound); ``--all`` scores every candidate and checks
    every reference the bound cannot exclude; neither, the index's default.
    """
    try:
        from mleaudit.audit.similarity.index import DEFAULT_TOP, load_corpus_index
    except ImportError as exc:
        raise InputError(f"cannot read the corpus index {index_path}: corpus indexes are not available "
                         f"in this installation ({exc})") from exc
    if not index_path.is_file():
        raise InputError(f"cannot read the corpus index {index_path}: no such file")
    try:
        index = load_corpus_index(index_path)
        try:
            report = index.compare(agents, options, top=None if all_pairs else (top or DEFAULT_TOP),
                                   include_corpus_skipped=corpus_skipped)
            stages = getattr(index, "last_bound_scored", [])
            budgeted = [stage["path"] for stage in stages if not stage.get("exhaustive", True) and stage.get("seed_bound", True)]
            if any(not stage.get("seed_bound", True) for stage in stages):
                click.echo(f"note: {index_path} holds no tile seeds (built before they were stored): the copy detector "
                           "scored the first candidates and a few further sources only; rebuild the index "
                           "(mleaudit corpus build) for the exhaustive search", err=True)
            if budgeted:
                click.echo(f"note: for {len(budgeted)} of these {len(agents)} agent file(s) more references could "
                           "reach the copy threshold than the default search checks (the highest bounds were checked; "
                           f"--all checks every one): {', '.join(dict.fromkeys(budgeted))}", err=True)
            return report
        finally:
            close = getattr(index, "close", None)
            if callable(close):
                close()
    except AuditError as exc:
        raise InputError(f"cannot read the corpus index {index_path}: {exc}") from exc
    except (OSError, ValueError) as exc:
        raise InputError(f"cannot read the corpus index {index_path}: {exc}") from exc
