"""``mleaudit similarity``: Dolos-style pair figures and the copy detector from the command line.

Thin click commands over :mod:`mleaudit.audit.similarity`: ``pairs`` prints Dolos's figures for every
pair of the given files (the columns of Dolos's own pair output), ``compare`` scores agent files
against reference kernels (a folder, or a corpus index) with the copy detector and says which
pairs reach the policy threshold of ``rules/plagiarism/``. Library errors become
:class:`mleaudit.audit.cli_options.InputError` (exit code 2).
"""

from __future__ import annotations

import json
from pathlib import Path
import tempfile
from typing import Any, Iterable, Iterator

import click

from mleaudit.audit.cli_options import InputError, jobs_option, rules_option
from mleaudit.audit.errors import AuditError
from mleaudit.audit.model import Skipped
from mleaudit.audit.units import CodeUnit

__all__ = ["similarity"]

#: Suffixes read as code.
CODE_SUFFIXES = (".py", ".ipynb")
#: Column order of ``similarity pairs`` (Dolos 3.5.1's pair output).
PAIR_COLUMNS = ("left", "right", "similarity", "totalOverlap", "longestFragment", "leftCovered", "rightCovered",
                "leftTotal", "rightTotal")
#: Column order of ``similarity compare``.
COMPARE_COLUMNS = ("agent", "reference", "similarity", "agent_containment", "reference_containment",
                   "longest_fragment", "total_overlap", "score", "flagged")


def _read_code(path: Path, shown: str, decodings: list | None = None) -> CodeUnit | Skipped:
    """A ``.py`` or ``.ipynb`` file as a code unit whose path is ``shown`` (never executed); how a
    file that was not plain UTF-8 was read is said on stderr and appended to ``decodings``."""
    from mleaudit.audit.similarity.corpus import MAX_REFERENCE_BYTES, decode_kernel_bytes
    from mleaudit.grading.untrusted_json import replace_surrogates

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
        click.echo(f"read {_safe(shown)} as {_safe(decoding.encoding)}: {_safe(decoding.note)}", err=True)
        if decodings is not None:
            # named as the pairs name the file (a name that is not UTF-8 shows U+FFFD there)
            decodings.append(decoding._replace(path=replace_surrogates(shown)))
    if path.suffix.lower() == ".py":
        return CodeUnit(path=shown, language="python", text=text, source="file")
    from mleaudit.audit.notebooks import NotebookError, read_notebook
    from mleaudit.audit.parsing import LANGUAGES

    try:
        notebook = read_notebook(text, shown)
    except NotebookError as exc:
        return Skipped(path=shown, reason=str(exc))
    if notebook.language not in LANGUAGES:
        return Skipped(path=shown, reason=f"kernel language {notebook.language!r} has no grammar")
    return CodeUnit(path=shown, language=notebook.language, text=notebook.text, cells=notebook.cells,
                    source="notebook")


def _collect(paths: Iterable[str], decodings: list | None = None) -> tuple[list[CodeUnit], list[Skipped]]:
    """Code units of the given files and folders (recursively), paths shown as given; the
    :class:`~mleaudit.audit.similarity.corpus.TextDecoding` of each file not in plain UTF-8 is appended
    to ``decodings``."""
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
            result = _read_code(path, shown, decodings)
            (skipped if isinstance(result, Skipped) else units).append(result)
    return units, skipped


def _warn_skipped(skipped: Iterable[Skipped]) -> None:
    for item in skipped:
        click.echo(f"skipped {_safe(item.path)}: {_safe(item.reason)}", err=True)


def _safe(value: Any) -> str:
    """A value for the terminal or a table cell: file names and notes come from audited runs and
    corpora, so control, format and line-break characters (tabs too) are shown as escapes."""
    from mleaudit.audit.formatters.terminal import terminal_safe

    return terminal_safe(value)


def _tsv(rows: Iterable[Iterable[Any]]) -> None:
    for row in rows:
        click.echo("\t".join(_safe(value) for value in row))


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
@jobs_option("tokenize the files and compute the pairs")
def pairs_command(paths: tuple[str, ...], fmt: str, jobs: int) -> None:
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
    from mleaudit.audit.similarity.allpairs import all_pair_metrics, fingerprint_texts

    decodings: list = []
    units, skipped = _collect(paths, decodings)
    if len(units) < 2:
        raise InputError(f"need at least two readable .py/.ipynb files, found {len(units)}"
                         + (f" ({len(skipped)} skipped)" if skipped else ""))
    units.sort(key=lambda u: u.path)
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
    # A file with fewer tokens than one k-gram has no fingerprint: its figures would read 0 of 0.
    short = [_too_short(r["leftTotal"], r["rightTotal"]) for r in rows]
    if fmt == "json":
        for row, is_short in zip(rows, short):
            if is_short:
                row.update({"similarity": None, "too_short": True, "note": TOO_SHORT})
        _echo_json({"pairs": rows, "skipped": [s.to_dict() for s in skipped],
                    "decodings": [d.to_dict() for d in decodings]})
        return
    _warn_skipped(skipped)
    _tsv([PAIR_COLUMNS])
    _tsv([[r["left"], r["right"], TOO_SHORT if is_short else f"{r['similarity']:.6f}",
           *(r[c] for c in PAIR_COLUMNS[3:])] for r, is_short in zip(rows, short)])


def _reasons(skipped: list[Skipped] | tuple[Skipped, ...], shown: int = 5) -> str:
    """`` (N skipped: path: reason; ...)`` for an error message, or ``""``."""
    if not skipped:
        return ""
    listed = "; ".join(f"{s.path}: {s.reason}" for s in skipped[:shown])
    more = f"; and {len(skipped) - shown} more" if len(skipped) > shown else ""
    return f" ({len(skipped)} skipped: {listed}{more})"


#: Agent files compared per call of the comparison by ``similarity compare``: the pairs (with
#: their fragments) of one batch are written out before the next batch is measured, so memory
#: stays bounded whatever the number of agent files. Each call sets up the corpus once more (a few
#: seconds on hundreds of kernels), hence whole batches rather than single files.
COMPARE_BATCH_FILES = 16
#: With ``--all`` every pair carries every fragment (tens of megabytes per agent file): smaller batches.
COMPARE_BATCH_FILES_ALL = 4
#: What a pair of files without one fingerprint each says instead of figures of 0.
TOO_SHORT = "too short to compare"


def _compare_order(pair) -> tuple:
    """Output order of ``similarity compare``: score, then agent containment (both descending),
    then agent path and reference path."""
    return (-pair.score, -pair.agent_containment, pair.agent_path, pair.reference_path)


def _kept_rows(pairs, top: int | None) -> list:
    """``pairs`` in output order, at most ``top`` per agent file."""
    ordered = sorted(pairs, key=_compare_order)
    if top is None:
        return ordered
    kept: dict[str, int] = {}
    rows = []
    for pair in ordered:
        if kept.get(pair.agent_path, 0) < top:
            kept[pair.agent_path] = kept.get(pair.agent_path, 0) + 1
            rows.append(pair)
    return rows


def _too_short(agent_total: int, reference_total: int) -> bool:
    """Whether either file has no fingerprint (fewer tokens than one k-gram): no figure means anything."""
    return agent_total == 0 or reference_total == 0


def _batches(agents: list[CodeUnit], size: int) -> Iterator[list[CodeUnit]]:
    """``agents`` in batches of ``size`` files; the units of one path stay together."""
    by_path: dict[str, list[CodeUnit]] = {}
    for unit in agents:
        by_path.setdefault(unit.path, []).append(unit)
    groups = list(by_path.values())
    for start in range(0, len(groups), size):
        yield [unit for group in groups[start:start + size] for unit in group]


class _Spill:
    """Output rows written to a temporary file as they come and read back in output order.

    Only each row's sort key, offset and length stay in memory, so ``similarity compare`` writes
    the same sorted output as if it held every pair, in memory bounded by one batch of pairs.
    """

    def __init__(self) -> None:
        self._file = tempfile.TemporaryFile()
        self._rows: list[tuple[tuple, int, int]] = []
        self._end = 0

    def add(self, key: tuple, text: str) -> None:
        data = text.encode("utf-8")
        self._file.write(data)
        self._rows.append((key, self._end, len(data)))
        self._end += len(data)

    def __len__(self) -> int:
        return len(self._rows)

    def texts(self) -> Iterator[str]:
        """The rows' texts in key order (ties: order of arrival)."""
        self._file.flush()
        for _, offset, length in sorted(self._rows, key=lambda row: row[0]):
            self._file.seek(offset)
            yield self._file.read(length).decode("utf-8")

    def close(self) -> None:
        self._file.close()


def _compare_record(pair) -> dict[str, Any]:
    """One pair of ``similarity compare``'s JSON output; figures of a too-short pair are ``null``."""
    data = pair.to_dict()
    data.update({"agent": pair.agent_path, "reference": pair.reference_path})
    if _too_short(pair.agent_total, pair.reference_total):
        data.update({"too_short": True, "note": TOO_SHORT, "similarity": None, "agent_containment": None,
                     "reference_containment": None})
    return data


def _compare_tsv_row(pair) -> list[str]:
    if _too_short(pair.agent_total, pair.reference_total):
        figures = [TOO_SHORT, "-", "-"]
    else:
        figures = [f"{pair.similarity:.6f}", f"{pair.agent_containment:.6f}", f"{pair.reference_containment:.6f}"]
    return [pair.agent_path, pair.reference_path, *figures, str(pair.longest_fragment), str(pair.total_overlap),
            f"{pair.score:.6f}", "true" if pair.flagged else "false"]


def _json_member(key: str, value: Any, *, last: bool = False) -> str:
    """``  "key": value`` as ``json.dumps(..., indent=2, sort_keys=True)`` writes a top-level member."""
    text = json.dumps(value, indent=2, sort_keys=True).replace("\n", "\n  ")
    return f"  {json.dumps(key)}: {text}{'' if last else ','}\n"


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
        load_score_threshold,
    )
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


def _write_compare(spill: _Spill, fmt: str, *, threshold: float, options, digest: str,
                   skipped: list[Skipped], decodings: list) -> None:
    """Write the spilled rows: a TSV table, or the JSON document written member by member (the same
    text as ``json.dumps(document, indent=2, sort_keys=True)``), pairs one at a time; ``decodings``:
    the agent files and listed reference kernels that were not plain UTF-8."""
    def write(text: str) -> None:
        click.echo(text, nl=False)

    if fmt != "json":
        _warn_skipped(skipped)
        write("\t".join(COMPARE_COLUMNS) + "\n")
        for text in spill.texts():
            write(text)
        return
    write("{\n" + _json_member("corpus_digest", digest)
          + _json_member("decodings", [d.to_dict() for d in decodings]) + _json_member("options", options.to_dict()))
    if not len(spill):
        write('  "pairs": [],\n')
    else:
        write('  "pairs": [\n')
        for number, text in enumerate(spill.texts()):
            write(("" if number == 0 else ",\n") + "    " + text)
        write("\n  ],\n")
    write(_json_member("score_threshold", threshold)
              + _json_member("skipped", [s.to_dict() for s in skipped], last=True) + "}\n")


def _compare_with_index(index_path: Path, agents: list[CodeUnit], options, *, top: int | None, all_pairs: bool,
                        corpus_skipped: bool = True):
    """``load_corpus_index(path).compare(agents, options, top=...)``, every failure an input error.

    ``--top N`` scores the first N candidates of each agent file (plus the flagged pairs among
    the references checked with the evidence bound); ``--all`` scores every candidate and checks
    every reference the bound cannot exclude; neither, the index's default.
    """
    try:
        from mleaudit.audit.similarity.corpus_index import DEFAULT_TOP, load_corpus_index
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
