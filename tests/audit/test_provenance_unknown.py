"""Submission provenance: "no logged writer" only when all the run executed is visible.

A run that executes code it does not show whole (a script abbreviated with ``# ...``, a module run
with ``python -m`` or a script started by a launcher or from Python that the run does not
contain, a file-write tool whose content the log leaves out) has a writer nobody can see: the
outcome is ``unverifiable`` or ``unconfirmed`` (never the high ``unlogged`` finding). The controls:
the same runs with everything visible still get ``unlogged``, and a submission typed in a
here-document is still ``typed``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mleaudit.audit.checks.provenance import assess_provenance
from mleaudit.audit.rules.context import RunContext
from mleaudit.audit.expand import expand_run
from mleaudit.audit.model import Severity
from mleaudit.audit.pipeline import AuditOptions, audit_run
from mleaudit.audit.rules.loader import find_rules_root, load_ruleset
from mleaudit.audit.run import load_run

ROWS = ["id,has_cactus", "a1b2c3.jpg,0.9731", "d4e5f6.jpg,0.0122", "0a9b8c.jpg,0.8845", "7f6e5d.jpg,0.4410"]

TRAIN_WHOLE = """import pandas as pd
df = pd.read_csv("/home/data/train.csv")
model = df.groupby("x")["y"].mean()
print("cv", 0.97)
"""


@pytest.fixture(scope="module")
def ruleset():
    return load_ruleset([find_rules_root(None)])


def _openhands_run(root: Path, script: str, *, output: str = "wrote 4 rows", command: str = "python train.py",
                   code_file: bool = True) -> Path:
    """An OpenHands run that writes ``train.py`` with ``script`` and runs it."""
    events = [
        {"id": 0, "source": "user", "action": "message", "args": {"content": "Write /home/submission/submission.csv"}},
        {"id": 1, "source": "agent", "action": "write", "args": {"path": "/home/code/train.py", "content": script}},
        {"id": 2, "source": "agent", "observation": "write", "cause": 1, "content": ""},
        {"id": 3, "source": "agent", "action": "run", "args": {"command": f"cd /home/code && {command}"}},
        {"id": 4, "source": "agent", "observation": "run", "cause": 3, "content": output},
        {"id": 5, "source": "agent", "action": "finish", "args": {"outputs": {}}},
    ]
    (root / "logs").mkdir(parents=True)
    (root / "logs" / "events.json").write_text(json.dumps(events, indent=1), encoding="utf-8")
    if code_file:
        (root / "code").mkdir()
        (root / "code" / "train.py").write_text(script, encoding="utf-8")
    (root / "submission").mkdir()
    (root / "submission" / "submission.csv").write_text("\n".join(ROWS) + "\n", encoding="utf-8")
    return root


def _transcript_run(root: Path, transcript: str, files: dict[str, str] | None = None) -> Path:
    (root / "logs").mkdir(parents=True)
    (root / "logs" / "agent.log").write_text(transcript, encoding="utf-8")
    for name, text in (files or {}).items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    (root / "submission").mkdir()
    (root / "submission" / "submission.csv").write_text("\n".join(ROWS) + "\n", encoding="utf-8")
    return root


def _provenance(root: Path):
    run = load_run(root)
    units = expand_run(run)
    ctx = RunContext(root=run.root, submission_path=run.submission.abs_path, code_units=units.code_units,
                     log_events=units.log_events)
    return assess_provenance(ctx)


def _serious(root: Path, ruleset) -> list[str]:
    report = audit_run(load_run(root), ruleset=ruleset, options=AuditOptions())
    return sorted(f.rule_id for f in report.findings if f.severity >= Severity.MEDIUM)


@pytest.mark.parametrize(
    "elision",
    [
        "# ... 8 epochs AdamW 3e-4, hflip/vflip, BCE\n",
        "...\n",
        "\u2026\n",
        "# (training loop omitted for brevity)\n",
        "# rest of the code unchanged\n",
        "<truncated>\n",
        "[... 120 more lines ...]\n",
        "    # predictions written as before (code not shown)\n",
        "# same as above\n",
    ],
)
def test_an_executed_script_shown_abbreviated_makes_the_writer_unknown(tmp_path, ruleset, elision):
    script = TRAIN_WHOLE + elision + 'files = sorted(["a", "b"])\n'
    root = _openhands_run(tmp_path / "run", script)
    result = _provenance(root)
    assert result.outcome == "unverifiable"
    assert "train.py" in result.detail and "abbreviated" in result.detail
    assert result.evidence[0].label == "abbreviated source"
    assert _serious(root, ruleset) == []


def test_the_same_run_with_the_script_whole_has_no_logged_writer(tmp_path, ruleset):
    root = _openhands_run(tmp_path / "run", TRAIN_WHOLE)
    assert _provenance(root).outcome == "unlogged"
    assert "sub-run-submission-unlogged" in _serious(root, ruleset)


def test_a_stub_body_is_no_abbreviation(tmp_path):
    script = TRAIN_WHOLE + "class Base:\n    def fit(self):\n        ...\n\n\ndef hook():\n    ...\n"
    assert _provenance(_openhands_run(tmp_path / "run", script)).outcome == "unlogged"


def test_an_abbreviated_script_only_in_the_logs_makes_the_writer_unknown(tmp_path):
    transcript = (
        "$ cat > train.py << 'EOF'\n"
        "import pandas as pd\n"
        "# ... feature engineering and 5-fold LightGBM omitted\n"
        "EOF\n"
        "$ python train.py\n"
        "wrote 4 rows\n"
    )
    result = _provenance(_transcript_run(tmp_path / "run", transcript))
    assert result.outcome == "unverifiable" and "train.py" in result.detail


def test_a_script_that_is_not_run_is_not_looked_at(tmp_path):
    transcript = "$ python train.py\ncv 0.97\n"
    files = {"code/train.py": TRAIN_WHOLE, "code/notes.py": "# ... scratch, never run\n"}
    assert _provenance(_transcript_run(tmp_path / "run", transcript, files)).outcome == "unlogged"


@pytest.mark.parametrize(
    "command",
    [
        "python -m mypkg.train --folds 5",
        "python -u -X dev -m solution",
        "torchrun --nproc_per_node 2 fit.py",
        "accelerate launch --mixed_precision fp16 fit.py",
        "python -m torch.distributed.run --nproc_per_node=2 fit.py",
    ],
)
def test_code_run_that_the_run_does_not_contain_is_no_missing_writer(tmp_path, ruleset, command):
    transcript = f"$ pip install -q lightgbm\n$ {command}\nwrote 4 rows\n"
    root = _transcript_run(tmp_path / "run", transcript)
    result = _provenance(root)
    assert result.outcome == "unconfirmed" and "does not contain" in result.detail
    assert "sub-run-submission-unlogged" not in _serious(root, ruleset)


def test_python_that_runs_a_missing_script_is_no_missing_writer(tmp_path):
    transcript = '```python\nimport subprocess\nsubprocess.run(["python", "make_sub.py"], check=True)\n```\n'
    result = _provenance(_transcript_run(tmp_path / "run", transcript))
    assert result.outcome == "unconfirmed" and "make_sub.py" in result.detail


@pytest.mark.parametrize("command", ["python -m pip install lightgbm", "python -m json.tool data.json",
                                     "python -m venv .venv"])
def test_tools_run_as_modules_hide_no_writer(tmp_path, command):
    transcript = f"$ {command}\nok\n$ ls /home/submission\nsubmission.csv\n"
    assert _provenance(_transcript_run(tmp_path / "run", transcript)).outcome == "unlogged"


def test_a_module_of_the_run_is_read_like_a_script(tmp_path):
    transcript = "$ python -m solution.main\nwrote 4 rows\n"
    whole = {"code/solution/__init__.py": "", "code/solution/main.py": TRAIN_WHOLE}
    assert _provenance(_transcript_run(tmp_path / "whole", transcript, whole)).outcome == "unlogged"
    cut = {"code/solution/__init__.py": "", "code/solution/main.py": TRAIN_WHOLE + "# ... rest omitted\n"}
    result = _provenance(_transcript_run(tmp_path / "cut", transcript, cut))
    assert result.outcome == "unverifiable" and "python -m solution.main" in result.detail


def test_a_file_write_tool_into_the_submission_is_a_writer_the_log_does_not_show(tmp_path, ruleset):
    transcript = (
        "2025-03-04 09:12:11 THOUGHT\nWrite the file.\n"
        "2025-03-04 09:12:12 ACTION write_file /home/submission/submission.csv\n(5 lines written)\n"
        "2025-03-04 09:12:13 OBSERVATION\nok\n"
    )
    root = _transcript_run(tmp_path / "run", transcript)
    result = _provenance(root)
    assert result.outcome == "unconfirmed" and "tool call" in result.detail
    assert "sub-run-submission-unlogged" not in _serious(root, ruleset)


def test_a_visible_typed_heredoc_is_still_typed(tmp_path, ruleset):
    transcript = ("$ cat > /home/submission/submission.csv << 'EOF'\n" + "\n".join(ROWS)
                  + "\nEOF\n$ wc -l /home/submission/submission.csv\n5\n")
    root = _transcript_run(tmp_path / "run", transcript)
    result = _provenance(root)
    assert result.outcome == "typed" and result.typed_rows == 4
    assert "sub-run-submission-typed-rows" in _serious(root, ruleset)


def test_a_visible_typed_powershell_here_string_is_still_typed(tmp_path, ruleset):
    transcript = ("PS C:\\work> @\"\n" + "".join(f">> {row}\n" for row in ROWS)
                  + ">> \"@ | Set-Content C:\\work\\submission\\submission.csv\nPS C:\\work> exit\n")
    root = _transcript_run(tmp_path / "run", transcript)
    assert _provenance(root).outcome == "typed"
    assert "sub-run-submission-typed-rows" in _serious(root, ruleset)


def test_a_hand_placed_file_with_everything_visible_has_no_logged_writer(tmp_path, ruleset):
    transcript = (
        "2025-03-04 09:12:11 ACTION shell\nls /home/data\n"
        "2025-03-04 09:12:12 OBSERVATION\ntrain.csv test.csv\n"
        "2025-03-04 09:12:13 ACTION: python\nimport pandas as pd\nprint(pd.read_csv('/home/data/train.csv').shape)\n"
        "2025-03-04 09:12:14 OBSERVATION\n(100, 2)\n"
        "2025-03-04 09:12:15 ACTION finish\ndone\n"
    )
    root = _transcript_run(tmp_path / "run", transcript)
    assert _provenance(root).outcome == "unlogged"
    assert "sub-run-submission-unlogged" in _serious(root, ruleset)


def test_what_an_executed_file_runs_counts_as_run(tmp_path, ruleset):
    transcript = "$ bash run.sh\nwrote 4 rows\n"
    # run.sh passes the submission path to fit.py: a writer (the path given to a script).
    files = {"code/run.sh": "#!/bin/bash\nset -e\npython fit.py --out /home/submission/submission.csv\n"}
    assert _provenance(_transcript_run(tmp_path / "argument", transcript, files)).outcome == "written"
    # run.sh is in the run and runs fit.py, which is not: the writer is not visible.
    files = {"code/run.sh": "#!/bin/bash\nset -e\npython fit.py\n"}
    result = _provenance(_transcript_run(tmp_path / "hidden", transcript, files))
    assert result.outcome == "unconfirmed" and "fit.py" in result.detail
    # With fit.py in the run but abbreviated, the writer is unknown.
    files["code/fit.py"] = TRAIN_WHOLE + "# ... the rest as before\n"
    result = _provenance(_transcript_run(tmp_path / "abbreviated", transcript, files))
    assert result.outcome == "unverifiable" and "fit.py" in result.detail
    # With fit.py whole, nothing writes the submission.
    files["code/fit.py"] = TRAIN_WHOLE
    assert _provenance(_transcript_run(tmp_path / "whole", transcript, files)).outcome == "unlogged"


def test_a_script_only_edited_in_place_is_still_a_script_the_run_does_not_contain(tmp_path, ruleset):
    # `sed -i` shows a change to gbm.py, never its code: running it is running unseen code.
    transcript = ("$ cd /home/code && sed -i 's/bandgap_energy/bandgap_energy_ev/' gbm.py && python gbm.py\n"
                  "wrote /home/submission/submission.csv\n")
    root = _transcript_run(tmp_path / "run", transcript)
    assert _provenance(root).outcome == "unconfirmed"
    assert _serious(root, ruleset) == []
