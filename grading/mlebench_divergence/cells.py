"""Looseness in the cells and columns: NaN and infinities filled, labels truncated, odd masks, columns by place."""

from __future__ import annotations

import math
from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from mleaudit.grading.mlebench_divergence.emulation import _Emulation, _Trigger
from mleaudit.grading.mlebench_divergence.ids import _rows_text, _text
from mleaudit.grading.spec import CELL_KINDS, Looseness


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
