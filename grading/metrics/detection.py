"""Object-detection metrics on prediction strings: point-in-box F1, VOC, COCO and 3-D mAP.

A prediction string lists objects as groups of space-separated tokens (``label conf x0 y0 x1 y1``
and the like); an empty cell is an image without objects. A string is malformed, and the
submission invalid, when its token count is not a multiple of the group size, or a number in it
does not parse (the row and id are named). Answers use the same strings (COCO's long format,
one row per box, for VinBigData).
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any, Sequence

import numpy as np
import pandas as pd
from sklearn import metrics as _skm

from mleaudit.grading.metrics import box3d as _box3d
from mleaudit.grading.metrics.base import require_answer_columns, undefined_metric
from mleaudit.grading.metrics.box3d import box3d_map_score
from mleaudit.grading.metrics.prediction_strings import _cells, _groups

__all__ = ["point_in_box_f1_score", "pascal_voc_map_score", "coco_map_score", "box3d_map_score"]

# Reached under this module's name though not in __all__.
LYFT_IOU_THRESHOLDS = _box3d.LYFT_IOU_THRESHOLDS


def point_in_box_f1_score(
    answers: pd.DataFrame,
    submission: pd.DataFrame,
    *,
    id_columns: Sequence[str],
    target_columns: Sequence[str],
) -> float:
    """F1 of predicted character centres falling inside true boxes with the same label (Kuzushiji).

    Answers list ``label x y width height`` per character, predictions ``label x y`` per
    character. On each page, true boxes are visited in order; each takes the first unused
    prediction with its label whose centre lies strictly inside it (a true positive) or counts as
    a false negative; unused predictions are false positives. The score is F1 over all pages'
    counts, 0 when there are no predictions or no characters.

    Parameters
    ----------
    answers, submission : pandas.DataFrame
        Aligned frames whose target column holds the strings.

    Returns
    -------
    float
        In [0, 1], higher is better.

    References
    ----------
    Kaggle Kuzushiji Recognition, evaluation page and the host's metric script.

    Examples
    --------
    >>> import pandas as pd
    >>> answers = pd.DataFrame({"image_id": ["p"], "labels": ["U+3042 0 0 10 10 U+3044 20 0 10 10"]})
    >>> sub = pd.DataFrame({"image_id": ["p"], "labels": ["U+3042 5 5 U+3042 25 5"]})
    >>> point_in_box_f1_score(answers, sub, id_columns=["image_id"], target_columns=["labels"])
    0.5
    """
    column = target_columns[0]
    tp = fp = fn = 0
    for position, (truth_text, pred_text) in enumerate(zip(_cells(answers[column]), _cells(submission[column]))):
        truth = _groups(truth_text, 5, (1, 2, 3, 4), where=None, what="point_in_box_f1_score")
        preds = _groups(
            pred_text, 3, (1, 2), where=(submission, position, column), what="point_in_box_f1_score", single_spaced=True
        )
        if not preds:
            fn += len(truth)
            continue
        labels = np.array([p[0] for p in preds], dtype=object)
        xs = np.array([p[1] for p in preds])
        ys = np.array([p[2] for p in preds])
        unused = np.ones(len(preds), dtype=bool)
        for label, x, y, w, h in truth:
            match = (x < xs) & (x + w > xs) & (y < ys) & (y + h > ys) & (labels == label) & unused
            if match.any():
                tp += 1
                unused[int(np.argmax(match))] = False
            else:
                fn += 1
        fp += int(unused.sum())
    if tp + fp == 0 or tp + fn == 0:
        return 0.0
    precision, recall = tp / (tp + fp), tp / (tp + fn)
    return float(2 * precision * recall / (precision + recall)) if precision > 0 and recall > 0 else 0.0


def _box_iou(a: Sequence[float], b: Sequence[float]) -> float:
    """IoU of two ``(x_min, y_min, x_max, y_max)`` boxes; 0 when the union is empty."""
    width = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    height = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    inter = width * height
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / union if union > 0 else 0.0


def pascal_voc_map_score(
    answers: pd.DataFrame,
    submission: pd.DataFrame,
    *,
    id_columns: Sequence[str],
    target_columns: Sequence[str],
    iou_threshold: float = 0.5,
) -> float:
    """Mean over classes of PASCAL VOC average precision at IoU > 0.5 (SIIM-FISABIO-RSNA COVID-19).

    Strings list ``label confidence x_min y_min x_max y_max`` per box; study-level classes
    (``negative 1 0 0 1 1``) are boxes like any other. For each class in the answers, each
    image's predictions of that class are taken by decreasing confidence and matched to the
    unmatched true box of highest IoU above the threshold; matches give (1, confidence), other
    predictions (0, confidence), missed true boxes (1, 0), and an image with neither gives
    (0, 0). The class's AP is :func:`sklearn.metrics.average_precision_score` on those pairs,
    as in MLE-bench's grader.

    Parameters
    ----------
    answers, submission : pandas.DataFrame
        Aligned frames whose target column holds the strings.
    iou_threshold : float
        A match needs IoU strictly above this.

    Returns
    -------
    float
        In [0, 1], higher is better.

    Examples
    --------
    >>> import pandas as pd
    >>> answers = pd.DataFrame({"id": ["a", "b"], "PredictionString": ["opacity 1 0 0 10 10", "none 1 0 0 1 1"]})
    >>> sub = pd.DataFrame({"id": ["a", "b"], "PredictionString": ["opacity 0.9 0 0 10 9", "opacity 0.4 0 0 5 5"]})
    >>> round(pascal_voc_map_score(answers, sub, id_columns=["id"], target_columns=["PredictionString"]), 4)
    0.75
    """
    column = target_columns[0]
    numeric = (1, 2, 3, 4, 5)
    truths = [_groups(t, 6, numeric, where=None, what="pascal_voc_map_score") for t in _cells(answers[column])]
    preds = [
        _groups(p, 6, numeric, where=(submission, i, column), what="pascal_voc_map_score")
        for i, p in enumerate(_cells(submission[column]))
    ]
    classes = sorted({box[0] for boxes in truths for box in boxes})
    if not classes:
        raise undefined_metric("pascal_voc_map_score", "the answers hold no box")
    aps = []
    for cls in classes:
        labels: list[int] = []
        scores: list[float] = []
        for image_preds, image_truths in zip(preds, truths):
            gt_boxes = [box[2:] for box in image_truths if box[0] == cls]
            matched = [False] * len(gt_boxes)
            pairs: list[tuple[int, float]] = []
            for pred in sorted(image_preds, key=lambda box: box[1], reverse=True):
                if pred[0] != cls:
                    continue
                best_iou, best = 0.0, -1
                for i, gt in enumerate(gt_boxes):
                    if matched[i]:
                        continue
                    iou = _box_iou(pred[2:], gt)
                    if iou > best_iou and iou > iou_threshold:
                        best_iou, best = iou, i
                if best >= 0:
                    matched[best] = True
                    pairs.append((1, pred[1]))
                else:
                    pairs.append((0, pred[1]))
            pairs.extend([(1, 0.0)] * matched.count(False))
            if not pairs:
                pairs.append((0, 0.0))
            labels.extend(p[0] for p in pairs)
            scores.extend(p[1] for p in pairs)
        aps.append(_skm.average_precision_score(labels, scores))
    return float(np.mean(aps))


#: Recall points of COCO's interpolated precision: 0, 0.01, ..., 1.
COCO_RECALL_THRESHOLDS = np.linspace(0.0, 1.0, int(np.round((1.0 - 0.0) / 0.01)) + 1)


def _coco_iou(dts: np.ndarray, gts: np.ndarray) -> np.ndarray:
    """IoU matrix of boxes given as ``[x, y, w, h]`` (pycocotools' ``bbox`` convention)."""
    dx0, dy0, dx1, dy1 = dts[:, 0:1], dts[:, 1:2], dts[:, 0:1] + dts[:, 2:3], dts[:, 1:2] + dts[:, 3:4]
    gx0, gy0, gx1, gy1 = gts[:, 0], gts[:, 1], gts[:, 0] + gts[:, 2], gts[:, 1] + gts[:, 3]
    width = np.minimum(dx1, gx1) - np.maximum(dx0, gx0)
    height = np.minimum(dy1, gy1) - np.maximum(dy0, gy0)
    inter = np.where((width > 0) & (height > 0), width * height, 0.0)
    union = dts[:, 2:3] * dts[:, 3:4] + (gts[:, 2] * gts[:, 3])[None, :] - inter
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(union > 0, inter / union, 0.0)


def coco_map_score(
    answers: pd.DataFrame,
    submission: pd.DataFrame,
    *,
    id_columns: Sequence[str],
    target_columns: Sequence[str],
    iou_threshold: float = 0.4,
    class_column: str = "class_id",
    box_columns: Sequence[str] = ("x_min", "y_min", "x_max", "y_max"),
    max_detections: int = 100,
) -> float:
    """COCO mean average precision at one IoU threshold (VinBigData chest X-ray, mAP@0.4).

    A re-implementation of pycocotools' ``COCOeval`` (``bbox``, area "all", 100 detections per
    image, 101-point interpolated precision) as MLE-bench's grader drives it: answers have one row
    per true box (``class_column`` and ``box_columns``), the submission one row per image with
    ``class confidence x_min y_min x_max y_max`` groups. Like that grader this keeps two quirks:
    boxes are handed to COCO as ``[x_min, y_min, x_max, y_max]`` where COCO reads
    ``[x, y, width, height]``, and annotation ids are numbered from 0, which COCO takes for "no
    match" (the first true box, in answer order, can never be matched, and the first predicted
    box, in submission-file order, leaves its true box free for another prediction).

    Parameters
    ----------
    answers : pandas.DataFrame
        Long format: several rows per image id, one per true box.
    submission : pandas.DataFrame
        One row per image, aligned to the answers' image ids.
    iou_threshold : float
        A match needs IoU of at least this.
    class_column : str
        Answers column with the class id (an integer).
    box_columns : sequence of str
        Answers columns with the box corners.
    max_detections : int
        Predictions kept per image and class, by decreasing confidence.

    Returns
    -------
    float
        In [0, 1], higher is better; -1 (COCO's "undefined") when no class has a true box.

    References
    ----------
    T.-Y. Lin et al. (2014). Microsoft COCO: Common Objects in Context. ECCV; pycocotools
    ``cocoeval.py``; Kaggle VinBigData Chest X-ray Abnormalities Detection, "competition metric
    mAP@0.4" (P. Pesti).
    """
    require_answer_columns(answers, [class_column, *box_columns], metric="coco_map_score")
    column = target_columns[0]
    image_ids = pd.unique(answers[id_columns[0]].astype(str))
    image_index = {image: i for i, image in enumerate(image_ids)}
    box_values = answers[list(box_columns)].apply(pd.to_numeric).to_numpy(dtype=float)
    true_images = answers[id_columns[0]].astype(str).map(image_index).to_numpy()
    true_classes = answers[class_column].to_numpy()
    categories = sorted(set(true_classes.tolist()))
    # Annotation ids follow MLE-bench's enumeration: image by image, rows in answer order.
    gts: dict[tuple[int, Any], list[tuple[int, np.ndarray]]] = defaultdict(list)
    order = np.argsort(true_images, kind="stable")
    for ann_id, row in enumerate(order):
        gts[(int(true_images[row]), true_classes[row])].append((ann_id, box_values[row]))
    # Predicted boxes are numbered in submission-file order.
    dts: dict[tuple[int, Any], list[tuple[int, float, np.ndarray]]] = defaultdict(list)
    sub_ids = submission[id_columns[0]].astype(str).to_numpy()
    cells = _cells(submission[column])
    dt_id = 0
    for position in np.argsort(submission.index.to_numpy(), kind="stable"):
        groups = _groups(
            cells[position], 6, (0, 1, 2, 3, 4, 5), where=(submission, int(position), column), what="coco_map_score",
            single_spaced=True,
        )
        for group in groups:
            dts[(image_index[sub_ids[position]], int(group[0]))].append((dt_id, float(group[1]), np.array(group[2:6])))
            dt_id += 1
    precisions = []
    for category in categories:
        scores_all, matched_all, ignored_all, n_true = [], [], [], 0
        for image in range(len(image_ids)):
            gt = gts.get((image, category), [])
            dt = dts.get((image, category), [])
            if not gt and not dt:
                continue
            dt = sorted(dt, key=lambda d: -d[1])[:max_detections]  # stable, as COCO's mergesort
            # COCO ignores true boxes whose area field is outside the "all" range, listing them last.
            gt = sorted(gt, key=lambda g: _outside_area(g[1]))
            gt_ignored = [_outside_area(g[1]) for g in gt]
            n_true += gt_ignored.count(False)
            gt_ids = [g[0] for g in gt]
            gt_matched_by = [0] * len(gt)  # the matching prediction's id; 0 also means "none"
            dt_match = np.zeros(len(dt), dtype=np.int64)
            dt_ignored = np.zeros(len(dt), dtype=bool)
            if gt and dt:
                ious = _coco_iou(np.array([d[2] for d in dt]), np.array([g[1] for g in gt]))
                for d_index, d in enumerate(dt):
                    best_iou, best = min(iou_threshold, 1 - 1e-10), -1
                    for g_index in range(len(gt)):
                        if gt_matched_by[g_index] > 0:
                            continue
                        if best > -1 and not gt_ignored[best] and gt_ignored[g_index]:
                            break
                        if ious[d_index, g_index] < best_iou:
                            continue
                        best_iou, best = ious[d_index, g_index], g_index
                    if best == -1:
                        continue
                    dt_ignored[d_index] = gt_ignored[best]
                    dt_match[d_index] = gt_ids[best]
                    gt_matched_by[best] = d[0]
            areas = np.array([(d[2][2] - d[2][0]) * (d[2][3] - d[2][1]) for d in dt]).reshape(-1)
            outside = (areas < 0) | (areas > 1e5**2)
            scores_all.append(np.array([d[1] for d in dt], dtype=float))
            matched_all.append(dt_match)
            ignored_all.append(dt_ignored | ((dt_match == 0) & outside))
        if n_true == 0:
            continue
        scores = np.concatenate(scores_all)
        order_by_score = np.argsort(-scores, kind="mergesort")
        matched = np.concatenate(matched_all)[order_by_score]
        ignored = np.concatenate(ignored_all)[order_by_score]
        tp = np.cumsum((matched != 0) & ~ignored).astype(float)
        fp = np.cumsum((matched == 0) & ~ignored).astype(float)
        q = np.zeros(len(COCO_RECALL_THRESHOLDS))
        if tp.size:
            recall = tp / n_true
            precision = (tp / (fp + tp + np.spacing(1))).tolist()
            for i in range(len(precision) - 1, 0, -1):
                if precision[i] > precision[i - 1]:
                    precision[i - 1] = precision[i]
            positions = np.searchsorted(recall, COCO_RECALL_THRESHOLDS, side="left")
            for r, p in enumerate(positions):
                if p >= len(precision):
                    break
                q[r] = precision[p]
        precisions.append(q)
    if not precisions:
        return -1.0
    return float(np.mean(np.concatenate(precisions)))


def _outside_area(box: np.ndarray) -> bool:
    """Whether a box's area field, ``(x_max - x_min) * (y_max - y_min)``, is outside COCO's "all" range."""
    area = (box[2] - box[0]) * (box[3] - box[1])
    return bool(area < 0 or area > 1e5**2)
