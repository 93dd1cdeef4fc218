"""The compiled grading kernels, when built, behind functions that take Arrow and NumPy arrays.

``grading.metrics._kernels`` (C, ``grading/metrics/_kernels.c``) runs the loops that cost most
when grading a million-row submission: comparing and joining submission ids with test ids
(:func:`same_texts`, :func:`text_permutation`), reordering a text column (:func:`take_text`),
finding a label among a row's predicted tokens for MAP@K (:func:`first_token_match`), and
counting ROC AUC's ranked pairs (:func:`auc_pair_counts`). On large columns the work is split
between two threads (the kernels release the GIL). The extension is optional: an install
without a C compiler lacks it, and setting the environment variable ``MLEAUDIT_NO_NATIVE`` to a
non-empty value other than ``0`` turns it off. Every function here then returns ``None`` and
its caller takes the NumPy, pandas or Arrow path, which gives the same results (the tests
compare the two).

Each function decides only the cases it can decide fast and exactly; anything else (a repeated
or unknown id, an unusual shape) returns ``None`` too, and the caller's general path finds and
names the problem.
"""

from __future__ import annotations

import os
import threading
from typing import Any, Callable

import numpy as np
import pandas as pd

__all__ = [
    "available",
    "same_texts",
    "text_permutation",
    "inverse_order",
    "take_text",
    "first_token_match",
    "first_token_counts",
    "auc_pair_counts",
]

#: Integer keys spanning at most this many values per key are joined by direct addressing.
_DENSE_SPAN_PER_KEY = 4
#: Digits an id's number may have (the kernel parses two 8-byte words of them).
_MAX_KEY_DIGITS = 16
#: Columns of at least this many rows are worked on in two threads at once.
_PARALLEL_ROWS = 100_000

try:
    from grading.metrics import _kernels
except ImportError:  # not built: the NumPy paths serve
    _kernels = None


def _module() -> Any:
    if os.environ.get("MLEAUDIT_NO_NATIVE", "") not in ("", "0"):
        return None
    return _kernels


def available() -> bool:
    """Whether the compiled kernels are built and switched on.

    Returns
    -------
    bool
        False when the extension was not compiled at install or ``MLEAUDIT_NO_NATIVE`` is set.
    """
    return _module() is not None


def _single_chunk_buffers(array: Any) -> tuple[np.ndarray, np.ndarray]:
    """A ``large_string`` chunked array's int64 offsets and bytes, as one chunk (no nulls)."""
    chunk = array.combine_chunks() if array.num_chunks != 1 else array.chunk(0)
    return _buffers(chunk)


def _buffers(chunk: Any) -> tuple[np.ndarray, np.ndarray]:
    _, offsets, data = chunk.buffers()
    offsets = np.frombuffer(offsets, dtype=np.int64)[chunk.offset : chunk.offset + len(chunk) + 1]
    data = np.frombuffer(data, dtype=np.uint8) if data is not None else np.zeros(1, dtype=np.uint8)
    return offsets, data


def _digit_keys_of_column(kernels: Any, chunks: list[Any], prefix: bytes) -> tuple[np.ndarray, tuple] | None:
    """:func:`_integer_keys` of one column, chunk by chunk into one array; None if a text does not fit."""
    keys = np.empty(sum(len(chunk) for chunk in chunks), dtype=np.int64)
    fewest, most, padded, row = _MAX_KEY_DIGITS + 1, 0, False, 0
    for chunk in chunks:
        if not len(chunk):
            continue
        offsets, data = _buffers(chunk)
        stats = kernels.digit_suffix_keys(offsets, data, prefix, keys[row : row + len(chunk)])
        if stats is None:
            return None
        fewest, most, padded = min(fewest, stats[0]), max(most, stats[1]), padded or stats[2]
        row += len(chunk)
    return keys, (fewest, most, padded)


def _integer_keys(kernels: Any, values: Any, value_set: Any) -> list[np.ndarray] | None:
    """One number per text, equal exactly when the texts are, for ids like ``"id0000042"``.

    Every text of both columns must be one shared prefix followed by 1 to 16 digits, and the
    digits must take one width everywhere or never start with a redundant ``0``. The two
    columns are parsed at once, one in a second thread (the kernel runs without the GIL).
    """
    first = value_set.chunks[next(i for i, c in enumerate(value_set.chunks) if len(c))]
    offsets, data = _buffers(first)
    prefix = bytes(data[offsets[0] : offsets[1]]).rstrip(b"0123456789")
    results = _in_two_threads(
        lambda: _digit_keys_of_column(kernels, values.chunks, prefix),
        lambda: _digit_keys_of_column(kernels, value_set.chunks, prefix),
        large=len(values) >= _PARALLEL_ROWS,
    )
    if any(r is None for r in results):
        return None
    stats = [r[1] for r in results]
    if min(s[0] for s in stats) != max(s[1] for s in stats) and any(s[2] for s in stats):
        return None  # "7" and "007": one number, two texts
    return [r[0] for r in results]


def _in_two_threads(first: Callable[[], Any], second: Callable[[], Any], *, large: bool) -> tuple[Any, Any]:
    """``(first(), second())``, the first in a worker thread while the caller runs the second when large."""
    if not large:
        return first(), second()
    result: list[Any] = []
    errors: list[BaseException] = []

    def run() -> None:
        try:
            result.append(first())
        except BaseException as exc:  # noqa: BLE001 - re-raised in the caller
            errors.append(exc)

    worker = threading.Thread(target=run, name="mleaudit-kernel")
    worker.start()
    try:
        other = second()
    finally:
        worker.join()
    if errors:
        raise errors[0]
    return result[0], other


def same_texts(a: Any, b: Any) -> bool | None:
    """Whether two text columns hold the same texts, row by row (exact bytes).

    Parameters
    ----------
    a, b : pyarrow.ChunkedArray
        ``large_string`` arrays without nulls, chunked in any way.

    Returns
    -------
    bool or None
        ``None`` when the kernels are not available.
    """
    kernels = _module()
    if kernels is None:
        return None
    if len(a) != len(b):
        return False
    stretches = _aligned_stretches(a, b)

    def compare(start: int, stop: int) -> bool:
        """The rows start .. stop - 1 of both columns are the same texts."""
        return all(kernels.same_texts(ao, ad, bo, bd) for ao, ad, bo, bd, _, _ in _pieces(stretches, start, stop))

    half = len(a) // 2
    return all(_in_two_threads(lambda: compare(0, half), lambda: compare(half, len(a)), large=len(a) >= _PARALLEL_ROWS))


def _aligned_stretches(a: Any, b: Any) -> list[tuple[Any, int, Any, int, int, int]]:
    """Two columns of one length cut into runs of rows that lie in one chunk of each.

    Each run is ``(a chunk, its first row in that chunk, b chunk, likewise, first row, rows)``.
    """
    stretches = []
    a_chunks, b_chunks = [c for c in a.chunks if len(c)], [c for c in b.chunks if len(c)]
    ai = bi = a_at = b_at = first = 0
    while ai < len(a_chunks) and bi < len(b_chunks):
        a_chunk, b_chunk = a_chunks[ai], b_chunks[bi]
        rows = min(len(a_chunk) - a_at, len(b_chunk) - b_at)
        stretches.append((a_chunk, a_at, b_chunk, b_at, first, rows))
        a_at, b_at, first = a_at + rows, b_at + rows, first + rows
        if a_at == len(a_chunk):
            ai, a_at = ai + 1, 0
        if b_at == len(b_chunk):
            bi, b_at = bi + 1, 0
    return stretches


def _pieces(stretches: list[tuple[Any, int, Any, int, int, int]], start: int, stop: int):
    """The buffers of the rows ``start .. stop - 1`` of both columns, a run at a time.

    Yields ``(a offsets, a bytes, b offsets, b bytes, low, high)``: each side's offsets cut to
    the rows ``low .. high - 1`` (one more offset than rows), its bytes whole.
    """
    for a_chunk, a_at, b_chunk, b_at, first, rows in stretches:
        low, high = max(start, first), min(stop, first + rows)
        if low < high:
            a_offsets, a_data = _buffers(a_chunk)
            b_offsets, b_data = _buffers(b_chunk)
            a_low, b_low = a_at + low - first, b_at + low - first
            yield a_offsets[a_low : a_low + high - low + 1], a_data, b_offsets[b_low : b_low + high - low + 1], b_data, low, high


def text_permutation(values: Any, value_set: Any) -> np.ndarray | None:
    """How to reorder ``values`` into ``value_set``, from the compiled kernels.

    Parameters
    ----------
    values, value_set : pyarrow.ChunkedArray
        ``large_string`` arrays of one length without nulls (e.g. submission ids, test ids).

    Returns
    -------
    numpy.ndarray of intp or None
        ``order`` with ``values[order[j]] == value_set[j]`` (exact bytes) when ``values`` holds
        each text of ``value_set`` exactly once and the set repeats no text; ``None`` otherwise,
        or when the kernels are not available.

    Notes
    -----
    Ids that are a shared prefix and digits become the numbers they spell and are joined by
    direct addressing when the numbers are dense; other text by a hash join on the bytes
    (64-bit hash, each match confirmed byte for byte).
    """
    kernels = _module()
    if kernels is None or len(values) != len(value_set) or values.null_count or value_set.null_count:
        return None
    n = len(value_set)
    if n:
        keys = _integer_keys(kernels, values, value_set)
        if keys is not None:
            low, high = int(keys[1].min()), int(keys[1].max())
            if high - low <= _DENSE_SPAN_PER_KEY * n + 1024:
                # The order is written over the test ids' keys, each read before it is replaced:
                # one fresh array fewer (8 MB at a million rows, page faults and all).
                order = keys[1]
                joined = kernels.dense_key_join(keys[0], keys[1], low, high, order)
                return order.astype(np.intp, copy=False) if joined else None
    order = np.empty(n, dtype=np.int64)
    (value_offsets, value_data), (set_offsets, set_data) = _single_chunk_buffers(values), _single_chunk_buffers(value_set)
    if not kernels.text_join(value_offsets, value_data, set_offsets, set_data, order):
        return None
    return order.astype(np.intp, copy=False)


def inverse_order(order: np.ndarray) -> np.ndarray | None:
    """The inverse of a reordering, from the compiled kernels.

    Parameters
    ----------
    order : numpy.ndarray of int, shape (n,)
        A reordering of ``0 .. n - 1`` (each row once; only the range is checked).

    Returns
    -------
    numpy.ndarray of intp or None
        ``place`` with ``place[order[j]] == j``; ``None`` when the kernels are not available.

    Raises
    ------
    ValueError
        If an entry of ``order`` is outside ``0 .. n - 1``.
    """
    kernels = _module()
    if kernels is None:
        return None
    place = np.empty(len(order), dtype=np.int64)
    kernels.inverse_order(np.ascontiguousarray(order, dtype=np.int64), place)
    return place.astype(np.intp, copy=False)


def take_text(values: pd.Series, order: np.ndarray) -> pd.Series | None:
    """The cells of an Arrow-backed text column at the given rows, as a new column.

    Parameters
    ----------
    values : pandas.Series
        A text column (``str`` or ``string[pyarrow]`` with Arrow storage).
    order : numpy.ndarray of int, shape (n_rows_out,)
        0-based rows of ``values``, in the order wanted.

    Returns
    -------
    pandas.Series or None
        ``values.iloc[order]`` with a default index and the same dtype and name (missing
        cells stay missing); ``None`` when the kernels are not available or the column is not
        Arrow-backed text, for which the caller takes pandas' own ``take``.
    """
    kernels = _module()
    if kernels is None or not isinstance(values.dtype, pd.StringDtype) or not str(values.dtype.storage).startswith("pyarrow"):
        return None
    import pyarrow as pa

    array = pa.array(values.array)
    array = array.combine_chunks() if isinstance(array, pa.ChunkedArray) else array
    if array.type != pa.large_string():
        array = array.cast(pa.large_string())
    order = np.ascontiguousarray(order, dtype=np.int64)
    offsets, data = _buffers(array)
    new_offsets = np.empty(order.size + 1, dtype=np.int64)
    texts = np.empty(kernels.taken_offsets(offsets, order, new_offsets), dtype=np.uint8)
    half = order.size // 2
    _in_two_threads(
        lambda: kernels.copy_taken_texts(offsets, data, order[:half], new_offsets[: half + 1], texts),
        lambda: kernels.copy_taken_texts(offsets, data, order[half:], new_offsets[half:], texts),
        large=order.size >= _PARALLEL_ROWS,
    )
    validity = None
    if array.null_count:
        validity = pa.array(array.is_valid().to_numpy(zero_copy_only=False)[order]).buffers()[1]
    taken = pa.Array.from_buffers(
        pa.large_string(), order.size, [validity, pa.py_buffer(new_offsets), pa.py_buffer(texts)], null_count=-1
    )
    return pd.Series(pd.array(taken, dtype=values.dtype), name=values.name)


def first_token_match(cells: Any, labels: Any, k: int) -> np.ndarray | None:
    """Per row, the place of the row's label among the first ``k`` space-separated tokens.

    As :func:`grading.metrics.arrowtext.first_token_match` (cells split as ``str.split(" ")``
    splits them), from the compiled kernels.

    Parameters
    ----------
    cells, labels : pyarrow.ChunkedArray
        ``large_string`` arrays of one length without nulls.
    k : int
        Tokens that count per row (>= 1).

    Returns
    -------
    numpy.ndarray of int64 or None
        0-based place of the first token equal to the label, -1 when none of the first ``k``
        is; ``None`` when a label holds a space or the kernels are not available.
    """
    kernels = _module()
    if kernels is None or k < 1 or len(cells) != len(labels) or _holds_a_space(labels):
        return None
    found = np.empty(len(cells), dtype=np.int64)
    stretches = _aligned_stretches(cells, labels)

    def run(start: int, stop: int) -> None:
        for co, cd, lo, ld, low, high in _pieces(stretches, start, stop):
            kernels.first_token_match(co, cd, lo, ld, k, found[low:high])

    half = len(cells) // 2
    _in_two_threads(lambda: run(0, half), lambda: run(half, len(cells)), large=len(cells) >= _PARALLEL_ROWS)
    return found


def first_token_counts(cells: Any, labels: Any, k: int) -> np.ndarray | None:
    """How many rows find their label at each place among the first ``k`` tokens.

    :func:`first_token_match` reduced to its histogram, without an array of one place per row.

    Parameters
    ----------
    cells, labels : pyarrow.ChunkedArray
        ``large_string`` arrays of one length without nulls.
    k : int
        Tokens that count per row (>= 1).

    Returns
    -------
    numpy.ndarray of int64, shape (k + 1,), or None
        Entry 0 counts the rows whose label is none of their first ``k`` tokens, entry
        ``p + 1`` those whose label is first found at place ``p``; ``None`` when a label holds
        a space or the kernels are not available.
    """
    kernels = _module()
    if kernels is None or k < 1 or len(cells) != len(labels) or _holds_a_space(labels):
        return None
    stretches = _aligned_stretches(cells, labels)

    def count(start: int, stop: int) -> np.ndarray:
        counts = np.zeros(k + 1, dtype=np.int64)
        for co, cd, lo, ld, _, _ in _pieces(stretches, start, stop):
            kernels.first_token_counts(co, cd, lo, ld, k, counts)
        return counts

    half = len(cells) // 2
    first, second = _in_two_threads(lambda: count(0, half), lambda: count(half, len(cells)), large=len(cells) >= _PARALLEL_ROWS)
    return first + second


def _holds_a_space(labels: Any) -> bool:
    """Some text of the column holds a space (so it is not one token)."""
    for chunk in labels.chunks:
        if len(chunk):
            offsets, data = _buffers(chunk)
            if (data[offsets[0] : offsets[-1]] == 32).any():
                return True
    return False


def auc_pair_counts(truth: np.ndarray, scores: np.ndarray) -> tuple[int, int, int, int] | None:
    """ROC AUC's pair counts from the compiled kernels.

    Parameters
    ----------
    truth : numpy.ndarray of float64, shape (n_rows,)
        Two-class answers: rows at the column's highest value are positives, those at its
        lowest negatives.
    scores : numpy.ndarray of float64, shape (n_rows,)
        Finite scores (higher means positive).

    Returns
    -------
    (above, ties, n_pos, n_neg) or None
        Positive/negative pairs with the positive scored strictly higher, pairs with equal
        scores, and the class sizes (the Mann-Whitney ``U`` is ``above + ties / 2``); ``None``
        when the truth column does not hold exactly two values (or holds a NaN), for the
        caller to say why, or when the kernels are not available.
    """
    kernels = _module()
    if kernels is None:
        return None
    truth = np.ascontiguousarray(truth, dtype=np.float64)
    scores = np.ascontiguousarray(scores, dtype=np.float64)
    # Room for every row plus one in each (the kernel writes every score to both arrays, with no
    # branch per row); only the places written are ever touched, so memory stays one column.
    positive_room, negative_room = np.empty(truth.size + 1), np.empty(truth.size + 1)
    n_pos = kernels.split_by_label(truth, scores, positive_room, negative_room)
    if n_pos < 0:
        return None
    positives, negatives = positive_room[:n_pos], negative_room[: truth.size - n_pos]
    large = truth.size >= _PARALLEL_ROWS
    _in_two_threads(positives.sort, negatives.sort, large=large)  # NumPy sorts without the GIL
    above, at_or_above = _in_two_threads(
        lambda: kernels.pairs_below(positives, negatives, False),
        lambda: kernels.pairs_below(positives, negatives, True),
        large=large,
    )
    return above, at_or_above - above, positives.size, negatives.size
