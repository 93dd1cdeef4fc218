"""Grading speed against MLE-bench's own graders, on large competition-shaped files.

For each metric kind the benchmark takes a real competition and writes, in one folder laid out
as prepared data, an answers file in the format MLE-bench's ``prepare.py`` for that competition
writes (its columns, the spelling of its ids and its row order) and an imperfect submission,
once with the rows in the answers' order (as a submission written from the sample submission
has them) and once shuffled:

============  ==============================================  ==================================
kind          competition (MLE-bench grader)                  rows
============  ==============================================  ==================================
accuracy      spaceship-titanic                               ``--rows``
roc-auc       histopathologic-cancer-detection                ``--rows``
log-loss      dog-breed-identification (120 class columns)    ``--rows`` / 10 (121 columns)
rmse          new-york-city-taxi-fare-prediction              ``--rows``
map@12        h-and-m-personalized-fashion-recommendations    ``--rows`` (12 article ids a row)
text          tweet-sentiment-extraction (word Jaccard)       ``--rows``
masks         tgs-salt-identification-challenge (RLE)         ``--rows`` / 15 (101x101 masks)
============  ==============================================  ==================================

The two wide kinds get fewer rows so that every file holds a comparable amount of data (a
log-loss file of ``--rows`` / 10 rows holds 12 times the cells of a two-column file of
``--rows`` rows; MLE-bench's mask grader decodes every mask into a 101x101 array).

The same files are then graded

(a) by MLE-bench's grader for the competition, run in place from ``--mlebench-src`` in the
    virtual environment holding MLE-bench's pinned libraries (``--mlebench-python``), through
    ``scripts/mlebench_grade.py``, whose ``seconds`` per job is the wall time of reading both
    files (MLE-bench's ``read_csv`` and ``load_answers``) and calling the grade function;
(b) by this project: :func:`mleaudit.grading.grade.score_submission` with the competition's spec, the
    path of ``mleaudit grade``: reading both files, checking columns, ids and every value,
    aligning the rows by id, and computing the metric.

Both sides are timed alike: for each kind, one fresh process per side grades the in-order and
the shuffled submission alternately ``--repeat`` times and the best wall time of each is kept.
Starting the interpreter, importing the libraries and loading the competition's grader or spec
happen before and outside the timed part, on both sides. The ratio printed is MLE-bench's time
over ours; the target is a ratio of at least 2 for every kind and order. The scores of both
sides are printed too (MLE-bench's is rounded to five decimals, as its reports are) and a
differing score is flagged.

Our side reads files with pyarrow, which may use several threads; MLE-bench's pandas reader uses
one. The load average is printed before and after: on a shared machine both times grow under
load, not always alike.

When the MLE-bench interpreter or source folder is missing, the benchmark says so and prints
only our times.

Usage: ``python benchmarks/grading_speed.py [--rows 300000] [--repeat 3] [--kinds map@12 ...]
[--keep DIR] [--mlebench-python PATH] [--mlebench-src DIR]``. The defaults of the last two are
``.venv-mlebench/bin/python`` in the repository root and ``../shared/mlebench-src`` next to it,
or the environment variables ``MLEAUDIT_MLEBENCH_PYTHON`` and ``MLEAUDIT_MLEBENCH_SRC``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]

#: Our time must be at most MLE-bench's divided by this.
TARGET_SPEEDUP = 2.0

Frames = tuple[pd.DataFrame, pd.DataFrame]


# ----------------------------------------------------------------------------- file makers


def _hex_ids(rng: np.random.Generator, n: int, digits: int) -> np.ndarray:
    """``n`` distinct random lower-case hex ids of ``digits`` characters (``digits`` even), in random order."""
    found = np.zeros(0, dtype=f"<U{digits}")
    while found.size < n:
        want = n - found.size + 64
        text = rng.bytes(want * digits // 2).hex().encode("ascii")
        fresh = np.frombuffer(text, dtype=f"S{digits}").astype(f"<U{digits}")
        found = pd.unique(np.concatenate([found, fresh]))
    return np.asarray(found[:n])


def _spaceship(n: int, rng: np.random.Generator, competition: Any) -> Frames:
    """spaceship-titanic: MLE-bench's ``private/test.csv`` is the train split's test rows, every column."""
    groups = np.repeat(np.arange(1, n + 1), rng.integers(1, 4, n))[:n]
    member = np.arange(n) - np.searchsorted(groups, groups) + 1
    ids = np.char.add(np.char.add(np.char.zfill(groups.astype(str), 4), "_"), np.char.zfill(member.astype(str), 2))
    ids = ids[rng.permutation(n)]  # train_test_split shuffles the rows
    transported = rng.uniform(size=n) < 0.5
    planets = np.array(["Earth", "Europa", "Mars"], dtype=object)[rng.integers(0, 3, n)]
    destinations = np.array(["TRAPPIST-1e", "55 Cancri e", "PSO J318.5-22"], dtype=object)[rng.integers(0, 3, n)]
    decks, sides = np.array(list("ABCDEFGT"))[rng.integers(0, 8, n)], np.array(["P", "S"])[rng.integers(0, 2, n)]
    cabin = [f"{d}/{c}/{s}" for d, c, s in zip(decks.tolist(), rng.integers(0, 2000, n).tolist(), sides.tolist())]
    names = np.array(["Maham Ofracculy", "Juanna Vines", "Altark Susent", "Solam Susent", "Willy Santantines"], dtype=object)
    answers = pd.DataFrame(
        {
            "PassengerId": ids,
            "HomePlanet": planets,
            "CryoSleep": rng.uniform(size=n) < 0.35,
            "Cabin": cabin,
            "Destination": destinations,
            "Age": rng.integers(0, 80, n).astype(float),
            "VIP": rng.uniform(size=n) < 0.02,
            "RoomService": rng.exponential(200, n).round(0),
            "FoodCourt": rng.exponential(400, n).round(0),
            "ShoppingMall": rng.exponential(150, n).round(0),
            "Spa": rng.exponential(300, n).round(0),
            "VRDeck": rng.exponential(300, n).round(0),
            "Name": names[rng.integers(0, len(names), n)],
            "Transported": transported,
        }
    )
    for column in ("HomePlanet", "CryoSleep", "Cabin", "Destination", "Age", "VIP", "RoomService", "Name"):
        answers[column] = answers[column].astype(object).where(rng.uniform(size=n) >= 0.02, None)  # the real file's gaps
    guess = np.where(rng.uniform(size=n) < 0.8, transported, ~transported)
    return answers, pd.DataFrame({"PassengerId": ids, "Transported": guess})


def _histopathologic(n: int, rng: np.random.Generator, competition: Any) -> Frames:
    """histopathologic-cancer-detection: ``private/answers.csv`` is ``id,label`` (40-hex image ids)."""
    ids = _hex_ids(rng, n, 40)
    label = (rng.uniform(size=n) < 0.4).astype(np.int64)
    score = np.clip(0.55 * label + 0.45 * rng.uniform(size=n) + rng.normal(0, 0.1, n), 0, 1).round(6)
    return pd.DataFrame({"id": ids, "label": label}), pd.DataFrame({"id": ids, "label": score})


def _dog_breed(n: int, rng: np.random.Generator, competition: Any) -> Frames:
    """dog-breed-identification: ``private/test.csv`` is ``id`` and one 0/1 column per breed."""
    classes = list(competition.target_columns)
    k = len(classes)
    ids = _hex_ids(rng, n, 32)
    labels = rng.integers(0, k, n)
    answers = pd.DataFrame(np.eye(k, dtype=np.int64)[labels], columns=classes)
    answers.insert(0, "id", ids)
    logits = rng.normal(0, 1, (n, k))
    logits[np.arange(n), labels] += rng.uniform(0, 6, n)
    probs = np.exp(logits)
    probs /= probs.sum(axis=1, keepdims=True)
    probs = probs.round(6)
    # Rounding leaves each row's sum off by up to 6e-5; MLE-bench checks it within 1e-6: the
    # largest probability takes up the difference.
    top = probs.argmax(axis=1)
    probs[np.arange(n), top] += 1.0 - probs.sum(axis=1)
    submission = pd.DataFrame(probs, columns=classes)
    submission.insert(0, "id", ids)
    return answers, submission


def _taxi(n: int, rng: np.random.Generator, competition: Any) -> Frames:
    """new-york-city-taxi-fare-prediction: ``private/test.csv`` has all 8 columns of the train file."""
    start = np.datetime64("2009-01-01T00:00:00", "s")
    seconds = rng.integers(0, 6 * 365 * 86400, n + n // 20 + 16)
    times = np.char.replace(np.datetime_as_string(start + seconds, unit="s"), "T", " ")
    keys = pd.unique(np.char.add(np.char.add(times, ".000000"), rng.integers(1, 10, seconds.size).astype(str)))[:n]
    times = np.array([key[:19] for key in keys])
    fare = np.round(np.exp(rng.normal(2.2, 0.6, n)), 2)
    answers = pd.DataFrame(
        {
            "key": keys,
            "fare_amount": fare,
            "pickup_datetime": np.char.add(times, " UTC"),
            "pickup_longitude": rng.normal(-73.97, 0.03, n).round(6),
            "pickup_latitude": rng.normal(40.75, 0.03, n).round(6),
            "dropoff_longitude": rng.normal(-73.97, 0.03, n).round(6),
            "dropoff_latitude": rng.normal(40.75, 0.03, n).round(6),
            "passenger_count": rng.integers(1, 7, n),
        }
    )
    prediction = np.maximum(fare + rng.normal(0, 3, n), 2.5).round(4)
    return answers, pd.DataFrame({"key": keys, "fare_amount": prediction})


def _h_and_m(n: int, rng: np.random.Generator, competition: Any) -> Frames:
    """h-and-m-personalized-fashion-recommendations: ``private/answers.csv`` is ``customer_id,prediction``.

    One row per customer who bought in the last week (64-hex ids, sorted, as ``groupby`` leaves
    them), the article ids of every purchase (repeats included) as the integers pandas read
    (``"568601043"``). The submission predicts 12 articles a row: popular ones, with some of the
    customer's own purchases at random places.
    """
    ids = np.sort(_hex_ids(rng, n, 64))
    articles = (rng.choice(np.arange(108775015, 959461001, 1013), 105_000, replace=False)).astype(str)
    popularity = 1.0 / np.arange(1, articles.size + 1) ** 0.9
    popularity /= popularity.sum()
    bought = rng.geometric(0.3, n)  # purchases per customer: 1, 2, ... (mean 3.3)
    owned = articles[rng.choice(articles.size, bought.sum(), p=popularity)]
    starts = np.concatenate([[0], np.cumsum(bought)[:-1]])
    again = np.flatnonzero(rng.uniform(size=owned.size) < 0.1)  # the article before, bought again
    again = again[again > 0]
    owned[again] = owned[again - 1]
    truth = [" ".join(owned[a : a + b]) for a, b in zip(starts.tolist(), bought.tolist())]
    picks = articles[rng.choice(3_000, (n, 12), p=popularity[:3_000] / popularity[:3_000].sum())]
    hit_rows = np.flatnonzero(rng.uniform(size=n) < 0.3)
    places = rng.integers(0, 12, hit_rows.size)
    picks[hit_rows, places] = owned[starts[hit_rows] + rng.integers(0, bought[hit_rows])]
    predicted = [" ".join(row) for row in picks.tolist()]
    return pd.DataFrame({"customer_id": ids, "prediction": truth}), pd.DataFrame({"customer_id": ids, "prediction": predicted})


_COMMON = (
    "i im so the a to my you it is and in for of me on that this just day have but be not was good love happy sad "
    "miss work today going now get got can its what too well thanks lol hope really know like want back will time "
    "one more new night see home last morning great sorry bad feel tired fun sleep still think school oh awesome "
    "nice hate ugh yay haha wow"
).split()
_UNUSUAL = ["caf\u00e9", "na\u00efve", "\u00fcber", "\U0001f600", "\u2764", "don\u2019t", "\u00ef\u00bf\u00bd", "***", "http://t.co/x1"]


def _tweet_vocabulary(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Words and their frequencies: common words, 30,000 invented ones (Zipf), their capitalised,
    upper-case and punctuated forms, and a few non-ASCII and odd tokens."""
    invented = ["".join(rng.choice(list("abcdefghijklmnopqrstuvwxyz"), int(n))) for n in rng.integers(3, 10, 30_000)]
    base = np.array(_COMMON + invented, dtype=object)
    weight = 1.0 / np.arange(1, base.size + 1) ** 1.05
    forms = [(base, 0.80), (np.array([w.capitalize() for w in base], dtype=object), 0.10), (np.array([w.upper() for w in base], dtype=object), 0.02)]
    forms += [(base + mark, 0.02) for mark in ("!", ",", ".", "...")]
    words = np.concatenate([form for form, _ in forms] + [np.array(_UNUSUAL, dtype=object)])
    freq = np.concatenate([weight / weight.sum() * share for _, share in forms] + [np.full(len(_UNUSUAL), 0.01 / len(_UNUSUAL))])
    return words, freq / freq.sum()


def _tweets(n: int, rng: np.random.Generator, competition: Any) -> Frames:
    """tweet-sentiment-extraction: ``private/test.csv`` is ``textID,text,selected_text,sentiment``.

    Tweets of 3 to 30 words from a Zipf vocabulary of some 30,000 words in several spellings,
    some with a leading space or a double space (as Kaggle's tweets have); the selected text is
    a span of them, the whole tweet for neutral ones.
    """
    ids = _hex_ids(rng, n, 10)
    words, freq = _tweet_vocabulary(rng)
    lengths = rng.integers(3, 31, n)
    tokens = words[rng.choice(words.size, int(lengths.sum()), p=freq)].tolist()
    sentiment = np.array(["neutral", "positive", "negative"], dtype=object)[rng.integers(0, 3, n)]
    first = rng.integers(0, lengths)
    size = np.minimum(rng.integers(1, 6, n), lengths - first)
    whole = sentiment == "neutral"
    first[whole], size[whole] = 0, lengths[whole]
    # The prediction moves each end of the span by up to a word, or takes the whole text.
    p_first = np.clip(first + rng.integers(-1, 2, n), 0, lengths - 1)
    p_stop = np.clip(first + size + rng.integers(-1, 2, n), p_first + 1, lengths)
    everything = rng.uniform(size=n) < 0.15
    p_first[everything], p_stop[everything] = 0, lengths[everything]
    lead = np.where(rng.uniform(size=n) < 0.1, " ", "").tolist()
    joint = np.where(rng.uniform(size=n) < 0.05, "  ", " ").tolist()
    text, selected, predicted = [], [], []
    at = 0
    for length, a, s, pa, ps, before, sep in zip(lengths.tolist(), first.tolist(), size.tolist(), p_first.tolist(), p_stop.tolist(), lead, joint):
        row = tokens[at : at + length]
        at += length
        text.append(before + sep.join(row))
        selected.append(sep.join(row[a : a + s]))
        predicted.append(sep.join(row[pa:ps]))
    answers = pd.DataFrame({"textID": ids, "text": text, "selected_text": selected, "sentiment": sentiment})
    return answers, pd.DataFrame({"textID": ids, "selected_text": predicted})


_SIDE = 101  # tgs masks are 101 x 101, run-length encoded column by column, 1-based


def _blob_rle(rng: np.random.Generator, left: int, width: int, top: np.ndarray, depth: np.ndarray) -> str:
    """RLE of a blob: in each of ``width`` columns from ``left``, ``depth`` pixels from row ``top``."""
    starts = (left + np.arange(width)) * _SIDE + top + 1
    return " ".join(f"{s} {d}" for s, d in zip(starts.tolist(), depth.tolist()) if d > 0)


def _tgs(n: int, rng: np.random.Generator, competition: Any) -> Frames:
    """tgs-salt-identification-challenge: ``private/test.csv`` is ``id,rle_mask``, sorted by id, empty for no salt."""
    ids = np.sort(_hex_ids(rng, n, 10))
    truth, predicted = [], []
    for has_salt, guess_salt in zip((rng.uniform(size=n) < 0.6).tolist(), (rng.uniform(size=n) < 0.9).tolist()):
        if not has_salt:
            truth.append("")
            predicted.append("" if guess_salt else _blob_rle(rng, 40, 5, np.full(5, 90), np.full(5, 11)))
            continue
        left = int(rng.integers(0, 80))
        width = int(rng.integers(10, _SIDE - left + 1))
        top = np.clip(np.cumsum(rng.integers(-3, 4, width)) + int(rng.integers(0, 60)), 0, _SIDE - 1)
        depth = np.minimum(rng.integers(20, 60) + np.cumsum(rng.integers(-2, 3, width)), _SIDE - top).clip(0)
        truth.append(_blob_rle(rng, left, width, top, depth))
        if not guess_salt:
            predicted.append("")
            continue
        p_top = np.clip(top + rng.integers(-2, 3, width), 0, _SIDE - 1)
        p_depth = np.minimum(depth + rng.integers(-3, 4, width), _SIDE - p_top).clip(0)
        predicted.append(_blob_rle(rng, left, width, p_top, p_depth))
    return pd.DataFrame({"id": ids, "rle_mask": truth}), pd.DataFrame({"id": ids, "rle_mask": predicted})


@dataclass(frozen=True)
class Kind:
    """A metric kind: the competition that stands for it, how to make its files, and their rows per ``--rows``."""

    name: str
    competition: str
    make: Callable[[int, np.random.Generator, Any], Frames]
    row_share: float = 1.0


KINDS = [
    Kind("accuracy", "spaceship-titanic", _spaceship),
    Kind("roc-auc", "histopathologic-cancer-detection", _histopathologic),
    Kind("log-loss", "dog-breed-identification", _dog_breed, 0.1),
    Kind("rmse", "new-york-city-taxi-fare-prediction", _taxi),
    Kind("map@12", "h-and-m-personalized-fashion-recommendations", _h_and_m),
    Kind("text", "tweet-sentiment-extraction", _tweets),
    Kind("masks", "tgs-salt-identification-challenge", _tgs, 1 / 15),
]


def _write(frame: pd.DataFrame, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    frame.to_csv(path, index=False, lineterminator="\n")
    return path


def make_files(kind: Kind, rows: int, folder: Path, seed: int) -> dict[str, Path]:
    """Write a kind's answers (where its spec expects them under ``folder``) and both submissions.

    Returns
    -------
    dict
        ``answers``, ``in order`` and ``shuffled``: the three files' paths.
    """
    from mleaudit.grading import CompetitionRegistry, find_competitions_root

    spec = CompetitionRegistry(find_competitions_root(), folder).get(kind.competition)
    rng = np.random.default_rng(seed)
    answers, submission = kind.make(rows, rng, spec)
    shuffled = submission.iloc[rng.permutation(len(submission))]
    return {
        "answers": _write(answers, spec.answers_path(folder)),
        "in order": _write(submission, folder / "submissions" / f"{kind.competition}.csv"),
        "shuffled": _write(shuffled, folder / "submissions" / f"{kind.competition}-shuffled.csv"),
    }


# ----------------------------------------------------------------------------- timing


def _jobs(competition: str, files: dict[str, Path], repeat: int) -> list[dict[str, str]]:
    """Both submissions, alternately, ``repeat`` times each."""
    return [
        {"competition": competition, "submission": str(files[order]), "answers": str(files["answers"])}
        for _ in range(repeat)
        for order in ("in order", "shuffled")
    ]


def _best(lines: list[dict[str, Any]], files: dict[str, Path]) -> dict[str, dict[str, Any]]:
    """Per order, the best time and the score of the reports of one side."""
    best: dict[str, dict[str, Any]] = {}
    for order in ("in order", "shuffled"):
        runs = [line for line in lines if line["submission"] == str(files[order])]
        if runs:
            fastest = min(runs, key=lambda line: line["seconds"])
            best[order] = {"seconds": fastest["seconds"], "score": fastest.get("score"), "error": fastest.get("error")}
    return best


def _run_side(command: list[str], jobs: list[dict[str, str]], folder: Path, env: dict[str, str]) -> list[dict[str, Any]]:
    jobs_file = folder / "jobs.json"
    jobs_file.write_text(json.dumps(jobs))
    done = subprocess.run([*command, "--jobs", str(jobs_file)], capture_output=True, text=True, env=env, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command[:2])} failed ({done.returncode}): {done.stderr[-2000:]}")
    return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]


def grade_ours(jobs_path: Path) -> int:
    """Grade each job with this project, printing one JSON report a line (the ``--ours`` side).

    Each report holds ``competition``, ``submission``, ``score`` (unrounded, or ``None``),
    ``error`` and ``seconds``: the wall time of :func:`mleaudit.grading.grade.score_submission`. The
    answers' folder is the prepared-data folder: each job's answers sit where the competition's
    spec expects them under it.
    """
    import time

    from mleaudit.grading import CompetitionRegistry, find_competitions_root
    from mleaudit.grading.errors import InvalidSubmission
    from mleaudit.grading.grade import score_submission

    jobs = json.loads(jobs_path.read_text())
    registry = CompetitionRegistry(find_competitions_root(), jobs_path.parent)
    specs = {job["competition"]: registry.get(job["competition"]) for job in jobs}
    for job in jobs:
        spec = specs[job["competition"]]
        started = time.perf_counter()
        score = error = None
        try:
            score = score_submission(job["submission"], spec, jobs_path.parent)
        except InvalidSubmission as exc:
            error = str(exc)
        seconds = time.perf_counter() - started
        report = {"competition": spec.id, "submission": job["submission"], "score": score, "error": error, "seconds": seconds}
        print(json.dumps(report), flush=True)
    return 0


def _load() -> str:
    try:
        return "load average " + " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:  # not available on this platform
        return "load average unknown"


def _same_score(theirs: Any, ours: Any) -> str:
    if theirs is None or ours is None:
        return "-"
    if isinstance(theirs, str) or isinstance(ours, str):
        return "differ"
    return "same" if round(float(ours), 5) == float(theirs) else "DIFFER"


def _score_text(value: Any) -> str:
    if value is None:
        return "none"
    return value if isinstance(value, str) else f"{float(value):.5f}"


def _mlebench_paths(args: argparse.Namespace) -> tuple[Path, Path, str | None]:
    python = Path(args.mlebench_python or os.environ.get("MLEAUDIT_MLEBENCH_PYTHON") or ROOT / ".venv-mlebench" / "bin" / "python")
    src = Path(args.mlebench_src or os.environ.get("MLEAUDIT_MLEBENCH_SRC") or ROOT.parent / "shared" / "mlebench-src")
    if not python.exists():
        return python, src, f"MLE-bench's interpreter {python} is missing"
    if not (src / "mlebench" / "grade_helpers.py").is_file():
        return python, src, f"MLE-bench's source {src} is missing (no mlebench/grade_helpers.py)"
    return python, src, None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=300_000, help="rows per submission (default 300,000; fewer for wide kinds)")
    parser.add_argument("--repeat", type=int, default=3, help="runs per file and side; the best is kept (default 3)")
    parser.add_argument("--kinds", nargs="+", choices=[kind.name for kind in KINDS], help="kinds to run (default all)")
    parser.add_argument("--keep", type=Path, help="write the files here and keep them (default: a temporary folder)")
    parser.add_argument("--seed", type=int, default=0, help="random seed of the files (default 0)")
    parser.add_argument("--mlebench-python", help="interpreter of the MLE-bench environment")
    parser.add_argument("--mlebench-src", help="folder holding MLE-bench's mlebench package")
    parser.add_argument("--ours", action="store_true", help=argparse.SUPPRESS)  # our side's timing process
    parser.add_argument("--jobs", type=Path, help=argparse.SUPPRESS)  # its jobs
    args = parser.parse_args(argv)
    if args.ours:
        return grade_ours(args.jobs)
    python, src, missing = _mlebench_paths(args)
    kinds = [kind for kind in KINDS if not args.kinds or kind.name in args.kinds]
    ours_env = {**os.environ, "OPENBLAS_NUM_THREADS": "1"}  # as `mleaudit` loads NumPy (audit/cli.py)
    print(
        f"{args.rows:,} rows per submission (fewer for wide kinds); best of {args.repeat}; target: MLE-bench / ours "
        f">= {TARGET_SPEEDUP:g}; {os.cpu_count()} CPUs; pandas {pd.__version__}, numpy {np.__version__}; {_load()}"
    )
    if missing:
        print(f"note: {missing}: only our times are measured")
    print(
        f"{'kind':9} {'competition':45} {'rows':>8} {'order':>9} {'MLE-bench s':>11} {'ours s':>8} {'ratio':>6} "
        f"{'target':>6}  scores (MLE-bench / ours)"
    )
    worst: tuple[float, str] | None = None
    with tempfile.TemporaryDirectory(prefix="grading-speed-") as tmp:
        folder = (args.keep or Path(tmp)).resolve()
        for kind in kinds:
            rows = max(1, int(round(args.rows * kind.row_share)))
            files = make_files(kind, rows, folder, args.seed)
            jobs = _jobs(kind.competition, files, args.repeat)
            theirs: dict[str, dict[str, Any]] = {}
            if not missing:
                lines = _run_side([str(python), str(ROOT / "scripts" / "mlebench_grade.py"), "--mlebench-src", str(src)], jobs, folder, dict(os.environ))
                theirs = _best(lines, files)
            ours = _best(_run_side([sys.executable, str(Path(__file__).resolve()), "--ours"], jobs, folder, ours_env), files)
            for order in ("in order", "shuffled"):
                mine = ours[order]
                other = theirs.get(order)
                ratio = other["seconds"] / mine["seconds"] if other else math.nan
                met = "-" if not other else ("met" if ratio >= TARGET_SPEEDUP else "MISSED")
                if other and (worst is None or ratio < worst[0]):
                    worst = (ratio, f"{kind.name}, {order}")
                scores = f"{_score_text(other['score']) if other else '-'} / {_score_text(mine['score'])}"
                if other:
                    scores += f" ({_same_score(other['score'], mine['score'])})"
                for side, report in (("MLE-bench", other), ("ours", mine)):
                    if report and report.get("error"):
                        scores += f"; {side}: {str(report['error'])[:120]}"
                print(
                    f"{kind.name:9} {kind.competition:45} {rows:8,} {order:>9} "
                    f"{other['seconds'] if other else math.nan:11.3f} {mine['seconds']:8.3f} {ratio:6.2f} {met:>6}  {scores}",
                    flush=True,
                )
    if worst is not None:
        verdict = "met" if worst[0] >= TARGET_SPEEDUP else "not met"
        print(f"target (>= {TARGET_SPEEDUP:g}x faster than MLE-bench on every kind): {verdict}; lowest ratio {worst[0]:.2f} ({worst[1]}); {_load()}")
    else:
        print(f"no MLE-bench times, no ratio; {_load()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
