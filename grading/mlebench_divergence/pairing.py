"""Looseness in the rows: submission rows paired with answer rows as MLE-bench's graders pair them."""

from __future__ import annotations

from typing import Mapping

import numpy as np
import pandas as pd

from mleaudit.grading.mlebench_divergence.emulation import _Emulation, _Trigger
from mleaudit.grading.mlebench_divergence.ids import _id_keys, _pandas_order, _quote, _rows_text, _Shown, _text
from mleaudit.grading.spec import Looseness


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
