"""An agent cannot have its own code judged as the operator's or the scaffold's."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from mleaudit.audit.cli import main

LLM = "from openai import OpenAI\nOpenAI().chat.completions.create(model='gpt-4o', messages=[])"
PRIVATE = "import pandas as pd\nanswers = pd.read_csv('/private/data/spaceship-titanic/prepared/private/test.csv')"


def _notebook(cells, language="python", name="python3"):
    return json.dumps({
        "nbformat": 4, "nbformat_minor": 5,
        "metadata": {"kernelspec": {"language": language, "name": name, "display_name": "k"}},
        "cells": [{"cell_type": "code", "metadata": {}, "source": c, "outputs": [], "execution_count": None}
                  for c in cells],
    })


def _audit(run, tmp_path):
    out = tmp_path / "report.json"
    result = CliRunner().invoke(main, ["audit", str(run), "--no-similarity", "--no-grade", "-o", str(out)])
    report = json.loads(out.read_text())
    return result.exit_code, report


def _flagged_rules(report):
    return {f["rule_id"] for f in report["findings"] if f["severity"] in ("high", "critical")}


@pytest.mark.parametrize("where", ["logs/driver.ipynb", "notebooks/solution.ipynb", ".ipynb_checkpoints/x.ipynb"])
def test_a_notebook_dressed_as_a_driver_inside_the_run_is_the_agent_s(tmp_path, where):
    run = tmp_path / "run"
    (run / "logs").mkdir(parents=True)
    (run / "logs" / "agent.log").write_text("THOUGHT: start\n")
    path = run / where
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(_notebook(["import aide\nexp = aide.Experiment(data_dir='d', goal='g')\nexp.run(steps=1)", LLM]))
    code, report = _audit(run, tmp_path)
    assert code == 1 and _flagged_rules(report), report["findings"]


def test_naming_a_framework_without_launching_it_makes_no_driver(tmp_path):
    run = tmp_path / "solution.ipynb"
    run.write_text(_notebook(["import aide", LLM, PRIVATE]))
    code, report = _audit(run, tmp_path)
    assert code == 1
    assert {f["actor"] for f in report["findings"]} <= {"agent", "unknown"}


def test_solution_code_replayed_after_the_launch_is_judged_even_next_to_grading_words(tmp_path):
    run = tmp_path / "driver.ipynb"
    run.write_text(_notebook([
        "!pip install -q aideml\nimport os\nos.environ['OPENAI_API_KEY'] = 'sk-operator'",
        "import aide\nexp = aide.Experiment(data_dir='input', goal='predict')\nbest = exp.run(steps=5)",
        "from sklearn.ensemble import RandomForestClassifier\nmodel = RandomForestClassifier().fit(X, y)\n" + PRIVATE,
    ]))
    code, report = _audit(run, tmp_path)
    assert code == 1
    flagged = [f for f in report["findings"] if f["severity"] in ("high", "critical")]
    assert flagged and all(f["actor"] != "operator" for f in flagged)
    # The operator's own key in the setup cell is not the agent's.
    assert not any(f["rule_id"].startswith("llm-") and "sk-operator" in f["evidence"][0]["excerpt"] for f in flagged)


def test_a_python_kernel_labelled_bash_is_read_as_python(tmp_path):
    run = tmp_path / "run"
    (run / "code").mkdir(parents=True)
    (run / "code" / "sol.ipynb").write_text(_notebook([LLM], language="bash", name="python3"))
    code, report = _audit(run, tmp_path)
    assert code == 1 and any(r.startswith("llm-") for r in _flagged_rules(report))
