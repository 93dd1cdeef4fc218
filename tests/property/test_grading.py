"""Submission grading: ``grading.grade_submission`` on the embedded ``sklearn-digits`` competition.

``grade_submission`` is documented to raise only when the competition's own files are missing or
broken (``DatasetNotPrepared``, ``ConfigError``); a bad submission is a report with
``valid_submission`` false and the reason in ``error``. So on any submission file (damaged
CSVs, wrong columns and ids, odd labels, NUL bytes, bytes that are not UTF-8) it returns a
report, and a score is an accuracy in [0, 1]. On a submission with every test id and integer
labels, the score is the share of correct labels, whatever the row order.
"""

from __future__ import annotations

import csv
import random
import tempfile
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mleaudit.grading import grade_submission
from mleaudit.grading.errors import ConfigError, DatasetNotPrepared
from mleaudit.grading.grade import SCORE_DECIMALS, GradeReport
from tests.property import strategies as S
from tests.property.support import budget, call

LABELS = ("0", "7", "9", "7.0", "7.5", "1e0", "-1", "10", "99999999999999999999", "nan", "NaN", "None", "NA", "", " ",
          "inf", "-inf", "七", "٧", " 7", "7 ", '"7"', "'7'", "True", "0x7", "7\x00", "\u202e7")
HEADERS = ("id,label", "id,label", "id,label", "label,id", "id,label,extra", "ID,label", "id", "label", "",
           "\ufeffid,label", "id;label", "id,label,label", "id,id,label", "id\t label", '"id","label"', "id,label,")


@pytest.fixture(scope="module")
def answers(digits):
    registry, spec = digits.registry, digits.spec
    with open(registry.answers_path(spec.id), newline="", encoding="utf-8") as stream:
        rows = list(csv.DictReader(stream))
    return [(row["id"], row["label"]) for row in rows]


@st.composite
def submission_bytes(draw, answers: list[tuple[str, str]]) -> bytes:
    """A damaged ``sklearn-digits`` submission: header, rows, ids, labels and bytes all varied."""
    if draw(st.integers(0, 9)) == 0:
        return draw(st.one_of(st.binary(max_size=200), S.nasty_text.map(lambda t: t.encode("utf-8", "surrogatepass"))))
    header = draw(st.one_of(st.sampled_from(HEADERS), S.short_text))
    ids = [identifier for identifier, _ in answers]
    keep = draw(st.sampled_from(["all", "all", "some", "none"]))
    if keep == "some":
        ids = ids[: draw(st.integers(0, len(ids)))]
    elif keep == "none":
        ids = []
    extra_ids = draw(st.lists(st.one_of(st.sampled_from(["0", "-1", "00001", "1.0", "1e3", "", "id", ids[0] if ids else "1"]),
                                        S.short_text), max_size=3))
    ids = ids + extra_ids
    if draw(st.booleans()):
        random.Random(draw(st.integers(0, 1000))).shuffle(ids)
    label = st.one_of(st.sampled_from(LABELS), S.short_text)
    fixed = draw(label)
    varied = draw(st.booleans())
    cells = draw(st.integers(1, 3))
    rows = []
    for identifier in ids:
        value = draw(label) if varied and len(rows) < 20 else fixed
        rows.append(",".join([identifier, value] + ["x"] * (cells - 1)))
    newline = draw(st.sampled_from(["\n", "\r\n", "\r"]))
    text = newline.join([header, *rows]) + draw(st.sampled_from(["", newline, newline * 3, '"', "\x00", ",,,"]))
    data = text.encode("utf-8", "surrogatepass")
    damage = draw(st.sampled_from(["none", "none", "none", "latin1", "cut", "utf16"]))
    if damage == "latin1":
        data = data.replace(b"7", b"\xe9", 1)
    elif damage == "cut" and data:
        data = data[: draw(st.integers(0, len(data) - 1))]
    elif damage == "utf16":
        data = text.encode("utf-16", "surrogatepass")
    return data


@budget(80)
@given(data=st.data())
def test_grade_submission_returns_a_report_for_any_submission(digits, answers, data):
    registry, spec = digits.registry, digits.spec
    content = data.draw(submission_bytes(answers), label="submission.csv")
    name = data.draw(st.sampled_from(["submission.csv", "submission.CSV", "submission.txt"]), label="file name")
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / name
        path.write_bytes(content)
        report, error = call(grade_submission, path, spec, registry.data_dir,
                             allowed=(DatasetNotPrepared, ConfigError), what="grade_submission")
    assert error is None, f"the prepared competition was reported broken: {error}"
    assert isinstance(report, GradeReport)
    if report.score is not None:
        assert report.valid_submission
        assert 0.0 <= report.score <= 1.0, f"accuracy {report.score} outside [0, 1]"
    if not report.valid_submission:
        assert report.score is None and report.error, "an invalid submission must say why"
    report.to_dict()


@budget(30, deep=200)
@given(data=st.data())
def test_grade_submission_scores_the_share_of_correct_labels_in_any_row_order(digits, answers, data):
    registry, spec = digits.registry, digits.spec
    labels = [data.draw(st.sampled_from([truth, truth, str((int(truth) + 1) % 10)])) for _, truth in answers]
    rows = list(zip([identifier for identifier, _ in answers], labels))
    random.Random(data.draw(st.integers(0, 10**6), label="row order seed")).shuffle(rows)
    expected = round(sum(label == truth for label, (_, truth) in zip(labels, answers)) / len(answers), SCORE_DECIMALS)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "submission.csv"
        path.write_text("id,label\n" + "".join(f"{i},{label}\n" for i, label in rows), encoding="utf-8")
        report, _ = call(grade_submission, path, spec, registry.data_dir, what="grade_submission")
    assert report.valid_submission and report.error is None, report.error
    assert report.score == pytest.approx(expected, abs=10**-SCORE_DECIMALS)
