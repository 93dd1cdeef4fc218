"""Grading speed on competition-shaped submissions of a million rows.

For a few metric kinds (accuracy, ROC AUC, multi-class log loss over 10 class columns, RMSE,
MAP@5) the benchmark writes an answers CSV and an imperfect submission CSV of ``--rows`` rows
(ids like Kaggle's, ``"id0000042"``), once with the rows in the order of the test set (as a
submission written from the sample submission has them) and once shuffled, then times

- *read*: pandas alone reading the two CSVs (``pandas.read_csv`` with default options), the
  baseline of the target;
- *arrow read*: ``pyarrow.csv.read_csv`` reading the two CSVs, shown for transparency (not the
  baseline);
- *grade*: :func:`grading.grade.score_csv`, the whole scoring path of ``mleaudit grade``:
  reading both files (ids as text), validating columns, ids and every value, aligning rows by
  id, and computing the metric,

and prints the times and the ratio grade / read. The target is a ratio within 1.5: grading
costs at most half again what reading the files costs. Rows in test order are recognised by
one vectorised comparison of the id columns; shuffled rows cost one join on the ids' bytes
(ids like these become the numbers their digits spell, joined through a table indexed by the
number) and a reordering of the scored columns, gathered straight into the metric's arrays.
Number columns are proved valid by their minimum and maximum; only a failing column is checked
row by row. The join, MAP@5's token match, ROC AUC's pair counts and the reordering of text
columns run in the compiled kernels (``grading/metrics/_kernels.c``) when they are built; the
first line says whether they ran (``MLEAUDIT_NO_NATIVE=1`` times the NumPy paths instead).

Each time is the best of ``--repeat`` runs, the read and grade runs alternating so both see
the same load; the load average is printed before and after, since on a shared machine both
times grow under load, and not always alike (pandas reads on several threads, the checks after
the read run on one).

Usage: ``python benchmarks/grading_speed.py [--rows 1000000] [--repeat 5] [--keep DIR]``
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

# One OpenBLAS thread, as `mleaudit` itself loads NumPy (audit/cli.py): idle BLAS threads that
# spin on a small machine take CPU from the work being timed.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from grading.grade import score_csv  # noqa: E402
from grading.metrics import native  # noqa: E402

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


def _arrow_read(answers: Path, submission: Path) -> object:
    import pyarrow.csv

    return pyarrow.csv.read_csv(answers), pyarrow.csv.read_csv(submission)


def _load() -> str:
    try:
        return "load average " + " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:  # not available on this platform
        return "load average unknown"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000, help="rows per submission (default 1,000,000)")
    parser.add_argument("--repeat", type=int, default=5, help="runs per timing; the best is kept (default 5)")
    parser.add_argument("--keep", type=Path, help="write the CSVs here and keep them (default: a temporary dir)")
    args = parser.parse_args(argv)
    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory() as tmp:
        folder = args.keep or Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        print(
            f"{args.rows:,} rows per submission; best of {args.repeat} runs; target ratio <= {TARGET_RATIO}; "
            f"{os.cpu_count()} CPUs; pandas {pd.__version__}; compiled kernels "
            f"{'on' if native.available() else 'off (NumPy paths)'}; {_load()}"
        )
        print(f"{'metric':36} {'rows':>9} {'read (s)':>9} {'arrow read':>10} {'grade (s)':>10} {'ratio':>6}  score")
        worst = 0.0
        for name, make in CASES.items():
            answers, ordered, spec = make(args.rows, rng, folder)
            shuffled = _write(
                pd.read_csv(ordered, dtype=str, keep_default_na=False).sample(frac=1.0, random_state=0),
                ordered.with_name(ordered.stem + "_shuffled.csv"),
            )
            for label, submission in (("in order", ordered), ("shuffled", shuffled)):
                read_time = arrow_time = grade_time = float("inf")
                score = float("nan")
                for _ in range(args.repeat):
                    read_time = min(read_time, _timed(lambda: (pd.read_csv(answers), pd.read_csv(submission)))[0])
                    arrow_time = min(arrow_time, _timed(lambda: _arrow_read(answers, submission))[0])
                    elapsed, score = _timed(lambda: score_csv(submission, answers, **spec))
                    grade_time = min(grade_time, elapsed)
                ratio = grade_time / read_time
                worst = max(worst, ratio)
                print(
                    f"{name:36} {label:>9} {read_time:9.3f} {arrow_time:10.3f} {grade_time:10.3f} {ratio:6.2f}  {score:.5f}",
                    flush=True,
                )
        print(f"worst ratio {worst:.2f} ({'within' if worst <= TARGET_RATIO else 'over'} the {TARGET_RATIO} target); {_load()}")
    return 0


def _timed(fn: Callable[[], object]) -> tuple[float, object]:
    start = time.perf_counter()
    value = fn()
    return time.perf_counter() - start, value


if __name__ == "__main__":
    raise SystemExit(main())
