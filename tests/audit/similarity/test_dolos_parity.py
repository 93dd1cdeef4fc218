"""Exact parity with Dolos 3.5.1 on every pair of the shared golden set.

``../shared/data/similarity-golden/<competition>/dolos_pairs.tsv`` holds Dolos's figures for every
pair of that competition's ``.py`` files (``@dodona/dolos-lib`` 3.5.1, default options, language
python). Every pair must match: similarity to 1e-6, the integer fields exactly, with no
exemption. This holds because the project pins tree-sitter-python 0.23.6, the grammar that
Dolos 3.5.1 bundles (through @dodona/dolos-parsers 1.4.1): newer grammars recover from syntax
errors (IPython ``!`` lines) differently, which changes the token stream of broken files.
"""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from mleaudit.audit.similarity.fingerprint_index import FingerprintIndex
from mleaudit.audit.similarity.pairs import dolos_metrics
from mleaudit.audit.similarity.tokenize import tokenize_text
from tests.conftest import SHARED_DATA, shared_path

GOLDEN = "similarity-golden"
INT_FIELDS = ("totalOverlap", "longestFragment", "leftCovered", "rightCovered", "leftTotal", "rightTotal")

def _competitions() -> list[str]:
    root = SHARED_DATA / GOLDEN
    if not root.is_dir():
        return ["(shared data absent)"]
    return sorted(p.name for p in root.iterdir() if (p / "dolos_pairs.tsv").is_file())


def _read_pairs(tsv: Path) -> list[dict[str, str]]:
    with tsv.open(newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle, delimiter="\t"))


def _ours(competition_dir: Path, rows: list[dict[str, str]]) -> dict[tuple[str, str], dict[str, float]]:
    index = FingerprintIndex()  # Dolos defaults: k = 23, window 17, nothing ignored
    entries = {}
    for key in sorted({r["left"] for r in rows} | {r["right"] for r in rows}):
        # read bytes: Dolos keeps "\r\n" and a BOM as they are
        text = (competition_dir.parent / key).read_bytes().decode("utf-8")
        entries[key] = index.add_reference(tokenize_text(text, "python", key))
    results = {}
    for row in rows:
        m = dolos_metrics(entries[row["left"]], entries[row["right"]])
        results[(row["left"], row["right"])] = {
            "similarity": m.similarity,
            "totalOverlap": m.total_overlap,
            "longestFragment": m.longest_fragment,
            "leftCovered": m.left_covered,
            "rightCovered": m.right_covered,
            "leftTotal": m.left_total,
            "rightTotal": m.right_total,
        }
    return results


def _mismatched_fields(row: dict[str, str], ours: dict[str, float]) -> list[str]:
    bad = [] if abs(ours["similarity"] - float(row["similarity"])) <= 1e-6 else ["similarity"]
    return bad + [f for f in INT_FIELDS if ours[f] != int(row[f])]


@pytest.mark.parametrize("competition", _competitions())
def test_every_pair_matches_dolos(competition: str) -> None:
    directory = shared_path(GOLDEN, competition)
    rows = _read_pairs(directory / "dolos_pairs.tsv")
    files = sorted(p.name for p in directory.glob("*.py"))
    # the golden file lists every pair once
    assert len(rows) == len(files) * (len(files) - 1) // 2
    assert {frozenset((r["left"], r["right"])) for r in rows} == {
        frozenset((f"{competition}/{a}", f"{competition}/{b}")) for i, a in enumerate(files) for b in files[i + 1 :]
    }
    ours = _ours(directory, rows)
    mismatches = []
    for row in rows:
        bad = _mismatched_fields(row, ours[(row["left"], row["right"])])
        if bad:
            got = {f: ours[(row["left"], row["right"])][f] for f in bad}
            want = {f: row[f] for f in bad}
            mismatches.append(f"{row['left']} x {row['right']}: ours {got} dolos {want}")
    assert not mismatches, f"{len(mismatches)} of {len(rows)} pairs differ:\n" + "\n".join(mismatches[:20])
