"""The typed records a competition's config becomes: its looseness entries, its metric, the competition."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping

from mleaudit.grading.spec.schema import CELL_KINDS, CONFIG_FILE


# The metrics load scikit-learn, SciPy and pandas: imported where a metric is looked up, so that
# the spec's constants (AUDIT_POLICY_KEYS, file names) come without them.
if TYPE_CHECKING:
    from mleaudit.grading.metrics import Metric, TargetKind


@dataclass(frozen=True, slots=True, kw_only=True)
class Looseness:
    """One way MLE-bench's grader for a competition is looser than this project's grading.

    An entry of ``mlebench_looseness`` in ``config.yaml``; :mod:`mleaudit.grading.mlebench_divergence`
    finds submissions that trigger it.

    Attributes
    ----------
    kind : str
        A key of :data:`MLEBENCH_LOOSENESS_KINDS`.
    note : str
        One line naming what the grader does, for a reviewer.
    score : str
        ``exact``, ``approximate`` or ``none``: how far MLE-bench's score for a triggering file
        can be reproduced with this project's metric (:data:`LOOSENESS_SCORES`).
    within : str or None
        ``positional_rows``: rows are paired by position within each value of this column.
    mask_by_position : str or None
        ``sorted_rows``: the answers' boolean column MLE-bench applies to the submission by
        file position.
    pairing : str or None
        ``duplicate_ids_accepted``: ``merge``, ``sorted`` or ``pool``.
    columns : tuple of str
        ``nan_inf_coerced``, ``labels_truncated``, ``odd_rle_accepted``: the submission columns
        it applies to (empty: every target column).
    fill : mapping
        ``nan_inf_coerced``: cell kind (:data:`CELL_KINDS`) to the value MLE-bench turns it into
        (``None``: accepted, not emulated).
    whole_score : mapping
        ``nan_inf_coerced``: cell kind to the score MLE-bench then gives the whole file (NaN:
        valid, no score).
    """

    kind: str
    note: str
    score: str = "exact"
    within: str | None = None
    mask_by_position: str | None = None
    pairing: str | None = None
    columns: tuple[str, ...] = ()
    fill: Mapping[str, float | str | None] = field(default_factory=dict)
    whole_score: Mapping[str, float] = field(default_factory=dict)

    @property
    def cell_kinds(self) -> tuple[str, ...]:
        """``nan_inf_coerced``: the kinds of cell MLE-bench accepts, in :data:`CELL_KINDS` order."""
        return tuple(k for k in CELL_KINDS if k in self.fill or k in self.whole_score)

    def to_dict(self) -> dict[str, Any]:
        """The entry as in ``config.yaml`` (options that are not set left out)."""
        out: dict[str, Any] = {"kind": self.kind, "note": self.note, "score": self.score}
        for key in ("within", "mask_by_position", "pairing"):
            if getattr(self, key) is not None:
                out[key] = getattr(self, key)
        if self.columns:
            out["columns"] = list(self.columns)
        if self.fill:
            out["fill"] = dict(self.fill)
        if self.whole_score:
            out["whole_score"] = {k: _json_number(v) for k, v in self.whole_score.items()}
        return out


def _json_number(value: float) -> float | str:
    """A float for JSON: NaN and infinities as the strings ``nan``, ``inf``, ``-inf``."""
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return value


@dataclass(frozen=True, slots=True, kw_only=True)
class MetricSpec:
    """How a competition is scored.

    Attributes
    ----------
    name : str
        A key of :data:`mleaudit.grading.metrics.METRICS`, or a label for a custom grader.
    higher_is_better : bool
        Declared direction (the leaderboard is only used to cross-check it).
    params : dict
        Keyword parameters passed to the built-in metric.
    grader : callable, optional
        ``grade(submission: DataFrame, answers: DataFrame) -> float`` from the competition's
        ``grade.py``, used instead of a built-in metric when set.
    """

    name: str
    higher_is_better: bool
    params: Mapping[str, Any] = field(default_factory=dict)
    grader: Callable[..., float] | None = None

    @property
    def metric(self) -> Metric | None:
        """The built-in metric, or ``None`` when a custom grader scores this competition."""
        from mleaudit.grading.metrics import METRICS

        return None if self.grader is not None else METRICS[self.name]

    @property
    def target_kind(self) -> TargetKind:
        """What validation must ensure about predictions (labels for custom graders)."""
        from mleaudit.grading.metrics import TargetKind

        metric = self.metric
        return metric.target_kind if metric is not None else TargetKind.LABEL


@dataclass(frozen=True, slots=True, kw_only=True)
class CompetitionSpec:
    """A competition: its metric, data layout, leaderboard, preparation and audit policy.

    Attributes
    ----------
    id : str
        Kaggle slug, equal to the folder name.
    name : str
        Human-readable title.
    root : pathlib.Path
        The competition folder.
    metric : MetricSpec
        How submissions are scored.
    id_column : str
        Column that identifies a test row in answers and submissions.
    target_columns : tuple of str
        Predicted columns.
    answers, sample_submission : str
        POSIX paths relative to the prepared-data dir (MLE-bench's form).
    raw_files : tuple of str
        Kaggle files ``prepare`` reads from the raw dir (empty when the data ships in a package).
    leaderboard_path : pathlib.Path
        The leaderboard CSV.
    leaderboard_source : str
        One of :data:`LEADERBOARD_SOURCES`.
    kernels_dir : str
        Reference-notebook folder, relative to ``root``.
    kernel_refs : tuple of str
        Top public notebooks of the competition as ``owner/slug``, from ``kernels_list``
        (empty when the config names no list).
    awards_medals : bool
        Whether Kaggle awarded medals in this competition (MLE-bench's flag; grades still
        report the medal a score would have earned).
    competition_type : str
        One of :data:`COMPETITION_TYPES`, or empty when not declared.
    splits : tuple of str
        MLE-bench splits the competition belongs to (``low``, ``medium``, ``high``, ``dev``,
        ``split75`` ...).
    prepare : callable, optional
        ``prepare(raw, public, private)`` from ``prepare.py``.
    checksums : dict, optional
        ``{"public": {file: md5}, "private": {...}, "raw": {...}}`` from checksums.yaml.
    audit : dict
        Audit policy: ``allow_urls``, ``public_data_dirs``, ``boilerplate``,
        ``label_leak_columns`` (tuples of str; every key of :data:`AUDIT_POLICY_KEYS` is present).
    description : str
        Optional free text.
    leaderboard_note : str
        Where the leaderboard comes from, in words.
    mlebench_looseness : tuple of Looseness, optional
        Where MLE-bench's grader for this competition is looser than this project's grading
        (``()`` where it is strict); ``None`` when the config does not say (competitions that
        are not MLE-bench's).
    """

    id: str
    name: str
    root: Path
    metric: MetricSpec
    id_column: str
    target_columns: tuple[str, ...]
    answers: str
    sample_submission: str
    raw_files: tuple[str, ...] = ()
    leaderboard_path: Path
    leaderboard_source: str
    kernels_dir: str
    kernel_refs: tuple[str, ...] = ()
    awards_medals: bool = True
    competition_type: str = ""
    splits: tuple[str, ...] = ()
    prepare: Callable[..., None] | None = None
    checksums: Mapping[str, Mapping[str, str]] | None = None
    audit: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    description: str = ""
    leaderboard_note: str = ""
    mlebench_looseness: tuple[Looseness, ...] | None = None

    @property
    def config_path(self) -> Path:
        """The competition's config.yaml."""
        return self.root / CONFIG_FILE

    @property
    def kernels_path(self) -> Path:
        """Absolute reference-notebook folder (it may not exist)."""
        return self.root / self.kernels_dir

    @property
    def is_embedded(self) -> bool:
        """Whether ``prepare`` needs no Kaggle files (its data ships inside a package)."""
        return self.prepare is not None and not self.raw_files

    @property
    def has_leaderboard(self) -> bool:
        """Whether a leaderboard snapshot is declared available (medals can be awarded)."""
        return self.leaderboard_source != "unavailable"

    def answers_path(self, data_dir: Path) -> Path:
        """Where the private answers live under ``data_dir``."""
        return Path(data_dir) / self.answers

    def sample_submission_path(self, data_dir: Path) -> Path:
        """Where the public sample submission lives under ``data_dir``."""
        return Path(data_dir) / self.sample_submission

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready summary (callables shown by reference, paths as strings)."""
        return {
            "id": self.id,
            "name": self.name,
            "description": self.description,
            "root": str(self.root),
            "metric": {
                "name": self.metric.name,
                "higher_is_better": self.metric.higher_is_better,
                "params": dict(self.metric.params),
                "custom_grader": self.metric.grader is not None,
            },
            "id_column": self.id_column,
            "target_columns": list(self.target_columns),
            "answers": self.answers,
            "sample_submission": self.sample_submission,
            "raw_files": list(self.raw_files),
            "leaderboard_path": str(self.leaderboard_path),
            "leaderboard_source": self.leaderboard_source,
            "leaderboard_note": self.leaderboard_note,
            "kernels_dir": self.kernels_dir,
            "kernel_refs": list(self.kernel_refs),
            "awards_medals": self.awards_medals,
            "competition_type": self.competition_type,
            "splits": list(self.splits),
            "has_prepare": self.prepare is not None,
            "has_checksums": self.checksums is not None,
            "audit": {key: list(value) for key, value in self.audit.items()},
            "mlebench_looseness": (None if self.mlebench_looseness is None
                                   else [entry.to_dict() for entry in self.mlebench_looseness]),
        }
