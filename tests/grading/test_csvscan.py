"""The pre-scan of submission CSVs: caps on columns, field and row bytes, checked before pandas reads."""

from __future__ import annotations

import doctest
import io
import random
from pathlib import Path

import pandas as pd
import pytest

from mleaudit.grading import CompetitionRegistry
from mleaudit.grading import csvscan
from mleaudit.grading.csvscan import DEFAULT_CSV_LIMITS, TEXT_CSV_LIMITS, CsvLimits, check_csv_limits
from mleaudit.grading.errors import InvalidSubmission
from mleaudit.grading.grade import score_csv
from mleaudit.grading.validation import read_submission

SMALL = CsvLimits(max_columns=4, max_field_bytes=10, max_line_bytes=20)


def write(tmp_path: Path, data: bytes, name: str = "submission.csv") -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


def over_cap(path: Path, limits: CsvLimits = DEFAULT_CSV_LIMITS) -> str:
    with pytest.raises(InvalidSubmission) as excinfo:
        check_csv_limits(path, limits)
    return str(excinfo.value)


def columns_message(path: Path, line: int, cap: int = 1024) -> str:
    return f"Submission file '{path}' line {line} has more than {cap:,} fields (a submission may have at most {cap:,} columns)."


def field_message(path: Path, line: int, cap: int) -> str:
    return f"Submission file '{path}' line {line} has a field of more than {cap:,} bytes (the cap on one cell of this submission)."


def line_message(path: Path, line: int, cap: int) -> str:
    return f"Submission file '{path}' line {line} starts a row of more than {cap:,} bytes (the cap on one row of this submission)."


# -- hostile files -----------------------------------------------------------------------------


def test_a_line_of_commas_is_rejected_naming_the_line_and_the_cap(tmp_path: Path) -> None:
    path = write(tmp_path, b"id,label\n1,2\n" + b"," * 160_000 + b"\n3,4\n")
    assert over_cap(path) == columns_message(path, 3)


def test_a_header_of_a_million_columns_is_rejected(tmp_path: Path) -> None:
    path = write(tmp_path, b",".join(b"c%d" % i for i in range(1_000_000)) + b"\n1\n")
    assert over_cap(path) == columns_message(path, 1)


def test_a_single_line_over_the_field_cap_is_rejected(tmp_path: Path) -> None:
    path = write(tmp_path, b"id,label\n1," + b"x" * (3 << 20))  # no line end at all
    assert over_cap(path) == field_message(path, 2, DEFAULT_CSV_LIMITS.max_field_bytes)


def test_a_huge_quoted_field_is_one_field_whatever_it_holds(tmp_path: Path) -> None:
    path = write(tmp_path, b'id,label\n1,"' + b"a,\n" * 700_000 + b'"\n')
    assert over_cap(path) == field_message(path, 2, DEFAULT_CSV_LIMITS.max_field_bytes)


def test_an_unclosed_quote_runs_to_the_end_of_the_file(tmp_path: Path) -> None:
    path = write(tmp_path, b'id,label\n1,"open\n' + b"2,3\n" * 10)
    assert over_cap(path, SMALL) == field_message(path, 2, 10)


def test_a_row_over_the_line_cap_is_rejected(tmp_path: Path) -> None:
    path = write(tmp_path, b"id,label\n1,2\n123456789,123456789,12\n")
    assert over_cap(path, SMALL) == line_message(path, 3, 20)


def test_many_empty_lines_and_long_runs_of_quotes_are_scanned_in_bounded_chunks(tmp_path: Path) -> None:
    blank = write(tmp_path, b"id,label\n" + b"\n" * 3_000_000 + b"\r\n" * 1_000_000 + b"1,2\n", "blank.csv")
    assert check_csv_limits(blank) == blank.stat().st_size
    quotes = write(tmp_path, b'id,label\n1,"' + b'"' * 3_000_000 + b'"\n', "quotes.csv")
    assert over_cap(quotes) == field_message(quotes, 2, DEFAULT_CSV_LIMITS.max_field_bytes)


def test_a_literal_quote_does_not_hide_the_delimiters_after_it(tmp_path: Path) -> None:
    # pandas opens a quoted field only at a field's start: `x"` is text, the commas count.
    path = write(tmp_path, b'id,label\n1,x"' + b"," * 2000 + b'"\n')
    assert over_cap(path) == columns_message(path, 2)


# -- files within the caps -----------------------------------------------------------------------


def test_quoted_delimiters_and_line_ends_are_not_fields(tmp_path: Path) -> None:
    cell = b'"' + b'a,""b""\n' * 5000 + b'"'
    path = write(tmp_path, b"id,label\n1," + cell + b"\n2,x\n")
    assert check_csv_limits(path, TEXT_CSV_LIMITS) == path.stat().st_size
    frame = pd.read_csv(path)
    assert frame.shape == (2, 2)


def test_the_widest_competitions_are_far_within_the_column_cap(checkout_registry: CompetitionRegistry) -> None:
    widths = {}
    for spec in checkout_registry.specs():
        ids = (spec.id_column,) if isinstance(spec.id_column, str) else tuple(spec.id_column)
        unscored = tuple(spec.metric.params.get("unscored_columns", ()))
        widths[spec.id] = len(ids) + len(spec.target_columns) + len(unscored)
    assert max(widths.values()) == widths["dog-breed-identification"] == 121
    assert max(widths.values()) * 8 <= DEFAULT_CSV_LIMITS.max_columns == TEXT_CSV_LIMITS.max_columns


def test_a_byte_order_mark_is_not_part_of_the_first_field(tmp_path: Path) -> None:
    limits = CsvLimits(max_columns=2, max_field_bytes=3, max_line_bytes=5)
    path = write(tmp_path, b'\xef\xbb\xbf"a",b\n1,2\n')
    assert check_csv_limits(path, limits) == path.stat().st_size
    broken = write(tmp_path, b'\xef\xbb"a",b\n1,2\n', "broken.csv")  # not a whole mark: part of the field
    assert over_cap(broken, limits) == field_message(broken, 1, 3)


@pytest.mark.parametrize(
    ("data", "line"),
    [
        (b"a\nb\n1,2,3,4,5\n", 3),
        (b"a\r\nb\r\n1,2,3,4,5\r\n", 3),
        (b"a\rb\r1,2,3,4,5\r", 3),  # a lone \r ends a line, as pandas reads it
        (b'a\n"b\nc"\n1,2,3,4,5\n', 4),  # lines inside a quoted field are lines of the file
        (b"\xef\xbb\xbfa\n1,2,3,4,5\n", 2),
        (b"a\n\n\n1,2,3,4,5", 4),
    ],
)
def test_the_message_names_the_line_of_the_file_where_the_row_starts(tmp_path: Path, data: bytes, line: int) -> None:
    path = write(tmp_path, data)
    assert over_cap(path, SMALL) == columns_message(path, line, 4)


def test_limits_are_checked() -> None:
    with pytest.raises(ValueError, match="max_columns must be a positive integer"):
        CsvLimits(max_columns=0, max_field_bytes=1, max_line_bytes=1)


# -- the scan splits records and fields as pandas does, at every chunk size ------------------------


def tokenize(data: bytes) -> list[tuple[int, int, int, int]]:
    """``(line, fields, longest field, row bytes)`` per record: pandas' C tokenizer, byte by byte."""
    records: list[tuple[int, int, int, int]] = []
    i, n = (3, len(data)) if data.startswith(b"\xef\xbb\xbf") else (0, len(data))
    line = record_line = 1
    record_start = field_start = i
    fields = longest = 0
    state = "start"
    while i < n:
        c = data[i : i + 1]
        if state == "quoted":
            if c == b'"':
                state = "quote"
            elif c == b"\n" or (c == b"\r" and data[i + 1 : i + 2] != b"\n"):
                line += 1
            i += 1
            continue
        if state == "quote":
            if c == b'"':
                state = "quoted"
                i += 1
                continue
            state = "field"
        if c == b",":
            longest, fields = max(longest, i - field_start), fields + 1
            field_start, state = i + 1, "start"
        elif c in (b"\n", b"\r"):
            longest, fields = max(longest, i - field_start), fields + 1
            records.append((record_line, fields, longest, i - record_start))
            i += 2 if data[i : i + 2] == b"\r\n" else 1
            line += 1
            record_start = field_start = i
            record_line, fields, longest, state = line, 0, 0, "start"
            continue
        elif state == "start" and c == b'"':
            state = "quoted"
        else:
            state = "field"
        i += 1
    if i > record_start or fields:
        records.append((record_line, fields + 1, max(longest, n - field_start), n - record_start))
    return records


def first_over(data: bytes, limits: CsvLimits) -> int | None:
    for line, fields, longest, size in tokenize(data):
        if fields > limits.max_columns or longest > limits.max_field_bytes or size > limits.max_line_bytes:
            return line
    return None


def test_the_reference_tokenizer_splits_fields_as_pandas_does() -> None:
    data = b'a,"b,\nc",d\r\n"e""f",g"h,"i"j\r"",k\n'
    assert [fields for _, fields, _, _ in tokenize(data)] == [3, 3, 2]
    frame = pd.read_csv(io.BytesIO(data), header=None, names=[0, 1, 2], dtype=str, keep_default_na=False)
    assert frame.values.tolist() == [["a", "b,\nc", "d"], ['e"f', 'g"h', "ij"], ["", "k", ""]]


PIECES = [b"a", b"ab", b"abcdefgh", b",", b",,", b'"', b'""', b'"""', b"\n", b"\r", b"\r\n", b"a,b\n", b'",\n"']


@pytest.mark.parametrize("seed", range(8))
def test_the_scan_finds_the_first_row_over_a_cap_at_any_chunk_size(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed: int
) -> None:
    rng = random.Random(seed)
    path = tmp_path / "random.csv"
    for _ in range(300):
        weights = [rng.random() for _ in PIECES]
        data = b"".join(rng.choices(PIECES, weights, k=rng.randint(0, 200)))
        if rng.random() < 0.1:
            data = b"\xef\xbb\xbf" + data
        limits = CsvLimits(
            max_columns=rng.randint(1, 40), max_field_bytes=rng.randint(1, 60), max_line_bytes=rng.randint(1, 120)
        )
        monkeypatch.setattr(csvscan, "CHUNK_BYTES", rng.choice([1, 2, 3, 7, 16, 64, 100, 256, 1 << 20]))
        path.write_bytes(data)
        expected = first_over(data, limits)
        try:
            check_csv_limits(path, limits)
            got = None
        except InvalidSubmission as exc:
            got = int(str(exc).split(" line ")[1].split()[0])
        assert got == expected, (data, limits, csvscan.CHUNK_BYTES)


# -- reading and grading -------------------------------------------------------------------------


def test_read_submission_rejects_before_pandas_reads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write(tmp_path, b"id,label\n" + b"," * 160_000 + b"\n")

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("pandas read a file over the caps")

    monkeypatch.setattr(pd, "read_csv", refuse)
    with pytest.raises(InvalidSubmission) as excinfo:
        read_submission(path, id_column="id")
    assert str(excinfo.value) == columns_message(path, 2)


def test_text_targets_may_have_long_cells_numbers_may_not(tmp_path: Path) -> None:
    text = " ".join(f"w{i}" for i in range(300_000))  # 2.2 MB, as long as a large run-length encoded mask
    answers = write(tmp_path, f"id,text,y\na,{text},1.0\nb,x,2.0\n".encode(), "answers.csv")
    texts = write(tmp_path, f"id,text\na,{text}\nb,x\n".encode(), "texts.csv")
    assert score_csv(texts, answers, metric="word_jaccard_score", id_column="id", target_columns=["text"]) == 1.0
    numbers = write(tmp_path, f"id,y\na,1.0\nb,2.0,{text}\n".encode(), "numbers.csv")
    with pytest.raises(InvalidSubmission) as excinfo:
        score_csv(numbers, answers, metric="rmse_error", id_column="id", target_columns=["y"])
    assert str(excinfo.value) == field_message(numbers, 3, DEFAULT_CSV_LIMITS.max_field_bytes)


def test_docstring_examples() -> None:
    result = doctest.testmod(csvscan, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0
    assert result.failed == 0
