"""Scoring options: how rows are matched and filtered, split off a metric's parameters."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from mleaudit.grading.errors import ConfigError
from mleaudit.grading.metrics import SCORING_PARAMS, Metric, TargetKind
from mleaudit.grading.validation.keys import _as_tuple
from mleaudit.grading.validation.messages import _quote_list


@dataclass(frozen=True, slots=True, kw_only=True)
class ScoringOptions:
    """How the scoring path matches and filters rows before a metric runs.

    Built by :func:`scoring_options` from a metric, the competition's columns and the
    ``metric.params`` of its config (see :data:`mleaudit.grading.metrics.SCORING_PARAMS`).

    Attributes
    ----------
    id_columns : tuple of str
        Columns that together identify a row.
    target_columns : tuple of str
        Predicted columns, as named in the submission.
    answer_columns : mapping
        ``{target column: answers column}`` for targets the answers name differently.
    unscored_columns : tuple of str
        Columns the submission must have that are not scored.
    extra_columns : str
        ``"error"`` or ``"ignore"`` for columns beyond the id, target and unscored ones.
    column_order : str
        ``"any"``, ``"id_first"`` (the id columns lead, in their order) or ``"as_listed"`` (the
        header is exactly the id, target and unscored columns, in that order).
    extra_ids : str
        ``"error"`` or ``"ignore"`` for submission ids that are not test ids.
    id_match : str
        ``"exact"`` (ids compared as text) or ``"number"`` (ids of two number columns compared by
        value, see :func:`ids_by_number`).
    missing_values : str or None
        ``None`` (the metric decides), ``"error"`` (missing cells are rejected even where the
        metric allows empty text) ``"nan_text"`` (missing label and text cells are the text
        ``"nan"`` in both files), ``"empty_text"`` (missing label cells are empty text, scored
        wrong) or ``"error_if_all"`` (a column with every cell missing is rejected).
    repeated_ids : str
        ``"error"``, or ``"in_order"`` where a test id may stand on several rows, paired by
        occurrence (see :func:`check_ids_in_order`).
    row_mask : tuple of (str, object), optional
        Only answer rows whose column equals the value are scored (differs from it, where
        ``row_mask_equals`` is false).
    row_mask_equals : bool
        ``row_mask`` keeps the rows equal to its value (``equals:``) or those that differ
        (``not_equals:``).
    value_range : tuple of (float, float), optional
        Closed range numeric predictions must lie in.
    row_sum_tolerance : float, optional
        Several probability columns must sum to 1 within this.
    column_aliases : mapping of str to str
        Target column -> another name the submission may give it (where the target column
        itself is absent; a file with both is rejected).
    """

    id_columns: tuple[str, ...]
    target_columns: tuple[str, ...]
    answer_columns: Mapping[str, str] = field(default_factory=dict)
    unscored_columns: tuple[str, ...] = ()
    extra_columns: str = "error"
    column_order: str = "any"
    extra_ids: str = "error"
    id_match: str = "exact"
    missing_values: str | None = None
    repeated_ids: str = "error"
    row_mask: tuple[str, Any] | None = None
    row_mask_equals: bool = True
    value_range: tuple[float, float] | None = None
    row_sum_tolerance: float | None = None
    column_aliases: Mapping[str, str] = field(default_factory=dict)

    @property
    def answer_target_columns(self) -> tuple[str, ...]:
        """The targets as the answer file names them."""
        return tuple(self.answer_columns.get(c, c) for c in self.target_columns)


#: What ``str()`` makes of a missing cell pandas read (``float("nan")``): the label such a cell
#: takes under ``missing_values: nan_text``.
NAN_TEXT = "nan"
#: Values of the ``missing_values`` metric parameter (see ``mleaudit.grading.metrics.base``).
MISSING_VALUE_MODES = (None, "error", "nan_text", "empty_text", "error_if_all")

#: Values of the ``column_order`` scoring parameter.
COLUMN_ORDERS = ("any", "id_first", "as_listed")


def _string_list(value: Any, name: str, where: str) -> tuple[str, ...]:
    if isinstance(value, str) or not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{where}: metric parameter {name!r} must be a list of column names")
    return tuple(value)


def scoring_options(
    metric: Metric,
    *,
    id_column: str | Sequence[str],
    target_columns: Sequence[str],
    params: Mapping[str, Any] | None = None,
) -> tuple[ScoringOptions, dict[str, Any]]:
    """Split a metric's parameters into scoring options and the function's own parameters.

    Parameters
    ----------
    metric : Metric
        The registry entry; its ``defaults`` apply unless ``params`` overrides them.
    id_column : str or sequence of str
        The competition's id column(s); the ``id_columns`` parameter replaces them.
    target_columns : sequence of str
        The competition's predicted columns.
    params : mapping, optional
        ``metric.params`` from the competition config.

    Returns
    -------
    options : ScoringOptions
    own_params : dict
        What remains, passed to the scoring function.

    Raises
    ------
    ConfigError
        If a scoring parameter has the wrong shape or a parameter is unknown.
    """
    where = f"metric {metric.name!r}"
    merged = {**metric.defaults, **(params or {})}
    unknown = sorted(map(str, set(merged) - set(metric.param_names)))
    if unknown:
        raise ConfigError(f"{where}: unknown parameter(s) {_quote_list(unknown)} (it takes: {', '.join(metric.param_names)})")
    scoring = {k: merged.pop(k) for k in SCORING_PARAMS if k in merged}
    id_columns = _as_tuple(id_column)
    if "id_columns" in scoring:
        id_columns = _string_list(scoring["id_columns"], "id_columns", where)
        if not id_columns:
            raise ConfigError(f"{where}: metric parameter 'id_columns' must name at least one column")
    answer_columns = scoring.get("answer_columns", {})
    if not isinstance(answer_columns, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in answer_columns.items()
    ):
        raise ConfigError(f"{where}: metric parameter 'answer_columns' must map target columns to answer columns")
    extra_columns = scoring.get("extra_columns", "error")
    if extra_columns not in ("error", "ignore"):
        raise ConfigError(f"{where}: metric parameter 'extra_columns' must be 'error' or 'ignore', not {extra_columns!r}")
    column_order = scoring.get("column_order", "any")
    if column_order not in COLUMN_ORDERS:
        raise ConfigError(
            f"{where}: metric parameter 'column_order' must be one of {_quote_list(COLUMN_ORDERS)}, not {column_order!r}"
        )
    if column_order == "as_listed" and extra_columns == "ignore":
        raise ConfigError(f"{where}: metric parameter 'column_order: as_listed' admits no extra columns to ignore")
    extra_ids = scoring.get("extra_ids", "error")
    if extra_ids not in ("error", "ignore"):
        raise ConfigError(f"{where}: metric parameter 'extra_ids' must be 'error' or 'ignore', not {extra_ids!r}")
    id_match = scoring.get("id_match", "exact")
    if id_match not in ("exact", "number"):
        raise ConfigError(f"{where}: metric parameter 'id_match' must be 'exact' or 'number', not {id_match!r}")
    missing_values = scoring.get("missing_values")
    if missing_values not in MISSING_VALUE_MODES:
        modes = ", ".join(repr(m) for m in MISSING_VALUE_MODES if m is not None)
        raise ConfigError(f"{where}: metric parameter 'missing_values' must be one of {modes}, not {missing_values!r}")
    if missing_values in ("nan_text", "empty_text") and metric.target_kind not in (TargetKind.LABEL, TargetKind.TEXT):
        raise ConfigError(
            f"{where}: metric parameter 'missing_values: {missing_values}' applies to label and text targets only"
        )
    if missing_values == "error_if_all" and not (metric.target_kind is TargetKind.TEXT and metric.allow_missing):
        raise ConfigError(
            f"{where}: metric parameter 'missing_values: error_if_all' applies to text targets that may be empty only"
        )
    repeated_ids = scoring.get("repeated_ids", "error")
    if repeated_ids not in ("error", "in_order"):
        raise ConfigError(f"{where}: metric parameter 'repeated_ids' must be 'error' or 'in_order', not {repeated_ids!r}")
    row_mask = None
    row_mask_equals = True
    if "row_mask" in scoring:
        mask = scoring["row_mask"]
        if (
            not isinstance(mask, Mapping)
            or set(mask) not in ({"column", "equals"}, {"column", "not_equals"})
            or not isinstance(mask["column"], str)
        ):
            raise ConfigError(
                f"{where}: metric parameter 'row_mask' must be {{column: <answers column>, equals: <value>}} "
                "or {column: <answers column>, not_equals: <value>}"
            )
        row_mask_equals = "equals" in mask
        row_mask = (mask["column"], mask["equals"] if row_mask_equals else mask["not_equals"])
    value_range = None
    if "value_range" in scoring:
        bounds = scoring["value_range"]
        if (
            not isinstance(bounds, (list, tuple))
            or len(bounds) != 2
            or not all(isinstance(b, (int, float)) and not isinstance(b, bool) for b in bounds)
            or bounds[0] > bounds[1]
        ):
            raise ConfigError(f"{where}: metric parameter 'value_range' must be [low, high] with low <= high")
        value_range = (float(bounds[0]), float(bounds[1]))
    column_aliases = scoring.get("column_aliases", {})
    if (
        not isinstance(column_aliases, Mapping)
        or not all(isinstance(k, str) and isinstance(v, str) for k, v in column_aliases.items())
        or not set(column_aliases) <= set(target_columns)
    ):
        raise ConfigError(f"{where}: metric parameter 'column_aliases' must map target columns to other column names")
    tolerance = scoring.get("row_sum_tolerance")
    if tolerance is not None and (not isinstance(tolerance, (int, float)) or isinstance(tolerance, bool) or tolerance < 0):
        raise ConfigError(f"{where}: metric parameter 'row_sum_tolerance' must be a number >= 0")
    options = ScoringOptions(
        id_columns=id_columns,
        target_columns=tuple(target_columns),
        answer_columns=dict(answer_columns),
        unscored_columns=_string_list(scoring.get("unscored_columns", []), "unscored_columns", where),
        extra_columns=extra_columns,
        column_order=column_order,
        extra_ids=extra_ids,
        id_match=id_match,
        missing_values=missing_values,
        repeated_ids=repeated_ids,
        row_mask=row_mask,
        row_mask_equals=row_mask_equals,
        value_range=value_range,
        row_sum_tolerance=None if tolerance is None else float(tolerance),
        column_aliases=dict(column_aliases),
    )
    return options, merged
