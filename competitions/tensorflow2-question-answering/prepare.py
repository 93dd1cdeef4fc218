"""TensorFlow 2.0 Question Answering: MLE-bench's split of Kaggle's Natural Questions train file.

Kaggle never released the answers of its test file, so, as MLE-bench does, the held-out set is
carved from ``simplified-nq-train.jsonl``: the file is read in chunks of 1,000 records and 10 %
of each chunk (scikit-learn ``train_test_split``, ``random_state=0``) is held out. File names,
record layout and row order are MLE-bench's, so the prepared files can be checked against its
checksums (checksums.yaml):

- ``public/simplified-nq-train.jsonl``: the kept records, whole;
- ``public/simplified-nq-test.jsonl``: the held-out records without ``annotations`` and
  ``document_url``;
- ``public/sample_submission.csv``: ``<example_id>_short`` then ``<example_id>_long`` per
  held-out example, every PredictionString blank;
- ``private/test.jsonl``: the held-out records, whole (MLE-bench's answer file);
- ``private/gold_submission.csv``: one valid answer per row (MLE-bench's gold submission: the
  yes/no answer, else the first short span; the long span).

MLE-bench's grader reads the Natural Questions records; this project's grader reads rows. The
rows are written to ``private/rows/answers.csv``: one row per ``_short``/``_long`` id, in the
order of the gold submission, holding every valid answer of the row separated by spaces, as
:func:`mleaudit.grading.metrics.answer_span_accuracy_score` reads them. The file lies in a subfolder
because MLE-bench's checksums cover the files directly inside ``private/``: the checksummed set
stays exactly MLE-bench's. For a private dir MLE-bench prepared, :func:`write_answer_rows` adds
the rows from its ``test.jsonl``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterable, Mapping

import pandas as pd
from sklearn.model_selection import train_test_split

from mleaudit.grading.prepare import write_prepared_csv

__all__ = [
    "RAW_FILE",
    "CHUNK_ROWS",
    "ROWS_FILE",
    "valid_answers",
    "gold_answers",
    "answer_rows",
    "gold_rows",
    "write_answer_rows",
    "prepare",
]

#: Kaggle's labelled training file, the only raw file MLE-bench's preparation reads.
RAW_FILE = "simplified-nq-train.jsonl"
#: Records per chunk: MLE-bench splits each chunk separately, so the chunk size is part of the split.
CHUNK_ROWS = 1_000
#: The answer rows, relative to the private dir (``dataset.answers`` in config.yaml).
ROWS_FILE = "rows/answers.csv"
#: Fields of the public test records, in MLE-bench's order.
TEST_FIELDS = ["example_id", "question_text", "document_text", "long_answer_candidates"]
ID = "example_id"
TARGET = "PredictionString"


def _annotation(record: Mapping[str, Any]) -> Mapping[str, Any]:
    annotations = record.get("annotations")
    if not isinstance(annotations, list) or len(annotations) != 1:
        count = len(annotations) if isinstance(annotations, list) else "no"
        raise ValueError(
            f"example {record.get(ID)!r} has {count} annotations; a labelled Natural Questions record has exactly one"
        )
    return annotations[0]


def _span(part: Mapping[str, Any]) -> str:
    return f"{int(part['start_token'])}:{int(part['end_token'])}"


def valid_answers(annotation: Mapping[str, Any]) -> tuple[list[str], list[str]]:
    """Every answer the grader accepts for one example, as MLE-bench's grader lists them.

    Parameters
    ----------
    annotation : mapping
        The example's single Natural Questions annotation: ``long_answer`` (``start_token``,
        ``end_token``; -1 when the page has no long answer), ``short_answers`` (a list of
        ``start_token``/``end_token`` spans) and ``yes_no_answer`` (``YES``, ``NO`` or ``NONE``).

    Returns
    -------
    long, short : list of str
        The valid long answer (``"start:end"``; empty when there is none) and the valid short
        answers: every short span, then ``YES``/``NO`` when the annotation has one.

    Examples
    --------
    >>> valid_answers({"long_answer": {"start_token": 3, "end_token": 9}, "yes_no_answer": "NONE",
    ...                "short_answers": [{"start_token": 4, "end_token": 5}, {"start_token": 6, "end_token": 8}]})
    (['3:9'], ['4:5', '6:8'])
    """
    long = [_span(annotation["long_answer"])] if int(annotation["long_answer"]["start_token"]) != -1 else []
    short = [_span(part) for part in annotation["short_answers"]]
    if annotation["yes_no_answer"] != "NONE":
        short.append(str(annotation["yes_no_answer"]))
    return long, short


def gold_answers(annotation: Mapping[str, Any]) -> tuple[str, str]:
    """The one answer per part MLE-bench's gold submission gives.

    The short answer is the yes/no answer when there is one, else the first short span, else
    blank; the long answer is the long span, or blank.

    Returns
    -------
    long, short : str
        ``"start:end"``, ``YES``, ``NO`` or ``""``.

    Examples
    --------
    >>> gold_answers({"long_answer": {"start_token": -1, "end_token": -1}, "yes_no_answer": "NONE",
    ...               "short_answers": []})
    ('', '')
    """
    if annotation["yes_no_answer"] != "NONE":
        short = str(annotation["yes_no_answer"])
    elif annotation["short_answers"]:
        short = _span(annotation["short_answers"][0])
    else:
        short = ""
    long = _span(annotation["long_answer"]) if int(annotation["long_answer"]["start_token"]) != -1 else ""
    return long, short


def _rows(records: Iterable[Mapping[str, Any]], *, every_answer: bool) -> pd.DataFrame:
    rows: list[dict[str, str]] = []
    for record in records:
        annotation = _annotation(record)
        if every_answer:
            long_list, short_list = valid_answers(annotation)
            long, short = " ".join(long_list), " ".join(short_list)
        else:
            long, short = gold_answers(annotation)
        # MLE-bench writes the short row of an example before its long row.
        rows.append({ID: f"{record[ID]}_short", TARGET: short})
        rows.append({ID: f"{record[ID]}_long", TARGET: long})
    return pd.DataFrame(rows, columns=[ID, TARGET])


def answer_rows(records: Iterable[Mapping[str, Any]]) -> pd.DataFrame:
    """Turn Natural Questions records into the answer rows the grader scores against.

    Parameters
    ----------
    records : iterable of mapping
        Records as in ``test.jsonl``: ``example_id`` and ``annotations`` (exactly one).

    Returns
    -------
    pandas.DataFrame
        Columns ``[example_id, PredictionString]``, two rows per record (``<id>_short``, then
        ``<id>_long``); PredictionString lists every valid answer separated by spaces
        (:func:`valid_answers`), empty when the part has no answer.

    Raises
    ------
    ValueError
        If a record does not have exactly one annotation (the example id is named).

    Examples
    --------
    >>> record = {"example_id": "7", "annotations": [{"yes_no_answer": "YES", "short_answers": [],
    ...           "long_answer": {"start_token": 3, "end_token": 9}}]}
    >>> answer_rows([record]).values.tolist()
    [['7_short', 'YES'], ['7_long', '3:9']]
    """
    return _rows(records, every_answer=True)


def gold_rows(records: Iterable[Mapping[str, Any]]) -> pd.DataFrame:
    """MLE-bench's gold submission for Natural Questions records: one answer per row.

    Returns
    -------
    pandas.DataFrame
        Columns ``[example_id, PredictionString]`` in the order of :func:`answer_rows`, with
        :func:`gold_answers` as the prediction.

    Raises
    ------
    ValueError
        If a record does not have exactly one annotation.
    """
    return _rows(records, every_answer=False)


def write_answer_rows(private: Path) -> Path:
    """Write ``rows/answers.csv`` from the ``test.jsonl`` of a prepared private dir.

    :func:`prepare` writes the rows itself; this serves a private dir prepared by MLE-bench,
    which holds ``test.jsonl`` but no rows.

    Parameters
    ----------
    private : pathlib.Path
        A private dir holding MLE-bench's ``test.jsonl``.

    Returns
    -------
    pathlib.Path
        The rows file written, ``private/rows/answers.csv``.

    Raises
    ------
    ValueError
        If a line of ``test.jsonl`` is not a JSON object or a record lacks ``example_id`` or
        exactly one annotation (the line is named).
    """
    private = Path(private)
    source = private / "test.jsonl"
    records: list[dict[str, Any]] = []
    with open(source, encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ValueError(f"{source}: line {number}: not JSON ({exc.msg})") from None
            if not isinstance(record, dict) or ID not in record:
                raise ValueError(f"{source}: line {number}: not a record with an {ID}")
            # Only the id and the labels are kept: a record holds a whole Wikipedia page.
            records.append({ID: str(record[ID]), "annotations": record.get("annotations")})
    target = private / ROWS_FILE
    target.parent.mkdir(parents=True, exist_ok=True)
    write_prepared_csv(answer_rows(records), target)
    return target


def prepare(raw: Path, public: Path, private: Path) -> None:
    """Split ``raw/simplified-nq-train.jsonl`` into MLE-bench's public and private files.

    Parameters
    ----------
    raw : pathlib.Path
        Folder with Kaggle's ``simplified-nq-train.jsonl`` (307,373 records: ``document_text``,
        ``long_answer_candidates``, ``question_text``, ``annotations``, ``document_url``,
        ``example_id``).
    public : pathlib.Path
        Receives ``simplified-nq-train.jsonl``, ``simplified-nq-test.jsonl`` and
        ``sample_submission.csv``.
    private : pathlib.Path
        Receives ``test.jsonl``, ``gold_submission.csv`` and ``rows/answers.csv``.

    Raises
    ------
    ValueError
        If a held-out record does not have exactly one annotation.
    """
    raw, public, private = Path(raw), Path(public), Path(private)
    held_out: list[dict[str, Any]] = []
    with (
        open(public / "simplified-nq-train.jsonl", "w", encoding="utf-8") as train_out,
        open(public / "simplified-nq-test.jsonl", "w", encoding="utf-8") as test_out,
        open(private / "test.jsonl", "w", encoding="utf-8") as answers_out,
        pd.read_json(raw / RAW_FILE, orient="records", lines=True, chunksize=CHUNK_ROWS) as reader,
    ):
        for chunk in reader:
            # Kaggle's ids are numbers in some files and text in others; MLE-bench keeps text.
            chunk[ID] = chunk[ID].astype(str)
            kept, test = train_test_split(chunk, test_size=0.1, random_state=0)
            train_out.write(kept.to_json(orient="records", lines=True))
            answers_out.write(test.to_json(orient="records", lines=True))
            test_out.write(test[TEST_FIELDS].to_json(orient="records", lines=True))
            held_out.extend({ID: i, "annotations": a} for i, a in zip(test[ID], test["annotations"]))

    gold = gold_rows(held_out)
    write_prepared_csv(gold, private / "gold_submission.csv")
    sample = gold.assign(**{TARGET: ""})
    write_prepared_csv(sample, public / "sample_submission.csv")
    (private / ROWS_FILE).parent.mkdir(parents=True, exist_ok=True)
    write_prepared_csv(answer_rows(held_out), private / ROWS_FILE)
