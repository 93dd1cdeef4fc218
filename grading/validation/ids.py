"""Ids: each test id matched to its submission row (exactly, in order, or by number)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from mleaudit.grading.errors import InvalidSubmission
from mleaudit.grading.metrics.arrowtext import arrow_text, text_permutation
from mleaudit.grading.validation.keys import _id_keys
from mleaudit.grading.validation.messages import _id_name, _plural, _show_key


def _key_values(ids: pd.Series | pd.DataFrame) -> tuple[np.ndarray, int]:
    """Id keys as an object array (missing ids as NaN) and the number of id columns."""
    if isinstance(ids, pd.DataFrame):
        return _id_keys(ids, list(ids.columns)).to_numpy(dtype=object), ids.shape[1]
    if pd.api.types.is_string_dtype(ids.dtype) and not pd.api.types.is_object_dtype(ids.dtype):
        return ids.to_numpy(dtype=object), 1
    return ids.astype(str).where(ids.notna()).to_numpy(dtype=object), 1


def _encode(answer_keys: np.ndarray, submission_keys: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Integer codes of both id lists from one hash pass (missing ids get -1), and the distinct keys."""
    codes, uniques = pd.factorize(np.concatenate([answer_keys, submission_keys]))
    return codes[: len(answer_keys)], codes[len(answer_keys) :], np.asarray(uniques, dtype=object)


def _arrow_order(submission_ids: pd.Series | pd.DataFrame, answer_ids: pd.Series | pd.DataFrame) -> np.ndarray | None:
    """The alignment of a valid submission, found on Arrow-backed id columns; None otherwise.

    Only the valid case is decided here: the same number of rows, no empty id, and every
    submission id matching exactly one distinct test id. Rows already in test order take one
    vectorised comparison; other orders one join on the exact text
    (:func:`mleaudit.grading.metrics.arrowtext.text_permutation`), with no Python string per row. Anything
    else (a repeat, an unknown or missing id, empty answer ids, composite or non-text ids)
    returns ``None`` and the general path finds and names the problem.
    """
    if not isinstance(submission_ids, pd.Series) or not isinstance(answer_ids, pd.Series):
        return None
    sub, ans = arrow_text(submission_ids), arrow_text(answer_ids)
    if sub is None or ans is None or len(sub) != len(ans) or not len(sub) or sub.null_count or ans.null_count:
        return None
    import pyarrow.compute as pc  # arrow_text returned an array, so pyarrow is installed

    # A shuffled file shows at once in its first rows; the whole columns are compared only when
    # those agree.
    head = min(len(sub), 64)
    if pc.all(pc.equal(sub.slice(0, head), ans.slice(0, head))).as_py():
        if pc.all(pc.equal(sub, ans)).as_py():
            return np.arange(len(sub), dtype=np.intp)
    return text_permutation(sub, ans)


def _outside(n_unknown: int, n_rows: int) -> str:
    """``"3 of its 10 rows have ids outside"`` with the verb agreeing."""
    return f"{n_unknown} of its {n_rows} {_plural('row', n_rows)} {'has an id' if n_unknown == 1 else 'have ids'} outside"


def check_ids(
    submission_ids: pd.Series | pd.DataFrame,
    answer_ids: pd.Series | pd.DataFrame,
    *,
    extra_ids: str = "error",
) -> np.ndarray:
    """Check the submission has each test id exactly once.

    Parameters
    ----------
    submission_ids, answer_ids : pandas.Series or pandas.DataFrame
        The id column (or id columns, for composite ids), in file order. Repeated answer ids
        (answer files with one row per box) are matched once, in order of first appearance.
    extra_ids : {"error", "ignore"}
        Whether submission rows with ids that are not test ids are an error or dropped.

    Returns
    -------
    numpy.ndarray of int
        For each distinct answer id, the position of its row in the submission, so
        ``submission.iloc[order]`` is aligned with the answers.

    Raises
    ------
    InvalidSubmission
        For an empty id, a repeated id (both rows named), an id that is not a test id, or a
        row count that differs from the test set (the first missing id named).
    """
    order = _arrow_order(submission_ids, answer_ids)
    if order is not None:
        return order
    sub, n_parts = _key_values(submission_ids)
    ans, _ = _key_values(answer_ids)
    n_sub = len(sub)
    empty = np.flatnonzero(pd.isna(sub))
    if empty.size:
        raise InvalidSubmission(f"Submission has an empty id at row {int(empty[0]) + 1}.", reason="empty-id",
                                column=_id_name(submission_ids), row=int(empty[0]) + 1)
    if n_sub == len(ans) and n_sub and (sub == ans).all():
        # The usual case: rows in the order of the test set. The submission repeats an id only
        # if the answers do, and those are checked when the answers are read.
        return np.arange(n_sub, dtype=np.intp)
    ans_codes, sub_codes, uniques = _encode(ans, sub)
    n_codes = len(uniques)
    first_row = np.full(n_codes, n_sub, dtype=np.int64)
    np.minimum.at(first_row, sub_codes, np.arange(n_sub))
    repeated = np.flatnonzero(first_row[sub_codes] != np.arange(n_sub))
    if repeated.size:
        row = int(repeated[0])
        first = int(first_row[sub_codes[row]])
        raise InvalidSubmission(f"Submission repeats id {_show_key(sub[row], n_parts)} at rows {first + 1} and {row + 1}.",
                                reason="duplicate-id", column=_id_name(submission_ids), row=row + 1)
    # Distinct answer ids in order of first appearance.
    _, first_answer = np.unique(ans_codes, return_index=True)
    ans_distinct = ans_codes[np.sort(first_answer)]
    known = np.zeros(n_codes, dtype=bool)
    known[ans_distinct] = True
    unknown = ~known[sub_codes]
    if unknown.any() and extra_ids != "ignore":
        # The totals tell a reviewer at once whether a few ids are off or the whole file was
        # made for another test set (e.g. Kaggle's own test.csv instead of the prepared split).
        row = int(np.flatnonzero(unknown)[0])
        raise InvalidSubmission(
            f"Submission has id {_show_key(sub[row], n_parts)} at row {row + 1}, which is not a test id "
            f"({_outside(int(unknown.sum()), n_sub)} the {len(ans_distinct)} test ids).",
            reason="unknown-id", column=_id_name(submission_ids), row=row + 1,
        )
    order = np.where(first_row[ans_distinct] < n_sub, first_row[ans_distinct], -1)
    missing = np.flatnonzero(order < 0)
    if missing.size:
        first_missing = int(missing[0])
        missing_id = _show_key(uniques[ans_distinct[first_missing]], n_parts)
        if extra_ids == "ignore":
            raise InvalidSubmission(
                f"Submission has no row for id {missing_id} (row {first_missing + 1} "
                f"of the test set); {missing.size} of the {len(ans_distinct)} test ids are missing.",
                reason="missing-ids", column=_id_name(submission_ids),
            )
        # No repeats and no unknown ids, so the submission is short: name what it lacks.
        raise InvalidSubmission(
            f"Submission has {n_sub} {_plural('row', n_sub)}; expected {len(ans_distinct)} (one per test id). "
            f"First missing id: {missing_id} (row {first_missing + 1} of the test set).",
            reason="row-count", column=_id_name(submission_ids),
        )
    return order.astype(np.intp)


def ids_by_number(submission_ids: pd.Series | pd.DataFrame, answer_ids: pd.Series | pd.DataFrame) -> pd.Series | None:
    """The submission's ids spelled as the test ids with the same number, where both are numbers.

    MLE-bench reads both files with plain :func:`pandas.read_csv`, so an id column of numbers
    becomes int64 (float64 once a cell reads ``"2.0"``) and its graders compare the values:
    ``"00002"``, ``"2"`` and ``"2.0"`` are one id there. This maps each submission id to the
    test id whose number equals its own, compared as NumPy compares the two columns (as floats
    once either column is), so the usual text checks then apply.

    Parameters
    ----------
    submission_ids, answer_ids : pandas.Series
        One id column each, as read (text).

    Returns
    -------
    pandas.Series or None
        The submission's ids, each replaced by the test id of equal number where there is one
        (others, numbers or not, kept as written, for the checks to name); ``None`` for
        composite ids, when a test id is not a number, or when two test ids are one number.
    """
    if not isinstance(submission_ids, pd.Series) or not isinstance(answer_ids, pd.Series):
        return None
    # Each test id once (answer files with one row per box repeat them).
    answer_ids = answer_ids.drop_duplicates()
    ans = pd.to_numeric(answer_ids.astype(object), errors="coerce")
    if (
        ans.isna().any()
        or ans.dtype == object
        or not np.isfinite(ans.to_numpy(dtype=float)).all()
        or _beyond_64_bits(answer_ids).any()
    ):
        return None
    # A submission id that is no number (or an infinite one, or an integer pandas would keep as
    # text) matches nothing and stays as written.
    beyond = _beyond_64_bits(submission_ids)
    sub = pd.to_numeric(submission_ids.astype(object).where(~beyond), errors="coerce")
    numbers = sub.notna().to_numpy() & np.isfinite(sub.to_numpy(dtype=float, na_value=np.nan))
    if sub.dtype.kind == "f" or ans.dtype.kind == "f":
        sub, ans = sub.astype(np.float64), ans.astype(np.float64)
    spelling = pd.Series(answer_ids.to_numpy(dtype=object), index=ans.to_numpy())
    if spelling.index.has_duplicates:
        return None
    found = spelling.reindex(sub.to_numpy()).to_numpy(dtype=object)
    spelled = np.where(numbers & pd.notna(found), found, submission_ids.to_numpy(dtype=object))
    return pd.Series(spelled, index=submission_ids.index, name=submission_ids.name).astype(answer_ids.dtype)


def _beyond_64_bits(ids: pd.Series) -> np.ndarray:
    """Which cells are integers outside int64 and uint64, which pandas reads as text, not numbers."""
    texts = ids.astype(object).where(ids.notna(), "").astype(str).str.strip()
    long = texts.str.fullmatch(r"[+-]?\d{19,}").to_numpy(dtype=bool)
    beyond = np.zeros(len(texts), dtype=bool)
    for row in np.flatnonzero(long):
        value = int(texts.iloc[row])
        beyond[row] = not (-(2**63) <= value < 2**64)
    return beyond


def check_ids_in_order(
    submission_ids: pd.Series | pd.DataFrame,
    answer_ids: pd.Series | pd.DataFrame,
    *,
    extra_ids: str = "error",
) -> np.ndarray:
    """Check the submission has each test id on as many rows as the test set; pair them in order.

    For test sets where an id may stand on several rows (Detecting Insults: a comment posted
    more than once, its rows sharing one label): the k-th submission row with an id is paired
    with the k-th test row with that id, both counted in file order. MLE-bench pairs such rows
    by sorting both files by the id, which may pair them in any order; where the rows of an id
    share one label every pairing gives the same score.

    Parameters
    ----------
    submission_ids, answer_ids : pandas.Series or pandas.DataFrame
        The id column (or id columns), in file order.
    extra_ids : {"error", "ignore"}
        Whether submission rows with ids that are not test ids are an error or dropped.

    Returns
    -------
    numpy.ndarray of int
        For each test row, the position of its submission row, so ``submission.iloc[order]``
        is aligned with the answers row for row.

    Raises
    ------
    InvalidSubmission
        For an empty id, an id that is not a test id, or an id on a different number of rows
        than in the test set (the first such test id named, with both counts).
    """
    sub, n_parts = _key_values(submission_ids)
    ans, _ = _key_values(answer_ids)
    empty = np.flatnonzero(pd.isna(sub))
    if empty.size:
        raise InvalidSubmission(f"Submission has an empty id at row {int(empty[0]) + 1}.", reason="empty-id",
                                column=_id_name(submission_ids), row=int(empty[0]) + 1)
    if len(sub) == len(ans) and len(sub) and (sub == ans).all():
        return np.arange(len(sub), dtype=np.intp)
    codes, uniques = pd.factorize(np.concatenate([ans, sub]))
    ans_codes, sub_codes = codes[: len(ans)], codes[len(ans):]
    ans_counts = np.bincount(ans_codes, minlength=len(uniques))
    unknown = ans_counts[sub_codes] == 0
    rows = np.arange(len(sub))
    if unknown.any():
        if extra_ids != "ignore":
            row = int(np.flatnonzero(unknown)[0])
            raise InvalidSubmission(
                f"Submission has id {_show_key(sub[row], n_parts)} at row {row + 1}, which is not a test id "
                f"({_outside(int(unknown.sum()), len(sub))} the test ids).",
                reason="unknown-id", column=_id_name(submission_ids), row=row + 1,
            )
        rows, sub_codes = rows[~unknown], sub_codes[~unknown]
    if not sub_codes.size:
        raise InvalidSubmission(f"Submission has no rows with test ids; expected {len(ans)} (one per test row).",
                                reason="missing-ids", column=_id_name(submission_ids))
    sub_counts = np.bincount(sub_codes, minlength=len(uniques))
    differ = np.flatnonzero(sub_counts[ans_codes] != ans_counts[ans_codes])
    if differ.size:
        test_row = int(differ[0])
        code = ans_codes[test_row]
        have, want = int(sub_counts[code]), int(ans_counts[code])
        raise InvalidSubmission(
            f"Submission has id {_show_key(uniques[code], n_parts)} on {have} {_plural('row', have)}, the test set "
            f"on {want} (its first test row is row {test_row + 1}); each id must stand on as many rows as in the "
            f"test set ({len(ans)} rows in all; the submission has {len(sub)}), paired in file order.",
            reason="row-count", column=_id_name(submission_ids),
        )
    # Equal counts per id: both sides sorted by id (stably, so in file order within an id) line up.
    order = np.empty(len(ans), dtype=np.intp)
    order[np.argsort(ans_codes, kind="stable")] = rows[np.argsort(sub_codes, kind="stable")]
    return order
