"""Segmentation metrics on run-length encoded masks: Dice, F-beta, IoU precision, Hausdorff.

A run-length mask (Kaggle's RLE) is a string of ``start length`` pairs; pixel numbers start
at 1 and run top to bottom, then left to right (column-major), unless a competition says
otherwise. An empty cell, an empty string or ``-`` is an empty mask. Pixel-wise scores (Dice,
F-beta, IoU) are computed on the runs themselves, never on decoded images, so a 30,000 x 30,000
kidney slide costs as much as its number of runs; only the Hausdorff distance decodes masks.

A mask is malformed, and the submission invalid, when a value is not a positive integer, the
values do not come in pairs, the starts are not in increasing order, two runs overlap, or a
run leaves the image. MLE-bench's decoder rejects the same masks except the last kind, which it
silently cuts at the image border.
"""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np
import pandas as pd
from scipy.spatial.distance import directed_hausdorff

from mleaudit.grading.errors import ConfigError
from mleaudit.grading.metrics.base import invalid_cell, require_answer_columns

__all__ = [
    "parse_rle",
    "decode_rle",
    "mean_dice_score",
    "global_dice_score",
    "mean_fbeta_mask_score",
    "mask_iou_precision_score",
    "dice_hausdorff_score",
]

Runs = tuple[np.ndarray, np.ndarray]
_EMPTY_RUNS: Runs = (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64))


def parse_rle(text: object, n_pixels: int, *, dash_is_empty: bool = True) -> Runs:
    """Parse a run-length mask into 0-based half-open runs.

    Parameters
    ----------
    text : str or None
        ``"start length start length ..."`` with 1-based starts; ``None``/NaN and ``""`` are the
        empty mask, and so is ``"-"`` where ``dash_is_empty``.
    n_pixels : int
        Pixels in the image (height x width).
    dash_is_empty : bool
        Take ``"-"`` as the empty mask (the contrails competition's spelling, which its MLE-bench
        grader maps to empty); otherwise it is a malformed mask, as the other MLE-bench mask
        graders, which read every token as an integer, take it.

    Returns
    -------
    starts, ends : numpy.ndarray of int64
        Run ``i`` covers pixels ``starts[i] <= p < ends[i]`` (0-based), sorted and disjoint.

    Raises
    ------
    ValueError
        Saying what is malformed (the caller names the cell).

    Examples
    --------
    >>> parse_rle("1 3 10 2", 20)
    (array([0, 9]), array([ 3, 11]))
    >>> parse_rle("3 2 1 1", 20)
    Traceback (most recent call last):
    ...
    ValueError: a run-length mask whose starts are not in increasing order (3 then 1)
    """
    if text is None or (isinstance(text, float) and np.isnan(text)):
        return _EMPTY_RUNS
    cell = str(text).strip()
    if cell == "" or (cell == "-" and dash_is_empty):
        return _EMPTY_RUNS
    tokens = cell.split()
    try:
        values = np.array([int(t) for t in tokens], dtype=np.int64)
    except ValueError:
        bad = next(t for t in tokens if not t.lstrip("+-").isdigit())
        raise ValueError(f"a run-length mask with the value {bad!r}, which is not an integer") from None
    if values.size % 2:
        raise ValueError(f"a run-length mask with an odd number of values ({values.size})")
    starts, lengths = values[0::2], values[1::2]
    if (starts < 1).any() or (lengths < 1).any():
        raise ValueError("a run-length mask with a start or length below 1")
    decreasing = np.flatnonzero(np.diff(starts) < 0)
    if decreasing.size:
        i = int(decreasing[0])
        raise ValueError(
            f"a run-length mask whose starts are not in increasing order ({int(starts[i])} then {int(starts[i + 1])})"
        )
    starts = starts - 1
    ends = starts + lengths
    overlap = np.flatnonzero(starts[1:] < ends[:-1])
    if overlap.size:
        i = int(overlap[0])
        raise ValueError(f"a run-length mask with overlapping runs (starting at {int(starts[i]) + 1} and {int(starts[i + 1]) + 1})")
    if ends.size and ends[-1] > n_pixels:
        raise ValueError(f"a run-length mask that runs past the image's {n_pixels} pixels (to pixel {int(ends[-1])})")
    return starts, ends


def decode_rle(runs: Runs, height: int, width: int) -> np.ndarray:
    """Turn runs into a boolean ``(height, width)`` image, pixels numbered column-major.

    Examples
    --------
    >>> decode_rle(parse_rle("1 2 5 1", 6), 2, 3).astype(int).tolist()
    [[1, 0, 1], [1, 0, 0]]
    """
    flat = np.zeros(height * width, dtype=bool)
    for start, end in zip(*runs):
        flat[start:end] = True
    return flat.reshape((width, height)).T


def _coverage(runs: Runs, x: np.ndarray) -> np.ndarray:
    """Pixels of ``runs`` below each position in ``x`` (runs sorted and disjoint)."""
    starts, ends = runs
    if starts.size == 0:
        return np.zeros(len(x), dtype=np.int64)
    before = np.concatenate([[0], np.cumsum(ends - starts)])
    j = np.searchsorted(starts, x, side="left")
    last = np.maximum(j - 1, 0)
    partial = np.where(j > 0, np.minimum(ends[last], x) - starts[last], 0)
    return before[last] * (j > 0) + partial


def _overlap(a: Runs, b: Runs) -> int:
    """Pixels in both masks."""
    if a[0].size == 0 or b[0].size == 0:
        return 0
    return int(np.sum(_coverage(a, b[1]) - _coverage(a, b[0])))


def _area(runs: Runs) -> int:
    return int(np.sum(runs[1] - runs[0]))


def _size_of(answers: pd.DataFrame, value: int | str, position: int, metric: str) -> int:
    if isinstance(value, str):
        return int(answers[value].iloc[position])
    return int(value)


def _mask_pairs(
    answers: pd.DataFrame,
    submission: pd.DataFrame,
    column: str,
    height: int | str,
    width: int | str,
    metric: str,
    *,
    dash_is_empty: bool = False,
) -> tuple[list[Runs], list[Runs], np.ndarray, np.ndarray]:
    """Parse every answer and predicted mask; errors name the submission row or the answers row.

    ``dash_is_empty`` applies to predicted masks (see :func:`parse_rle`); an answer's ``"-"`` is
    always the empty mask.
    """
    require_answer_columns(answers, [c for c in (height, width) if isinstance(c, str)], metric=metric)
    heights = answers[height].to_numpy() if isinstance(height, str) else np.full(len(answers), int(height))
    widths = answers[width].to_numpy() if isinstance(width, str) else np.full(len(answers), int(width))
    heights, widths = heights.astype(np.int64), widths.astype(np.int64)
    truths: list[Runs] = []
    preds: list[Runs] = []
    true_cells = answers[column].tolist()
    pred_cells = submission[column].tolist()
    for position, (true_cell, pred_cell) in enumerate(zip(true_cells, pred_cells)):
        n_pixels = int(heights[position] * widths[position])
        try:
            truths.append(parse_rle(true_cell, n_pixels))
        except ValueError as exc:
            raise ConfigError(f"{metric}: answers row {position + 1}, column {column!r}: {exc}") from None
        try:
            preds.append(parse_rle(pred_cell, n_pixels, dash_is_empty=dash_is_empty))
        except ValueError as exc:
            raise invalid_cell(submission, position, column, str(exc)) from None
    return truths, preds, heights, widths


def mean_dice_score(
    answers: pd.DataFrame,
    submission: pd.DataFrame,
    *,
    id_columns: Sequence[str],
    target_columns: Sequence[str],
    height: int | str = "height",
    width: int | str = "width",
    both_empty: float = 1.0,
) -> float:
    """Mean over images of the Dice coefficient ``2 |A & B| / (|A| + |B|)`` of run-length masks.

    Parameters
    ----------
    answers, submission : pandas.DataFrame
        Aligned frames whose target column holds run-length masks.
    height, width : int or str
        Image size in pixels, or the answers columns that hold it per row.
    both_empty : float
        Score of an image whose two masks are empty (MLE-bench's HuBMAP grader: 1).

    Returns
    -------
    float
        In [0, 1], higher is better.

    Raises
    ------
    InvalidSubmission
        For a malformed mask (the row named).

    Examples
    --------
    >>> import pandas as pd
    >>> answers = pd.DataFrame({"id": ["a", "b"], "m": ["1 4", ""], "height": [4, 4], "width": [4, 4]})
    >>> sub = pd.DataFrame({"id": ["a", "b"], "m": ["3 4", None]})
    >>> mean_dice_score(answers, sub, id_columns=["id"], target_columns=["m"])
    0.75
    """
    column = target_columns[0]
    truths, preds, _, _ = _mask_pairs(answers, submission, column, height, width, "mean_dice_score")
    scores = []
    for truth, pred in zip(truths, preds):
        total = _area(truth) + _area(pred)
        scores.append(both_empty if total == 0 else 2 * _overlap(truth, pred) / total)
    return float(np.mean(scores)) if scores else 0.0


def global_dice_score(
    answers: pd.DataFrame,
    submission: pd.DataFrame,
    *,
    id_columns: Sequence[str],
    target_columns: Sequence[str],
    height: int | str = "height",
    width: int | str = "width",
) -> float:
    """Dice coefficient of all images pooled: ``2 sum |A & B| / (sum |A| + sum |B|)`` (contrails).

    Parameters
    ----------
    answers, submission : pandas.DataFrame
        Aligned frames whose target column holds run-length masks.
    height, width : int or str
        Image size, or the answers columns holding it.

    Returns
    -------
    float
        In [0, 1], higher is better; NaN (an invalid score) when every mask is empty.

    Examples
    --------
    >>> import pandas as pd
    >>> answers = pd.DataFrame({"record_id": [1, 2], "encoded_pixels": ["1 4", "-"]})
    >>> sub = pd.DataFrame({"record_id": [1, 2], "encoded_pixels": ["1 2", "5 2"]})
    >>> round(global_dice_score(answers, sub, id_columns=["record_id"], target_columns=["encoded_pixels"],
    ...       height=4, width=4), 4)
    0.5
    """
    column = target_columns[0]
    truths, preds, _, _ = _mask_pairs(
        answers, submission, column, height, width, "global_dice_score", dash_is_empty=True
    )
    overlap = sum(_overlap(t, p) for t, p in zip(truths, preds))
    total = sum(_area(t) for t in truths) + sum(_area(p) for p in preds)
    return float(2 * overlap / total) if total else float("nan")


def mean_fbeta_mask_score(
    answers: pd.DataFrame,
    submission: pd.DataFrame,
    *,
    id_columns: Sequence[str],
    target_columns: Sequence[str],
    height: int | str = "height",
    width: int | str = "width",
    beta: float = 0.5,
) -> float:
    """Mean over images of the pixel-wise F-beta of run-length masks (Vesuvius ink detection).

    Per image ``(1 + b^2) TP / (b^2 |true| + |predicted|)``, as :func:`sklearn.metrics.fbeta_score`
    computes it; 0 when both masks are empty (scikit-learn's ``zero_division``).

    Parameters
    ----------
    answers, submission : pandas.DataFrame
        Aligned frames whose target column holds run-length masks.
    height, width : int or str
        Image size, or the answers columns holding it.
    beta : float
        Weight of recall; 0.5 weighs precision more.

    Returns
    -------
    float
        In [0, 1], higher is better.

    Examples
    --------
    >>> import pandas as pd
    >>> answers = pd.DataFrame({"Id": ["a"], "Predicted": ["1 4"], "height": [4], "width": [4]})
    >>> sub = pd.DataFrame({"Id": ["a"], "Predicted": ["1 2"]})
    >>> round(mean_fbeta_mask_score(answers, sub, id_columns=["Id"], target_columns=["Predicted"]), 4)
    0.8333
    """
    column = target_columns[0]
    truths, preds, _, _ = _mask_pairs(answers, submission, column, height, width, "mean_fbeta_mask_score")
    b2 = float(beta) ** 2
    scores = []
    for truth, pred in zip(truths, preds):
        denominator = b2 * _area(truth) + _area(pred)
        scores.append((1 + b2) * _overlap(truth, pred) / denominator if denominator else 0.0)
    return float(np.mean(scores)) if scores else 0.0


#: IoU thresholds of the TGS salt metric, as ``np.arange(0.5, 1.0, 0.05)`` yields them.
IOU_THRESHOLDS = np.arange(0.5, 1.0, 0.05)


def mask_iou_precision_score(
    answers: pd.DataFrame,
    submission: pd.DataFrame,
    *,
    id_columns: Sequence[str],
    target_columns: Sequence[str],
    height: int | str = 101,
    width: int | str = 101,
) -> float:
    """Mean over images of the precision at IoU thresholds 0.5 .. 0.95 (TGS salt identification).

    Each image holds at most one object, its mask. An image scores the share of thresholds
    ``t`` with ``IoU > t``; an image with no true and no predicted salt scores 1, one with
    predicted salt but none true scores 0. As in MLE-bench's grader (histogram-based IoU), an
    empty prediction for an image with salt counts as a prediction of the whole image, so it
    scores the share of thresholds below the salt's share of the image.

    Parameters
    ----------
    answers, submission : pandas.DataFrame
        Aligned frames whose target column holds run-length masks.
    height, width : int or str
        Image size (101 x 101 in TGS), or the answers columns holding it.

    Returns
    -------
    float
        In [0, 1], higher is better.

    References
    ----------
    Kaggle TGS Salt Identification Challenge, evaluation page.

    Examples
    --------
    >>> import pandas as pd
    >>> answers = pd.DataFrame({"id": ["a", "b"], "rle_mask": ["1 10", ""]})
    >>> sub = pd.DataFrame({"id": ["a", "b"], "rle_mask": ["1 8", ""]})
    >>> mask_iou_precision_score(answers, sub, id_columns=["id"], target_columns=["rle_mask"], height=5, width=5)
    0.8
    """
    column = target_columns[0]
    truths, preds, heights, widths = _mask_pairs(answers, submission, column, height, width, "mask_iou_precision_score")
    scores = []
    for truth, pred, h, w in zip(truths, preds, heights, widths):
        true_area, pred_area = _area(truth), _area(pred)
        if true_area == 0:
            scores.append(1.0 if pred_area == 0 else 0.0)
            continue
        if pred_area == 0:
            iou = true_area / float(h * w)
        else:
            inter = _overlap(truth, pred)
            iou = inter / float(true_area + pred_area - inter)
        scores.append(float(np.mean(iou > IOU_THRESHOLDS)))
    return float(np.mean(scores)) if scores else 0.0


#: Longest distance in the unit cube, which normalises the Hausdorff distance.
UNIT_CUBE_DIAGONAL = float(np.sqrt(3))


def _hausdorff(pred: np.ndarray, truth: np.ndarray) -> float:
    """Symmetric Hausdorff distance of two 3-D masks in unit-cube coordinates, over sqrt(3)."""
    pred_sum, true_sum = int(pred.sum()), int(truth.sum())
    if pred_sum == 0 and true_sum == 0:
        return float("nan")
    if np.array_equal(pred, truth):
        return 0.0
    if pred_sum == 0 or true_sum == 0:
        return 1.0
    # MLE-bench's shortcut: a prediction ten times larger than the truth scores the worst.
    if pred_sum > 10 * true_sum:
        return 1.0
    scale = np.asarray(truth.shape, dtype=float)
    true_points = np.argwhere(truth) / scale
    pred_points = np.argwhere(pred) / scale
    distance = max(directed_hausdorff(true_points, pred_points)[0], directed_hausdorff(pred_points, true_points)[0])
    return float(distance / UNIT_CUBE_DIAGONAL)


def _volumes(masks: list[np.ndarray], slice_ids: list[str], separator: str) -> dict[str, np.ndarray]:
    """Join masks of one slice with OR, then stack each scan's slices (sorted by id) into a volume."""
    by_slice: dict[str, np.ndarray] = {}
    for slice_id, mask in sorted(zip(slice_ids, masks), key=lambda item: item[0]):
        by_slice[slice_id] = mask if slice_id not in by_slice else (by_slice[slice_id] | mask)
    by_scan: dict[str, list[np.ndarray]] = {}
    for slice_id, mask in by_slice.items():
        by_scan.setdefault(slice_id.split(separator)[0], []).append(mask)
    return {scan: np.stack(slices, axis=0) for scan, slices in by_scan.items()}


def dice_hausdorff_score(
    answers: pd.DataFrame,
    submission: pd.DataFrame,
    *,
    id_columns: Sequence[str],
    target_columns: Sequence[str],
    height: int | str = "image_height",
    width: int | str = "image_width",
    dice_weight: float = 0.4,
    hausdorff_weight: float = 0.6,
    slice_separator: str = "_slice_",
) -> float:
    """``0.4 * Dice + 0.6 * (1 - Hausdorff)`` of organ masks (UW-Madison GI tract).

    Dice is averaged over rows (one mask per slice and class), leaving out rows whose two masks
    are empty. For the Hausdorff part, each slice's masks (all classes) are joined, the slices
    of a scan (the id before ``_slice_``) are stacked in id order into a volume, and the
    symmetric Hausdorff distance between predicted and true volumes is measured in coordinates
    scaled to the unit cube and divided by its diagonal; scans empty in both are left out, an
    empty or ten-times-too-large prediction scores 1.

    Parameters
    ----------
    answers, submission : pandas.DataFrame
        Aligned frames (ids ``<case>_<day>_slice_<n>`` plus a class column) whose target column
        holds run-length masks.
    height, width : int or str
        Image size, or the answers columns holding it.
    dice_weight, hausdorff_weight : float
        Weights of the two parts.
    slice_separator : str
        What separates the scan from the slice number in the first id column.

    Returns
    -------
    float
        In [0, 1], higher is better.

    References
    ----------
    Kaggle UW-Madison GI Tract Image Segmentation, evaluation page and discussion 324934.
    """
    column = target_columns[0]
    truths, preds, heights, widths = _mask_pairs(answers, submission, column, height, width, "dice_hausdorff_score")
    dice = []
    for truth, pred in zip(truths, preds):
        total = _area(truth) + _area(pred)
        dice.append(float("nan") if total == 0 else 2 * _overlap(truth, pred) / total)
    decode: Callable[[Runs, int], np.ndarray] = lambda runs, i: decode_rle(runs, int(heights[i]), int(widths[i]))  # noqa: E731
    slice_ids = answers[id_columns[0]].astype(str).tolist()
    try:
        true_volumes = _volumes([decode(t, i) for i, t in enumerate(truths)], slice_ids, slice_separator)
        pred_volumes = _volumes([decode(p, i) for i, p in enumerate(preds)], slice_ids, slice_separator)
    except ValueError as exc:
        raise ConfigError(f"dice_hausdorff_score: the slices of a scan differ in size in the answers: {exc}") from None
    distances = [_hausdorff(pred_volumes[scan], true_volumes[scan]) for scan in true_volumes]
    dice_values, distance_values = np.asarray(dice), np.asarray(distances)
    if np.isnan(dice_values).all() or np.isnan(distance_values).all():
        # Every mask empty on both sides: the score is undefined (NaN), which grading rejects.
        return float("nan")
    return float(dice_weight * np.nanmean(dice_values) + hausdorff_weight * (1 - np.nanmean(distance_values)))
