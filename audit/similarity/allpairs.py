"""Dolos's pair figures for every pair of a set of files at once, with numpy.

:func:`mleaudit.audit.similarity.pairs.dolos_metrics` computes one pair in Python; an all-pairs analysis
(Dolos's ``analyze`` over a folder, ``mleaudit similarity pairs``) has ``F (F - 1) / 2`` pairs,
and the per-pair work dominates. :func:`all_pair_metrics` computes the same figures, to the
last bit, for all pairs together:

- **Covered counts.** Occurrences are grouped by (hash, file) into *blocks*; every two blocks
  of one hash in two files add their sizes to the two files' covered counts (Dolos's
  ``leftCovered`` / ``rightCovered``). Work: one sort of all fingerprints, plus one step per
  (pair, shared distinct hash).
- **Longest fragment.** Dolos's ``longestCommonSubstring`` (see
  :func:`mleaudit.audit.similarity.pairs.longest_common_run`) is the length of the longest common
  substring of two sequences: the *long* side's shared fingerprints, in order with the others
  left out, and the *short* side's whole fingerprint sequence (its unshared fingerprints never
  match, so they only break runs). A run of ``r`` matches holds ``r - 1`` *bigram matches*: two
  consecutive shared fingerprints of the long side equal to two consecutive fingerprints of the
  short side. So per short file, the long sides' bigrams are looked up among the short file's
  bigrams; the bigram matches are sorted by (pair, diagonal, position) and the longest chain of
  consecutive ones, plus one, is the longest fragment (one when the files share a hash but no
  bigram). Dolos instead pairs every occurrence of a shared hash with every other, which is
  quadratic in a hash's repetitions; bigram matches are far fewer.
- **Repetitive pairs.** A pair whose bigram matches still exceed
  :data:`MAX_BIGRAM_MATCHES_PER_OCCURRENCE` per fingerprint (code repeating one statement
  thousands of times) gets its longest fragment from :func:`longest_common_substring`, exact in
  ``O(n log^2 n)`` whatever the repetitions.
- **Processes.** Parsing and the walk over syntax trees hold the interpreter lock, so the work
  is spread over processes forked after the imports (:func:`_map_in_processes`): files are
  fingerprinted largest first by whichever process is free, the longest fragments of a large
  analysis are computed per short file, and several analyses at once (one per competition,
  :func:`all_pair_metrics_of_texts`) go out one group per task. Task numbers travel through a
  pipe, results come back pickled; the figures never depend on the number of processes.

Exactness is tested against Dolos 3.5.1's output on every golden pair and against
:func:`~mleaudit.audit.similarity.pairs.dolos_metrics` on random sequences.

Naming: a file's *fingerprints* are its winnowed k-gram hashes in document order (Dolos's
"kgrams"); a *pair* is two files ``left`` < ``right`` in input order.
"""

from __future__ import annotations

import logging
import os
import pickle
import signal
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Iterator, Sequence

import numpy as np

from mleaudit.audit.cpus import idle_cpus, usable_cpus
from mleaudit.audit.errors import AuditError

from mleaudit.audit.similarity.pair_metrics import DolosMetrics
from mleaudit.audit.similarity.substring import longest_common_substring

if TYPE_CHECKING:  # imported lazily: the all-pairs path needs no index at import time
    from mleaudit.audit.similarity.fingerprint_index import IndexedFile

__all__ = [
    "MAX_BIGRAM_MATCHES_PER_OCCURRENCE",
    "PairTable",
    "all_pair_metrics",
    "all_pair_metrics_by_group",
    "all_pair_metrics_of_texts",
    "default_jobs",
    "fingerprint_hashes",
    "idle_jobs",
    "fingerprint_texts",
    "longest_common_substring",
]

logger = logging.getLogger(__name__)

#: Above this many bigram matches per fingerprint of a pair (both files' fingerprints counted),
#: the pair's longest fragment comes from :func:`longest_common_substring` instead of the
#: bigram matches. Both give the same number; this only bounds the work on repetitive code.
MAX_BIGRAM_MATCHES_PER_OCCURRENCE = 16
#: Bigram matches are sorted as keys packing (file, diagonal, position) into this many bits of an
#: int64; wider inputs are sorted one long side at a time.
_KEY_BITS = 62
#: Block pairs listed at a time while counting covered fingerprints (bounds the memory).
_BLOCK_PAIRS = 1 << 22

_EMPTY = np.zeros(0, dtype=np.int64)


# -- fingerprints ---------------------------------------------------------------------------------


def fingerprint_hashes(text: str, language: str, *, kgram_length: int = 23, kgrams_in_window: int = 17) -> np.ndarray:
    """A text's fingerprint hashes in document order, as :class:`FingerprintIndex` selects them.

    Parameters
    ----------
    text : str
        Source code (untrusted: parsed, never run).
    language : str
        A grammar name from :data:`mleaudit.audit.parsing.LANGUAGES`, or ``"chars"``.
    kgram_length, kgrams_in_window : int
        Dolos's ``kgramLength`` (k, in tokens) and ``kgramsInWindow`` (the winnowing window).

    Returns
    -------
    numpy.ndarray
        int64 hashes, equal to ``[f.hash for f in FingerprintIndex(k, w).add_reference(
        tokenize_text(text, language, path)).fingerprints]``, without building the token
        strings, regions or :class:`~mleaudit.audit.similarity.winnow.Fingerprint` records.

    Raises
    ------
    KeyError
        If ``language`` is neither a known grammar nor ``"chars"``.
    ValueError
        If ``kgram_length`` or ``kgrams_in_window`` is below 1.
    """
    from mleaudit.audit.similarity.tokenize import _token_hash_array
    from mleaudit.audit.similarity.winnow import _kgram_fingerprints

    return _kgram_fingerprints(_token_hash_array(text, language), kgram_length, kgrams_in_window)


#: Parallel fingerprinting pays off from about this many characters of text: a forked process
#: costs a few milliseconds, tokenizing 100 000 characters some 30.
_MIN_PARALLEL_CHARS = 100_000


def _check_texts(texts: Sequence[tuple[str, str]], kgram_length: int, kgrams_in_window: int, jobs: int) -> None:
    """Raise before any work (and before any process is forked) on a bad argument."""
    from mleaudit.audit.parsing import LANGUAGES

    if jobs < 1:
        raise ValueError(f"jobs must be >= 1, got {jobs}")
    if kgram_length < 1:
        raise ValueError(f"k-gram length must be >= 1, got {kgram_length}")
    if kgrams_in_window < 1:
        raise ValueError(f"window must be >= 1, got {kgrams_in_window}")
    for _, language in texts:
        if language != "chars" and language not in LANGUAGES:
            raise KeyError(f"unknown language {language!r}; known: chars, {', '.join(sorted(LANGUAGES))}")


def fingerprint_texts(
    texts: Sequence[tuple[str, str]],
    *,
    jobs: int = 1,
    kgram_length: int = 23,
    kgrams_in_window: int = 17,
) -> list[np.ndarray]:
    """:func:`fingerprint_hashes` of many ``(text, language)`` items, optionally in parallel.

    Identical items (a kernel copied verbatim) are fingerprinted once and share one array.

    Parameters
    ----------
    texts : sequence of (str, str)
        ``(source text, language)`` per file.
    jobs : int, default 1
        Processes, this one included. Parsing and walking syntax trees is CPU-bound work that
        holds the interpreter lock (py-tree-sitter parses without releasing it), so parallel
        tokenizing needs processes: ``jobs - 1`` are forked (where the platform forks and this
        process runs no other thread), inherit the loaded grammars and the texts, and take
        files, largest first, as they become free; only the hashes travel back. Inputs under
        :data:`_MIN_PARALLEL_CHARS` characters stay in this process, where a fork would cost
        more than it saves.
    kgram_length, kgrams_in_window : int
        As for :func:`fingerprint_hashes`.

    Returns
    -------
    list of numpy.ndarray
        In the order of ``texts``; identical inputs give the same (shared, not to be modified)
        array.

    Raises
    ------
    KeyError
        If a language is neither a known grammar nor ``"chars"``.
    ValueError
        If ``jobs``, ``kgram_length`` or ``kgrams_in_window`` is below 1.
    """
    _check_texts(texts, kgram_length, kgrams_in_window, jobs)
    position: dict[tuple[str, str], int] = {}
    unique: list[tuple[str, str]] = []
    source = []
    for item in texts:
        found = position.get(item)
        if found is None:
            found = position[item] = len(unique)
            unique.append(item)
        source.append(found)

    def fingerprint(items: Sequence[int]) -> list[np.ndarray]:
        return [fingerprint_hashes(*unique[u], kgram_length=kgram_length, kgrams_in_window=kgrams_in_window)
                for u in items]

    if jobs == 1 or len(unique) < 2 or sum(len(text) for text, _ in unique) < _MIN_PARALLEL_CHARS:
        hashes = fingerprint(range(len(unique)))
    else:
        # largest first: the last files to be handed out are the small ones, so the
        # processes finish together
        order = sorted(range(len(unique)), key=lambda u: -len(unique[u][0]))
        tasks = _deal(order, _MAX_TASKS)
        hashes = [_EMPTY] * len(unique)
        for task, found in zip(tasks, _map_in_processes(lambda t: fingerprint(tasks[t]), len(tasks), jobs)):
            for u, value in zip(task, found):
                hashes[u] = value
    return [hashes[u] for u in source]


# -- processes ------------------------------------------------------------------------------------

#: The most tasks one :func:`_map_in_processes` call hands out (task numbers travel as one byte).
_MAX_TASKS = 256


def _deal(items: Sequence[int], count: int) -> list[list[int]]:
    """``items`` cut into at most ``count`` consecutive runs of near-equal length, in order."""
    count = max(1, min(count, len(items)))
    size, extra = divmod(len(items), count)
    runs, start = [], 0
    for k in range(count):
        stop = start + size + (k < extra)
        runs.append(list(items[start:stop]))
        start = stop
    return runs


def _can_fork() -> bool:
    """Fork only where the platform can and no other thread runs (a thread holding a lock at
    the fork would leave it locked for good in the child)."""
    return hasattr(os, "fork") and threading.active_count() == 1


def _take_tasks(function: Callable[[int], Any], tasks: int) -> dict[int, Any]:
    """Run ``function`` on task numbers read from the pipe ``tasks`` until it is empty."""
    done = {}
    while True:
        token = os.read(tasks, 1)
        if not token:
            return done
        done[token[0]] = function(token[0])


def _child(function: Callable[[int], Any], tasks: int, results: int) -> None:
    """The forked process: take tasks, send ``(True, results)`` or ``(False, exception)``, exit."""
    status = 0
    try:
        try:
            payload: tuple[bool, Any] = (True, _take_tasks(function, tasks))
        except BaseException as error:  # reported to the parent, which raises it
            status, payload = 1, (False, error)
        try:
            data = pickle.dumps(payload, protocol=pickle.HIGHEST_PROTOCOL)
        except Exception as error:
            status = 1
            data = pickle.dumps((False, AuditError(f"a worker process could not send its result: {error!r}")))
        with os.fdopen(results, "wb") as stream:
            stream.write(data)
    finally:
        # never back into the caller's code, never its exit handlers or buffered output
        os._exit(status)


def _read_all(descriptor: int) -> bytes:
    chunks = []
    while True:
        chunk = os.read(descriptor, 1 << 20)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)


def _map_in_processes(function: Callable[[int], Any], n_tasks: int, jobs: int) -> list[Any]:
    """``[function(t) for t in range(n_tasks)]``, computed by this process and ``jobs - 1``
    forked ones.

    Forked processes start with everything this one has loaded (modules, grammars, inputs), so
    only task numbers and results cross between processes. The task numbers are written to a
    pipe before the fork, one byte each, and every process reads the next one when it is free:
    a one-byte read is indivisible, so each task is taken exactly once, in order. Each forked
    process sends its results back pickled through a pipe of its own, and an exception it
    raised is raised here.

    Parameters
    ----------
    function : callable
        Takes a task number in ``range(n_tasks)``; its results must pickle.
    n_tasks : int
        At most :data:`_MAX_TASKS`.
    jobs : int
        Processes, this one included; 1 (or a platform without fork, or a process running
        other threads) computes every task here, in order.

    Returns
    -------
    list
        The results in task order.

    Raises
    ------
    AuditError
        If a forked process ended without sending its results (killed, out of memory).
    Exception
        Whatever ``function`` raised, in whichever process.
    """
    if n_tasks > _MAX_TASKS:
        raise ValueError(f"at most {_MAX_TASKS} tasks, got {n_tasks}")
    jobs = min(jobs, n_tasks)
    if jobs <= 1 or not _can_fork():
        return [function(t) for t in range(n_tasks)]
    tasks_out, tasks_in = os.pipe()
    try:
        os.write(tasks_in, bytes(range(n_tasks)))  # below PIPE_BUF: written whole, at once
    finally:
        os.close(tasks_in)
    children: list[tuple[int, int]] = []  # (process id, read end of its result pipe)
    try:
        for _ in range(jobs - 1):
            results_out, results_in = os.pipe()
            pid = os.fork()
            if pid == 0:
                os.close(results_out)
                _child(function, tasks_out, results_in)
            os.close(results_in)
            children.append((pid, results_out))
        results = _take_tasks(function, tasks_out)
        while children:
            pid, descriptor = children[0]
            data = _read_all(descriptor)
            os.close(descriptor)
            _, status = os.waitpid(pid, 0)
            children.pop(0)
            if not data:
                raise AuditError(f"a worker process ended without its results ({_exit_text(status)})")
            ok, payload = pickle.loads(data)
            if not ok:
                raise payload
            results.update(payload)
    finally:
        os.close(tasks_out)
        for pid, descriptor in children:  # left after an error here: stop them
            os.close(descriptor)
            try:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
            except (ProcessLookupError, ChildProcessError):
                pass
    if len(results) != n_tasks:
        raise AuditError(f"worker processes returned {len(results)} of {n_tasks} results")
    return [results[t] for t in range(n_tasks)]


def _exit_text(status: int) -> str:
    if os.WIFSIGNALED(status):
        return f"killed by signal {os.WTERMSIG(status)}"
    return f"exit status {os.waitstatus_to_exitcode(status)}"


def _hash_array(file: Any) -> np.ndarray:
    """int64 fingerprint hashes of an :class:`IndexedFile` or of a sequence of ints."""
    fingerprints = getattr(file, "fingerprints", None)
    if fingerprints is not None:
        return np.fromiter((f.hash for f in fingerprints), dtype=np.int64, count=len(fingerprints))
    array = np.asarray(file, dtype=np.int64)
    if array.ndim != 1:
        raise ValueError(f"fingerprint hashes must be one-dimensional, got shape {array.shape}")
    return array


# -- the table of all pairs -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class PairTable:
    """Dolos's figures of every pair of files, as columns.

    Row ``r`` is the pair ``(left[r], right[r])`` of input positions, ``left < right``, in the
    order of a nested loop (left ascending, then right). Every column is a numpy array of one
    value per pair; the figures mean what they mean on
    :class:`~mleaudit.audit.similarity.pairs.DolosMetrics`.

    Attributes
    ----------
    left, right : numpy.ndarray of int64
        Positions of the two files in the input sequence.
    similarity : numpy.ndarray of float64
        ``total_overlap / (left_total + right_total - left_ignored - right_ignored)``, in [0, 1].
    total_overlap, longest_fragment, left_covered, right_covered, left_total, right_total,
    left_ignored, right_ignored : numpy.ndarray of int64
        As on :class:`~mleaudit.audit.similarity.pairs.DolosMetrics`.
    """

    left: np.ndarray
    right: np.ndarray
    similarity: np.ndarray
    total_overlap: np.ndarray
    longest_fragment: np.ndarray
    left_covered: np.ndarray
    right_covered: np.ndarray
    left_total: np.ndarray
    right_total: np.ndarray
    left_ignored: np.ndarray
    right_ignored: np.ndarray

    def __len__(self) -> int:
        return len(self.left)

    def metrics(self, row: int) -> "DolosMetrics":
        """Row ``row`` as a :class:`~mleaudit.audit.similarity.pairs.DolosMetrics`."""
        return DolosMetrics(
            similarity=float(self.similarity[row]),
            total_overlap=int(self.total_overlap[row]),
            longest_fragment=int(self.longest_fragment[row]),
            left_covered=int(self.left_covered[row]),
            right_covered=int(self.right_covered[row]),
            left_total=int(self.left_total[row]),
            right_total=int(self.right_total[row]),
            left_ignored=int(self.left_ignored[row]),
            right_ignored=int(self.right_ignored[row]),
        )

    def __iter__(self) -> Iterator["DolosMetrics"]:
        return (self.metrics(row) for row in range(len(self)))

    def rows(self) -> list[dict[str, Any]]:
        """Every pair as a dict of Python numbers (``left``, ``right``, then the figures)."""
        names = ("left", "right", "similarity", "total_overlap", "longest_fragment", "left_covered",
                 "right_covered", "left_total", "right_total", "left_ignored", "right_ignored")
        columns = [getattr(self, name).tolist() for name in names]
        return [dict(zip(names, values)) for values in zip(*columns)]


def _pair_rows(n_files: int) -> tuple[np.ndarray, np.ndarray]:
    """``(left, right)`` of every pair ``left < right`` in nested-loop order."""
    left, right = np.triu_indices(n_files, k=1)
    return left.astype(np.int64), right.astype(np.int64)


def _run_starts(sorted_values: np.ndarray) -> np.ndarray:
    """Indices where a run of equal values begins in a sorted array."""
    if not len(sorted_values):
        return _EMPTY
    return np.flatnonzero(np.concatenate(([True], sorted_values[1:] != sorted_values[:-1])))


def _expand(starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """``concatenate([arange(s, s + c) for s, c in zip(starts, counts)])``, vectorised."""
    total = int(counts.sum())
    if not total:
        return _EMPTY
    ends = np.cumsum(counts)
    return np.arange(total, dtype=np.int64) + np.repeat(starts - (ends - counts), counts)


class _Corpus:
    """All files' fingerprints as one array of dense hash ids, with the per-file layout."""

    def __init__(self, sequences: list[np.ndarray], ignored: frozenset[int]) -> None:
        self.n_files = len(sequences)
        self.sizes = np.array([len(s) for s in sequences], dtype=np.int64)
        self.offsets = np.concatenate(([0], np.cumsum(self.sizes))).astype(np.int64)
        values = np.concatenate(sequences) if sequences else _EMPTY
        unique, inverse = np.unique(values, return_inverse=True)
        self.hid = inverse.astype(np.int64).reshape(-1)  # dense hash id per occurrence
        self.n_hashes = len(unique)
        self.file_of = np.repeat(np.arange(self.n_files, dtype=np.int64), self.sizes)
        self.ignored_id = np.zeros(self.n_hashes, dtype=bool)
        if ignored and len(unique):
            self.ignored_id = np.isin(unique, np.fromiter(ignored, dtype=np.int64, count=len(ignored)))
        ignored_at = self.ignored_id[self.hid]
        self.ignored_counts = np.bincount(self.file_of[ignored_at], minlength=self.n_files).astype(np.int64)
        self.countable = ~ignored_at
        # inverted index: the occurrences of hash h are by_hash[first[h] : first[h] + count[h]]
        self.by_hash = np.argsort(self.hid, kind="stable")
        self.hash_count = np.bincount(self.hid, minlength=self.n_hashes).astype(np.int64)
        self.hash_count[self.ignored_id] = 0
        self.hash_first = np.searchsorted(self.hid[self.by_hash], np.arange(self.n_hashes))

    def segment(self, file: int) -> slice:
        return slice(int(self.offsets[file]), int(self.offsets[file + 1]))


def _covered(corpus: _Corpus) -> np.ndarray:
    """``covered[x, y]``: occurrences in file ``x`` of hashes that file ``y`` has (ignored
    hashes left out), for every ordered pair; the diagonal is unused."""
    n = corpus.n_files
    covered = np.zeros((n, n), dtype=np.int64)
    positions = np.flatnonzero(corpus.countable)
    if not len(positions):
        return covered
    # blocks: the occurrences of one hash in one file
    keys = corpus.hid[positions] * n + corpus.file_of[positions]
    keys.sort()
    starts = _run_starts(keys)
    block_key = keys[starts]
    block_size = np.diff(np.append(starts, len(keys)))
    block_hash, block_file = block_key // n, block_key % n
    # every two blocks of one hash (files ascending within a hash)
    group_starts = _run_starts(block_hash)
    group_sizes = np.diff(np.append(group_starts, len(block_hash)))
    group_end = np.repeat(group_starts + group_sizes, group_sizes)
    partners = group_end - np.arange(len(block_hash)) - 1
    # A hash found in g files makes g (g - 1) / 2 block pairs (a line every kernel has, in
    # thousands of files: millions); they are listed a slice of blocks at a time.
    flat = np.zeros(n * n, dtype=np.float64)
    bounds = np.searchsorted(np.cumsum(partners), np.arange(1, int(partners.sum()) // _BLOCK_PAIRS + 1) * _BLOCK_PAIRS)
    for low, high in zip([0, *bounds.tolist()], [*bounds.tolist(), len(partners)]):
        blocks = np.arange(low, high, dtype=np.int64)
        first = np.repeat(blocks, partners[low:high])
        second = _expand(blocks + 1, partners[low:high])
        a, b = block_file[first], block_file[second]
        flat += np.bincount(a * n + b, weights=block_size[first], minlength=n * n)
        flat += np.bincount(b * n + a, weights=block_size[second], minlength=n * n)
    return np.rint(flat).astype(np.int64).reshape(n, n)


class _Successors:
    """Per short file: where each bigram of its fingerprints occurs, for fast lookups.

    The file's bigrams are sorted as keys ``head * n_hashes + tail``. For a head hash whose
    bigrams all have one tail (most do, repeated or not), ``after[head]`` is that tail and
    ``first[head]``, ``count[head]`` the range of its keys, so that a bigram is found with two
    array reads; a head followed by several different tails has ``after[head] == -2`` and its
    bigrams are looked up in the sorted keys; ``-1`` marks hashes that head no bigram. The
    arrays are sized by the number of distinct hashes and reset after each file, so that each
    file costs its own size.
    """

    def __init__(self, n_hashes: int) -> None:
        self.n_hashes = n_hashes
        self.after = np.full(n_hashes, -1, dtype=np.int64)
        self.first = np.zeros(n_hashes, dtype=np.int64)
        self.count = np.zeros(n_hashes, dtype=np.int64)

    def match_keys(self, short_hid: np.ndarray, first: np.ndarray, second: np.ndarray, owner: np.ndarray,
                   budget: np.ndarray, base: np.ndarray, step: int) -> tuple[np.ndarray, np.ndarray]:
        """Keys ``base[i] - step * a`` of the bigram matches: every ``i`` and every fingerprint
        index ``a`` of the short file with ``(short_hid[a], short_hid[a + 1]) == (first[i],
        second[i])``, in no particular order; and the *heavy* owners, those (``owner[i]``, a
        file number) whose matches would outnumber ``budget[owner]``: their matches are left
        out (counted, never listed)."""
        n_hashes = self.n_hashes
        keys = short_hid[:-1] * n_hashes + short_hid[1:]
        order = np.argsort(keys)  # equal keys in any order: matches are unordered
        keys = keys[order]
        heads = keys // n_hashes
        starts = _run_starts(heads)
        ends = np.append(starts[1:], len(heads))
        uniform = keys[starts] == keys[ends - 1]
        one_tail = starts[uniform]
        self.after[heads[one_tail]] = keys[one_tail] - heads[one_tail] * n_hashes
        self.first[heads[one_tail]] = one_tail
        self.count[heads[one_tail]] = (ends - starts)[uniform]
        self.after[heads[starts[~uniform]]] = -2
        try:
            follows = self.after[first]
            hit = np.flatnonzero(follows == second)
            low, counts = self.first[first[hit]], self.count[first[hit]]
            mixed = np.flatnonzero(follows == -2)
        finally:
            self.after[heads[starts]] = -1
        if len(mixed):
            query = first[mixed] * n_hashes + second[mixed]
            by_query = np.argsort(query)  # searchsorted is several times faster on ascending queries
            mixed, query = mixed[by_query], query[by_query]
            mixed_low = np.searchsorted(keys, query)
            mixed_counts = np.searchsorted(keys, query, side="right") - mixed_low
            found = mixed_counts > 0
            hit = np.concatenate((hit, mixed[found]))
            low = np.concatenate((low, mixed_low[found]))
            counts = np.concatenate((counts, mixed_counts[found]))
        per_owner = np.bincount(owner[hit], weights=counts, minlength=len(budget))
        heavy = np.flatnonzero(per_owner > budget)
        if len(heavy):
            light = np.ones(len(budget), dtype=bool)
            light[heavy] = False
            keep = light[owner[hit]]
            hit, low, counts = hit[keep], low[keep], counts[keep]
        if len(counts) and counts.max() == 1:
            return base[hit] - step * order[low], heavy
        return np.repeat(base[hit], counts) - step * order[_expand(low, counts)], heavy


def _longest_with_short(corpus: _Corpus, successors: _Successors, short: int, partners: np.ndarray) -> np.ndarray:
    """Dolos's longest fragment of every pair of file ``short`` (the short side) with the files
    ``partners`` (the long sides, each sharing a hash with it), in the order of ``partners``.
    """
    longest = np.zeros(corpus.n_files, dtype=np.int64)
    _longest_into(corpus, successors, short, partners, longest)
    return longest[partners]


def _longest_into(corpus: _Corpus, successors: _Successors, short: int, partners: np.ndarray,
                  longest: np.ndarray) -> None:
    """:func:`_longest_with_short`, written to ``longest[partner]``."""
    hid = corpus.hid
    short_hid = hid[corpus.segment(short)]
    is_partner = np.zeros(corpus.n_files, dtype=bool)
    is_partner[partners] = True
    # The long sides' shared fingerprints, in order (file by file, by position): the
    # occurrences of the short file's hashes, from the inverted index.
    distinct = np.unique(short_hid)
    shared = corpus.by_hash[_expand(corpus.hash_first[distinct], corpus.hash_count[distinct])]
    shared = shared[is_partner[corpus.file_of[shared]]]
    shared.sort()
    file_of = corpus.file_of[shared]
    starts = _run_starts(file_of)
    longest[file_of[starts]] = 1  # every partner shares at least one fingerprint
    has_next = np.flatnonzero(file_of[1:] == file_of[:-1])  # index i: shared[i] and shared[i + 1]
    if len(short_hid) < 2 or not len(has_next):
        return
    # Bigram matches: two consecutive shared fingerprints of a long side equal to two
    # consecutive fingerprints of the short file.
    shared_hid = hid[shared]
    # Pairs with too many bigram matches (long runs of one repeated statement) are left to the
    # exact fallback before the matches are listed.
    budget = MAX_BIGRAM_MATCHES_PER_OCCURRENCE * (corpus.sizes + len(short_hid))
    owner = file_of[has_next]
    counts = np.diff(np.append(starts, len(shared)))
    j = has_next - np.repeat(starts, counts)[has_next]  # Dolos's list position on the long side
    # A bigram match (j, a) of file f gets the key (f, j - a + span, j) in mixed radix: sorted,
    # consecutive j on one diagonal of one pair differ by exactly 1.
    span = int(max(corpus.sizes.max(), 1))
    width, height = span + 1, 2 * span + 1
    first, second = shared_hid[has_next], shared_hid[has_next + 1]
    if corpus.n_files * height * width < 1 << _KEY_BITS:
        parts = [(np.arange(len(has_next)), True)]
    else:  # too wide to pack the file number too: one long side at a time
        parts = [(np.flatnonzero(owner == f), False) for f in np.unique(owner).tolist()]
    for rows, with_file in parts:
        base = ((owner[rows] if with_file else 0) * height + j[rows] + span) * width + j[rows]
        keys, heavy = successors.match_keys(short_hid, first[rows], second[rows], owner[rows], budget, base, width)
        for other in heavy.tolist():
            longest[other] = longest_common_substring(shared_hid[file_of == other], short_hid)
        if not len(keys):
            continue
        keys.sort()
        run_starts = np.concatenate(([0], np.flatnonzero(np.diff(keys) != 1) + 1))
        run_lengths = np.diff(np.append(run_starts, len(keys)))
        run_file = keys[run_starts] // (height * width) if with_file else np.repeat(owner[rows[0]], len(run_starts))
        # a chain of c bigram matches is a run of c + 1 matching fingerprints
        np.maximum.at(longest, run_file, run_lengths + 1)


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
        :class:`~mleaudit.audit.similarity.index.IndexedFile`, or its hashes (a 1-D int sequence, as
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
