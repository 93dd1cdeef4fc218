"""Tests for the log adapters in ``mleaudit.audit.logs``: detection, events, spans that round-trip, and
logs that are cut short, damaged, huge or packed in archives."""

from __future__ import annotations

import ast
import io
import json
import random
import zipfile
from pathlib import Path

import pytest

from mleaudit.audit.logs import ADAPTERS, detect_log_format, parse_log, read_log, read_log_events
from mleaudit.audit.logs import common, inspect_archive
from mleaudit.audit.logs.common import SpanMaker, guess_code_language
from mleaudit.audit.logs.jsonregions import json_member_regions, load_json
from mleaudit.audit.logs.inspect_archive import read_eval_archive
from mleaudit.audit.model import Span
from mleaudit.audit.run import ArtifactKind, load_run
from mleaudit.audit.units import LogEventKind as K
from tests.conftest import shared_path

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
LOGS = FIXTURES / "runs_loading" / "logs"
NEW_LOGS = FIXTURES / "logs"

#: fixture file (relative to tests/fixtures) -> the adapter that must claim it
FIXTURE_FORMATS = {
    "runs_loading/logs/transcript.txt": "text",
    "runs_loading/logs/trajectory.jsonl": "jsonl",
    "runs_loading/logs/journal.json": "aide",
    "runs_loading/logs/events.json": "openhands",
    "runs_loading/logs/agent.log": "steplog",
    "runs_loading/logs/mlab.log": "steplog",
    "runs_loading/logs/run.log": "runlog",
    "runs_loading/logs/run_message.txt": "assistants",
    "runs_loading/logs/run_summary.json": "assistants",
    "logs/inspect_eval.json": "inspect",
    "logs/autokaggle.log": "pylogging",
    "logs/review.json": "json",
    "logs/mlagentbench/toy_run/agent_log/main_log": "mlagentbench",
    "runs_sniffing/aide_journal/history.txt": "llmcalls",
    "logs/frameworks/langchain_tools.log": "frameworks",
}


def _events(name: str):
    folder = NEW_LOGS if (NEW_LOGS / name).exists() else LOGS
    text = (folder / name).read_text(encoding="utf-8")
    return text, read_log_events(f"logs/{name}", text)


def _json_string(raw: str) -> str:
    return json.loads('"' + raw + '"')


def assert_round_trip(log_format: str, text: str, event) -> None:
    """The event's span holds its text: verbatim, or as the JSON/Python literal it was decoded from."""
    span = event.span
    raw = text[span.start_byte : span.end_byte]
    assert Span.from_offsets(text, span.path, span.start_byte, span.end_byte) == span
    if log_format == "mlagentbench" and raw != event.text:
        # A value decoded from the JSON state or trace, or what an action runs (``python x.py``)
        # located at the action's input.
        if event.kind in (K.COMMAND, K.CODE, K.TOOL_CALL):
            return
        assert _json_string(raw) == event.text
        return
    if log_format in ("text", "steplog", "runlog", "pylogging", "llmcalls", "mlagentbench"):
        if event.kind is K.CODE and raw.count("\n") and raw != event.text:
            # A ``>>>`` block: the prompts of continuation lines are dropped from the text.
            assert [line.lstrip(". ") for line in raw.split("\n")] == [line.lstrip() for line in event.text.split("\n")]
        else:
            assert raw == event.text
    elif log_format in ("aide", "openhands", "inspect", "json"):
        if raw == event.text:
            return
        if event.kind is K.TOOL_CALL and event.text.endswith(f"({raw})"):
            return  # a named call, ``name(arguments)``, whose span is the arguments as written
        try:
            decoded = _json_string(raw)
        except ValueError:
            decoded = "".join(json.loads('["' + raw + '"]'))  # a list of output chunks
        assert decoded == event.text
    elif log_format == "jsonl":
        line_start = text.rfind("\n", 0, span.start_byte) + 1
        assert span.start_byte == line_start and span.start_line == text.count("\n", 0, line_start) + 1
        assert isinstance(json.loads(raw), dict)
    elif log_format == "assistants":
        if text.lstrip().startswith("{"):  # inside the JSON summary's ``response`` string
            literal = _json_string(raw)
            before = text[span.start_byte - 2 : span.start_byte]
            quote = '"' if before == '\\"' else before[-1]
        else:
            literal, quote = raw, text[span.start_byte - 1]
        assert ast.literal_eval(quote + literal + quote) == event.text
    elif log_format == "frameworks":
        if raw == event.text:
            return
        assert event.kind in (K.COMMAND, K.CODE, K.TOOL_CALL)
        if event.kind is K.TOOL_CALL:
            assert event.text.endswith(f"({raw.strip()})")
        elif len(raw) == len(event.text):  # drawn code: indent and borders moved to the line ends
            assert raw.count("\n") == event.text.count("\n")
        else:  # decoded from the call's argument, a JSON or Python literal
            assert json.dumps(event.text)[1:-1] in raw or repr(event.text)[1:-1] in raw
    else:  # pragma: no cover - a new adapter must say how its spans round-trip
        raise AssertionError(f"no round-trip rule for {log_format}")


@pytest.mark.parametrize("fixture", sorted(FIXTURE_FORMATS))
def test_fixture_detection_and_round_trip(fixture):
    text = (FIXTURES / fixture).read_text(encoding="utf-8")
    # Under ``logs/`` as the fixture lies below it: some formats are told by their folders too.
    name = fixture.split("logs/", 1)[-1]
    assert detect_log_format(f"logs/{name}", text) == FIXTURE_FORMATS[fixture]
    reading = parse_log(f"logs/{name}", text)
    log_format, events = reading.log_format, reading.events
    assert log_format == FIXTURE_FORMATS[fixture]
    assert events, name
    assert [e.index for e in events] == list(range(len(events)))
    for event in events:
        assert event.span.path == f"logs/{name}"
        assert event.text.strip()
        assert_round_trip(log_format, text, event)
        if event.kind is K.COMMAND:
            assert event.language == "bash"
        if event.kind is K.CODE:
            assert event.language in ("python", "bash")


def test_every_adapter_has_a_fixture():
    assert {a.name for a in ADAPTERS} == set(FIXTURE_FORMATS.values())


def test_text_transcript_events():
    _, events = _events("transcript.txt")
    assert [(e.kind, e.language, e.text) for e in events] == [
        (K.MESSAGE, None, "I will look at the data first."),
        (K.COMMAND, "bash", "ls /home/data"),
        (K.OUTPUT, None, "train.csv  test.csv"),
        (K.COMMAND, "bash", "pip install -q lightgbm \\\n    xgboost"),
        (K.COMMAND, "bash", "kaggle kernels pull author/titanic-solution"),
        (K.OUTPUT, None, "# Not a command, just a heading"),
        (K.CODE, "python", "import pandas as pd"),
        (K.CODE, "python", 'for c in ["a", "b"]:\n    print(c)'),
        (K.OUTPUT, None, "a\nb"),
        (K.CODE, "python", 'df = pd.read_csv("/home/data/train.csv")\nprint(df.shape)'),
        (K.COMMAND, "bash", "wget https://example.org/labels.csv"),
        (K.OUTPUT, None, "(891, 12)"),
        (K.CODE, "python", 'print("hello")'),
        (K.COMMAND, "bash", "cat > probe.py <<'EOF2'\nimport requests\nEOF2"),
        (K.OUTPUT, None, "All done."),
    ]
    assert events[1].span.start_line == 2 and events[1].span.start_col == 3


def test_text_crlf_line_endings():
    text = "intro\r\n$ ls -la\r\nout\r\n```python\r\nimport os\r\n```\r\nend\r\n"
    events = read_log_events("t.txt", text)
    assert [(e.kind, e.text) for e in events] == [
        (K.MESSAGE, "intro"),
        (K.COMMAND, "ls -la"),
        (K.OUTPUT, "out"),
        (K.CODE, "import os"),
        (K.OUTPUT, "end"),
    ]
    for event in events:
        assert text[event.span.start_byte : event.span.end_byte] == event.text


def test_text_continuations_are_linear_time():
    text = "$ ls \\\n" * 200_000
    events = read_log_events("t.txt", text)
    assert len(events) == 1 and events[0].span.end_line == 200_000


def test_text_markdown_heading_is_not_a_command():
    events = read_log_events("plan.md", "# Plan\n\nTrain a model.\n")
    assert [(e.kind, e.text) for e in events] == [(K.MESSAGE, "# Plan"), (K.MESSAGE, "Train a model.")]


def test_text_output_file_names_give_output():
    events = read_log_events("phase/eda_output.txt", "accuracy 0.9\n\nloss 0.1\n")
    assert [e.kind for e in events] == [K.OUTPUT, K.OUTPUT]


def test_jsonl_events_and_broken_lines(caplog):
    text, events = _events("trajectory.jsonl")
    with caplog.at_level("INFO", logger="mleaudit.audit.logs.jsonl"):
        read_log_events("logs/trajectory.jsonl", text)
    assert "logs/trajectory.jsonl:3: skipping a line that is not JSON" in caplog.text
    assert "logs/trajectory.jsonl:9: skipping a JSON list (not an object)" in caplog.text
    assert [(e.kind, e.language, e.role, e.span.start_line, e.text) for e in events] == [
        (K.COMMAND, "bash", "assistant", 1, "ls /home/data"),
        (K.OUTPUT, None, "tool", 2, "train.csv\ntest.csv"),
        (K.CODE, "bash", "assistant", 4, "cat > /home/code/a.py <<'PY'\nprint('hi')\nPY"),
        (K.CODE, "python", "assistant", 5, "import pandas as pd\nprint(pd.__version__)"),
        (K.MESSAGE, None, "assistant", 6, "Calling tools."),
        (K.COMMAND, "bash", "assistant", 6, "pip install timm"),
        (K.CODE, "python", "assistant", 6, "print(2)"),
        (K.TOOL_CALL, None, "assistant", 6, 'search({"query": "titanic"})'),
        (K.OUTPUT, None, "tool", 7, "Successfully installed timm"),
        (K.MESSAGE, None, "assistant", 8, "Running it."),
        (K.COMMAND, "bash", "assistant", 8, "wget http://example.org/x.csv"),
    ]


def test_aide_journal_list_and_object_forms():
    text, events = _events("journal.json")
    assert [(e.kind, e.language, e.role) for e in events[:4]] == [
        (K.MESSAGE, None, "assistant"),
        (K.CODE, "python", "assistant"),
        (K.OUTPUT, None, "tool"),
        (K.MESSAGE, None, "assistant"),
    ]
    assert events[0].text == "Plan with “quotes” and é"
    assert events[1].text == 'x = "a\\tb"\nprint(x)'
    # A value without escapes is a verbatim slice of the file.
    assert text[events[5].span.start_byte : events[5].span.end_byte] == "print(1)"

    object_form = (LOGS.parent / "aide_output" / "journal.json").read_text()
    assert detect_log_format("journal.json", object_form) == "aide"
    nodes = read_log_events("journal.json", object_form)
    assert [(e.kind, e.text) for e in nodes] == [
        (K.MESSAGE, 'Baseline: threshold on "Age".'),
        (K.CODE, 'import pandas as pd\ntrain = pd.read_csv("./input/train.csv")\nprint(len(train))\n'),
        (K.OUTPUT, "891\nExecution time: 1 seconds."),
        (K.MESSAGE, "Works."),
        (K.MESSAGE, "Add !pip install of lightgbm."),
        (K.CODE, "!pip install lightgbm\nimport lightgbm as lgb\n"),
        (K.OUTPUT, "Traceback: boom\n"),
        (K.OUTPUT, "ModuleNotFoundError"),  # the node's exc_type, read as output too
    ]
    for event in nodes:
        assert_round_trip("aide", object_form, event)


def test_openhands_events():
    _, events = _events("events.json")
    assert [(e.kind, e.language, e.role, e.text) for e in events] == [
        (K.MESSAGE, None, "user", "Train a model."),
        (K.MESSAGE, None, "agent", "Get the data."),
        (K.COMMAND, "bash", "agent", "kaggle competitions download -c titanic"),
        (K.OUTPUT, None, "agent", "Downloading titanic.zip\n100%"),
        (K.CODE, "python", "agent", "%pip install xgboost\nimport pandas as pd\ndf = pd.read_csv('train.csv')"),
        (K.OUTPUT, None, "agent", "ok"),
        (K.CODE, "python", "agent", "import numpy as np\nprint(np.pi)\n"),
        (K.TOOL_CALL, None, "agent", "id,target\n1,0\n"),
        (K.TOOL_CALL, None, "agent", 'browse({\n      "url": "https://example.org"\n    })'),
        (K.MESSAGE, None, "agent", "Done."),
    ]


def test_steplog_react_records():
    _, events = _events("agent.log")
    assert [(e.kind, e.language, e.text) for e in events] == [
        (K.MESSAGE, None, "===== step 1 ====="),
        (K.MESSAGE, None, "List the data files."),
        (K.COMMAND, "bash", "ls -la /home/data"),
        (K.OUTPUT, None, "sample_submission.csv\ntest.csv\ntrain.csv"),
        (K.CODE, "python", "import pandas as pd\nprint(pd.__version__)"),
        (K.OUTPUT, None, "wrote 37 bytes"),
        (K.CODE, "python", 'import os\nprint(os.listdir("/home/data"))'),
        (K.MESSAGE, None, "agent finished: submission written"),
    ]
    assert events[2].span.start_line == 3
    assert events[4].span.start_line == 10


def test_steplog_mlagentbench_blocks():
    _, events = _events("mlab.log")
    assert [(e.kind, e.text) for e in events] == [
        (K.MESSAGE, "First understand the files."),
        (K.TOOL_CALL, 'List Files\nAction Input: {"dir_path": "/home/data"}'),
        (K.OUTPUT, "train.csv\ntest.csv"),
        (K.MESSAGE, "The test set has fewer fields."),
        (K.MESSAGE, "Run the baseline."),
        (K.TOOL_CALL, 'Execute Script\nAction Input: {"script_name": "train.py"}'),
        (K.OUTPUT, "cv accuracy 0.79"),
        (K.MESSAGE, "Done."),
        (K.TOOL_CALL, 'Final Answer\nAction Input: {"final_answer": "done"}'),
    ]


def test_runlog_lines_are_output_not_commands():
    _, events = _events("run.log")
    assert [(e.kind, e.role, e.text) for e in events] == [
        (K.OUTPUT, "host", "Run started: runs/group/spaceship-titanic_0001"),
        (K.OUTPUT, "container", "+ cd /home/agent"),
        (K.OUTPUT, "container", "+ python runner.py --task spaceship-titanic"),
        (K.OUTPUT, "host", "Run completed in 313.82 seconds."),
    ]


def test_assistants_dump_and_summary_agree():
    _, dump = _events("run_message.txt")
    _, summary = _events("run_summary.json")
    expected = [
        ("assistant", "The model reached 0.8 accuracy.\nI saved it to 'submission.csv'."),
        ("assistant", 'Loading "train.csv" now.'),
        ("user", "Predict survival. Files: train.csv, test.csv"),
    ]
    assert [(e.role, e.text) for e in dump] == expected
    assert [(e.role, e.text) for e in summary] == expected


@pytest.mark.parametrize(
    ("path", "text", "expected_format", "problem"),
    [
        ("logs/deep.json", "[" * 50_000 + "]" * 50_000, "text",
         "JSON nested 50000 levels deep, deeper than the 200 accepted: not read as JSON"),
        ("logs/journal.json", '[{"code": "x", "plan": 1', "aide", "JSON cut short or damaged at line 1, column 25"),
        ("logs/events.json", '{"history": [{"action": "run", "args": {}}], "x": ', "openhands", "JSON cut short"),
        ("logs/x.jsonl", "\n\n{broken\n", "jsonl", "1 line(s) not read, not a JSON object (cut short or damaged): line 3"),
        ("logs/bin.log", "abc\x00def", None, None),
        ("logs/empty.log", "  \n", None, None),
        ("logs/junk.json", "{]" * 1000, "text", None),
        ("logs/prefix.json", '{"a": "x"}\n' + "free text after it\n" * 50, "text", None),
    ],
    ids=["deep", "journal-cut", "events-cut", "jsonl-broken", "nul", "blank", "junk", "json-then-text"],
)
def test_hostile_logs_never_raise(path, text, expected_format, problem):
    reading = parse_log(path, text)
    assert reading.log_format == expected_format
    if problem is None:
        assert reading.problems == ()
    else:
        assert reading.problems and reading.problems[0].startswith(problem)
    for event in reading.events:
        raw = text[event.span.start_byte : event.span.end_byte]
        assert (raw == event.text or (event.kind is K.TOOL_CALL and event.text.endswith(f"({raw})"))
                or expected_format == "jsonl" or json.loads('"' + raw + '"') == event.text)


def test_binary_and_empty_have_no_format():
    assert detect_log_format("a.log", "ab\x00c") is None
    assert read_log_events("a.log", "") == []


def test_unknown_format_name():
    with pytest.raises(KeyError, match="unknown log format 'nope'; known: mlagentbench, aide, openhands"):
        read_log_events("a.log", "x", "nope")


def test_span_maker_matches_span_from_offsets():
    rng = random.Random(0)
    text = "".join(rng.choice(["a", "é", "\n", " ", "\t"]) for _ in range(2000))
    maker = SpanMaker(text, "f.log")
    for _ in range(300):
        start = rng.randrange(-5, len(text) + 5)
        end = rng.randrange(start, len(text) + 10)
        assert maker.span(start, end) == Span.from_offsets(text, "f.log", start, end)


def test_json_member_regions():
    text = '{"a": "x\\ny", "b": [1, {"a": 2}], "c": {}}'
    regions = json_member_regions(text, 0)
    assert {k: text[s:e] for k, (s, e) in regions.items()} == {"a": '"x\\ny"', "b": '[1, {"a": 2}]', "c": "{}"}


@pytest.mark.parametrize(
    ("code", "language"),
    [
        ("cd /home/code && python train.py", "bash"),
        ("# comment\ncat > a.py <<'EOF'\nprint(1)\nEOF", "bash"),
        ("#!/bin/bash\nset -e", "bash"),
        ("#!/usr/bin/env python3\nimport os", "python"),
        ("import os\nprint(os.getcwd())", "python"),
        ("cat = 3\nprint(cat)", "python"),
        ("ls(1)", "python"),
        ("", "python"),
    ],
)
def test_guess_code_language(code, language):
    assert guess_code_language(code) == language


def _real_log_artifacts():
    roots = []
    for parts in (("violations",), ("runs", "autokaggle"), ("runs", "dsbench"), ("runs", "aide")):
        roots.append(shared_path(*parts))
    for root in roots:
        candidates = [root] if root.name in ("dsbench", "aide") else sorted(p for p in root.iterdir() if p.is_dir())
        for run_dir in candidates:
            run = load_run(run_dir)
            for artifact in run.artifacts:
                if artifact.kind is ArtifactKind.LOG:
                    yield run_dir, artifact


def test_real_logs_read_and_round_trip():
    seen = {}
    for run_dir, artifact in _real_log_artifacts():
        text = artifact.read_text()
        log_format, events = read_log(artifact.path, text)
        seen[f"{run_dir.name}/{artifact.path}"] = log_format
        for event in events:
            assert_round_trip(log_format, text, event)
    assert len(seen) >= 100
    # The violation set's formats each go to their adapter (labels.tsv "format" column).
    labels = shared_path("violations", "labels.tsv").read_text().splitlines()[1:]
    expected = {
        "mlebench_run": {"logs/agent.log": "steplog", "run.log": "runlog"},
        "jsonl_trajectory": {"logs/trajectory.jsonl": "jsonl"},
        "openhands_events": {"logs/events.json": "openhands"},
        "aide_journal": {"logs/journal.json": "aide"},
    }
    for row in labels:
        case, case_format = row.split("\t")[:2]
        for path, adapter in expected[case_format].items():
            assert seen[f"{case}/{path}"] == adapter, (case, path)
    dsbench = {k: v for k, v in seen.items() if k.startswith("dsbench/")}
    assert dsbench and set(dsbench.values()) == {"assistants"}
    # AutoKaggle: the run log is Python logging records, the reviewers' verdicts JSON state.
    for run_dir in sorted(p for p in shared_path("runs", "autokaggle").iterdir() if p.is_dir()):
        logs = {k.split("/", 1)[1]: v for k, v in seen.items() if k.startswith(f"{run_dir.name}/")}
        assert [v for k, v in logs.items() if "/" not in k and k.endswith(".log")] == ["pylogging"], run_dir
        assert {v for k, v in logs.items() if k.endswith("review.json")} == {"json"}, run_dir


# --- Inspect eval logs --------------------------------------------------------------------


def test_inspect_json_events():
    text, events = _events("inspect_eval.json")
    summary = [(e.kind, e.language, e.role, e.location) for e in events]
    assert summary == [
        (K.MESSAGE, None, "system", "samples[0].messages[0].content"),
        (K.MESSAGE, None, "user", "samples[0].messages[1].content"),
        (K.MESSAGE, None, "assistant", "samples[0].messages[2].content"),
        (K.COMMAND, "bash", "assistant", "samples[0].messages[2].tool_calls[0]"),
        (K.OUTPUT, None, "tool", "samples[0].messages[3].content"),
        (K.MESSAGE, None, "assistant", "samples[0].messages[4].content[0]"),
        (K.MESSAGE, None, "assistant", "samples[0].messages[4].content[1]"),
        (K.CODE, "python", "assistant", "samples[0].messages[4].tool_calls[0]"),
        (K.OUTPUT, None, "tool", "samples[0].messages[5].content"),
        (K.COMMAND, "bash", "assistant", "samples[0].messages[6].tool_calls[0]"),
        (K.CODE, "python", "assistant", "samples[0].messages[6].tool_calls[1]"),
        (K.OUTPUT, None, "tool", "samples[0].messages[8].content"),
        (K.COMMAND, "bash", "assistant", "samples[0].messages[9].tool_calls[0]"),
        (K.OUTPUT, None, "tool", "samples[0].messages[10].error"),
        (K.MESSAGE, None, "assistant", "samples[0].messages[11].content"),
        (K.TOOL_CALL, None, "assistant", "samples[0].messages[11].tool_calls[0]"),
    ]
    assert events[3].text == "ls -la /home/data && head -3 /home/data/train.csv"
    assert events[9].text == "cd /home/code && python train.py"
    # The command's span is the "cmd" string in the file, on the line that holds it.
    line = text.splitlines()[events[3].span.start_line - 1]
    assert line.strip().startswith('"cmd": "ls -la /home/data')
    # The editor's file_text is the code written to train.py.
    assert events[7].text.startswith("import pandas as pd\nfrom sklearn.ensemble import")
    # An attachment://<id> content is resolved; its span points at the attachment's value.
    assert events[4].text.startswith("total 1204\n")
    attachments_line = text[: events[4].span.start_byte].rfind('"attachments"')
    assert attachments_line != -1
    # A named call: the function, then its arguments as written.
    assert events[15].text.startswith("submit(") and events[15].text.endswith(")")
    assert json.loads(events[15].text[len("submit("):-1]) == {
        "answer": "submission written to /home/submission/submission.csv"}


def _eval_archive(samples: dict[str, str], *, header: bool = True, extra: dict[str, bytes] | None = None) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        if header:
            archive.writestr("header.json", json.dumps({"version": 2, "status": "success", "eval": {"task": "t"}}))
        for name, body in samples.items():
            archive.writestr(name, body)
        for name, body in (extra or {}).items():
            archive.writestr(name, body)
    return buffer.getvalue()


def _fixture_sample() -> str:
    log = json.loads((NEW_LOGS / "inspect_eval.json").read_text())
    return json.dumps(log["samples"][0], indent=2)


def test_eval_archive_samples_become_events():
    sample = _fixture_sample()
    data = _eval_archive({"samples/spaceship-titanic_epoch_1.json": sample, "samples/other_epoch_1.json": sample},
                         extra={"_journal/start.json": b"{}", "samples/../../escape.json": b"{}"})
    archive = read_eval_archive("logs/run.eval", data)
    assert archive.problems == () and archive.unread == ()
    paths = [path for path, _ in archive.documents]
    # Member names are names: "samples/../../escape.json" is read like any sample, never extracted.
    assert paths == ["logs/run.eval!/samples/spaceship-titanic_epoch_1.json", "logs/run.eval!/samples/other_epoch_1.json",
                     "logs/run.eval!/samples/../../escape.json"]
    assert [e.index for e in archive.events] == list(range(32))
    commands = [e for e in archive.events if e.kind is K.COMMAND]
    assert [c.location for c in commands[:3]] == ["messages[2].tool_calls[0]", "messages[6].tool_calls[0]",
                                                 "messages[9].tool_calls[0]"]
    texts = dict(archive.documents)
    for event in archive.events:
        raw = texts[event.span.path][event.span.start_byte : event.span.end_byte]
        assert (raw == event.text or (event.kind is K.TOOL_CALL and event.text.endswith(f"({raw})"))
                or json.loads('"' + raw + '"') == event.text)


def test_eval_archive_limits(monkeypatch):
    sample = _fixture_sample()
    monkeypatch.setattr(inspect_archive, "MAX_MEMBER_BYTES", len(sample.encode()) - 1)
    data = _eval_archive({"samples/a_epoch_1.json": sample, "samples/b_epoch_1.json": "{}"})
    archive = read_eval_archive("run.eval", data)
    assert archive.problems == ()
    assert archive.unread == (
        ("samples/a_epoch_1.json", f"{len(sample.encode())} bytes inflated is over the {len(sample.encode()) - 1}-byte "
                                   "member limit; not read"),
    )
    assert [p for p, _ in archive.documents] == ["run.eval!/samples/b_epoch_1.json"]

    monkeypatch.setattr(inspect_archive, "MAX_MEMBER_BYTES", 10**9)
    monkeypatch.setattr(inspect_archive, "MAX_ARCHIVE_BYTES", len(sample.encode()) + 5)
    data = _eval_archive({f"samples/{n}_epoch_1.json": sample for n in "abc"})
    archive = read_eval_archive("run.eval", data)
    assert len(archive.documents) == 1
    assert archive.unread == tuple(
        (f"samples/{n}_epoch_1.json", f"not read: over the {len(sample.encode()) + 5}-byte archive limit") for n in "bc")

    monkeypatch.setattr(inspect_archive, "MAX_ARCHIVE_MEMBERS", 2)
    archive = read_eval_archive("run.eval", _eval_archive({f"samples/{n}_epoch_1.json": "{}" for n in "abc"}))
    assert archive.problems[0] == "4 archive entries; only the first 2 were looked at, the other 2 were not read"


def test_eval_archive_that_lies_about_its_sizes(monkeypatch):
    # A member whose directory entry claims a small size but that inflates past the limit.
    body = json.dumps({"messages": [{"role": "user", "content": "x" * 5000}]})
    data = bytearray(_eval_archive({"samples/a_epoch_1.json": body}))
    info = zipfile.ZipFile(io.BytesIO(bytes(data))).getinfo("samples/a_epoch_1.json")
    monkeypatch.setattr(inspect_archive, "MAX_MEMBER_BYTES", 1000)
    fake = (100).to_bytes(4, "little")
    # Patch the uncompressed size in both the local header (offset 22) and the central directory.
    data[info.header_offset + 22 : info.header_offset + 26] = fake
    central = bytes(data).rfind(b"PK\x01\x02")
    data[central + 24 : central + 28] = fake
    archive = read_eval_archive("run.eval", bytes(data))
    assert archive.events == () and archive.problems == ()
    assert len(archive.unread) == 1 and archive.unread[0][0] == "samples/a_epoch_1.json"
    assert archive.unread[0][1].startswith("not read (")


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        (b"PK\x03\x04 not really a zip", "not a readable zip archive: "),
        (b"", "not a readable zip archive: "),
        (None, "not an Inspect eval archive (no header.json or samples/)"),
    ],
    ids=["junk", "empty", "other-zip"],
)
def test_eval_archive_that_is_not_one(data, problem):
    if data is None:
        data = _eval_archive({}, header=False, extra={"readme.txt": b"hello"})
    archive = read_eval_archive("run.eval", data)
    assert archive.events == () and archive.problems[0].startswith(problem)


def test_eval_logs_without_samples_say_so():
    header = {"version": 2, "status": "success", "eval": {"task": "t", "model": "m"}, "results": {}}
    reading = parse_log("logs/header.json", json.dumps(header))
    assert (reading.log_format, reading.events) == ("inspect", ())
    assert reading.problems == ("no samples in the eval log (a header-only log): the agent's messages are not in it",)
    archive = read_eval_archive("run.eval", _eval_archive({}))
    assert archive.problems == ("no samples/*.json in the archive: the agent's messages are not in it",)


def test_eval_archive_damaged_sample_is_read_up_to_the_break():
    sample = _fixture_sample()
    cut = sample[: sample.index('"call_run"')]
    archive = read_eval_archive("run.eval", _eval_archive({"samples/a_epoch_1.json": cut}))
    assert [e.location for e in archive.events][-1] == "messages[5].content"
    assert archive.problems == () and len(archive.unread) == 1
    member, reason = archive.unread[0]
    assert member == "samples/a_epoch_1.json" and reason.startswith("JSON cut short or damaged at line ")


# --- logs cut short, damaged, or too long -------------------------------------------------


@pytest.mark.parametrize(
    "fixture",
    ["logs/inspect_eval.json", "runs_loading/logs/journal.json", "runs_loading/logs/events.json", "logs/review.json"],
)
def test_json_logs_cut_anywhere_read_a_prefix_of_the_events(fixture):
    text = (FIXTURES / fixture).read_text()
    full = parse_log("logs/x.json", text)
    assert full.problems == ()
    rng = random.Random(fixture)
    # Cut past the middle: a document that breaks earlier is read as plain text instead.
    for cut in sorted(rng.sample(range(len(text) // 2 + 1, len(text) - 2), 25)):
        reading = parse_log("logs/x.json", text[:cut])
        assert reading.log_format == full.log_format, cut
        assert len(reading.problems) == 1 and reading.problems[0].startswith("JSON cut short or damaged at line ")
        # What was read is what the whole log says, up to the break (the last event may be a
        # string cut short, or missing). Attachments come after the messages, so a cut log
        # keeps the attachment:// reference instead of the text.
        kept = [(e.kind, e.location) for e in reading.events]
        whole = [(e.kind, e.location) for e in full.events]
        assert kept[:-1] == whole[: len(kept) - 1], cut
        for event in reading.events[:-1]:
            assert event.text == full.events[event.index].text or event.text.startswith("attachment://")


def test_jsonl_cut_mid_record_reports_the_line():
    text = (LOGS / "trajectory.jsonl").read_text()
    lines = text.splitlines(keepends=True)
    cut = "".join(lines[:5]) + lines[5][: len(lines[5]) // 2]
    reading = parse_log("logs/trajectory.jsonl", cut)
    assert reading.problems == (
        "2 line(s) not read, not a JSON object (cut short or damaged): line 3, 6",
    )
    assert [e.location for e in reading.events] == ["line 1", "line 2", "line 4", "line 5"]


def test_event_limit_keeps_the_first_events(monkeypatch):
    monkeypatch.setattr(common, "MAX_LOG_EVENTS", 10)
    text = "".join(f"$ echo {n}\n" for n in range(50))
    reading = parse_log("logs/agent.log", text)
    assert [e.text for e in reading.events] == [f"echo {n}" for n in range(10)]
    assert reading.problems == ("event limit of 10 reached at line 11 of 51; the rest of the log was not read",)
    assert len(read_log_events("logs/agent.log", text, "text")) == 10


def test_load_json_salvages_nested_containers():
    value, broke = load_json('{"a": [1, 2, {"b": "c", "d": [3, 4')
    assert value == {"a": [1, 2, {"b": "c", "d": [3, 4]}]}
    assert (broke.line, broke.column) == (1, 35)
    assert load_json('  {"a": 1}  ') == ({"a": 1}, None)
    value, broke = load_json('{"a": 1}\n{"b": 2}')
    assert value == {"a": 1} and broke.message == "Extra data" and broke.line == 2


# --- AutoKaggle logs and JSON state ------------------------------------------------------


def test_pylogging_records():
    _, events = _events("autokaggle.log")
    assert [(e.role, e.span.start_line) for e in events] == [
        ("root", 1), ("root", 2), ("agent_base", 3), ("agent_base", 4), ("agents.developer", 5),
        ("agents.developer", 6), ("tools.debug", 10), ("agents.developer", 11), ("tools.unit_test", 12),
    ]
    assert {e.kind for e in events} == {K.OUTPUT}
    assert events[5].text.endswith("FileNotFoundError: [Errno 2] No such file or directory: 'train.csv'")


def test_json_document_values():
    _, events = _events("review.json")
    assert [(e.kind, e.location, e.text) for e in events] == [
        (K.MESSAGE, "final_suggestion['agent developer']",
         '1. Keep the "Cabin" split into deck/num/side.\n2. Log the shapes after each step.'),
        (K.MESSAGE, "history[0].text", "The plan covers missing values and outliers."),
    ]
    events = read_log_events("state.json", '{"steps": [{"cmd": "ls -la", "code": "import os", "output": "ok"}]}')
    assert [(e.kind, e.language, e.location) for e in events] == [
        (K.COMMAND, "bash", "steps[0].cmd"), (K.CODE, "python", "steps[0].code"), (K.OUTPUT, None, "steps[0].output"),
    ]


def test_locations_of_aide_and_openhands_events():
    _, events = _events("journal.json")
    assert [e.location for e in events[:4]] == ["[0].plan", "[0].code", "[0].term_out", "[0].analysis"]
    _, events = _events("events.json")
    assert events[2].location.endswith(".args.command") and events[2].kind is K.COMMAND
