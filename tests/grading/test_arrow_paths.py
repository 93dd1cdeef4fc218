"""The vectorised scoring paths on Arrow-backed text give exactly what the general paths give.

Reading ids and label lists as Arrow strings, joining submission ids onto test ids through
integer keys or Arrow's hash join, finding a label among a cell's tokens split by Arrow, and
the sort-based ROC AUC and column-wise log loss are each checked against a plain reference (a
Python dict, ``str.split``, scikit-learn, the earlier formulas) on invented cases chosen to hit
their edges: leading zeros, prefixes, widths around 8 bytes, multi-byte characters, repeated and
unknown ids, empty tokens, chunked and sliced arrays.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.stats import rankdata
from sklearn import metrics as skm

from mleaudit.grading.errors import InvalidSubmission
from mleaudit.grading.grade import score_csv, score_frames
from mleaudit.grading.metrics import METRICS
from mleaudit.grading.metrics.probability import _binary_auc, log_loss
from mleaudit.grading.metrics.ranking import first_token_places
from mleaudit.grading.validation import _read_with_text, check_frames, check_ids, scoring_options

pa = pytest.importorskip("pyarrow")
arrowtext = pytest.importorskip("mleaudit.grading.metrics.arrowtext")

ARROW_STR = pd.api.types.pandas_dtype("str")
pytestmark = pytest.mark.skipif(
    not (isinstance(ARROW_STR, pd.StringDtype) and str(ARROW_STR.storage).startswith("pyarrow")),
    reason="pandas' str dtype is not Arrow-backed here",
)


def chunked(values: list[str], rng: np.random.Generator) -> "pa.ChunkedArray":
    """The texts as a large_string array split into up to three chunks at random places."""
    cuts = sorted(int(c) for c in rng.integers(0, len(values) + 1, 2))
    parts = [values[: cuts[0]], values[cuts[0] : cuts[1]], values[cuts[1] :]]
    return pa.chunked_array([pa.array(p, type=pa.large_string()) for p in parts], type=pa.large_string())


def reference_permutation(values: list[str], value_set: list[str]) -> list[int] | None:
    if len(values) != len(value_set) or len(set(value_set)) != len(value_set) or sorted(values) != sorted(value_set):
        return None
    row = {v: i for i, v in enumerate(values)}
    return [row[v] for v in value_set]


ID_FAMILIES = {
    "prefixed digits": lambda rng, n: [f"id{v:07d}" for v in rng.integers(0, 3 * n + 1, n)],
    "short digits": lambda rng, n: [f"{v:04d}" for v in rng.integers(0, 10_000, n)],
    "decimal": lambda rng, n: [str(v) for v in rng.integers(0, 10 ** int(rng.integers(1, 9)), n)],
    "leading zeros": lambda rng, n: [str(v).zfill(int(rng.integers(1, 4))) for v in rng.integers(0, 100, n)],
    "hex": lambda rng, n: [f"{v:06x}" for v in rng.integers(0, 2**24, n)],
    "long hex": lambda rng, n: [f"{v:012x}" for v in rng.integers(0, 2**48, n)],
    "file names": lambda rng, n: [f"img_{v:08x}.png" for v in rng.integers(0, 2**32, n)],
    "varying prefix": lambda rng, n: [f"{'ab'[int(p)]}d{v:07d}" for p, v in zip(rng.integers(0, 2, n), rng.integers(0, 99, n))],
    "nine digits": lambda rng, n: [f"{v:09d}" for v in rng.integers(0, 10**9, n)],
    "long decimal": lambda rng, n: [str(v) for v in rng.integers(10**8, 10**12, n)],
    "mixed text": lambda rng, n: [str(rng.choice(["a", "ab", "1", "01", "é", "10", "x y", "0", "日本"])) for _ in range(n)],
    "nul bytes": lambda rng, n: ["\x00" * int(rng.integers(0, 2)) + str(v) for v in rng.integers(0, 9, n)],
    "long prefix": lambda rng, n: [f"test_image_{v:08d}" for v in rng.integers(0, 10**8, n)],
    "long varying prefix": lambda rng, n: [f"{'tu'[int(p)]}est_image_{v:08d}" for p, v in zip(rng.integers(0, 2, n), rng.integers(0, 99, n))],
    "twelve wide": lambda rng, n: [f"ab{v:010d}" for v in rng.integers(0, 10**10, n)],
    "steady letter in the tail": lambda rng, n: [f"{v:04d}{'t' if v % 2 else 'd'}{w:03d}" for v, w in zip(rng.integers(0, 99, n), rng.integers(0, 999, n))],
}


@pytest.mark.parametrize("family", sorted(ID_FAMILIES))
def test_text_permutation_matches_a_dict_join(family: str) -> None:
    rng = np.random.default_rng(sorted(ID_FAMILIES).index(family))
    make = ID_FAMILIES[family]
    for trial in range(60):
        test_ids = list(dict.fromkeys(make(rng, int(rng.integers(1, 40)))))
        submission = [test_ids[i] for i in rng.permutation(len(test_ids))]
        if trial % 4 == 1 and len(submission) > 1:
            submission[int(rng.integers(0, len(submission)))] = submission[0]  # a repeat
        elif trial % 4 == 2:
            submission[int(rng.integers(0, len(submission)))] = make(rng, 1)[0]  # maybe unknown
        elif trial % 4 == 3 and len(test_ids) > 1:
            test_ids[-1] = test_ids[0]  # the test set itself repeats an id
        got = arrowtext.text_permutation(chunked(submission, rng), chunked(test_ids, rng))
        want = reference_permutation(submission, test_ids)
        assert (got is None) == (want is None), (family, submission, test_ids)
        if want is not None:
            assert got.tolist() == want


def test_text_permutation_refuses_other_lengths_and_nulls() -> None:
    ids = pa.chunked_array([["a", "b"]], type=pa.large_string())
    assert arrowtext.text_permutation(ids[:1], ids) is None
    with_null = pa.chunked_array([["a", None]], type=pa.large_string())
    assert arrowtext.text_permutation(with_null, ids) is None
    assert arrowtext.text_permutation(ids.slice(0, 0), ids.slice(0, 0)).tolist() == []


def test_prefixed_ids_at_scale_are_joined_through_a_dense_table() -> None:
    rng = np.random.default_rng(7)
    test_ids = [f"id{v:07d}" for v in range(50_000)]
    order = rng.permutation(len(test_ids))
    submission = pa.chunked_array([pa.array([test_ids[i] for i in order], type=pa.large_string())])
    keys = arrowtext._integer_keys([submission, pa.chunked_array([pa.array(test_ids, type=pa.large_string())])])
    # Dense keys: the digits' value, plus what the steady "d" before them adds to every key.
    assert keys is not None and (keys[1] - keys[1][0]).tolist() == list(range(50_000))
    got = arrowtext.text_permutation(submission, pa.chunked_array([pa.array(test_ids, type=pa.large_string())]))
    assert np.array_equal(order[got], np.arange(len(test_ids)))


VOCABULARY = ["", "a", "w_1", "w_12", "w_123", "new_whale", "w_f48451c", "ü", "日本", "x" * 7, "x" * 8, "x" * 9, "x" * 16, "x" * 17, "yx" * 4]


def _str_place(cell: str, label: str, k: int) -> int:
    tokens = cell.split(" ")[:k]
    return tokens.index(label) if label in tokens else -1


def test_first_token_places_agree_with_str_split() -> None:
    rng = np.random.default_rng(3)
    for _ in range(1500):
        n, k = int(rng.integers(0, 9)), int(rng.integers(1, 7))
        cells = [" ".join(VOCABULARY[i] for i in rng.integers(0, len(VOCABULARY), int(rng.integers(0, 8)))) for _ in range(n)]
        labels = [VOCABULARY[int(i)] for i in rng.integers(0, len(VOCABULARY), n)]
        cell_array = chunked(["pad"] + cells, rng).slice(1)  # an offset into the first chunk
        got = first_token_places(pd.Series(pd.array(cell_array, dtype=ARROW_STR)), pd.Series(pd.array(chunked(labels, rng), dtype=ARROW_STR)), k)
        want = [_str_place(c, label, k) for c, label in zip(cells, labels)]
        assert got.tolist() == want, (cells, labels, k)


def test_first_token_places_leave_labels_with_spaces_to_the_general_path() -> None:
    assert first_token_places(pd.Series(["a b c"], dtype=ARROW_STR), pd.Series(["a b"], dtype=ARROW_STR), 5) is None


def test_map_at_k_scores_the_same_on_arrow_and_object_columns() -> None:
    rng = np.random.default_rng(5)
    n = 400
    truth = [VOCABULARY[int(i)] for i in rng.integers(1, len(VOCABULARY), n)]
    cells = [" ".join(VOCABULARY[i] for i in rng.integers(0, len(VOCABULARY), int(rng.integers(0, 7)))) for _ in range(n)]
    ids = [f"r{i}" for i in range(n)]
    for k in (1, 5, 12):
        scores = []
        for dtype in (ARROW_STR, object):
            answers = pd.DataFrame({"Image": ids, "Id": pd.array(truth, dtype=dtype)})
            submission = pd.DataFrame({"Image": ids, "Id": pd.array(cells, dtype=dtype)})
            submission.loc[3, "Id"] = None  # a missing cell reads as one empty label
            scores.append(METRICS["map_at_k_score"].fn(answers, submission, id_columns=["Image"], target_columns=["Id"], k=k))
        assert scores[0] == scores[1]


@pytest.mark.parametrize("several_labels", [False, True])
def test_map_at_k_of_a_shuffled_file_equals_the_ordered_file_to_the_bit(several_labels: bool) -> None:
    # MAP@K takes a shuffled file's rows in file order, with the answers reordered to match
    # (their index holding each row's place in answer order), and averages in answer order.
    rng = np.random.default_rng(6)
    n = 3000
    words = [w for w in VOCABULARY if w and " " not in w]
    truth = [" ".join(rng.choice(words, int(rng.integers(1, 3)) if several_labels else 1)) for _ in range(n)]
    cells = [" ".join(rng.choice(words, int(rng.integers(0, 7)))) for _ in range(n)]
    ids = pd.array([f"img{i:05d}" for i in range(n)], dtype=ARROW_STR)
    answers = pd.DataFrame({"Image": ids, "Id": pd.array(truth, dtype=ARROW_STR)})
    ordered = pd.DataFrame({"Image": ids, "Id": pd.array(cells, dtype=ARROW_STR)})
    shuffled = ordered.sample(frac=1.0, random_state=3)
    metric = METRICS["MAP@5"]
    want = score_frames(ordered, answers, metric=metric, id_column="Image", target_columns=["Id"])
    assert score_frames(shuffled, answers, metric=metric, id_column="Image", target_columns=["Id"]) == want
    options, _ = scoring_options(metric, id_column="Image", target_columns=["Id"])
    reordered, aligned = check_frames(shuffled, answers, metric=metric, options=options)
    assert aligned["Id"].tolist() == shuffled["Id"].tolist()  # file order, not copied into answer order
    place = reordered.index.to_numpy()
    assert sorted(place.tolist()) == list(range(n))
    assert reordered["Image"].tolist() == aligned["Image"].tolist()
    assert reordered["Id"].tolist() == [truth[p] for p in place]


TRICKY_CELLS = [
    "007", "", "NA", "nan", "NaN", "None", "<NA>", "n/a", "null", "#N/A", " 7", "7 ", "1.0", "1e5", "True",
    "tRUE", '"quoted, comma"', '""', '"NA"', "a b", "ü", "-nan", "0x10", "inf", '"two\nlines"',
]  # fmt: skip


@pytest.mark.parametrize("rows", [len(TRICKY_CELLS), 240_000])
def test_text_columns_read_as_arrow_equal_dtype_str(tmp_path: Path, rows: int) -> None:
    # The larger file passes pandas' size threshold for reading in parallel chunks.
    rng = np.random.default_rng(rows)
    pick = rng.integers(0, len(TRICKY_CELLS), (rows, 2)) if rows > len(TRICKY_CELLS) else np.tile(np.arange(rows), (2, 1)).T
    lines = [f"{TRICKY_CELLS[a]},{TRICKY_CELLS[b]},{i % 7},{TRICKY_CELLS[b]}" for i, (a, b) in enumerate(pick)]
    path = tmp_path / "cells.csv"
    path.write_text("id,label,n,other\n" + "\n".join(lines) + "\n", encoding="utf-8")
    expected = pd.read_csv(path, dtype={"id": str, "label": str, "absent": str})
    got = _read_with_text(path, ["id", "label", "absent"])
    pd.testing.assert_frame_equal(got, expected)
    assert str(got["id"].dtype) == "str" and got["n"].dtype == np.int64


@pytest.mark.parametrize(
    "submission_ids",
    [
        ["c", "a", "b", "d"],  # a valid reordering
        ["a", "b", "c", "d"],  # test order
        ["a", "b", "b", "d"],  # a repeated id
        ["a", "x", "c", "d"],  # an unknown id
        ["a", "b", "c"],  # a missing row
        ["a", None, "c", "d"],  # an empty id
        ["d", "c", "b", "a", "e"],  # an extra row
    ],
)
def test_check_ids_answers_arrow_ids_as_it_answers_object_ids(submission_ids: list[str | None]) -> None:
    answer_ids = ["a", "b", "c", "d"]
    outcomes = []
    for dtype in (ARROW_STR, object):
        try:
            order = check_ids(pd.Series(submission_ids, dtype=dtype), pd.Series(answer_ids, dtype=dtype))
            outcomes.append(order.tolist())
        except InvalidSubmission as exc:
            outcomes.append(str(exc))
    assert outcomes[0] == outcomes[1]


def test_aligned_submission_reuses_the_test_ids_and_keeps_file_rows() -> None:
    answers = pd.DataFrame({"id": pd.array(["a", "b", "c"], dtype=ARROW_STR), "y": [1.0, 2.0, 3.0]})
    metric = METRICS["rmse_error"]
    options, _ = scoring_options(metric, id_column="id", target_columns=["y"])
    frames = []
    for dtype in (ARROW_STR, object):
        submission = pd.DataFrame({"id": pd.array(["c", "a", "b"], dtype=dtype), "y": [3, 1, 4]})
        frames.append(check_frames(submission, answers.astype({"id": dtype}), metric=metric, options=options)[1])
    arrow, plain = frames
    assert arrow.index.tolist() == plain.index.tolist() == [1, 2, 0]
    assert arrow["id"].tolist() == plain["id"].tolist() == ["a", "b", "c"]
    assert arrow["y"].tolist() == plain["y"].tolist() == [1.0, 4.0, 3.0]
    assert arrow.attrs["id_columns"] == ["id"] and list(arrow.columns) == ["id", "y"]


def test_shuffled_file_scores_like_the_ordered_file(tmp_path: Path) -> None:
    rng = np.random.default_rng(11)
    n = 30_000
    ids = [f"id{v:07d}" for v in range(n)]
    truth = rng.normal(size=n).round(4)
    pd.DataFrame({"id": ids, "y": truth}).to_csv(tmp_path / "answers.csv", index=False)
    submission = pd.DataFrame({"id": ids, "y": (truth + rng.normal(size=n)).round(4)})
    submission.to_csv(tmp_path / "ordered.csv", index=False)
    submission.sample(frac=1.0, random_state=1).to_csv(tmp_path / "shuffled.csv", index=False)
    spec = {"metric": "root-mean-squared-error", "id_column": "id", "target_columns": ["y"]}
    ordered = score_csv(tmp_path / "ordered.csv", tmp_path / "answers.csv", **spec)
    assert score_csv(tmp_path / "shuffled.csv", tmp_path / "answers.csv", **spec) == ordered
    assert ordered == score_frames(
        pd.read_csv(tmp_path / "shuffled.csv", dtype={"id": object}),
        pd.read_csv(tmp_path / "answers.csv", dtype={"id": object}),
        **spec,
    )


def mean_rank_auc(truth: np.ndarray, scores: np.ndarray) -> float:
    """ROC AUC from the mean ranks of the positives (the formula the sort-based one replaced)."""
    positive = truth == truth.max()
    n_pos = int(positive.sum())
    rank_sum = float(rankdata(scores)[positive].sum())
    return (rank_sum - n_pos * (n_pos + 1) / 2.0) / (n_pos * (truth.size - n_pos))


def test_binary_auc_equals_mean_ranks_and_scikit_learn() -> None:
    rng = np.random.default_rng(2)
    for trial in range(200):
        n = int(rng.integers(2, 200))
        truth = rng.integers(0, 2, n).astype(float)
        if truth.min() == truth.max():
            continue
        scores = rng.integers(-3, 4, n) / 4.0 if trial % 2 else rng.normal(size=n)
        got = _binary_auc(truth, scores)
        assert got == mean_rank_auc(truth, scores)
        assert got == pytest.approx(skm.roc_auc_score(truth, scores), rel=1e-12)


def test_log_loss_by_columns_equals_a_row_major_sum() -> None:
    rng = np.random.default_rng(4)
    for trial in range(200):
        n, k = int(rng.integers(1, 60)), int(rng.integers(2, 7))
        truth = np.eye(k)[rng.integers(0, k, n)] if trial % 2 else rng.integers(0, 3, (n, k)) * rng.uniform(size=(n, k))
        pred = rng.dirichlet(np.ones(k), n)
        if trial % 2 == 0:
            pred[rng.uniform(size=(n, k)) < 0.1] = 0.0  # clipped to eps
        truth, pred = (np.asfortranarray(truth), np.asfortranarray(pred)) if trial % 3 == 0 else (truth, pred)
        eps = float(np.finfo(np.float64).eps)
        rows, cols = np.nonzero(truth)
        terms = truth[rows, cols] * np.log(np.clip(pred[rows, cols], eps, 1 - eps))
        assert log_loss(truth, pred) == float(-np.mean(np.bincount(rows, weights=terms, minlength=n)))
        if trial % 2:
            assert log_loss(truth, pred) == pytest.approx(skm.log_loss(truth.argmax(axis=1), pred, labels=range(k)), rel=1e-9)


def test_digit_keys_accept_exactly_the_ascii_digits() -> None:
    for place in range(8):
        words = []
        for byte in range(256):
            text = bytearray(b"12345678")
            text[place] = byte
            words.append(int.from_bytes(bytes(text), "little"))
        values = [arrowtext._digit_keys([np.array([w], dtype=np.uint64)]) for w in words]
        accepted = [byte for byte, v in enumerate(values) if v is not None]
        assert accepted == list(range(48, 58))
        for byte in accepted:
            expected = int(b"12345678"[:place] + bytes([byte]) + b"12345678"[place + 1 :])
            assert values[byte].tolist() == [expected]


def test_digit_keys_let_steady_bytes_be_anything() -> None:
    # Only the varying bytes must be digits; a steady byte adds one amount to every key.
    rng = np.random.default_rng(9)
    for place in range(8):
        varying = ((1 << 64) - 1) ^ (0xFF << (8 * place))
        for steady in (0x00, 0x2F, 0x3A, 0x64, 0xFA, 0xFF):
            texts = []
            for _ in range(50):
                text = bytearray(str(int(rng.integers(0, 10**8))).zfill(8).encode())
                text[place] = steady
                texts.append(bytes(text))
            words = np.array([int.from_bytes(t, "little") for t in texts], dtype=np.uint64)
            keys = arrowtext._digit_keys([words[:20], words[20:]], varying)
            assert keys is not None
            digits = [int(t[:place] + b"0" + t[place + 1 :]) for t in texts]
            assert (keys - keys[0]).tolist() == [d - digits[0] for d in digits]
        bad = np.array([int.from_bytes(b"1234567" + b":", "little")], dtype=np.uint64)
        assert arrowtext._digit_keys([bad], ((1 << 64) - 1) ^ (0xFF << (8 * place))) is None or place == 7


def test_consecutive_test_ids_refuse_repeats_and_gaps() -> None:
    # Consecutive test ids in order make the direct table the order itself; a submission that
    # repeats one id (so misses another) or brings one from outside must still be refused.
    rng = np.random.default_rng(13)
    test_ids = [f"id{v:07d}" for v in range(200, 300)]
    test = pa.chunked_array([pa.array(test_ids, type=pa.large_string())])
    for trial in range(40):
        submission = [test_ids[i] for i in rng.permutation(len(test_ids))]
        if trial % 2:
            submission[int(rng.integers(0, 100))] = submission[int(rng.integers(0, 100))]
        want = reference_permutation(submission, test_ids)
        got = arrowtext.text_permutation(pa.chunked_array([pa.array(submission, type=pa.large_string())]), test)
        assert (got is None) == (want is None)
        if want is not None:
            assert got.tolist() == want
    outside = [test_ids[i] for i in range(1, 100)] + ["id0000300"]
    assert arrowtext.text_permutation(pa.chunked_array([pa.array(outside, type=pa.large_string())]), test) is None


@pytest.mark.parametrize(
    "layout",
    ["text throughout", "numbers then text", "text then numbers", "numbers throughout", "empty then text"],
)
def test_text_columns_read_verbatim_whichever_way_pandas_would_infer_them(tmp_path: Path, layout: str) -> None:
    # The first rows decide whether the file is read with pandas' inference; whatever they
    # show, the text columns come back as the exact text, and no warning about a column's
    # mixed types escapes from a read that was not kept.
    rows = 250_000
    spellings = ["{:04d}", "{}.0", "{}e1", "+{}", "{}"]  # numbers that read back spelled otherwise
    numbers = [spellings[i % 5].format(i % 1000) for i in range(rows)]
    texts = [f"x{i}" for i in range(rows)]
    cut = {"text throughout": 0, "numbers then text": 150_000, "text then numbers": rows - 150_000}.get(layout)
    if layout == "numbers throughout":
        ids = numbers
    elif layout == "empty then text":
        ids = [""] * 2000 + texts[2000:]
    elif layout == "text then numbers":
        ids = texts[:cut] + numbers[cut:]
    else:
        ids = numbers[:cut] + texts[cut:]
    path = tmp_path / "ids.csv"
    path.write_text("id,y\n" + "\n".join(f"{i},{n % 7}" for n, i in enumerate(ids)) + "\n", encoding="utf-8")
    expected = pd.read_csv(path, dtype={"id": str})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = _read_with_text(path, ["id"])
    pd.testing.assert_frame_equal(got, expected)
    assert str(got["id"].dtype) == "str" and got["y"].dtype == np.int64
