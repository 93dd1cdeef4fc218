"""Tests for the log adapters in ``audit.logs``: detection, events, and spans that round-trip."""

from __future__ import annotations

import ast
import json
import random
from pathlib import Path

import pytest

from audit.logs import ADAPTERS, detect_log_format, read_log, read_log_events
from audit.logs.common import SpanMaker, guess_code_language, json_member_regions
from audit.model import Span
from audit.run import ArtifactKind, load_run
from audit.units import LogEventKind as K
from tests.conftest import shared_path

LOGS = Path(__file__).resolve().parents[1] / "fixtures" / "runs_loading" / "logs"

#: fixture file -> the adapter that must claim it
FIXTURE_FORMATS = {
    "transcript.txt": "text",
    "trajectory.jsonl": "jsonl",
    "journal.json": "aide",
    "events.json": "openhands",
    "agent.log": "steplog",
    "mlab.log": "steplog",
    "run.log": "runlog",
    "run_message.txt": "assistants",
    "run_summary.json": "assistants",
}


def _events(name: str):
    text = (LOGS / name).read_text(encoding="utf-8")
    return text, read_log_events(f"logs/{name}", text)


def _json_string(raw: str) -> str:
    return json.loads('"' + raw + '"')


def assert_round_trip(log_format: str, text: str, event) -> None:
    """The event's span holds its text: verbatim, or as the JSON/Python literal it was decoded from."""
    span = event.span
    raw = text[span.start_byte : span.end_byte]
    assert Span.from_offsets(text, span.path, span.start_byte, span.end_byte) == span
    if log_format in ("text", "steplog", "runlog"):
        if event.kind is K.CODE and raw.count("\n") and raw != event.text:
            # A ``>>>`` block: the prompts of continuation lines are dropped from the text.
            assert [line.lstrip(". ") for line in raw.split("\n")] == [line.lstrip() for line in event.text.split("\n")]
        else:
            assert raw == event.text
    elif log_format in ("aide", "openhands"):
        if raw == event.text:
            return
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
    else:  # pragma: no cover - a new adapter must say how its spans round-trip
        raise AssertionError(f"no round-trip rule for {log_format}")


@pytest.mark.parametrize("name", sorted(FIXTURE_FORMATS))
def test_fixture_detection_and_round_trip(name):
    text = (LOGS / name).read_text(encoding="utf-8")
    assert detect_log_format(f"logs/{name}", text) == FIXTURE_FORMATS[name]
    log_format, events = read_log(f"logs/{name}", text)
    assert log_format == FIXTURE_FORMATS[name]
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
    with caplog.at_level("INFO", logger="audit.logs.jsonl"):
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
        (K.TOOL_CALL, None, "assistant", 6, '{"query": "titanic"}'),
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
        (K.TOOL_CALL, None, "agent", '{\n      "url": "https://example.org"\n    }'),
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
    ("path", "text"),
    [
        ("logs/deep.json", "[" * 50_000 + "]" * 50_000),
        ("logs/journal.json", '[{"code": "x", "plan": 1'),
        ("logs/events.json", '{"history": [{"action": "run", "args": {}}], "x": '),
        ("logs/x.jsonl", "\n\n{broken\n"),
        ("logs/bin.log", "abc\x00def"),
        ("logs/empty.log", "  \n"),
    ],
)
def test_hostile_logs_never_raise(path, text):
    log_format, events = read_log(path, text)
    assert log_format in (None, "text", "jsonl")
    for event in events:
        assert text[event.span.start_byte : event.span.end_byte] == event.text or log_format == "jsonl"


def test_binary_and_empty_have_no_format():
    assert detect_log_format("a.log", "ab\x00c") is None
    assert read_log_events("a.log", "") == []


def test_unknown_format_name():
    with pytest.raises(KeyError, match="unknown log format 'nope'; known: aide, openhands"):
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
