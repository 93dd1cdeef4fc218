"""The metric record, the kinds of predicted values, and the helpers metrics share.

A :class:`Metric` wraps one scoring function in one of two flavours:

- *array* metrics, ``fn(y_true, y_pred, **params) -> float``, get the answers and the
  predictions as arrays aligned row by row (1-D for one target column, ``(n_rows, n_targets)``
  for several), after validation has checked every predicted value;
- *frame* metrics, ``fn(answers, submission, *, id_columns, target_columns, **params) -> float``,
  get both tables aligned by id: ``answers`` holds every column of the answer file (image sizes,
  identity subgroups, weights, ``Usage`` ...) with a fresh index, ``submission`` holds the id and
  target columns in answer order, and its index is each row's 0-based position in the
  submission file, so a metric that parses a cell (a run-length mask, a box list) can name the
  row at fault with :func:`invalid_cell`.

Registry names follow the naming rule of the package: ``*_score`` is higher-is-better,
``*_error`` and ``*_loss`` are lower-is-better. MLE-bench's grader labels (``auc-roc``,
``MAP@12`` ...) are registered as aliases of these functions, with the parameters that reproduce
MLE-bench's grader for the competitions that use the label.
"""

from __future__ import annotations

import enum
import inspect
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

import numpy as np
import pandas as pd

from mleaudit.grading.errors import ConfigError, InvalidSubmission

__all__ = [
    "TargetKind",
    "Metric",
    "SCORING_PARAMS",
    "FRAME_ARGUMENTS",
    "describe_row",
    "in_answer_order",
    "invalid_cell",
    "require_answer_columns",
    "undefined_metric",
    "PredictionError",
    "bad_prediction",
]


class TargetKind(enum.Enum):
    """What a metric needs in the submission's target columns."""

    #: Class labels, compared for equality with the answers (bool, int or text).
    LABEL = "label"
    #: Finite real numbers.
    NUMERIC = "numeric"
    #: Finite real numbers in [0, 1].
    PROBABILITY = "probability"
    #: Text read verbatim from the CSV (label lists, sentences, run-length masks, box lists);
    #: the metric parses it and rejects malformed cells itself.
    TEXT = "text"


#: Parameters every metric accepts in ``metric.params``; the scoring path applies them before
#: the metric runs (see :func:`mleaudit.grading.grade.score_frames`):
#:
#: - ``id_columns``: list of columns that together identify a row, when one id column is not
#:   enough (``[tripId, UnixTimeMillis]``); they replace the competition's ``id_column``.
#: - ``answer_columns``: ``{target column: answers column}`` when the answer file names a target
#:   differently from the submission (``{prediction: toxicity}``).
#: - ``unscored_columns``: columns the submission must have but that are not scored.
#: - ``extra_columns``: ``"error"`` (default) or ``"ignore"``: columns beyond the id, target and
#:   unscored ones are left out instead of rejected (MLE-bench graders that read only the
#:   columns they score accept a submission that keeps, or drops, the sample's other columns).
#: - ``column_order``: ``"any"`` (default), ``"id_first"`` or ``"as_listed"``: whether the
#:   submission's columns may come in any order, must start with the id column(s), or must be
#:   exactly the id, target and unscored columns in the config's order (MLE-bench graders that
#:   read columns by position: Spooky's takes every column after the first as a class, Freesound's
#:   compares the header with its class list).
#: - ``id_match``: ``"exact"`` (default) or ``"number"``: ids are compared as text, or, where both
#:   id columns hold only numbers, by the number they spell (``"00002"``, ``"2"`` and ``"2.0"`` are
#:   one id), as MLE-bench's graders compare ids that pandas reads as numbers.
#: - ``missing_values``: what an empty or missing-looking cell (``""``, ``"NA"``, ``"None"``,
#:   ``"null"`` ...: what pandas reads as missing) in a target column is. By default the metric
#:   says: an error, or empty text where a text metric allows it (an empty mask or box list).
#:   ``"error"`` rejects it even there (MLE-bench graders that fail on a NaN cell);
#:   ``"nan_text"`` takes it as the text ``"nan"`` in both files of a label or text column, as
#:   MLE-bench's graders that compare ``astype(str)`` labels or strings take it; ``"empty_text"``
#:   takes it as empty text, a label no answer has (MLE-bench's ``fillna("")``: the row is scored
#:   wrong); ``"error_if_all"`` keeps the metric's empty prediction for a missing cell but rejects a
#:   column with every cell missing (pandas then reads the column as numbers, NaN, which
#:   scikit-learn refuses in MLE-bench's grader).
#: - ``extra_ids``: ``"error"`` (default) or ``"ignore"``: submission rows whose id is not a test
#:   id are dropped instead of rejected (a sample submission covering more ids than are scored).
#: - ``repeated_ids``: ``"error"`` (default) or ``"in_order"``: a test id may stand on several
#:   rows (a comment posted twice); the submission must have it on as many rows, and the k-th of
#:   them is paired with the test set's k-th, in file order.
#: - ``row_mask``: ``{column: <answers column>, equals: <value>}``: only answer rows where the
#:   column equals the value are scored (Kaggle's "the expiratory phase is not scored");
#:   ``{column: ..., not_equals: <value>}`` scores the rows where it differs (Kaggle's ``-1``
#:   marking a test row left unscored). A submission's cells in rows left out are never read.
#: - ``value_range``: ``[low, high]``: numeric predictions must lie in this closed range.
#: - ``column_aliases``: ``{target: alias}``: a submission without the target column may give it
#:   under the alias (jigsaw-unintended's grader takes ``toxicity`` for ``prediction``, so the
#:   answers file itself is a submission); a file with both is rejected, as that grader fails on it.
#: - ``row_sum_tolerance``: with several probability columns, each row must sum to 1 within this
#:   absolute tolerance.
SCORING_PARAMS = (
    "answer_columns",
    "column_aliases",
    "column_order",
    "extra_columns",
    "extra_ids",
    "id_columns",
    "id_match",
    "missing_values",
    "repeated_ids",
    "row_mask",
    "row_sum_tolerance",
    "unscored_columns",
    "value_range",
)

#: Keyword arguments the scoring path itself gives a frame metric.
FRAME_ARGUMENTS = ("id_columns", "target_columns")


@dataclass(frozen=True, slots=True, kw_only=True)
class Metric:
    """A registered scoring function and what it needs.

    Attributes
    ----------
    name : str
        Registry key, used as ``metric.name`` in a competition's config.yaml.
    fn : callable
        Array flavour ``fn(y_true, y_pred, **params) -> float`` or frame flavour
        ``fn(answers, submission, *, id_columns, target_columns, **params) -> float``.
    higher_is_better : bool
        Direction of the score.
    target_kind : TargetKind
        What validation must ensure about the predicted values.
    best : float
        The score of a perfect submission.
    frame : bool
        Whether ``fn`` is a frame metric.
    defaults : mapping
        Parameters this entry passes unless the config overrides them (label aliases use them
        to reproduce MLE-bench's grader, e.g. ``k: 12`` for ``MAP@12``).
    alias_of : str, optional
        For an MLE-bench label, the name of the function's own registry entry.
    allow_missing : bool
        Empty cells in target columns are legal and read as empty text (an empty mask, an empty
        box list, an empty answer); otherwise they are rejected.
    repeated_answer_ids : bool
        The answer file has several rows per id (one row per box); submissions still have one.
    targets_in_answers : bool
        Every target column has a column of answers (false when a target, like a confidence,
        has no true value).
    any_row_order : bool
        A frame metric that computes one value per row and reduces them itself in the order of
        ``answers.index`` (each row's place in answer order; see :func:`in_answer_order`), so
        the scoring path may hand it a shuffled submission's rows in file order with the
        answers reordered to match, instead of reordering the (often larger) submission.
    undefined_on_missing : bool
        A missing or infinite prediction makes the score undefined (NaN) instead of the
        submission invalid: SciPy's correlations return NaN for such input, and MLE-bench
        counts a NaN score as a valid submission with no score
        (:class:`~mleaudit.grading.errors.UndefinedScore`).
    infinite_ranked : bool
        With ``undefined_on_missing``: an infinite prediction is no undefined score but the
        highest (``inf``) or lowest (``-inf``) rank, as :func:`scipy.stats.spearmanr` ranks it
        (MLE-bench's Google QUEST grader scores such a file).
    """

    name: str
    fn: Callable[..., float]
    higher_is_better: bool
    target_kind: TargetKind
    best: float
    frame: bool = False
    defaults: Mapping[str, Any] = field(default_factory=dict)
    alias_of: str | None = None
    allow_missing: bool = False
    repeated_answer_ids: bool = False
    targets_in_answers: bool = True
    any_row_order: bool = False
    undefined_on_missing: bool = False
    infinite_ranked: bool = False

    @property
    def own_param_names(self) -> tuple[str, ...]:
        """Keyword parameters of the scoring function itself."""
        params = list(inspect.signature(self.fn).parameters.values())
        names = [p.name for p in params[2:] if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
        return tuple(n for n in names if n not in FRAME_ARGUMENTS)

    @property
    def param_names(self) -> tuple[str, ...]:
        """Names a config may set under ``metric.params``: the function's, then :data:`SCORING_PARAMS`."""
        return self.own_param_names + SCORING_PARAMS

    def __call__(self, y_true: Any, y_pred: Any, **params: Any) -> float:
        """Score with this entry's own defaults, overridden by ``params``; see the wrapped function.

        Scoring parameters among the defaults (``id_columns``, ``row_mask`` ...) act in the
        scoring path, :func:`mleaudit.grading.grade.score_frames`, and are not passed here.
        """
        own = {k: v for k, v in self.defaults.items() if k not in SCORING_PARAMS}
        return float(self.fn(y_true, y_pred, **{**own, **params}))


def in_answer_order(values: np.ndarray, answers: pd.DataFrame) -> np.ndarray:
    """Per-row values of aligned frames, put in answer order before they are reduced.

    Frames are in answer order (``answers.index`` is ``0 .. n - 1``), or, for a metric with
    ``any_row_order``, possibly in the submission's file order with ``answers.index`` holding
    each row's place in answer order. Reducing the values in answer order gives a score that
    does not depend, to the last bit, on how the submission ordered its rows.

    Parameters
    ----------
    values : numpy.ndarray, shape (n_rows,)
        One value per row of the frames, in their order.
    answers : pandas.DataFrame
        The aligned answers.

    Returns
    -------
    numpy.ndarray, shape (n_rows,)
        ``values`` in answer order (the same array when already so).
    """
    index = answers.index
    if isinstance(index, pd.RangeIndex) and index.start == 0 and index.step == 1:
        return values
    ordered = np.empty_like(values)
    ordered[index.to_numpy()] = values
    return ordered


def _id_text(submission: pd.DataFrame, position: int) -> str:
    id_columns = submission.attrs.get("id_columns") or [submission.columns[0]]
    values = [str(submission[c].iloc[position]) for c in id_columns]
    return repr(values[0]) if len(values) == 1 else repr(tuple(values))


def describe_row(submission: pd.DataFrame, position: int) -> str:
    """Name a row of an aligned submission the way validation messages do.

    Parameters
    ----------
    submission : pandas.DataFrame
        An id-aligned submission as a frame metric receives it (index = 0-based row in the file).
    position : int
        0-based position in ``submission`` (answer order).

    Returns
    -------
    str
        ``"row 7 (id 'abc')"``: the 1-based row of the submission file and the row's id.
    """
    return f"row {int(submission.index[position]) + 1} (id {_id_text(submission, position)})"


def submission_row(submission: pd.DataFrame, position: int) -> int:
    """The 1-based data row of the submission file of an aligned row (what :func:`describe_row` names).

    Parameters
    ----------
    submission : pandas.DataFrame
        An id-aligned submission (index = 0-based row in the file).
    position : int
        0-based position in ``submission`` (answer order).

    Returns
    -------
    int
        The row of the submission file, counted from 1 over data rows (header excluded).
    """
    return int(submission.index[position]) + 1


def invalid_cell(
    submission: pd.DataFrame, position: int, column: str, problem: str, *, reason: str = "bad-value"
) -> InvalidSubmission:
    """Build the error for a cell a metric cannot parse.

    Parameters
    ----------
    submission : pandas.DataFrame
        The aligned submission (see :func:`describe_row`).
    position : int
        0-based position of the row in ``submission``.
    column : str
        The column of the cell.
    problem : str
        What is wrong, e.g. ``"a run-length mask with an odd number of values"``.
    reason : str, keyword-only
        The code of :data:`mleaudit.grading.errors.REASONS` (default ``"bad-value"``).

    Returns
    -------
    InvalidSubmission
        With the message ``Submission column 'c' has <problem> at row N (id 'x').``
    """
    return InvalidSubmission(f"Submission column {column!r} has {problem} at {describe_row(submission, position)}.",
                             reason=reason, column=column, row=submission_row(submission, position))


def require_answer_columns(answers: pd.DataFrame, columns: Sequence[str], *, metric: str) -> None:
    """Check the answer file has the columns a metric reads.

    Raises
    ------
    ConfigError
        Naming the missing columns: the answer key (or the competition config) is wrong, which
        is not the submission's fault.
    """
    missing = [c for c in columns if c not in answers.columns]
    if missing:
        raise ConfigError(
            f"{metric}: the answers have no column(s) {', '.join(map(repr, missing))} "
            f"(answer columns: {', '.join(map(repr, map(str, answers.columns)))})"
        )


def undefined_metric(metric: str, why: str) -> ConfigError:
    """The error for answers on which a metric is undefined (e.g. AUC with a single class)."""
    return ConfigError(f"{metric} is undefined on these answers: {why}")


class PredictionError(Exception):
    """A predicted value an array metric cannot score, located in answer order.

    Array metrics see predictions in answer order and cannot name the submission row; they
    raise this (through :func:`bad_prediction`) and the scoring path turns it into an
    :class:`~mleaudit.grading.errors.InvalidSubmission` naming the column, the submission row and its id.

    Attributes
    ----------
    position : int
        0-based row in answer order (after any row mask).
    column : int
        0-based index of the target column.
    problem : str
        What is wrong with the value, e.g. ``"-1.5, which is not greater than -1"``.
    """

    def __init__(self, position: int, column: int, problem: str) -> None:
        super().__init__(problem)
        self.position = position
        self.column = column
        self.problem = problem


def bad_prediction(bad: np.ndarray, values: np.ndarray, what: str) -> PredictionError:
    """Build the error for the first flagged prediction.

    Parameters
    ----------
    bad : numpy.ndarray of bool
        Shape ``(n_rows,)`` or ``(n_rows, n_targets)``: which predictions are unusable.
    values : numpy.ndarray
        The predictions, same shape.
    what : str
        The rule they break, e.g. ``"which is not greater than -1"``.
    """
    bad2, values2 = as_matrix(bad), as_matrix(values)
    row, column = (int(i) for i in np.argwhere(bad2)[0])
    value = values2[row, column]
    value = value.item() if isinstance(value, np.generic) else value
    return PredictionError(row, column, f"{value!r}, {what}")


def as_matrix(y: np.ndarray) -> np.ndarray:
    """View a 1-D array as one column; return 2-D arrays unchanged."""
    y = np.asarray(y)
    return y[:, None] if y.ndim == 1 else y
