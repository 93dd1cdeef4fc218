"""Ranking metrics on ordered label lists: MAP@K and Kendall's tau over orderings.

Cells hold space-separated labels, best first. MAP@K is computed on integer-coded (row, label)
pairs in numpy, so a million-row submission scores in about the time pandas needs to split it.
When every answer is a single label (the usual case: one whale, one hotel) only the place of
that label among the predictions matters; on Arrow-backed text it is found on the column's
byte buffer (:func:`grading.metrics.arrowtext.first_token_match`), with no Python string per
row.
"""

from __future__ import annotations

import math
from bisect import bisect
from typing import Sequence

import numpy as np
import pandas as pd

from grading.metrics import native
from grading.metrics.arrowtext import arrow_text, first_token_match
from grading.metrics.base import in_answer_order, invalid_cell, undefined_metric
from grading.metrics.tokens import split_tokens, token_codes

__all__ = ["map_at_k_score", "kendall_tau_score"]


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
    fast = _single_label_mean_ap(answers[column], submission[column], k)
    if fast is not None:
        return fast
    true_rows, true_tokens = split_tokens(answers[column], sep=" ")
    pred_rows, pred_tokens = split_tokens(submission[column], sep=" ")
    keep = _positions(pred_rows) < k
    pred_rows, pred_tokens = pred_rows[keep], pred_tokens[keep]
    true_keys, pred_keys, n_codes = token_codes(true_rows, true_tokens, pred_rows, pred_tokens)
    true_keys = np.unique(true_keys)
    # Distinct true labels per row.
    n_true = np.bincount((true_keys // n_codes).astype(np.intp), minlength=n_rows)
    # A label repeated in a row counts at its first place only.
    repeated = pd.Series(pred_keys).duplicated().to_numpy()
    hit = np.isin(pred_keys, true_keys) & ~repeated
    cumulative = np.cumsum(hit)
    first = np.searchsorted(pred_rows, np.arange(n_rows), side="left")
    before_row = np.concatenate([[0], cumulative])[first]
    hits_so_far = cumulative - before_row[pred_rows] if pred_rows.size else cumulative
    precision = np.where(hit, hits_so_far / (_positions(pred_rows) + 1.0), 0.0)
    per_row = np.bincount(pred_rows, weights=precision, minlength=n_rows)
    denominator = np.minimum(n_true, k)
    ap = np.divide(per_row, denominator, out=np.zeros(n_rows), where=denominator > 0)
    return float(np.mean(in_answer_order(ap, answers))) if n_rows else 0.0


def _rank_of(cell: str, label: str) -> int:
    """Place of ``label`` among the single-space-separated tokens of ``cell``; -1 when absent."""
    size = len(label)
    found = cell.find(label)
    while found >= 0:
        # A whole token only: bounded by spaces or the cell's ends ("w_1" is not in "w_12").
        if (found == 0 or cell[found - 1] == " ") and (found + size == len(cell) or cell[found + size] == " "):
            return cell.count(" ", 0, found)
        found = cell.find(label, found + 1)
    return -1


def _texts(values: pd.Series) -> list[str]:
    """The cells as a list of str, missing cells as ``""``."""
    array = values.to_numpy(dtype=object)
    missing = pd.isna(array)
    if missing.any():
        array = np.where(missing, "", array)
    if pd.api.types.infer_dtype(array, skipna=False) != "string":
        array = array.astype(str)
    return array.tolist()


def _single_label_mean_ap(truth: pd.Series, pred: pd.Series, k: int) -> float | None:
    """Mean AP@k when every answer is one label; None when an answer holds several.

    With one true label, a row's AP is ``1 / (rank + 1)`` for the first place the label takes
    among the predictions, if that place is within the first ``k``. Finding the label as a
    whole token with ``str.find`` and counting the spaces before it gives that place without
    splitting a million cells into lists. The mean is taken from the number of rows at each
    place, ``sum_r count_r / (r + 1) / n`` (the terms added with one rounding, :func:`math.fsum`), so
    it does not depend on the order of the rows, to the last bit.
    """
    # Rows per place: index 0 counts misses, index r + 1 the rows whose label is first at rank r.
    per_place = _single_label_places_arrow(truth, pred, k)
    if per_place is None:
        labels = _texts(truth)
        if any(" " in label for label in labels):
            return None
        rank = np.fromiter(map(_rank_of, _texts(pred), labels), dtype=np.int64, count=len(labels))
        rank[rank >= k] = -1
        per_place = np.bincount(rank + 1, minlength=k + 1)
    n_rows = int(per_place.sum())
    if not n_rows:
        return 0.0
    return math.fsum(int(count) / (place + 1.0) for place, count in enumerate(per_place[1:])) / n_rows


def _single_label_places_arrow(truth: pd.Series, pred: pd.Series, k: int) -> np.ndarray | None:
    """Rows per place of the one true label among the first ``k`` predicted tokens.

    The Arrow-backed counterpart of :func:`_rank_of` over whole columns (missing cells as
    ``""``): the compiled kernels count the places at once
    (:func:`grading.metrics.native.first_token_counts`); otherwise
    :func:`grading.metrics.arrowtext.first_token_match` gives each row's place. Entry 0 counts
    the rows whose label is not among those tokens, entry ``r + 1`` those whose label is first
    at place ``r``. ``None`` when a column is not Arrow-backed text or an answer holds several
    labels, so the caller takes the general path.
    """
    if k < 1:
        return None
    truth_text, pred_text = arrow_text(truth), arrow_text(pred)
    if truth_text is None or pred_text is None or len(truth_text) != len(pred_text):
        return None
    import pyarrow.compute as pc  # arrow_text returned arrays, so pyarrow is installed

    if truth_text.null_count:
        truth_text = pc.fill_null(truth_text, "")
    if pred_text.null_count:
        pred_text = pc.fill_null(pred_text, "")
    counts = native.first_token_counts(pred_text, truth_text, k)
    if counts is not None:
        return counts
    rank = first_token_match(pred_text, truth_text, k)
    return None if rank is None else np.bincount(rank + 1, minlength=k + 1)


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
