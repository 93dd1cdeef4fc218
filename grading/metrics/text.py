"""Text metrics: edit distances, word-set Jaccard, and question-answering spans.

Cells are read verbatim from the CSV; an empty cell is empty text. Edit distances are
Levenshtein distances computed by ``rapidfuzz`` (the library behind ``python-Levenshtein``,
which MLE-bench's graders call).
"""

from __future__ import annotations

import re
from typing import Sequence

import numpy as np
import pandas as pd
from rapidfuzz import process as _rf_process
from rapidfuzz.distance import Levenshtein as _Levenshtein

from mleaudit.grading.metrics.base import invalid_cell, undefined_metric
from mleaudit.grading.metrics.tokens import column_token_codes, distinct_keys

__all__ = [
    "levenshtein_distance_error",
    "normalized_edit_distance_error",
    "word_jaccard_score",
    "answer_span_accuracy_score",
]


def _text(values: pd.Series) -> list[str]:
    return values.fillna("").astype(str).tolist()


def levenshtein_distance_error(
    answers: pd.DataFrame,
    submission: pd.DataFrame,
    *,
    id_columns: Sequence[str],
    target_columns: Sequence[str],
) -> float:
    """Mean Levenshtein distance between predicted and true strings, in characters.

    Parameters
    ----------
    answers, submission : pandas.DataFrame
        Aligned frames whose target column holds text (an empty cell is the empty string).

    Returns
    -------
    float
        >= 0, lower is better.

    References
    ----------
    V. I. Levenshtein (1966). Binary codes capable of correcting deletions, insertions and
    reversals. Soviet Physics Doklady 10(8), 707-710.

    Examples
    --------
    >>> import pandas as pd
    >>> answers = pd.DataFrame({"id": [1, 2], "sentence": ["kitten", "abc"]})
    >>> sub = pd.DataFrame({"id": [1, 2], "sentence": ["sitting", "abc"]})
    >>> levenshtein_distance_error(answers, sub, id_columns=["id"], target_columns=["sentence"])
    1.5
    """
    column = target_columns[0]
    truth, pred = _text(answers[column]), _text(submission[column])
    if not truth:
        return 0.0
    distances = _rf_process.cpdist(truth, pred, scorer=_Levenshtein.distance, workers=1)
    return float(np.mean(distances))


_INTEGER = re.compile(r"^[+-]?\d+$")


def _integer_sequences(frame: pd.DataFrame, column: str, *, submission: bool) -> list[list[int]]:
    sequences: list[list[int]] = []
    for position, cell in enumerate(_text(frame[column])):
        tokens = cell.split()
        if submission and not all(_INTEGER.match(t) for t in tokens):
            bad = next(t for t in tokens if not _INTEGER.match(t))
            raise invalid_cell(frame, position, column, f"the token {bad!r}, which is not an integer, in its sequence")
        sequences.append([int(t) for t in tokens])
    return sequences


def normalized_edit_distance_error(
    answers: pd.DataFrame,
    submission: pd.DataFrame,
    *,
    id_columns: Sequence[str],
    target_columns: Sequence[str],
) -> float:
    """Sum of Levenshtein distances between integer sequences over the number of true tokens.

    Cells are space-separated integers (gesture ids). The score is the total edit distance
    (insertions, deletions, substitutions of whole tokens) divided by the total length of the
    true sequences: an error rate that can exceed 1 (ChaLearn multi-modal gesture recognition).

    Parameters
    ----------
    answers, submission : pandas.DataFrame
        Aligned frames whose target column holds space-separated integers.

    Returns
    -------
    float
        >= 0, lower is better.

    Raises
    ------
    InvalidSubmission
        For a token that is not an integer (the row named).
    ConfigError
        If the answers hold no token at all.

    Examples
    --------
    >>> import pandas as pd
    >>> answers = pd.DataFrame({"Id": [1, 2], "Sequence": ["1 2 3", "4 5"]})
    >>> sub = pd.DataFrame({"Id": [1, 2], "Sequence": ["1 3", "4 5 6"]})
    >>> normalized_edit_distance_error(answers, sub, id_columns=["Id"], target_columns=["Sequence"])
    0.4
    """
    column = target_columns[0]
    truth = _integer_sequences(answers, column, submission=False)
    pred = _integer_sequences(submission, column, submission=True)
    total = sum(len(t) for t in truth)
    if total == 0:
        raise undefined_metric("normalized_edit_distance_error", "the answers hold no token")
    distances = _rf_process.cpdist(truth, pred, scorer=_Levenshtein.distance, workers=1) if truth else []
    return float(np.sum(distances) / total)


def word_jaccard_score(
    answers: pd.DataFrame,
    submission: pd.DataFrame,
    *,
    id_columns: Sequence[str],
    target_columns: Sequence[str],
    empty_score: float = 0.0,
) -> float:
    """Mean Jaccard similarity of the lower-cased word sets of predicted and true text.

    Per row, ``|A & B| / |A | B|`` over the sets of whitespace-separated words; the score is
    the mean over rows. A row where both texts are empty scores ``empty_score``: 0 as
    scikit-learn's ``jaccard_score`` (``average="samples"``) gives, which MLE-bench's chaii grader
    uses; Kaggle's tweet-sentiment formula divides by zero there.

    Parameters
    ----------
    answers, submission : pandas.DataFrame
        Aligned frames whose target column holds text.
    empty_score : float
        Score of a row whose two word sets are empty.

    Returns
    -------
    float
        In [0, 1], higher is better.

    References
    ----------
    Kaggle Tweet Sentiment Extraction and chaii - Hindi and Tamil Question Answering, evaluation pages.

    Examples
    --------
    >>> import pandas as pd
    >>> answers = pd.DataFrame({"id": [1, 2], "text": ["Very good", "bad"]})
    >>> sub = pd.DataFrame({"id": [1, 2], "text": ["very GOOD day", "worse"]})
    >>> round(word_jaccard_score(answers, sub, id_columns=["id"], target_columns=["text"]), 4)
    0.3333
    """
    column = target_columns[0]
    n_rows = len(answers)
    if n_rows == 0:
        return 0.0
    coded = column_token_codes(answers[column], submission[column], lower=True)
    n_codes = coded.n_codes
    true_keys, pred_keys = distinct_keys(coded.keys_a()), distinct_keys(coded.keys_b())
    common = np.intersect1d(true_keys, pred_keys, assume_unique=True)
    count = lambda keys: np.bincount((keys // n_codes).astype(np.intp), minlength=n_rows)  # noqa: E731
    inter, size_true, size_pred = count(common), count(true_keys), count(pred_keys)
    union = size_true + size_pred - inter
    scores = np.divide(inter, union, out=np.full(n_rows, float(empty_score)), where=union > 0)
    return float(np.mean(scores))


_SPAN = re.compile(r"^-?\d+:-?\d+$")


def _answer(cell: str) -> tuple[int, int] | str:
    if _SPAN.match(cell):
        start, end = cell.split(":")
        return int(start), int(end)
    return cell


def _prediction(cell: str) -> tuple[int, int] | str | None:
    """A prediction parsed as MLE-bench's grader parses it, or ``None`` when it cannot be.

    The cell is stripped; a text with exactly one colon is a span whose two parts are read with
    Python's ``int`` (so ``" 3: 9"`` and ``"+3:9"`` are the span (3, 9)); otherwise only
    ``YES``, ``NO`` and the empty text are predictions.
    """
    pred = cell.strip()
    parts = pred.split(":")
    if len(parts) == 2:
        try:
            return int(parts[0]), int(parts[1])
        except ValueError:
            return None
    return pred if pred in ("YES", "NO", "") else None


def answer_span_accuracy_score(
    answers: pd.DataFrame,
    submission: pd.DataFrame,
    *,
    id_columns: Sequence[str],
    target_columns: Sequence[str],
) -> float:
    """Natural Questions scoring as MLE-bench's TensorFlow 2.0 QA grader computes it.

    Each row is one question part (``<example>_long`` or ``<example>_short``). The answers
    column lists the valid answers, space-separated (``"12:40"`` token spans, ``YES``, ``NO``;
    empty when the part has no answer); the submission gives one answer or nothing. A row is a
    hit when the prediction is one of the valid answers, or when nothing is predicted and
    nothing is valid. MLE-bench feeds "answered" and "correct" flags to scikit-learn's micro F1,
    which for two classes equals the share of rows where the flags agree; this is that share.

    Parameters
    ----------
    answers : pandas.DataFrame
        Target column: space-separated valid answers per row.
    submission : pandas.DataFrame
        Target column: ``start:end``, ``YES``, ``NO`` or empty. Cells are stripped, and the two
        parts of a span are read with Python's ``int``, as MLE-bench's grader reads them.

    Returns
    -------
    float
        In [0, 1], higher is better.

    Raises
    ------
    InvalidSubmission
        For a prediction in another format (the row named).

    References
    ----------
    Kaggle TensorFlow 2.0 Question Answering, evaluation page; MLE-bench,
    ``mlebench/competitions/tensorflow2-question-answering/grade.py``.

    Examples
    --------
    >>> import pandas as pd
    >>> answers = pd.DataFrame({"example_id": ["1_long", "1_short", "2_long"], "PredictionString": ["3:9", "YES 4:5", ""]})
    >>> sub = pd.DataFrame({"example_id": ["1_long", "1_short", "2_long"], "PredictionString": ["3:9", "NO", ""]})
    >>> round(answer_span_accuracy_score(answers, sub, id_columns=["example_id"], target_columns=["PredictionString"]), 4)
    0.6667
    """
    column = target_columns[0]
    valid_sets = [{_answer(t) for t in cell.split()} for cell in _text(answers[column])]
    hits = 0
    for position, cell in enumerate(_text(submission[column])):
        pred = _prediction(cell)
        if pred is None:
            raise invalid_cell(
                submission, position, column, f"{cell.strip()!r}, which is not 'start:end', 'YES', 'NO' or empty"
            )
        valid = valid_sets[position]
        answered = pred != ""
        correct = (pred in valid) if answered else bool(valid)
        hits += int(answered == correct)
    return float(hits / len(valid_sets)) if valid_sets else 0.0
