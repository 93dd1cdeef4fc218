"""Parity of the similarity engine with Dolos 3.5.1 on the shared golden pairs, field by field.

For every competition under ``similarity-golden/``, every pair in ``dolos_pairs.tsv`` is recomputed
(default options: k = 23, window 17, nothing ignored) and compared with Dolos's figures:
similarity within 1e-6, the integer fields exactly. Prints matches / total per field and per
competition, and the pairs that differ.

With ``--dolos-dir DIR`` (an install of Dolos, see ``benchmarks/dolos_node.py``), Dolos itself is run
instead of the recorded ``dolos_pairs.tsv``: on the golden corpus, or with ``--files PATH...`` on any
``.py``/``.ipynb`` files and folders (held-out notebooks, exports with IPython lines). Each folder
given is one analysis (all pairs among its files, recursively; notebooks as the corpus reads them,
code cells joined by a blank line); loose files together form another. Token streams are compared
too, so a differing file is named even where no pair figure moves.

Usage: ``python benchmarks/similarity_parity.py [--data ../shared/data] [--show 10]``,
``python benchmarks/similarity_parity.py --dolos-dir DIR [--files PATH...]``
"""

from __future__ import annotations

import argparse
import csv
import sys
from collections import Counter
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]

from mleaudit.audit.similarity import FingerprintIndex, dolos_metrics, tokenize_text  # noqa: E402

DEFAULT_DATA = REPO_ROOT.parent / "shared" / "data"
FIELDS = ("similarity", "totalOverlap", "longestFragment", "leftCovered", "rightCovered", "leftTotal", "rightTotal")


def _ours(metrics) -> dict[str, float]:
    return {
        "similarity": metrics.similarity,
        "totalOverlap": metrics.total_overlap,
        "longestFragment": metrics.longest_fragment,
        "leftCovered": metrics.left_covered,
        "rightCovered": metrics.right_covered,
        "leftTotal": metrics.left_total,
        "rightTotal": metrics.right_total,
    }


def _matches(field: str, ours: float, theirs: str) -> bool:
    if field == "similarity":
        return abs(ours - float(theirs)) <= 1e-6
    return ours == int(theirs)


def _groups(paths: list[Path]) -> dict[str, dict[str, str]]:
    """Analysis name -> (file name -> text) for ``--files``: one group per folder, loose files together."""
    from mleaudit.audit.similarity.corpus import decode_reference, iter_reference_files

    groups: dict[str, dict[str, str]] = {}
    for given in paths:
        if given.is_dir():
            found = [(path, f"{given.name}/{relative}") for path, relative in iter_reference_files(given)]
            group = groups.setdefault(str(given), {})
        elif given.is_file():
            found = [(given, str(given))]
            group = groups.setdefault("(files)", {})
        else:
            raise SystemExit(f"{given}: no such file or folder")
        for path, name in found:
            unit = decode_reference(path.read_bytes(), name)
            if hasattr(unit, "reason"):
                print(f"skipped {name}: {unit.reason}")
            elif unit.language == "python":
                group[name] = unit.text
    return {name: texts for name, texts in groups.items() if len(texts) >= 2}


def against_dolos(dolos_dir: Path, groups: dict[str, dict[str, str]], show: int) -> int:
    """Run Dolos itself on each group and compare every pair and token stream; the number of differing pairs."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from dolos_node import DolosUnavailable, run_dolos

    total = differing = 0
    lines: list[str] = []
    print(f"{'analysis':48} {'files':>6} {'tokens=':>7} {'pairs':>6} {'exact':>6}")
    for name, texts in groups.items():
        try:
            run = run_dolos(texts, dolos_dir)
        except DolosUnavailable as error:
            raise SystemExit(str(error)) from error
        index = FingerprintIndex()
        tokenized = {key: tokenize_text(text, "python", key) for key, text in texts.items()}
        entries = {key: index.add_reference(file) for key, file in tokenized.items()}
        same_tokens = 0
        for key, file in tokenized.items():
            if list(file.tokens) == run.tokens[key]:
                same_tokens += 1
            else:
                lines.append(f"{key}: token streams differ ({len(file.tokens)} tokens, Dolos {len(run.tokens[key])})")
        exact = 0
        for (left, right), theirs in run.pairs.items():
            ours = _ours(dolos_metrics(entries[left], entries[right]))
            bad = [f for f in FIELDS if not _matches(f, ours[f], str(theirs[f]))]
            if bad:
                lines.append(f"{left} x {right}: " + ", ".join(f"{f} ours {ours[f]:.6g} dolos {theirs[f]}" for f in bad))
            else:
                exact += 1
        total += len(run.pairs)
        differing += len(run.pairs) - exact
        print(f"{name[-48:]:48} {len(texts):6d} {same_tokens:7d} {len(run.pairs):6d} {exact:6d}")
    print(f"\n{total - differing} / {total} pairs equal to Dolos on every field")
    for line in lines[:show]:
        print("  " + line)
    return differing


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="the shared data folder")
    parser.add_argument("--show", type=int, default=10, help="differing pairs to print")
    parser.add_argument("--dolos-dir", type=Path, help="an install of Dolos to run instead of the recorded figures")
    parser.add_argument("--files", type=Path, nargs="+", help="with --dolos-dir: files and folders to compare")
    args = parser.parse_args()
    golden = args.data / "similarity-golden"
    if args.files and not args.dolos_dir:
        raise SystemExit("--files needs --dolos-dir (the recorded figures cover the golden corpus only)")
    if args.dolos_dir:
        if args.files:
            groups = _groups(args.files)
        elif golden.is_dir():
            groups = _groups(sorted(p for p in golden.iterdir() if p.is_dir()))
        else:
            raise SystemExit(f"no golden corpus at {golden}; give --files")
        raise SystemExit(1 if against_dolos(args.dolos_dir, groups, args.show) else 0)
    if not golden.is_dir():
        raise SystemExit(f"no golden corpus at {golden}")

    per_field: Counter[str] = Counter()
    total = exact = 0
    differing: list[str] = []
    files_involved: Counter[str] = Counter()
    print(f"{'competition':48} {'pairs':>6} {'exact':>6}")
    for directory in sorted(p for p in golden.iterdir() if (p / "dolos_pairs.tsv").is_file()):
        with (directory / "dolos_pairs.tsv").open(newline="", encoding="utf-8") as handle:
            rows = list(csv.DictReader(handle, delimiter="\t"))
        index = FingerprintIndex()
        entries = {}
        for key in sorted({r["left"] for r in rows} | {r["right"] for r in rows}):
            text = (golden / key).read_bytes().decode("utf-8")
            entries[key] = index.add_reference(tokenize_text(text, "python", key))
        competition_exact = 0
        for row in rows:
            ours = _ours(dolos_metrics(entries[row["left"]], entries[row["right"]]))
            bad = [f for f in FIELDS if not _matches(f, ours[f], row[f])]
            for field in FIELDS:
                per_field[field] += field not in bad
            if bad:
                differing.append(
                    f"{row['left']} x {row['right']}: "
                    + ", ".join(f"{f} ours {ours[f]:.6g} dolos {row[f]}" for f in bad)
                )
                files_involved.update((row["left"], row["right"]))
            else:
                competition_exact += 1
        total += len(rows)
        exact += competition_exact
        print(f"{directory.name:48} {len(rows):6d} {competition_exact:6d}")
    print(f"{'all':48} {total:6d} {exact:6d}  ({exact / total:.2%} of pairs match on every field)")
    print()
    for field in FIELDS:
        print(f"{field:16} {per_field[field]:5d} / {total}  ({per_field[field] / total:.2%})")
    if differing:
        print(f"\n{len(differing)} differing pairs; files in most of them:")
        for key, count in files_involved.most_common(3):
            print(f"  {key}: {count}")
        for line in differing[: args.show]:
            print("  " + line)


if __name__ == "__main__":
    main()
