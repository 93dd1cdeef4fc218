"""``mleaudit similarity pairs`` and ``mleaudit similarity compare``."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from mleaudit.audit.similarity import DEFAULT_SCORE_THRESHOLD
from mleaudit.audit.similarity.cli import COMPARE_COLUMNS, PAIR_COLUMNS, similarity
from tests.conftest import shared_path

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "similarity" / "detect"
KERNELS = FIXTURES / "kernels"


def _run(*args: str):
    return CliRunner().invoke(similarity, list(args))


def _tsv(output: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(output), delimiter="\t"))


def _pasted_agent(tmp_path: Path) -> Path:
    host = (FIXTURES / "agent" / "host.py").read_text(encoding="utf-8").split("\n")
    kernel = (KERNELS / "bravo-rush-hours.py").read_text(encoding="utf-8").split("\n")
    agent = tmp_path / "solution.py"
    agent.write_text("\n".join(host[:10] + kernel[13:23] + host[10:]), encoding="utf-8")
    return agent


def test_every_command_has_an_example() -> None:
    assert "Example:" in similarity.help
    for command in similarity.commands.values():
        assert "Example:" in command.help


# -- pairs ------------------------------------------------------------------------------------------


def test_pairs_reproduces_dolos_golden_pairs(monkeypatch: pytest.MonkeyPatch) -> None:
    golden = shared_path("similarity-golden", "aerial-cactus-identification")
    monkeypatch.chdir(golden.parent)
    result = _run("pairs", golden.name)
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0].split("\t") == list(PAIR_COLUMNS)
    ours = {(r["left"], r["right"]): r for r in _tsv(result.output)}
    theirs = _tsv((golden / "dolos_pairs.tsv").read_text(encoding="utf-8"))
    assert set(ours) == {(r["left"], r["right"]) for r in theirs}
    for row in theirs:
        mine = ours[(row["left"], row["right"])]
        assert abs(float(mine["similarity"]) - float(row["similarity"])) <= 1e-6
        assert [int(mine[c]) for c in PAIR_COLUMNS[3:]] == [int(row[c]) for c in PAIR_COLUMNS[3:]]
    similarities = [float(r["similarity"]) for r in _tsv(result.output)]
    assert similarities == sorted(similarities, reverse=True)


def test_pairs_prints_paths_as_given_and_json(tmp_path: Path) -> None:
    agent = _pasted_agent(tmp_path)
    folder = str(KERNELS) + "/"
    result = _run("pairs", str(agent), folder, "--format", "json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    files = {str(agent)} | {f"{KERNELS}/{p.name}" for p in KERNELS.glob("*.py")}
    assert len(data["pairs"]) == len(files) * (len(files) - 1) // 2
    assert {r["left"] for r in data["pairs"]} | {r["right"] for r in data["pairs"]} == files
    assert all(r["left"] < r["right"] for r in data["pairs"])
    assert set(data["pairs"][0]) == set(PAIR_COLUMNS)


def test_pairs_needs_two_files(tmp_path: Path) -> None:
    one = tmp_path / "a.py"
    one.write_text("x = 1\n", encoding="utf-8")
    result = _run("pairs", str(one))
    assert result.exit_code == 2 and "at least two" in result.output
    assert _run("pairs", str(tmp_path / "missing.py")).exit_code == 2
    (tmp_path / "notes.txt").write_text("hi", encoding="utf-8")
    result = _run("pairs", str(one), str(tmp_path / "notes.txt"))
    assert result.exit_code == 2 and "not a .py or .ipynb file" in result.output


def test_pairs_in_several_processes_prints_the_same_table(tmp_path: Path) -> None:
    agent = _pasted_agent(tmp_path)
    one = _run("pairs", str(agent), str(KERNELS))
    two = _run("pairs", "-j", "2", str(agent), str(KERNELS))
    assert one.exit_code == two.exit_code == 0, one.output + two.output
    assert two.output == one.output and len(one.output.splitlines()) > 2
    assert _run("pairs", "-j", "-1", str(agent), str(KERNELS)).exit_code == 2


# -- compare ----------------------------------------------------------------------------------------


def test_compare_rows_columns_order_and_flag(tmp_path: Path) -> None:
    agent = _pasted_agent(tmp_path)
    result = _run("compare", str(agent), "--reference", str(KERNELS))
    assert result.exit_code == 0, result.output
    assert result.output.splitlines()[0].split("\t") == list(COMPARE_COLUMNS)
    rows = _tsv(result.output)
    assert len(rows) == 6
    assert all(r["agent"] == str(agent) for r in rows)
    scores = [float(r["score"]) for r in rows]
    assert scores == sorted(scores, reverse=True)
    assert rows[0]["reference"] == "bravo-rush-hours.py" and rows[0]["flagged"] == "true"
    assert [r["flagged"] for r in rows[1:]] == ["false"] * 5
    assert all(r["flagged"] == ("true" if float(r["score"]) >= DEFAULT_SCORE_THRESHOLD else "false") for r in rows)
    top = _tsv(_run("compare", str(agent), "--reference", str(KERNELS), "--top", "2").output)
    assert [r["reference"] for r in top] == [r["reference"] for r in rows[:2]]


def test_compare_json_has_fragments_with_spans_and_notebook_cells(tmp_path: Path) -> None:
    host = (FIXTURES / "agent" / "host.py").read_text(encoding="utf-8")
    kernel = (KERNELS / "bravo-rush-hours.py").read_text(encoding="utf-8").split("\n")
    notebook = {
        "nbformat": 4, "nbformat_minor": 5, "metadata": {"kernelspec": {"language": "python", "name": "python3"}},
        "cells": [
            {"cell_type": "markdown", "metadata": {}, "source": "# run"},
            {"cell_type": "code", "metadata": {}, "source": host, "outputs": [], "execution_count": 1},
            {"cell_type": "code", "metadata": {}, "source": "\n".join(kernel[13:23]), "outputs": [],
             "execution_count": 2},
        ],
    }
    path = tmp_path / "agent.ipynb"
    path.write_text(json.dumps(notebook), encoding="utf-8")
    result = _run("compare", str(path), "--reference", str(KERNELS), "--format", "json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["score_threshold"] == DEFAULT_SCORE_THRESHOLD
    best = data["pairs"][0]
    assert best["reference"] == "bravo-rush-hours.py" and best["flagged"] is True
    assert set(COMPARE_COLUMNS) <= set(best)
    fragment = max(best["evidence_fragments"], key=lambda f: f["length"])
    assert fragment["agent_location"].startswith("cell 2, line ")
    assert fragment["reference_location"].startswith("line ")
    assert fragment["agent"]["path"] == str(path) and fragment["reference"]["path"] == "bravo-rush-hours.py"
    assert fragment["reference"]["start_line"] >= 14
    assert all("agent" in f and "reference" in f for f in best["fragments"])


def test_compare_boilerplate_folder(tmp_path: Path) -> None:
    agent = _pasted_agent(tmp_path)
    starter = tmp_path / "starter"
    starter.mkdir()
    kernel = (KERNELS / "bravo-rush-hours.py").read_text(encoding="utf-8").split("\n")
    (starter / "features.py").write_text("\n".join(kernel[13:23]), encoding="utf-8")
    rows = _tsv(_run("compare", str(agent), "--reference", str(KERNELS), "--boilerplate", str(starter)).output)
    assert all(r["flagged"] == "false" for r in rows)


@pytest.mark.parametrize("args,message", [
    ((), "exactly one of --reference DIR and --index INDEX"),
    (("--reference", str(KERNELS), "--index", "x.index"), "exactly one of"),
    (("--index", "missing.index"), "cannot read the corpus index missing.index"),
])
def test_compare_usage_errors_exit_2(tmp_path: Path, args, message: str) -> None:
    result = _run("compare", str(_pasted_agent(tmp_path)), *args)
    assert result.exit_code == 2, result.output
    assert message in result.output
    assert "Traceback" not in result.output


def test_compare_unreadable_index_is_an_input_error(tmp_path: Path) -> None:
    bogus = tmp_path / "bogus.index"
    bogus.write_bytes(b"not an index at all\x00\x01")
    result = _run("compare", str(_pasted_agent(tmp_path)), "--index", str(bogus))
    assert result.exit_code == 2, result.output
    assert "cannot read the corpus index" in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)


def test_compare_without_readable_agent_or_reference(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    result = _run("compare", str(empty), "--reference", str(KERNELS))
    assert result.exit_code == 2 and "no readable .py/.ipynb agent file" in result.output
    result = _run("compare", str(_pasted_agent(tmp_path)), "--reference", str(empty))
    assert result.exit_code == 2 and "no readable .py/.ipynb reference kernel" in result.output
    broken = tmp_path / "broken.ipynb"
    broken.write_text("{not json", encoding="utf-8")
    result = _run("compare", str(broken), str(_pasted_agent(tmp_path)), "--reference", str(KERNELS))
    assert result.exit_code == 0
    assert "skipped" in result.output and str(broken) in result.output
