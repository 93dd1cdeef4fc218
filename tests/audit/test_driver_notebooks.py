"""Driver notebooks: an operator's notebook that runs an agent framework, read cell by cell with
who wrote what (operator setup and grading, the scaffold's printed log, the agent's code in it)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from mleaudit.audit.cli import main
from mleaudit.audit.driver import VOCABULARY, CellRole, read_driver
from mleaudit.audit.expand import expand_run
from mleaudit.audit.parsing import parse
from mleaudit.audit.run import load_run
from mleaudit.audit.units import Actor, LogEventKind as K

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "notebooks_driver" / "aide_kaggle"


@pytest.fixture(scope="module")
def units():
    return expand_run(load_run(FIXTURE))


def test_the_fixture_is_a_driver_with_its_cells_roles(units):
    (record,) = units.notebooks
    driver = record.driver
    assert driver.driver and driver.frameworks == ("aide",)
    assert {i: r.value for i, r in driver.roles.items()} == {1: "setup", 2: "setup", 3: "setup", 4: "run", 5: "post"}
    assert driver.run_cells == (4,)
    assert "driver notebook (aide; run cells 4)" in record.describe()


def test_setup_launch_and_grading_code_is_the_operators(units):
    notebook = [u for u in units.code_units if u.source == "notebook"]
    assert [(u.language, u.actor) for u in notebook] == [("python", Actor.OPERATOR)] + [("bash", Actor.OPERATOR)] * 3
    code = notebook[0]
    # The API key, the timeout, the launch and the grading helper that reads the answers: all operator code.
    for needle in ('os.environ["OPENAI_API_KEY"]', "TIME_LIMIT_HOURS = 24", "exp.run(steps=STEPS)",
                   "prepared/private/test.csv"):
        assert needle in code.text
    line = code.text[: code.text.index("prepared/private")].count("\n") + 1
    assert code.describe(line) == "cell 5, line 6"
    assert [u.text for u in notebook[1:]] == ["git clone https://github.com/example-org/aideml.git",
                                             "pip install -e ./aideml", "pip install -e ../mle-bench"]


def test_the_launch_cells_outputs_are_the_scaffolds_log(units):
    outputs = [e for e in units.log_events if e.kind is K.OUTPUT]
    by_place = {(e.location, e.actor) for e in outputs}
    assert ("cells[4].outputs[0]", Actor.SCAFFOLD) in by_place
    assert ("cells[2].outputs[0]", Actor.OPERATOR) in by_place  # pip and git output of the setup
    assert ("cells[5].outputs[0]", Actor.OPERATOR) in by_place  # the operator's grade
    log = next(e for e in outputs if e.location == "cells[4].outputs[0]")
    # Public notebook refs and the in-run grade line are scaffold output events, escapes removed.
    assert "alice-k/spaceship-titanic-eda, bobsmith/titanic-xgb-baseline" in log.text
    assert "MLE-bench grade: score=0.81 above_median=True" in log.text
    assert log.text.startswith("[aide] starting run")
    text = (FIXTURE / "driver.ipynb").read_text()
    assert "starting run" in text.splitlines()[log.span.start_line - 1]
    assert "MLE-bench grade" in text.splitlines()[log.span.end_line - 1]


def test_code_in_the_scaffolds_log_is_the_agents(units):
    found = [(e.kind, e.actor, e.location) for e in units.log_events if e.kind in (K.CODE, K.COMMAND)]
    assert found == [(K.CODE, Actor.AGENT, "cells[4].outputs[0]"), (K.COMMAND, Actor.AGENT, "cells[4].outputs[0]")]
    agent = [u for u in units.code_units if u.source == "log"]
    assert [(u.language, u.actor) for u in agent] == [("python", Actor.AGENT), ("bash", Actor.AGENT)]
    assert agent[0].text.startswith("import pandas as pd\nfrom sklearn.ensemble import GradientBoostingClassifier")
    assert agent[1].text == "ls /home/data"
    # Located at the fenced block's lines in the notebook file.
    text = (FIXTURE / "driver.ipynb").read_text().splitlines()
    assert text[agent[0].origin.start_line - 1].strip() == '"import pandas as pd\\n",'


def test_markdown_of_a_driver_is_the_operators(units):
    (markdown,) = [e for e in units.log_events if e.kind is K.MESSAGE]
    assert markdown.actor is Actor.OPERATOR and markdown.location == "cells[0].source"


def test_operator_code_is_not_judged_but_agent_code_in_the_log_is(tmp_path):
    runner = CliRunner()
    out = tmp_path / "clean.json"
    result = runner.invoke(main, ["audit", str(FIXTURE), "--no-similarity", "--no-grade", "-o", str(out)])
    report = json.loads(out.read_text())
    # The API key, the clone of the agent's repository and the grading helper that reads the
    # answers are the operator's: no finding on them (the scaffold's in-run grade line is
    # judged by the rules on scaffold output, not here).
    assert result.exit_code in (0, 1), result.output
    assert [f for f in report["findings"] if f.get("actor") == "operator"] == []
    assert not {f["rule_id"] for f in report["findings"]} & {"llm-provider-api-key", "leak-read-private-data",
                                                            "ext-download-solution"}

    # The same notebook with the agent (inside the scaffold's log) reading the answers is flagged.
    run = tmp_path / "run"
    shutil.copytree(FIXTURE, run)
    notebook = json.loads((run / "driver.ipynb").read_text())
    stream = notebook["cells"][4]["outputs"][0]["text"]
    at = stream.index('test = pd.read_csv("/home/data/test.csv")\n')
    stream.insert(at + 1, 'answers = pd.read_csv("/private/data/spaceship-titanic/prepared/private/test.csv")\n')
    (run / "driver.ipynb").write_text(json.dumps(notebook, indent=1))
    out = tmp_path / "flagged.json"
    result = runner.invoke(main, ["audit", str(run), "--no-similarity", "--no-grade", "-o", str(out)])
    report = json.loads(out.read_text())
    flagged = [f for f in report["findings"] if f["category"] == "answers-access"]
    assert flagged and all(f["evidence"][0]["path"] == "driver.ipynb" for f in flagged)
    assert result.exit_code == 1


def _nb(sources: list[str], outputs: dict[int, str] | None = None) -> str:
    outputs = outputs or {}
    cells = [{"cell_type": "code", "metadata": {}, "source": source.splitlines(keepends=True),
              "outputs": ([{"output_type": "stream", "name": "stdout", "text": outputs[i].splitlines(keepends=True)}]
                          if i in outputs else [])}
             for i, source in enumerate(sources)]
    return json.dumps({"nbformat": 4, "metadata": {}, "cells": cells}, indent=1)


def test_a_replayed_solution_after_the_run_is_split_out_as_unknown(tmp_path):
    sources = [
        "!pip install aideml\nimport os\nos.environ['OPENAI_API_KEY'] = 'k'",
        "!aide data_dir=/data goal='predict' eval='auc'",
        "import pandas as pd\nfrom sklearn.linear_model import LogisticRegression\n"
        "model = LogisticRegression().fit(X, y)\nmodel.predict(X_test)",
        "print(open('logs/aide.log').read())",
    ]
    (tmp_path / "run.ipynb").write_text(_nb(sources, {1: "```python\nimport os\n```\n", 3: "$ ls /home\n"}))
    units = expand_run(load_run(tmp_path))
    roles = {i: r.value for i, r in units.notebooks[0].driver.roles.items()}
    assert roles == {0: "setup", 1: "run", 2: "rerun", 3: "stream"}
    notebook = [u for u in units.code_units if u.source == "notebook" and u.language == "python"]
    assert [(u.actor, [c.cell_index for c in u.cells]) for u in notebook] == [
        (Actor.OPERATOR, [0, 1, 3]), (Actor.UNKNOWN, [2])]
    operator, unknown = notebook
    # Both keep the whole notebook's line numbers; the other actor's cells are blank.
    assert operator.text.count("\n") == unknown.text.count("\n")
    assert "LogisticRegression" not in operator.text and "OPENAI_API_KEY" not in unknown.text
    line = unknown.text[: unknown.text.index("model.predict")].count("\n") + 1
    assert unknown.describe(line) == "cell 2, line 4"
    for unit in notebook:
        assert not parse(unit.text, "python").has_error
    found = [(e.kind, e.actor, e.location) for e in units.log_events if e.kind in (K.CODE, K.COMMAND)]
    assert found == [(K.CODE, Actor.AGENT, "cells[1].outputs[0]"), (K.COMMAND, Actor.AGENT, "cells[3].outputs[0]")]


@pytest.mark.parametrize(("sources", "framework"), [
    (["import aide", "exp = aide.Experiment(data_dir='d', goal='g', eval='acc')\nbest = exp.run(steps=5)"], "aide"),
    (["!python -m aide data_dir=/in goal='g'"], "aide"),
    (["import os\nos.system(\"aide data_dir=/in goal='g' eval=acc\")"], "aide"),
    (["%%bash\ncd aideml && python -m aide data_dir=/in goal=g"], "aide"),
    (["import subprocess\nsubprocess.Popen(['aide', 'data_dir=/in', 'goal=g'])"], "aide"),
    (["from openhands.core.main import run_controller", "state = await run_controller(config, action)"],
     "openhands"),
    (["!python -u -m MLAgentBench.runner --task house-price --log-dir logs"], "mlagentbench"),
    (["!inspect eval mle_bench.py --model openai/gpt-4o"], "inspect"),
    (["from inspect_ai import eval as run_eval", "logs = run_eval(task, model='m')"], "inspect"),
    (["!python run_agent.py --agent-id aide --competition-set lite.txt"], "mle-bench"),
    (["!bash run_agent.sh"], "mle-bench"),
    (["!git clone https://example.org/agent.git", "agent.run(task)"], "generic"),
    (["import os\nos.environ['ANTHROPIC_API_KEY'] = 'k'",
      "import subprocess\nsubprocess.run(['python', 'agent/run.py', '--task', 't'])"], "generic"),
    (["%env OPENAI_API_KEY=k", "result = Agent(model='m').run('solve it')"], "generic"),
])
def test_framework_vocabulary(sources, framework):
    reading = read_driver("driver.ipynb", list(enumerate(sources)))
    assert reading.driver and framework in reading.frameworks
    assert reading.run_cells and reading.role(reading.run_cells[0]) is CellRole.RUN


@pytest.mark.parametrize("sources", [
    ["x = eval('1 + 1')"],                       # Python's eval is not Inspect's
    ["!pip install aideml -q", "import pandas"],  # installing a framework does not run it
    ["# we could run aide.Experiment(...) here", "x = 1"],  # comments are not calls
    ["agent.run(task)"],                          # a generic call without operator setup
    ["import subprocess\nsubprocess.run(['python', 'run.py'])"],  # the agent's own script
    ["model.fit(X, y)", "preds = model.predict(X_test)"],
])
def test_notebooks_that_are_not_drivers(sources):
    reading = read_driver("nb.ipynb", list(enumerate(sources)))
    assert not reading.driver
    assert all(reading.code_actor(i) is Actor.AGENT for i in range(len(sources)))


def test_a_notebook_in_the_agents_folder_is_never_a_driver(tmp_path):
    (tmp_path / "code").mkdir()
    shutil.copy(FIXTURE / "driver.ipynb", tmp_path / "code" / "driver.ipynb")
    units = expand_run(load_run(tmp_path))
    reading = units.notebooks[0].driver
    assert not reading.driver and "not at the run root" in reading.reason
    assert {u.actor for u in units.code_units} == {Actor.AGENT}
    assert {e.actor for e in units.log_events} == {Actor.AGENT}


def test_the_vocabulary_is_documented():
    assert all(marker.what and marker.framework for marker in VOCABULARY)
    assert {m.framework for m in VOCABULARY} >= {"aide", "openhands", "mlagentbench", "inspect", "mle-bench", "generic"}
