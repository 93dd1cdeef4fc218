"""The report's similarity tables: journal nodes told apart, score and flagged shown, files too
short to compare, and the run's copied share (JSON, text, markdown, HTML)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from mleaudit.audit.cli import main
from mleaudit.audit.formatters.common import TOO_SHORT, copied_share_line, pair_agent_label
from mleaudit.audit.formatters.html import render_html
from mleaudit.audit.formatters.markdown import render_markdown
from mleaudit.audit.schemas import check_report

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "similarity" / "detect"
KERNELS = FIXTURES / "kernels"


def _audit(run: Path, fmt: str, out: Path) -> str:
    result = CliRunner().invoke(main, ["audit", str(run), "--corpus", str(KERNELS), "--format", fmt, "-o", str(out)])
    assert result.exit_code in (0, 1, 3), result.output
    return out.read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def journal_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An AIDE run whose journal has three nodes, each with the same kernel pasted into host code."""
    run = tmp_path_factory.mktemp("journal-run")
    (run / "logs").mkdir()
    kernel = (KERNELS / "bravo-rush-hours.py").read_text(encoding="utf-8")
    host = (FIXTURES / "agent" / "host.py").read_text(encoding="utf-8")
    nodes = [{"id": f"n{i}-id", "step": 10 + i, "plan": "try again", "code": f"{host}\nSEED = {i}\n{kernel}",
              "parent": None, "children": [], "_term_out": ["ok"], "metric": None} for i in range(3)]
    (run / "logs" / "journal.json").write_text(json.dumps({"nodes": nodes}, indent=1), encoding="utf-8")
    return run


@pytest.fixture(scope="module")
def journal_report(journal_run: Path, tmp_path_factory: pytest.TempPathFactory) -> dict:
    out = tmp_path_factory.mktemp("out") / "report.json"
    return json.loads(_audit(journal_run, "json", out))


def test_journal_pairs_name_their_node(journal_report: dict) -> None:
    check_report(journal_report)
    pairs = [p for p in journal_report["similarity"]["pairs"] if p["reference_path"] == "bravo-rush-hours.py"]
    assert len(pairs) == 3
    origins = sorted((p["agent_origin"]["node"], p["agent_origin"]["step"], p["agent_origin"]["node_id"]) for p in pairs)
    assert origins == [(0, 10, "n0-id"), (1, 11, "n1-id"), (2, 12, "n2-id")]
    assert all(p["agent_origin"]["location"].endswith(".code") for p in pairs)
    labels = {pair_agent_label(p) for p in pairs}
    assert len(labels) == 3 and "logs/journal.json · node 1 (step 11, id n1-id)" in labels


def test_every_table_tells_journal_nodes_apart(journal_run: Path, journal_report: dict, tmp_path: Path) -> None:
    text = _audit(journal_run, "text", tmp_path / "report.txt")
    rows = [line for line in text.splitlines() if "bravo-rush-hours.py" in line and "journal.json ·" in line]
    assert len(rows) == 3 and len(set(rows)) == 3
    markdown = render_markdown(journal_report)
    assert sum("node 2 (step 12, id n2-id)" in line for line in markdown.splitlines() if line.startswith("|")) >= 1
    html = render_html(journal_report)
    for i in range(3):
        assert f"node {i} (step {10 + i}, id n{i}-id)" in html


def test_text_table_has_score_and_flagged(journal_run: Path, tmp_path: Path) -> None:
    text = _audit(journal_run, "text", tmp_path / "report.txt")
    header = next(line for line in text.splitlines() if line.startswith("agent") and "reference" in line)
    assert header.split()[:6] == ["agent", "reference", "score", "flagged", "similarity", "agent"]
    flagged_row = next(line for line in text.splitlines() if "bravo-rush-hours.py" in line and "journal.json ·" in line)
    assert " yes " in flagged_row and "1.000" in flagged_row


def test_copied_share_in_json_text_markdown_and_html(journal_run: Path, journal_report: dict, tmp_path: Path) -> None:
    share = journal_report["similarity"]["copied_share"]
    assert share["agent_units"] == 3 and share["units_with_copies"] == 3 and share["notebooks"] == 1
    # The kernel is most of each node's code; the host code around it is not copied.
    assert 0.5 < share["share"] < 1.0
    assert share["copied_lines"] <= share["agent_lines"]
    line = copied_share_line(journal_report["similarity"])
    assert line.startswith(f"{100 * share['share']:.1f} % of the run's agent code found in public notebooks")
    assert "Copied share: " + line in _audit(journal_run, "text", tmp_path / "r.txt")
    assert line in render_markdown(journal_report)
    page = render_html(journal_report)
    assert 'id="r1-copied-share"' in page
    # In the run's summary line and in the index of a page of several runs.
    percent = f"{100 * share['share']:.1f} %"
    assert f'<a href="#r1-copied-share">{percent} of the agent code found in public notebooks</a>' in page
    assert f'<td class="num">{percent}</td>' in render_html([journal_report, journal_report])


def test_copied_share_of_files_counts_their_lines(tmp_path: Path) -> None:
    run = tmp_path / "run"
    (run / "code").mkdir(parents=True)
    kernel = (KERNELS / "bravo-rush-hours.py").read_text(encoding="utf-8")
    (run / "code" / "copied.py").write_text(kernel, encoding="utf-8")
    own = "\n".join(f"value_{i} = compute_{i}(inputs, {i})" for i in range(40)) + "\n"
    (run / "code" / "own.py").write_text(own, encoding="utf-8")
    report = json.loads(_audit(run, "json", tmp_path / "r.json"))
    share = report["similarity"]["copied_share"]
    assert share["agent_lines"] == kernel.count("\n") + 40
    assert share["units_with_copies"] == 1
    # The evidence covers most of the pasted kernel and none of the file of its own.
    assert kernel.count("\n") * 0.6 <= share["copied_lines"] <= kernel.count("\n")


def test_files_too_short_to_compare_in_the_report(tmp_path: Path) -> None:
    run = tmp_path / "run"
    (run / "code").mkdir(parents=True)
    (run / "code" / "tiny.py").write_text("import os\n\nimport os\n", encoding="utf-8")
    report = json.loads(_audit(run, "json", tmp_path / "r.json"))
    pairs = report["similarity"]["pairs"]
    assert pairs and all(p["agent_total"] == 0 and p["too_short"] is True for p in pairs)
    check_report(report)
    text = _audit(run, "text", tmp_path / "r.txt")
    rows = [line for line in text.splitlines() if line.startswith("code/tiny.py")]
    assert rows and all(TOO_SHORT in line for line in rows)
    assert TOO_SHORT in render_markdown(report)
    assert TOO_SHORT in render_html(report)


def test_real_aide_journal_rows_name_their_node(tmp_path: Path) -> None:
    from tests.conftest import shared_path

    run = shared_path("runs", "aide-journal", "backdoor-trigger-recovery__2-test_run_big")
    corpus = shared_path("similarity-golden", "titanic")
    out = tmp_path / "report.json"
    result = CliRunner().invoke(main, ["audit", str(run), "--corpus", str(corpus), "--format", "json", "-o", str(out)])
    assert result.exit_code in (0, 1, 3), result.output
    report = json.loads(out.read_text(encoding="utf-8"))
    check_report(report)
    journal = json.loads((run / "journal.json").read_text(encoding="utf-8"))
    nodes = journal["nodes"] if isinstance(journal, dict) else journal
    rows = [p for p in report["similarity"]["pairs"] if p["agent_path"] == "journal.json"]
    assert rows
    for pair in rows:
        origin = pair["agent_origin"]
        node = nodes[origin["node"]]
        assert (origin["node_id"], origin["step"]) == (node["id"], node["step"])
        assert origin["location"] == f"nodes[{origin['node']}].code"
        # tables show the first 8 of the 32 hex digits (the JSON keeps the whole id)
        assert pair_agent_label(pair).endswith(f"(step {node['step']}, id {node['id'][:8]}…)")
    # The journal is one line of JSON: only the node tells its rows apart.
    labels = [(pair_agent_label(p), p["reference_path"]) for p in report["similarity"]["pairs"]]
    assert len(labels) == len(set(labels))


def test_markdown_lists_each_rule_once(journal_report: dict) -> None:
    report = json.loads(json.dumps(journal_report))
    report["findings"] = report["findings"] * 4  # many findings of one rule
    text = render_markdown(report)
    references = report["rules"]["plag-kernel-containment"]["references"]
    assert references and text.count(references[0]) == 1
    assert text.count("## Rules") == 1


def test_the_text_table_shows_the_likeliest_copies_first() -> None:
    from mleaudit.audit.formatters.text import table_order

    pairs = [{"reference_path": "a", "score": 0.1, "flagged": False},
             {"reference_path": "b", "score": 0.4, "flagged": False},
             {"reference_path": "c", "score": 0.9, "flagged": True},
             {"reference_path": "d", "score": None, "flagged": False},
             {"reference_path": "e", "score": 0.4, "flagged": False}]
    assert [p["reference_path"] for p in table_order(pairs)] == ["c", "b", "e", "a", "d"]


def test_similarity_agents_reads_the_strings_of_each_distinct_text_once(monkeypatch):
    from mleaudit.audit import report_similarity
    from mleaudit.audit.units import Actor, CodeUnit

    pasted = "CODE = '''\nimport pandas as pd\ndf = pd.read_csv(\"train.csv\")\nprint(df.describe())\n'''\nexec(CODE)\n"
    units = [CodeUnit(path=f"log/step{i}.py", language="python", text=text, actor=Actor.AGENT)
             for i, text in enumerate([pasted, "x = 1\n", pasted, pasted, "x = 1\n"])]
    calls = []
    real = report_similarity.string_code_units
    monkeypatch.setattr(report_similarity, "string_code_units", lambda unit: calls.append(unit.text) or real(unit))
    picked = report_similarity.similarity_agents(units)
    assert sorted(calls) == sorted([pasted, "x = 1\n"])
    # each text once, the pasted code of the first unit's string with it
    assert [u.path for u in picked][:1] == ["log/step0.py"] and len({u.text for u in picked}) == len(picked)
    assert any("read_csv" in u.text and u.text != pasted for u in picked)
