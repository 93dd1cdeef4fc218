"""Answer keys for the differential test, in the files MLE-bench's graders read.

Most competitions take the property case of their metric, renamed to their columns
(:func:`tests.grading.competition_keys.competition_key`). A few graders need more than that
case holds, and get a key of their own here:

- ``jigsaw-unintended-bias-in-toxicity-classification``: every identity column MLE-bench reads;
- ``jigsaw-toxic-comment-classification-challenge``: rows Kaggle left unscored, ``-1`` in every
  label column (MLE-bench drops them);
- ``google-research-identify-contrails-reduce-global-warming``: every image the same size
  (MLE-bench stacks the decoded masks into one array);
- ``hubmap-kidney-segmentation``: no empty answer mask (every test image has glomeruli, and
  MLE-bench's grader asserts each answer is text);
- paddy, speech commands and spaceship-titanic: labels that are words (:data:`LABEL_NAMES`);
- ``tensorflow2-question-answering``: MLE-bench grades against ``test.jsonl`` records, mleaudit
  against the answer rows its ``prepare.py`` derives from them.
"""

from __future__ import annotations

import importlib.util
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from mleaudit.grading.metrics import JIGSAW_IDENTITY_COLUMNS
from mleaudit.grading.spec import CompetitionSpec
from tests.grading.competition_keys import competition_key

REPO = Path(__file__).resolve().parents[3]
TF2QA_RAW = REPO / "tests" / "fixtures" / "grading" / "raw" / "tensorflow2-question-answering" / "simplified-nq-train.jsonl"


@dataclass
class DifferentialKey:
    """The answers as written for both graders, and two submissions, every cell as text.

    Attributes
    ----------
    mlebench_answers : pathlib.Path
        The answers file MLE-bench's grader reads (``dataset.answers`` of its config).
    perfect, degraded : pandas.DataFrame
        A submission equal to the answers and a plausible imperfect one.
    """

    mlebench_answers: Path
    perfect: pd.DataFrame
    degraded: pd.DataFrame


def _write(frame: pd.DataFrame, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    frame.to_csv(path, index=False, lineterminator="\n")
    return path


def _jigsaw_unintended(rng: np.random.Generator) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    n = 60
    ids = [str(7_000_000 + i) for i in range(n)]
    toxicity = rng.choice([0.0, 0.1, 0.4, 0.6, 0.9, 1.0], size=n)
    answers = pd.DataFrame({"id": ids, "toxicity": [repr(float(t)) for t in toxicity]})
    for column in JIGSAW_IDENTITY_COLUMNS:
        values = rng.choice(["0.0", "0.2", "0.6", "1.0", ""], size=n, p=[0.4, 0.1, 0.2, 0.2, 0.1])
        answers[column] = values
    perfect = pd.DataFrame({"id": ids, "prediction": answers["toxicity"]})
    noisy = np.clip(toxicity + rng.normal(0, 0.3, size=n), 0, 1)
    degraded = pd.DataFrame({"id": ids, "prediction": [repr(float(round(v, 4))) for v in noisy]})
    return answers, perfect, degraded


def _jigsaw_toxic(rng: np.random.Generator) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    classes = ["toxic", "severe_toxic", "obscene", "threat", "insult", "identity_hate"]
    n, unscored = 24, 6
    ids = [f"{i:016x}" for i in range(1000, 1000 + n)]
    truth = rng.integers(0, 2, size=(n, len(classes)))
    truth[:2] = [[0] * len(classes), [1] * len(classes)]  # both classes in every column
    truth[n - unscored:] = -1  # rows Kaggle left unscored, marked -1 in every column
    answers = pd.DataFrame({"id": ids, **{c: [str(v) for v in truth[:, j]] for j, c in enumerate(classes)}})
    guess = np.where(truth < 0, 0.5, truth.astype(float))
    perfect = pd.DataFrame({"id": ids, **{c: [repr(float(v)) for v in guess[:, j]] for j, c in enumerate(classes)}})
    noisy = np.clip(guess + rng.normal(0, 0.4, size=guess.shape), 0, 1).round(4)
    degraded = pd.DataFrame({"id": ids, **{c: [repr(float(v)) for v in noisy[:, j]] for j, c in enumerate(classes)}})
    return answers, perfect, degraded


def _runs(rng: np.random.Generator, pixels: int) -> str:
    starts = np.sort(rng.choice(np.arange(1, pixels - 12, 12), size=int(rng.integers(1, 4)), replace=False))
    return " ".join(f"{int(s)} {int(rng.integers(1, 10))}" for s in starts)


def _shifted(rle: str) -> str:
    values = [int(v) for v in rle.split()]
    return " ".join(str(v + 1 if i % 2 == 0 else v) for i, v in enumerate(values))


def _contrails(rng: np.random.Generator) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    height, width, n = 16, 12, 6
    masks = [_runs(rng, height * width) for _ in range(n - 1)] + ["-"]
    ids = [str(1000 + i) for i in range(n)]
    answers = pd.DataFrame({"record_id": ids, "encoded_pixels": masks, "height": str(height), "width": str(width)})
    perfect = answers[["record_id", "encoded_pixels"]].copy()
    degraded = perfect.assign(encoded_pixels=[_shifted(m) if m != "-" else "-" for m in masks])
    return answers, perfect, degraded


def _hubmap(rng: np.random.Generator) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    height, width, n = 14, 11, 5
    ids = [f"k{i:03d}" for i in range(n)]
    masks = [_runs(rng, height * width) for _ in range(n)]
    answers = pd.DataFrame({"id": ids, "encoding": masks, "width_pixels": str(width), "height_pixels": str(height)})
    perfect = pd.DataFrame({"id": ids, "predicted": masks})
    degraded = perfect.assign(predicted=[_shifted(m) for m in masks[:-1]] + [""])
    return answers, perfect, degraded


def _load_tf2qa_prepare():
    path = REPO / "competitions" / "tensorflow2-question-answering" / "prepare.py"
    module_spec = importlib.util.spec_from_file_location("_tf2qa_prepare_for_tests", path)
    module = importlib.util.module_from_spec(module_spec)
    assert module_spec.loader is not None
    module_spec.loader.exec_module(module)
    return module


def _tf2qa(spec: CompetitionSpec, data_dir: Path) -> DifferentialKey:
    prepare = _load_tf2qa_prepare()
    records = [json.loads(line) for line in TF2QA_RAW.read_text(encoding="utf-8").splitlines()[:12]]
    private = spec.answers_path(data_dir).parent.parent  # ``private/rows/answers.csv``
    private.mkdir(parents=True, exist_ok=True)
    jsonl = private / "test.jsonl"
    # MLE-bench's prepare.py writes each example_id as text.
    records = [{**r, "example_id": str(r["example_id"])} for r in records]
    jsonl.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    prepare.write_answer_rows(private)
    perfect = prepare.gold_rows(records)
    degraded = perfect.copy()
    degraded.loc[degraded.index[::3], "PredictionString"] = ""
    degraded.loc[degraded.index[1::4], "PredictionString"] = "1:2"
    return DifferentialKey(mlebench_answers=jsonl, perfect=perfect, degraded=degraded)


#: Competitions whose labels are words (the property cases use numbers): the distinct labels of
#: the key, in sorted order, take these names in every file.
LABEL_NAMES = {
    "paddy-disease-classification": ["bacterial_leaf_blight", "blast", "brown_spot", "normal", "tungro"],
    "tensorflow-speech-recognition-challenge": ["down", "no", "silence", "unknown", "yes"],
    "spaceship-titanic": ["False", "True"],
}


def _named_labels(spec: CompetitionSpec, frames: list[pd.DataFrame]) -> list[pd.DataFrame]:
    names = LABEL_NAMES[spec.id]
    targets = list(spec.target_columns)
    labels = sorted({v for frame in frames for c in targets if c in frame.columns for v in frame[c]}, key=float)
    assert len(labels) <= len(names), f"{spec.id}: {len(labels)} labels, {len(names)} names"
    mapping = dict(zip(labels, names))
    return [frame.assign(**{c: frame[c].map(mapping) for c in targets if c in frame.columns}) for frame in frames]


SPECIAL = {
    "jigsaw-toxic-comment-classification-challenge": _jigsaw_toxic,
    "jigsaw-unintended-bias-in-toxicity-classification": _jigsaw_unintended,
    "google-research-identify-contrails-reduce-global-warming": _contrails,
    "hubmap-kidney-segmentation": _hubmap,
}


def write_key(spec: CompetitionSpec, data_dir: Path, seed: int = 0) -> DifferentialKey:
    """Write ``spec``'s answers under ``data_dir`` (where both graders look) and return the key.

    Parameters
    ----------
    spec : CompetitionSpec
        An MLE-bench competition.
    data_dir : pathlib.Path
        The prepared-data dir; the answers go to ``spec.answers_path(data_dir)`` (and, for
        tensorflow2-question-answering, MLE-bench's ``test.jsonl`` beside its rows).
    seed : int
        Seed of the invented values of the special keys.

    Returns
    -------
    DifferentialKey
    """
    if spec.id == "tensorflow2-question-answering":
        return _tf2qa(spec, data_dir)
    rng = np.random.default_rng(seed)
    if spec.id in SPECIAL:
        answers, perfect, degraded = SPECIAL[spec.id](rng)
    else:
        key = competition_key(spec)
        answers, perfect, degraded = key.answers, key.perfect, key.degraded
        if spec.id in LABEL_NAMES:
            answers, perfect, degraded = _named_labels(spec, [answers, perfect, degraded])
    path = _write(answers, spec.answers_path(data_dir))
    return DifferentialKey(mlebench_answers=path, perfect=perfect, degraded=degraded)
