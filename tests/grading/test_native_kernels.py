"""The compiled grading kernels decide what they claim to decide, exactly, and refuse bad buffers.

tests/grading/test_arrow_paths.py runs the scoring paths with and without the kernels against
plain references; a kernel that declined every case would pass there (its caller falls back).
These tests call :mod:`grading.metrics.native` directly: a valid case must be decided by the
kernel itself, with the reference's answer, and buffers that do not fit must raise, not crash.
"""

from __future__ import annotations

import numpy as np
import pytest
from sklearn import metrics as skm

from grading.metrics import native

pa = pytest.importorskip("pyarrow")
pytestmark = pytest.mark.skipif(not native.available(), reason="the compiled grading kernels are not built here")


def chunked(values: list[str], rng: np.random.Generator) -> "pa.ChunkedArray":
    cuts = sorted(int(c) for c in rng.integers(0, len(values) + 1, 2))
    parts = [values[: cuts[0]], values[cuts[0] : cuts[1]], values[cuts[1] :]]
    return pa.chunked_array([pa.array(p, type=pa.large_string()) for p in parts], type=pa.large_string())


IDS = {
    "prefixed digits": lambda rng, n: [f"id{v:07d}" for v in rng.integers(0, 3 * n + 1, n)],
    "sparse prefixed digits": lambda rng, n: [f"id{v:012d}" for v in rng.integers(0, 10**12, n)],
    "decimal": lambda rng, n: [str(v) for v in rng.integers(0, 10**6, n)],
    "eighteen digits": lambda rng, n: [str(v) for v in rng.integers(10**17, 10**18, n)],
    "dense seventeen digits": lambda rng, n: [str(10**16 + int(v)) for v in rng.integers(0, 3 * n + 1, n)],
    "dense prefixed sixteen digits": lambda rng, n: [f"id{9 * 10**15 + int(v)}" for v in rng.integers(0, 3 * n + 1, n)],
    "nineteen digits": lambda rng, n: [f"{v:019d}" for v in rng.integers(0, 2**62, n)],
    "leading zeros, one width": lambda rng, n: [f"{v:05d}" for v in rng.integers(0, 100, n)],
    "long prefix": lambda rng, n: [f"test_image_{v:08d}" for v in rng.integers(0, 10**8, n)],
    "hex": lambda rng, n: [f"{v:016x}" for v in rng.integers(0, 2**62, n)],
    "text": lambda rng, n: [str(rng.choice(["a", "ab", "é", "日本", "", " ", "x" * 9, "x" * 17, "\x00"])) + str(i) for i, _ in enumerate(range(n))],
}


def reference_permutation(values: list[str], value_set: list[str]) -> list[int] | None:
    if len(values) != len(value_set) or len(set(value_set)) != len(value_set) or sorted(values) != sorted(value_set):
        return None
    row = {v: i for i, v in enumerate(values)}
    return [row[v] for v in value_set]


@pytest.mark.parametrize("family", sorted(IDS))
def test_text_permutation_decides_every_reordering_itself(family: str) -> None:
    rng = np.random.default_rng(sorted(IDS).index(family))
    for trial in range(40):
        test_ids = list(dict.fromkeys(IDS[family](rng, int(rng.integers(1, 60)))))
        submission = [test_ids[i] for i in rng.permutation(len(test_ids))]
        got = native.text_permutation(chunked(submission, rng), chunked(test_ids, rng))
        assert got is not None, (family, test_ids)
        assert got.tolist() == reference_permutation(submission, test_ids)


@pytest.mark.parametrize("family", sorted(IDS))
def test_text_permutation_refuses_repeats_and_unknown_ids(family: str) -> None:
    rng = np.random.default_rng(100 + sorted(IDS).index(family))
    for trial in range(40):
        test_ids = list(dict.fromkeys(IDS[family](rng, int(rng.integers(2, 60)))))
        if len(test_ids) < 2:
            continue
        submission = [test_ids[i] for i in rng.permutation(len(test_ids))]
        if trial % 3 == 0:
            submission[int(rng.integers(1, len(submission)))] = submission[0]
        elif trial % 3 == 1:
            submission[int(rng.integers(0, len(submission)))] = test_ids[0] + "0"
        else:
            test_ids[-1] = test_ids[0]
        assert reference_permutation(submission, test_ids) is None
        assert native.text_permutation(chunked(submission, rng), chunked(test_ids, rng)) is None


def test_padded_and_unpadded_numbers_are_different_ids() -> None:
    # "7" and "007" spell one number; with widths that vary they must not be joined as one.
    test = pa.chunked_array([["7", "10", "8"]], type=pa.large_string())
    assert native.text_permutation(pa.chunked_array([["10", "007", "8"]], type=pa.large_string()), test) is None
    assert native.text_permutation(pa.chunked_array([["8", "7", "10"]], type=pa.large_string()), test).tolist() == [1, 2, 0]


@pytest.mark.parametrize("digits", range(1, 21))
def test_dense_ids_that_differ_in_their_first_digit_are_different_ids(digits: int) -> None:
    # Consecutive ids join through the dense table; ids equal but for their leading digits
    # (beyond any one 8-byte word of them) are other ids, with the prefix or without.
    for prefix in ("", "id"):
        test = [f"{prefix}1{i:0{digits - 1}d}" if digits > 1 else f"{prefix}{i}" for i in range(min(5, 10 ** (digits - 1)))]
        for lead in "2789":
            other = [lead + t[len(prefix) + 1 :] if digits > 1 else str(int(t[len(prefix):]) + 5) for t in test]
            other = [prefix + o for o in other][::-1]
            assert native.text_permutation(pa.chunked_array([other], type=pa.large_string()), pa.chunked_array([test], type=pa.large_string())) is None, (test, other)


def test_a_million_prefixed_ids_join_through_the_dense_table() -> None:
    rng = np.random.default_rng(1)
    n = 1_000_000
    test_ids = np.char.add("id", np.char.zfill(np.arange(n).astype(str), 7))
    order = rng.permutation(n)
    got = native.text_permutation(pa.chunked_array([pa.array(test_ids[order], type=pa.large_string())]), pa.chunked_array([pa.array(test_ids, type=pa.large_string())]))
    assert got is not None and np.array_equal(order[got], np.arange(n))


VOCABULARY = ["", "a", "w_1", "w_12", "w_123", "new_whale", "w_f48451c", "ü", "日本", "x" * 7, "x" * 8, "x" * 9, "x" * 16, "x" * 70]


def reference_place(cell: str, label: str, k: int) -> int:
    tokens = cell.split(" ")[:k]
    return tokens.index(label) if label in tokens else -1


@pytest.mark.parametrize("k", [1, 2, 5, 8, 9, 20])
def test_first_token_match_decides_every_row_like_str_split(k: int) -> None:
    rng = np.random.default_rng(k)
    for _ in range(300):
        n = int(rng.integers(1, 12))
        cells = [" ".join(VOCABULARY[i] for i in rng.integers(0, len(VOCABULARY), int(rng.integers(0, 12)))) for _ in range(n)]
        labels = [VOCABULARY[int(i)] for i in rng.integers(0, len(VOCABULARY), n)]
        # The last cell ends the buffer: no read may pass it.
        got = native.first_token_match(chunked(["pad"] + cells, rng).slice(1), chunked(labels, rng), k)
        assert got is not None
        assert got.tolist() == [reference_place(c, label, k) for c, label in zip(cells, labels)], (cells, labels)


@pytest.mark.parametrize("k", [1, 5, 9])
def test_first_token_counts_count_the_places_str_split_gives(k: int) -> None:
    rng = np.random.default_rng(100 + k)
    for n in list(range(1, 40)) + [native._PARALLEL_ROWS * 2 + 3]:
        cells = [" ".join(VOCABULARY[i] for i in rng.integers(0, len(VOCABULARY), int(rng.integers(0, 12)))) for _ in range(min(n, 3000))]
        cells = [cells[i % len(cells)] for i in range(n)]
        labels = [VOCABULARY[int(i)] for i in rng.integers(0, len(VOCABULARY), n)]
        # Both columns chunked, differently, with edges on both sides of the middle.
        counts = native.first_token_counts(chunked(["pad"] + cells, rng).slice(1), chunked(labels, rng), k)
        places = np.array([reference_place(c, label, k) for c, label in zip(cells, labels)])
        assert counts.tolist() == np.bincount(places + 1, minlength=k + 1).tolist(), n
    assert native.first_token_counts(chunked(["a b"], rng), chunked(["a b"], rng), 5) is None  # a label with a space


def test_first_token_match_cells_around_64_bytes() -> None:
    # Cells of up to 63 bytes have their spaces found as one mask; longer ones token by token.
    for size in range(55, 75):
        for position in range(0, size, 3):
            cell = "y" * position + " w" + "z" * max(0, size - position - 2)
            cell = cell[:size]
            label = cell.split(" ")[1] if " " in cell else "w"
            got = native.first_token_match(
                pa.chunked_array([[cell]], type=pa.large_string()), pa.chunked_array([[label]], type=pa.large_string()), 5
            )
            assert got.tolist() == [reference_place(cell, label, 5)], (size, position)


def test_first_token_match_declines_labels_with_spaces() -> None:
    cells = pa.chunked_array([["a b c"]], type=pa.large_string())
    assert native.first_token_match(cells, pa.chunked_array([["a b"]], type=pa.large_string()), 5) is None


def test_auc_pair_counts_give_scikit_learns_auc() -> None:
    rng = np.random.default_rng(3)
    for trial in range(100):
        n = int(rng.integers(2, 300))
        truth = rng.integers(0, 2, n).astype(float) * 3.0
        if truth.min() == truth.max():
            continue
        scores = rng.integers(-3, 4, n) / 4.0 if trial % 2 else rng.normal(size=n)
        above, ties, n_pos, n_neg = native.auc_pair_counts(truth, scores)
        positives, negatives = scores[truth == 3.0], scores[truth != 3.0]
        assert (n_pos, n_neg) == (positives.size, negatives.size)
        assert above == int((positives[:, None] > negatives[None, :]).sum())
        assert ties == int((positives[:, None] == negatives[None, :]).sum())
        assert (above + ties / 2) / (n_pos * n_neg) == pytest.approx(skm.roc_auc_score(truth == 3.0, scores), rel=1e-12)


def test_auc_pair_counts_leave_columns_that_are_not_two_class_to_the_caller() -> None:
    scores = np.array([0.1, 0.2, 0.3])
    for truth in ([1.0, 1.0, 1.0], [0.0, 1.0, 2.0], [0.0, np.nan, 1.0], []):
        assert native.auc_pair_counts(np.array(truth), scores[: len(truth)]) is None, truth
    assert native.auc_pair_counts(np.array([5.0, -1.0, 5.0]), scores) == (1, 0, 2, 1)


def test_kernels_refuse_buffers_that_do_not_fit() -> None:
    from grading.metrics import _kernels

    data = np.frombuffer(b"abcdef", dtype=np.uint8)
    order = np.empty(2, dtype=np.int64)
    past_the_end = np.array([0, 3, 9], dtype=np.int64)
    decreasing = np.array([0, 4, 2], dtype=np.int64)
    good = np.array([0, 3, 6], dtype=np.int64)
    for offsets in (past_the_end, decreasing, np.array([], dtype=np.int64)):
        with pytest.raises(ValueError):
            _kernels.text_join(offsets, data, good, data, order)
        with pytest.raises(ValueError):
            _kernels.first_token_match(good, data, offsets, data, 5, order)
        with pytest.raises(ValueError):
            _kernels.same_texts(offsets, data, offsets, data)
    with pytest.raises(ValueError):
        _kernels.text_join(good, data, good, data, np.empty(3, dtype=np.int64))
    with pytest.raises(ValueError):
        _kernels.dense_key_join(np.zeros(2, dtype=np.int64), np.zeros(3, dtype=np.int64), 0, 1, order)
    with pytest.raises(ValueError):  # a table of 2^64 places is not attempted (nor its size overflowed)
        _kernels.dense_key_join(np.zeros(2, dtype=np.int64), np.zeros(2, dtype=np.int64), -(2**63), 2**63 - 1, order)
    with pytest.raises(ValueError):
        _kernels.split_by_label(np.zeros(3), np.zeros(3), np.empty(4), np.empty(3))
    # Taking texts: a row outside the column, offsets past the bytes, a place past the output,
    # and new offsets that fall back (a long text placed where the output is short).
    rows = np.array([1, 0], dtype=np.int64)
    with pytest.raises(ValueError):
        _kernels.taken_offsets(good, np.array([2, 0], dtype=np.int64), np.empty(3, dtype=np.int64))
    with pytest.raises(ValueError):
        _kernels.taken_offsets(decreasing, rows, np.empty(3, dtype=np.int64))
    for offsets, new_offsets, size in (
        (good, np.array([0, 3, 6], dtype=np.int64), 6),
        (past_the_end, np.array([0, 6, 9], dtype=np.int64), 9),
        (good, np.array([0, 3, 6], dtype=np.int64), 5),
        (good, np.array([0, 3, 1], dtype=np.int64), 1),
    ):
        with pytest.raises(ValueError):
            _kernels.copy_taken_texts(offsets, data, np.array([2, 0], dtype=np.int64) if size == 6 else rows, new_offsets, np.empty(size, dtype=np.uint8))


def test_inverse_order_inverts_every_reordering() -> None:
    rng = np.random.default_rng(4)
    for n in (0, 1, 2, 33, 100_003):
        order = rng.permutation(n)
        place = native.inverse_order(order)
        assert place.dtype == np.intp and place.tolist() == np.argsort(order).tolist()
    with pytest.raises(ValueError):
        native.inverse_order(np.array([0, 2], dtype=np.int64))
    with pytest.raises(ValueError):
        native.inverse_order(np.array([-1, 0], dtype=np.int64))
    from grading.metrics import _kernels

    with pytest.raises(ValueError):
        _kernels.inverse_order(np.array([1, 0], dtype=np.int64), np.empty(3, dtype=np.int64))


def test_take_text_copies_texts_of_every_length_exactly() -> None:
    import pandas as pd

    text_dtype = pd.api.types.pandas_dtype("str")
    if not (isinstance(text_dtype, pd.StringDtype) and str(text_dtype.storage).startswith("pyarrow")):
        pytest.skip("pandas' str dtype is not Arrow-backed here")
    rng = np.random.default_rng(5)
    # Lengths around the 16-byte copy, multi-byte characters, empty texts; the last rows of each
    # half of a large column are where a copy may not run past its stretch.
    alphabet = ["a", "é", "日", "\x00", " "]
    for n in (1, 2, 17, 1000, native._PARALLEL_ROWS + 7):
        texts = ["".join(rng.choice(alphabet, int(rng.integers(0, 40)))) for _ in range(min(n, 5000))]
        texts = [texts[i % len(texts)] + str(i) * int(rng.integers(0, 2)) for i in range(n)]
        series = pd.Series(pd.array(texts, dtype=text_dtype))
        for order in (rng.permutation(n), rng.integers(0, n, n // 2 + 1), np.arange(n)[::-1]):
            taken = native.take_text(series, order)
            assert taken.tolist() == [texts[i] for i in order]


def test_the_environment_switch_turns_the_kernels_off(monkeypatch: pytest.MonkeyPatch) -> None:
    ids = pa.chunked_array([["b", "a"]], type=pa.large_string())
    monkeypatch.setenv("MLEAUDIT_NO_NATIVE", "1")
    assert not native.available()
    assert native.text_permutation(ids, ids) is None
    monkeypatch.setenv("MLEAUDIT_NO_NATIVE", "0")
    assert native.available()


def test_same_texts_across_different_chunkings() -> None:
    rng = np.random.default_rng(8)
    for _ in range(200):
        texts = [str(rng.choice(["", "a", "bb", "é", "id0001", "x" * 9])) for _ in range(int(rng.integers(0, 30)))]
        other = list(texts)
        if other and rng.integers(0, 2):
            at = int(rng.integers(0, len(other)))
            other[at] = other[at] + "z" if rng.integers(0, 2) else other[at][:-1]
        # An offset into the first chunk of one side, other cuts on the other.
        got = native.same_texts(chunked(["pad"] + texts, rng).slice(1), chunked(other, rng))
        assert got == (texts == other), (texts, other)
    assert native.same_texts(chunked(["a"], rng), chunked(["a", "b"], rng)) is False


def test_same_texts_of_large_columns_compare_both_halves() -> None:
    # Past native._PARALLEL_ROWS rows each half of the rows is compared in its own thread;
    # chunk edges fall on both sides of the middle, differently in the two columns.
    rng = np.random.default_rng(12)
    n = native._PARALLEL_ROWS * 2 + 5
    texts = [f"id{v}" for v in rng.integers(0, 10**6, n)]

    def cut(values: list[str], edges: list[int]) -> "pa.ChunkedArray":
        bounds = [0, *edges, len(values)]
        return pa.chunked_array([pa.array(values[a:b], type=pa.large_string()) for a, b in zip(bounds, bounds[1:])])

    same = cut(texts, [n // 3, n // 2 + 2])
    assert native.same_texts(same, cut(texts, [n // 2 - 1, 2 * n // 3])) is True
    for row in (0, n // 2 - 1, n // 2, n // 2 + 1, n - 1):
        other = list(texts)
        other[row] += "x"
        assert native.same_texts(same, cut(other, [n // 2 - 1])) is False, row


def test_large_columns_split_between_two_threads_give_the_numpy_answers(monkeypatch: pytest.MonkeyPatch) -> None:
    # Past native._PARALLEL_ROWS rows the token match and the reordering of texts run in two
    # threads, each on half of the rows; chunk edges fall on both sides of the middle.
    import pandas as pd

    from grading.metrics import arrowtext

    rng = np.random.default_rng(11)
    n = native._PARALLEL_ROWS * 2 + 3
    words = np.array(VOCABULARY[1:-1] + ["w_9"])
    cells = [" ".join(row) for row in words[rng.integers(0, len(words), (n, 3))]]
    labels = list(words[rng.integers(0, len(words), n)])
    cut = [0, n // 3, n // 2 + 1, n]
    cell_array = pa.chunked_array([pa.array(cells[a:b], type=pa.large_string()) for a, b in zip(cut, cut[1:])])
    label_array = pa.chunked_array([pa.array(labels, type=pa.large_string())])
    text_dtype = pd.api.types.pandas_dtype("str")
    if not (isinstance(text_dtype, pd.StringDtype) and str(text_dtype.storage).startswith("pyarrow")):
        pytest.skip("pandas' str dtype is not Arrow-backed here")
    series = pd.Series(pd.array(cell_array, dtype=text_dtype))
    order = rng.permutation(n)
    found, taken = native.first_token_match(cell_array, label_array, 3), native.take_text(series, order)
    monkeypatch.setenv("MLEAUDIT_NO_NATIVE", "1")
    assert found.tolist() == arrowtext.first_token_match(cell_array, label_array, 3).tolist()
    assert taken.tolist() == series.take(order).tolist()
