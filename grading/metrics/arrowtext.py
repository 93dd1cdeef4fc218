"""Vectorised work on Arrow-backed text columns, with no Python string per cell.

pandas (>= 3 with pyarrow installed) reads text columns into Arrow storage: one UTF-8 byte
buffer and one offset per cell. Turning a million cells into Python ``str`` objects, or hashing
them one object at a time, costs more than reading the file, so the hot paths of grading work
on the buffers instead:

- :func:`arrow_text` hands out the Arrow array behind a column (or ``None``, and callers take
  their general path);
- :func:`text_permutation` finds how a column reorders another holding the same texts (a join
  on the exact text, e.g. submission ids onto test ids). Ids that are decimal numbers, or
  fixed-width ids whose varying bytes are digits (``"id0000042"``) or fit in 8 bytes, become
  integers that are equal exactly when the texts are; those are matched through an array
  indexed by the integer (or a pandas integer hash index when they are sparse). Other text is
  matched with Arrow's hash join, ``pyarrow.compute.index_in``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

__all__ = ["arrow_text", "text_permutation", "first_token_match"]

#: Integer keys spanning at most this many values per key are matched by direct addressing.
_DENSE_SPAN_PER_KEY = 4


def arrow_text(values: pd.Series) -> Any:
    """The Arrow array behind a text column.

    Parameters
    ----------
    values : pandas.Series
        A column; Arrow-backed text (``str`` and ``string[pyarrow]`` with pyarrow storage,
        ``ArrowDtype(string)``) is used, anything else is not.

    Returns
    -------
    pyarrow.ChunkedArray or None
        The cells as ``large_string`` (missing cells null), sharing the column's buffers;
        ``None`` when the column is not Arrow-backed text (object or Python-backed strings,
        numbers), for which callers take their general path.

    Examples
    --------
    >>> import pandas as pd
    >>> arrow_text(pd.Series([1, 2])) is None
    True
    """
    dtype = values.dtype
    if isinstance(dtype, pd.StringDtype):
        if not str(dtype.storage).startswith("pyarrow"):
            return None
    elif isinstance(dtype, pd.ArrowDtype):
        if str(dtype.pyarrow_dtype) not in ("string", "large_string"):
            return None
    else:
        return None
    import pyarrow as pa  # present: the column is Arrow-backed

    array = pa.array(values.array)
    if isinstance(array, pa.Array):
        array = pa.chunked_array([array], type=array.type)
    return array if array.type == pa.large_string() else array.cast(pa.large_string())


def _chunk_buffers(array: Any) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per chunk of a ``large_string`` array without nulls: offsets (int64) and UTF-8 bytes.

    Offsets index the chunk's byte buffer (no copy of either buffer).
    """
    chunks = []
    for chunk in array.chunks:
        _, offsets, data = chunk.buffers()
        offsets = np.frombuffer(offsets, dtype=np.int64)[chunk.offset : chunk.offset + len(chunk) + 1]
        data = np.frombuffer(data, dtype=np.uint8) if data is not None else np.zeros(0, dtype=np.uint8)
        chunks.append((offsets, data))
    return chunks


_ZEROS = np.uint64(0x3030303030303030)  # eight ASCII "0"
#: Rows per block of the digit parse (32,768 words: 256 KiB, within a core's L2 cache).
_BLOCK = 1 << 15
_HIGH_NIBBLES = np.uint64(0xF0F0F0F0F0F0F0F0)
_SIXES = np.uint64(0x0606060606060606)


def _tail_words(offsets: np.ndarray, data: np.ndarray, width: int = 0) -> np.ndarray:
    """The last 8 bytes of each text as a big-endian uint64 (bytes before a short text included).

    ``width`` >= 8 says every text takes that many bytes: the words are then read in place.
    """
    if offsets.size < 2:
        return np.zeros(0, dtype=np.uint64)
    if width >= 8:
        words = np.ndarray(
            shape=(offsets.size - 1,), dtype=">u8", buffer=data, offset=int(offsets[0]) + width - 8, strides=(width,)
        )
        return words.astype(np.uint64)
    used = data[offsets[0] : offsets[-1]]
    # Eight zero bytes in front, so the 8-byte window ending at any text's end is in bounds.
    padded = np.concatenate([np.zeros(8, dtype=np.uint8), used])
    windows = np.ndarray(shape=(padded.size - 7,), dtype=">u8", buffer=padded, strides=(1,))
    return windows[offsets[1:] - offsets[0]].astype(np.uint64)


def _digit_values(words: np.ndarray) -> np.ndarray | None:
    """Words of eight ASCII digits (first digit in the high byte) as the numbers they spell.

    Returns ``None`` when a byte of some word is not a digit. The digits are combined in place,
    pairs, then quads, then halves (the SWAR parse of D. Lemire, "Faster parsing of integers",
    2022): a few array passes instead of one per digit, and no fresh 8 MB array per step (its
    page faults would cost as much as the step).
    """
    value = words - _ZEROS
    # Each byte now holds 0..9 exactly when it was a digit: bytes below "0" borrow and read
    # 0xD0 or more, bytes above "9" read 10 or more; adding 6 moves 10..15 into the high nibble.
    high = value + _SIXES
    high |= value
    high &= _HIGH_NIBBLES
    if high.any():
        return None
    for shift, mask, scale in ((8, 0x00FF00FF00FF00FF, 10), (16, 0x0000FFFF0000FFFF, 100), (32, 0xFFFFFFFF, 10000)):
        np.right_shift(value, np.uint64(shift), out=high)
        high &= np.uint64(mask)
        high *= np.uint64(scale)
        value &= np.uint64(mask)
        value += high
    # At most 99,999,999: the bits read the same as int64.
    return value.view(np.int64)


def _numbers(words: np.ndarray, byte_mask: int = (1 << 64) - 1) -> np.ndarray | None:
    """:func:`_digit_values` of the words with the bytes outside ``byte_mask`` read as "0".

    Worked through in blocks that stay in the CPU cache: the dozen passes of the digit parse
    then cost a fraction of what they cost over a whole million-row column.
    """
    keep, steady = np.uint64(byte_mask), _ZEROS & ~np.uint64(byte_mask)
    numbers = np.empty(words.size, dtype=np.int64)
    for begin in range(0, words.size, _BLOCK):
        block = words[begin : begin + _BLOCK] & keep
        block |= steady
        values = _digit_values(block)
        if values is None:
            return None
        numbers[begin : begin + _BLOCK] = values
    return numbers


def _fixed_width_words(columns: list[list[tuple[np.ndarray, np.ndarray]]], width: int) -> list[np.ndarray] | None:
    """Last-8-byte words of texts that all take ``width`` bytes; ``None`` if the bytes before differ."""
    head = None
    words = []
    for chunks in columns:
        parts = []
        for offsets, data in chunks:
            if offsets.size < 2:
                continue
            if width > 8:
                # Only the last 8 bytes make the key, so the others must be one prefix everywhere.
                block = data[offsets[0] : offsets[-1]].reshape(-1, width)[:, : width - 8]
                head = block[0] if head is None else head
                if not (block == head).all():
                    return None
            parts.append(_tail_words(offsets, data, width))
        column = np.concatenate(parts) if parts else np.zeros(0, dtype=np.uint64)
        if width < 8:
            column &= np.uint64((1 << (8 * width)) - 1)
        words.append(column)
    return words


def _decimal_words(chunks: list[tuple[np.ndarray, np.ndarray]]) -> np.ndarray | None:
    """Decimal numbers of 1 to 8 digits without leading zeros, as 8 digits ("42" as "00000042")."""
    parts = []
    for offsets, data in chunks:
        if offsets.size < 2:
            continue
        lengths = np.diff(offsets)
        # "007" and "7" are different ids but the same number: leading zeros are refused.
        if lengths.min() < 1 or lengths.max() > 8 or ((data[offsets[:-1]] == 48) & (lengths > 1)).any():
            return None
        bits = (8 * lengths).astype(np.uint64)
        keep = np.where(lengths >= 8, np.uint64(0xFFFFFFFFFFFFFFFF), (np.uint64(1) << (bits & np.uint64(63))) - np.uint64(1))
        words = _tail_words(offsets, data)
        parts.append((words & keep) | (_ZEROS & ~keep))
    return np.concatenate(parts) if parts else np.zeros(0, dtype=np.uint64)


def _integer_keys(columns: list[Any]) -> list[np.ndarray] | None:
    """One integer per text, equal exactly when the texts are equal, across all the columns.

    Handles texts of one width whose bytes before the last eight are the same everywhere (a
    prefix like ``"id"``), and decimal numbers of up to 8 digits without leading zeros. The key
    is the last 8 bytes, or, where the bytes that vary are all digits, the number they spell
    (so consecutive ids make a dense range). ``None`` for other text.
    """
    buffers = [_chunk_buffers(column) for column in columns]
    filled = [o for chunks in buffers for o, _ in chunks if o.size > 1]
    if not filled:
        return None
    width = int(filled[0][1] - filled[0][0])
    # One width everywhere: each chunk's bytes are exactly width times its rows, evenly cut.
    if width > 0 and all(o[-1] - o[0] == width * (o.size - 1) and (np.diff(o) == width).all() for o in filled):
        words = _fixed_width_words(buffers, width)
        if words is None:
            return None
        reference = next(w[0] for w in words if w.size)
        varying = 0
        for w in words:
            varying |= int(np.bitwise_or.reduce(w ^ reference)) if w.size else 0
        # Bytes that never vary read as "0", so a steady prefix does not spoil the digits.
        byte_mask = sum(0xFF << shift for shift in range(0, 64, 8) if (varying >> shift) & 0xFF)
        numbers = [_numbers(w, byte_mask) for w in words]
        return words if any(v is None for v in numbers) else numbers  # type: ignore[return-value]
    decimal = [_decimal_words(chunks) for chunks in buffers]
    numbers = [None if d is None else _numbers(d) for d in decimal]
    return None if any(v is None for v in numbers) else numbers  # type: ignore[return-value]


def _key_permutation(keys: np.ndarray, key_set: np.ndarray) -> np.ndarray | None:
    """``order`` with ``keys[order] == key_set`` when ``keys`` reorders ``key_set``; else ``None``."""
    n_keys = key_set.size
    if keys.size != n_keys:
        return None
    if not n_keys:
        return np.zeros(0, dtype=np.intp)
    low, high = key_set.min(), key_set.max()
    if keys.min() < low or keys.max() > high:
        return None
    span = int(high - low) + 1
    if span <= _DENSE_SPAN_PER_KEY * n_keys + 1024:
        # Direct addressing: the row of each key, at the key's place in a table.
        table = np.full(span, -1, dtype=np.intp)
        table[(keys - low).astype(np.intp, copy=False)] = np.arange(n_keys, dtype=np.intp)
        order = table[(key_set - low).astype(np.intp, copy=False)]
    else:
        index = pd.Index(keys)
        if not index.is_unique:
            return None
        order = index.get_indexer(key_set).astype(np.intp, copy=False)
    if order.min() < 0:
        return None
    # As many rows as keys, each used once (n counts summing to n, none above 1): neither list
    # repeats a key (a repeated row key keeps one row in the table; a repeated key in key_set
    # takes the same row twice).
    if np.bincount(order, minlength=n_keys).max() != 1:
        return None
    return order


def text_permutation(values: Any, value_set: Any) -> np.ndarray | None:
    """How to reorder ``values`` into ``value_set``, when it holds the same texts once each.

    Parameters
    ----------
    values, value_set : pyarrow.ChunkedArray
        ``large_string`` arrays (from :func:`arrow_text`), e.g. a submission's ids and the
        test ids.

    Returns
    -------
    numpy.ndarray of intp or None
        ``order`` with ``values[order[j]] == value_set[j]`` for every ``j`` (exact text), when
        ``values`` is a reordering of ``value_set`` whose texts are distinct; ``None`` otherwise
        (a missing, unknown, repeated or null text, another length).

    Notes
    -----
    Integer keys (see the module docstring) decide when the texts make them; other text is
    matched with ``pyarrow.compute.index_in``, a hash join on the bytes.

    Examples
    --------
    >>> import pyarrow as pa
    >>> submission = pa.chunked_array([["id07", "id03", "id05"]], type=pa.large_string())
    >>> test = pa.chunked_array([["id03", "id05", "id07"]], type=pa.large_string())
    >>> text_permutation(submission, test).tolist()
    [1, 2, 0]
    >>> text_permutation(submission[:2], test[:2]) is None
    True
    """
    import pyarrow.compute as pc

    if len(values) != len(value_set) or values.null_count or value_set.null_count:
        return None
    keys = _integer_keys([values, value_set])
    if keys is not None:
        return _key_permutation(keys[0], keys[1])
    positions = pc.index_in(values, value_set=value_set)
    if positions.null_count:
        return None
    positions = positions.to_numpy().astype(np.intp, copy=False)
    if not (np.bincount(positions, minlength=len(value_set)) == 1).all():
        return None
    order = np.empty(len(value_set), dtype=np.intp)
    order[positions] = np.arange(len(values), dtype=np.intp)
    return order


#: ``_TAIL_MASKS[i]`` keeps the last ``i`` bytes of a little-endian word read from memory.
_TAIL_MASKS = np.array([0] + [((1 << 64) - 1) ^ ((1 << (8 * (8 - i))) - 1) for i in range(1, 9)], dtype=np.uint64)


def _words_ending(data: np.ndarray, ends: np.ndarray, keep: np.ndarray) -> np.ndarray:
    """The ``keep`` bytes of ``data`` before each position in ``ends``, in the high end of a uint64.

    Words are read from memory as little-endian uint64, so the bytes just before a position
    are the word's high bytes; the others are cleared. Equal byte strings of one length give
    equal words.
    """
    if data.size < 8:
        data = np.concatenate([data, np.zeros(8 - data.size, dtype=np.uint8)])
    windows = np.ndarray(shape=(data.size - 7,), dtype="<u8", buffer=data, strides=(1,))
    starts = ends - 8
    words = windows[np.maximum(starts, 0)]
    if starts.size and starts.min() < 0:
        # Fewer than 8 bytes before the position: move the ones there up to the high end.
        short = np.flatnonzero(starts < 0)
        words[short] <<= (8 * (8 - ends[short])).astype(np.uint64)
    words &= _TAIL_MASKS[keep]
    return words


def _text_words(offsets: np.ndarray, data: np.ndarray, n_words: int) -> list[np.ndarray]:
    """Each cell's bytes as words: word ``w`` holds the (up to) 8 bytes ending ``8 w`` before the end."""
    lengths = np.diff(offsets)
    return [_words_ending(data, offsets[1:] - 8 * w, np.clip(lengths - 8 * w, 0, 8)) for w in range(n_words)]


def _match_block(
    offsets: np.ndarray, data: np.ndarray, lengths: np.ndarray, words: list[np.ndarray], k: int
) -> np.ndarray:
    """:func:`first_token_match` on a run of cells (``offsets``/``data``; labels as lengths and words)."""
    n_rows = offsets.size - 1
    found = np.full(n_rows, -1, dtype=np.int64)
    spaces = np.flatnonzero(data[offsets[0] : offsets[-1]] == 32) + offsets[0]
    # A row's spaces are spaces[below[r]:below[r + 1]]; its t-th token ends at the t-th of them,
    # or at the cell's end after the last.
    below = np.searchsorted(spaces, offsets)
    space_index, last_space = below[:-1].copy(), below[1:]
    last = max(spaces.size - 1, 0)
    spaces = spaces if spaces.size else np.zeros(1, dtype=np.int64)
    start = offsets[:-1]
    alive = np.ones(n_rows, dtype=bool)  # the row has a t-th token and no match yet
    for t in range(k):
        more = space_index < last_space
        end = np.where(more, spaces[np.minimum(space_index, last)], offsets[1:])
        candidates = np.flatnonzero(alive & (end - start == lengths))
        if candidates.size:
            same = np.ones(candidates.size, dtype=bool)
            for w, label_word in enumerate(words):
                keep = np.clip(lengths[candidates] - 8 * w, 0, 8)
                same &= _words_ending(data, end[candidates] - 8 * w, keep) == label_word[candidates]
            hits = candidates[same]
            found[hits] = t
            alive[hits] = False
        alive &= more
        if not alive.any():
            break
        start = end + 1
        space_index += 1
    return found


def first_token_match(cells: Any, labels: Any, k: int) -> np.ndarray | None:
    """Per row, the place of the row's label among the first ``k`` tokens of its cell.

    Cells are split on single spaces, as ``str.split(" ")`` splits them (``"a  b"`` has an
    empty token between ``a`` and ``b``; an empty cell is one empty token).

    Parameters
    ----------
    cells, labels : pyarrow.ChunkedArray
        ``large_string`` arrays of one length without nulls (from :func:`arrow_text`, nulls
        filled with ``""``): the predicted label lists and the one true label per row.
    k : int
        Tokens that count per row (>= 1).

    Returns
    -------
    numpy.ndarray of int64 or None
        0-based place of the first token equal to the label, -1 when none of the first ``k``
        is; ``None`` when a label holds a space (it is not one token).

    Notes
    -----
    Token ends are the cell's spaces and its end. For the ``t``-th token of every row at once,
    its length is compared with the label's, and where they agree its bytes are compared with
    the label's as 8-byte words read from the column's byte buffer, so no token becomes a
    string of its own.

    Examples
    --------
    >>> import pyarrow as pa
    >>> cells = pa.chunked_array([["w1 w12 w2", "w3", "", "w1  w2"]], type=pa.large_string())
    >>> labels = pa.chunked_array([["w12", "w1", "", ""]], type=pa.large_string())
    >>> first_token_match(cells, labels, 5).tolist()
    [1, -1, 0, 1]
    """
    import pyarrow as pa

    label_array = labels.combine_chunks()
    ((label_offsets, label_data),) = _chunk_buffers(pa.chunked_array([label_array], type=label_array.type))
    if (label_data[label_offsets[0] : label_offsets[-1]] == 32).any():
        return None
    label_lengths = np.diff(label_offsets)
    n_words = max(1, -(-int(label_lengths.max(initial=0)) // 8))
    label_words = _text_words(label_offsets, label_data, n_words)
    found = []
    first_row = 0
    for offsets, data in _chunk_buffers(cells):
        # Blocks of rows small enough that the per-token passes run in the CPU cache.
        for begin in range(0, offsets.size - 1, _BLOCK):
            block = offsets[begin : begin + _BLOCK + 1]
            rows = slice(first_row + begin, first_row + begin + block.size - 1)
            found.append(_match_block(block, data, label_lengths[rows], [w[rows] for w in label_words], k))
        first_row += offsets.size - 1
    return np.concatenate(found) if found else np.zeros(0, dtype=np.int64)
