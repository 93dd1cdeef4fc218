"""Splitting text cells into tokens, vectorised for large submissions.

Label lists (``"whale_1 whale_7"``), tag sets and word sets are scored on (row, token) pairs:
every token gets an integer code shared by answers and predictions, so membership tests run as
integer set operations in numpy instead of Python sets per row.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from mleaudit.grading.metrics.arrowtext import arrow_text

__all__ = ["split_tokens", "token_codes", "TokenCodes", "column_token_codes", "distinct_keys"]


def split_tokens(
    values: pd.Series, *, sep: str | None = None, lower: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """Split every cell and list its tokens with their row.

    Parameters
    ----------
    values : pandas.Series
        Text cells; missing cells are empty.
    sep : str, optional
        Separator as in :meth:`str.split`: ``None`` splits on runs of whitespace, ``" "`` on
        every single space (so ``"a  b"`` has an empty token between ``a`` and ``b``).
    lower : bool
        Lower-case the text first.

    Returns
    -------
    rows : numpy.ndarray of intp
        0-based position of each token's row in ``values``, in row then token order.
    tokens : numpy.ndarray of object
        The tokens (str).

    Examples
    --------
    >>> import pandas as pd
    >>> rows, tokens = split_tokens(pd.Series(["a b", None, "c"]))
    >>> rows.tolist(), tokens.tolist()
    ([0, 0, 2], ['a', 'b', 'c'])
    """
    text = values.fillna("").astype(str)
    if lower:
        text = text.str.lower()
    lists = text.str.split(sep)
    lengths = lists.str.len().to_numpy(dtype=np.intp)
    rows = np.repeat(np.arange(len(values), dtype=np.intp), lengths)
    if rows.size == 0:
        return rows, np.empty(0, dtype=object)
    tokens = np.fromiter((t for cell in lists.to_numpy() for t in cell), dtype=object, count=int(lengths.sum()))
    return rows, tokens


def token_codes(
    rows_a: np.ndarray, tokens_a: np.ndarray, rows_b: np.ndarray, tokens_b: np.ndarray
) -> tuple[np.ndarray, np.ndarray, int]:
    """Encode (row, token) pairs of two token lists as integers with one shared vocabulary.

    Parameters
    ----------
    rows_a, tokens_a, rows_b, tokens_b : numpy.ndarray
        Output of :func:`split_tokens` for the answers and the predictions.

    Returns
    -------
    keys_a, keys_b : numpy.ndarray of int64
        ``row * n_codes + code`` per pair; equal keys mean the same token in the same row.
    n_codes : int
        Size of the shared vocabulary (``key % n_codes`` is the token's code).
    """
    codes, uniques = pd.factorize(np.concatenate([tokens_a, tokens_b]))
    n_codes = max(len(uniques), 1)
    codes = codes.astype(np.int64)
    keys_a = rows_a.astype(np.int64) * n_codes + codes[: len(tokens_a)]
    keys_b = rows_b.astype(np.int64) * n_codes + codes[len(tokens_a) :]
    return keys_a, keys_b, n_codes


def distinct_keys(keys: np.ndarray) -> np.ndarray:
    """The distinct values of an integer array, in increasing order (``numpy.unique``).

    Parameters
    ----------
    keys : numpy.ndarray of int, shape (n,)

    Returns
    -------
    numpy.ndarray, shape (n_distinct,)
        Sorted, each value once.

    Notes
    -----
    Sorting and dropping repeats costs a few milliseconds a million keys; ``numpy.unique``
    (NumPy >= 2.3) hashes integers first, and keys of the form ``row * n_codes + code``
    collide in its table so often that it takes seconds.

    Examples
    --------
    >>> distinct_keys(np.array([5, 1, 5, 3])).tolist()
    [1, 3, 5]
    """
    ordered = np.sort(keys)
    if ordered.size < 2:
        return ordered
    keep = np.empty(ordered.size, dtype=bool)
    keep[0] = True
    np.not_equal(ordered[1:], ordered[:-1], out=keep[1:])
    return ordered[keep]


@dataclass(frozen=True, slots=True, kw_only=True)
class TokenCodes:
    """The tokens of two aligned text columns as integers with one shared vocabulary.

    Attributes
    ----------
    rows_a, rows_b : numpy.ndarray of intp
        0-based row of each token of the first and the second column, in row then token order.
    codes_a, codes_b : numpy.ndarray of int64
        Each token's code: equal codes are equal tokens, in either column.
    n_codes : int
        Size of the vocabulary (codes are ``0 .. n_codes - 1``), at least 1.
    """

    rows_a: np.ndarray
    codes_a: np.ndarray
    rows_b: np.ndarray
    codes_b: np.ndarray
    n_codes: int

    def keys_a(self) -> np.ndarray:
        """``row * n_codes + code`` per token of the first column (int64): equal keys, same token in the same row."""
        return self.rows_a.astype(np.int64) * self.n_codes + self.codes_a

    def keys_b(self) -> np.ndarray:
        """As :meth:`keys_a`, for the second column."""
        return self.rows_b.astype(np.int64) * self.n_codes + self.codes_b


#: What ``str.split()`` splits on: the characters whose ``str.isspace()`` is true (tested
#: against every code point in tests/grading/test_vectorised_scoring.py).
PYTHON_WHITESPACE = (
    "\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006"
    "\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
)


def column_token_codes(
    a: pd.Series,
    b: pd.Series,
    *,
    sep: str | None = None,
    lower: bool = False,
    max_tokens_b: int | None = None,
) -> TokenCodes:
    """Split two text columns into tokens and code the tokens with one vocabulary.

    The tokens of a cell are those of ``cell.lower().split(sep)`` in Python (``.lower()`` only
    with ``lower``; missing cells are empty, other cells are read with ``str``): ``sep=" "``
    splits on every single space (an empty cell is one empty token), ``sep=None`` on runs of
    whitespace (an empty cell has no token).

    Parameters
    ----------
    a, b : pandas.Series
        Text columns (e.g. the answers' and the submission's target column).
    sep : {None, " "}
        Separator, as in :meth:`str.split`.
    lower : bool
        Lower-case the tokens (Python's full case mapping, final sigma included).
    max_tokens_b : int, optional
        Keep only the first this many tokens of each cell of ``b`` (``>= 1``).

    Returns
    -------
    TokenCodes
        Rows and codes of both columns' tokens.

    Raises
    ------
    ValueError
        For another ``sep``, or ``max_tokens_b < 1``.

    Notes
    -----
    Cells are split by Arrow (``pyarrow.compute.split_pattern``) on the columns' UTF-8 buffers
    and the tokens coded by Arrow's hash (``dictionary_encode``), with no Python string per
    token. For ``sep=None`` every character ``str.isspace`` accepts is first overwritten, byte
    for byte, with spaces; the empty tokens the runs of spaces then make are dropped. Lower
    casing is applied to the vocabulary, once per distinct token: Arrow's ASCII mapping for
    ASCII tokens, ``str.lower`` for the others (it differs from Arrow's ``utf8_lower``, e.g. for
    "İ" and a final "Σ"); a token is lower-cased as it would be inside its cell, since the
    context ``str.lower`` looks at never reaches past whitespace. Columns Arrow cannot hold (a
    Python string with a lone surrogate) are split in Python, cell by cell.

    Examples
    --------
    >>> coded = column_token_codes(pd.Series(["a b", "B"]), pd.Series(["b  a", None]), sep=" ")
    >>> coded.rows_a.tolist(), coded.codes_a.tolist(), coded.rows_b.tolist(), coded.codes_b.tolist()
    ([0, 0, 1], [0, 1, 2], [0, 0, 0, 1], [1, 3, 0, 3])
    >>> column_token_codes(pd.Series(["A b"]), pd.Series(["a\tB "]), lower=True).codes_b.tolist()
    [0, 1]
    """
    if sep not in (None, " "):
        raise ValueError(f"sep must be None or ' ', not {sep!r}")
    if max_tokens_b is not None and max_tokens_b < 1:
        raise ValueError(f"max_tokens_b must be at least 1, not {max_tokens_b}")
    cells = [_arrow_cells(a), _arrow_cells(b)]
    if cells[0] is None or cells[1] is None:
        return _python_token_codes(a, b, sep=sep, lower=lower, max_tokens_b=max_tokens_b)
    import pyarrow as pa
    import pyarrow.compute as pc

    split = [_arrow_tokens(cells[0], sep, None), _arrow_tokens(cells[1], sep, max_tokens_b)]
    encoded = pc.dictionary_encode(pa.concat_arrays([split[0][1], split[1][1]]))
    codes = encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    dictionary = encoded.dictionary
    n_a = split[0][0].size
    rows_a, codes_a, rows_b, codes_b = split[0][0], codes[:n_a], split[1][0], codes[n_a:]
    if sep is None:
        # Runs of spaces, and the ends of a cell, make empty tokens: str.split() has none.
        empty = pc.index(dictionary, "").as_py()
        if empty >= 0:
            keep_a, keep_b = codes_a != empty, codes_b != empty
            rows_a, codes_a, rows_b, codes_b = rows_a[keep_a], codes_a[keep_a], rows_b[keep_b], codes_b[keep_b]
        if max_tokens_b is not None and rows_b.size:
            keep_b = np.arange(rows_b.size) - np.searchsorted(rows_b, rows_b) < max_tokens_b
            rows_b, codes_b = rows_b[keep_b], codes_b[keep_b]
    if lower:
        dictionary, relabel = _lower_vocabulary(dictionary)
        codes_a, codes_b = relabel[codes_a], relabel[codes_b]
    return TokenCodes(rows_a=rows_a, codes_a=codes_a, rows_b=rows_b, codes_b=codes_b, n_codes=max(len(dictionary), 1))


def _cell_texts(values: pd.Series) -> list[str]:
    """The cells as Python strings: missing cells ``""``, others read with ``str``."""
    cells = values.to_numpy(dtype=object)
    missing = pd.isna(cells)
    return ["" if gap else cell if type(cell) is str else str(cell) for cell, gap in zip(cells.tolist(), missing.tolist())]


def _arrow_cells(values: pd.Series) -> Any:
    """The cells as one ``large_string`` Arrow array without nulls (missing cells ``""``); None if Arrow cannot hold them."""
    import pyarrow as pa
    import pyarrow.compute as pc

    array = arrow_text(values)
    if array is None:
        try:
            return pa.array(_cell_texts(values), type=pa.large_string())
        except (pa.ArrowException, UnicodeError):
            return None
    array = array.combine_chunks() if array.num_chunks != 1 else array.chunk(0)
    return pc.fill_null(array, "") if array.null_count else array


def _buffers(array: Any) -> tuple[np.ndarray, np.ndarray]:
    """A ``large_string`` array's offsets (int64, one more than its cells) and UTF-8 bytes, without copies."""
    _, offsets, data = array.buffers()
    offsets = np.frombuffer(offsets, dtype=np.int64)[array.offset : array.offset + len(array) + 1]
    data = np.frombuffer(data, dtype=np.uint8) if data is not None else np.zeros(0, dtype=np.uint8)
    return offsets, data


def _whitespace_tables() -> tuple[np.ndarray, dict[int, list[bytes]]]:
    single = np.zeros(256, dtype=bool)
    longer: dict[int, list[bytes]] = {}
    for char in PYTHON_WHITESPACE:
        encoded = char.encode("utf-8")
        if len(encoded) == 1:
            single[encoded[0]] = True
        else:
            longer.setdefault(encoded[0], []).append(encoded)
    return single, longer


_SINGLE_BYTE_SPACE, _MULTI_BYTE_SPACES = _whitespace_tables()


def _spaced(array: Any) -> Any:
    """The array with every character ``str.isspace`` accepts overwritten by as many spaces as it has bytes.

    Only control bytes and the lead bytes of multi-byte whitespace can need a change, so those
    are found first; text whose only whitespace is the space comes back as it is, uncopied.
    """
    import pyarrow as pa

    offsets, data = _buffers(array)
    used = data[offsets[0] : offsets[-1]]
    places = []
    control = np.flatnonzero(used < 0x20)
    if control.size:
        places.append(control[_SINGLE_BYTE_SPACE[used[control]]])
    leads = np.flatnonzero(used >= 0xC2)  # a lead byte starts a character in valid UTF-8
    if leads.size:
        leads = leads[np.isin(used[leads], list(_MULTI_BYTE_SPACES))]
        for lead, encodings in _MULTI_BYTE_SPACES.items():
            starts = leads[used[leads] == lead]
            for encoded in encodings:
                at = starts[starts + len(encoded) <= used.size]
                for i in range(1, len(encoded)):
                    at = at[used[at + i] == encoded[i]]
                places.extend(at + i for i in range(len(encoded)))
    places = [p for p in places if p.size]
    if not places:
        return array
    used = used.copy()
    used[np.concatenate(places)] = 0x20
    return pa.LargeStringArray.from_buffers(len(array), pa.py_buffer(offsets - offsets[0]), pa.py_buffer(used))


def _arrow_tokens(cells: Any, sep: str | None, max_tokens: int | None) -> tuple[np.ndarray, Any]:
    """Rows (intp) and tokens (``large_string``) of a column's cells, in row then token order.

    With ``sep=None`` the cells are split on every whitespace character, so the tokens include
    empty ones (the caller drops them) and ``max_tokens`` is left to the caller.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    n_rows = len(cells)
    if sep == " ":
        # At most max_tokens splits: the last piece, the rest of the cell, is dropped below.
        lists = pc.split_pattern(cells, " ", max_splits=max_tokens)
    else:
        lists = pc.split_pattern(_spaced(cells), " ")
    list_offsets = lists.offsets.to_numpy(zero_copy_only=False).astype(np.int64, copy=False)
    list_offsets = list_offsets - list_offsets[0]
    lengths = np.diff(list_offsets)
    rows = np.repeat(np.arange(n_rows, dtype=np.intp), lengths)
    tokens = lists.flatten()
    if sep == " " and max_tokens is not None and lengths.size and lengths.max() > max_tokens:
        keep = np.arange(rows.size) - np.repeat(list_offsets[:-1], lengths) < max_tokens
        tokens, rows = tokens.filter(pa.array(keep)), rows[keep]
    return rows, tokens


def _lower_vocabulary(dictionary: Any) -> tuple[Any, np.ndarray]:
    """The vocabulary lower-cased as ``str.lower`` does, and each old code's new code."""
    import pyarrow as pa
    import pyarrow.compute as pc

    lowered = pc.ascii_lower(dictionary)  # str.lower's mapping on ASCII text
    offsets, data = _buffers(dictionary)
    high = np.concatenate([[0], np.cumsum(data[offsets[0] : offsets[-1]] >= 0x80)])
    other = np.flatnonzero(high[offsets[1:] - offsets[0]] > high[offsets[:-1] - offsets[0]])
    if other.size:
        texts = [text.lower() for text in dictionary.take(pa.array(other)).to_pylist()]
        mask = np.zeros(len(dictionary), dtype=bool)
        mask[other] = True
        lowered = pc.replace_with_mask(lowered, pa.array(mask), pa.array(texts, type=lowered.type))
    encoded = pc.dictionary_encode(lowered)
    return encoded.dictionary, encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64)


def _python_token_codes(
    a: pd.Series, b: pd.Series, *, sep: str | None, lower: bool, max_tokens_b: int | None
) -> TokenCodes:
    """:func:`column_token_codes` in Python: ``str.lower`` and ``str.split`` per cell."""
    columns = []
    for values, limit in ((a, None), (b, max_tokens_b)):
        lists = [(cell.lower() if lower else cell).split(sep)[:limit] for cell in _cell_texts(values)]
        lengths = np.fromiter(map(len, lists), dtype=np.intp, count=len(lists))
        tokens = np.fromiter((token for cell in lists for token in cell), dtype=object, count=int(lengths.sum()))
        columns.append((np.repeat(np.arange(len(lists), dtype=np.intp), lengths), tokens))
    codes, uniques = pd.factorize(np.concatenate([columns[0][1], columns[1][1]]))
    codes = codes.astype(np.int64)
    n_a = columns[0][1].size
    return TokenCodes(
        rows_a=columns[0][0], codes_a=codes[:n_a], rows_b=columns[1][0], codes_b=codes[n_a:], n_codes=max(len(uniques), 1)
    )
