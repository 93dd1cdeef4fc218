"""Contamination: reproduced vs retrieved public code, from the run's own logs."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from mleaudit.audit.cli import main
from mleaudit.audit.contamination import RunContamination, analyse_run, summarize_contamination

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "runs" / "copied-digits"
KERNELS = ROOT / "competitions" / "sklearn-digits" / "kernels"


def _variant(tmp_path: Path, name: str, extra_log: str | None) -> Path:
    run = tmp_path / name
    shutil.copytree(EXAMPLE, run)
    meta = json.loads((run / "run.json").read_text())
    (run / "run.json").write_text(json.dumps({**meta, "run_id": name}))
    if extra_log is None:
        shutil.rmtree(run / "logs")
    else:
        log = run / "logs" / "agent.log"
        lines = log.read_text().splitlines()
        log.write_text("\n".join(lines[:2] + extra_log.splitlines() + lines[2:]) + "\n")
    return run


def _contamination(tmp_path: Path, run: Path) -> dict:
    out = tmp_path / f"{run.name}.json"
    result = CliRunner().invoke(main, ["contamination", "sklearn-digits", "--runs", str(run), "--corpus", str(KERNELS),
                                       "-j", "1", "-o", str(out), "--data-dir", str(tmp_path / "data")])
    assert result.exit_code == 0, result.output
    return json.loads(out.read_text())


def test_copy_without_a_fetch_is_reproduced(tmp_path):
    result = _contamination(tmp_path, _variant(tmp_path, "plain", ""))
    (run,) = result["runs"]
    assert run["status"] == "reproduced"
    pair = run["pairs"][0]
    assert pair["reference_id"] == "digits-tree-ensembles-shape-features"
    assert pair["longest_fragment"] > 50 and pair["evidence"] == []
    assert pair["fragments"][0]["agent_excerpt"]
    assert result["competitions"] == [{"competition_id": "sklearn-digits", "runs": 1, "retrieved": 0, "reproduced": 1,
                                       "unknown": 0, "none": 0, "reproduced_share": 1.0}]


def test_pulling_the_notebook_is_retrieval(tmp_path):
    run = _variant(tmp_path, "pulled", "$ kaggle kernels pull someone/digits-tree-ensembles-shape-features -p /tmp/nb\n"
                                       "Source code downloaded to /tmp/nb")
    (analysis,) = _contamination(tmp_path, run)["runs"]
    assert analysis["status"] == "retrieved"
    kinds = {e["kind"] for e in analysis["pairs"][0]["evidence"]}
    assert {"names-notebook", "kernel-download"} <= kinds
    assert any("agent.log:3" in e["where"] for e in analysis["pairs"][0]["evidence"])


def test_copied_lines_seen_in_a_tool_output_first_is_retrieval(tmp_path):
    shown = "    result['symmetry'] = np.abs(imgs - imgs[:, :, ::-1]).sum(axis=(1, 2))"
    run = _variant(tmp_path, "seen", f"$ cat /tmp/found/shape_features.py\n{shown}\n    return result")
    (analysis,) = _contamination(tmp_path, run)["runs"]
    assert analysis["status"] == "retrieved"
    (evidence,) = [e for e in analysis["pairs"][0]["evidence"] if e["kind"] == "seen-in-output"]
    assert "np.abs(imgs - imgs" in evidence["excerpt"]


def test_without_logs_the_origin_is_unknown(tmp_path):
    (analysis,) = _contamination(tmp_path, _variant(tmp_path, "nologs", None))["runs"]
    assert analysis["status"] == "unknown" and analysis["has_logs"] is False


def test_unflagged_pairs_are_not_classified():
    report = {"run": {"run_id": "r", "competition_id": "c"},
              "similarity": {"pairs": [{"flagged": False, "agent_path": "a.py", "reference_path": "n.ipynb"}]},
              "findings": []}
    assert analyse_run(report).status == "none"


def test_summary_counts_each_status():
    runs = [RunContamination(run_id=str(i), competition_id="c", status=s, has_logs=True, pairs=())
            for i, s in enumerate(["reproduced", "retrieved", "none", "reproduced"])]
    (row,) = summarize_contamination(runs)
    assert row["runs"] == 4 and row["reproduced"] == 2 and row["reproduced_share"] == pytest.approx(0.5)


def test_bad_arguments_are_clear(tmp_path):
    result = CliRunner().invoke(main, ["contamination", "sklearn-digits", "--runs", str(EXAMPLE), "--corpus", str(tmp_path / "no")])
    assert result.exit_code == 2 and "no such corpus folder" in result.output
