"""``mleaudit similarity``: Dolos-style pair figures and the copy detector from the command line.

Thin click commands over :mod:`audit.similarity`: ``pairs`` prints Dolos's figures for every
pair of the given files (the columns of Dolos's own pair output), ``compare`` scores agent files
against reference kernels (a folder, or a corpus index) with the copy detector and says which
pairs reach the policy threshold of ``rules/plagiarism/``. Library errors become
:class:`audit.cli_options.InputError` (exit code 2).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Iterable

import click

from audit.cli_options import InputError, rules_option
from audit.errors import AuditError
from audit.model import Skipped
from audit.units import CodeUnit

__all__ = ["similarity"]

#: Suffixes read as code.
CODE_SUFFIXES = (".py", ".ipynb")
#: Column order of ``similarity pairs`` (Dolos 3.5.1's pair output).
PAIR_COLUMNS = ("left", "right", "similarity", "totalOverlap", "longestFragment", "leftCovered", "rightCovered",
                "leftTotal", "rightTotal")
#: Column order of ``similarity compare``.
COMPARE_COLUMNS = ("agent", "reference", "similarity", "agent_containment", "reference_containment",
                   "longest_fragment", "total_overlap", "score", "flagged")


def _read_code(path: Path, shown: str) -> CodeUnit | Skipped:
    """A ``.py`` or ``.ipynb`` file as a code unit whose path is ``shown`` (never executed)."""
    from audit.similarity.corpus import MAX_REFERENCE_BYTES, decode_kernel_bytes

    if path.is_symlink():
        return Skipped(path=shown, reason="symbolic link (not followed)")
    size = path.stat().st_size
    if size > MAX_REFERENCE_BYTES:
        return Skipped(path=shown, reason=f"file too large ({size} bytes > {MAX_REFERENCE_BYTES})")
    try:
        data = path.read_bytes()
    except OSError as exc:
        return Skipped(path=shown, reason=f"cannot read: {exc.strerror or exc}")
    # UTF-8 decoded as it is (Dolos keeps "\r\n" and a BOM, and so must the figures); any other
    # encoding as the audit reads it (cp1252, GBK, UTF-16 ...), the encoding said on stderr
    decoded = decode_kernel_bytes(data, shown, notebook=path.suffix.lower() == ".ipynb")
    if isinstance(decoded, Skipped):
        return decoded
    text, decoding = decoded
    if decoding.note is not None:
        click.echo(f"read {shown} as {decoding.encoding}: {decoding.note}", err=True)
    if path.suffix.lower() == ".py":
        return CodeUnit(path=shown, language="python", text=text, source="file")
    from audit.notebooks import NotebookError, read_notebook
    from audit.parsing import LANGUAGES

    try:
        notebook = read_notebook(text, shown)
    except NotebookError as exc:
        return Skipped(path=shown, reason=str(exc))
    if notebook.language not in LANGUAGES:
        return Skipped(path=shown, reason=f"kernel language {notebook.language!r} has no grammar")
    return CodeUnit(path=shown, language=notebook.language, text=notebook.text, cells=notebook.cells,
                    source="notebook")


def _collect(paths: Iterable[str]) -> tuple[list[CodeUnit], list[Skipped]]:
    """Code units of the given files and folders (recursively), paths shown as given."""
    units: list[CodeUnit] = []
    skipped: list[Skipped] = []
    seen: set[str] = set()
    for given in paths:
        root = Path(given)
        if root.is_dir():
            base = given.rstrip("/") or "/"
            found = []
            for path in sorted(root.rglob("*")):
                relative = path.relative_to(root)
                if any(part.startswith(".") for part in relative.parts):
                    continue  # .git, .ipynb_checkpoints
                if path.suffix.lower() in CODE_SUFFIXES and (path.is_file() or path.is_symlink()):
                    found.append((path, f"{base}/{relative.as_posix()}" if base != "/" else f"/{relative.as_posix()}"))
        elif root.is_file() or root.is_symlink():
            if root.suffix.lower() not in CODE_SUFFIXES:
                raise InputError(f"{given}: not a .py or .ipynb file")
            found = [(root, given)]
        else:
            raise InputError(f"{given}: no such file or folder")
        for path, shown in found:
            if shown in seen:
                continue
            seen.add(shown)
            result = _read_code(path, shown)
            (skipped if isinstance(result, Skipped) else units).append(result)
    return units, skipped


def _warn_skipped(skipped: Iterable[Skipped]) -> None:
    for item in skipped:
        click.echo(f"skipped {item.path}: {item.reason}", err=True)


def _tsv(rows: Iterable[Iterable[Any]]) -> None:
    for row in rows:
        click.echo("\t".join(str(value).replace("\t", " ").replace("\n", " ") for value in row))


def _echo_json(data: Any) -> None:
    click.echo(json.dumps(data, indent=2, sort_keys=True))


@click.group("similarity")
def similarity() -> None:
    """Compare code with public kernels: Dolos's figures and the copy detector.

    Example:

        mleaudit similarity pairs kernels/titanic

        mleaudit similarity compare runs/x/code --reference kernels/titanic
    """


@similarity.command("pairs")
@click.argument("paths", nargs=-1, required=True)
@click.option("--format", "fmt", type=click.Choice(["tsv", "json"]), default="tsv", show_default=True,
              help="Output format.")
@click.option("-j", "--jobs", type=click.IntRange(min=0), default=None,
              help="Processes that tokenize the files and compute the pairs (default: one per CPU the "
                   "machine's load leaves idle; 0: one per CPU).")
def pairs_command(paths: tuple[str, ...], fmt: str, jobs: int | None) -> None:
    """Dolos's figures for every pair of the given .py/.ipynb files and folders.

    Columns (as in Dolos's pair output): left, right, similarity, totalOverlap,
    longestFragment, leftCovered, rightCovered, leftTotal, rightTotal. Paths are printed as
    given (a folder's files as FOLDER/relative/path); the left file of a pair is the one that
    sorts first. Default options: k-grams of 23 tokens, windows of 17. Pairs are listed by
    similarity, highest first.

    By default the work is spread over the CPUs that the machine's one-minute load average
    leaves idle (one process on a busy machine, so that shared machines and CI runners are not
    crowded), and only for inputs large enough to gain from it (some 100 000 characters of
    code: a forked process costs a few milliseconds); -j N fixes the number of processes,
    -j 0 uses every CPU. The figures do not depend on it.

    Example:

        mleaudit similarity pairs kernels/titanic

        mleaudit similarity pairs a.py b.ipynb --format json

        mleaudit similarity pairs -j 0 kernels/
    """
    from audit.similarity.allpairs import all_pair_metrics, default_jobs, fingerprint_texts, idle_jobs

    units, skipped = _collect(paths)
    if len(units) < 2:
        raise InputError(f"need at least two readable .py/.ipynb files, found {len(units)}"
                         + (f" ({len(skipped)} skipped)" if skipped else ""))
    units.sort(key=lambda u: u.path)
    jobs = idle_jobs() if jobs is None else (jobs or default_jobs())
    try:
        fingerprints = fingerprint_texts([(unit.text, unit.language) for unit in units], jobs=jobs)
    except (AuditError, KeyError) as exc:
        raise InputError(f"cannot tokenize: {exc}") from exc
    table = all_pair_metrics(fingerprints, jobs=jobs)
    rows = [
        {"left": units[r["left"]].path, "right": units[r["right"]].path, "similarity": r["similarity"],
         "totalOverlap": r["total_overlap"], "longestFragment": r["longest_fragment"],
         "leftCovered": r["left_covered"], "rightCovered": r["right_covered"],
         "leftTotal": r["left_total"], "rightTotal": r["right_total"]}
        for r in table.rows()
    ]
    rows.sort(key=lambda r: -r["similarity"])  # stable: ties keep file order
    if fmt == "json":
        _echo_json({"pairs": rows, "skipped": [s.to_dict() for s in skipped]})
        return
    _warn_skipped(skipped)
    _tsv([PAIR_COLUMNS])
    _tsv([[r["left"], r["right"], f"{r['similarity']:.6f}", *(r[c] for c in PAIR_COLUMNS[3:])] for r in rows])


def _cpus() -> int:
    """CPUs this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def _reasons(skipped: list[Skipped] | tuple[Skipped, ...], shown: int = 5) -> str:
    """`` (N skipped: path: reason; ...)`` for an error message, or ``""``."""
    if not skipped:
        return ""
    listed = "; ".join(f"{s.path}: {s.reason}" for s in skipped[:shown])
    more = f"; and {len(skipped) - shown} more" if len(skipped) > shown else ""
    return f" ({len(skipped)} skipped: {listed}{more})"


def _compare_rows(pairs, top: int | None) -> list:
    ordered = sorted(pairs, key=lambda p: (-p.score, -p.agent_containment, p.agent_path, p.reference_path))
    if top is None:
        return ordered
    kept: dict[str, int] = {}
    rows = []
    for pair in ordered:
        if kept.get(pair.agent_path, 0) < top:
            kept[pair.agent_path] = kept.get(pair.agent_path, 0) + 1
            rows.append(pair)
    return rows


@similarity.command("compare")
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
                   "its first N candidates per agent file (default 5) plus the flagged pairs of up to 3 "
                   "other kernels.")
@click.option("--all", "all_pairs", is_flag=True,
              help="List every (agent file, reference) pair; with --index, score every candidate (slow and "
                   "large on big corpora; not with --top).")
@click.option("-j", "--jobs", "compare_jobs", type=click.IntRange(min=0), default=1, show_default=True,
              help="Processes that score the agent files (0: one per CPU).")
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
    cell and line for .ipynb).

    Example:

        mleaudit similarity compare runs/x/code --reference kernels/titanic --top 5

        mleaudit similarity compare solution.py --index titanic.index --format json

        mleaudit similarity compare runs/x/code --reference kernels/ -j 0
    """
    from audit.similarity import (
        DEFAULT_MAX_PAIRS_PER_AGENT,
        SimilarityOptions,
        compare,
        load_reference_corpus,
        load_score_threshold,
    )

    if (reference_dir is None) == (index_path is None):
        raise InputError("give exactly one of --reference DIR and --index INDEX")
    if index_path is not None and boilerplate_dirs:
        raise InputError("--boilerplate applies to --reference; an index keeps the boilerplate it was built with")
    if top is not None and all_pairs:
        raise InputError("give at most one of --top N and --all")
    agents, skipped = _collect(agent_paths)
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
    try:
        if corpus is None:
            report = _compare_with_index(index_path, agents, options, top=top, all_pairs=all_pairs)
        else:
            report = compare(agents, corpus, options, boilerplate=boilerplate, jobs=compare_jobs or _cpus())
    except AuditError as exc:
        raise InputError(str(exc)) from exc
    skipped.extend(report.skipped)
    if index_path is not None and report.pairs and not any(p.score or p.evidence_fragments for p in report.pairs):
        click.echo(f"warning: the corpus index {index_path} returned no copy-detector scores; every pair has "
                   "score 0 and is not flagged (compare with --reference for scores)", err=True)
    rows = _compare_rows(report.pairs, top)
    if fmt == "json":
        pairs = []
        for pair in rows:
            data = pair.to_dict()
            data.update({"agent": pair.agent_path, "reference": pair.reference_path})
            pairs.append(data)
        _echo_json({"score_threshold": threshold, "options": report.options.to_dict(),
                    "corpus_digest": report.corpus_digest, "pairs": pairs,
                    "skipped": [s.to_dict() for s in skipped]})
        return
    _warn_skipped(skipped)
    _tsv([COMPARE_COLUMNS])
    _tsv([[p.agent_path, p.reference_path, f"{p.similarity:.6f}", f"{p.agent_containment:.6f}",
           f"{p.reference_containment:.6f}", p.longest_fragment, p.total_overlap, f"{p.score:.6f}",
           "true" if p.flagged else "false"] for p in rows])


def _compare_with_index(index_path: Path, agents: list[CodeUnit], options, *, top: int | None, all_pairs: bool):
    """``load_corpus_index(path).compare(agents, options, top=...)``, every failure an input error.

    ``--top N`` scores the first N candidates of each agent file (plus the flagged pairs of
    further sources); ``--all`` scores every candidate; neither, the index's default.
    """
    try:
        from audit.similarity.corpus_index import DEFAULT_TOP, load_corpus_index
    except ImportError as exc:
        raise InputError(f"cannot read the corpus index {index_path}: corpus indexes are not available "
                         f"in this installation ({exc})") from exc
    if not index_path.is_file():
        raise InputError(f"cannot read the corpus index {index_path}: no such file")
    try:
        index = load_corpus_index(index_path)
        try:
            return index.compare(agents, options, top=None if all_pairs else (top or DEFAULT_TOP))
        finally:
            close = getattr(index, "close", None)
            if callable(close):
                close()
    except AuditError as exc:
        raise InputError(f"cannot read the corpus index {index_path}: {exc}") from exc
    except (OSError, ValueError) as exc:
        raise InputError(f"cannot read the corpus index {index_path}: {exc}") from exc
