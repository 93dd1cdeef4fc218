"""Build reference leaderboards for the competitions made from scikit-learn's bundled data.

``sklearn-digits`` and ``sklearn-diabetes`` never ran on Kaggle, so they have no leaderboard
of real teams. This script stands one in: it prepares each competition's split, trains a
fixed grid of documented baseline configurations (scikit-learn models, hyper-parameters and
seeds, from chance-level dummies to tuned ensembles; about a hundred per competition so the
100-249-team medal tier applies), predicts the public test set, grades every prediction with
the competition's own grader (as the graded score, rounded to 5 decimals), and writes ``competitions/<id>/leaderboard.csv`` in MLE-bench's
columns (``scoreNullable,teamId,hasTeamName,submissionDate,score,hasScore``), best first.

``teamId`` is the baseline's 1-based position in the grid below, so ``--list`` maps every
leaderboard row back to its configuration. Everything is seeded and single-threaded, and the
submission date is a fixed stamp, so reruns give the same file.

Usage::

    python3 scripts/make_reference_leaderboard.py                 # rewrite both leaderboards
    python3 scripts/make_reference_leaderboard.py -c sklearn-digits --list
    python3 scripts/make_reference_leaderboard.py --check         # exit 1 if a file would change
"""

from __future__ import annotations

import argparse
import csv
import io
import sys
import tempfile
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

REPO_ROOT = Path(__file__).resolve().parents[1]

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from sklearn.decomposition import PCA  # noqa: E402
from sklearn.discriminant_analysis import LinearDiscriminantAnalysis, QuadraticDiscriminantAnalysis  # noqa: E402
from sklearn.dummy import DummyClassifier, DummyRegressor  # noqa: E402
from sklearn.ensemble import (  # noqa: E402
    ExtraTreesClassifier,
    GradientBoostingRegressor,
    HistGradientBoostingClassifier,
    HistGradientBoostingRegressor,
    RandomForestClassifier,
    RandomForestRegressor,
)
from sklearn.linear_model import (  # noqa: E402
    ElasticNet,
    Lasso,
    LinearRegression,
    LogisticRegression,
    Perceptron,
    Ridge,
    RidgeClassifier,
)
from sklearn.naive_bayes import GaussianNB  # noqa: E402
from sklearn.neighbors import KNeighborsClassifier, KNeighborsRegressor  # noqa: E402
from sklearn.pipeline import make_pipeline  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402
from sklearn.svm import SVC, SVR  # noqa: E402
from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor  # noqa: E402

from mleaudit.grading import CompetitionRegistry, find_competitions_root, prepare_competition  # noqa: E402
from mleaudit.grading.grade import SCORE_DECIMALS, score_submission  # noqa: E402
from mleaudit.grading.leaderboard import LEADERBOARD_COLUMNS  # noqa: E402

#: Fixed submission date of every reference entry (the leaderboard is not a time series).
SUBMISSION_DATE = "2025-01-01 00:00:00"


@dataclass(frozen=True, slots=True, kw_only=True)
class Baseline:
    """One leaderboard entry: a description and a factory for an unfitted estimator."""

    label: str
    make: Callable[[], object]
    features: tuple[str, ...] | None = None  # a subset of feature columns, or all


def _scaled(estimator: object) -> object:
    return make_pipeline(StandardScaler(), estimator)


def digits_baselines() -> list[Baseline]:
    """The sklearn-digits grid (classification, accuracy)."""
    grid: list[Baseline] = []
    add = grid.append
    for strategy in ("most_frequent", "prior"):
        add(Baseline(label=f"DummyClassifier(strategy={strategy})", make=lambda s=strategy: DummyClassifier(strategy=s)))
    for strategy in ("uniform", "stratified"):
        for seed in range(5):
            add(
                Baseline(
                    label=f"DummyClassifier(strategy={strategy}, random_state={seed})",
                    make=lambda s=strategy, r=seed: DummyClassifier(strategy=s, random_state=r),
                )
            )
    for smoothing in (1e-9, 1e-7, 1e-5, 1e-3, 1e-2, 1e-1):
        add(Baseline(label=f"GaussianNB(var_smoothing={smoothing:g})", make=lambda v=smoothing: GaussianNB(var_smoothing=v)))
    for k in (1, 2, 3, 5, 7, 9, 11, 15, 21, 31, 51, 101):
        add(Baseline(label=f"KNeighborsClassifier(n_neighbors={k})", make=lambda k=k: KNeighborsClassifier(n_neighbors=k)))
    for c in (1e-4, 1e-3, 1e-2, 0.1, 1.0, 10.0):
        add(
            Baseline(
                label=f"StandardScaler + LogisticRegression(C={c:g})",
                make=lambda c=c: _scaled(LogisticRegression(C=c, max_iter=5000)),
            )
        )
    for depth in (1, 2, 3, 4, 5, 6, 8, 10, None):
        for seed in (0, 1):
            add(
                Baseline(
                    label=f"DecisionTreeClassifier(max_depth={depth}, random_state={seed})",
                    make=lambda d=depth, r=seed: DecisionTreeClassifier(max_depth=d, random_state=r),
                )
            )
    for n in (5, 10, 25, 50, 100):
        for depth in (2, 4, None):
            add(
                Baseline(
                    label=f"RandomForestClassifier(n_estimators={n}, max_depth={depth}, random_state=0)",
                    make=lambda n=n, d=depth: RandomForestClassifier(n_estimators=n, max_depth=d, random_state=0),
                )
            )
    for n in (10, 50, 100):
        for depth in (4, None):
            add(
                Baseline(
                    label=f"ExtraTreesClassifier(n_estimators={n}, max_depth={depth}, random_state=0)",
                    make=lambda n=n, d=depth: ExtraTreesClassifier(n_estimators=n, max_depth=d, random_state=0),
                )
            )
    for c in (0.1, 1.0, 10.0):
        for gamma in (1e-4, 1e-3, "scale"):
            add(Baseline(label=f"SVC(C={c:g}, gamma={gamma})", make=lambda c=c, g=gamma: SVC(C=c, gamma=g)))
    for seed in range(5):
        add(Baseline(label=f"Perceptron(random_state={seed})", make=lambda r=seed: Perceptron(random_state=r)))
    for n in (2, 4, 8, 16, 32):
        add(
            Baseline(
                label=f"StandardScaler + PCA(n_components={n}) + LogisticRegression",
                make=lambda n=n: make_pipeline(
                    StandardScaler(), PCA(n_components=n, random_state=0), LogisticRegression(max_iter=5000)
                ),
            )
        )
    for iters in (10, 25, 50, 100):
        add(
            Baseline(
                label=f"HistGradientBoostingClassifier(max_iter={iters}, random_state=0)",
                make=lambda i=iters: HistGradientBoostingClassifier(max_iter=i, random_state=0),
            )
        )
    for alpha in (0.1, 1.0, 10.0, 100.0):
        add(Baseline(label=f"RidgeClassifier(alpha={alpha:g})", make=lambda a=alpha: RidgeClassifier(alpha=a)))
    add(Baseline(label="LinearDiscriminantAnalysis()", make=LinearDiscriminantAnalysis))
    for reg in (0.01, 0.1, 0.5):
        add(
            Baseline(
                label=f"QuadraticDiscriminantAnalysis(reg_param={reg:g})",
                make=lambda r=reg: QuadraticDiscriminantAnalysis(reg_param=r),
            )
        )
    return grid


def diabetes_baselines() -> list[Baseline]:
    """The sklearn-diabetes grid (regression, RMSE)."""
    grid: list[Baseline] = []
    add = grid.append
    add(Baseline(label="DummyRegressor(strategy=mean)", make=lambda: DummyRegressor(strategy="mean")))
    add(Baseline(label="DummyRegressor(strategy=median)", make=lambda: DummyRegressor(strategy="median")))
    for q in (0.25, 0.75):
        add(
            Baseline(
                label=f"DummyRegressor(strategy=quantile, quantile={q})",
                make=lambda q=q: DummyRegressor(strategy="quantile", quantile=q),
            )
        )
    add(Baseline(label="LinearRegression()", make=LinearRegression))
    for alpha in (0.01, 0.1, 1.0, 10.0, 100.0, 1000.0):
        add(Baseline(label=f"StandardScaler + Ridge(alpha={alpha:g})", make=lambda a=alpha: _scaled(Ridge(alpha=a))))
    for alpha in (0.01, 0.1, 1.0, 10.0):
        add(
            Baseline(
                label=f"StandardScaler + Lasso(alpha={alpha:g})", make=lambda a=alpha: _scaled(Lasso(alpha=a, max_iter=10000))
            )
        )
    for alpha in (0.1, 1.0):
        for ratio in (0.2, 0.8):
            add(
                Baseline(
                    label=f"StandardScaler + ElasticNet(alpha={alpha:g}, l1_ratio={ratio:g})",
                    make=lambda a=alpha, r=ratio: _scaled(ElasticNet(alpha=a, l1_ratio=r, max_iter=10000)),
                )
            )
    for k in (1, 2, 3, 5, 7, 10, 15, 20, 30, 50):
        for weights in ("uniform", "distance"):
            add(
                Baseline(
                    label=f"StandardScaler + KNeighborsRegressor(n_neighbors={k}, weights={weights})",
                    make=lambda k=k, w=weights: _scaled(KNeighborsRegressor(n_neighbors=k, weights=w)),
                )
            )
    for depth in (1, 2, 3, 4, 5, 6, 7, 8, None):
        for seed in (0, 1, 2):
            add(
                Baseline(
                    label=f"DecisionTreeRegressor(max_depth={depth}, random_state={seed})",
                    make=lambda d=depth, r=seed: DecisionTreeRegressor(max_depth=d, random_state=r),
                )
            )
    for n in (10, 50, 100):
        for depth in (2, 4, None):
            for seed in (0, 1):
                add(
                    Baseline(
                        label=f"RandomForestRegressor(n_estimators={n}, max_depth={depth}, random_state={seed})",
                        make=lambda n=n, d=depth, r=seed: RandomForestRegressor(n_estimators=n, max_depth=d, random_state=r),
                    )
                )
    for n in (25, 50, 100, 200):
        for rate in (0.05, 0.1):
            add(
                Baseline(
                    label=f"GradientBoostingRegressor(n_estimators={n}, learning_rate={rate:g}, random_state=0)",
                    make=lambda n=n, lr=rate: GradientBoostingRegressor(n_estimators=n, learning_rate=lr, random_state=0),
                )
            )
    for c in (1.0, 10.0, 100.0, 1000.0):
        add(Baseline(label=f"StandardScaler + SVR(C={c:g})", make=lambda c=c: _scaled(SVR(C=c))))
    for iters in (25, 50, 100):
        add(
            Baseline(
                label=f"HistGradientBoostingRegressor(max_iter={iters}, random_state=0)",
                make=lambda i=iters: HistGradientBoostingRegressor(max_iter=i, random_state=0),
            )
        )
    for feature in ("bmi", "s5", "bp"):
        add(Baseline(label=f"LinearRegression() on {feature} only", make=LinearRegression, features=(feature,)))
    return grid


#: Baseline grids by competition id.
GRIDS: dict[str, Callable[[], list[Baseline]]] = {
    "sklearn-digits": digits_baselines,
    "sklearn-diabetes": diabetes_baselines,
}


def score_baselines(registry: CompetitionRegistry, competition_id: str, work: Path) -> list[tuple[int, str, float]]:
    """Train every baseline of a competition and grade it.

    Returns
    -------
    list of (team_id, label, score)
        In grid order; scores rounded as the grader rounds them.
    """
    spec = registry.get(competition_id)
    prepare_competition(spec, registry)
    public = registry.public_dir(competition_id)
    train = pd.read_csv(public / "train.csv")
    test = pd.read_csv(public / "test.csv")
    target = spec.target_columns[0]
    all_features = [c for c in test.columns if c != spec.id_column]
    results: list[tuple[int, str, float]] = []
    for team_id, baseline in enumerate(GRIDS[competition_id](), start=1):
        features = list(baseline.features or all_features)
        model = baseline.make()
        with warnings.catch_warnings():
            # Weak baselines (tiny C, few iterations) are meant to be weak; their warnings are expected.
            warnings.simplefilter("ignore")
            model.fit(train[features].to_numpy(), train[target].to_numpy())
            predictions = model.predict(test[features].to_numpy())
        submission = pd.DataFrame({spec.id_column: test[spec.id_column], target: np.asarray(predictions)})
        path = work / f"{competition_id}-{team_id}.csv"
        submission.to_csv(path, index=False)
        score = round(score_submission(path, spec, registry.data_dir), SCORE_DECIMALS)
        results.append((team_id, baseline.label, score))
    return results


def render_leaderboard(results: list[tuple[int, str, float]], higher_is_better: bool) -> str:
    """MLE-bench leaderboard CSV text, best first (ties by team id)."""
    ordered = sorted(results, key=lambda r: ((-r[2] if higher_is_better else r[2]), r[0]))
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(LEADERBOARD_COLUMNS)
    for team_id, _label, score in ordered:
        writer.writerow([f"{score:.5f}", team_id, False, SUBMISSION_DATE, f"{score:.5f}", True])
    return buffer.getvalue()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-c", "--competition", action="append", choices=sorted(GRIDS), help="only this competition")
    parser.add_argument("--competitions", type=Path, default=None, help="competitions root (default: the checkout's)")
    parser.add_argument("--list", action="store_true", help="print team id, score and configuration; write nothing")
    parser.add_argument("--check", action="store_true", help="exit 1 if a leaderboard file would change")
    args = parser.parse_args(argv)

    registry_root = find_competitions_root(args.competitions)
    changed = []
    with tempfile.TemporaryDirectory(prefix="mleaudit-baselines-") as tmp:
        registry = CompetitionRegistry(registry_root, Path(tmp) / "data")
        work = Path(tmp) / "submissions"
        work.mkdir()
        for competition_id in args.competition or sorted(GRIDS):
            spec = registry.get(competition_id)
            results = score_baselines(registry, competition_id, work)
            if args.list:
                for team_id, label, score in results:
                    print(f"{competition_id}\t{team_id}\t{score:.5f}\t{label}")
                continue
            text = render_leaderboard(results, spec.metric.higher_is_better)
            target = spec.leaderboard_path
            current = target.read_text(encoding="utf-8") if target.is_file() else None
            if current == text:
                print(f"{competition_id}: {target} is up to date ({len(results)} entries)")
                continue
            changed.append(competition_id)
            if args.check:
                print(f"{competition_id}: {target} would change")
            else:
                target.write_text(text, encoding="utf-8")
                print(f"{competition_id}: wrote {target} ({len(results)} entries)")
    return 1 if (args.check and changed) else 0


if __name__ == "__main__":
    sys.exit(main())
