"""Framework console transcripts: LangChain, smolagents, AutoGen, CrewAI and scaffold printouts."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from mleaudit.audit.logs import detect_log_format, parse_log
from mleaudit.audit.logs.frameworks import NAME, read_literal
from mleaudit.audit.units import Actor, LogEventKind

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "logs" / "frameworks"


def _read(name: str):
    text = (FIXTURES / name).read_text(encoding="utf-8")
    reading = parse_log(f"logs/{name}", text)
    assert reading.log_format == NAME
    return text, reading.events


def _of(events, kind):
    return [event for event in events if event.kind is kind]


def _spans_hold_text(text, events):
    """Each event's span is its text, or (code drawn with an indent) a slice of the same length and lines."""
    for event in events:
        piece = text[event.span.start_byte:event.span.end_byte]
        if piece != event.text:
            assert event.kind in (LogEventKind.CODE, LogEventKind.COMMAND, LogEventKind.TOOL_CALL), event


def test_langchain_tool_calls():
    text, events = _read("langchain_tools.log")
    code = _of(events, LogEventKind.CODE)
    assert code[0].text == "import pandas as pd\ndf = pd.read_csv('/home/data/train.csv')\nprint(df.shape)"
    assert code[0].span.start_line == 5 and code[0].actor is Actor.AGENT
    assert code[1].text == "print(df.columns.tolist())"
    assert text[code[1].span.start_byte:code[1].span.end_byte] == code[1].text
    assert [c.text for c in _of(events, LogEventKind.COMMAND)] == ["ls /home/data", "wc -l /home/data/test.csv"]
    calls = _of(events, LogEventKind.TOOL_CALL)
    assert [c.text for c in calls] == ['submit_answer({"path": "/home/submission/submission.csv"})']
    outputs = _of(events, LogEventKind.OUTPUT)
    assert outputs[0].text.startswith("(1200, 9)") and all(o.actor is Actor.AGENT for o in outputs)
    banners = [e for e in events if e.actor is Actor.SCAFFOLD]
    assert [e.text for e in banners] == ["> Entering new AgentExecutor chain...", "> Finished chain."]
    _spans_hold_text(text, events)


def test_langchain_react_fields():
    text, events = _read("langchain_react.log")
    code = _of(events, LogEventKind.CODE)
    assert [c.text for c in code] == [
        "df.describe()",
        "from sklearn.linear_model import LogisticRegression\n"
        "model = LogisticRegression().fit(df[['f1', 'f2']], df.target)",
    ]
    assert [c.span.start_line for c in code] == [4, 11]
    assert _of(events, LogEventKind.OUTPUT)[-1].text == "LogisticRegression()"
    assert any(e.text == "The model is trained." and e.actor is Actor.AGENT for e in events)
    for event in events:
        assert text[event.span.start_byte:event.span.end_byte] == event.text


def test_langchain_colour_escapes_read_as_blanks():
    text = ("\x1b[1m> Entering new AgentExecutor chain...\x1b[0m\n"
            "\x1b[32;1m\x1b[1;3m\nInvoking: `python_repl` with `{'query': 'import os'}`\n\n\n\x1b[0m\x1b[36;1m"
            "\x1b[1;3m['a']\x1b[0m\n\x1b[1m> Finished chain.\x1b[0m\n")
    reading = parse_log("agent.log", text)
    assert reading.log_format == NAME
    code = _of(reading.events, LogEventKind.CODE)
    assert [c.text for c in code] == ["import os"] and code[0].span.start_line == 3
    assert "\x1b" not in "".join(e.text for e in reading.events)


def test_smolagents_code_blocks_keep_lines():
    text, events = _read("smolagents.log")
    code = _of(events, LogEventKind.CODE)
    first = code[0]
    assert first.span.start_line == 6 and first.span.end_line == 11
    assert len(first.text) == first.span.end_byte - first.span.start_byte
    lines = [line.rstrip() for line in first.text.split("\n")]
    assert lines == ["import pandas as pd", "train = pd.read_csv('/home/data/train.csv')", "",
                     "def summary(frame):", "    return frame.describe()", "print(summary(train))"]
    assert code[1].text == 'import os\nprint(os.listdir("/home/data"))' and code[1].span.start_line == 20
    boxed = [line.rstrip() for line in code[2].text.split("\n")]
    assert boxed == ["import shutil", "shutil.copy('/tmp/pred.csv', '/home/submission/submission.csv')"]
    assert code[2].span.start_line == 27
    outputs = [o.text for o in _of(events, LogEventKind.OUTPUT)]
    assert "Stdout:\n['train.csv', 'test.csv']" in outputs and "None" in outputs
    scaffold = [e for e in events if e.actor is Actor.SCAFFOLD]
    assert any("Step 2" in e.text for e in scaffold) and any("Duration" in e.text for e in scaffold)
    assert not any(e.kind is LogEventKind.MESSAGE and set(e.text.strip()) <= set("╭─╮ ") for e in events)
    _spans_hold_text(text, events)


def test_autogen_messages():
    text, events = _read("autogen.log")
    code = _of(events, LogEventKind.CODE)
    assert [c.span.start_line for c in code] == [11]
    assert code[0].actor is Actor.AGENT
    assert [c.text for c in _of(events, LogEventKind.COMMAND)] == ["ls -la /home/data"]
    outputs = _of(events, LogEventKind.OUTPUT)
    assert any("(1200, 9)" in o.text for o in outputs)
    task = next(e for e in events if e.text.startswith("Train a model"))
    assert task.actor is Actor.SCAFFOLD
    for event in events:
        assert text[event.span.start_byte:event.span.end_byte] == event.text


def test_crewai_tool_input():
    text, events = _read("crewai.log")
    code = _of(events, LogEventKind.CODE)
    assert [c.text for c in code] == ["import pandas as pd\nprint(pd.read_csv('/home/data/train.csv').head())"]
    assert code[0].span.start_line == 8
    assert any(o.text.startswith("id  f1") for o in _of(events, LogEventKind.OUTPUT))
    assert next(e for e in events if "Task:" in e.text).actor is Actor.SCAFFOLD


def test_scaffold_printout_headers():
    text, events = _read("scaffold_printout.log")
    code = _of(events, LogEventKind.CODE)
    assert [(c.span.start_line, c.span.end_line) for c in code] == [(4, 11), (16, 17)]
    assert code[0].text.endswith("print(train.shape)")
    outputs = _of(events, LogEventKind.OUTPUT)
    assert outputs[0].text == "(1200, 9)"
    records = [e for e in events if e.text.startswith("[2025-03-01 10:00:09")]
    assert records and records[0].actor is Actor.SCAFFOLD
    for event in events:
        assert text[event.span.start_byte:event.span.end_byte] == event.text


@pytest.mark.parametrize("text", [
    "We discussed the plan.\nAction: none was needed, the model was fine.\nObservation: it worked.\n",
    'Traceback (most recent call last):\n  File "train.py", line 3, in <module>\n    x = 1/0\n'
    "ZeroDivisionError: division by zero\n",
    "epoch 1 loss 0.3\nOut: 0.91\nOut: None\nExecution finished\n",
    "$ python train.py\nOut: 0.5\n```python\nimport os\n```\n",
    "=== summary ===\nThe run went well.\n",
    "----- code -----\nThe agent wrote no code this round.\n",
])
def test_other_text_is_not_taken(text):
    assert detect_log_format("logs/agent.log", text) != NAME


def test_read_literal_never_evaluates():
    assert read_literal("{'a': [1, 2.5, None, True], 'b': ('x' 'y',), \"c\": r'\\n'}") == {
        "a": [1, 2.5, None, True], "b": ("xy",), "c": "\\n"}
    assert read_literal("'\\x41\\u00e9\\N{BULLET}'") == "Aé•"
    for bad in ("__import__('os').system('id')", "{'a': 1", "[1, 2] + [3]", "'" + "x" * 10, "{" * 200):
        with pytest.raises((ValueError, RecursionError)):
            read_literal(bad)


@pytest.mark.parametrize("text", [
    "> Entering new AgentExecutor chain...\nInvoking: `python_repl` with `{'query': '" + "\\" * 50000 + "\n",
    "> Entering new AgentExecutor chain...\nInvoking: `x` with `" + "{[(" * 30000 + "`\n",
    " ─ Executing parsed code: " + "─" * 100000 + "\n" + "  x = 1\n" * 20000,
    "Executing code:\nimport os\n" + "\n" * 50000 + "x" * 100000,
    "----- node a code -----\nx = 1\n" + "-" * 200000 + "\n",
    "user_proxy (to assistant):\n" + ("a " * 50 + "(to b)") * 2000 + "\n>>>>>>>> EXECUTING CODE BLOCK 0\n",
])
def test_hostile_input_is_read_fast(text):
    started = time.perf_counter()
    reading = parse_log("logs/agent.log", text)
    assert reading.log_format is not None
    assert time.perf_counter() - started < 5
