"""Speed of the similarity engine over the shared Dolos golden corpus.

Prints, per stage: tokenizing (tree-sitter parse + Dolos tokens), fingerprinting (hash, roll,
winnow), Dolos pair figures for every pair of each competition (as Dolos's all-pairs analysis
does) one pair at a time and all at once (``fingerprint_texts`` + ``all_pair_metrics``, the path
of ``mleaudit similarity pairs``), and full ``compare`` reports (containment and fragments) of every file against every
file of its competition, one call per competition. Also times one file of about 1,000 lines on its own.

Usage: ``python benchmarks/similarity_speed.py [--data ../shared/data] [--repeat 3]``
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]

import mleaudit.audit.parsing  # noqa: E402
from mleaudit.audit.similarity import (  # noqa: E402
    FingerprintIndex,
    SimilarityOptions,
    compare,
    dolos_metrics,
    fingerprint_tokens,
    tokenize_text,
)
from mleaudit.audit.similarity.allpairs import all_pair_metrics, fingerprint_texts  # noqa: E402
from mleaudit.audit.units import CodeUnit  # noqa: E402

DEFAULT_DATA = REPO_ROOT.parent / "shared" / "data"


def _clear_parse_cache() -> None:
    # parse() caches trees by text digest; timing repeated runs needs real parses.
    mleaudit.audit.parsing.clear_parse_cache()


def _load(golden: Path) -> dict[str, list[tuple[str, str]]]:
    by_competition = {}
    for directory in sorted(p for p in golden.iterdir() if p.is_dir()):
        files = sorted(directory.glob("*.py"))
        by_competition[directory.name] = [
            (f"{directory.name}/{f.name}", f.read_bytes().decode("utf-8")) for f in files
        ]
    return by_competition


def _best(seconds: list[float]) -> float:
    return min(seconds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="the shared data folder")
    parser.add_argument("--repeat", type=int, default=3, help="runs per stage; the best is reported")
    args = parser.parse_args()
    golden = args.data / "similarity-golden"
    if not golden.is_dir():
        raise SystemExit(f"no golden corpus at {golden}")
    corpus = _load(golden)
    texts = [item for items in corpus.values() for item in items]
    n_lines = sum(text.count("\n") + 1 for _, text in texts)
    n_pairs = sum(len(items) * (len(items) - 1) // 2 for items in corpus.values())
    print(f"corpus: {len(texts)} files, {n_lines} lines, {len(corpus)} competitions, {n_pairs} pairs")

    tokenize_times, fingerprint_times = [], []
    tokenized = []
    for _ in range(args.repeat):
        _clear_parse_cache()
        start = time.perf_counter()
        tokenized = [tokenize_text(text, "python", key) for key, text in texts]
        tokenize_times.append(time.perf_counter() - start)
        start = time.perf_counter()
        for item in tokenized:
            fingerprint_tokens(item.tokens, 23, 17)
        fingerprint_times.append(time.perf_counter() - start)
    n_tokens = sum(len(t.tokens) for t in tokenized)
    t_tok, t_fp = _best(tokenize_times), _best(fingerprint_times)
    print(f"tokenize:    {len(texts) / t_tok:8.1f} files/s  {n_lines / t_tok:10.0f} lines/s  "
          f"{n_tokens / t_tok:10.0f} tokens/s  ({t_tok:.2f} s)")
    print(f"fingerprint: {len(texts) / t_fp:8.1f} files/s  {n_tokens / t_fp:10.0f} tokens/s  ({t_fp:.2f} s)")

    pair_times = []
    for _ in range(args.repeat):
        start = time.perf_counter()
        for items in corpus.values():
            index = FingerprintIndex()
            keys = {key for key, _ in items}
            entries = [index.add_reference(t) for t in tokenized if t.path in keys]
            for i, left in enumerate(entries):
                for right in entries[i + 1 :]:
                    dolos_metrics(left, right)
        pair_times.append(time.perf_counter() - start)
    t_pairs = _best(pair_times)
    print(f"dolos pairs: {n_pairs / t_pairs:8.1f} pairs/s (index + all pairs, tokens reused; {t_pairs:.2f} s)")

    # the all-pairs path (``similarity pairs``): fingerprint hashes only, then every pair at once
    hash_times, fingerprints = [], []
    for _ in range(args.repeat):
        start = time.perf_counter()
        fingerprints = fingerprint_texts([(text, "python") for _, text in texts])
        hash_times.append(time.perf_counter() - start)
    t_hash = _best(hash_times)
    print(f"fingerprint_texts: {len(texts) / t_hash:8.1f} files/s  {n_lines / t_hash:10.0f} lines/s  "
          f"(parse, tokens and winnowing without token records; {t_hash:.2f} s)")
    by_key = {key: f for (key, _), f in zip(texts, fingerprints)}
    batch_times, all_times = [], []
    for _ in range(args.repeat):
        start = time.perf_counter()
        for items in corpus.values():
            all_pair_metrics([by_key[key] for key, _ in items])
        batch_times.append(time.perf_counter() - start)
        start = time.perf_counter()
        all_pair_metrics(fingerprints)
        all_times.append(time.perf_counter() - start)
    t_batch, t_all = _best(batch_times), _best(all_times)
    n_all = len(texts) * (len(texts) - 1) // 2
    print(f"all pairs:   {n_pairs / t_batch:8.1f} pairs/s (all_pair_metrics per competition; {t_batch:.2f} s); "
          f"{n_all / t_all:8.1f} pairs/s (all {len(texts)} files at once, {n_all} pairs; {t_all:.2f} s)")

    compare_times = []
    n_reports = 0
    for _ in range(args.repeat):
        _clear_parse_cache()
        n_reports = 0
        start = time.perf_counter()
        for items in corpus.values():
            # one call per competition, every file as agent and as reference (self-pairs too),
            # the way one run's code files are compared with a corpus in a single call
            units = [CodeUnit(path=key, language="python", text=text) for key, text in items]
            n_reports += len(compare(units, units, SimilarityOptions(max_pairs_per_agent=None)).pairs)
        compare_times.append(time.perf_counter() - start)
    t_cmp = _best(compare_times)
    print(f"compare:     {n_reports / t_cmp:8.1f} pair reports/s (tokenize + index + containment + fragments; "
          f"{n_reports} reports in {t_cmp:.2f} s)")

    key, text = min(texts, key=lambda item: abs(item[1].count("\n") - 1000))  # the file nearest 1,000 lines
    single = []
    for _ in range(max(args.repeat, 5)):
        _clear_parse_cache()
        start = time.perf_counter()
        fingerprint_tokens(tokenize_text(text, "python", key).tokens, 23, 17)
        single.append(time.perf_counter() - start)
    print(f"one file:    {key} ({text.count(chr(10)) + 1} lines) tokenized and fingerprinted in "
          f"{_best(single) * 1000:.1f} ms")


if __name__ == "__main__":
    main()
