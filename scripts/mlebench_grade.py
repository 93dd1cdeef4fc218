"""Grade submission files with MLE-bench's own graders, for differential tests and benchmarks.

Runs inside a virtual environment that holds the libraries MLE-bench pins for its graders
(``environment/requirements.txt`` of MLE-bench: pandas 2.2.2, numpy 1.26.4, scikit-learn 1.5.1,
scipy 1.14.1, plus Levenshtein, pycocotools, pyquaternion and shapely for some graders), never in
mleaudit's own. MLE-bench's source is used in place from ``--mlebench-src`` (its ``mlebench``
package is put first on ``sys.path``); nothing of it is copied.

Each job is graded the way ``mlebench.grade.grade_csv`` does: the submission counts only when it
is a file ending in ``.csv``; it is read with ``mlebench.utils.read_csv`` (``float_precision=
"round_trip"``), the answers with ``mlebench.utils.load_answers`` (CSV or JSONL), and the
competition's ``grade_fn`` (from its ``config.yaml``) is called through
``mlebench.grade_helpers.Grader``, which turns ``InvalidSubmissionError`` and any other exception
into "no score" and rounds a score to five decimals.

Input (``--jobs FILE`` or standard input): a JSON list of jobs
``{"competition": ID, "submission": PATH, "answers": PATH}``. Output (standard output): one JSON
object per job and line, in job order::

    {"competition": ID, "submission": PATH, "valid": bool, "score": float | null,
     "raw_score": float | null, "error": str | null, "seconds": float}

``score`` is MLE-bench's reported (rounded) score, ``raw_score`` the grade function's value before
rounding, ``error`` the exception's class and message when the grader gave none, ``seconds`` the
wall time of reading both files and grading (the answers are read once per job, as ``grade_csv``
does). A non-finite score is written as the strings ``"nan"``, ``"inf"`` or ``"-inf"``.

Usage::

    .venv-mlebench/bin/python scripts/mlebench_grade.py --mlebench-src ../shared/mlebench-src --jobs jobs.json
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import math
import os
import sys
import time
import warnings
from pathlib import Path
from typing import Any


def _number(value: Any) -> Any:
    if value is None:
        return None
    value = float(value)
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return value


def _grade_one(job: dict[str, Any], graders: dict[str, Any]) -> dict[str, Any]:
    import yaml
    from mlebench.grade_helpers import Grader, InvalidSubmissionError
    from mlebench.utils import get_module_dir, load_answers, read_csv

    competition = job["competition"]
    if competition not in graders:
        config_path = get_module_dir() / "competitions" / competition / "config.yaml"
        config = yaml.safe_load(config_path.read_text())
        graders[competition] = Grader.from_dict(config["grader"])
    grader = graders[competition]
    submission = Path(job["submission"])
    result: dict[str, Any] = {"competition": competition, "submission": str(submission)}
    started = time.perf_counter()
    raw = error = None
    if submission.is_file() and submission.suffix.lower() == ".csv":
        submission_df = read_csv(submission)
        answers = load_answers(Path(job["answers"]))
        try:
            raw = grader.grade_fn(submission_df, answers)
        except InvalidSubmissionError as exc:
            error = f"InvalidSubmissionError: {exc}"
        except Exception as exc:  # noqa: BLE001 - Grader.__call__ turns every exception into "no score"
            error = f"{type(exc).__name__}: {exc}"
    else:
        error = "not a .csv file"
    result["seconds"] = time.perf_counter() - started
    score = None if raw is None else round(raw, 5)  # Grader.__call__'s rounding
    result.update(valid=score is not None, score=_number(score), raw_score=_number(raw), error=error)
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mlebench-src", required=True, type=Path, help="folder holding MLE-bench's mlebench package")
    parser.add_argument("--jobs", type=Path, help="JSON list of jobs (default: standard input)")
    args = parser.parse_args(argv)
    src = args.mlebench_src.resolve()
    if not (src / "mlebench" / "grade_helpers.py").is_file():
        print(f"error: {src} holds no mlebench/grade_helpers.py", file=sys.stderr)
        return 2
    sys.dont_write_bytecode = True  # MLE-bench's folder is read-only material: leave no __pycache__ in it
    sys.path.insert(0, str(src))
    logging.disable(logging.CRITICAL)
    warnings.simplefilter("ignore")
    os.environ.setdefault("TQDM_DISABLE", "1")
    jobs = json.loads(args.jobs.read_text() if args.jobs else sys.stdin.read())
    graders: dict[str, Any] = {}
    results = sys.stdout
    for job in jobs:
        with contextlib.redirect_stdout(sys.stderr):  # some graders print: keep the results' stream clean
            result = _grade_one(job, graders)
        print(json.dumps(result), file=results, flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
