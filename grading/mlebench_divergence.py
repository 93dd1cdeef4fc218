"""Where MLE-bench's own grader would grade a submission differently from the checked grade.

MLE-bench's graders are loose in places where this project checks strictly: some pair rows by
position and never read the ids, some accept a test id twice, turn a missing or infinite
prediction into a number, truncate ``1.5`` to class 1, or decode a run-length mask with an odd
count of numbers. Each competition's config names its grader's looseness
(``mlebench_looseness``, vocabulary :data:`mleaudit.grading.spec.MLEBENCH_LOOSENESS_KINDS`);
:func:`find_mlebench_divergences` finds the looseness one submission file triggers and says what
MLE-bench's grader would make of that file.

MLE-bench's outcome is *emulated*, never obtained by running MLE-bench's code: the submission is
transformed the way its grader reads it (cells filled or truncated as it would, masks decoded as
it would, rows paired as it pairs them, each submission row then carrying the ids of the answer
row it is paired with) and scored with this project's metric. Where that cannot reproduce its
grader (the config says ``score: none``, or a cell's fate is not emulated) the record describes
the outcome without a score. A record is kept only when MLE-bench's outcome differs from the
checked grade, or cannot be computed: a trigger that changes nothing is not a divergence.

Submissions are untrusted: every failure to read or emulate becomes a reason in the result,
never an exception, and the work is a few vectorised passes over the file plus one scoring run.
Records name columns and the first rows of the file (1-based data rows, header excluded) and
never hold an answer value.
"""

from __future__ import annotations

import logging
import math
import os
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from mleaudit.grading.errors import GradingError, InvalidSubmission, UndefinedScore
from mleaudit.grading.medals import Medal, MedalThresholds, award_medal
from mleaudit.grading.spec import CELL_KINDS, CompetitionSpec, Looseness

__all__ = [
    "SHOWN_ROWS",
    "CheckedGrade",
    "Divergence",
    "DivergenceCheck",
    "find_mlebench_divergences",
]

logger = logging.getLogger(__name__)

#: How many triggering rows a record lists (it counts them all).
SHOWN_ROWS = 5
_KEY_SEPARATOR = "\x1f"
_MEDAL_RANK = {Medal.NONE: 0, Medal.BRONZE: 1, Medal.SILVER: 2, Medal.GOLD: 3}
#: Kinds that change which answer row a submission row is scored against.
_PAIRING_KINDS = ("positional_rows", "sorted_rows", "duplicate_ids_accepted", "missing_rows_accepted")


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


# --- reading ids ----------------------------------------------------------------------------------


def _text(values: pd.Series) -> pd.Series:
    """Cells as Python strings (missing cells as ``None``), index reset, object dtype."""
    missing = values.isna().to_numpy()
    cells = values.to_numpy(dtype=object)
    return pd.Series([None if gone else (cell if isinstance(cell, str) else str(cell))
                      for cell, gone in zip(cells, missing)], dtype=object)


def _id_keys(frame: pd.DataFrame, columns: Sequence[str], *, by_number: bool) -> np.ndarray | None:
    """One comparable key per row (``None`` when a column is missing).

    Ids are compared as this project's grading compares them: as text, or by number where the
    competition matches ids by number and a cell reads as one.
    """
    if not columns or any(c not in frame.columns for c in columns):
        return None
    parts = []
    for column in columns:
        values = frame[column]
        if not by_number and not values.isna().any():
            parts.append(values.astype(str).to_numpy(dtype=object))
            continue
        text = _text(values)
        if by_number:
            numbers = pd.to_numeric(text, errors="coerce")
            text = text.where(numbers.isna(), numbers.map(lambda x: repr(float(x))))
        parts.append(text.fillna("\x00").astype(str).to_numpy(dtype=object))
    if len(parts) == 1:
        return parts[0]
    return np.array([_KEY_SEPARATOR.join(p) for p in zip(*parts)], dtype=object)


class _Shown:
    """Ids of a frame's rows as the file spells them, looked up one row at a time (for messages)."""

    def __init__(self, frame: pd.DataFrame, columns: Sequence[str]) -> None:
        self._columns = [frame[c] for c in columns if c in frame.columns]

    def __getitem__(self, row: int) -> str:
        cells = []
        for values in self._columns:
            cell = values.iloc[int(row)]
            cells.append("\x00" if pd.isna(cell) else str(cell))
        return _KEY_SEPARATOR.join(cells) if cells else "\x00"


def _pandas_order(frame: pd.DataFrame, column: str) -> np.ndarray:
    """Row positions in the order ``frame.sort_values(column)`` gives when pandas read the file.

    pandas reads a column of numbers as numbers and sorts it numerically, anything else as
    text; missing ids go last. Ties keep file order (pandas' own sort does not promise one).
    """
    text = _text(frame[column])
    numbers = pd.to_numeric(text, errors="coerce")
    present = text.notna().to_numpy()
    if bool(numbers[present].notna().all()):
        keys = numbers.to_numpy(dtype=float)
        keys = np.where(present, keys, np.inf)
        return np.argsort(keys, kind="stable")
    # Text ids sort by code point, as pandas compares Python strings; missing ids go last.
    order = np.argsort(text.fillna("").to_numpy(dtype=object), kind="stable")
    return np.concatenate([order[present[order]], order[~present[order]]])


def _rows_text(positions: Sequence[int] | np.ndarray, verb: str = "") -> str:
    """``rows 1, 2, 5 (9 in all)`` for 0-based positions, with ``is``/``are`` when ``verb`` asks."""
    shown = [int(p) + 1 for p in list(positions)[:SHOWN_ROWS]]
    count = len(positions)
    text = ", ".join(map(str, shown))
    word = "row" if count == 1 else "rows"
    more = f" ({count} in all)" if count > len(shown) else ""
    tail = f" {'is' if count == 1 else 'are'}" if verb else ""
    return f"{word} {text}{more}{tail}"


def _quote(key: str) -> str:
    text = str(key).replace(_KEY_SEPARATOR, ", ")
    if text == "\x00":
        return "(empty)"
    return repr(text[:80])


# --- the emulation ---------------------------------------------------------------------------------


@dataclass(slots=True)
class _Trigger:
    entry: Looseness
    trigger: str
    column: str | None = None
    positions: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.intp))
    count: int = 0


@dataclass(slots=True)
class _Emulation:
    """MLE-bench's reading of the file, built step by step."""

    submission: pd.DataFrame
    answers: pd.DataFrame
    id_columns: tuple[str, ...]
    by_number: bool
    extra_ids: str
    answer_pos: np.ndarray | None = None  # answer row of each scored submission row
    submission_pos: np.ndarray | None = None
    invalid: str | None = None  # MLE-bench would reject the file: why
    uncomputed: str | None = None  # MLE-bench's score cannot be reproduced: why
    whole_score: float | None = None
    approximate: bool = False
    triggers: list[_Trigger] = field(default_factory=list)

    def reject(self, why: str) -> None:
        if self.invalid is None:
            self.invalid = why

    def give_up(self, why: str) -> None:
        if self.uncomputed is None:
            self.uncomputed = why


def _columns(entry: Looseness, targets: Sequence[str], frame: pd.DataFrame) -> list[str]:
    return [c for c in (entry.columns or targets) if c in frame.columns]


def _nan_inf(em: _Emulation, entry: Looseness, targets: Sequence[str]) -> None:
    sub = em.submission
    accepted = entry.cell_kinds
    first_column, hits, count, seen = None, [], 0, []
    for column in _columns(entry, targets, sub):
        values = sub[column].reset_index(drop=True)
        numbers = pd.to_numeric(values, errors="coerce")
        masks = {"nan": values.isna().to_numpy(), "posinf": (numbers == np.inf).to_numpy(),
                 "neginf": (numbers == -np.inf).to_numpy()}
        found = np.zeros(len(values), dtype=bool)
        for kind in accepted:
            mask = masks[kind]
            if not mask.any():
                continue
            found |= mask
            if kind not in seen:
                seen.append(kind)
            if kind in entry.whole_score:
                value = float(entry.whole_score[kind])
                if em.whole_score is None or math.isnan(value):
                    em.whole_score = value
                continue
            fill = entry.fill.get(kind)
            if fill is None:
                em.give_up(f"what MLE-bench makes of a {_CELL_WORDS[kind]} cell in {column!r} is not emulated")
                continue
            column_values = sub[column].astype(object) if isinstance(fill, str) else sub[column]
            if not isinstance(fill, str) and not pd.api.types.is_numeric_dtype(column_values.dtype):
                column_values = pd.to_numeric(column_values, errors="coerce").astype(float)
            column_values = column_values.copy()
            column_values.iloc[np.flatnonzero(mask)] = fill
            sub[column] = column_values
        if found.any():
            first_column = first_column or column
            hits.append(np.flatnonzero(found))
            count += int(found.sum())
    if count:
        positions = np.unique(np.concatenate(hits))
        kinds = " or ".join(_CELL_WORDS[k] for k in CELL_KINDS if k in seen)
        em.triggers.append(_Trigger(entry=entry, column=first_column, positions=positions, count=count,
                                    trigger=f"{count} {kinds} cell(s) in {first_column!r}"
                                            f"{' and other columns' if len(hits) > 1 else ''}, first at "
                                            f"{_rows_text(positions)}"))


_CELL_WORDS = {"nan": "missing or NaN", "posinf": "+inf", "neginf": "-inf"}


def _truncated_labels(em: _Emulation, entry: Looseness, targets: Sequence[str]) -> None:
    sub = em.submission
    for column in _columns(entry, targets, sub):
        numbers = pd.to_numeric(sub[column].reset_index(drop=True), errors="coerce").to_numpy(dtype=float)
        with np.errstate(invalid="ignore"):
            fractional = np.isfinite(numbers) & (numbers != np.trunc(numbers))
        if not fractional.any():
            continue
        positions = np.flatnonzero(fractional)
        if pd.api.types.is_numeric_dtype(sub[column].dtype):
            # int(y) of MLE-bench's grader, written back as the number pandas would have read.
            sub[column] = np.where(fractional, np.trunc(numbers), numbers)
        else:
            values = sub[column].reset_index(drop=True).astype(object).copy()
            values.iloc[positions] = [str(int(v)) for v in np.trunc(numbers[positions])]
            sub[column] = values.to_numpy()
        em.triggers.append(_Trigger(entry=entry, column=column, positions=positions, count=int(positions.size),
                                    trigger=f"{positions.size} fractional label(s) in {column!r}, first at "
                                            f"{_rows_text(positions)}"))


def _odd_rle(em: _Emulation, entry: Looseness, targets: Sequence[str]) -> None:
    sub = em.submission
    for column in _columns(entry, targets, sub):
        values = _text(sub[column])
        fixed = values.copy()
        positions = []
        for i, cell in enumerate(values):
            if cell is None:
                continue
            tokens = cell.split()
            if len(tokens) not in (1, 3) or not all(t.lstrip("+").isdigit() for t in tokens):
                continue
            positions.append(i)
            # rle_decode zips starts with lengths: one number is no run; with three, numpy
            # broadcasts the single length to both starts.
            fixed[i] = "" if len(tokens) == 1 else f"{tokens[0]} {tokens[1]} {tokens[2]} {tokens[1]}"
        if not positions:
            continue
        sub[column] = fixed.astype(object).where(fixed.notna(), np.nan).to_numpy()
        where = np.asarray(positions, dtype=np.intp)
        em.triggers.append(_Trigger(entry=entry, column=column, positions=where, count=len(positions),
                                    trigger=f"{len(positions)} run-length mask(s) with an odd count of numbers in "
                                            f"{column!r}, first at {_rows_text(where)}"))


def _positional_columns(em: _Emulation, entry: Looseness, targets: Sequence[str],
                        answer_columns: Mapping[str, str]) -> None:
    sub, answers = em.submission, em.answers
    in_file = [c for c in sub.columns if c not in em.id_columns]
    by_answer = {answer_columns.get(t, t): t for t in targets}
    expected = [by_answer[c] for c in answers.columns if c in by_answer]
    if sorted(in_file) != sorted(expected) or in_file == expected:
        return  # other columns: MLE-bench rejects the file as the checked grade does
    moved = [c for c, e in zip(in_file, expected) if c != e]
    # Renamed by position: the file's k-th prediction column is the answers' k-th.
    positions = {c: i for i, c in enumerate(sub.columns)}
    renamed = list(sub.columns)
    for name, target in zip(in_file, expected):
        renamed[positions[name]] = target
    em.submission = sub.set_axis(renamed, axis=1)
    em.triggers.append(_Trigger(entry=entry, column=moved[0], count=len(moved),
                                trigger=f"{len(moved)} prediction column(s) out of the answers' order, first {moved[0]!r} "
                                        f"where the answers have {expected[in_file.index(moved[0])]!r} (header, line 1)"))


def _pair_by_ids(em: _Emulation, sub_keys: np.ndarray, answer_keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    index = {k: i for i, k in enumerate(answer_keys)}
    answer_pos = np.array([index.get(k, -1) for k in sub_keys], dtype=np.intp)
    known = answer_pos >= 0
    return answer_pos[known], np.flatnonzero(known)


def _mismatch(sub_keys: np.ndarray | None, answer_keys: np.ndarray, answer_pos: np.ndarray,
              submission_pos: np.ndarray) -> np.ndarray:
    """Submission positions paired with an answer row of another id."""
    if sub_keys is None:
        return np.sort(submission_pos)
    differs = sub_keys[submission_pos] != answer_keys[answer_pos]
    return np.sort(submission_pos[differs])


def _describe_first(sub_shown: "_Shown | None", answer_shown: "_Shown", answer_pos: np.ndarray,
                    submission_pos: np.ndarray, first: int) -> str:
    """``row 3 has id 'x' and is scored against the answers' id 'y'`` for submission position ``first``."""
    at = int(np.flatnonzero(submission_pos == first)[0])
    theirs = _quote(answer_shown[answer_pos[at]])
    if sub_shown is None:
        return f"row {first + 1} is scored against the answers' id {theirs}"
    return f"row {first + 1} has id {_quote(sub_shown[first])} and is scored against the answers' id {theirs}"


def _pairing(em: _Emulation, entries: Mapping[str, Looseness]) -> None:
    """Pair submission rows with answer rows as MLE-bench's grader does, and record the triggers."""
    sub, answers = em.submission, em.answers
    n, m = len(sub), len(answers)
    sub_keys = _id_keys(sub, em.id_columns, by_number=em.by_number)
    answer_keys = _id_keys(answers, em.id_columns, by_number=em.by_number)
    if answer_keys is None:
        em.give_up("the answers lack an id column")
        return
    # Ids as the files spell them, for messages (the keys above may be numbers).
    sub_shown = None if sub_keys is None else _Shown(sub, em.id_columns)
    answer_shown = _Shown(answers, em.id_columns)
    id_name = em.id_columns[0] if len(em.id_columns) == 1 else "(" + ", ".join(em.id_columns) + ")"
    missing_entry = entries.get("missing_rows_accepted")

    if "header_only_valid" in entries and n == 0:
        em.triggers.append(_Trigger(entry=entries["header_only_valid"], count=1,
                                    trigger="the file has a header and no rows"))
        em.whole_score = float("nan")
        return

    if "positional_rows" in entries:
        entry = entries["positional_rows"]
        within = entry.within
        if within:
            if within not in sub.columns:
                em.reject(f"the file has no column {within!r}")
                return
            if n != m:
                em.reject(f"the file has {n} rows and the answers {m}")
                return
            group_sub, group_answers = _text(sub[within]), _text(answers[within])
            pairs_a, pairs_s = [], []
            sub_groups = {k: np.asarray(v, dtype=np.intp) for k, v in group_sub.groupby(group_sub, sort=False).groups.items()}
            for key, rows in group_answers.groupby(group_answers, sort=False).groups.items():
                mine = sub_groups.get(key, np.zeros(0, dtype=np.intp))
                rows = np.asarray(rows, dtype=np.intp)
                if len(mine) != len(rows):
                    em.reject(f"{within} {_quote(key)} has {len(mine)} rows in the file and {len(rows)} in the answers")
                    return
                pairs_a.append(rows)
                pairs_s.append(mine)
            answer_pos = np.concatenate(pairs_a) if pairs_a else np.zeros(0, dtype=np.intp)
            submission_pos = np.concatenate(pairs_s) if pairs_s else np.zeros(0, dtype=np.intp)
        else:
            if n != m and missing_entry is None:
                em.reject(f"the file has {n} rows and the answers {m}")
                return
            k = min(n, m)
            answer_pos = submission_pos = np.arange(k, dtype=np.intp)
            if n != m and missing_entry is not None:
                em.triggers.append(_Trigger(entry=missing_entry, count=abs(m - n),
                                            trigger=f"the file has {n} rows and the answers {m}: MLE-bench scores the "
                                                    f"first {k} by position and drops the rest"))
                em.approximate = em.approximate or missing_entry.score == "approximate"
        em.answer_pos, em.submission_pos = answer_pos, submission_pos
        bad = _mismatch(sub_keys, answer_keys, answer_pos, submission_pos)
        if bad.size:
            what = (f"the file has no id column {id_name!r}; " if sub_keys is None else "")
            group = f" within each {within}" if within else ""
            em.triggers.append(_Trigger(entry=entry, column=None if sub_keys is None else em.id_columns[0],
                                        positions=bad, count=int(bad.size),
                                        trigger=f"{what}{_rows_text(bad, 'be')} paired by position{group} with answer "
                                                f"rows of another id: "
                                                f"{_describe_first(sub_shown, answer_shown, answer_pos, submission_pos, int(bad[0]))}"))
        return

    if sub_keys is None:
        return  # no id column: MLE-bench's grader rejects the file too

    if "sorted_rows" in entries:
        entry = entries["sorted_rows"]
        if n != m or len(em.id_columns) != 1:
            return  # MLE-bench rejects a file of another length, as the checked grade does
        sub_order = _pandas_order(sub, em.id_columns[0])
        answer_order = _pandas_order(answers, em.id_columns[0])
        if entry.mask_by_position:
            if entry.mask_by_position not in answers.columns:
                em.give_up(f"the answers have no column {entry.mask_by_position!r}")
                return
            keep = _truthy(answers[entry.mask_by_position])
            chosen = sub_order[keep[sub_order]]
            kept = answer_order[keep[answer_order]]
            rest_sub = sub_order[~keep[sub_order]]
            rest_answers = answer_order[~keep[answer_order]]
            answer_pos, submission_pos = kept, chosen
            em.answer_pos = np.concatenate([kept, rest_answers])
            em.submission_pos = np.concatenate([chosen, rest_sub])
        else:
            answer_pos, submission_pos = answer_order, sub_order
            em.answer_pos, em.submission_pos = answer_pos, submission_pos
        bad = _mismatch(sub_keys, answer_keys, answer_pos, submission_pos)
        if bad.size:
            how = (f" (the answers' {entry.mask_by_position} column is applied by file position)"
                   if entry.mask_by_position else "")
            em.triggers.append(_Trigger(entry=entry, column=em.id_columns[0], positions=bad, count=int(bad.size),
                                        trigger=f"{_rows_text(bad, 'be')} paired with answer rows of another id after "
                                                f"sorting{how}: "
                                                f"{_describe_first(sub_shown, answer_shown, answer_pos, submission_pos, int(bad[0]))}"))
        return

    duplicated = pd.Series(sub_keys).duplicated(keep="first").to_numpy()
    answer_set = set(answer_keys.tolist())
    known = np.array([k in answer_set for k in sub_keys], dtype=bool)
    present = set(sub_keys[known].tolist())
    absent = [k for k in answer_keys if k not in present]

    if "duplicate_ids_accepted" in entries and duplicated.any():
        entry = entries["duplicate_ids_accepted"]
        repeats = np.flatnonzero(duplicated)
        em.triggers.append(_Trigger(entry=entry, column=em.id_columns[0], positions=repeats, count=int(repeats.size),
                                    trigger=f"{repeats.size} repeated id(s) in {id_name!r}, first {_quote(sub_shown[repeats[0]])} "
                                            f"again at {_rows_text(repeats)}"))
        if entry.pairing == "merge":
            if not known.all() or absent:
                if entry.score == "none":  # what the grader then does is not modelled
                    em.give_up("repeated ids with other ids missing or unknown are not emulated")
                else:
                    em.reject("its ids are not the set of test ids")
                return
            em.answer_pos, em.submission_pos = _pair_by_ids(em, sub_keys, answer_keys)
        elif entry.pairing == "sorted":
            if len(em.id_columns) != 1:
                em.give_up("sorted pairing of composite ids is not emulated")
                return
            if not known.all() and em.extra_ids != "ignore":
                em.reject("it has ids that are not test ids")
                return
            if em.extra_ids == "ignore":
                if absent:
                    em.reject("its ids do not cover the test ids")
                    return
            elif n != m:
                em.reject(f"the file has {n} rows and the answers {m}")
                return
            kept_rows = np.flatnonzero(known)
            order = kept_rows[_pandas_order(sub.iloc[kept_rows], em.id_columns[0])]
            answer_order = _pandas_order(answers, em.id_columns[0])
            k = min(len(order), m)
            em.answer_pos, em.submission_pos = answer_order[:k], order[:k]
        else:  # pool: every copy's predictions become the first copy's
            em.answer_pos, em.submission_pos = None, None
            em.submission = _pool(sub, sub_keys, em)
        return

    if missing_entry is not None and absent and known.all() and not duplicated.any() and n > 0:
        em.triggers.append(_Trigger(entry=missing_entry, count=len(absent),
                                    trigger=f"the file lacks {len(absent)} of the {m} test ids, first "
                                            f"{_quote(answer_shown[answer_keys.tolist().index(absent[0])])}"))
        em.answer_pos, em.submission_pos = _pair_by_ids(em, sub_keys, answer_keys)
        return

    if "row_order_required" in entries and n == m and not duplicated.any() and known.all():
        bad = np.flatnonzero(sub_keys != answer_keys)
        if bad.size:
            em.triggers.append(_Trigger(entry=entries["row_order_required"], column=em.id_columns[0], positions=bad,
                                        count=int(bad.size),
                                        trigger=f"{_rows_text(bad, 'be')} not in the answers' order: row {bad[0] + 1} has "
                                                f"id {_quote(sub_shown[bad[0]])} where the answers' row "
                                                f"{bad[0] + 1} has {_quote(answer_shown[bad[0]])}"))
            em.reject("rows out of the answers' order fail its id assertion")


def _truthy(values: pd.Series) -> np.ndarray:
    """A boolean column as pandas read it: booleans, numbers, or the words True and False."""
    values = values.reset_index(drop=True)
    if pd.api.types.is_bool_dtype(values.dtype):
        return values.to_numpy(dtype=bool)
    if pd.api.types.is_numeric_dtype(values.dtype):
        return (values.fillna(0) != 0).to_numpy()
    return _text(values).map(lambda v: v is not None and v.strip().lower() in ("true", "1", "1.0")).to_numpy(dtype=bool)


def _pool(sub: pd.DataFrame, sub_keys: np.ndarray, em: _Emulation) -> pd.DataFrame:
    """One row per id: the text predictions of every copy joined with spaces."""
    groups = pd.Series(range(len(sub_keys))).groupby(sub_keys, sort=False)
    firsts = [int(rows.iloc[0]) for _, rows in groups]
    pooled = sub.iloc[firsts].reset_index(drop=True).copy()
    for column in sub.columns:
        if column in em.id_columns:
            continue
        text = _text(sub[column])
        joined = [" ".join(t for t in (text.iloc[int(i)] for i in rows) if t and t.strip()) for _, rows in groups]
        pooled[column] = joined
    return pooled


def _emulated_frames(em: _Emulation) -> tuple[pd.DataFrame, pd.DataFrame] | str:
    """The submission as MLE-bench pairs it: each scored row carries its answer row's ids."""
    sub, answers = em.submission.reset_index(drop=True), em.answers.reset_index(drop=True)
    if em.answer_pos is None:
        return sub, answers
    answer_pos, submission_pos = em.answer_pos, em.submission_pos
    chosen_answers = answers.iloc[answer_pos].reset_index(drop=True).copy()
    chosen = sub.iloc[submission_pos].reset_index(drop=True).copy()
    if len(np.unique(answer_pos)) != len(answer_pos):
        # Several rows scored against one answer row: each pair gets an id of its own.
        if len(em.id_columns) != 1:
            return "repeated pairs of composite ids are not emulated"
        synthetic = pd.Series([str(i) for i in range(len(answer_pos))], dtype=answers[em.id_columns[0]].dtype)
        chosen_answers[em.id_columns[0]] = synthetic.to_numpy()
        chosen[em.id_columns[0]] = synthetic.to_numpy()
        return chosen, chosen_answers
    for column in em.id_columns:
        chosen[column] = chosen_answers[column].to_numpy()
    return chosen, chosen_answers


def _rounded(score: float) -> float:
    from mleaudit.grading.grade import round_score  # grade imports this module

    return round_score(score)


def _outcome_text(valid: bool | None, score: float | None, medal: Medal | None, *, raw: float | None = None) -> str:
    if valid is None:
        return "not computed"
    if not valid:
        return "invalid"
    if score is None:
        if raw is not None and math.isinf(raw):
            return f"valid, score {'+' if raw > 0 else '-'}inf, no medal"
        return "valid, no score (undefined), no medal"
    medal_text = "" if medal is None else (f", {medal.value} medal" if medal.is_medal else ", no medal")
    return f"valid, score {score}{medal_text}"


def _medal(score: float | None, thresholds: MedalThresholds | None) -> Medal | None:
    if thresholds is None:
        return None
    return award_medal(score, thresholds)


def _checked_grade(submission: pd.DataFrame, answers: pd.DataFrame, spec: CompetitionSpec) -> CheckedGrade:
    from mleaudit.grading.grade import score_spec_frames

    try:
        return CheckedGrade(valid=True, score=_rounded(score_spec_frames(submission.copy(), answers.copy(), spec)))
    except UndefinedScore as exc:
        return CheckedGrade(valid=True, score=None, error=str(exc))
    except InvalidSubmission as exc:
        return CheckedGrade(valid=False, score=None, error=str(exc))


def _thresholds(spec: CompetitionSpec) -> MedalThresholds | None:
    if not spec.has_leaderboard:
        return None
    from mleaudit.grading.leaderboard import load_leaderboard
    from mleaudit.grading.medals import medal_thresholds

    try:
        return medal_thresholds(load_leaderboard(spec.leaderboard_path), spec.metric.higher_is_better)
    except GradingError as exc:
        logger.info("no medal thresholds for %s: %s", spec.id, exc)
        return None


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
    from mleaudit.grading.grade import read_scoring_frames

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
            from mleaudit.grading.grade import score_spec_frames

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
