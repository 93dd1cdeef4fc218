"""Ranking metrics on ordered label lists: MAP@K and Kendall's tau over orderings.

Cells hold space-separated labels, best first. MAP@K is computed on integer-coded (row, label)
pairs in NumPy (:func:`mleaudit.grading.metrics.tokens.column_token_codes` splits and codes the cells
with Arrow, no Python string per label), so a million-row submission scores in about the time
pandas needs to read it. When every answer is a single label (the usual case: one whale, one
hotel) only the place of that label among the predictions matters (:func:`first_token_places`).
"""

from __future__ import annotations

import math
from bisect import bisect
from typing import Sequence

import numpy as np
import pandas as pd

from mleaudit.grading.metrics.base import in_answer_order, invalid_cell, undefined_metric
from mleaudit.grading.metrics.tokens import TokenCodes, column_token_codes, distinct_keys

__all__ = ["map_at_k_score", "kendall_tau_score", "first_token_places"]


def _positions(rows: np.ndarray) -> np.ndarray:
    """Position of each token within its row (rows sorted ascending)."""
    return np.arange(rows.size) - np.searchsorted(rows, rows, side="left")


def map_at_k_score(
    answers: pd.DataFrame,
    submission: pd.DataFrame,
    *,
    id_columns: Sequence[str],
    target_columns: Sequence[str],
    k: int = 5,
) -> float:
    """Mean average precision at K of ranked label lists.

    Per row, with the true labels as a set ``A`` and the first ``k`` predicted labels
    ``p_1 .. p_k``: ``AP@k = sum_i [p_i in A and p_i not in p_1..p_{i-1}] * precision@i / min(|A|, k)``;
    the score is the mean over rows. Cells are split on single spaces, as MLE-bench's graders
    do (an empty cell is one empty label, which matches only an empty answer).

    Parameters
    ----------
    answers, submission : pandas.DataFrame
        Aligned frames whose target column holds space-separated labels.
    k : int
        Number of predicted labels that count per row.

    Returns
    -------
    float
        In [0, 1], higher is better.

    Notes
    -----
    A row's hits are its first ``k`` predicted labels found among its true labels, each label
    counted at its first place only: the (row, label) codes of the predictions are looked up in
    the sorted distinct codes of the answers. When every answer is one label the mean is taken
    from the number of rows at each place of that label (:func:`_single_label_mean_ap`).

    References
    ----------
    B. Hamner, "Metrics" (average_precision.py); Kaggle evaluation pages of Humpback Whale
    Identification, H&M Personalized Fashion Recommendations and Hotel-ID 2021.

    Examples
    --------
    >>> import pandas as pd
    >>> answers = pd.DataFrame({"Image": ["a", "b"], "Id": ["w1", "w2"]})
    >>> sub = pd.DataFrame({"Image": ["a", "b"], "Id": ["w1 w3", "w3 w2 w2"]})
    >>> map_at_k_score(answers, sub, id_columns=["Image"], target_columns=["Id"])
    0.75
    """
    column = target_columns[0]
    k = int(k)
    n_rows = len(answers)
    if k < 1:
        return 0.0
    coded = column_token_codes(answers[column], submission[column], sep=" ", max_tokens_b=k)
    places = _label_places(coded, n_rows, k)
    if places is not None:
        return _mean_ap_of_places(places, k)
    true_keys = distinct_keys(coded.keys_a())
    pred_keys, pred_rows = coded.keys_b(), coded.rows_b
    # Distinct true labels per row.
    n_true = np.bincount((true_keys // coded.n_codes).astype(np.intp), minlength=n_rows)
    hits = _first_hits(pred_keys, true_keys)
    hit_rows = pred_rows[hits]
    # The hits are in row then place order: a hit's rank among its row's hits, and its place.
    hits_so_far = _positions(hit_rows) + 1
    places_of_hits = hits - np.searchsorted(pred_rows, hit_rows, side="left")
    precision = hits_so_far / (places_of_hits + 1.0)
    per_row = np.bincount(hit_rows, weights=precision, minlength=n_rows)
    denominator = np.minimum(n_true, k)
    ap = np.divide(per_row, denominator, out=np.zeros(n_rows), where=denominator > 0)
    return float(np.mean(in_answer_order(ap, answers))) if n_rows else 0.0


def _first_hits(pred_keys: np.ndarray, true_keys: np.ndarray) -> np.ndarray:
    """Indices, increasing, of the predicted keys found in ``true_keys`` (sorted, distinct) and not seen before.

    A key met again (a label repeated in its row) counts at its first place only.
    """
    if not true_keys.size or not pred_keys.size:
        return np.zeros(0, dtype=np.intp)
    at = np.minimum(np.searchsorted(true_keys, pred_keys), true_keys.size - 1)
    found = np.flatnonzero(true_keys[at] == pred_keys)
    if found.size < 2:
        return found
    keys = pred_keys[found]
    order = np.argsort(keys, kind="stable")  # a key's places in increasing order
    ordered = keys[order]
    first = np.empty(found.size, dtype=bool)
    first[order[0]] = True
    first[order[1:]] = ordered[1:] != ordered[:-1]
    return found[first]


def _label_places(coded: TokenCodes, n_rows: int, k: int) -> np.ndarray | None:
    """Per row, the first place of its one true label among its first ``k`` predicted tokens (-1 if none).

    ``None`` when some answer cell is not exactly one token.
    """
    if coded.rows_a.size != n_rows or (n_rows and not (np.diff(coded.rows_a) == 1).all()):
        return None
    places = np.full(n_rows, -1, dtype=np.int64)
    rows = coded.rows_b
    hit = np.flatnonzero(coded.codes_b == coded.codes_a[rows]) if rows.size else np.zeros(0, dtype=np.intp)
    if hit.size:
        hit_rows = rows[hit]
        first = np.empty(hit.size, dtype=bool)
        first[0] = True
        np.not_equal(hit_rows[1:], hit_rows[:-1], out=first[1:])
        first_rows = hit_rows[first]
        places[first_rows] = hit[first] - np.searchsorted(rows, first_rows, side="left")
    places[places >= k] = -1
    return places


def _mean_ap_of_places(places: np.ndarray, k: int) -> float:
    """Mean AP@k from each row's place of its one true label (-1: not among the first ``k``).

    A row's AP is ``1 / (place + 1)``. The mean is taken from the number of rows at each
    place, ``sum_r count_r / (r + 1) / n`` (the terms added with one rounding,
    :func:`math.fsum`), so it does not depend on the order of the rows, to the last bit.
    """
    per_place = np.bincount(places + 1, minlength=k + 1)
    n_rows = int(per_place.sum())
    if not n_rows:
        return 0.0
    return math.fsum(int(count) / (place + 1.0) for place, count in enumerate(per_place[1:])) / n_rows


def _single_label_mean_ap(truth: pd.Series, pred: pd.Series, k: int) -> float | None:
    """Mean AP@k when every answer is one label; None when an answer holds several (or ``k < 1``)."""
    if k < 1:
        return None
    places = _label_places(column_token_codes(truth, pred, sep=" ", max_tokens_b=k), len(truth), k)
    return None if places is None else _mean_ap_of_places(places, k)


def first_token_places(cells: pd.Series, labels: pd.Series, k: int) -> np.ndarray | None:
    """Per row, the place of the row's label among the first ``k`` tokens of its cell.

    Cells are split on single spaces, as ``str.split(" ")`` splits them (``"a  b"`` has an
    empty token between ``a`` and ``b``; an empty or missing cell is one empty token).

    Parameters
    ----------
    cells : pandas.Series
        Predicted label lists, shape ``(n_rows,)``.
    labels : pandas.Series
        The one true label per row, shape ``(n_rows,)``, aligned with ``cells``.
    k : int
        Tokens that count per row (>= 1).

    Returns
    -------
    numpy.ndarray of int64 or None
        Shape ``(n_rows,)``: 0-based place of the first token equal to the label, -1 when none
        of the first ``k`` is; ``None`` when a label is not one token (it holds a space).

    Raises
    ------
    ValueError
        If ``k < 1`` or the columns differ in length.

    Examples
    --------
    >>> cells = pd.Series(["w1 w12 w2", "w3", "", "w1  w2"])
    >>> first_token_places(cells, pd.Series(["w12", "w1", "", ""]), 5).tolist()
    [1, -1, 0, 1]
    """
    if len(cells) != len(labels):
        raise ValueError(f"{len(cells)} cells but {len(labels)} labels")
    return _label_places(column_token_codes(labels, cells, sep=" ", max_tokens_b=k), len(labels), k)


def _count_inversions(ranks: list[int]) -> int:
    """Pairs ``i < j`` with ``ranks[i] > ranks[j]``, by insertion into a sorted list."""
    inversions = 0
    seen: list[int] = []
    for i, rank in enumerate(ranks):
        j = bisect(seen, rank)
        inversions += i - j
        seen.insert(j, rank)
    return inversions


def kendall_tau_score(
    answers: pd.DataFrame,
    submission: pd.DataFrame,
    *,
    id_columns: Sequence[str],
    target_columns: Sequence[str],
) -> float:
    """Kendall's tau between predicted and true orderings, pooled over rows (Google AI4Code).

    Each cell is a space-separated ordering of the same items (a notebook's cell ids). With
    ``S`` the total number of swapped pairs over all rows and ``n_r`` each row's length, the
    score is ``1 - 4 S / sum_r n_r (n_r - 1)``: pooled, not averaged per row.

    Parameters
    ----------
    answers, submission : pandas.DataFrame
        Aligned frames whose target column holds the orderings.

    Returns
    -------
    float
        In [-1, 1], higher is better.

    Raises
    ------
    InvalidSubmission
        For a predicted ordering that is not a permutation of the true items (the row named).

    References
    ----------
    Kaggle, "Competition metric: Kendall tau correlation",
    https://www.kaggle.com/code/ryanholbrook/competition-metric-kendall-tau-correlation

    Examples
    --------
    >>> import pandas as pd
    >>> answers = pd.DataFrame({"id": ["n"], "cell_order": ["a b c d"]})
    >>> sub = pd.DataFrame({"id": ["n"], "cell_order": ["a c b d"]})
    >>> round(kendall_tau_score(answers, sub, id_columns=["id"], target_columns=["cell_order"]), 4)
    0.6667
    """
    column = target_columns[0]
    truths = answers[column].fillna("").astype(str).str.split().tolist()
    preds = submission[column].fillna("").astype(str).str.split().tolist()
    swapped = 0
    pairs = 0
    for position, (truth, pred) in enumerate(zip(truths, preds)):
        rank = {item: i for i, item in enumerate(truth)}
        if len(pred) != len(truth) or len(set(pred)) != len(pred) or any(item not in rank for item in pred):
            raise invalid_cell(
                submission,
                position,
                column,
                f"an ordering of {len(pred)} items that is not a permutation of the row's {len(truth)} items",
            )
        swapped += _count_inversions([rank[item] for item in pred])
        pairs += len(truth) * (len(truth) - 1)
    if pairs == 0:
        raise undefined_metric("kendall_tau_score", "no row has two items to order")
    return float(1 - 4 * swapped / pairs)
