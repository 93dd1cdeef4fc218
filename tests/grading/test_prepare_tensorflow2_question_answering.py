"""TensorFlow 2.0 QA: MLE-bench's split of Natural Questions records, and grading from answer rows.

The raw fixture is invented: 40 records in the layout of Kaggle's ``simplified-nq-train.jsonl``,
with the held-out examples covering a long answer alone, one and two short answers, YES, NO and
no answer at all.
"""

from __future__ import annotations

import doctest
import json
import random
import sys
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from sklearn.metrics import f1_score
from sklearn.model_selection import train_test_split

from mleaudit.grading import CompetitionRegistry, Medal, find_competitions_root, grade_submission, prepare_competition
from mleaudit.grading.validation import read_csv

CID = "tensorflow2-question-answering"
RAW = Path(__file__).resolve().parents[1] / "fixtures" / "grading" / "raw" / CID
TEST_FIELDS = ["example_id", "question_text", "document_text", "long_answer_candidates"]


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


RAW_RECORDS = read_jsonl(RAW / "simplified-nq-train.jsonl")


def by_id(raw_index: int) -> str:
    return str(RAW_RECORDS[raw_index]["example_id"])


@pytest.fixture(scope="module")
def registry(tmp_path_factory: pytest.TempPathFactory) -> CompetitionRegistry:
    registry = CompetitionRegistry(find_competitions_root(), tmp_path_factory.mktemp("tf2qa-data"))
    # The fixture is not Kaggle's file, so MLE-bench's checksums cannot match.
    result = prepare_competition(registry.get(CID), registry, raw=RAW, verify=False)
    assert not result.verified and not result.reused
    return registry


def expected_held_out(chunk_rows: int) -> list[str]:
    """MLE-bench's split, computed here from the ids alone: 10 % of each chunk, seed 0."""
    ids = [str(r["example_id"]) for r in RAW_RECORDS]
    held_out: list[str] = []
    for start in range(0, len(ids), chunk_rows):
        held_out.extend(train_test_split(ids[start : start + chunk_rows], test_size=0.1, random_state=0)[1])
    return held_out


def mlebench_reference_score(submission: pd.DataFrame, records: list[dict[str, Any]]) -> float:
    """MLE-bench's rule, applied to the records: answered/correct flags, then scikit-learn's micro F1."""
    annotations = {r["example_id"]: r["annotations"][0] for r in records}
    y_true, y_pred = [], []
    for example_id, cell in zip(submission["example_id"], submission["PredictionString"].fillna("").astype(str)):
        pred: Any = cell.strip()
        if pred.count(":") == 1:
            pred = tuple(int(p) for p in pred.split(":"))
        base, part = example_id.rsplit("_", 1)
        annotation = annotations[base]
        if part == "long":
            long = annotation["long_answer"]
            valid = [(long["start_token"], long["end_token"])] if long["start_token"] != -1 else []
        else:
            valid = [(s["start_token"], s["end_token"]) for s in annotation["short_answers"]]
            if annotation["yes_no_answer"] != "NONE":
                valid.append(annotation["yes_no_answer"])
        y_pred.append(1 if pred else 0)
        y_true.append(int(pred in valid) if pred else int(bool(valid)))
    return float(f1_score(y_true, y_pred, average="micro"))


def test_prepared_files_are_mlebench_s(registry: CompetitionRegistry) -> None:
    spec = registry.get(CID)
    public, private = registry.public_dir(CID), registry.private_dir(CID)
    assert sorted(p.name for p in public.iterdir()) == [
        "description.md", "sample_submission.csv", "simplified-nq-test.jsonl", "simplified-nq-train.jsonl"
    ]
    assert sorted(p.name for p in private.iterdir()) == ["gold_submission.csv", "rows", "test.jsonl"]
    assert spec.answers_path(registry.data_dir) == private / "rows" / "answers.csv"
    # The checksummed files are exactly those MLE-bench recorded, so real data can be verified.
    result = prepare_competition(spec, registry, verify=False)
    assert result.reused
    assert {k: sorted(v) for k, v in result.checksums.items()} == {
        k: sorted(spec.checksums[k]) for k in ("public", "private")
    }


def test_the_split_is_mlebench_s(registry: CompetitionRegistry) -> None:
    train = read_jsonl(registry.public_dir(CID) / "simplified-nq-train.jsonl")
    test = read_jsonl(registry.private_dir(CID) / "test.jsonl")
    public_test = read_jsonl(registry.public_dir(CID) / "simplified-nq-test.jsonl")
    held_out = expected_held_out(1_000)
    assert [r["example_id"] for r in test] == held_out == [by_id(i) for i in (22, 20, 25, 4)]
    assert len(train) == 36 and {r["example_id"] for r in train}.isdisjoint(held_out)
    # Whole records, with the id as text; the public test records lose the labels and the URL.
    raw = {str(r["example_id"]): {**r, "example_id": str(r["example_id"])} for r in RAW_RECORDS}
    assert all(r == raw[r["example_id"]] for r in train + test)
    assert [list(r) for r in public_test] == [TEST_FIELDS] * 4
    assert public_test == [{k: r[k] for k in TEST_FIELDS} for r in test]


def test_each_chunk_is_split_on_its_own(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    registry = CompetitionRegistry(find_competitions_root(), tmp_path / "data")
    spec = registry.get(CID)
    monkeypatch.setitem(spec.prepare.__globals__, "CHUNK_ROWS", 10)
    prepare_competition(spec, registry, raw=RAW, verify=False)
    test = read_jsonl(registry.private_dir(CID) / "test.jsonl")
    assert [r["example_id"] for r in test] == expected_held_out(10) == [by_id(i) for i in (2, 12, 22, 32)]
    train = read_jsonl(registry.public_dir(CID) / "simplified-nq-train.jsonl")
    assert len(train) == 36


def test_gold_rows_and_answer_rows(registry: CompetitionRegistry) -> None:
    gold = read_csv(registry.private_dir(CID) / "gold_submission.csv", dtype=str, keep_default_na=False)
    rows = read_csv(registry.private_dir(CID) / "rows" / "answers.csv", dtype=str, keep_default_na=False)
    two_short, no_answer, no, one_short = by_id(22), by_id(20), by_id(25), by_id(4)
    expected_ids = [f"{e}_{part}" for e in (two_short, no_answer, no, one_short) for part in ("short", "long")]
    assert gold["example_id"].tolist() == rows["example_id"].tolist() == expected_ids
    # MLE-bench's gold takes the first short span; the rows keep every valid answer.
    assert gold["PredictionString"].tolist() == ["5:6", "4:12", "", "", "NO", "4:14", "24:26", "23:29"]
    assert rows["PredictionString"].tolist() == ["5:6 8:10", "4:12", "", "", "NO", "4:14", "24:26", "23:29"]
    sample = read_csv(registry.public_dir(CID) / "sample_submission.csv", dtype=str, keep_default_na=False)
    assert sample["example_id"].tolist() == expected_ids and set(sample["PredictionString"]) == {""}


def test_gold_earns_gold_and_sample_is_valid_without_medal(registry: CompetitionRegistry, tmp_path: Path) -> None:
    spec = registry.get(CID)
    gold_path = registry.private_dir(CID) / "gold_submission.csv"
    gold = grade_submission(gold_path, spec, registry.data_dir)
    assert gold.valid_submission, gold.error
    assert gold.score == 1.0 and gold.medal is Medal.GOLD
    shuffled = read_csv(gold_path, dtype=str).sample(frac=1.0, random_state=4)
    shuffled.to_csv(tmp_path / "shuffled.csv", index=False)
    assert grade_submission(tmp_path / "shuffled.csv", spec, registry.data_dir).score == 1.0
    sample = grade_submission(spec.sample_submission_path(registry.data_dir), spec, registry.data_dir)
    assert sample.valid_submission, sample.error
    # Blank rows are right only where the part has no answer: 2 of 8 rows.
    assert sample.score == 0.25 and sample.medal is Medal.NONE and not sample.above_median


def test_scores_match_mlebench_s_rule(registry: CompetitionRegistry, tmp_path: Path) -> None:
    spec = registry.get(CID)
    records = read_jsonl(registry.private_dir(CID) / "test.jsonl")
    gold = read_csv(registry.private_dir(CID) / "gold_submission.csv", dtype=str, keep_default_na=False)
    # Any valid short span is right, and MLE-bench reads spans with int(): " 8: 10" is 8:10.
    other_span = gold.assign(PredictionString=gold["PredictionString"].replace({"5:6": " 8: 10"}))
    other_span.to_csv(tmp_path / "other.csv", index=False)
    report = grade_submission(tmp_path / "other.csv", spec, registry.data_dir)
    assert report.score == 1.0, report.error
    rng = random.Random(11)
    choices = ["", "YES", "NO", "4:12", "5:6", "8:10", "4:14", "23:29", "24:26", "+24:26", "0:3", "-1:-1"]
    for trial in range(20):
        submission = gold.assign(PredictionString=[rng.choice(choices) for _ in range(len(gold))])
        submission = submission.sample(frac=1.0, random_state=trial)
        path = tmp_path / f"random-{trial}.csv"
        submission.to_csv(path, index=False)
        report = grade_submission(path, spec, registry.data_dir)
        assert report.valid_submission, report.error
        assert report.score == round(mlebench_reference_score(submission, records), 5)


@pytest.mark.parametrize(
    ("cell", "problem"),
    [("5-6", "'5-6'"), ("yes", "'yes'"), ("5:6:7", "'5:6:7'"), ("a:6", "'a:6'")],
)
def test_malformed_predictions_are_invalid(
    registry: CompetitionRegistry, tmp_path: Path, cell: str, problem: str
) -> None:
    spec = registry.get(CID)
    gold = read_csv(registry.private_dir(CID) / "gold_submission.csv", dtype=str, keep_default_na=False)
    gold.loc[2, "PredictionString"] = cell
    gold.to_csv(tmp_path / "bad.csv", index=False)
    report = grade_submission(tmp_path / "bad.csv", spec, registry.data_dir)
    assert not report.valid_submission and report.score is None
    assert report.error == (
        f"Submission column 'PredictionString' has {problem}, which is not 'start:end', 'YES', 'NO' or empty "
        f"at row 3 (id '{by_id(20)}_short')."
    )


def test_a_missing_part_is_invalid(registry: CompetitionRegistry, tmp_path: Path) -> None:
    spec = registry.get(CID)
    gold = read_csv(registry.private_dir(CID) / "gold_submission.csv", dtype=str)
    gold.drop(index=7).to_csv(tmp_path / "short.csv", index=False)
    report = grade_submission(tmp_path / "short.csv", spec, registry.data_dir)
    assert not report.valid_submission
    assert report.error.startswith("Submission has 7 rows; expected 8 (one per test id).")


def test_a_record_without_exactly_one_annotation_is_refused(registry: CompetitionRegistry) -> None:
    answer_rows = registry.get(CID).prepare.__globals__["answer_rows"]
    record = {"example_id": "17", "annotations": []}
    with pytest.raises(ValueError, match=r"example '17' has 0 annotations; a labelled Natural Questions record has exactly one"):
        answer_rows([record])


def test_docstring_examples(registry: CompetitionRegistry) -> None:
    module = sys.modules[registry.get(CID).prepare.__module__]
    result = doctest.testmod(module)
    assert result.attempted >= 4 and result.failed == 0


def test_rows_can_be_added_to_a_private_dir_prepared_elsewhere(registry: CompetitionRegistry, tmp_path: Path) -> None:
    write_answer_rows = registry.get(CID).prepare.__globals__["write_answer_rows"]
    private = tmp_path / "private"
    private.mkdir()
    (private / "test.jsonl").write_bytes((registry.private_dir(CID) / "test.jsonl").read_bytes())
    written = write_answer_rows(private)
    assert written == private / "rows" / "answers.csv"
    assert written.read_bytes() == (registry.private_dir(CID) / "rows" / "answers.csv").read_bytes()
    (private / "test.jsonl").write_text('{"example_id": "1", "annotations": []}\n[1, 2]\n', encoding="utf-8")
    with pytest.raises(ValueError, match=r"test\.jsonl: line 2: not a record with an example_id"):
        write_answer_rows(private)
