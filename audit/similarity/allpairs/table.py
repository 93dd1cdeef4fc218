"""The all-pairs figures as columns: :class:`PairTable`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterator

import numpy as np

from mleaudit.audit.similarity.pair_metrics import DolosMetrics

__all__ = ["PairTable"]


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class PairTable:
    """Dolos's figures of every pair of files, as columns.

    Row ``r`` is the pair ``(left[r], right[r])`` of input positions, ``left < right``, in the
    order of a nested loop (left ascending, then right). Every column is a numpy array of one
    value per pair; the figures mean what they mean on
    :class:`~mleaudit.audit.similarity.pair_metrics.DolosMetrics`.

    Attributes
    ----------
    left, right : numpy.ndarray of int64
        Positions of the two files in the input sequence.
    similarity : numpy.ndarray of float64
        ``total_overlap / (left_total + right_total - left_ignored - right_ignored)``, in [0, 1].
    total_overlap, longest_fragment, left_covered, right_covered, left_total, right_total,
    left_ignored, right_ignored : numpy.ndarray of int64
        As on :class:`~mleaudit.audit.similarity.pair_metrics.DolosMetrics`.
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
        """Row ``row`` as a :class:`~mleaudit.audit.similarity.pair_metrics.DolosMetrics`."""
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
