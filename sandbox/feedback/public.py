"""Public facts of a competition a reply may state: the sample submission's size and what the metric needs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

#: What the metric needs in the target columns, by :attr:`PublicFacts.target_kind`
#: (:class:`mleaudit.grading.metrics.TargetKind` values); ``number`` may add the config's value range.
TARGET_KINDS: Mapping[str, str] = {
    "numeric": "numbers",
    "probability": "probabilities (numbers from 0 to 1)",
    "label": "labels of the same kind as the sample submission's",
    "text": "text in the format of the sample submission",
}


@dataclass(frozen=True, slots=True, kw_only=True)
class PublicFacts:
    """Public facts of a competition a reply may state (never read from the answers).

    Attributes
    ----------
    sample_rows : int or None
        Data rows of the public sample submission.
    target_kind : str or None
        A key of :data:`TARGET_KINDS`: what the competition's metric needs in the target
        columns (``None`` for a custom grader, whose needs are not known).
    value_range : tuple of (float, float) or None
        The closed range of the competition's config (``metric.params.value_range``).
    """

    sample_rows: int | None = None
    target_kind: str | None = None
    value_range: tuple[float, float] | None = None

    def needs(self) -> str:
        """What the metric needs, as a phrase (empty when not known).

        Returns
        -------
        str
            e.g. ``"numbers from 0 to 10"`` or ``"labels of the same kind as the sample submission's"``.
        """
        text = TARGET_KINDS.get(self.target_kind or "", "")
        if self.target_kind == "numeric" and self.value_range is not None:
            low, high = self.value_range
            text = f"numbers from {float(low):g} to {float(high):g}"
        return text
