"""``mleaudit similarity pairs``: Dolos's figures for every pair of the given files."""

from __future__ import annotations

import click

from mleaudit.audit.cli_options import InputError, jobs_option
from mleaudit.audit.errors import AuditError
from mleaudit.audit.similarity.cli.inputs import _collect
from mleaudit.audit.similarity.cli.output import TOO_SHORT, _echo_json, _too_short, _tsv, _warn_skipped

#: Column order of ``similarity pairs`` (Dolos 3.5.1's pair output).
PAIR_COLUMNS = ("left", "right", "similarity", "totalOverlap", "longestFragment", "leftCovered", "rightCovered",
                "leftTotal", "rightTotal")


@click.command("pairs")
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
