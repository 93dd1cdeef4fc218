"""Grading speed on competition-shaped submissions of a million rows.

For a few metric kinds (accuracy, ROC AUC, multi-class log loss over 10 class columns, RMSE,
MAP@5) the benchmark writes an answers CSV and an imperfect submission CSV of ``--rows`` rows
(ids like Kaggle's, ``"id0000042"``), once with the rows in the order of the test set (as a
submission written from the sample submission has them) and once shuffled, then times

- *read*: pandas alone reading the two CSVs (``pandas.read_csv`` with default options), and
- *grade*: :func:`grading.grade.score_csv`, the whole scoring path of ``mleaudit grade``:
  reading both files (ids as text), validating columns, ids and every value, aligning rows by
  id, and computing the metric,

and prints the times and the ratio grade / read. The target is a ratio within 1.5: grading
costs at most half again what reading the files costs. Shuffled rows cost one hash pass over
both id columns more (rows in test order are recognised by one comparison). Each time is the
best of ``--repeat`` runs; on a loaded machine both times grow, not always alike.

Usage: ``python benchmarks/grading_speed.py [--rows 1000000] [--repeat 3] [--keep DIR]``
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from grading.grade import score_csv  # noqa: E402

TARGET_RATIO = 1.5


def _ids(n: int) -> np.ndarray:
    return np.char.add("id", np.char.zfill(np.arange(n).astype(str), 7))


def _write(frame: pd.DataFrame, path: Path) -> Path:
    frame.to_csv(path, index=False, lineterminator="\n")
    return path


def _case_accuracy(n: int, rng: np.random.Generator, folder: Path) -> tuple[Path, Path, dict]:
    labels = rng.integers(0, 10, n)
    guess = np.where(rng.uniform(size=n) < 0.8, labels, rng.integers(0, 10, n))
    answers = pd.DataFrame({"id": _ids(n), "label": labels})
    submission = pd.DataFrame({"id": _ids(n), "label": guess})
    return (
        _write(answers, folder / "accuracy_answers.csv"),
        _write(submission, folder / "accuracy_submission.csv"),
        {"metric": "accuracy", "id_column": "id", "target_columns": ["label"]},
    )


def _case_auc(n: int, rng: np.random.Generator, folder: Path) -> tuple[Path, Path, dict]:
    truth = rng.integers(0, 2, n)
    scores = np.clip(truth * 0.3 + rng.uniform(size=n) * 0.7, 0, 1).round(6)
    answers = pd.DataFrame({"id": _ids(n), "target": truth})
    submission = pd.DataFrame({"id": _ids(n), "target": scores})
    return (
        _write(answers, folder / "auc_answers.csv"),
        _write(submission, folder / "auc_submission.csv"),
        {"metric": "auc-roc", "id_column": "id", "target_columns": ["target"]},
    )


def _case_log_loss(n: int, rng: np.random.Generator, folder: Path) -> tuple[Path, Path, dict]:
    classes = [f"class_{j}" for j in range(10)]
    labels = rng.integers(0, 10, n)
    answers = pd.DataFrame(np.eye(10, dtype=np.int64)[labels], columns=classes)
    answers.insert(0, "id", _ids(n))
    probs = rng.dirichlet(np.ones(10), n).round(6)
    probs[:, -1] = 1.0 - probs[:, :-1].sum(axis=1)
    submission = pd.DataFrame(np.clip(probs, 0, 1), columns=classes)
    submission.insert(0, "id", _ids(n))
    return (
        _write(answers, folder / "logloss_answers.csv"),
        _write(submission, folder / "logloss_submission.csv"),
        {"metric": "multi-class-log-loss", "id_column": "id", "target_columns": classes},
    )


def _case_rmse(n: int, rng: np.random.Generator, folder: Path) -> tuple[Path, Path, dict]:
    truth = rng.normal(50, 10, n).round(4)
    answers = pd.DataFrame({"id": _ids(n), "target": truth})
    submission = pd.DataFrame({"id": _ids(n), "target": (truth + rng.normal(0, 2, n)).round(4)})
    return (
        _write(answers, folder / "rmse_answers.csv"),
        _write(submission, folder / "rmse_submission.csv"),
        {"metric": "root-mean-squared-error", "id_column": "id", "target_columns": ["target"]},
    )


def _case_map5(n: int, rng: np.random.Generator, folder: Path) -> tuple[Path, Path, dict]:
    vocabulary = np.char.add("w_", np.arange(5000).astype(str))
    truth = vocabulary[rng.integers(0, 5000, n)]
    guesses = vocabulary[rng.integers(0, 5000, (n, 5))]
    hit_at = rng.integers(0, 8, n)  # 0..4: the true label at that rank; 5..7: not predicted
    rows = np.arange(n)[hit_at < 5]
    guesses[rows, hit_at[hit_at < 5]] = truth[rows]
    predicted = pd.Series(guesses[:, 0]).str.cat([pd.Series(guesses[:, j]) for j in range(1, 5)], sep=" ")
    answers = pd.DataFrame({"Image": _ids(n), "Id": truth})
    submission = pd.DataFrame({"Image": _ids(n), "Id": predicted.to_numpy()})
    return (
        _write(answers, folder / "map5_answers.csv"),
        _write(submission, folder / "map5_submission.csv"),
        {"metric": "MAP@5", "id_column": "Image", "target_columns": ["Id"]},
    )


CASES: dict[str, Callable[[int, np.random.Generator, Path], tuple[Path, Path, dict]]] = {
    "accuracy": _case_accuracy,
    "auc-roc": _case_auc,
    "multi-class-log-loss (10 classes)": _case_log_loss,
    "rmse": _case_rmse,
    "MAP@5": _case_map5,
}


def _best_of(repeat: int, fn: Callable[[], object]) -> tuple[float, object]:
    best, value = float("inf"), None
    for _ in range(repeat):
        start = time.perf_counter()
        value = fn()
        best = min(best, time.perf_counter() - start)
    return best, value


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000, help="rows per submission (default 1,000,000)")
    parser.add_argument("--repeat", type=int, default=3, help="runs per timing; the best is kept (default 3)")
    parser.add_argument("--keep", type=Path, help="write the CSVs here and keep them (default: a temporary dir)")
    args = parser.parse_args(argv)
    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory() as tmp:
        folder = args.keep or Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        print(f"{args.rows:,} rows per submission; best of {args.repeat} runs; target ratio <= {TARGET_RATIO}")
        print(f"{'metric':36} {'rows':>9} {'read (s)':>9} {'grade (s)':>10} {'ratio':>6}  score")
        worst = 0.0
        for name, make in CASES.items():
            answers, ordered, spec = make(args.rows, rng, folder)
            shuffled = _write(
                pd.read_csv(ordered, dtype=str, keep_default_na=False).sample(frac=1.0, random_state=0),
                ordered.with_name(ordered.stem + "_shuffled.csv"),
            )
            for label, submission in (("in order", ordered), ("shuffled", shuffled)):
                read_time, _ = _best_of(args.repeat, lambda: (pd.read_csv(answers), pd.read_csv(submission)))
                grade_time, score = _best_of(args.repeat, lambda: score_csv(submission, answers, **spec))
                ratio = grade_time / read_time
                worst = max(worst, ratio)
                print(f"{name:36} {label:>9} {read_time:9.3f} {grade_time:10.3f} {ratio:6.2f}  {score:.5f}")
        print(f"worst ratio {worst:.2f} ({'within' if worst <= TARGET_RATIO else 'over'} the {TARGET_RATIO} target)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
