"""The vectorised building blocks of grading give what plain Python references give, on hostile input too.

Each function that does per-row work of grading in NumPy, pandas or Arrow is compared with a
short reference written the obvious way (a dict join, ``str.split``, sets, brute-force pair
counts): the id join (:func:`mleaudit.grading.metrics.arrowtext.text_permutation`), the tokenizer and
its shared vocabulary (:func:`mleaudit.grading.metrics.tokens.column_token_codes`), the place of a label
among predicted tokens and MAP@K (:mod:`mleaudit.grading.metrics.ranking`), word-set Jaccard
(:func:`mleaudit.grading.metrics.text.word_jaccard_score`) and ROC AUC's pair counts
(:func:`mleaudit.grading.metrics.probability.auc_pair_counts`). The inputs include empty columns and
cells, missing cells, multi-byte and special-cased characters (``İ``, final ``Σ``), every kind
of whitespace ``str.split`` knows, NUL bytes, very long cells and repeated tokens.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sklearn import metrics as skm

from mleaudit.grading.errors import ConfigError
from mleaudit.grading.metrics.probability import auc_pair_counts, roc_auc_score
from mleaudit.grading.metrics.ranking import _single_label_mean_ap, first_token_places, map_at_k_score
from mleaudit.grading.metrics.text import word_jaccard_score
from mleaudit.grading.metrics.tokens import PYTHON_WHITESPACE, column_token_codes, distinct_keys

pa = pytest.importorskip("pyarrow")
from mleaudit.grading.metrics import arrowtext  # noqa: E402  (needs pyarrow)
from tests.grading.test_arrow_paths import chunked, reference_permutation  # noqa: E402

ARROW_STR = pd.api.types.pandas_dtype("str")
DTYPES = [object, ARROW_STR] if isinstance(ARROW_STR, pd.StringDtype) else [object]


# ------------------------------------------------------------------------------------ id join


IDS = {
    "prefixed digits": lambda rng, n: [f"id{v:07d}" for v in rng.integers(0, 3 * n + 1, n)],
    "sparse prefixed digits": lambda rng, n: [f"id{v:012d}" for v in rng.integers(0, 10**12, n)],
    "decimal": lambda rng, n: [str(v) for v in rng.integers(0, 10**6, n)],
    "eighteen digits": lambda rng, n: [str(v) for v in rng.integers(10**17, 10**18, n)],
    "nineteen digits": lambda rng, n: [f"{v:019d}" for v in rng.integers(0, 2**62, n)],
    "leading zeros, one width": lambda rng, n: [f"{v:05d}" for v in rng.integers(0, 100, n)],
    "leading zeros, several widths": lambda rng, n: [str(v).zfill(int(w)) for v, w in zip(rng.integers(0, 100, n), rng.integers(1, 4, n))],
    "long prefix": lambda rng, n: [f"test_image_{v:08d}" for v in rng.integers(0, 10**8, n)],
    "hex": lambda rng, n: [f"{v:016x}" for v in rng.integers(0, 2**62, n)],
    "64 hex": lambda rng, n: [f"{v:016x}" * 4 for v in rng.integers(0, 2**62, n)],
    "datetime keys": lambda rng, n: [f"2013-0{m}-1{d} 0{h}:00:00.000000{s}" for m, d, h, s in rng.integers(1, 10, (n, 4))],
    "text": lambda rng, n: [str(rng.choice(["a", "ab", "é", "日本", "", " ", "x" * 9, "x" * 17, "\x00", "İ"])) + str(i) for i in range(n)],
    "empty and spaces": lambda rng, n: [" " * int(v) for v in rng.integers(0, 40, n)],
    "very long": lambda rng, n: ["y" * 5000 + str(v) for v in rng.integers(0, 10**6, n)],
}


@pytest.mark.parametrize("family", sorted(IDS))
def test_text_permutation_matches_a_dict_join(family: str) -> None:
    rng = np.random.default_rng(sorted(IDS).index(family))
    for trial in range(40):
        test_ids = list(dict.fromkeys(IDS[family](rng, int(rng.integers(1, 60)))))
        submission = [test_ids[i] for i in rng.permutation(len(test_ids))]
        if trial % 4 == 1 and len(submission) > 1:
            submission[int(rng.integers(1, len(submission)))] = submission[0]  # a repeat
        elif trial % 4 == 2:
            submission[int(rng.integers(0, len(submission)))] = test_ids[0] + "0"  # an unknown id
        elif trial % 4 == 3 and len(test_ids) > 1:
            test_ids[-1] = test_ids[0]  # the test set itself repeats an id
        got = arrowtext.text_permutation(chunked(submission, rng), chunked(test_ids, rng))
        want = reference_permutation(submission, test_ids)
        assert (got is None) == (want is None), (family, submission, test_ids)
        if want is not None:
            assert got.tolist() == want


def test_padded_and_unpadded_numbers_are_different_ids() -> None:
    # "7" and "007" spell one number; with widths that vary they must not be joined as one.
    test = pa.chunked_array([["7", "10", "8"]], type=pa.large_string())
    assert arrowtext.text_permutation(pa.chunked_array([["10", "007", "8"]], type=pa.large_string()), test) is None
    assert arrowtext.text_permutation(pa.chunked_array([["8", "7", "10"]], type=pa.large_string()), test).tolist() == [1, 2, 0]


@pytest.mark.parametrize("digits", range(1, 21))
def test_ids_that_differ_only_in_their_first_digits_are_different_ids(digits: int) -> None:
    for prefix in ("", "id"):
        test = [f"{prefix}1{i:0{digits - 1}d}" if digits > 1 else f"{prefix}{i}" for i in range(min(5, 10 ** (digits - 1)))]
        for lead in "2789":
            other = [lead + t[len(prefix) + 1 :] if digits > 1 else str(int(t[len(prefix) :]) + 5) for t in test]
            other = [prefix + o for o in other][::-1]
            got = arrowtext.text_permutation(
                pa.chunked_array([other], type=pa.large_string()), pa.chunked_array([test], type=pa.large_string())
            )
            assert got is None, (test, other)


def test_text_permutation_of_empty_and_null_columns() -> None:
    empty = pa.chunked_array([], type=pa.large_string())
    assert arrowtext.text_permutation(empty, empty).tolist() == []
    ids = pa.chunked_array([["a", "b"]], type=pa.large_string())
    assert arrowtext.text_permutation(pa.chunked_array([["a", None]], type=pa.large_string()), ids) is None
    assert arrowtext.text_permutation(ids.slice(0, 1), ids) is None


def test_a_large_shuffle_is_joined_exactly() -> None:
    rng = np.random.default_rng(1)
    n = 200_000
    for test_ids in (np.char.add("id", np.char.zfill(np.arange(n).astype(str), 7)), np.array([f"{v:040x}" for v in rng.integers(0, 2**62, n)])):
        order = rng.permutation(n)
        got = arrowtext.text_permutation(
            pa.chunked_array([pa.array(test_ids[order], type=pa.large_string())]),
            pa.chunked_array([pa.array(test_ids, type=pa.large_string())]),
        )
        assert got is not None and np.array_equal(order[got], np.arange(n))


# ---------------------------------------------------------------------------------- tokens


def test_python_whitespace_is_every_character_str_split_splits_on() -> None:
    everything = "".join(chr(c) for c in range(0x110000) if not 0xD800 <= c < 0xE000)
    assert PYTHON_WHITESPACE == "".join(c for c in everything if c.isspace())
    assert all(len(f"a{c}b".split()) == 2 for c in PYTHON_WHITESPACE)


PIECES = [
    "", "a", "A", "b", "w_12", "W_12", "İ", "ΑΣ", "Σ", "σ", "ς", "ß", "ẞ", "ǅ", "é", "É", "日本", "\x00", "😀",
    " ", "  ", "\t", "\n", "\x0b", "\x1c", "\x1f", "\x85", "\xa0", "\u1680", "\u2003", "\u2028", "\u202f", "\u3000",
    "\u200b", "\u180e", "x" * 300,
]  # fmt: skip


def reference_tokens(cells: list, sep: str | None, lower: bool, k: int | None = None) -> list[tuple[int, str]]:
    out = []
    for row, cell in enumerate(cells):
        text = "" if cell is None or (isinstance(cell, float) and math.isnan(cell)) else str(cell)
        if lower:
            text = text.lower()
        out += [(row, token) for token in text.split(sep)[:k]]
    return out


def assert_codes_match(coded, a: list, b: list, sep: str | None, lower: bool, k: int | None) -> None:
    want_a, want_b = reference_tokens(a, sep, lower), reference_tokens(b, sep, lower, k)
    assert coded.rows_a.tolist() == [r for r, _ in want_a]
    assert coded.rows_b.tolist() == [r for r, _ in want_b]
    # Equal codes exactly for equal tokens, in either column.
    meaning: dict[int, str] = {}
    for code, (_, token) in zip([*coded.codes_a.tolist(), *coded.codes_b.tolist()], [*want_a, *want_b]):
        assert meaning.setdefault(code, token) == token
    assert len(set(meaning.values())) == len(meaning)
    assert all(0 <= c < coded.n_codes for c in meaning)


def random_cell(rng: np.random.Generator) -> str | None:
    if rng.uniform() < 0.08:
        return None
    return "".join(PIECES[i] + (" " if rng.uniform() < 0.5 else "") for i in rng.integers(0, len(PIECES), int(rng.integers(0, 7))))


@pytest.mark.parametrize("sep", [None, " "])
@pytest.mark.parametrize("lower", [False, True])
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_column_token_codes_split_and_lower_as_python_does(sep: str | None, lower: bool, dtype: object) -> None:
    rng = np.random.default_rng(7)
    for _ in range(150):
        n = int(rng.integers(0, 9))
        a, b = [random_cell(rng) for _ in range(n)], [random_cell(rng) for _ in range(n)]
        for k in (None, 1, 3):
            coded = column_token_codes(pd.Series(a, dtype=dtype), pd.Series(b, dtype=dtype), sep=sep, lower=lower, max_tokens_b=k)
            assert_codes_match(coded, a, b, sep, lower, k)


def test_column_token_codes_of_sliced_chunked_arrow_columns() -> None:
    if object not in DTYPES or len(DTYPES) < 2:
        pytest.skip("pandas' str dtype is not Arrow-backed here")
    rng = np.random.default_rng(8)
    for _ in range(60):
        n = int(rng.integers(0, 12))
        a, b = [random_cell(rng) or "" for _ in range(n)], [random_cell(rng) or "" for _ in range(n)]
        # An offset into the first chunk of each column, chunk edges in different places.
        series = [pd.Series(pd.array(chunked(["pad", *cells], rng).slice(1), dtype=ARROW_STR)) for cells in (a, b)]
        for sep in (None, " "):
            assert_codes_match(column_token_codes(*series, sep=sep, lower=True, max_tokens_b=2), a, b, sep, True, 2)


def test_column_token_codes_of_numbers_missing_and_empty_columns() -> None:
    coded = column_token_codes(pd.Series([1.5, np.nan, 7.0]), pd.Series(["1.5 7.0", "nan", ""]), sep=" ")
    assert_codes_match(coded, ["1.5", None, "7.0"], ["1.5 7.0", "nan", ""], " ", False, None)
    empty = column_token_codes(pd.Series([], dtype=object), pd.Series([], dtype=object), lower=True)
    assert empty.rows_a.size == empty.codes_b.size == 0 and empty.n_codes == 1
    with pytest.raises(ValueError):
        column_token_codes(pd.Series(["a"]), pd.Series(["a"]), sep=",")
    with pytest.raises(ValueError):
        column_token_codes(pd.Series(["a"]), pd.Series(["a"]), max_tokens_b=0)


def test_column_token_codes_of_cells_python_holds_but_arrow_cannot() -> None:
    # A lone surrogate cannot be UTF-8: such columns are split in Python, with the same result.
    a, b = ["x \ud800 y", "Y"], ["\ud800 X", "y  y"]
    for sep in (None, " "):
        coded = column_token_codes(pd.Series(a, dtype=object), pd.Series(b, dtype=object), sep=sep, lower=True, max_tokens_b=2)
        assert_codes_match(coded, a, b, sep, True, 2)


def test_column_token_codes_of_very_long_cells_and_many_tokens() -> None:
    rng = np.random.default_rng(9)
    words = np.array(["w_1", "w_2", "ÄÖ", "x" * 1000, ""])
    a = [" ".join(words[rng.integers(0, len(words), 20_000)]), "\u3000".join(words[rng.integers(0, len(words), 500)])]
    b = [" ".join(words[rng.integers(0, len(words), 50_000)]), "y" * 2_000_000]
    for dtype in DTYPES:
        for sep, k in ((" ", 12), (" ", None), (None, None)):
            coded = column_token_codes(pd.Series(a, dtype=dtype), pd.Series(b, dtype=dtype), sep=sep, lower=True, max_tokens_b=k)
            assert_codes_match(coded, a, b, sep, True, k)


def test_distinct_keys_equal_numpy_unique() -> None:
    rng = np.random.default_rng(10)
    for keys in (np.zeros(0, np.int64), np.array([3]), rng.integers(-(2**62), 2**62, 1000), rng.integers(0, 5, 1000)):
        assert np.array_equal(distinct_keys(keys), np.unique(keys))


# ------------------------------------------------------------------------------------ ranking


def reference_ap(actual: set, predicted: list, k: int) -> float:
    """B. Hamner's apk, as MLE-bench's metrics module writes it."""
    predicted = predicted[:k]
    score, hits = 0.0, 0.0
    for i, p in enumerate(predicted):
        if p in actual and p not in predicted[:i]:
            hits += 1.0
            score += hits / (i + 1.0)
    return score / min(len(actual), k) if actual else 0.0


def reference_place(cell: str, label: str, k: int) -> int:
    tokens = cell.split(" ")[:k]
    return tokens.index(label) if label in tokens else -1


VOCABULARY = ["", "a", "w_1", "w_12", "w_123", "new_whale", "ü", "日本", "x" * 7, "x" * 8, "x" * 9, "x" * 70, "\x00", "İ"]


def random_list(rng: np.random.Generator, size: int) -> str:
    return " ".join(VOCABULARY[i] for i in rng.integers(0, len(VOCABULARY), size))


@pytest.mark.parametrize("k", [1, 2, 5, 12, 20])
def test_first_token_places_are_str_split_places(k: int) -> None:
    rng = np.random.default_rng(k)
    for _ in range(200):
        n = int(rng.integers(0, 12))
        cells = [random_list(rng, int(rng.integers(0, 15))) for _ in range(n)]
        labels = [VOCABULARY[int(i)] for i in rng.integers(0, len(VOCABULARY), n)]
        for dtype in DTYPES:
            got = first_token_places(pd.Series(cells, dtype=dtype), pd.Series(labels, dtype=dtype), k)
            assert got.tolist() == [reference_place(c, label, k) for c, label in zip(cells, labels)], (cells, labels)
    assert first_token_places(pd.Series(["a b"]), pd.Series(["a b"]), 5) is None  # a label that is two tokens
    assert first_token_places(pd.Series([None, "x"]), pd.Series(["", "x"]), 1).tolist() == [0, 0]  # missing is empty
    with pytest.raises(ValueError):
        first_token_places(pd.Series(["a"]), pd.Series(["a", "b"]), 5)


@pytest.mark.parametrize("several", [False, True])
def test_map_at_k_equals_hamners_apk(several: bool) -> None:
    rng = np.random.default_rng(20 + several)
    for trial in range(150):
        n, k = int(rng.integers(0, 15)), int(rng.choice([1, 3, 5, 12]))
        truth = [random_list(rng, int(rng.integers(1, 4)) if several else 1) for _ in range(n)]
        cells = [random_list(rng, int(rng.integers(0, 16))) for _ in range(n)]
        if n and trial % 3 == 0:
            cells[0] = " ".join([truth[0].split(" ")[0]] * 5)  # a true label repeated
        want = float(np.mean([reference_ap(set(t.split(" ")), c.split(" "), k) for t, c in zip(truth, cells)])) if n else 0.0
        for dtype in DTYPES:
            answers = pd.DataFrame({"id": range(n), "y": pd.Series(truth, dtype=dtype)})
            submission = pd.DataFrame({"id": range(n), "y": pd.Series(cells, dtype=dtype)})
            got = map_at_k_score(answers, submission, id_columns=["id"], target_columns=["y"], k=k)
            if several and any(" " in t for t in truth):
                assert got == want, (truth, cells, k)  # the same sums, in the same order
            else:
                assert got == pytest.approx(want, rel=1e-13, abs=1e-15)
                assert got == _single_label_mean_ap(answers["y"], submission["y"], k)


def test_map_at_k_of_large_lists_with_many_labels() -> None:
    rng = np.random.default_rng(30)
    n, k = 3000, 12
    articles = np.array([str(v) for v in rng.integers(108775015, 959461001, 400)])
    truth = [" ".join(articles[rng.integers(0, 400, int(rng.integers(1, 9)))]) for _ in range(n)]
    cells = [" ".join(articles[rng.integers(0, 400, int(rng.integers(0, 40)))]) for _ in range(n)]
    want = float(np.mean([reference_ap(set(t.split(" ")), c.split(" "), k) for t, c in zip(truth, cells)]))
    for dtype in DTYPES:
        answers = pd.DataFrame({"id": range(n), "y": pd.Series(truth, dtype=dtype)})
        submission = pd.DataFrame({"id": range(n), "y": pd.Series(cells, dtype=dtype)})
        assert map_at_k_score(answers, submission, id_columns=["id"], target_columns=["y"], k=k) == want


# --------------------------------------------------------------------------------------- text


def reference_jaccard(truth: list, pred: list, empty_score: float = 0.0) -> float:
    scores = []
    for t, p in zip(truth, pred):
        a = set(("" if t is None else t).lower().split())
        b = set(("" if p is None else p).lower().split())
        union = len(a | b)
        scores.append(len(a & b) / union if union else empty_score)
    return float(np.mean(scores)) if scores else 0.0


def test_word_jaccard_equals_python_sets_on_hostile_text() -> None:
    rng = np.random.default_rng(40)
    for _ in range(200):
        n = int(rng.integers(0, 10))
        truth, pred = [random_cell(rng) for _ in range(n)], [random_cell(rng) for _ in range(n)]
        want = reference_jaccard(truth, pred)
        for dtype in DTYPES:
            answers = pd.DataFrame({"id": range(n), "t": pd.Series(truth, dtype=dtype)})
            submission = pd.DataFrame({"id": range(n), "t": pd.Series(pred, dtype=dtype)})
            assert word_jaccard_score(answers, submission, id_columns=["id"], target_columns=["t"]) == want, (truth, pred)


def test_word_jaccard_lower_cases_as_python_does() -> None:
    # Python's str.lower maps "İ" to "i̇" (two characters) and a final "Σ" to "ς"; Arrow's
    # utf8_lower maps them to "i" and "σ": only Python's mapping makes these pairs differ.
    for dtype in DTYPES:
        answers = pd.DataFrame({"id": [1, 2], "t": pd.Series(["i", "ΑΣ"], dtype=dtype)})
        submission = pd.DataFrame({"id": [1, 2], "t": pd.Series(["İ", "ασ"], dtype=dtype)})
        assert word_jaccard_score(answers, submission, id_columns=["id"], target_columns=["t"]) == 0.0
        submission = pd.DataFrame({"id": [1, 2], "t": pd.Series(["I", "ας"], dtype=dtype)})
        assert word_jaccard_score(answers, submission, id_columns=["id"], target_columns=["t"]) == 1.0


# ------------------------------------------------------------------------------------ ROC AUC


def test_auc_pair_counts_equal_brute_force_counts() -> None:
    rng = np.random.default_rng(3)
    for trial in range(150):
        n = int(rng.integers(2, 300))
        truth = rng.integers(0, 2, n).astype(float) * 3.0 - 1.0
        if truth.min() == truth.max():
            continue
        scores = rng.integers(-3, 4, n) / 4.0 if trial % 2 else rng.normal(size=n)
        if trial % 5 == 0:
            scores = np.where(scores == 0, -0.0, scores)  # signed zeros are one score
        above, ties, n_pos, n_neg = auc_pair_counts(truth, scores)
        positives, negatives = scores[truth == 2.0], scores[truth != 2.0]
        assert (n_pos, n_neg) == (positives.size, negatives.size)
        assert above == int((positives[:, None] > negatives[None, :]).sum())
        assert ties == int((positives[:, None] == negatives[None, :]).sum())
        assert roc_auc_score(truth == 2.0, scores) == pytest.approx(skm.roc_auc_score(truth == 2.0, scores), rel=1e-12)


def test_auc_pair_counts_refuse_columns_that_are_not_two_class() -> None:
    scores = np.array([0.1, 0.2, 0.3])
    for truth in ([1.0, 1.0, 1.0], [0.0, 1.0, 2.0], [0.0, np.nan, 1.0], []):
        with pytest.raises(ConfigError):
            auc_pair_counts(np.array(truth), scores[: len(truth)])
    assert auc_pair_counts(np.array([5.0, -1.0, 5.0]), scores) == (1, 0, 2, 1)


def test_auc_pair_counts_of_a_large_column_with_many_ties() -> None:
    rng = np.random.default_rng(5)
    n = 300_000
    truth = (rng.uniform(size=n) < 0.4).astype(float)
    scores = rng.integers(0, 1000, n) / 1000.0
    above, ties, n_pos, n_neg = auc_pair_counts(truth, scores)
    # Per score level: negatives below and tied, counted by histograms.
    pos_hist = np.bincount((scores[truth == 1] * 1000).round().astype(int), minlength=1000)
    neg_hist = np.bincount((scores[truth == 0] * 1000).round().astype(int), minlength=1000)
    below = np.concatenate([[0], np.cumsum(neg_hist)[:-1]])
    assert above == int((pos_hist * below).sum()) and ties == int((pos_hist * neg_hist).sum())


# ------------------------------------------------------------------------------- no C of ours


def test_the_project_ships_no_compiled_code_of_its_own() -> None:
    root = Path(__file__).resolve().parents[2]
    for package in ("grading", "audit", "sandbox"):
        compiled = [p for p in (root / package).rglob("*") if p.suffix in {".c", ".cc", ".cpp", ".pyx", ".so", ".pyd"}]
        assert not compiled, compiled
    assert not (root / "setup.py").exists() or "Extension" not in (root / "setup.py").read_text()
