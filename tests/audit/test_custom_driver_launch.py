"""Driver notebooks of frameworks the vocabulary does not name, and code printed under headers."""

from __future__ import annotations

import pytest

from mleaudit.audit.driver import CellRole, read_driver
from mleaudit.audit.expand.found import _code_sections, _found_in_text
from mleaudit.audit.units import LogEventKind

_KEYS = 'import os\nfrom google.colab import userdata\nos.environ["OPENAI_API_KEY"] = userdata.get("k")'


@pytest.mark.parametrize("setup, launch", [
    ("!git clone -q https://example.org/lab/fastsolver-ml.git && pip install -q -e fastsolver-ml",
     "from fastsolver_ml.entry import launch\nlaunch(job='x', out='/o')"),
    ("!pip install -q git+https://example.org/lab/kagglebot.git",
     "from kagglebot import Runner\nRunner(cfg).start()"),
    ("!git clone https://example.org/lab/thing.git agentpkg",
     "!python agentpkg/main.py --max-steps 20"),
    ("!pip install -q anthropic",
     "res = go(competition='spaceship-titanic', data_dir='/content/data')"),
])
def test_custom_launch_is_found(setup, launch):
    cells = [(0, setup), (1, _KEYS), (2, "LIMITS = dict(steps=3)"), (3, launch), (4, "print(open('/o/s.csv').read())")]
    reading = read_driver("run.ipynb", cells)
    assert reading.driver, reading.reason
    assert [reading.role(i) for i in range(5)][:4] == [CellRole.SETUP] * 3 + [CellRole.RUN]


def test_launch_told_by_an_agent_log_in_its_output():
    cells = [(0, _KEYS), (1, "result = orchestrate(cfg)")]
    log = "\n".join(f"step {i} $ python train.py --fold {i}" for i in range(6))
    assert read_driver("run.ipynb", cells, {1: log}).driver
    assert not read_driver("run.ipynb", cells, {1: "done\n"}).driver


def test_no_credentials_no_custom_driver():
    cells = [(0, "!git clone https://example.org/lab/helper.git"), (1, "from helper import fit\nfit(task=1, data=2)")]
    assert not read_driver("nb.ipynb", cells).driver


def test_agent_folders_never_drivers():
    cells = [(0, "!git clone https://example.org/lab/x-agent.git"), (1, _KEYS), (2, "from x_agent import run\nrun()")]
    assert read_driver("run.ipynb", cells).driver
    assert not read_driver("code/run.ipynb", cells).driver


def test_plain_analysis_notebook_is_the_agents():
    cells = [(0, "import pandas as pd\ndf = pd.read_csv('train.csv')"), (1, "df.describe()")]
    assert not read_driver("eda.ipynb", cells).driver


_BODY = "import requests\nrequests.post('https://example.org/submit', files={'f': open('s.csv', 'rb')})"


@pytest.mark.parametrize("header, footer", [
    ("----- node 9f code -----", "----- node 9f output -----"),
    ("--- code ---", "--- output ---"),
    ("code:", "output:"),
    ("Executing code:", "Execution output:"),
    ("[node 3] code", "[node 3] output"),
    ("### Code", "### Output"),
    ("Generated code for step 4:", "[2025-01-01 10:00:00] INFO next"),
])
def test_code_under_a_header_is_code(header, footer):
    text = f"INFO step 4 improving\n{header}\n{_BODY}\n{footer}\nok\n"
    codes = [e.text for e in _found_in_text(text) if e.kind is LogEventKind.CODE]
    assert any(_BODY in c or c in _BODY and "requests.post" in c for c in codes), codes


def test_prose_under_a_code_header_is_not_code():
    assert _code_sections("Code:\nThe model is trained and the file written.\n") == []
