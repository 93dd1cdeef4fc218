"""Parity of the similarity engine with Dolos 3.5.1 on the shared golden pairs, field by field.

For every competition under ``similarity-golden/``, every pair in ``dolos_pairs.tsv`` is recomputed
(default options: k = 23, window 17, nothing ignored) and compared with Dolos's figures:
similarity within 1e-6, the integer fields exactly. Prints matches / total per field and per
competition, and the pairs that differ.

Usage: ``python benchmarks/similarity_parity.py [--data ../shared/data] [--show 10]``
"""

from __future__ import annotations

import argparse
import csv
import sys
from collections import Counter
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:  # run from a checkout without installing
    sys.path.insert(0, str(REPO_ROOT))

from audit.similarity import FingerprintIndex, dolos_metrics, tokenize_text  # noqa: E402

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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="the shared data folder")
    parser.add_argument("--show", type=int, default=10, help="differing pairs to print")
    args = parser.parse_args()
    golden = args.data / "similarity-golden"
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
