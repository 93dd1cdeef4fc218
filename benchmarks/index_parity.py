"""Corpus index = brute force on the shared material: the copy detector's flagged pairs and best kernels.

Every Python code unit of the clean real runs (``runs/{aide,aide-journal,autokaggle,mlagentbench}``, as
``benchmarks/detection_quality.py`` reads them) and every easy partial copy (``partial-copies/*.py``) is
compared with the shared notebooks twice: by brute force (:func:`mleaudit.audit.similarity.compare` over the
folder) and through a corpus index of the same folder (:meth:`CorpusIndex.compare` with its defaults, and
with ``bound_budget=None``). Printed: the flagged pairs and files of each, whether the index gives brute
force's flagged pairs and best-scoring kernel for every file, how many files' searches were exhaustive (the
default's budget), the largest numbers of references passing the seed and the window bounds, and the wall
time of each (brute force with ``--jobs`` processes, the index in one).

Usage: ``python benchmarks/index_parity.py [--data ../shared/data] [--limit N] [--jobs 2] [--threshold 0.5]``
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from detection_quality import clean_run_units  # noqa: E402

from mleaudit.audit.similarity import SimilarityOptions, compare, load_reference_corpus  # noqa: E402
from mleaudit.audit.similarity.index import build_corpus_index, load_corpus_index  # noqa: E402
from mleaudit.audit.units import CodeUnit  # noqa: E402

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


def _flagged(report) -> dict[str, tuple[frozenset[str], str]]:
    """Per agent file with a flagged pair: its flagged references and its best-scoring one."""
    found: dict[str, list[tuple[float, str]]] = {}
    for pair in report.pairs:
        if pair.flagged:
            found.setdefault(pair.agent_path, []).append((pair.score, pair.reference_path))
    return {path: (frozenset(ref for _, ref in pairs), max(pairs)[1]) for path, pairs in found.items()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="the shared data folder")
    parser.add_argument("--limit", type=int, default=None, help="only the first N agent files")
    parser.add_argument("--jobs", type=int, default=2, help="processes for brute force")
    parser.add_argument("--threshold", type=float, default=None, help="copy score threshold (default: the library's)")
    args = parser.parse_args()
    if not (args.data / "notebooks").is_dir():
        print(f"no shared notebooks under {args.data}", file=sys.stderr)
        return 2
    units = clean_run_units(args.data)
    units += [CodeUnit(path=f"partial-copies/{p.name}", language="python", text=p.read_text(encoding="utf-8"))
              for p in sorted((args.data / "partial-copies").glob("*.py"))]
    units = units[: args.limit] if args.limit else units
    options = SimilarityOptions() if args.threshold is None else SimilarityOptions(score_threshold=args.threshold)
    print(f"{len(units)} agent files against {args.data / 'notebooks'} (score threshold {options.score_threshold})")
    start = time.perf_counter()
    references, _ = load_reference_corpus(args.data / "notebooks")
    brute = _flagged(compare(units, references, options, jobs=args.jobs))
    print(f"brute force: {sum(len(v[0]) for v in brute.values())} flagged pairs in {len(brute)} files, "
          f"{time.perf_counter() - start:.1f} s with {args.jobs} processes")
    with tempfile.TemporaryDirectory() as work:
        build_corpus_index([args.data / "notebooks"], Path(work) / "nb.index")
        with load_corpus_index(Path(work) / "nb.index") as index:
            paths = {u.path for u in units}  # a journal's units share its path: compared per file
            for label, kwargs in (("default", {}), ("bound_budget=None", {"bound_budget": None})):
                start = time.perf_counter()
                found = _flagged(index.compare(units, options, **kwargs))
                seconds = time.perf_counter() - start
                stages = index.last_bound_scored
                same_pairs = sum(found.get(path, (frozenset(), ""))[0] == brute.get(path, (frozenset(), ""))[0]
                                 for path in paths)
                same_best = sum(found.get(path, (None, ""))[1] == brute.get(path, (None, ""))[1] for path in paths)
                print(f"index, {label}: {sum(len(v[0]) for v in found.values())} flagged pairs in {len(found)} files, "
                      f"{seconds:.1f} s; brute force's flagged pairs in {same_pairs} of {len(paths)} files, its best "
                      f"kernel in {same_best}; search exhaustive for {sum(s['exhaustive'] for s in stages)} of "
                      f"{len(stages)} Python units (most references past the seed bound "
                      f"{max((s.get('bounded', 0) for s in stages), default=0)}, past the window bound "
                      f"{max((s.get('window', 0) for s in stages), default=0)})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
