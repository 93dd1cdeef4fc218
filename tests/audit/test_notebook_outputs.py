"""Notebook outputs read as log events: text forms, nbformat 3 and 4, spans into the file, caps,
hostile shapes, and code printed in outputs read as a log."""

from __future__ import annotations

import json
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mleaudit.audit.expand import NOTEBOOK_OUTPUTS, expand_run, notebook_units
from mleaudit.audit.notebooks import NotebookError, read_notebook, read_notebook_outputs
from mleaudit.audit.run import load_run
from mleaudit.audit.textmap import TextMap
from mleaudit.audit.units import Actor, LogEventKind as K


def _lines(text: str) -> list[str]:
    return text.splitlines(keepends=True)


def _code(source: str, outputs=()) -> dict:
    return {"cell_type": "code", "execution_count": None, "metadata": {}, "source": _lines(source),
            "outputs": list(outputs)}


def _notebook(cells: list[dict], **extra) -> str:
    return json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {"kernelspec": {"language": "python"}},
                       "cells": cells, **extra}, indent=1)


def _stream(text: str, name: str = "stdout") -> dict:
    return {"output_type": "stream", "name": name, "text": _lines(text)}


V4 = _notebook([
    {"cell_type": "markdown", "metadata": {}, "source": ["# Notes\n", "We train a model."]},
    _code("import pandas as pd\nprint(pd.__version__)", [_stream("2.2.1\n"), _stream("a warning\n", "stderr")]),
    _code("df.describe()", [
        {"output_type": "execute_result", "execution_count": 2, "metadata": {},
         "data": {"text/plain": ["       Age\n", "count  891"], "text/markdown": ["**891** rows"],
                  "text/html": ["<table><tr><td>891</td></tr></table>"]}},
        {"output_type": "display_data", "metadata": {},
         "data": {"image/png": "iVBORw0KGgo=", "text/plain": ["<Figure size 640x480 with 1 Axes>"]}},
    ]),
    _code("1 / 0", [{"output_type": "error", "ename": "ZeroDivisionError", "evalue": "division by zero",
                     "traceback": ["\x1b[0;31m---------------------------------------------------------\x1b[0m",
                                   "\x1b[0;31mZeroDivisionError\x1b[0m: division by zero"]}]),
])


def test_v4_outputs_are_read_as_text_with_their_place():
    read = read_notebook_outputs(V4, "nb.ipynb")
    assert [(o.location, o.output_type, o.name) for o in read.outputs] == [
        ("cells[0].source", "markdown", ""),
        ("cells[1].outputs[0]", "stream", "stdout"),
        ("cells[1].outputs[1]", "stream", "stderr"),
        ("cells[2].outputs[0]", "execute_result", "text/plain, text/markdown, text/html"),
        ("cells[2].outputs[1]", "display_data", "text/plain"),
        ("cells[3].outputs[0]", "error", ""),
    ]
    texts = [o.text for o in read.outputs]
    assert texts[0] == "# Notes\nWe train a model."
    assert texts[1] == "2.2.1\n"
    assert texts[3] == "       Age\ncount  891\n**891** rows\n<table><tr><td>891</td></tr></table>"
    # Terminal colours are removed; the error reads as Python prints it.
    assert texts[5] == ("ZeroDivisionError: division by zero\n"
                        "---------------------------------------------------------\n"
                        "ZeroDivisionError: division by zero")
    assert read.binary == (("cells[2].outputs[1].data", "image/png"),)
    assert read.output_count == 5 and read.unread == ()


def test_output_spans_cover_the_lines_of_the_file():
    read = read_notebook_outputs(V4, "nb.ipynb")
    lines = V4.splitlines()
    stream = read.outputs[1]
    start, end = stream.text_map.host_range(0, stream.text_map.length)
    assert lines[V4.count("\n", 0, start)].strip() == '"2.2.1\\n"'
    result = read.outputs[3]
    start, end = result.text_map.host_range(0, result.text_map.length)
    first, last = V4.count("\n", 0, start), V4.count("\n", 0, end)
    assert '"       Age\\n"' in lines[first] and "<table>" in lines[last]


def test_v3_worksheets_pyout_pyerr_and_mime_keys():
    notebook = json.dumps({"nbformat": 3, "metadata": {"language": "python"}, "worksheets": [{"cells": [
        {"cell_type": "heading", "level": 1, "source": ["Title"]},
        {"cell_type": "code", "input": ["print('x')"], "language": "python", "outputs": [
            {"output_type": "stream", "stream": "stdout", "text": ["x\n"]},
            {"output_type": "pyout", "prompt_number": 1, "text": ["42"], "html": ["<b>42</b>"], "png": "AAAA"},
            {"output_type": "pyerr", "ename": "KeyError", "evalue": "'a'", "traceback": ["Traceback", "KeyError: 'a'"]},
        ]},
    ]}]})
    read = read_notebook_outputs(notebook, "old.ipynb")
    assert [(o.location, o.output_type, o.name, o.text) for o in read.outputs] == [
        ("worksheets[0].cells[0].source", "heading", "", "Title"),
        ("worksheets[0].cells[1].outputs[0]", "stream", "stdout", "x\n"),
        ("worksheets[0].cells[1].outputs[1]", "pyout", "text/plain, text/html", "42\n<b>42</b>"),
        ("worksheets[0].cells[1].outputs[2]", "pyerr", "", "KeyError: 'a'\nTraceback\nKeyError: 'a'"),
    ]
    assert read.binary == (("worksheets[0].cells[1].outputs[1].png", "image/png"),)
    # Cell indexes are the ones read_notebook's cell map uses.
    code = read_notebook(notebook, "old.ipynb")
    assert [c.cell_index for c in code.cells] == [read.outputs[1].cell_index] == [1]


def test_outputs_are_not_code_and_code_is_not_output(tmp_path):
    (tmp_path / "nb.ipynb").write_text(V4)
    units = expand_run(load_run(tmp_path))
    notebook = next(u for u in units.code_units if u.source == "notebook")
    assert "ZeroDivisionError" not in notebook.text and "2.2.1" not in notebook.text
    assert notebook.actor is Actor.AGENT
    assert units.log_formats == (("nb.ipynb", NOTEBOOK_OUTPUTS),)
    assert [(e.kind, e.actor, e.location) for e in units.log_events][:3] == [
        (K.MESSAGE, Actor.AGENT, "cells[0].source"),
        (K.OUTPUT, Actor.AGENT, "cells[1].outputs[0]"),
        (K.OUTPUT, Actor.AGENT, "cells[1].outputs[1]"),
    ]
    assert [e.index for e in units.log_events] == list(range(len(units.log_events)))
    # Images are data: counted in a note, not a gap.
    assert units.skipped == ()
    assert [n.reason for n in units.notes] == [
        "binary notebook outputs not read (images and other data, not code or logs): 1 part(s) (image/png)"]
    record = units.notebooks[0]
    assert (record.code_cells, record.outputs, record.text_parts, record.binary_outputs) == (3, 5, 6, 1)
    assert "not a driver" in record.describe() or "no agent-framework call" in record.describe()


def test_code_and_commands_printed_in_outputs_are_read_as_a_log(tmp_path):
    printed = ("Step 1\n```python\nimport requests\nrequests.post('https://api.example.org/v1', json={})\n```\n"
               "$ kaggle competitions download -c titanic\nDone.\n")
    cell = _code("run_step()", [_stream(printed[:30]), _stream(printed[30:])])
    (tmp_path / "agent.ipynb").write_text(_notebook([cell]))
    units = expand_run(load_run(tmp_path))
    found = [(e.kind, e.text, e.actor, e.location) for e in units.log_events if e.kind is not K.OUTPUT]
    assert found == [
        (K.CODE, "import requests\nrequests.post('https://api.example.org/v1', json={})", Actor.AGENT,
         "cells[0].outputs[0]"),
        (K.COMMAND, "kaggle competitions download -c titanic", Actor.AGENT, "cells[0].outputs[1]"),
    ]
    # The fenced block spans two stream outputs: read as one log, located in the file.
    code = next(e for e in units.log_events if e.kind is K.CODE)
    text = (tmp_path / "agent.ipynb").read_text()
    assert "import reques" in text.splitlines()[code.span.start_line - 1]
    log_units = [u for u in units.code_units if u.source == "log"]
    assert [(u.language, u.actor) for u in log_units] == [("python", Actor.AGENT), ("bash", Actor.AGENT)]


def test_structured_log_printed_in_an_output_gives_its_tool_calls(tmp_path):
    printed = "Step 3\nAction: Execute Script\nAction Input: {\"script_name\": \"train.py\"}\nObservation: ok\n"
    (tmp_path / "nb.ipynb").write_text(_notebook([_code("runner.go()", [_stream(printed)])]))
    events = expand_run(load_run(tmp_path)).log_events
    assert any(e.kind is K.TOOL_CALL and "Execute Script" in e.text for e in events)


def test_output_text_cap_lists_the_rest_as_unread():
    read = read_notebook_outputs(V4, "nb.ipynb", max_chars=40)
    assert [o.location for o in read.outputs] == ["cells[0].source", "cells[1].outputs[0]"]
    assert read.unread == ("outputs from cells[1].outputs[1] on not read: over the 40-character cap on notebook "
                           "output text",)


def test_event_limit_is_a_gap(tmp_path, monkeypatch):
    monkeypatch.setattr(notebook_units, "MAX_LOG_EVENTS", 3)
    (tmp_path / "nb.ipynb").write_text(V4)
    units = expand_run(load_run(tmp_path))
    assert len(units.log_events) == 3
    assert [s.reason for s in units.skipped] == [
        "notebook outputs partly read: the event limit of 3 was reached; the rest of the outputs were not read"]


def test_a_huge_output_is_cut_into_events_at_line_ends(tmp_path, monkeypatch):
    monkeypatch.setattr(notebook_units, "MAX_OUTPUT_EVENT_CHARS", 100)
    text = "".join(f"epoch {i}: loss 0.{i:04d}\n" for i in range(50))
    (tmp_path / "nb.ipynb").write_text(_notebook([_code("fit()", [_stream(text)])]))
    events = expand_run(load_run(tmp_path)).log_events
    assert len(events) > 5 and "".join(e.text for e in events) == text
    assert all(len(e.text) <= 100 and e.text.endswith("\n") for e in events)
    assert all(e.location == "cells[0].outputs[0]" for e in events)


@pytest.mark.parametrize("outputs", [
    "not a list", {"output_type": "stream", "text": "dict, not list"}, [1, None, True, [], {}],
    [{"output_type": "stream", "text": 5}], [{"output_type": "execute_result", "data": {"text/plain": {"a": 1}}}],
    [{"output_type": "display_data", "data": "x"}], [{"output_type": "mystery", "payload": ["hidden ", "text"]}],
    [{"output_type": "stream", "text": ["a", 1, None]}], [{"data": {"application/json": {"cmd": "ls"}}}],
    ["a bare string output"],
])
def test_hostile_output_shapes_never_raise(tmp_path, outputs):
    cell = {"cell_type": "code", "source": "x", "outputs": outputs}
    (tmp_path / "nb.ipynb").write_text(json.dumps({"nbformat": 4, "metadata": {}, "cells": [cell]}))
    units = expand_run(load_run(tmp_path))
    assert units.skipped == ()
    texts = " ".join(e.text for e in units.log_events)
    if "hidden" in json.dumps(outputs):
        assert "hidden text" in texts  # a member of an unknown output type is read too
    if "a bare string" in json.dumps(outputs):
        assert "a bare string output" in texts


def test_repeated_keys_read_what_the_decoder_reads():
    notebook = ('{"nbformat": 4, "metadata": {}, "cells": [{"cell_type": "code", "source": "x", '
                '"outputs": [{"output_type": "stream", "text": "first"}], '
                '"outputs": [{"output_type": "stream", "text": "second"}]}]}')
    assert [o.text for o in read_notebook_outputs(notebook, "nb.ipynb").outputs] == ["second"]


def test_outputs_of_a_notebook_that_is_not_json_raise_notebook_error():
    with pytest.raises(NotebookError):
        read_notebook_outputs('{"cells": [{"outputs": [1,]}]}', "bad.ipynb")


def test_random_notebooks_never_raise(tmp_path):
    rng = random.Random(7)
    pieces = ['{"cells": [', '{"cell_type": "code", "source": "x", "outputs": [', '{"output_type": "stream",',
              '"text": ["a\\n", "b"]', '"data": {"text/plain": "p"}', "}", "]", ",", '"\\u001b[31m"', "null", '"x"']
    for number in range(300):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(1, 14)))
        (tmp_path / "nb.ipynb").write_text(text)
        expand_run(load_run(tmp_path))  # reads, or lists the notebook as not read


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(min_size=0, max_size=20), min_size=1, max_size=5), st.booleans())
def test_text_map_offsets_round_trip_through_escapes(parts, ascii_only):
    """Every offset of the decoded text maps to a file offset whose prefix decodes to the same prefix."""
    host = json.dumps({"text": parts}, ensure_ascii=ascii_only)
    mapping = TextMap()
    pos = host.index("[") + 1
    for part in parts:
        start = host.index('"', pos)
        end = start + len(json.dumps(part, ensure_ascii=ascii_only))
        assert mapping.add_literal(host, start + 1, end - 1, part)
        pos = end
    decoded = "".join(parts)
    assert mapping.text == decoded
    offsets = [mapping.host_offset(i) for i in range(len(decoded) + 1)]
    assert offsets == sorted(offsets)
    for i, part_start in enumerate(_starts(parts)):
        if i < len(parts) and parts[i]:
            # A literal's first character maps to its place right after the opening quote.
            assert host[offsets[part_start] - 1] == '"'


def _starts(parts: list[str]) -> list[int]:
    starts, total = [], 0
    for part in parts:
        starts.append(total)
        total += len(part)
    return starts


def test_text_map_cleaning_keeps_places():
    host = '"\\u001b[31mred\\u001b[0m plain\\rnext"'
    mapping = TextMap()
    mapping.add_literal(host, 1, len(host) - 1, "\x1b[31mred\x1b[0m plain\rnext")
    clean = mapping.cleaned()
    assert clean.text == "red plain\nnext"
    start, end = clean.host_range(0, 3)
    assert host[start:end] == "red"
    start, end = clean.host_range(4, 9)
    assert host[start:end] == "plain"


def test_a_notebook_without_outputs_is_read_as_before(tmp_path):
    (tmp_path / "nb.ipynb").write_text(_notebook([_code("x = 1"), _code("print(x)")]))
    units = expand_run(load_run(tmp_path))
    assert units.log_events == () and units.log_formats == ()
    assert [(u.source, u.actor) for u in units.code_units] == [("notebook", Actor.AGENT)]
    assert units.notebooks[0].text_parts == 0
