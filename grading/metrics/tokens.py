"""Splitting text cells into tokens, vectorised for large submissions.

Label lists (``"whale_1 whale_7"``), tag sets and word sets are scored on (row, token) pairs:
every token gets an integer code shared by answers and predictions, so membership tests run as
integer set operations in numpy instead of Python sets per row.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

__all__ = ["split_tokens", "token_codes"]


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
