"""3-D box mAP of the Lyft competition: box footprints clipped, IoU in 3-D, AP over IoU thresholds."""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import pandas as pd

from mleaudit.grading.metrics.base import invalid_cell, undefined_metric
from mleaudit.grading.metrics.prediction_strings import _cells, _groups


def _rectangle(cx: float, cy: float, width: float, length: float, yaw: float) -> np.ndarray:
    """Corners of a box's footprint: ``length`` along the heading ``yaw``, ``width`` across."""
    c, s = np.cos(yaw), np.sin(yaw)
    dl = np.array([c, s]) * length / 2
    dw = np.array([s, -c]) * width / 2
    centre = np.array([cx, cy])
    return np.array([centre + dl + dw, centre + dl - dw, centre - dl - dw, centre - dl + dw])


def _polygon_area(points: np.ndarray) -> float:
    if len(points) < 3:
        return 0.0
    x, y = points[:, 0], points[:, 1]
    return float(abs(np.dot(x, np.roll(y, -1)) - np.dot(y, np.roll(x, -1))) / 2)


def _clip(subject: list[np.ndarray], clip: np.ndarray) -> list[np.ndarray]:
    """Sutherland-Hodgman: the part of a convex polygon inside another convex polygon."""
    orientation = np.sign(
        np.cross(np.append(clip[1] - clip[0], 0), np.append(clip[2] - clip[1], 0))[2]
    ) or 1.0
    output = subject
    for i in range(len(clip)):
        a, b = clip[i], clip[(i + 1) % len(clip)]
        edge = b - a
        inside = lambda p: orientation * (edge[0] * (p[1] - a[1]) - edge[1] * (p[0] - a[0])) >= 0  # noqa: E731
        points, output = output, []
        if not points:
            break
        for j in range(len(points)):
            current, previous = points[j], points[j - 1]
            if inside(current):
                if not inside(previous):
                    output.append(_intersection(previous, current, a, b))
                output.append(current)
            elif inside(previous):
                output.append(_intersection(previous, current, a, b))
    return output


def _intersection(p1: np.ndarray, p2: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    d1, d2 = p2 - p1, b - a
    denominator = d1[0] * d2[1] - d1[1] * d2[0]
    if denominator == 0:
        return p2
    t = ((a[0] - p1[0]) * d2[1] - (a[1] - p1[1]) * d2[0]) / denominator
    return p1 + t * d1


class _Box3D:
    """A 3-D box with a yaw about the vertical axis (Lyft's ``Box3D``)."""

    __slots__ = ("footprint", "min_z", "max_z", "volume", "score", "name")

    def __init__(self, group: list[Any]) -> None:
        score, x, y, z, width, length, height, yaw, name = group
        self.score, self.name = float(score), str(name)
        self.footprint = _rectangle(x, y, width, length, yaw)
        self.min_z, self.max_z = z - height / 2, z + height / 2
        self.volume = width * length * height

    def iou(self, other: "_Box3D") -> float:
        height = max(0.0, min(self.max_z, other.max_z) - max(self.min_z, other.min_z))
        area = _polygon_area(np.array(_clip(list(self.footprint), other.footprint))) if height > 0 else 0.0
        inter = height * area
        return float(np.clip(inter / (self.volume + other.volume - inter), 0.0, 1.0))


def _average_precision_3d(gts: list[_Box3D], preds: list[_Box3D], threshold: float) -> float:
    """Lyft's ``recall_precision`` + ``get_ap`` for one class of one sample."""
    preds = sorted(preds, key=lambda box: box.score, reverse=True)
    checked = np.zeros(len(gts))
    tp, fp = np.zeros(len(preds)), np.zeros(len(preds))
    for i, pred in enumerate(preds):
        overlaps = [pred.iou(gt) for gt in gts]
        best = int(np.argmax(overlaps)) if overlaps else -1
        if overlaps and overlaps[best] > threshold and checked[best] == 0:
            tp[i] = 1.0
            checked[best] = 1
        else:
            fp[i] = 1.0
    tp, fp = np.cumsum(tp), np.cumsum(fp)
    recalls = np.concatenate(([0.0], tp / float(len(gts)), [1.0]))
    precisions = np.concatenate(([0.0], tp / np.maximum(tp + fp, np.finfo(np.float64).eps), [0.0]))
    for i in range(precisions.size - 1, 0, -1):
        precisions[i - 1] = max(precisions[i - 1], precisions[i])
    changes = np.where(recalls[1:] != recalls[:-1])[0]
    return float(np.sum((recalls[changes + 1] - recalls[changes]) * precisions[changes + 1]))


#: IoU thresholds of the Lyft 3-D detection metric.
LYFT_IOU_THRESHOLDS = (0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95)


def box3d_map_score(
    answers: pd.DataFrame,
    submission: pd.DataFrame,
    *,
    id_columns: Sequence[str],
    target_columns: Sequence[str],
    iou_thresholds: Sequence[float] = LYFT_IOU_THRESHOLDS,
) -> float:
    """3-D mAP over IoU thresholds 0.5 .. 0.95 (Lyft 3D object detection).

    Strings list ``confidence x y z width length height yaw class`` per box. For every sample
    and threshold, each class present in the sample's answers gets Lyft's average precision
    (predictions by decreasing confidence, each matched to its highest-IoU true box if that box
    is still free and the IoU exceeds the threshold; the area under the precision envelope);
    classes without predictions score 0; the sample's mAP is the mean over its classes. The
    score is the mean over samples and thresholds. IoU is the volume of the intersection of the
    boxes (footprints rotated by yaw, heights overlapping) over the volume of their union.
    Samples without any true box are left out (MLE-bench's grader averages a NaN there).

    Parameters
    ----------
    answers, submission : pandas.DataFrame
        Aligned frames whose target column holds the strings.
    iou_thresholds : sequence of float
        Thresholds averaged over.

    Returns
    -------
    float
        In [0, 1], higher is better.

    Raises
    ------
    InvalidSubmission
        For a malformed string or a box whose size is not positive.

    References
    ----------
    Lyft ``nuscenes-devkit`` ``lyft_dataset_sdk/eval/detection/mAP_evaluation.py``; Kaggle Lyft
    3D Object Detection for Autonomous Vehicles, evaluation page.
    """
    column = target_columns[0]
    numeric = (0, 1, 2, 3, 4, 5, 6, 7)
    values = []
    for position, (truth_text, pred_text) in enumerate(zip(_cells(answers[column]), _cells(submission[column]))):
        truth = _groups(truth_text, 9, numeric, where=None, what="box3d_map_score")
        preds = _groups(pred_text, 9, numeric, where=(submission, position, column), what="box3d_map_score", single_spaced=True)
        for group in preds:
            if min(group[4:7]) <= 0:
                raise invalid_cell(submission, position, column, "a box whose width, length or height is not positive")
        if not truth:
            continue
        true_boxes = [_Box3D(g) for g in truth]
        pred_boxes = [_Box3D(g) for g in preds]
        classes = sorted({box.name for box in true_boxes})
        for threshold in iou_thresholds:
            aps = []
            for name in classes:
                class_preds = [b for b in pred_boxes if b.name == name]
                class_truth = [b for b in true_boxes if b.name == name]
                aps.append(_average_precision_3d(class_truth, class_preds, threshold) if class_preds else 0.0)
            values.append(float(np.mean(aps)))
    if not values:
        raise undefined_metric("box3d_map_score", "no sample has a true box")
    return float(np.mean(values))
