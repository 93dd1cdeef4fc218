"""Submissions derived from a competition's perfect and degraded submission.

Each mutation is one thing an agent's ``submission.csv`` can get wrong (or right in an
unexpected spelling). Frames hold every cell as text; a mutation that does not apply to a
competition (ids that are not numbers cannot be zero-padded) is left out for it.
"""

from __future__ import annotations

import math
from typing import Iterator

import numpy as np
import pandas as pd

from mleaudit.grading.spec import CompetitionSpec
from tests.grading.competition_keys import options_for

#: A mutation's name and the bytes of the submission file it wrote.
Submission = tuple[str, bytes]


def to_bytes(frame: pd.DataFrame) -> bytes:
    """The CSV bytes of a text frame, as ``DataFrame.to_csv(index=False)`` writes them."""
    return frame.to_csv(index=False, lineterminator="\n").encode("utf-8")


def _number(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def _numeric_column(frame: pd.DataFrame, column: str) -> bool:
    cells = frame[column]
    return len(cells) > 0 and all(_number(c) is not None for c in cells)


def _id_columns(spec: CompetitionSpec, frame: pd.DataFrame) -> list[str]:
    options = options_for(spec.metric.name, spec.id_column, spec.target_columns, dict(spec.metric.params or {}))
    return [c for c in options.id_columns if c in frame.columns]


def _targets(spec: CompetitionSpec, frame: pd.DataFrame) -> list[str]:
    ids = set(_id_columns(spec, frame))
    return [c for c in frame.columns if c not in ids]


def _whole(text: str) -> bool:
    return text.isdigit() and len(text) < 16


def _run_lengths(cells: pd.Series) -> bool:
    """Whether a column holds run-length masks: pairs of whole numbers, or nothing."""
    texts = [str(c).split() for c in cells if str(c).strip() not in ("", "-")]
    return bool(texts) and all(len(t) % 2 == 0 and all(v.isdigit() for v in t) for t in texts)


def _set_cell(frame: pd.DataFrame, row: int, column: str, value: str) -> pd.DataFrame:
    out = frame.copy()
    out.iloc[row, out.columns.get_loc(column)] = value
    return out


def mutations(
    spec: CompetitionSpec,
    perfect: pd.DataFrame,
    degraded: pd.DataFrame,
    seed: int = 0,
    answers_csv: bytes | None = None,
) -> Iterator[Submission]:
    """Every submission the differential test grades for one competition.

    Parameters
    ----------
    spec : CompetitionSpec
        The competition (its id and target columns).
    perfect, degraded : pandas.DataFrame
        Text frames of a perfect and an imperfect submission in the competition's columns.
    seed : int
        Seed of the random and perturbed submissions and the shuffles.
    answers_csv : bytes, optional
        The answers file, submitted as it is (a case of its own).

    Yields
    ------
    (str, bytes)
        The mutation's name and the submission file's bytes.
    """
    rng = np.random.default_rng(seed)
    ids = _id_columns(spec, perfect)
    targets = _targets(spec, perfect)
    first_target = targets[0] if targets else None
    n = len(degraded)

    yield "perfect", to_bytes(perfect)
    yield "degraded", to_bytes(degraded)
    # Random: each prediction column's cells shuffled among the rows (values stay in the domain).
    shuffled_cells = perfect.copy()
    for column in targets:
        shuffled_cells[column] = perfect[column].to_numpy()[rng.permutation(len(perfect))]
    yield "random", to_bytes(shuffled_cells)
    perturbed = degraded.copy()
    for column in targets:
        if _numeric_column(degraded, column):
            values = degraded[column].astype(float).to_numpy()
            span = float(np.ptp(values)) or 1.0
            moved = values + rng.normal(0, 0.01 * span, size=len(values))
            if values.min() >= 0 and values.max() <= 1:
                moved = np.clip(moved, 0, 1)
            perturbed[column] = [repr(float(v)) for v in moved]
    yield "perturbed", to_bytes(perturbed)
    if n > 1:
        yield "shuffled", to_bytes(degraded.iloc[rng.permutation(n)])
        yield "shuffled_perfect", to_bytes(perfect.iloc[rng.permutation(len(perfect))])
        yield "reversed", to_bytes(degraded.iloc[::-1])
    if ids and all(_whole(str(v)) for v in degraded[ids[0]]):
        column = ids[0]
        yield "ids_as_numbers", to_bytes(degraded.assign(**{column: [str(int(v)) for v in degraded[column]]}))
        yield "ids_zero_padded", to_bytes(degraded.assign(**{column: [str(v).zfill(12) for v in degraded[column]]}))
        yield "ids_as_floats", to_bytes(degraded.assign(**{column: [f"{int(v)}.0" for v in degraded[column]]}))
    if ids:
        column = ids[0]
        yield "ids_upper_case", to_bytes(degraded.assign(**{column: [str(v).upper() for v in degraded[column]]}))
        yield "ids_with_spaces", to_bytes(degraded.assign(**{column: [f" {v}" for v in degraded[column]]}))
        yield "unknown_id", to_bytes(_set_cell(degraded, n - 1, column, "zz-not-a-test-id"))
    if n > 1:
        yield "missing_row", to_bytes(degraded.iloc[:-1])
        yield "missing_first_row", to_bytes(degraded.iloc[1:])
    yield "duplicate_row", to_bytes(pd.concat([degraded, degraded.iloc[:1]]))
    yield "duplicate_id_other_values", to_bytes(pd.concat([degraded, perfect.iloc[-1:]]).iloc[1:] if n > 1 else degraded)
    if ids:
        extra = degraded.iloc[:1].copy()
        extra[ids[0]] = "zz-extra-row"
        yield "extra_row", to_bytes(pd.concat([degraded, extra]))
    if targets:
        yield "missing_column", to_bytes(degraded.drop(columns=[targets[-1]]))
    yield "extra_column", to_bytes(degraded.assign(extra="0"))
    yield "unnamed_index_column", to_bytes(degraded.reset_index(drop=True).reset_index().rename(columns={"index": "Unnamed: 0"}))
    yield "reordered_columns", to_bytes(degraded[list(degraded.columns)[::-1]])
    yield "header_upper_case", to_bytes(degraded.rename(columns=str.upper))
    yield "header_only", to_bytes(degraded.iloc[:0])
    yield "empty_file", b""
    if first_target is not None and n:
        row = min(1, n - 1)
        for name, value in (
            ("empty_cell", ""),
            ("nan_cell", "nan"),
            ("inf_cell", "inf"),
            ("minus_inf_cell", "-inf"),
            ("text_cell", "abc"),
            ("dash_cell", "-"),
            ("negative_cell", "-1"),
            ("large_cell", "1000000"),
            ("fraction_cell", "1.5"),
            ("zero_cell", "0"),
            ("true_cell", "True"),
        ):
            yield name, to_bytes(_set_cell(degraded, row, first_target, value))
        cell = str(degraded.iloc[row][first_target])
        if _number(cell) is not None:
            yield "scientific_cell", to_bytes(_set_cell(degraded, row, first_target, f"{float(cell):e}"))
        yield "spaces_around_cell", to_bytes(_set_cell(degraded, row, first_target, f" {cell} "))
        if _run_lengths(degraded[first_target]):
            # One run from the first pixel far past any image's last.
            yield "run_past_image", to_bytes(_set_cell(degraded, row, first_target, "1 100000000"))
        # The same in the last row (unscored where a row mask or -1 answers drop it).
        for name, value in (("empty_cell_last_row", ""), ("inf_cell_last_row", "inf"), ("text_cell_last_row", "abc")):
            yield name, to_bytes(_set_cell(degraded, n - 1, first_target, value))
        all_empty = degraded.copy()
        for column in targets:
            all_empty[column] = ""
        yield "all_empty", to_bytes(all_empty)
        if len(targets) > 1:
            yield "empty_cell_last_column", to_bytes(_set_cell(degraded, row, targets[-1], ""))
    if answers_csv is not None:
        yield "answers_file", answers_csv
    lists = [c for c in targets if any(len(str(v).split()) > 1 for v in degraded[c])]
    if lists:
        column = lists[0]
        # Every list cut to its first token: pandas may then read the column as numbers.
        yield "single_token_lists", to_bytes(degraded.assign(**{column: [(str(v).split() or [""])[0] for v in degraded[column]]}))
        cells = list(degraded[column])
        for i, cell in enumerate(cells):
            tokens = str(cell).split()
            numeric = [j for j, t in enumerate(tokens) if j > 0 and _number(t) is not None]
            if len(tokens) >= 3 and numeric:
                tokens[numeric[0]] = "nan"
                yield "nan_in_token_list", to_bytes(_set_cell(degraded, i, column, " ".join(tokens)))
                break
    booleans = [c for c in targets if len(degraded) and set(degraded[c]) <= {"True", "False"}]
    if booleans:
        yield "booleans_as_numbers", to_bytes(degraded.assign(**{c: degraded[c].map({"True": "1", "False": "0"}) for c in booleans}))
    yield "crlf_line_ends", to_bytes(degraded).replace(b"\n", b"\r\n")
    yield "utf8_bom", b"\xef\xbb\xbf" + to_bytes(degraded)
    yield "semicolons", to_bytes(degraded).replace(b",", b";")


MUTATIONS: tuple[str, ...] = (
    "perfect", "degraded", "random", "perturbed", "shuffled", "shuffled_perfect", "reversed",
    "ids_as_numbers", "ids_zero_padded", "ids_as_floats", "ids_upper_case", "ids_with_spaces", "unknown_id",
    "missing_row", "missing_first_row", "duplicate_row", "duplicate_id_other_values", "extra_row",
    "missing_column", "extra_column", "unnamed_index_column", "reordered_columns", "header_upper_case",
    "header_only", "empty_file", "empty_cell", "nan_cell", "inf_cell", "minus_inf_cell", "text_cell",
    "dash_cell", "negative_cell", "large_cell", "fraction_cell", "zero_cell", "true_cell", "scientific_cell",
    "spaces_around_cell", "run_past_image", "empty_cell_last_row",
    "inf_cell_last_row", "text_cell_last_row", "all_empty",
    "empty_cell_last_column", "answers_file", "single_token_lists", "nan_in_token_list", "booleans_as_numbers", "crlf_line_ends", "utf8_bom", "semicolons",
)
