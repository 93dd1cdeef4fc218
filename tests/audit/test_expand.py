"""Tests for ``mleaudit.audit.expand.expand_run``: code units from files, notebooks, logs and here-documents."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest

from mleaudit.audit.expand import RunUnits, expand_run, heredoc_python_units
from mleaudit.audit.model import Span
from mleaudit.audit.notebooks import read_notebook
from mleaudit.audit.parsing import parse
from mleaudit.audit.run import load_run
from mleaudit.audit.units import CodeUnit, LogEventKind
from tests.conftest import shared_path

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "runs_loading"


def _units(units: RunUnits, path: str) -> list[CodeUnit]:
    return [u for u in units.code_units if u.path == path]


def _parse_all(units: RunUnits) -> None:
    for unit in units.code_units:
        parse(unit.text, unit.language)


def test_mlebench_run_units():
    run = load_run(FIXTURES / "mlebench_run")
    units = expand_run(run)
    assert units.skipped == ()
    assert [(u.path, u.language, u.source) for u in units.code_units] == [
        ("code/explore.ipynb", "python", "notebook"),
        ("code/explore.ipynb", "bash", "notebook"),
        ("code/explore.ipynb", "bash", "notebook"),
        ("code/explore.ipynb", "bash", "notebook"),
        ("code/fetch.sh", "bash", "file"),
        ("code/fetch.sh", "python", "file"),
        ("code/train.py", "python", "file"),
        ("logs/agent.log", "bash", "log"),
        ("logs/agent.log", "python", "log"),
        ("logs/agent.log", "python", "log"),
    ]
    # The notebook's markdown and raw cells are read as text events too.
    assert units.log_formats == (("code/explore.ipynb", "notebook-outputs"), ("code/notes.bin.dat", "text"),
                                 ("logs/agent.log", "steplog"), ("run.log", "runlog"))
    assert [e.span.path for e in units.log_events] == (["code/explore.ipynb"] * 2 + ["code/notes.bin.dat"]
                                                       + ["logs/agent.log"] * 8 + ["run.log"] * 4)
    assert len(units.events_of("run.log")) == 4
    _parse_all(units)


def test_notebook_units_and_shell_origins():
    run = load_run(FIXTURES / "mlebench_run")
    nb_units = _units(expand_run(run), "code/explore.ipynb")
    notebook = read_notebook((FIXTURES / "mlebench_run" / "code" / "explore.ipynb").read_text(), "code/explore.ipynb")
    assert nb_units[0].text == notebook.text and nb_units[0].cells == notebook.cells and nb_units[0].origin is None
    assert nb_units[0].describe(8) == "cell 3, line 2"
    for unit in nb_units[1:]:
        origin = unit.origin
        assert notebook.raw_text[origin.start_byte : origin.end_byte] == unit.text
    assert [(u.text, u.origin.start_line) for u in nb_units[1:]] == [
        ("pip install -q lightgbm", 3),
        ("ls /kaggle/input", 8),
        ("kaggle competitions download -c titanic\nunzip titanic.zip", 13),
    ]


def test_heredoc_in_a_script_file_is_python_with_exact_origin():
    run = load_run(FIXTURES / "mlebench_run")
    script = (FIXTURES / "mlebench_run" / "code" / "fetch.sh").read_text()
    bash, python = _units(expand_run(run), "code/fetch.sh")
    assert bash.text == script and bash.origin is None
    assert python.text == "import lightgbm\nprint(lightgbm.__version__)"
    assert script[python.origin.start_byte : python.origin.end_byte] == python.text
    assert (python.origin.start_line, python.origin.end_line) == (5, 6)


def test_log_units_point_at_their_events():
    run = load_run(FIXTURES / "mlebench_run")
    log_text = (FIXTURES / "mlebench_run" / "logs" / "agent.log").read_text()
    units = expand_run(run)
    log_units = _units(units, "logs/agent.log")
    assert [u.text for u in log_units] == [
        "ls -la /home/data",
        "import pandas as pd\nprint(pd.__version__)",
        'import os\nprint(os.listdir("/home/data"))',
    ]
    for unit in log_units:
        assert log_text[unit.origin.start_byte : unit.origin.end_byte] == unit.text
    code_events = [e for e in units.log_events if e.kind in (LogEventKind.CODE, LogEventKind.COMMAND)]
    assert [u.origin for u in log_units] == [e.span for e in code_events]
    # A match on line 2 of the unit maps to line 11 of the log.
    inner = Span.from_offsets(log_units[1].text, "logs/agent.log", 20, 25)
    assert log_units[1].host_span(inner).start_line == 11


def test_json_log_code_with_ipython_syntax():
    run = load_run(FIXTURES / "aide_output")
    units = expand_run(run)
    journal = _units(units, "journal.json")
    assert [(u.language, u.text) for u in journal] == [
        ("python", 'import pandas as pd\ntrain = pd.read_csv("./input/train.csv")\nprint(len(train))\n'),
        ("python", "# !pip install lightgbm\nimport lightgbm as lgb\n"),
        ("bash", "pip install lightgbm"),
    ]
    # The code was decoded from a JSON string, so the shell escape gets the whole origin.
    assert journal[2].origin == journal[1].origin
    assert [u.path for u in units.code_units] == ["best_solution.py", "journal.json", "journal.json", "journal.json"]
    _parse_all(units)


def test_jsonl_heredocs_and_tool_calls():
    run = load_run(FIXTURES / "logs" / "trajectory.jsonl")
    units = expand_run(run)
    assert [(u.language, u.text) for u in units.code_units] == [
        ("bash", "ls /home/data"),
        ("bash", "cat > /home/code/a.py <<'PY'\nprint('hi')\nPY"),
        ("python", "print('hi')"),
        ("python", "import pandas as pd\nprint(pd.__version__)"),
        ("bash", "pip install timm"),
        ("python", "print(2)"),
        ("bash", "wget http://example.org/x.csv"),
    ]
    assert units.code_units[2].origin == units.code_units[1].origin


def test_bare_folder_units():
    units = expand_run(load_run(FIXTURES / "bare_folder"))
    assert [(u.path, u.language, u.source) for u in units.code_units] == [
        ("phase_eda/eda_code.py", "python", "file"),
        ("phase_model/model_code.py", "python", "file"),
        ("plan.md", "python", "log"),
    ]
    assert dict(units.log_formats) == {
        "phase_eda/eda_output.txt": "text",
        "phase_model/review.json": "json",
        "plan.md": "text",
    }
    assert units.skipped == () and units.notes == ()


def test_broken_and_foreign_notebooks_are_skipped():
    units = expand_run(load_run(FIXTURES / "notebooks"))
    reasons = {s.path: s.reason for s in units.skipped}
    assert set(reasons) == {"broken.ipynb", "not_a_notebook.ipynb", "r_kernel.ipynb"}
    assert reasons["r_kernel.ipynb"] == "notebook kernel language 'r' has no grammar"
    assert reasons["broken.ipynb"].startswith("broken.ipynb: not a readable notebook (NotJSONError")
    assert [(u.path, u.language) for u in units.code_units] == [
        ("v3_magics.ipynb", "python"),
        ("v3_magics.ipynb", "bash"),
        ("v4_magics.ipynb", "python"),
        ("v4_magics.ipynb", "bash"),
        ("v4_magics.ipynb", "bash"),
        ("v4_magics.ipynb", "bash"),
    ]


def test_unreadable_and_binary_files_are_skipped(tmp_path):
    (tmp_path / "gone.py").write_text("x = 1\n")
    (tmp_path / "blob.py").write_bytes(b"x = 1\x00\x01")
    (tmp_path / "ok.py").write_text("y = 2\n")
    run = load_run(tmp_path)
    (tmp_path / "gone.py").unlink()
    units = expand_run(run)
    assert [u.path for u in units.code_units] == ["ok.py"]
    reasons = {s.path: s.reason for s in units.skipped}
    assert reasons["blob.py"] == "binary content (NUL bytes) in a text file"
    assert reasons["gone.py"].startswith("cannot read: ")


@pytest.mark.parametrize(
    ("script", "bodies"),
    [
        ("python - <<'EOF'\nimport os\nEOF\n", ["import os"]),
        ("cat > t.py <<EOF\na = 1\nb = 2\nEOF", ["a = 1\nb = 2"]),
        ("tee -a x.py <<-END\n\tprint(1)\n\tEND\n", ["\tprint(1)"]),
        ("cat > notes.txt <<EOF\nhello\nEOF\n", []),
        ("python - <<EOF\nunterminated = 1", ["unterminated = 1"]),
        ("cat <<A > a.py\nx = 1\nA\ncat <<B > b.py\ny = 2\nB\n", ["x = 1", "y = 2"]),
    ],
)
def test_heredoc_python_units(script, bodies):
    unit = CodeUnit(path="s.sh", language="bash", text=script)
    found = heredoc_python_units(unit)
    assert [u.text for u in found] == bodies
    for body in found:
        assert script[body.origin.start_byte : body.origin.end_byte] == body.text


def _real_run_dirs():
    yield from sorted(p for p in shared_path("runs", "autokaggle").iterdir() if p.is_dir())
    yield from sorted(shared_path("runs", "aide").iterdir())
    yield from sorted(shared_path("runs", "dsbench").iterdir())
    yield from sorted(shared_path("violations").glob("case-*"))
    yield from sorted(p for p in shared_path("notebooks").iterdir() if p.is_dir())


def test_real_runs_expand_and_every_unit_parses():
    total = 0
    for path in _real_run_dirs():
        run = load_run(path)
        units = expand_run(run)
        assert units.skipped == (), path
        for unit in units.code_units:
            parse(unit.text, unit.language)
            assert unit.language in ("python", "bash")
        total += len(units.code_units)
    assert total > 300


def test_real_violation_evidence_is_reachable():
    """Code the labels point at is present as units (commands, heredocs, notebook escapes)."""
    root = shared_path("violations")

    def texts(case: str, language: str) -> str:
        units = expand_run(load_run(root / case))
        return "\n".join(u.text for u in units.code_units if u.language == language)

    assert "kaggle competitions download" in texts("case-03", "bash")
    assert "localhost:5000/validate" in texts("case-09", "python")  # probe.py written by a heredoc
    assert "sudo" in texts("case-01", "bash")
    assert "openai" in texts("case-05", "python").lower()


# --- AutoKaggle runs, Inspect archives and bad input --------------------------------------


def test_autokaggle_run_units_and_events():
    run = load_run(FIXTURES / "autokaggle_run")
    units = expand_run(run)
    assert run.layout == "autokaggle" and units.skipped == () and units.notes == ()
    assert [(u.path, u.source) for u in units.code_units] == [
        ("model_build_predict/model_build_predict_code.py", "file"),
        ("pre_eda/pre_eda_code.py", "file"),
        ("pre_eda/pre_eda_run_code.py", "file"),
    ]
    formats = dict(units.log_formats)
    assert formats["spaceship_titanic.log"] == "pylogging"
    assert formats["pre_eda/review.json"] == formats["understand_background/review.json"] == "json"
    assert formats["pre_eda/markdown_plan.txt"] == formats["competition_info.txt"] == "text"
    kinds = {path: {e.kind for e in units.events_of(path)} for path in formats}
    # What the phases printed, and the data previews the scaffold wrote, are program output.
    for path in ("pre_eda/pre_eda_output.txt", "pre_eda/data_preview.txt",
                 "model_build_predict/model_build_predict_output.txt", "spaceship_titanic.log"):
        assert kinds[path] == {LogEventKind.OUTPUT}, path
    assert kinds["pre_eda/review.json"] == {LogEventKind.MESSAGE}


def test_eval_archive_in_a_run(tmp_path):
    log = json.loads((FIXTURES.parent / "logs" / "inspect_eval.json").read_text())
    with zipfile.ZipFile(tmp_path / "task.eval", "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("header.json", json.dumps({key: log[key] for key in ("version", "status", "eval")}))
        archive.writestr("samples/spaceship-titanic_epoch_1.json", json.dumps(log["samples"][0], indent=2))
    units = expand_run(load_run(tmp_path))
    member = "task.eval!/samples/spaceship-titanic_epoch_1.json"
    assert units.log_formats == (("task.eval", "inspect"),)
    assert {e.span.path for e in units.log_events} == {member}
    assert [(u.language, u.text) for u in units.code_units if u.source == "log"][:2] == [
        ("bash", "ls -la /home/data && head -3 /home/data/train.csv"),
        ("python", log["samples"][0]["messages"][4]["tool_calls"][0]["arguments"]["file_text"]),
    ]
    assert {u.path for u in units.code_units} == {member}
    _parse_all(units)


def test_bad_input_is_read_or_listed(tmp_path):
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "latin1.log").write_bytes("$ echo caf\u00e9\n".encode("latin-1"))
    (logs / "junk.log").write_bytes(bytes(range(128, 256)) * 8)
    (logs / "cut.jsonl").write_text('{"type": "command", "content": "ls"}\n{"type": "command", "cont')
    (logs / "journal.json").write_text('[{"plan": "p", "code": "import os\\nprint(1)"}, {"plan": "q", "code": "x = ')
    units = expand_run(load_run(tmp_path))
    assert [(n.path, n.reason) for n in units.notes] == [
        ("logs/latin1.log", "not valid UTF-8: decoded as cp1252 (detected)"),
    ]
    reasons = {s.path: s.reason for s in units.skipped}
    assert reasons == {
        "logs/cut.jsonl": "log partly read: 1 line(s) not read, not a JSON object (cut short or damaged): line 2",
        "logs/journal.json": "log partly read: JSON cut short or damaged at line 1, column 70: Unterminated string "
                             "starting at; read 2 node(s) up to there",
        "logs/junk.log": "binary content: 1024 of 1024 characters are not valid UTF-8",
    }
    assert [u.text for u in units.code_units] == ["ls", "import os\nprint(1)", "echo caf\u00e9"]


def test_audit_finishes_on_bad_input_and_says_what_it_skipped(tmp_path):
    from mleaudit.audit.pipeline import audit_run
    from mleaudit.audit.rules.loader import find_rules_root, load_ruleset

    outside = tmp_path / "private"
    outside.mkdir()
    (outside / "answers.csv").write_text("id,label\n1,0\n")
    run_dir = tmp_path / "run"
    (run_dir / "logs").mkdir(parents=True)
    (run_dir / "logs" / "agent.log").write_bytes(b"$ ls /home/data\n\xff\n")
    (run_dir / "logs" / "trajectory.jsonl").write_text('{"type": "command", "content": "ls"}\n{"type": "comm')
    (run_dir / "logs" / "answers.csv").symlink_to(outside / "answers.csv")
    report = audit_run(load_run(run_dir), ruleset=load_ruleset([find_rules_root(None)]))
    skipped = {(s.path, s.reason.split(":")[0]) for s in report.skipped}
    assert skipped == {
        ("logs/agent.log", "not valid UTF-8"),
        ("logs/answers.csv", "symbolic link (not followed)"),
        ("logs/trajectory.jsonl", "log partly read"),
        ("submission/submission.csv", "no submission file (looked for submission/submission.csv, submission.csv, "
                                      "working/submission.csv)"),
    }
    # What was not read keeps the run from a clean verdict; the notes alone would not.
    assert report.verdict.kind.value in ("review", "incomplete")
    assert any("not read" in reason for reason in report.verdict.reasons)
