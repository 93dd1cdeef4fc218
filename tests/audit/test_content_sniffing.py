"""Files whose name says nothing are read by their content: binary, archive, Python, shell, text.

Every case writes its own bytes; nothing here is real run material.
"""

from __future__ import annotations

import gzip
import io
import os
import tarfile
import zipfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mleaudit.audit.run import sniffing
from mleaudit.audit.expand import expand_run
from mleaudit.audit.pipeline import AuditOptions, audit_run
from mleaudit.audit.report import GapKind, VerdictKind
from mleaudit.audit.rules.loader import find_rules_root, load_ruleset
from mleaudit.audit.run import ArtifactKind, RunLayout, classify_content, load_run

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
K = ArtifactKind


def _zip() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("solve.py", "import os\n")
    return buffer.getvalue()


def _tar() -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        data = b"import os\n"
        info = tarfile.TarInfo("solve.py")
        info.size = len(data)
        archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


@pytest.mark.parametrize(
    ("path", "data", "kind", "language", "how"),
    [
        ("backup/train.py_2024-02-04_14-26-56", b"import os\nx = 1\n", K.CODE, "python", "a copy of a .py file"),
        ("x.py.bak", b"print('hi')\n", K.CODE, "python", "a copy of a .py file"),
        ("x.py~", b"print('hi')\n", K.CODE, "python", "a copy of a .py file"),
        ("run.sh.1", b"ls -la\n", K.CODE, "bash", "a copy of a .sh file"),
        ("nb.ipynb~", b'{"cells": [], "nbformat": 4}', K.NOTEBOOK, None, "a copy of a .ipynb file"),
        ("solve", b"#!/usr/bin/env python3\nprint(1)\n", K.CODE, "python", "python shebang"),
        ("solve", b"#!/usr/bin/python3.11 -u\nprint(1)\n", K.CODE, "python", "python shebang"),
        ("go", b"#!/bin/bash\nset -e\npython train.py\n", K.CODE, "bash", "bash shebang"),
        ("go", b"#!/bin/sh\nls\n", K.CODE, "bash", "sh shebang"),
        ("go", b"#!/usr/bin/env -S bash -e\nls\n", K.CODE, "bash", "bash shebang"),
        ("prep", b"import pandas as pd\n\ndef load():\n    return pd.read_csv('a.csv')\n", K.CODE, "python",
         "parses as Python source"),
        ("events", b'{"type": "command", "content": "ls"}\n{"type": "output", "content": "a"}\n', K.LOG, None, "JSON"),
        ("state", b'[{"a": 1}]', K.LOG, None, "JSON"),
        # ``key: value`` lines parse as Python annotations: no import or definition, so text.
        ("config.yaml", b"exp_name: run\nagent:\n  steps: 2\n", K.LOG, None, "text"),
        ("tree_plot.html", b"<!doctype html>\n<html><script>const a = 1;</script></html>\n", K.LOG, None, "text"),
        ("report.md", b"# Report\n\nimport is a word here.\n", K.LOG, None, "text"),
        ("agent_log/main_log", b"Step 0:\nAction: List Files\nAction Input: {}\n", K.LOG, None, "text"),
        ("notes", "caf\u00e9 cr\u00e8me\n".encode("cp1252"), K.LOG, None, "text"),
        ("notes16", "hello world\n".encode("utf-16"), K.LOG, None, "text"),
    ],
)
def test_text_by_content(path, data, kind, language, how):
    found_kind, found_language, note = classify_content(path, data)
    assert (found_kind, found_language) == (kind, language)
    assert note.startswith("read as ") and note.endswith(f"by content ({how})")


@pytest.mark.parametrize(
    ("data", "why"),
    [
        (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "NUL bytes"),
        (os.urandom(4096) + b"\x00", "NUL bytes"),
        (bytes(range(128, 256)) * 8, "not text in any encoding"),
        (b"\x01\x02\x03\x04\x05\x06abc" * 20, "control characters"),
    ],
    ids=["png", "random", "high-bytes", "controls"],
)
def test_binary_by_content(data, why):
    assert classify_content("blob", data) == (K.DATA, None, f"binary file, not read (by content: {why})")
    # A code-like name does not make binary bytes code.
    assert classify_content("train.py_1", data)[0] is K.DATA


@pytest.mark.parametrize(
    ("data", "name"),
    [(_zip(), "zip"), (gzip.compress(b"import os\n"), "gzip"), (_tar(), "tar"), (b"BZh91AY&SY" + bytes(20), "bzip2"),
     (b"\xfd7zXZ\x00" + bytes(20), "xz"), (b"7z\xbc\xaf\x27\x1c" + bytes(20), "7z")],
    ids=["zip", "gzip", "tar", "bzip2", "xz", "7z"],
)
def test_archives_stay_unread(data, name):
    assert classify_content("bundle", data) == (K.OTHER, None, f"{name} archive (by content), not read: it may hold "
                                                               "code or logs")


def _write(root: Path, files: dict[str, bytes]) -> Path:
    for name, content in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content)
    return root


def test_load_run_reads_by_content_and_notes_how(tmp_path):
    root = _write(tmp_path / "run", {
        "agent_log/main_log": b"Step 0:\nThought: look\n",
        "backup/train.py_2024-02-04_14-26-56": b"import os\n",
        "blob": b"\x00\x01\x02binary",
        "bundle": _zip(),
        "run.json": b'{"competition_id": "x"}',
    })
    run = load_run(root)
    arts = {a.path: a for a in run.artifacts}
    assert (arts["agent_log/main_log"].kind, arts["backup/train.py_2024-02-04_14-26-56"].language) == (K.LOG, "python")
    assert arts["blob"].kind is K.DATA
    assert arts["run.json"].kind is K.OTHER and arts["run.json"].sniffed is None  # run metadata, by name
    assert "bundle" not in arts
    notes = {n.path: n.reason for n in run.notes}
    assert notes["agent_log/main_log"] == "read as a log by content (text)"
    assert notes["backup/train.py_2024-02-04_14-26-56"] == "read as python by content (a copy of a .py file)"
    assert notes["blob"] == "binary file, not read (by content: NUL bytes)"
    assert {s.path: s.reason for s in run.skipped} == {
        "bundle": "zip archive (by content), not read: it may hold code or logs"}
    units = expand_run(run)
    assert dict(units.log_formats)["agent_log/main_log"] == "mlagentbench"
    assert [(u.path, u.language) for u in units.code_units if u.source == "file"] == [
        ("backup/train.py_2024-02-04_14-26-56", "python")]


def test_size_caps_hold_for_files_read_by_content(tmp_path, monkeypatch):
    monkeypatch.setattr(RunLayout, "MAX_FILE_BYTES", 1000)
    monkeypatch.setattr(RunLayout, "MAX_LOG_BYTES", 1000)
    root = _write(tmp_path / "run", {
        "big_log": b"a line of the transcript\n" * 100,
        "big_code.py_1": b"x = 1\n" * 400,
        "big_blob": b"\x00" * 5000,
        "small": b"hello\n",
    })
    run = load_run(root)
    arts = {a.path: a for a in run.artifacts}
    # Text is read like a log: up to the cap, the rest listed.
    assert arts["big_log"].kind is K.LOG and arts["big_log"].truncated
    assert len(arts["big_log"].read_bytes()) <= 1000 and arts["big_log"].read_bytes().endswith(b"\n")
    skipped = {s.path: s.reason for s in run.skipped}
    assert skipped["big_log"].startswith("log of 2500 bytes: only the first 1000 bytes")
    # Code over the cap is not read, as for a .py file.
    assert "big_code.py_1" not in arts and "over the 1000-byte cap" in skipped["big_code.py_1"]
    # Binary over the cap: a data file nothing reads, noted, not a gap.
    assert "big_blob" not in arts and "big_blob" not in skipped
    assert {n.path: n.reason for n in run.notes}["big_blob"].startswith("binary file, not read (by content: NUL bytes)")
    assert arts["small"].kind is K.LOG


def test_symlinks_are_still_refused(tmp_path):
    root = _write(tmp_path / "run", {"solve.py": b"print(1)\n"})
    (tmp_path / "outside").write_bytes(b"import os\n")
    (root / "main_log").symlink_to(tmp_path / "outside")
    run = load_run(root)
    assert "main_log" not in {a.path for a in run.artifacts}
    assert {s.path: s.reason for s in run.skipped}["main_log"] == "symbolic link (not followed)"


@pytest.fixture(scope="module")
def ruleset():
    return load_ruleset([find_rules_root(None)])


def test_an_aide_journal_folder_is_read_whole(ruleset):
    run = load_run(FIXTURES / "runs_sniffing" / "aide_journal")
    report = audit_run(run, ruleset=ruleset, options=AuditOptions())
    assert report.verdict.kind is VerdictKind.CLEAN, report.verdict.gaps
    units = expand_run(run)
    assert dict(units.log_formats) == {
        "config.yaml": "text", "history.txt": "llmcalls", "report.md": "text", "tree_plot.html": "text",
    }
    history = units.events_of("history.txt")
    code = [e for e in history if e.kind.value == "code"]
    assert [(e.actor.value, e.role) for e in code] == [("agent", "assistant")]
    assert {e.actor.value for e in history if e.role == "user"} == {"scaffold"}


def test_unknown_names_are_no_gap_unless_unreadable(tmp_path, ruleset):
    root = _write(tmp_path / "run", {
        "solve.py": b"print(1)\n", "log": b"Namespace(task='x')\nplain progress\n", "blob": b"\x00\x01",
        "bundle": _zip(),
    })
    report = audit_run(load_run(root), ruleset=ruleset, options=AuditOptions())
    assert [(g.kind, g.path) for g in report.verdict.gaps] == [(GapKind.FILE_UNREAD, "bundle")]
    reasons = {(s.path, s.reason) for s in report.skipped}
    assert ("blob", "binary file, not read (by content: NUL bytes)") in reasons


def _parses_with_a_statement(text: str) -> bool:
    """The slow reference: parse the text (lone CRs as line ends, as Python reads them) and walk
    every node for an import or a definition."""
    from mleaudit.audit.parsing import get_parser

    root = get_parser("python").parse(sniffing.LONE_CR.sub("\n", text).encode("utf-8")).root_node
    if root.has_error:
        return False
    stack = [root]
    while stack:
        node = stack.pop()
        if node.type in sniffing._PYTHON_STATEMENTS:
            return True
        stack.extend(node.children)
    return False


_PIECES = ["import os", "from os import path", "def f():\n    pass", "class A:\n    pass", "async def g():\n    pass",
           "@dec\ndef h():\n    pass", "x = 1", "print(x)", "Step 0:", "Action: List Files", ";", " ", "\t", "\n", "\r",
           "\r\n", "\f", "\ufeff", "\u200b", "\u2060", "\\\n", "\\\x00", "# comment", "'''doc'''", "if x:\n    import os", "\u2028",
           "if x: import os", "from __future__ import annotations", "try:\n    from a import b\nexcept E:\n    pass",
           "x = 1\rimport os", ":"]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(_PIECES), min_size=1, max_size=8))
def test_the_cheap_module_statement_test_never_refuses_what_parses_as_python(pieces):
    text = "".join(pieces)
    parses = _parses_with_a_statement(text)
    if parses:
        assert sniffing._MODULE_STATEMENT_START.search(text) is not None, repr(text)
    assert sniffing._parses_as_python(text) == parses


@pytest.mark.parametrize("text", ["x = 1; import os\n", "\ufeffimport os\n", "x = 1;\\\nimport os\n",
                                  "x = 1\rimport os\r", "x = 1\f\nclass A: pass\n", "y = 2\n\u200bdef f(): pass\n",
                                  "x = 1;\\\x00import os\n"])
def test_module_statements_after_semicolons_continuations_and_odd_blanks_still_parse(text):
    assert sniffing._parses_as_python(text) == _parses_with_a_statement(text)


def test_a_long_log_without_a_module_statement_is_not_parsed(monkeypatch):
    from mleaudit.audit import parsing

    calls = []
    real = parsing.get_parser
    monkeypatch.setattr(parsing, "get_parser", lambda language: calls.append(language) or real(language))
    assert not sniffing._parses_as_python("Step 0:\nAction: List Files\nObservation: the import failed\n" * 1000)
    assert calls == []


_PRIVATE_READ = 'pd.read_csv("/private/data/x/prepared/private/test.csv")'


@pytest.mark.parametrize(
    ("path", "text", "how"),
    [
        # Anywhere: Python that parses, with an import or a definition at any depth.
        ("backup/train_backup", f"x = 1\rimport pandas as pd\r{_PRIVATE_READ}\r", "parses as Python source"),
        ("backup/train_backup", f"if True:\n    import pandas as pd\n    {_PRIVATE_READ}\n", "parses as Python source"),
        ("backup/train_backup", f"if True: import pandas as pd\n{_PRIVATE_READ}\n", "parses as Python source"),
        ("backup/train_backup", f"from __future__ import annotations\n{_PRIVATE_READ}\n", "parses as Python source"),
        ("backup/train_backup", f"try:\n    import pandas as pd\nexcept ImportError:\n    pd = None\n{_PRIVATE_READ}\n",
         "parses as Python source"),
        # In a folder the agent writes: calls are enough, and so is a telling line with a syntax error.
        ("code/solve", f"pd = __builtins__.__import__('pandas')\n{_PRIVATE_READ}\n",
         "parses as Python source with calls, in a folder the agent writes"),
        ("code/solve", f"[{_PRIVATE_READ}]\n", "parses as Python source with calls, in a folder the agent writes"),
        ("solve", f"print({_PRIVATE_READ})\n", "parses as Python source with calls, at the top of the run"),
        ("working/solve", f"import pandas as pd\nx = = 1\n{_PRIVATE_READ}\n",
         "Python imports or definitions, with syntax errors, in a folder the agent writes"),
        ("working/solve", f"x = = 1\r\x0cimport pandas as pd\r{_PRIVATE_READ}\r",
         "Python imports or definitions, with syntax errors, in a folder the agent writes"),
        # a bracket first: still Python
        ("scripts/peek", f"[1]\nimport pandas as pd\n{_PRIVATE_READ}\n", "parses as Python source"),
        ("code/solve", "# padding\n" * 120_000 + f"import pandas as pd\n{_PRIVATE_READ}\n",
         "Python imports or definitions, too large to parse when telling its kind, in a folder the agent writes"),
    ],
)
def test_python_without_a_telling_name_is_read_as_python_and_audited(tmp_path, ruleset, path, text, how):
    data = text.encode("utf-8")
    assert classify_content(path, data) == (K.CODE, "python", f"read as python by content ({how})")
    root = _write(tmp_path / "run", {path: data, "solve.py": b"print(1)\n"})
    report = audit_run(load_run(root), ruleset=ruleset, options=AuditOptions())
    assert "leak-read-private-data" in {f.rule_id for f in report.findings}, [f.rule_id for f in report.findings]
    assert report.verdict.kind is not VerdictKind.CLEAN


@pytest.mark.parametrize(
    ("path", "data", "how"),
    [
        ("code/config", b"exp_name: run\nagent:\n  steps: 2\n", "text"),
        ("code/notes", b"We tried to import the data; it failed.\nNext: from scratch.\n", "text"),
        ("working/state", b'{"step": 1, "metric": 0.5}\n{"step": 2, "metric": null}\n', "JSON"),
        ("working/list", b'[\n  {"a": true},\n  {"b": false}\n]\n', "JSON"),
        ("logs/transcript", b"Thought: import pandas as pd then fit\nx = = 1\nimport os\n", "text"),
        ("logs/calls", b"print(1)\nfit(model)\n", "text"),
        ("log", b"Namespace(task='x')\nEdited script:\nimport pandas as pd\nx = = 1\n", "text"),
        ("events", b'{"type": "command", "content": "ls"}\n', "JSON"),
    ],
)
def test_text_that_only_resembles_python_stays_a_log(path, data, how):
    # Outside the agent's folders, Python that does not parse (an echoed script in a transcript)
    # and calls without an import stay text; inside them, prose, YAML and JSON do.
    assert classify_content(path, data) == (K.LOG, None, f"read as a log by content ({how})")


@pytest.mark.parametrize("path", ["code/peek", "logs/peek", "peek"])
def test_python_among_control_characters_is_a_gap_even_behind_a_data_magic(tmp_path, ruleset, path):
    # PAR1 is parquet's magic; the control characters sit in a comment, where Python ignores them
    data = (f"PAR1 = 0\nimport pandas as pd\n{_PRIVATE_READ}\n#" + "\x01" * 5000 + "\n").encode()
    kind, _, note = classify_content(path, data)
    assert kind is K.OTHER and note.endswith("(control characters)"), note
    root = _write(tmp_path / "run", {path: data, "solve.py": b"print(1)\n"})
    report = audit_run(load_run(root), ruleset=ruleset, options=AuditOptions())
    assert (GapKind.FILE_UNREAD, path) in [(g.kind, g.path) for g in report.verdict.gaps]
    # control characters around text that is not Python stay data outside the agent's folders
    assert classify_content("logs/blob", b"\x01\x02 status" * 400)[0] is K.DATA


@pytest.mark.parametrize(("path", "text", "how"), [
    ("logs/peek", "print(open('/private/data/x/prepared/private/test.csv').read())\n", "$ python3 -u /home/logs/peek\n"),
    ("logs/peek", "print(open('/private/data/x/prepared/private/test.csv').read())\n" + ("#" + "x" * 100 + "\n") * 6_000,
     "$ cd /home/logs && python peek > out.txt\n"),
    ("logs/peek", "print(open('/private/data/x/prepared/private/test.csv').read())\n",
     "```python\nimport runpy\nrunpy.run_path('/home/logs/peek')\n```\n"),
    ("logs/peek", "print(open('/private/data/x/prepared/private/test.csv').read())\n",
     "$ python -X dev -W ignore peek\n"),
    ("logs/peek", "print(open('/private/data/x/prepared/private/test.csv').read())\n",
     "$ python -c \"exec(open('peek').read())\"\n"),
    ("logs/peek", "print(open('/private/data/x/prepared/private/test.csv').read())\n", "$ cat peek | python -\n"),
    ("logs/peek", "print(open('/private/data/x/prepared/private/test.csv').read())\n", "$ P=peek; python $P\n"),
    ("logs/peek", "print(open('/private/data/x/prepared/private/test.csv').read())\n",
     "```python\nimport subprocess, sys\nsubprocess.run([sys.executable, 'peek'])\n```\n"),
])
def test_a_file_the_run_executes_with_python_is_read_as_python(tmp_path, ruleset, path, text, how):
    # outside the agent's folders, call-only code and a file over the parse limit read as logs;
    # a command or code of the run that runs the file with Python makes it Python too
    files = {path: text.encode(), "solve.py": b"print(1)\n", "logs/agent.log": b"[agent] start\n"}
    quiet = audit_run(load_run(_write(tmp_path / "quiet", files)), ruleset=ruleset, options=AuditOptions())
    assert "leak-read-private-data" not in {f.rule_id for f in quiet.findings}
    files["logs/agent.log"] += how.encode()
    run = load_run(_write(tmp_path / "ran", files))
    report = audit_run(run, ruleset=ruleset, options=AuditOptions())
    assert "leak-read-private-data" in {f.rule_id for f in report.findings}
    assert any(n.path == path and n.reason.startswith("named by a command or code of the run that starts Python")
               for n in expand_run(run).notes)


def test_a_log_a_python_command_names_stays_a_log_unless_it_is_python(tmp_path, ruleset):
    # the scaffold's stdout named in a command that starts Python is prose: a log only
    files = {"output": b"epoch 1 loss 0.5\nsaved /private/data/x/prepared/private/test.csv? no\n",
             "logs/agent.log": b"$ python train.py > output\n", "train.py": b"print(1)\n"}
    run = load_run(_write(tmp_path / "run", files))
    assert not [u for u in expand_run(run).code_units if u.path == "output"]
    # a traceback holds lines of Python (an import, a library's call) but does not parse
    traceback = (b"epoch 1 loss 0.5\nTraceback (most recent call last):\n"
                 b'  File "/opt/conda/lib/python3.10/site-packages/kaggle/api/kaggle_api_extended.py", line 120, in f\n'
                 b"    self.competitions_data_download_files(competition, path=path)\n"
                 b'  File "/opt/conda/lib/python3.10/site-packages/m.py", line 3, in <module>\n'
                 b"    from transformers import AutoModel\nImportError: no\n")
    files = {"logs/output": traceback, "logs/agent.log": b"$ python code/train.py 2>&1 | tee /home/logs/output\n",
             "code/train.py": b"print(1)\n"}
    run = load_run(_write(tmp_path / "traceback", files))
    assert not [u for u in expand_run(run).code_units if u.path == "logs/output"]
    report = audit_run(run, ruleset=ruleset, options=AuditOptions())
    assert not [f for f in report.findings if any(e.span.path == "logs/output" for e in f.evidence)]
