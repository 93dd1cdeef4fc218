"""End to end on real agent runs from ../shared/data (skipped when it is absent)."""

from __future__ import annotations

import json

from click.testing import CliRunner

from mleaudit.audit.cli import main
from tests.conftest import shared_path


def test_audit_autokaggle_spaceship_titanic(tmp_path):
    raw = shared_path("kaggle-raw", "spaceship-titanic")
    run = shared_path("runs", "autokaggle", "spaceship_titanic")
    corpus = shared_path("notebooks", "spaceship-titanic")
    data = tmp_path / "data"
    runner = CliRunner()
    prepared = runner.invoke(main, ["prepare", "-c", "spaceship-titanic", "--raw", str(raw), "--data-dir", str(data)])
    assert prepared.exit_code == 0, prepared.output

    out = tmp_path / "report.json"
    result = runner.invoke(
        main,
        ["audit", str(run), "--competition", "spaceship-titanic", "--corpus", str(corpus),
         "--data-dir", str(data), "-o", str(out)],
    )
    assert result.exit_code == 0, result.output
    report = json.loads(out.read_text())

    grade = report["grade"]
    assert grade["submission_exists"] is True
    # AutoKaggle predicted Kaggle's own test set (4,277 passengers), not MLE-bench's held-out
    # split of train.csv, so the grader must refuse it with a reason instead of scoring it.
    assert grade["valid_submission"] is False
    assert grade["score"] is None
    assert grade["error"]
    assert grade["any_medal"] is False

    pairs = report["similarity"]["pairs"]
    assert len(pairs) >= 5
    assert report["similarity"]["reference_count"] >= 10
    containments = [p["agent_containment"] for p in pairs]
    assert containments == sorted(containments, reverse=True)
    assert all(0.0 <= p["similarity"] <= 1.0 for p in pairs)

    serious = [f for f in report["findings"] if f["severity"] in ("medium", "high", "critical")]
    assert serious == []
    assert report["run"]["code_units"] >= 10  # one per phase script at least
    assert report["skipped"] == []
