"""Leaderboard files: reading, errors, and the direction cross-check."""

from __future__ import annotations

import csv
import math
from pathlib import Path

import pytest

from tests.conftest import shared_path
from mleaudit.grading.errors import ConfigError
from mleaudit.grading.leaderboard import LEADERBOARD_COLUMNS, Leaderboard, check_direction, load_leaderboard

HEADER = ",".join(LEADERBOARD_COLUMNS) + "\n"


def write(tmp_path: Path, rows: list[str]) -> Path:
    path = tmp_path / "leaderboard.csv"
    path.write_text(HEADER + "".join(r + "\n" for r in rows), encoding="utf-8")
    return path


def test_load_keeps_order_and_counts_unscored_teams(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        [
            "0.9,1,True,2024-01-01 00:00:00,0.9,True",
            "0.8,2,True,2024-01-01 00:00:00,0.8,True",
            ",3,True,2024-01-01 00:00:00,,False",
        ],
    )
    board = load_leaderboard(path)
    assert board.n_teams == 3
    assert board.scores[:2] == (0.9, 0.8)
    assert math.isnan(board.scores[2])
    assert board.score_at(1) == 0.9
    with pytest.raises(IndexError, match=r"position 4 is outside the leaderboard \(1..3\)"):
        board.score_at(4)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"leaderboard .*nope.csv: cannot be read"):
        load_leaderboard(tmp_path / "nope.csv")


def test_no_score_column(tmp_path: Path) -> None:
    path = tmp_path / "leaderboard.csv"
    path.write_text("team,points\na,1\n", encoding="utf-8")
    with pytest.raises(ConfigError) as excinfo:
        load_leaderboard(path)
    assert str(excinfo.value) == f"leaderboard {path}: no 'score' column (columns: team, points)"


def test_bad_score_names_row(tmp_path: Path) -> None:
    path = write(tmp_path, ["0.9,1,True,2024,0.9,True", "x,2,True,2024,high,True"])
    with pytest.raises(ConfigError) as excinfo:
        load_leaderboard(path)
    assert str(excinfo.value) == f"leaderboard {path}: row 2: score 'high' is not a number"


def test_no_teams(tmp_path: Path) -> None:
    path = write(tmp_path, [])
    with pytest.raises(ConfigError) as excinfo:
        load_leaderboard(path)
    assert str(excinfo.value) == f"leaderboard {path}: no teams"


def test_check_direction() -> None:
    rising = Leaderboard(path=Path("lb.csv"), scores=(0.1, 0.2, math.nan))
    check_direction(rising, higher_is_better=False)
    with pytest.raises(ConfigError) as excinfo:
        check_direction(rising, higher_is_better=True)
    assert str(excinfo.value) == (
        "leaderboard lb.csv: first score 0.1 and last score 0.2 contradict the declared higher_is_better: true"
    )
    flat = Leaderboard(path=Path("lb.csv"), scores=(0.5, 0.5))
    check_direction(flat, higher_is_better=True)
    check_direction(flat, higher_is_better=False)


def test_every_mlebench_leaderboard_loads() -> None:
    root = shared_path("mlebench", "competitions")
    files = sorted(root.glob("*/leaderboard.csv"))
    assert len(files) >= 80
    for path in files:
        board = load_leaderboard(path)
        with path.open(newline="") as handle:
            rows = list(csv.reader(handle))
        assert tuple(rows[0]) == LEADERBOARD_COLUMNS
        assert board.n_teams == len(rows) - 1
