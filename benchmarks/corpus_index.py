"""Corpus index at scale: build throughput, query latency, recall against brute force, size, memory.

A synthetic corpus of ``--n`` notebooks is made by mutating the shared public notebooks
(``../shared/data/notebooks``): each synthetic notebook takes one real notebook, drops some of
its code cells, moves a few cells, and renames the variables it assigns. The notebooks are
written to a temporary folder (outputs left out; never inside the repository), indexed with
``--jobs`` worker processes, then queried with agent runs of a few files each (partial copies
from ``../shared/data/partial-copies``, hard partial copies and real AIDE solutions).

Printed figures:

- build throughput (notebooks/s), CPU seconds per notebook (parent and workers together, so a
  figure that does not depend on what else the machine runs), the load average before and after
  the build, and the build's peak memory (parent process and largest worker); the merge of
  the postings that ends a build of more than a few segments (``CorpusIndex.compact``);
- query latency of one agent run, measured in a fresh process (with the load average before and
  after, since the figures depend on what else the machine runs): retrieval alone
  (``CorpusIndex.candidates`` at containment 0.3) and full exact reports with the copy detector's
  scores (``CorpusIndex.compare`` with each ``--tops`` value), cold (first query, index just
  opened) and warm (median and max over the runs), with the number of flagged pairs, and the
  same with the first ``top`` and no bound budget (``bound_budget=None``: every reference the
  seed bound cannot exclude is checked, the exact search); for each setting, the agent files
  with a flagged pair, those with the exact search's flagged pairs and best kernel, and the
  median numbers of references per file through the two evidence bounds; with
  ``--brute-runs K``, the first K runs compared by brute force with the whole corpus folder
  (:func:`mleaudit.audit.similarity.compare`), whose flagged pairs and best kernel per file the exact
  search must give; the same queries
  without the copy detector, for its share; the number of candidates at containment 0.3 and
  0.05, and the query process's peak memory;
- recall against brute force for pairs with agent containment >= 0.3: a uniform sample of
  ``--sample`` references is re-read from disk and fingerprinted from scratch, every agent file
  is compared with each of them (Dolos figures from :func:`mleaudit.audit.similarity.dolos_metrics`), and
  every pair at or above 0.3 must be among the index's candidates;
- with ``--lsh-ensemble``, the same recall for datasketch's ``MinHashLSHEnsemble`` (containment
  threshold 0.3, 128 permutations) built over the same sample, with its candidate counts;
- the index size on disk.

Queries use the options an audit uses (each pair's longest fragments only,
``REPORT_FRAGMENTS_PER_PAIR``).

Usage: ``python benchmarks/corpus_index.py --n 10000 [--jobs 2] [--workdir DIR] [--keep]``;
``--workdir DIR --reuse`` queries an index kept by an earlier run; ``--skip-exact`` leaves out the
exact search (minutes per run on a quarter of a million notebooks); ``--sample 0`` the recall check.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import random
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]

from mleaudit.audit.model import Skipped  # noqa: E402
from mleaudit.audit.notebooks import read_notebook  # noqa: E402
from mleaudit.audit.similarity import FingerprintIndex, dolos_metrics  # noqa: E402
from mleaudit.audit.similarity.corpus import decode_reference, iter_reference_files  # noqa: E402
from mleaudit.audit.similarity.index import detector_query as corpus_index_module  # noqa: E402
from mleaudit.audit.similarity import SimilarityOptions, compare, load_reference_corpus  # noqa: E402
from mleaudit.audit.similarity.index import DEFAULT_BOUND_BUDGET, build_corpus_index, load_corpus_index  # noqa: E402
from mleaudit.audit.similarity.tokenize import tokenize_text  # noqa: E402
from mleaudit.audit.units import CodeUnit  # noqa: E402
from mleaudit.audit.pipeline.similarity_stage import REPORT_FRAGMENTS_PER_PAIR  # noqa: E402

#: The options an audit compares with (``mleaudit audit --index``): each pair keeps its longest
#: fragments only.
AUDIT_OPTIONS = SimilarityOptions(max_fragments_per_pair=REPORT_FRAGMENTS_PER_PAIR)

DEFAULT_DATA = REPO_ROOT.parent / "shared" / "data"
_ASSIGNED = re.compile(r"^[ \t]*([A-Za-z_][A-Za-z0-9_]*)[ \t]*=(?!=)", re.MULTILINE)
_KEEP = {"self", "cls", "True", "False", "None", "print", "len", "range", "np", "pd", "plt", "sns", "os", "sys"}
_PER_FOLDER = 1000


def _label(setting: tuple[int, int | None]) -> str:
    budget = "all" if setting[1] is None else setting[1]
    return f"top={setting[0]}, bound_budget={budget}"


def _cpu_seconds() -> float:
    """User and system CPU time of this process and its reaped children."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def _loads(values: tuple[float, float, float]) -> str:
    return "/".join(f"{v:.1f}" for v in values)


def _peak_mb(who: int) -> float:
    return resource.getrusage(who).ru_maxrss / 1024  # Linux reports KiB


def _base_notebooks(data: Path) -> list[tuple[str, list[str]]]:
    """(name, code cells) of every shared Python notebook; scripts are split at blank lines."""
    bases = []
    for path, relative in iter_reference_files(data / "notebooks"):
        text = path.read_bytes().decode("utf-8", errors="replace")
        if relative.endswith(".ipynb"):
            try:
                notebook = read_notebook(text, relative)
            except Exception:  # noqa: BLE001 - a broken shared notebook is simply not a base
                continue
            if notebook.language != "python":
                continue
            lines = notebook.raw_text.split("\n")
            cells = ["\n".join(lines[c.start_line - 1 : c.end_line]) for c in notebook.cells]
        else:
            cells = [block for block in re.split(r"\n\s*\n(?=\S)", text) if block.strip()]
        cells = [c for c in cells if c.strip()]
        if len(cells) >= 2:
            bases.append((relative.rsplit(".", 1)[0].replace("/", "__"), cells))
    return bases


def _mutate(cells: list[str], rng: random.Random, variant: int, names: list[str]) -> list[str]:
    kept = [c for c in cells if rng.random() >= 0.25] or [rng.choice(cells)]
    for _ in range(rng.randint(0, 3)):  # move a few cells
        if len(kept) > 2:
            cell = kept.pop(rng.randrange(len(kept)))
            kept.insert(rng.randrange(len(kept) + 1), cell)
    if names:
        chosen = set(rng.sample(names, k=max(1, len(names) // 2)))
        pattern = re.compile(r"\b(" + "|".join(map(re.escape, sorted(chosen))) + r")\b")
        kept = [pattern.sub(lambda m: f"{m.group(1)}_v{variant}", c) for c in kept]
    return kept


def _notebook_json(cells: list[str]) -> str:
    return json.dumps({
        "cells": [{"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
                   "source": c.splitlines(keepends=True)} for c in cells],
        "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    })


def generate(data: Path, folder: Path, n: int, seed: int) -> None:
    bases = _base_notebooks(data)
    names = [sorted({m.group(1) for c in cells for m in _ASSIGNED.finditer(c)} - _KEEP) for _, cells in bases]
    rng = random.Random(seed)
    for i in range(n):
        b = rng.randrange(len(bases))
        name, cells = bases[b]
        target = folder / f"part{i // _PER_FOLDER:04d}" / f"{name}-v{i}.ipynb"
        if i % _PER_FOLDER == 0:
            target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(_notebook_json(_mutate(cells, rng, i, names[b])), encoding="utf-8")


def _agent_runs(data: Path, count: int, seed: int) -> list[list[CodeUnit]]:
    """Runs of three files: a partial copy, a hard partial copy and a real AIDE solution."""
    def read(folder: Path) -> list[CodeUnit]:
        with open(folder / "cases.tsv", encoding="utf-8") as stream:
            rows = list(csv.DictReader(stream, delimiter="\t"))
        return [CodeUnit(path=f"code/{r['case']}", language="python",
                         text=(folder / r["case"]).read_text(encoding="utf-8")) for r in rows]

    easy = read(data / "partial-copies")
    hard = read(data / "partial-copies" / "hard")
    aide = [CodeUnit(path=f"code/{p.name}", language="python", text=p.read_text(encoding="utf-8"))
            for p in sorted((data / "runs" / "aide").glob("*.py"))]
    rng = random.Random(seed)
    return [[rng.choice(easy), rng.choice(hard), rng.choice(aide)] for _ in range(count)]


def _high_water_mb() -> float:
    """Peak resident memory of this process (VmHWM; ``ru_maxrss`` would include the parent's,
    which Linux carries across fork and exec)."""
    with open("/proc/self/status", encoding="ascii") as stream:
        for line in stream:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def phase_query(args: argparse.Namespace) -> None:
    """Runs in a fresh process: cold and warm query latency and the query's peak memory."""
    load_before = os.getloadavg()
    runs = _agent_runs(args.data, args.runs, args.seed)
    started = time.perf_counter()
    index = load_corpus_index(args.workdir / "corpus.index")
    opened = time.perf_counter() - started
    # Each --tops value with the library's default bound budget, and the first with no budget
    # (every reference the seed bound cannot exclude is checked: the exact search).
    settings = [(top, DEFAULT_BOUND_BUDGET) for top in args.tops] + ([] if args.skip_exact else [(args.tops[0], None)])
    stages: list[dict[str, int]] = []
    full: dict[tuple[int, int], list[float]] = {s: [] for s in settings}
    flagged: dict[tuple[int, int], int] = {s: 0 for s in settings}
    # per setting: for each (run, agent file), whether it has a flagged pair and its best score
    best: dict[tuple[int, int], list[tuple[bool, float]]] = {s: [] for s in settings}
    retrieval, counts = [], []
    # Setting by setting, so that a setting's warm runs follow its own queries (the exact
    # search reads every reference's profile and would evict what the default keeps).
    for top, budget in settings:
        for run in runs:
            start = time.perf_counter()
            report = index.compare(run, AUDIT_OPTIONS, top=top, bound_budget=budget)
            full[(top, budget)].append(time.perf_counter() - start)
            flagged[(top, budget)] += sum(p.flagged for p in report.pairs)
            if (top, budget) == settings[0]:
                stages.extend(index.last_bound_scored)
            for unit in run:
                pairs = [p for p in report.pairs if p.agent_path == unit.path]
                best[(top, budget)].append((any(p.flagged for p in pairs),
                                            max((p.score for p in pairs), default=0.0),
                                            max(((p.score, p.reference_path) for p in pairs if p.flagged),
                                                default=(0.0, ""))[1],
                                            frozenset(p.reference_path for p in pairs if p.flagged)))
    for run in runs:
        start = time.perf_counter()
        found = [index.candidates(unit, min_containment=0.3) for unit in run]
        retrieval.append(time.perf_counter() - start)
        counts.extend(len(f) for f in found)
        counts_005 = [len(index.candidates(unit, min_containment=0.05)) for unit in run]
        counts[-len(run):] = [(c3, c5) for c3, c5 in zip(counts[-len(run):], counts_005)]
    # The same queries without the copy detector (Dolos's figures only), for its share of the time.
    without: list[float] = []
    evidence = corpus_index_module._DetectorQuery.evidence
    tile_bounds = corpus_index_module._DetectorQuery.tile_bounds
    corpus_index_module._DetectorQuery.evidence = lambda self, agent, doc, mask: None
    corpus_index_module._DetectorQuery.tile_bounds = lambda self, agent, docs, needed=0.0: {}
    try:
        for run in runs:
            start = time.perf_counter()
            index.compare(run, AUDIT_OPTIONS, top=args.tops[0])
            without.append(time.perf_counter() - start)
    finally:
        corpus_index_module._DetectorQuery.evidence = evidence
        corpus_index_module._DetectorQuery.tile_bounds = tile_bounds
    # Brute force over the whole corpus folder for the first runs: the flagged pairs and each
    # file's best flagged kernel, against the exact search's.
    brute_check = {"files": 0, "flagged_pairs": 0, "same_flagged_pairs": 0, "same_best_kernel": 0}
    if args.brute_runs:
        references = load_reference_corpus(args.workdir / "corpus")
        exact = settings[-1]
        for r, run in enumerate(runs[: args.brute_runs]):
            report = compare(run, references, replace(AUDIT_OPTIONS, max_pairs_per_agent=None))
            for u, unit in enumerate(run):
                pairs = [p for p in report.pairs if p.agent_path == unit.path and p.flagged]
                found = best[exact][r * len(run) + u]
                top_kernel = max(((p.score, p.reference_path) for p in pairs), default=(0.0, ""))[1]
                brute_check["files"] += 1
                brute_check["flagged_pairs"] += len(pairs)
                brute_check["same_flagged_pairs"] += frozenset(p.reference_path for p in pairs) == found[3]
                brute_check["same_best_kernel"] += top_kernel == found[2]
    index.close()
    # the exact search (no budget) is the reference for the other settings; without it, the
    # first setting (the agreement of the others with the library's default)
    exact_best = best[settings[0] if args.skip_exact else settings[-1]]
    agreement = {}
    for setting in settings:
        agreement[_label(setting)] = {
            "files_flagged": sum(b[0] for b in best[setting]),
            "files_flagged_exact": sum(b[0] for b in exact_best),
            "same_flagged_pairs": sum(b[3] == e[3] for b, e in zip(best[setting], exact_best)),
            "same_best_kernel": sum(b[2] == e[2] for b, e in zip(best[setting], exact_best)),
            "files": len(exact_best),
        }
    print(json.dumps({
        "load_before": _loads(load_before),
        "load_after": _loads(os.getloadavg()),
        "open_s": opened,
        "agreement": agreement,
        "compare": {_label(setting): {"cold_s": times[0], "warm_median_s": statistics.median(times[1:] or times),
                                      "warm_max_s": max(times[1:] or times), "flagged": flagged[setting]}
                    for setting, times in full.items()},
        "without_detector_median_s": statistics.median(without),
        "brute": brute_check,
        "bound_stages": {name: statistics.median(s[name] for s in stages) if stages else 0
                         for name in ("bounded", "windowed", "window", "checked", "scored")},
        "cut_files": sum(1 for s in stages if not s["exhaustive"]),
        "stage_files": len(stages),
        "retrieval_run_median_s": statistics.median(retrieval),
        "retrieval_run_max_s": max(retrieval),
        "candidates_03_median": statistics.median(c[0] for c in counts),
        "candidates_03_max": max(c[0] for c in counts),
        "candidates_005_median": statistics.median(c[1] for c in counts),
        "candidates_005_max": max(c[1] for c in counts),
        "peak_mb": _high_water_mb(),
    }))


def _recall(args: argparse.Namespace, corpus: Path) -> dict:
    files = list(iter_reference_files(corpus))
    rng = random.Random(args.seed + 1)
    sample = rng.sample(files, k=min(args.sample, len(files)))
    brute = FingerprintIndex()
    references = []
    for path, relative in sample:
        unit = decode_reference(path.read_bytes(), relative)
        if not isinstance(unit, Skipped):
            references.append((relative, brute.add_reference(tokenize_text(unit.text, unit.language, relative))))
    agents = {u.path: u for run in _agent_runs(args.data, args.runs, args.seed) for u in run}
    positives = found = 0
    lsh_found = lsh_candidates = 0
    ensemble = _lsh_ensemble(references) if args.lsh_ensemble else None
    sampled = {relative for relative, _ in references}
    with load_corpus_index(args.workdir / "corpus.index") as index:
        for unit in agents.values():
            entry = brute.add_agent(tokenize_text(unit.text, unit.language, unit.path))
            total = len(entry.fingerprints)
            expected = {relative for relative, ref in references
                        if total and dolos_metrics(entry, ref).left_covered / total >= 0.3}
            candidates = set(index.candidates(unit, min_containment=0.3)) & sampled
            positives += len(expected)
            found += len(expected & candidates)
            if ensemble is not None and total:
                answer = _lsh_query(ensemble, entry)
                lsh_candidates += len(answer)
                lsh_found += len(expected & answer)
    result = {"sample": len(references), "agent_files": len(agents), "positive_pairs": positives,
              "index_recall": found / positives if positives else float("nan")}
    if ensemble is not None:
        result["lsh_ensemble_recall"] = lsh_found / positives if positives else float("nan")
        result["lsh_ensemble_candidates_per_file"] = lsh_candidates / len(agents)
    return result


def _minhash(hashes: set[int]):
    from datasketch import MinHash

    signature = MinHash(num_perm=128, seed=1)
    signature.update_batch([h.to_bytes(4, "little") for h in hashes])
    return signature


def _lsh_ensemble(references):
    from datasketch import MinHashLSHEnsemble

    ensemble = MinHashLSHEnsemble(threshold=0.3, num_perm=128, num_part=16)
    ensemble.index([(relative, _minhash(set(ref.occurrences)), len(ref.occurrences))
                    for relative, ref in references if ref.occurrences])
    return ensemble


def _lsh_query(ensemble, entry) -> set[str]:
    hashes = set(entry.occurrences)
    return set(ensemble.query(_minhash(hashes), len(hashes)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=2000, help="synthetic notebooks in the corpus")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="the shared data folder")
    parser.add_argument("--jobs", type=int, default=2, help="worker processes for the build")
    parser.add_argument("--runs", type=int, default=12, help="agent runs (three files each) to query")
    parser.add_argument("--tops", type=int, nargs="+", default=[5, 10, 20, 50],
                        help="pairs scored exactly per agent file (compare(top=...)), one measurement each")
    parser.add_argument("--brute-runs", type=int, default=1,
                        help="agent runs also compared by brute force with the whole corpus (slow on a large one)")
    parser.add_argument("--sample", type=int, default=2000, help="references re-read for the recall check")
    parser.add_argument("--lsh-ensemble", action="store_true", help="also measure datasketch MinHashLSHEnsemble")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--workdir", type=Path, default=None, help="where to write the corpus (default: a temp dir)")
    parser.add_argument("--keep", action="store_true", help="keep the corpus and index afterwards")
    parser.add_argument("--reuse", action="store_true",
                        help="query the index already in --workdir (no corpus generated, nothing built)")
    parser.add_argument("--skip-exact", action="store_true",
                        help="leave out the exact search (every reference the seed bound keeps: minutes per run "
                             "on a large corpus); agreement is then with the first --tops setting")
    parser.add_argument("--phase", choices=["all", "query"], default="all", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if not (args.data / "notebooks").is_dir():
        raise SystemExit(f"no shared notebooks at {args.data / 'notebooks'}")
    if args.phase == "query":
        phase_query(args)
        return
    if args.reuse and (args.workdir is None or not (args.workdir / "corpus.index").is_file()):
        raise SystemExit("--reuse needs --workdir with a corpus.index (from an earlier run with --keep)")
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="corpus-index-bench-"))
    args.workdir = workdir
    corpus = workdir / "corpus"
    try:
        if not args.reuse:
            _build(args, corpus)
        _query(args, corpus)
    finally:
        if not args.keep and args.workdir is not None and workdir.name.startswith("corpus-index-bench-"):
            shutil.rmtree(workdir, ignore_errors=True)


def _build(args: argparse.Namespace, corpus: Path) -> None:
    """Generate the corpus (unless the folder is there) and build its index; print the figures."""
    workdir = args.workdir
    start = time.perf_counter()
    if not corpus.is_dir():
        generate(args.data, corpus, args.n, args.seed)
    print(f"corpus: {args.n} synthetic notebooks in {corpus} (generated in {time.perf_counter() - start:.0f} s)")
    index_path = workdir / "corpus.index"
    index_path.unlink(missing_ok=True)
    load_before = os.getloadavg()
    cpu_before = _cpu_seconds()
    start = time.perf_counter()
    summary = build_corpus_index([corpus], index_path, jobs=args.jobs)
    seconds = time.perf_counter() - start
    cpu = _cpu_seconds() - cpu_before  # the workers are reaped when the build's pool closes
    size = index_path.stat().st_size
    print(f"build:   {summary.added} notebooks in {seconds:.1f} s = {summary.added / seconds:.0f} notebooks/s "
          f"with {args.jobs} workers ({len(summary.skipped)} skipped); index {size / 1e6:.0f} MB "
          f"({size / max(summary.added, 1) / 1e3:.1f} kB/notebook); peak RSS {_peak_mb(resource.RUSAGE_SELF):.0f} MB "
          f"(largest worker {_peak_mb(resource.RUSAGE_CHILDREN):.0f} MB)")
    if summary.compacted is not None:
        print(f"         postings merged at the end of the build: {summary.compacted.keys} keys "
              f"({summary.compacted.entries} entries, {summary.compacted.bitmaps} bitmaps) in "
              f"{summary.compacted.seconds:.1f} s (included above)")
    print(f"         {cpu:.0f} CPU s = {cpu / max(summary.added, 1) * 1000:.1f} CPU ms/notebook (parent and workers; "
          f"{os.cpu_count()} cpus would give {os.cpu_count() * max(summary.added, 1) / max(cpu, 1e-9):.0f} "
          f"notebooks/s unshared); load average (1/5/15 min) {_loads(load_before)} before, "
          f"{_loads(os.getloadavg())} after")


def _query(args: argparse.Namespace, corpus: Path) -> None:
    """Query the index in a fresh process, then the recall check; print the figures."""
    workdir = args.workdir
    query = subprocess.run(
        [sys.executable, __file__, "--phase", "query", "--workdir", str(workdir), "--data", str(args.data),
         "--runs", str(args.runs), "--seed", str(args.seed), "--brute-runs", str(args.brute_runs),
         "--tops", *map(str, args.tops), *(["--skip-exact"] if args.skip_exact else [])],
        check=True, capture_output=True, text=True,
    )
    q = json.loads(query.stdout.strip().splitlines()[-1])
    print(f"query:   load average {q['load_before']} before, {q['load_after']} after; one agent run = 3 files; "
          f"index opened in {q['open_s'] * 1000:.0f} ms; query process peak {q['peak_mb']:.0f} MB")
    print(f"         retrieval only (candidates >= 0.3 for the 3 files): median {q['retrieval_run_median_s']:.3f} s, "
          f"max {q['retrieval_run_max_s']:.3f} s")
    versus = f"compare(run, {_label((args.tops[0], DEFAULT_BOUND_BUDGET))})" if args.skip_exact else "the exact search"
    for label, figures in q["compare"].items():
        same = q["agreement"][label]
        print(f"         compare(run, {label}) with exact pair reports and copy scores: cold "
              f"{figures['cold_s']:.3f} s, warm median {figures['warm_median_s']:.3f} s, max "
              f"{figures['warm_max_s']:.3f} s; {figures['flagged']} flagged pairs in {args.runs} runs; "
              f"agent files flagged {same['files_flagged']} ({versus}: {same['files_flagged_exact']}) of "
              f"{same['files']}; {versus}'s flagged pairs in {same['same_flagged_pairs']}, its best "
              f"kernel in {same['same_best_kernel']}")
    stages = q["bound_stages"]
    print(f"         evidence bound per file (median, top={args.tops[0]}): {stages['bounded']:.0f} references not "
          f"excluded by the seed postings, {stages['windowed']:.0f} checked with the window bound and "
          f"{stages['window']:.0f} kept by it, {stages['checked']:.0f} checked with the tile bound, "
          f"{stages['scored']:.0f} scored exactly; the search cut by its budget for {q['cut_files']} of "
          f"{q['stage_files']} file-queries")
    brute = q["brute"]
    if brute["files"]:
        print(f"         brute force (compare over the whole corpus folder) on {brute['files']} agent files: "
              f"{brute['flagged_pairs']} flagged pairs; the exact search has the same flagged pairs in "
              f"{brute['same_flagged_pairs']} files and the same best kernel in {brute['same_best_kernel']}")
    print(f"         the same with top={args.tops[0]} without the copy detector: median "
          f"{q['without_detector_median_s']:.3f} s")
    print(f"         candidates per file: >= 0.3 median {q['candidates_03_median']:.0f} (max "
          f"{q['candidates_03_max']}), >= 0.05 median {q['candidates_005_median']:.0f} (max {q['candidates_005_max']})")
    if not args.sample:
        return
    start = time.perf_counter()
    recall = _recall(args, corpus)
    line = (f"recall:  {recall['index_recall']:.4f} of {recall['positive_pairs']} brute-force pairs with agent "
            f"containment >= 0.3 ({recall['agent_files']} agent files x {recall['sample']} sampled references)")
    if "lsh_ensemble_recall" in recall:
        line += (f"; MinHashLSHEnsemble(0.3, 128 perm): recall {recall['lsh_ensemble_recall']:.4f}, "
                 f"{recall['lsh_ensemble_candidates_per_file']:.0f} candidates per file in the sample")
    print(line + f" [{time.perf_counter() - start:.0f} s]")


if __name__ == "__main__":
    main()
