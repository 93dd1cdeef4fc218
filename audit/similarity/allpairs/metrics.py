"""Dolos's figures for every pair of a set of files: :func:`all_pair_metrics` and its batches.

Covered counts (:mod:`~mleaudit.audit.similarity.allpairs.covered`) and longest fragments
(:mod:`~mleaudit.audit.similarity.allpairs.longest`) put together as a :class:`PairTable`; several
analyses at once (one per competition) go out one group per task to forked processes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from mleaudit.audit.cpus import idle_cpus, usable_cpus
from mleaudit.audit.similarity.allpairs.covered import _covered
from mleaudit.audit.similarity.allpairs.fingerprints import _MIN_PARALLEL_CHARS, _check_texts, fingerprint_texts
from mleaudit.audit.similarity.allpairs.longest import _longest_with_short, _Successors
from mleaudit.audit.similarity.allpairs.occurrences import _EMPTY, _Corpus, _run_starts
from mleaudit.audit.similarity.allpairs.processes import _MAX_TASKS, _deal, _map_in_processes
from mleaudit.audit.similarity.allpairs.table import PairTable

if TYPE_CHECKING:  # imported lazily: the all-pairs path needs no index at import time
    from mleaudit.audit.similarity.fingerprint_index import IndexedFile

__all__ = [
    "all_pair_metrics",
    "all_pair_metrics_by_group",
    "all_pair_metrics_of_texts",
    "default_jobs",
    "idle_jobs",
]


def _hash_array(file: Any) -> np.ndarray:
    """int64 fingerprint hashes of an :class:`IndexedFile` or of a sequence of ints."""
    fingerprints = getattr(file, "fingerprints", None)
    if fingerprints is not None:
        return np.fromiter((f.hash for f in fingerprints), dtype=np.int64, count=len(fingerprints))
    array = np.asarray(file, dtype=np.int64)
    if array.ndim != 1:
        raise ValueError(f"fingerprint hashes must be one-dimensional, got shape {array.shape}")
    return array


def _pair_rows(n_files: int) -> tuple[np.ndarray, np.ndarray]:
    """``(left, right)`` of every pair ``left < right`` in nested-loop order."""
    left, right = np.triu_indices(n_files, k=1)
    return left.astype(np.int64), right.astype(np.int64)


#: Parallel pair computation only pays off from about this many fingerprint occurrences.
_MIN_PARALLEL_OCCURRENCES = 20_000


def _longest_of_groups(corpus: _Corpus, groups: list[tuple[int, np.ndarray]], jobs: int) -> list[np.ndarray]:
    """:func:`_longest_with_short` of every ``(short, partners)`` group, in ``jobs`` processes."""
    if jobs <= 1 or len(groups) < 2 or len(corpus.hid) < _MIN_PARALLEL_OCCURRENCES:
        successors = _Successors(corpus.n_hashes)
        return [_longest_with_short(corpus, successors, one, partners) for one, partners in groups]
    # Work per group grows with the long sides' sizes: tasks go out largest first, so that the
    # small ones at the end even out the processes' loads.
    cost = np.array([int(corpus.sizes[partners].sum()) + len(partners) for _, partners in groups])
    tasks = _deal(np.argsort(-cost, kind="stable").tolist(), _MAX_TASKS)

    def run(task: int) -> list[np.ndarray]:
        successors = _Successors(corpus.n_hashes)
        return [_longest_with_short(corpus, successors, *groups[g]) for g in tasks[task]]

    out: list[np.ndarray] = [_EMPTY] * len(groups)
    for task, values in zip(tasks, _map_in_processes(run, len(tasks), jobs)):
        for g, value in zip(task, values):
            out[g] = value
    return out


def all_pair_metrics(
    files: Sequence["IndexedFile"] | Sequence[Sequence[int]] | Sequence[np.ndarray],
    ignored: frozenset[int] = frozenset(),
    *,
    jobs: int = 1,
) -> PairTable:
    """Dolos's figures for every pair of ``files``, as :func:`dolos_metrics` computes them one by one.

    Parameters
    ----------
    files : sequence of IndexedFile, or of fingerprint hash sequences
        Each file's fingerprints in document order: an
        :class:`~mleaudit.audit.similarity.fingerprint_index.IndexedFile`, or its hashes (a 1-D int sequence, as
        :func:`fingerprint_hashes` returns them). The left file of a pair is the earlier one.
    ignored : frozenset of int
        Hashes that never count as shared (``FingerprintIndex.ignored_hashes``).
    jobs : int, default 1
        Processes for the longest fragments, this one included (forked, so only where the
        platform forks; inputs under :data:`_MIN_PARALLEL_OCCURRENCES` fingerprints stay in
        this process).

    Returns
    -------
    PairTable
        ``F * (F - 1) / 2`` rows for ``F`` files; row ``r`` equals
        ``dolos_metrics(files[table.left[r]], files[table.right[r]], ignored)`` field by field
        (``similarity`` as the same double).

    Raises
    ------
    ValueError
        If a hash sequence is not one-dimensional or holds values outside int64, or if
        ``jobs < 1``.

    Notes
    -----
    Memory: a few arrays of one entry per fingerprint, ``F x F`` int64 counts, and the bigram
    matches of one short file at a time. Time: about linear in the covered fingerprints of all
    pairs (see the module docstring).

    Examples
    --------
    >>> table = all_pair_metrics([[1, 2, 3, 4, 2], [2, 3, 9], [5]])
    >>> table.left.tolist(), table.right.tolist()
    ([0, 0, 1], [1, 2, 2])
    >>> table.total_overlap.tolist(), table.longest_fragment.tolist()
    ([5, 0, 0], [2, 0, 0])
    """
    if jobs < 1:
        raise ValueError(f"jobs must be >= 1, got {jobs}")
    sequences = [_hash_array(f) for f in files]
    corpus = _Corpus(sequences, ignored)
    n = corpus.n_files
    covered = _covered(corpus)
    left, right = _pair_rows(n)
    left_covered, right_covered = covered[left, right], covered[right, left]
    # Dolos's short side: the left file when it has strictly fewer shared occurrences.
    longest = np.zeros((n, n), dtype=np.int64)  # [short, long]
    short_is_left = left_covered < right_covered
    short = np.where(short_is_left, left, right)
    long = np.where(short_is_left, right, left)
    sharing = left_covered > 0
    short, long = short[sharing], long[sharing]
    if len(short):
        order = np.argsort(short, kind="stable")
        short, long = short[order], long[order]
        starts = _run_starts(short)
        groups = [(int(short[b]), long[b:e]) for b, e in zip(starts.tolist(), np.append(starts[1:], len(short)).tolist())]
        for (one, partners), values in zip(groups, _longest_of_groups(corpus, groups, jobs)):
            longest[one, partners] = values
    left_total, right_total = corpus.sizes[left], corpus.sizes[right]
    left_ignored, right_ignored = corpus.ignored_counts[left], corpus.ignored_counts[right]
    overlap = left_covered + right_covered
    denominator = left_total + right_total - left_ignored - right_ignored
    with np.errstate(divide="ignore", invalid="ignore"):
        similarity = np.where(denominator > 0, overlap / np.maximum(denominator, 1), 0.0)
    return PairTable(
        left=left,
        right=right,
        similarity=similarity.astype(np.float64),
        total_overlap=overlap,
        longest_fragment=np.where(short_is_left, longest[left, right], longest[right, left]),
        left_covered=left_covered,
        right_covered=right_covered,
        left_total=left_total,
        right_total=right_total,
        left_ignored=left_ignored,
        right_ignored=right_ignored,
    )


def all_pair_metrics_by_group(
    groups: Sequence[Sequence["IndexedFile"] | Sequence[Sequence[int]] | Sequence[np.ndarray]],
    ignored: frozenset[int] = frozenset(),
    *,
    jobs: int = 1,
) -> list[PairTable]:
    """:func:`all_pair_metrics` of several groups of files (one analysis each), in parallel.

    Parameters
    ----------
    groups : sequence of sequences of files
        Each group as :func:`all_pair_metrics` takes it (for example the notebooks of one
        competition each); no pair crosses two groups.
    ignored : frozenset of int
        As for :func:`all_pair_metrics`, for every group.
    jobs : int, default 1
        Processes, this one included. Groups go out to forked processes largest first; a
        group that alone outweighs a process's share is computed first, with its longest
        fragments spread over all ``jobs`` processes.

    Returns
    -------
    list of PairTable
        One per group, in order; each equal to ``all_pair_metrics(group, ignored)``.

    Raises
    ------
    ValueError
        As :func:`all_pair_metrics`.

    Examples
    --------
    >>> tables = all_pair_metrics_by_group([[[1, 2, 3], [2, 3, 4]], [[5], [5], [6]]])
    >>> [table.total_overlap.tolist() for table in tables]
    [[4], [2, 0, 0]]
    """
    if jobs < 1:
        raise ValueError(f"jobs must be >= 1, got {jobs}")
    sequences = [[_hash_array(f) for f in group] for group in groups]
    # cost of a group: its fingerprints times its files (every file meets every other)
    cost = [sum(len(s) for s in group) * len(group) for group in sequences]
    share = sum(cost) / jobs
    tables: dict[int, PairTable] = {}
    rest = []
    for g, group in enumerate(sequences):
        if jobs > 1 and cost[g] > share:
            tables[g] = all_pair_metrics(group, ignored, jobs=jobs)
        else:
            rest.append(g)
    if jobs == 1 or sum(len(s) for g in rest for s in sequences[g]) < _MIN_PARALLEL_OCCURRENCES:
        for g in rest:
            tables[g] = all_pair_metrics(sequences[g], ignored)
    else:
        tasks = _deal(sorted(rest, key=lambda g: -cost[g]), _MAX_TASKS)

        def run(task: int) -> list[PairTable]:
            return [all_pair_metrics(sequences[g], ignored) for g in tasks[task]]

        for task, found in zip(tasks, _map_in_processes(run, len(tasks), jobs)):
            for g, table in zip(task, found):
                tables[g] = table
    return [tables[g] for g in range(len(sequences))]


def all_pair_metrics_of_texts(
    groups: Sequence[Sequence[tuple[str, str]]],
    *,
    jobs: int = 1,
    kgram_length: int = 23,
    kgrams_in_window: int = 17,
) -> list[PairTable]:
    """Dolos's figures for every pair within each group of texts (one analysis per group).

    The same tables as :func:`fingerprint_texts` of all texts followed by
    :func:`all_pair_metrics` of each group, with the work spread over ``jobs`` processes in
    the way that suits the groups:

    - several groups, none outweighing a process's share (the notebooks of many
      competitions, each compared within its competition): each group is one task, taken
      largest first by whichever process is free, which fingerprints the group's files and
      computes its pairs, so that only the finished tables travel between processes and the
      processes fork once, before any tree is built;
    - otherwise (one group, or one that dominates): all files are fingerprinted in parallel,
      then the groups' pairs are computed as :func:`all_pair_metrics_by_group` does.

    Parameters
    ----------
    groups : sequence of sequences of (str, str)
        ``(source text, language)`` per file, per group; the left file of a pair is the
        earlier one in its group.
    jobs : int, default 1
        Processes, this one included.
    kgram_length, kgrams_in_window : int
        As for :func:`fingerprint_hashes`.

    Returns
    -------
    list of PairTable
        One per group, in order; row ``r`` of a table is the pair ``(left[r], right[r])`` of
        positions in that group.

    Raises
    ------
    KeyError
        If a language is neither a known grammar nor ``"chars"``.
    ValueError
        If ``jobs``, ``kgram_length`` or ``kgrams_in_window`` is below 1.

    Examples
    --------
    >>> code = "def f(a):\\n    return [x * a for x in range(10) if x % 2]\\n"
    >>> (table,) = all_pair_metrics_of_texts([[(code, "python"), (code.replace("a", "b"), "python")]])
    >>> float(table.similarity[0])
    1.0
    """
    texts = [item for group in groups for item in group]
    _check_texts(texts, kgram_length, kgrams_in_window, jobs)
    options = {"kgram_length": kgram_length, "kgrams_in_window": kgrams_in_window}
    # Work of a group: tokenizing is about linear in its text; its pairs add about a fiftieth
    # of that per file in the group (measured on Kaggle notebooks, 2 to 33 per competition).
    cost = [sum(len(text) for text, _ in group) * (1 + len(group) / 50) for group in groups]
    if (jobs > 1 and len(groups) > 1 and max(cost) <= sum(cost) / jobs and len(texts) > len(groups)
            and sum(len(text) for text, _ in texts) >= _MIN_PARALLEL_CHARS):
        tasks = _deal(sorted(range(len(groups)), key=lambda g: -cost[g]), _MAX_TASKS)

        def run(task: int) -> list[PairTable]:
            return [all_pair_metrics(fingerprint_texts(groups[g], **options)) for g in tasks[task]]

        tables: dict[int, PairTable] = {}
        for task, found in zip(tasks, _map_in_processes(run, len(tasks), jobs)):
            for g, table in zip(task, found):
                tables[g] = table
        return [tables[g] for g in range(len(groups))]
    fingerprints = iter(fingerprint_texts(texts, jobs=jobs, **options))
    return all_pair_metrics_by_group([[next(fingerprints) for _ in group] for group in groups], jobs=jobs)


def default_jobs() -> int:
    """The number of CPUs this process may run on (``-j 0``; :func:`mleaudit.audit.cpus.usable_cpus`)."""
    return usable_cpus()


def idle_jobs() -> int:
    """Processes for a machine shared with other work (no ``-j``; :func:`mleaudit.audit.cpus.idle_cpus`)."""
    return idle_cpus()
