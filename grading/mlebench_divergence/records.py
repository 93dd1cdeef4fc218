"""The records a divergence check returns: the checked grade, one divergence, the check's result."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping


#: How many triggering rows a record lists (it counts them all).
SHOWN_ROWS = 5


@dataclass(frozen=True, slots=True, kw_only=True)
class CheckedGrade:
    """The checked grade of a submission, as far as a divergence needs it.

    Attributes
    ----------
    valid : bool
        Whether the checked grade counts the submission as valid.
    score : float or None
        Its rounded score (``None`` when invalid or undefined).
    error : str or None
        Why it is invalid or has no score.
    """

    valid: bool
    score: float | None
    error: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Divergence:
    """One looseness of MLE-bench's grader that a submission triggers, and what follows.

    Attributes
    ----------
    kind : str
        A key of :data:`mleaudit.grading.spec.MLEBENCH_LOOSENESS_KINDS`.
    mlebench_does : str
        What MLE-bench's grader does (the config's ``note``).
    trigger : str
        What in this file triggers it, with the column and the first rows.
    column : str or None
        The submission column concerned, when one is.
    rows : tuple of int
        The first triggering data rows of the file (1-based, header excluded), at most
        :data:`SHOWN_ROWS`; empty when the trigger is the file as a whole.
    count : int
        How many rows, cells or ids trigger it.
    mlebench_valid : bool or None
        Whether MLE-bench would count the file as valid; ``None`` when not computed.
    mlebench_score : float or None
        MLE-bench's score for the file, rounded to 5 decimals as it rounds; ``None`` when
        invalid, undefined (NaN), infinite or not computed (``mlebench_outcome`` says which).
    mlebench_medal : str or None
        ``gold``, ``silver``, ``bronze`` or ``none`` under MLE-bench's score; ``None`` when its
        score or the leaderboard is not known.
    mlebench_outcome : str
        MLE-bench's outcome in words.
    score_basis : str
        ``exact`` (emulated with this project's metric), ``approximate`` (the note says what
        differs) or ``not computed: <why>``.
    checked_valid : bool
        Whether the checked grade counts the file as valid.
    checked_score : float or None
        The checked score.
    checked_medal : str or None
        The checked grade's medal (``None`` without a leaderboard).
    checked_outcome : str
        The checked grade in words.
    medal_only_under_mlebench : bool
        MLE-bench's grader would give a better medal than the checked grade (a medal where the
        checked grade gives none, or where the checked grade calls the file invalid).
    difference : str
        One line: MLE-bench's outcome against the checked grade.
    """

    kind: str
    mlebench_does: str
    trigger: str
    column: str | None
    rows: tuple[int, ...]
    count: int
    mlebench_valid: bool | None
    mlebench_score: float | None
    mlebench_medal: str | None
    mlebench_outcome: str
    score_basis: str
    checked_valid: bool
    checked_score: float | None
    checked_medal: str | None
    checked_outcome: str
    medal_only_under_mlebench: bool
    difference: str

    def to_dict(self) -> dict[str, Any]:
        """The fields as a JSON-ready dict (``rows`` as a list)."""
        return {
            "kind": self.kind,
            "mlebench_does": self.mlebench_does,
            "trigger": self.trigger,
            "column": self.column,
            "rows": list(self.rows),
            "count": self.count,
            "mlebench_valid": self.mlebench_valid,
            "mlebench_score": self.mlebench_score,
            "mlebench_medal": self.mlebench_medal,
            "mlebench_outcome": self.mlebench_outcome,
            "score_basis": self.score_basis,
            "checked_valid": self.checked_valid,
            "checked_score": self.checked_score,
            "checked_medal": self.checked_medal,
            "checked_outcome": self.checked_outcome,
            "medal_only_under_mlebench": self.medal_only_under_mlebench,
            "difference": self.difference,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "Divergence":
        """Rebuild a record from :meth:`to_dict` output."""
        return cls(**{**data, "rows": tuple(data.get("rows", ()))})


@dataclass(frozen=True, slots=True, kw_only=True)
class DivergenceCheck:
    """What :func:`find_mlebench_divergences` found for one submission.

    Attributes
    ----------
    records : tuple of Divergence
        One per looseness the file triggers whose outcome differs from the checked grade, in
        the order of the competition's config.
    skipped : str or None
        Why the file could not be checked (unreadable, no answers); ``None`` when it was.
    """

    records: tuple[Divergence, ...] = ()
    skipped: str | None = None
