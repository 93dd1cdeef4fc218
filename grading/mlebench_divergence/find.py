"""Finding the divergences of one submission: each looseness emulated, the outcomes compared."""

from __future__ import annotations

import logging
import math
import os
from typing import Mapping

import pandas as pd

from mleaudit.grading.errors import GradingError, InvalidSubmission, UndefinedScore
from mleaudit.grading.medals import Medal, MedalThresholds
from mleaudit.grading.mlebench_divergence.cells import _nan_inf, _odd_rle, _positional_columns, _truncated_labels
from mleaudit.grading.mlebench_divergence.emulation import _Emulation
from mleaudit.grading.mlebench_divergence.outcome import _checked_grade, _medal, _outcome_text, _rounded, _thresholds
from mleaudit.grading.mlebench_divergence.pairing import _emulated_frames, _pairing
from mleaudit.grading.mlebench_divergence.records import SHOWN_ROWS, CheckedGrade, Divergence, DivergenceCheck
from mleaudit.grading.spec import CompetitionSpec, Looseness

# The package's logger, under the package's name.
logger = logging.getLogger(__package__)


_MEDAL_RANK = {Medal.NONE: 0, Medal.BRONZE: 1, Medal.SILVER: 2, Medal.GOLD: 3}
#: Kinds that change which answer row a submission row is scored against.
_PAIRING_KINDS = ("positional_rows", "sorted_rows", "duplicate_ids_accepted", "missing_rows_accepted")


def _scoring_setup(spec: CompetitionSpec) -> tuple[tuple[str, ...], tuple[str, ...], Mapping[str, str], bool, str]:
    """Id columns, target columns, answer column names, number matching and extra-id policy."""
    if spec.metric.grader is not None:
        return (spec.id_column,), tuple(spec.target_columns), {}, False, "error"
    from mleaudit.grading.validation import scoring_options

    options, _ = scoring_options(spec.metric.metric, id_column=spec.id_column, target_columns=spec.target_columns,
                                 params=spec.metric.params)
    return (options.id_columns, options.target_columns, dict(options.answer_columns), options.id_match == "number",
            options.extra_ids)


def find_mlebench_divergences(
    submission_path: str | os.PathLike[str],
    spec: CompetitionSpec,
    answers_path: str | os.PathLike[str],
    *,
    checked: CheckedGrade | None = None,
    thresholds: MedalThresholds | None = None,
) -> DivergenceCheck:
    """Find where MLE-bench's grader would grade a submission differently from the checked grade.

    Parameters
    ----------
    submission_path : path-like
        The submission CSV (untrusted: read within the caps of :mod:`mleaudit.grading.csvscan`).
    spec : CompetitionSpec
        The competition; its ``mlebench_looseness`` says what to look for (nothing when it is
        empty or ``None``).
    answers_path : path-like
        The competition's prepared answers.
    checked : CheckedGrade, optional
        The checked grade of the file; computed here when not given.
    thresholds : MedalThresholds, optional
        The competition's medal thresholds; read from its leaderboard when not given (no
        medals when it has none).

    Returns
    -------
    DivergenceCheck
        ``records``: one :class:`Divergence` per looseness the file triggers, in config order,
        kept only when MLE-bench's outcome differs from ``checked`` or cannot be computed;
        ``skipped``: why the file was not checked (it cannot be read, the answers are broken).
        Never raises for a bad submission.

    Examples
    --------
    A competition whose grader is strict has nothing to find:

    >>> from types import SimpleNamespace
    >>> find_mlebench_divergences("submission.csv", SimpleNamespace(mlebench_looseness=()), "answers.csv")
    DivergenceCheck(records=(), skipped=None)
    """
    entries = tuple(spec.mlebench_looseness or ())
    if not entries:
        return DivergenceCheck()
    from mleaudit.grading.grade.reading import read_scoring_frames

    try:
        submission, answers = read_scoring_frames(submission_path, spec, answers_path)
        id_columns, targets, answer_columns, by_number, extra_ids = _scoring_setup(spec)
    except InvalidSubmission as exc:
        if exc.reason == "empty":
            return DivergenceCheck()  # MLE-bench reads an empty file as no table: invalid there too
        return DivergenceCheck(skipped=f"the submission cannot be read: {exc}")
    except GradingError as exc:
        return DivergenceCheck(skipped=f"the answers cannot be read: {exc}")
    try:
        return _find(submission, answers, spec, entries, id_columns=id_columns, targets=targets,
                     answer_columns=answer_columns, by_number=by_number, extra_ids=extra_ids, checked=checked,
                     thresholds=thresholds)
    except Exception as exc:  # noqa: BLE001 - an untrusted file must never stop grading
        logger.warning("MLE-bench divergence check of %s failed", submission_path, exc_info=True)
        return DivergenceCheck(skipped=f"the check failed: {type(exc).__name__}: {exc}")


def _find(submission: pd.DataFrame, answers: pd.DataFrame, spec: CompetitionSpec, entries: tuple[Looseness, ...], *,
          id_columns: tuple[str, ...], targets: tuple[str, ...], answer_columns: Mapping[str, str], by_number: bool,
          extra_ids: str, checked: CheckedGrade | None, thresholds: MedalThresholds | None) -> DivergenceCheck:
    original = submission
    em = _Emulation(submission=submission.reset_index(drop=True).copy(), answers=answers.reset_index(drop=True),
                    id_columns=id_columns, by_number=by_number, extra_ids=extra_ids)
    by_kind = {entry.kind: entry for entry in entries}
    for entry in entries:
        if entry.kind == "nan_inf_coerced":
            _nan_inf(em, entry, targets)
        elif entry.kind == "labels_truncated":
            _truncated_labels(em, entry, targets)
        elif entry.kind == "odd_rle_accepted":
            _odd_rle(em, entry, targets)
        elif entry.kind == "positional_columns":
            _positional_columns(em, entry, targets, answer_columns)
    if any(kind in by_kind for kind in (*_PAIRING_KINDS, "header_only_valid", "row_order_required")):
        _pairing(em, by_kind)
    if not em.triggers:
        return DivergenceCheck()

    if checked is None:
        checked = _checked_grade(original, answers, spec)
    if thresholds is None:
        thresholds = _thresholds(spec)
    unmodelled = next((t.entry.kind for t in em.triggers if t.entry.score == "none"), None)
    if unmodelled is not None:
        # The config says MLE-bench's outcome is not emulated for this kind: neither its score nor its verdict.
        em.invalid = None
        em.whole_score = None
        em.give_up(f"the config marks {unmodelled} as not emulated")
    em.approximate = em.approximate or any(t.entry.score == "approximate" for t in em.triggers)

    # valid: True/False, or None when even MLE-bench's verdict is unknown; computed: its score is.
    valid: bool | None = True
    computed = True
    score: float | None = None
    raw: float | None = None
    basis = "approximate" if em.approximate else "exact"
    if em.invalid is not None:
        valid, basis = False, "exact"
    elif em.whole_score is not None:
        raw, basis = em.whole_score, "exact"
        score = _rounded(raw) if math.isfinite(raw) else None
    elif em.uncomputed is not None:
        computed, basis = False, f"not computed: {em.uncomputed}"
        if unmodelled is not None:
            valid = None
    else:
        frames = _emulated_frames(em)
        if isinstance(frames, str):
            computed, basis = False, f"not computed: {frames}"
        else:
            from mleaudit.grading.grade.scoring import score_spec_frames

            try:
                score = _rounded(score_spec_frames(frames[0], frames[1], spec))
            except UndefinedScore:
                score = None
            except InvalidSubmission as exc:
                valid, computed = None, False
                basis = f"not computed: the file as MLE-bench reads it fails a check of this grading ({exc})"
    medal = _medal(score, thresholds) if computed and valid is not None else None
    if valid is False:
        outcome = f"invalid ({em.invalid})"
    elif valid is None:
        outcome = "not computed"
    elif not computed:
        outcome = "valid, score not computed"
    else:
        outcome = _outcome_text(valid, score, medal, raw=raw)
    checked_medal = _medal(checked.score if checked.valid else None, thresholds)
    checked_text = _outcome_text(checked.valid, checked.score, checked_medal)

    same = (basis == "exact" and computed and valid is not None and valid == checked.valid
            and (not valid or (score == checked.score and raw is None)))
    if same:
        return DivergenceCheck()
    better = (medal is not None and medal.is_medal
              and _MEDAL_RANK[medal] > _MEDAL_RANK[checked_medal or Medal.NONE])
    if better:
        flag = "; the medal exists only under MLE-bench's grader"
    else:
        flag = ""
    approx = " (approximately)" if basis == "approximate" else ""
    difference = f"MLE-bench{approx}: {outcome}; checked grade: {checked_text}{flag}"
    records = []
    for trig in em.triggers:
        records.append(Divergence(
            kind=trig.entry.kind,
            mlebench_does=trig.entry.note,
            trigger=trig.trigger,
            column=trig.column,
            rows=tuple(int(p) + 1 for p in trig.positions[:SHOWN_ROWS]),
            count=int(trig.count),
            mlebench_valid=valid,
            mlebench_score=score if computed else None,
            mlebench_medal=None if medal is None else medal.value,
            mlebench_outcome=outcome,
            score_basis=basis,
            checked_valid=checked.valid,
            checked_score=checked.score,
            checked_medal=None if checked_medal is None else checked_medal.value,
            checked_outcome=checked_text,
            medal_only_under_mlebench=better,
            difference=difference,
        ))
    order = {entry.kind: i for i, entry in enumerate(entries)}
    records.sort(key=lambda r: order.get(r.kind, len(order)))
    return DivergenceCheck(records=tuple(records))
