"""Hypothesis strategies for hostile inputs: text, JSON, YAML, logs, notebooks, file names.

Audited runs are written by agents that may attack the audit, so the generators lean on what
breaks readers: control and format characters, lone surrogates (as characters and as JSON
``\\uXXXX`` escapes), NUL bytes, bytes that are not UTF-8, deep nesting, long single lines
(kept to a few tens of kB so that a linear reader needs milliseconds) and documents cut short.
"""

from __future__ import annotations

import json
import string
from typing import Any

from hypothesis import assume
from hypothesis import strategies as st

# --------------------------------------------------------------------------------------------
# Text

#: Characters that have broken or fooled text readers before: controls, separators, bidi
#: overrides, BOM, lone surrogates, digits that are not ASCII (``"²".isdigit()`` is true but
#: ``int("²")`` raises), case changes that lengthen (``"ß".upper() == "SS"``), quotes, escapes
#: and the brackets of JSON, YAML, format strings and tree-sitter queries.
SPECIAL_CHARS = (
    "\x00", "\x01", "\x07", "\x08", "\t", "\n", "\x0b", "\x0c", "\r", "\x1b", "\x1c", "\x7f", "\x85", "\x9b",
    "\xa0", "\xad", "\u061c", "\u200b", "\u200e", "\u2028", "\u2029", "\u202e", "\u2066", "\ufeff", "\ufffd",
    "\ufff9", "\ud800", "\udbff", "\udc00", "\udfff", "\U0001f600", "\U000e0001", "²", "³", "¹", "٣", "①", "ß",
    "ﬁ", "İ", "\\", "'", '"', "`", "{", "}", "[", "]", "(", ")", "<", ">", "%", "!", "?", "$", "#", "@", ":",
    ",", ";", "&", "|", "*", "~", "=", "-", "/", ".", " ",
)  # fmt: skip

special_char = st.sampled_from(SPECIAL_CHARS)
#: Any code point, lone surrogates included.
any_char = st.characters(exclude_categories=())
word = st.text(alphabet=string.ascii_letters + string.digits + "_", min_size=1, max_size=12)

#: A long run of one character or short pattern, up to 12 000 repetitions: long enough to reach
#: the readers' size-dependent paths, short enough that a quadratic reader still answers within
#: the time limit (super-linear time has its own property, ``test_logs.py``, with longer lines).
long_run = st.builds(
    lambda piece, count: piece * count,
    st.sampled_from(["a", " ", "\t", "\\", "{", "[", "(", '"', "'", "0", "a1", "a ", "a.", "-", ":", "\\u", "x{",
                     "%s", "!", "#", "$ ", "ACTION ", "Action: ", "```", "\n", "\r\n", "é", "\ud800"]),
    st.sampled_from([2, 64, 2_000, 12_000]),
)

#: Short fragments that mean something to one of the readers.
TOKENS = (
    "import openai\n", "openai.OpenAI().chat.completions.create(model='x', messages=[])\n",
    "```python\n", "```bash\n", "```\n", "~~~\n", "$ ls -la\n", "# pip install x\n", ">>> print(1)\n", "... x\n",
    "<execute_bash>ls</execute_bash>", "<execute_ipython>", "</execute_ipython>", "!pip install timm\n",
    "%%bash\n", "%pip install x\n", "%%writefile a.py\n", "x = !ls\n", "obj?\n", "\\\n", "cat > x.py <<'EOF'\n",
    "EOF\n", "python - <<EOF\n", "\\u", "\\ud800", "\\udfff", "\\ud83d\\ude00", "\\\\ud800", "\\x", "\\N{", "\\U0010ffff",
    "\\U00110000", "{0}", "{²}", "{}", "{name}", "%(x)s", "%s", "attachment://a", "SyncCursorPage[Message](",
    "value='", "THOUGHT: ", "ACTION bash: ", "OBSERVATION run: ", "Action: ", "Action Input: ", "Observation: ",
    "Step 3:\n", "[2024-01-01 00:00:00,000] [run.py:1] ", "2024-10-20 22:00:39,703 - agents.dev - INFO - ",
    "[Container] ", "\"code\"", "\"action\"", "\"eval\"", "\"samples\"", "null", "NaN", "-Infinity", "1e999",
)  # fmt: skip
token = st.sampled_from(TOKENS)

#: Text made of pieces: random code points, special characters, reader tokens, long runs.
piece = st.one_of(
    st.text(max_size=20),
    st.text(alphabet=any_char, max_size=10),
    st.text(alphabet=special_char, max_size=10),
    token,
    word,
    long_run,
)
nasty_text = st.lists(piece, max_size=8).map("".join)
#: Nasty text without long runs, for places where size multiplies (keys, many fields).
short_text = st.lists(st.one_of(st.text(max_size=12), st.text(alphabet=special_char, max_size=6), token, word),
                      max_size=4).map("".join)

# --------------------------------------------------------------------------------------------
# JSON

#: Keys the log readers and configs look for, plus arbitrary ones.
KEYS = (
    "code", "plan", "term_out", "_term_out", "analysis", "step", "nodes", "action", "args", "observation",
    "command", "cmd", "content", "thought", "path", "file_text", "new_str", "source", "history", "events",
    "role", "type", "id", "kind", "event", "text", "message", "output", "result", "stdout", "stderr", "input",
    "tool_calls", "function", "name", "arguments", "tool_use", "eval", "task", "model", "status", "samples",
    "messages", "attachments", "error", "reasoning", "response", "version", "metadata", "cells", "worksheets",
    "cell_type", "outputs", "runs", "run_id", "competition_id", "submission_path", "logs_path", "code_path",
    "decisions", "fingerprint", "decision", "note", "rule_id", "location", "decided_by", "decided_at",
)  # fmt: skip
key = st.one_of(st.sampled_from(KEYS), short_text)

json_leaf = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.integers(min_value=-(10**400), max_value=10**400),
    st.floats(allow_nan=True, allow_infinity=True),
    nasty_text,
    st.sampled_from(KEYS),
)
json_value = st.recursive(
    json_leaf,
    lambda children: st.one_of(st.lists(children, max_size=4), st.dictionaries(key, children, max_size=4)),
    max_leaves=12,
)


@st.composite
def json_text(draw, value: st.SearchStrategy[Any] = json_value) -> str:
    """A JSON text of ``value``: ASCII-escaped (lone surrogates become ``\\udXXX`` escapes) or
    not (they stay characters), sometimes nested deep, cut short or with junk appended."""
    data = draw(value)
    depth = draw(st.sampled_from([0, 0, 0, 0, 3, 199, 200, 201, 600, 1200, 5000]))
    if depth:
        opener, closer = draw(st.sampled_from([("[", "]"), ('{"a":', "}"), ('{"code": [', "]}")]))
        data_text = json.dumps(data, ensure_ascii=draw(st.booleans()))
        text = opener * depth + data_text + closer * depth
    else:
        text = json.dumps(data, ensure_ascii=draw(st.booleans()), indent=draw(st.sampled_from([None, 1])))
    damage = draw(st.sampled_from(["none", "none", "none", "cut", "junk", "prefix"]))
    if damage == "cut" and text:
        text = text[: draw(st.integers(0, len(text) - 1))]
    elif damage == "junk":
        text += draw(nasty_text)
    elif damage == "prefix":
        text = draw(st.sampled_from(["\ufeff", " \n", "\x00", ")]}'\n"])) + text
    return text


# --------------------------------------------------------------------------------------------
# Logs, one strategy per format; each may be damaged afterwards.

body = nasty_text
code_body = st.one_of(nasty_text, st.sampled_from([
    "import openai\nopenai.OpenAI().chat.completions.create(model='x', messages=[])\n",
    "!pip install timm\nimport timm\n", "cat > t.py <<'EOF'\nimport os\nEOF\n", "print('ok')\n",
]))


def _obj(**fields: st.SearchStrategy[Any]) -> st.SearchStrategy[dict[str, Any]]:
    """A dict with a random subset of ``fields`` plus random extra members."""
    return st.builds(
        lambda chosen, extra: {**extra, **chosen},
        st.fixed_dictionaries({}, optional=fields),
        st.dictionaries(key, json_leaf, max_size=2),
    )


aide_node = _obj(plan=body, code=code_body, term_out=st.one_of(body, st.lists(body, max_size=3)),
                 _term_out=st.lists(body, max_size=2), analysis=body, step=st.integers(), id=short_text)
aide_doc = st.one_of(st.lists(aide_node, max_size=4), st.builds(lambda nodes: {"nodes": nodes}, st.lists(aide_node, max_size=4)))

openhands_args = _obj(command=code_body, code=code_body, path=st.sampled_from(["a.py", "b.sh", "c.txt", ""]) | short_text,
                      content=code_body, thought=body)
openhands_event = st.one_of(
    _obj(action=st.sampled_from(["run", "run_ipython", "write", "message", "finish", "browse", "read"]) | short_text,
         args=st.one_of(openhands_args, json_leaf), source=st.sampled_from(["agent", "user", "environment"])),
    _obj(observation=st.sampled_from(["run", "run_ipython", "read"]) | short_text, content=body, extras=json_value),
)
openhands_doc = st.one_of(
    st.lists(openhands_event, max_size=5),
    st.builds(lambda wrapper, events: {wrapper: events}, st.sampled_from(["history", "events"]),
              st.lists(openhands_event, max_size=5)),
)

tool_arguments = _obj(cmd=code_body, command=code_body, input=code_body, code=code_body,
                      path=st.sampled_from(["a.py", "b.sh", "c.md"]) | short_text, file_text=code_body,
                      new_str=code_body, content=code_body)
tool_call = _obj(id=short_text, function=st.one_of(
    st.sampled_from(["bash", "python", "text_editor", "bash_session", "think", "submit"]), short_text,
    st.builds(lambda name: {"name": name}, short_text)),
    arguments=st.one_of(tool_arguments, tool_arguments.map(json.dumps), short_text, json_leaf))
content_part = _obj(type=st.sampled_from(["text", "reasoning", "image", "tool_use"]), text=body, reasoning=body)
inspect_message = _obj(role=st.sampled_from(["system", "user", "assistant", "tool"]),
                       content=st.one_of(body, st.lists(content_part, max_size=3), json_leaf),
                       tool_calls=st.lists(tool_call, max_size=3), error=_obj(message=body),
                       tool_call_id=short_text, function=short_text)
inspect_sample = _obj(id=short_text, messages=st.lists(inspect_message, max_size=5),
                      attachments=st.dictionaries(short_text, body, max_size=2))
inspect_doc = st.builds(
    lambda eval_spec, status, samples, extra: {**extra, "eval": eval_spec, "status": status, "samples": samples},
    _obj(task=short_text, model=short_text), st.sampled_from(["success", "error", "started"]),
    st.lists(inspect_sample, max_size=3), st.dictionaries(key, json_leaf, max_size=2),
)

jsonl_record = _obj(type=st.sampled_from(["command", "code", "message", "tool", "bash", "run_ipython"]) | short_text,
                    kind=short_text, event=short_text, content=st.one_of(body, st.lists(content_part, max_size=2)),
                    command=code_body, cmd=code_body, code=code_body, output=body, observation=body, result=body,
                    message=body, text=body, thought=body, role=st.sampled_from(["assistant", "tool", "function", "user"]),
                    tool_calls=st.lists(_obj(function=_obj(name=short_text, arguments=tool_arguments.map(json.dumps))),
                                        max_size=2))


@st.composite
def jsonl_text(draw) -> str:
    lines = []
    for _ in range(draw(st.integers(0, 6))):
        kind = draw(st.sampled_from(["record", "record", "record", "junk", "blank", "deep"]))
        if kind == "record":
            lines.append(json.dumps(draw(jsonl_record), ensure_ascii=draw(st.booleans())))
        elif kind == "junk":
            lines.append(draw(nasty_text))
        elif kind == "deep":
            depth = draw(st.sampled_from([150, 201, 1500]))
            lines.append('{"content": ' + "[" * depth + "]" * depth + "}")
        else:
            lines.append("")
    return draw(st.sampled_from(["\n", "\r\n"])).join(lines)


@st.composite
def assistants_text(draw) -> str:
    messages = []
    for _ in range(draw(st.integers(0, 4))):
        value = draw(body)
        literal = repr(value) if draw(st.booleans()) else "'" + draw(short_text) + "'"
        role = draw(st.sampled_from(["assistant", "user", "x y"]))
        messages.append(f"Message(id='msg_{draw(word)}', content=[TextContentBlock(text=Text(annotations=[], "
                        f"value={literal}), type='text')], role='{role}')")
    dump = "SyncCursorPage[Message](data=[" + ", ".join(messages) + "])"
    if draw(st.booleans()):
        return dump
    return json.dumps({"response": dump, "other": draw(json_leaf)}, ensure_ascii=draw(st.booleans()))


@st.composite
def prefixed_lines(draw, prefixes: st.SearchStrategy[str]) -> str:
    """Lines of a line-oriented log: prefixed records, continuation lines and junk."""
    lines = []
    for _ in range(draw(st.integers(0, 7))):
        if draw(st.integers(0, 3)):
            lines.append(draw(prefixes) + draw(body))
        else:
            lines.append(draw(body))
    return "\n".join(lines)


runlog_prefix = st.builds(lambda s, c: f"[2024-05-01 12:00:{s:02d},123] [run.py:{s}] " + c,
                          st.integers(0, 59), st.sampled_from(["", "[Container] ", "[Container]"]))
pylogging_prefix = st.builds(lambda n, lvl: f"2024-10-20 22:00:39,703 - {n} - {lvl} - ",
                             st.sampled_from(["agents.developer", "root", "a.b<c>", "x:y/z"]),
                             st.sampled_from(["INFO", "DEBUG", "WARNING", "ERROR"]))
steplog_prefix = st.builds(lambda lvl, tag: f"2025-07-09 16:45:04,555 {lvl}agent: {tag}",
                           st.sampled_from(["", "INFO ", "DEBUG "]),
                           st.sampled_from(["THOUGHT: ", "ACTION bash: ", "ACTION python: ", "ACTION write_file: a.py\n",
                                            "ACTION write_file: ", "ACTION ", "OBSERVATION bash: ", "ACTION x y z: ", ""]))
steplog_field = st.sampled_from(["Thought: ", "Action: ", "Action Input: ", "Observation: ```\n", "Observation: ",
                                 "Reflection: ", "Final Answer: ", "Step 2:\n", "Research Plan and Status: "])


@st.composite
def text_transcript(draw) -> str:
    parts = []
    for _ in range(draw(st.integers(0, 6))):
        kind = draw(st.integers(0, 4))
        if kind == 0:
            fence = draw(st.sampled_from(["```", "~~~", "````"]))
            tag = draw(st.sampled_from(["python", "bash", "", "console", "{.py}", "text"]))
            closed = draw(st.booleans())
            parts.append(f"{fence}{tag}\n{draw(code_body)}\n" + (f"{fence}\n" if closed else ""))
        elif kind == 1:
            tag = draw(st.sampled_from(["execute_bash", "execute_ipython", "execute_shell", "execute_python"]))
            parts.append(f"<{tag}>{draw(code_body)}</{tag}>")
        elif kind == 2:
            parts.append(draw(st.sampled_from(["$ ", "user@host:~$ ", "(env) $ ", "# ", ">>> ", "... "])) + draw(body))
        else:
            parts.append(draw(body))
    return draw(st.sampled_from(["\n", "\n\n"])).join(parts)


#: (format name, log path, text) triples; the text is meant for that format but may be damaged.
@st.composite
def log_document(draw) -> tuple[str, str, str]:
    fmt = draw(st.sampled_from(["aide", "openhands", "inspect", "assistants", "jsonl", "json", "runlog",
                                "pylogging", "steplog", "text"]))
    if fmt == "aide":
        text = draw(json_text(aide_doc))
        path = draw(st.sampled_from(["journal.json", "logs/journal.json", "logs/journal"]))
    elif fmt == "openhands":
        text = draw(json_text(openhands_doc))
        path = draw(st.sampled_from(["logs/events.json", "logs/trajectory"]))
    elif fmt == "inspect":
        text = draw(json_text(inspect_doc))
        path = draw(st.sampled_from(["logs/eval.json", "logs/inspect"]))
    elif fmt == "assistants":
        text = draw(assistants_text())
        path = draw(st.sampled_from(["logs/x_message.txt", "logs/summary.json"]))
    elif fmt == "jsonl":
        text = draw(jsonl_text())
        path = draw(st.sampled_from(["logs/agent.jsonl", "logs/agent.ndjson", "logs/agent.log"]))
    elif fmt == "json":
        text = draw(json_text())
        path = draw(st.sampled_from(["review.json", "logs/state.json", "logs/state"]))
    elif fmt == "runlog":
        text = draw(prefixed_lines(runlog_prefix))
        path = "run.log"
    elif fmt == "pylogging":
        text = draw(prefixed_lines(pylogging_prefix))
        path = draw(st.sampled_from(["logs/run.log", "autokaggle.log"]))
    elif fmt == "steplog":
        text = draw(st.one_of(prefixed_lines(steplog_prefix), prefixed_lines(steplog_field)))
        path = draw(st.sampled_from(["logs/main_log", "logs/agent.log"]))
    else:
        text = draw(text_transcript())
        path = draw(st.sampled_from(["logs/agent.log", "logs/output.txt", "notes.md"]))
    if draw(st.integers(0, 9)) == 0:
        text = draw(nasty_text)
    return fmt, path, text


# --------------------------------------------------------------------------------------------
# Notebooks

ipython_line = st.sampled_from([
    "%matplotlib inline", "!pip install timm", "!!ls", "%pip install x", "%conda install y", "pip install z",
    "files = !ls", "%system ls -la", "%sx echo hi", "obj?", "??obj", "%%bash", "%%sh", "%%writefile a.py",
    "%%writefile run.sh", "%%script python3", "%%script bash", "%%time", "%%capture", "%%html", "!echo \\",
    "import openai", "openai.OpenAI().chat.completions.create(model='x', messages=[])", "x = 1", "",
])
cell_source_text = st.lists(st.one_of(ipython_line, body), max_size=6).map("\n".join)


def _nested(value: Any, depth: int) -> Any:
    for _ in range(depth):
        value = [value]
    return value


cell_source = st.one_of(
    cell_source_text,
    cell_source_text,
    st.lists(st.one_of(cell_source_text.map(lambda s: s + "\n"), json_leaf), max_size=4),
    st.builds(_nested, short_text, st.sampled_from([1, 5, 150, 400, 900])),
    json_value,
)
cell = _obj(cell_type=st.sampled_from(["code", "code", "markdown", "raw"]) | short_text, source=cell_source,
            input=cell_source, metadata=st.one_of(st.just({}), json_value), outputs=st.lists(json_value, max_size=2),
            execution_count=st.one_of(st.none(), st.integers()), id=short_text)
kernel_metadata = _obj(
    kernelspec=st.one_of(_obj(language=st.sampled_from(["python", "Python3", "R", "julia", " "]) | short_text,
                              name=st.sampled_from(["python3", "ir", "julia-1.9", ""]) | short_text), json_leaf),
    language_info=st.one_of(_obj(name=st.sampled_from(["python", "R", "bash"]) | short_text), json_leaf),
    language=st.sampled_from(["python", "scala"]) | json_leaf,
)
notebook_v4 = st.builds(
    lambda cells, metadata, version, minor, extra: {**extra, "cells": cells, "metadata": metadata, "nbformat": version,
                                                     "nbformat_minor": minor},
    st.lists(cell, max_size=5), st.one_of(kernel_metadata, json_leaf), st.sampled_from([4, 4, 3, 5, 2, "4", None]),
    st.sampled_from([0, 2, 4, 5, -1, None]), st.dictionaries(key, json_leaf, max_size=1),
)
notebook_v3 = st.builds(
    lambda sheets, metadata: {"worksheets": sheets, "metadata": metadata, "nbformat": 3, "nbformat_minor": 0},
    st.lists(st.one_of(_obj(cells=st.lists(cell, max_size=4)), json_leaf), max_size=2), st.one_of(kernel_metadata, json_leaf),
)
notebook_text = st.one_of(json_text(st.one_of(notebook_v4, notebook_v3)), json_text(), nasty_text)

# --------------------------------------------------------------------------------------------
# YAML


@st.composite
def yaml_text(draw, value: st.SearchStrategy[Any]) -> str:
    """YAML for ``value`` as PyYAML writes it, sometimes cut short (hostile YAML: :data:`hostile_yaml`)."""
    import yaml

    try:
        text = yaml.safe_dump(draw(value), allow_unicode=draw(st.booleans()), sort_keys=False)
    except yaml.YAMLError:
        assume(False)
    if draw(st.integers(0, 5)) == 0 and text:
        text = text[: draw(st.integers(0, len(text) - 1))]
    return text


def _deep_yaml(style: str, depth: int) -> str:
    if style == "block":
        return "\n".join("  " * i + "- " for i in range(depth)) + "x\n"
    if style == "flow-map":
        return "{a: " * depth + "}" * depth
    if style == "aliases":
        # Nesting built from aliases: a shallow text that decodes to a deep value.
        lines = ["a0: &a0 [x]"] + [f"a{i}: &a{i} [*a{i - 1}]" for i in range(1, depth)]
        return "\n".join(lines) + "\n"
    return "[" * depth + "]" * depth


#: YAML meant to break a loader: deep nesting (flow, block, through alias chains) as a compact
#: ``(style, depth)`` case (render it with :func:`yaml_case_bytes`, so that a failure prints
#: short), tags PyYAML's safe loader refuses or reads oddly, anchors and aliases, junk, bytes that
#: are not UTF-8.
YAML_ODDITIES = (
    b"!!python/object:os.system ls", b"x: !!binary '@@@'", b"x: !!timestamp nope", b"x: !!timestamp 2024-13-45",
    b"x: !!set {a}", b"? [a, b]\n: c\n", b"x: !!float abc", b"x: !!int 0x", b"x: !!bool maybe", b"x: !!null 1",
    b"x: !!str [a]", b"x: !!omap [a]", b"x: !!pairs 1", b"&a [*a]", b"*nope", b"x: 1\nx: 2\n", b"--- 1\n--- 2\n",
    b"\xff\xfe", b"\xef\xbb\xbfcommand: ls", b"command: \xff", b"\x00", b"%YAML 9.9\n--- x", b"x: 2024-02-30",
    b"x: 1_000_000_000_000_000_000_000e999", b"x: .nan", b"x: " + b"9" * 5000, b"? !!timestamp nope\n: 1\n",
)
hostile_yaml = st.one_of(
    st.tuples(st.sampled_from(["flow-list", "flow-map", "block", "aliases"]), st.sampled_from([1000, 30, 300, 3000])),
    st.sampled_from(YAML_ODDITIES),
    st.sampled_from(YAML_ODDITIES),
    nasty_text.map(lambda t: t.encode("utf-8", "surrogatepass")),
    st.binary(max_size=64),
)


def yaml_case_bytes(case: bytes | tuple[str, int]) -> bytes:
    """The bytes of a :data:`hostile_yaml` case."""
    if isinstance(case, tuple):
        return _deep_yaml(*case).encode()
    return case


@st.composite
def yaml_bytes(draw, value: st.SearchStrategy[Any]) -> bytes:
    """:func:`yaml_text` of ``value`` as UTF-8 (encoding damage is :data:`hostile_yaml`'s part)."""
    return draw(yaml_text(value)).encode("utf-8", errors="surrogatepass")


#: YAML-able leaves: what ``yaml.safe_dump`` can write (no lone surrogates, which it refuses).
yaml_leaf = st.one_of(
    st.none(), st.booleans(), st.integers(), st.integers(min_value=-(10**400), max_value=10**400),
    st.floats(allow_nan=True, allow_infinity=True), short_text.filter(lambda s: all(not 0xD800 <= ord(c) <= 0xDFFF for c in s)),
    st.dates(), st.datetimes(),
)
yaml_value = st.recursive(
    yaml_leaf,
    lambda children: st.one_of(st.lists(children, max_size=3),
                               st.dictionaries(st.one_of(yaml_leaf.filter(lambda v: v is None or isinstance(v, (str, int, bool))),
                                                         st.sampled_from(KEYS)), children, max_size=3)),
    max_leaves=8,
)


def no_surrogates(value: Any) -> Any:
    """``value`` with lone surrogates in strings replaced, so that PyYAML can write it."""
    if isinstance(value, str):
        return "".join("\ufffd" if 0xD800 <= ord(c) <= 0xDFFF else c for c in value)
    if isinstance(value, list):
        return [no_surrogates(v) for v in value]
    if isinstance(value, dict):
        return {no_surrogates(k): no_surrogates(v) for k, v in value.items()}
    return value


# --------------------------------------------------------------------------------------------
# File names

#: Name characters: printable ASCII, controls, separators, backslashes (``\\xff`` as text
#: collides with the escaped form of a byte name), spaces.
name_char = st.one_of(
    st.sampled_from(string.ascii_letters + string.digits + "._- "),
    st.sampled_from(["\\", "x", "f", "\x01", "\x1b", "\n", "\t", "\x7f", "\u202e", "é", "\u2028", "[", "]", "*", "?",
                     ":", "'", '"', "$", "~"]),
)
SUFFIXES = (".py", ".sh", ".ipynb", ".log", ".txt", ".json", ".jsonl", ".md", ".eval", ".out", ".csv", ".npy", ".pkl",
            ".PY", ".Json", ".yaml", ".bin", "", ".py ", ".py\n", ".tar.gz")


@st.composite
def file_name(draw) -> bytes:
    """One path component as bytes: printable or hostile, sometimes not valid UTF-8."""
    stem = draw(st.one_of(word, st.text(alphabet=name_char, min_size=1, max_size=10),
                          st.sampled_from(["solve", "train", "journal", "run", "metadata", "submission", "agent", "main_log"])))
    raw = stem.encode("utf-8") + draw(st.sampled_from(SUFFIXES)).encode("utf-8")
    if draw(st.integers(0, 5)) == 0:
        position = draw(st.integers(0, len(raw)))
        raw = raw[:position] + draw(st.sampled_from([b"\xff", b"\xfe\xfe", b"\xc3", b"\xed\xa0\x80", b"\x80"])) + raw[position:]
    if raw in (b".", b"..") or b"/" in raw or b"\x00" in raw or not raw:
        raw = b"x" + raw.replace(b"/", b"_").replace(b"\x00", b"_")
    return raw[:200]
