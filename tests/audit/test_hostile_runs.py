"""Run folders written to fool or crash the audit: every hostile input is refused or read, and
whatever is not read is listed (``Run.skipped`` / ``RunUnits.skipped``), never a traceback.

Classes covered, each built in ``tmp_path``: symbolic links to folders anywhere in a run (the
submission folder pointing at the answers above all), Inspect ``.eval`` archives with odd member
names or damage, lone UTF-16 surrogates decoded from JSON escapes, JSON nested a thousand levels
deep in every JSON file a run holds, and file names no terminal or encoder likes.
"""

from __future__ import annotations

import io
import json
import os
import sys
import warnings
import zipfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from mleaudit.audit.rules.context import RunContext
from mleaudit.audit.checks.sandbox_events import sandbox_events
from mleaudit.audit.checks.validation import VALIDATION_CALLS_LOG, assess_validation
from mleaudit.audit.cli import main
from mleaudit.audit.expand import expand_run
from mleaudit.audit.logs import parse_log
from mleaudit.audit.logs import inspect_archive
from mleaudit.audit.logs.inspect_archive import read_eval_archive
from mleaudit.audit.parsing import parse
from mleaudit.audit.run import ArtifactKind, RunLayout, load_run, read_run_file

DEEP = "[" * 1000 + "]" * 1000
#: A JSON string whose escape spells a lone surrogate, which no UTF-8 encoder accepts.
LONE = "\\udfff"


def _write(root: Path, rel: str, text: str | bytes = "x = 1\n") -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    return path


def _reasons(items) -> dict[str, str]:
    return {item.path: item.reason for item in items}


def _encodable(units) -> None:
    """Every text the expansion hands on encodes as UTF-8 and parses."""
    for unit in units.code_units:
        unit.text.encode("utf-8")
        unit.path.encode("utf-8")
        parse(unit.text, unit.language)
    for event in units.log_events:
        for text in (event.text, event.role, event.location, event.span.path):
            text.encode("utf-8")


# --- 1. symbolic links to folders -------------------------------------------------------------


def test_symlinked_submission_folder_yields_no_submission(tmp_path):
    answers = tmp_path / "private"
    _write(answers, "submission.csv", "id,label\n1,0\n")
    run_dir = tmp_path / "run"
    _write(run_dir, "code/train.py")
    # A later candidate is not taken in place of the refused one.
    _write(run_dir, "submission.csv", "id,label\n1,1\n")
    (run_dir / "submission").symlink_to(answers, target_is_directory=True)
    run = load_run(run_dir)
    assert run.submission is None
    assert all(a.kind is not ArtifactKind.SUBMISSION for a in run.artifacts)
    assert _reasons(run.skipped) == {
        "submission": "symbolic link (not followed)",
        "submission/submission.csv": "its folder submission was not read: symbolic link (not followed)",
    }
    # Not "no submission file": the submission exists but was refused.
    assert run.notes == ()


def test_submission_candidate_that_is_a_folder_is_listed(tmp_path):
    _write(tmp_path, "submission/submission.csv/answers.csv", "id,label\n1,0\n")
    _write(tmp_path, "submission.csv", "id,label\n1,1\n")
    run = load_run(tmp_path)
    assert run.submission is None and run.notes == ()
    assert _reasons(run.skipped)["submission/submission.csv"] == "a folder, not a file: not read as the submission"


@pytest.mark.parametrize("folder", ["logs", "code", "working", "code/sub", "code/sub/deeper", "a/b/c/d"])
def test_symlinked_folders_anywhere_are_refused_and_listed(tmp_path, folder):
    outside = tmp_path / "outside"
    _write(outside, "secret.py", "import requests\n")
    _write(outside, "agent.log", "$ cat /private/answers.csv\n")
    run_dir = tmp_path / "run"
    _write(run_dir, "train.py")
    link = run_dir / folder
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(outside, target_is_directory=True)
    run = load_run(run_dir)
    assert [a.path for a in run.artifacts] == ["train.py"]
    assert _reasons(run.skipped)[folder] == "symbolic link (not followed)"
    assert not any("secret" in a.path or a.path.endswith("agent.log") for a in run.artifacts)


def test_symlink_loops_and_links_to_the_root(tmp_path):
    _write(tmp_path, "code/train.py")
    (tmp_path / "loop").symlink_to(tmp_path / "loop")
    (tmp_path / "code" / "up").symlink_to(tmp_path, target_is_directory=True)
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    run = load_run(tmp_path)
    assert [a.path for a in run.artifacts] == ["code/train.py"]
    assert set(_reasons(run.skipped)) == {"loop", "code/up", "dangling"}


def test_folders_nested_past_the_depth_cap_are_listed_not_walked(tmp_path, monkeypatch):
    monkeypatch.setattr(RunLayout, "MAX_FOLDER_DEPTH", 5)
    _write(tmp_path, "/".join(["d"] * 5) + "/ok.py")
    _write(tmp_path, "/".join(["d"] * 9) + "/deep.py")
    run = load_run(tmp_path)
    assert [a.path for a in run.artifacts] == ["d/d/d/d/d/ok.py"]
    assert _reasons(run.skipped) == {
        "d/d/d/d/d/d": "folder nested deeper than 5 levels below the run root; not entered"}


def test_folder_swapped_for_a_symlink_after_loading_is_not_read(tmp_path):
    outside = tmp_path / "outside"
    _write(outside, "train.py", "import openai\n")
    run_dir = tmp_path / "run"
    _write(run_dir, "code/train.py", "x = 1\n")
    run = load_run(run_dir)
    (run_dir / "code").rename(run_dir / "moved")
    (run_dir / "code").symlink_to(outside, target_is_directory=True)
    units = expand_run(run)
    assert units.code_units == ()
    assert _reasons(units.skipped) == {
        "code/train.py": "cannot read: its folder code is a symbolic link (not followed)"}


def test_read_run_file_follows_no_link_at_any_level(tmp_path):
    outside = tmp_path / "outside"
    _write(outside, "run.json", '{"competition_id": "x"}')
    root = tmp_path / "run"
    _write(root, "logs/ok.log", "fine\n")
    (root / "linked").symlink_to(outside, target_is_directory=True)
    (root / "run.json").symlink_to(outside / "run.json")
    assert read_run_file(root, "logs/ok.log") == b"fine\n"
    assert read_run_file(root, root / "logs" / "ok.log") == b"fine\n"
    for rel, message in [
        ("linked/run.json", "its folder linked is a symbolic link (not followed)"),
        ("run.json", "symbolic link (not followed)"),
        ("logs/../../outside/run.json", "not a plain path under the run root"),
        (outside / "run.json", "not under the run root"),
    ]:
        with pytest.raises(OSError) as caught:
            read_run_file(root, rel)
        assert caught.value.strerror == message
    with pytest.raises(OSError):
        read_run_file(root, "logs/ok.log", max_bytes=2)


def test_metadata_behind_a_symlink_is_not_read(tmp_path):
    outside = tmp_path / "outside"
    _write(outside, "run.json", '{"competition_id": "spaceship-titanic", "run_id": "forged"}')
    run_dir = tmp_path / "run"
    _write(run_dir, "code/train.py")
    (run_dir / "run.json").symlink_to(outside / "run.json")
    run = load_run(run_dir)
    assert run.competition_id is None and run.run_id == "run"
    assert _reasons(run.skipped) == {"run.json": "symbolic link (not followed)"}


def test_validation_calls_log_under_a_symlinked_logs_folder_is_not_counted(tmp_path):
    elsewhere = tmp_path / "elsewhere"
    _write(elsewhere, "validation_calls.jsonl", '{"ts": 1, "valid": true, "message": "m"}\n' * 3)
    root = tmp_path / "run"
    root.mkdir()
    (root / "logs").symlink_to(elsewhere, target_is_directory=True)
    ctx = RunContext(root=root)
    assert assess_validation(ctx).calls == 0
    assert _reasons(ctx.skipped) == {
        VALIDATION_CALLS_LOG: "logs/validation_calls.jsonl: its folder logs is a symbolic link (not followed)"}


def test_validation_calls_log_nested_too_deep_is_malformed_not_fatal(tmp_path):
    _write(tmp_path, VALIDATION_CALLS_LOG, '{"ts": 1, "valid": true, "message": "' + LONE + '"}\n' + DEEP + "\n")
    ctx = RunContext(root=tmp_path)
    usage = assess_validation(ctx)
    assert usage.calls == 1
    assert _reasons(ctx.skipped) == {VALIDATION_CALLS_LOG: "1 malformed line(s) not counted"}


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        ('{"events": ' + DEEP + "}", "sandbox events not read: nested 1001 levels deep, deeper than the 200 accepted"),
        ("{not json", "sandbox events not read: Expecting property name enclosed in double quotes"),
    ],
    ids=["deep", "broken"],
)
def test_sandbox_events_in_an_unreadable_run_json_are_listed(tmp_path, content, reason):
    _write(tmp_path, "run.json", content)
    ctx = RunContext(root=tmp_path)
    assert sandbox_events(ctx, kinds=["refused-output"]) == []
    assert _reasons(ctx.skipped) == {"run.json": reason}


def test_sandbox_events_with_lone_surrogates_are_read(tmp_path):
    _write(tmp_path, "run.json", '{"events": [{"kind": "refused-output", "detail": "link to ' + LONE + '"}]}')
    ctx = RunContext(root=tmp_path)
    matches = sandbox_events(ctx, kinds=["refused-output"])
    assert [m.values["detail"] for m in matches] == ["link to \ufffd"]
    assert ctx.skipped == []


# --- 2. Inspect .eval archives ------------------------------------------------------------------


def _sample(code: str = "import os\nprint(os.listdir('/home/data'))") -> str:
    return json.dumps({"messages": [
        {"role": "user", "content": "solve it"},
        {"role": "assistant", "content": "running", "tool_calls": [
            {"id": "c1", "function": "python", "arguments": {"code": code}}]},
        {"role": "tool", "content": "['train.csv']"},
    ]})


def _archive(members: dict[str, str | bytes], *, compression: int = zipfile.ZIP_DEFLATED) -> bytes:
    buffer = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # duplicate names
        with zipfile.ZipFile(buffer, "w", compression=compression) as archive:
            archive.writestr("header.json", json.dumps({"version": 2, "status": "success", "eval": {"task": "t"}}))
            for name, body in members.items():
                archive.writestr(name, body)
    return buffer.getvalue()


ODD_NAMES = [
    "samples/with space_epoch_1.json",
    "samples/task:1_epoch_1.json",
    "samples/sub/folder/x_epoch_1.json",
    "samples/UPPER_EPOCH_1.JSON",
    "samples/" + "n" * 250 + "_epoch_1.json",
    "samples/\u00fcn\u00efc\u00f6d\u00e9_epoch_1.json",
    "samples/new\nline_epoch_1.json",
    "samples/\x1b[2J_epoch_1.json",
    "samples/../../../../etc/escape.json",
]


def test_eval_members_are_read_by_their_names_whatever_the_characters(tmp_path):
    archive = read_eval_archive("logs/run.eval", _archive({name: _sample() for name in ODD_NAMES}))
    assert archive.problems == () and archive.unread == ()
    assert [path for path, _ in archive.documents] == [f"logs/run.eval!/{name}" for name in ODD_NAMES]
    assert sum(1 for e in archive.events if e.text.startswith("import os")) == len(ODD_NAMES)
    # Names are names: nothing was written anywhere.
    assert not (tmp_path / "etc").exists()


def _patch(data: bytes, name: str, *, local: dict[int, bytes] | None = None, central: dict[int, bytes] | None = None,
           body: bytes | None = None) -> bytes:
    """Overwrite bytes of one member's local header, central directory entry or data."""
    out = bytearray(data)
    info = zipfile.ZipFile(io.BytesIO(data)).getinfo(name)
    for offset, value in (local or {}).items():
        out[info.header_offset + offset : info.header_offset + offset + len(value)] = value
    if central:
        # This member's central directory entry, found by its name.
        encoded = name.encode("utf-8")
        entry = bytes(out).find(b"PK\x01\x02")
        while entry != -1 and bytes(out[entry + 46 : entry + 46 + len(encoded)]) != encoded:
            entry = bytes(out).find(b"PK\x01\x02", entry + 4)
        for offset, value in central.items():
            out[entry + offset : entry + offset + len(value)] = value
    if body is not None:
        start = info.header_offset + 30 + len(info.filename.encode("utf-8")) + len(info.extra)
        out[start : start + len(body)] = body
    return bytes(out)


def _damaged() -> dict[str, tuple[bytes, str]]:
    """Archives damaged in one member each, with the start of the reason expected for it."""
    member = "samples/a_epoch_1.json"
    stored = _archive({member: _sample()}, compression=zipfile.ZIP_STORED)
    deflated = _archive({member: _sample() * 20})
    method_99 = (99).to_bytes(2, "little")
    return {
        "bad-crc": (_patch(stored, member, body=b"XXXX"), "not read (BadZipFile: Bad CRC-32"),
        "bad-local-header": (_patch(stored, member, local={0: b"JUNK"}), "not read (BadZipFile: Bad magic number"),
        "encrypted": (_patch(stored, member, local={6: b"\x01"}, central={8: b"\x01"}), "encrypted member; not read"),
        "unknown-method": (_patch(stored, member, local={8: method_99}, central={10: method_99}),
                           "not read (NotImplementedError"),
        "bad-deflate-stream": (_patch(deflated, member, body=b"\xff" * 64), "not read ("),
    }


@pytest.mark.parametrize("case", list(_damaged()))
def test_damaged_eval_members_are_listed_by_name(case):
    data, reason = _damaged()[case]
    archive = read_eval_archive("run.eval", data)
    assert archive.events == () and archive.problems == ()
    assert [m for m, _ in archive.unread] == ["samples/a_epoch_1.json"]
    assert archive.unread[0][1].startswith(reason), archive.unread[0][1]


@pytest.mark.parametrize("cut", [0.1, 0.5, 0.9, 0.99])
def test_truncated_eval_archive_is_a_problem_not_a_crash(cut):
    data = _archive({f"samples/{n}_epoch_1.json": _sample() for n in "abc"})
    archive = read_eval_archive("run.eval", data[: int(len(data) * cut)])
    assert archive.events == ()
    assert archive.problems and archive.problems[0].startswith("not a readable zip archive: BadZipFile")


def test_eval_members_that_are_not_samples_or_not_readable_are_listed():
    members = {
        "samples/good_epoch_1.json": _sample(),
        "samples/notjson_epoch_1.json": "this is not json",
        "samples/list_epoch_1.json": "[1, 2]",
        "samples/deep_epoch_1.json": '{"messages": ' + DEEP + "}",
        "samples/notes.txt": "free text",
        "payload/extra.json": "{}",
        "_journal/start.json": "{}",
        "reductions.json": "[]",
        "samples/good_epoch_1.json ": _sample(),
    }
    archive = read_eval_archive("run.eval", _archive(members))
    assert dict(archive.unread) == {
        "samples/notes.txt": "not an Inspect sample member (samples/*.json); not read",
        "payload/extra.json": "not an Inspect sample member (samples/*.json); not read",
        "samples/good_epoch_1.json ": "not an Inspect sample member (samples/*.json); not read",
        "samples/notjson_epoch_1.json": "not a JSON sample object (line 1, column 1: Expecting value); not read",
        "samples/list_epoch_1.json": "not a JSON sample object (wrong type); not read",
        "samples/deep_epoch_1.json": "JSON nested 1001 levels deep, deeper than the 200 accepted; not read",
    }
    assert [p for p, _ in archive.documents] == ["run.eval!/samples/good_epoch_1.json"]


def test_eval_archive_bomb_and_member_flood(monkeypatch):
    # 30 MB of zeros inflate from a few kB: refused by its declared size before inflating.
    bomb = _archive({"samples/bomb_epoch_1.json": b"\x00" * (30 * 1024 * 1024), "samples/ok_epoch_1.json": _sample()})
    assert len(bomb) < 200_000
    archive = read_eval_archive("run.eval", bomb)
    limit = inspect_archive.MAX_MEMBER_BYTES
    assert archive.unread == (("samples/bomb_epoch_1.json",
                               f"{30 * 1024 * 1024} bytes inflated is over the {limit}-byte member limit; not read"),)
    assert [p for p, _ in archive.documents] == ["run.eval!/samples/ok_epoch_1.json"]
    # Many unread members: the first ones one by one, the rest counted.
    monkeypatch.setattr(inspect_archive, "MAX_LISTED_MEMBERS", 3)
    flood = read_eval_archive("run.eval", _archive({f"junk/{n}.bin": b"x" for n in range(10)}))
    assert [m for m, _ in flood.unread] == ["junk/0.bin", "junk/1.bin", "junk/2.bin"]
    assert flood.problems[-1].startswith("7 more member(s) not read, from 'junk/3.bin' on")


def test_duplicate_member_names_are_both_read():
    buffer = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with zipfile.ZipFile(buffer, "w") as handle:
            handle.writestr("header.json", "{}")
            handle.writestr("samples/a_epoch_1.json", _sample("x = 1"))
            handle.writestr("samples/a_epoch_1.json", _sample("import openai"))
    archive = read_eval_archive("run.eval", buffer.getvalue())
    assert [p for p, _ in archive.documents] == ["run.eval!/samples/a_epoch_1.json",
                                                 "run.eval!/samples/a_epoch_1.json#2"]
    assert [e.text for e in archive.events if e.text.startswith(("x =", "import"))] == ["x = 1", "import openai"]


def test_unread_eval_members_are_gaps_of_the_expansion(tmp_path):
    _write(tmp_path, "logs/run.eval", _archive({"samples/a_epoch_1.json": _sample(), "samples/b.txt": "x",
                                                "samples/c_epoch_1.json": _sample("CODE").replace("CODE", LONE),
                                                "samples/d_epoch_1.json": '{"messages": [{"role": "user", "cont'}))
    units = expand_run(load_run(tmp_path))
    assert _reasons(units.skipped) == {
        "logs/run.eval!/samples/b.txt": "eval archive member: not an Inspect sample member (samples/*.json); not read",
        "logs/run.eval!/samples/d_epoch_1.json": "eval archive member: JSON cut short or damaged at line 1, column 32: "
                                                 "Unterminated string starting at; read up to there",
    }
    assert _reasons(units.notes) == {
        "logs/run.eval": "eval archive member samples/c_epoch_1.json: 1 lone UTF-16 surrogate escape(s) (such as "
                         "\\udfff) decoded as U+FFFD"}
    assert [u.text for u in units.code_units] == ["import os\nprint(os.listdir('/home/data'))", "\ufffd"]
    _encodable(units)


def test_a_damaged_eval_file_is_listed_not_fatal(tmp_path):
    _write(tmp_path, "logs/run.eval", b"PK\x03\x04" + os.urandom(2000))
    units = expand_run(load_run(tmp_path))
    (reason,) = _reasons(units.skipped).values()
    assert reason.startswith("eval archive partly read: not a readable zip archive: BadZipFile")


# --- 3. lone surrogates -------------------------------------------------------------------------


def _surrogate_runs() -> dict[str, dict[str, str]]:
    code = f"x = '{LONE}'\\nprint(x)"
    return {
        "aide": {"logs/journal.json": json.dumps([{"plan": "p", "code": "CODE", "term_out": ["ok"]}])
                 .replace("CODE", code)},
        "openhands": {"logs/events.json": '[{"action": "run_ipython", "source": "agent", "args": {"code": "' + code
                      + '", "thought": "' + LONE + '"}}, {"action": "run", "args": {"command": "echo ' + LONE + '"}}]'},
        "jsonl": {"logs/t.jsonl": '{"type": "code", "role": "' + LONE + '", "content": "' + code + '"}\n'
                  '{"type": "command", "command": "echo ' + LONE + '"}\n'
                  '{"role": "assistant", "tool_calls": [{"function": {"arguments": "{\\"code\\": \\"' + "\\\\udfff"
                  + '\\"}"}}]}\n'},
        "json-document": {"review.json": '{"final": {"code": "' + code + '", "' + LONE + '": "key"}}'},
        "inspect-json": {"logs/log.json": json.dumps({"eval": {"task": "t"}, "status": "success",
                                                      "samples": [json.loads(_sample("CODE"))]}).replace("CODE", code)},
        "notebook": {"code/nb.ipynb": json.dumps({
            "cells": [{"cell_type": "code", "source": "CODE\n!echo SHELL", "metadata": {}, "outputs": [],
                       "execution_count": 1}],
            "metadata": {"kernelspec": {"language": "python", "name": "python3"}}, "nbformat": 4, "nbformat_minor": 5,
        }).replace("CODE", code).replace("SHELL", LONE)},
        "assistants": {"logs/run_message.txt": "SyncCursorPage[Message](data=[Message(id='msg_1', content=["
                       "TextContentBlock(text=Text(annotations=[], value='" + LONE + " leaked'), type='text')], "
                       "role='assistant')])"},
    }


@pytest.mark.parametrize("kind", list(_surrogate_runs()))
def test_lone_surrogates_never_reach_an_encoder(tmp_path, kind):
    for rel, text in _surrogate_runs()[kind].items():
        _write(tmp_path, rel, text)
    units = expand_run(load_run(tmp_path))
    assert units.skipped == ()
    assert units.code_units or units.log_events
    _encodable(units)
    assert any("\ufffd" in u.text for u in units.code_units) or any("\ufffd" in e.text for e in units.log_events)
    if kind != "assistants":  # a Python literal, not JSON: nothing to count
        assert [n.reason for n in units.notes][0].endswith("lone UTF-16 surrogate escape(s) (such as \\udfff) "
                                                            "decoded as U+FFFD")


def test_parse_accepts_lone_surrogates_with_offsets_unchanged():
    text = "a = '\udfff'\nb = 'é'\n"
    parsed = parse(text, "python")
    assert parsed.text == "a = '\ufffd'\nb = 'é'\n" and not parsed.has_error
    second = parsed.root.children[1]
    assert parsed.node_text(second) == "b = 'é'"
    assert parsed.span(second, "x.py").start_line == 2


def test_metadata_with_lone_surrogates_is_encodable(tmp_path):
    _write(tmp_path, "run.json", '{"run_id": "r' + LONE + '", "competition_id": "c' + LONE + '"}')
    run = load_run(tmp_path)
    assert (run.run_id, run.competition_id) == ("r\ufffd", "c\ufffd")


# --- 4. JSON nested a thousand levels deep ------------------------------------------------------


@pytest.mark.parametrize(
    ("rel", "text", "reason"),
    [
        ("journal.json", DEEP, "log partly read: JSON nested 1000 levels deep, deeper than the 200 accepted: not read "
                               "as JSON (its lines were read as plain text)"),
        ("logs/events.json", '{"history": ' + DEEP + "}", "log partly read: JSON nested 1001 levels deep, deeper than "
                                                          "the 200 accepted: not read as JSON"),
        ("logs/t.jsonl", '{"type": "message", "content": "hi"}\n' + '{"a":' * 1000 + "1" + "}" * 1000 + "\n",
         "log partly read: line 2 not read: JSON nested 1000 levels deep, deeper than the 200 accepted"),
        ("logs/t.ndjson", "\n".join([DEEP] * 8) + "\n", "log partly read: line 1 not read: JSON nested 1000 levels"),
        ("logs/inspect.json", '{"eval": {"task": "t"}, "status": "ok", "samples": [{"messages": ' + DEEP + "}]}",
         "log partly read: JSON cut short or damaged at line 1, column 127: nested too deep to decode"),
        ("review.json", '{"a": ' + DEEP + "}", "log partly read: JSON nested 1001 levels deep"),
        ("logs/summary.json", '{"response": "SyncCursorPage[Message](data=[])", "x": ' + DEEP + "}",
         "log partly read: not read as assistants (JSONDecodeError: nested 1001 levels deep"),
        ("code/nb.ipynb", '{"cells": ' + DEEP + "}", "code/nb.ipynb: not a readable notebook (NotJSONError: Notebook "
                                                     "does not appear to be JSON: nested 1001 levels deep, deeper "
                                                     "than the 200 accepted"),
        ("logs/plain.txt", "{" + DEEP, "log partly read: JSON nested 1001 levels deep"),
    ],
    ids=["journal", "openhands", "jsonl", "ndjson-many", "inspect", "json-document", "assistants", "notebook", "text"],
)
def test_deep_json_anywhere_is_a_gap_naming_the_file(tmp_path, rel, text, reason):
    _write(tmp_path, rel, text)
    units = expand_run(load_run(tmp_path))
    assert {item.path for item in units.skipped} == {rel}
    reasons = [item.reason for item in units.skipped]
    assert any(r.startswith(reason) for r in reasons), reasons


@pytest.mark.parametrize("name", ["run.json", "metadata.json"])
def test_deep_run_metadata_is_a_gap(tmp_path, name):
    _write(tmp_path, name, '{"competition_id": ' + DEEP + "}")
    run = load_run(tmp_path)
    assert _reasons(run.skipped)[name].startswith("run metadata not read: nested 1001 levels deep, deeper than the "
                                                  "200 accepted")
    assert run.competition_id is None


def test_deep_json_inside_a_structured_log_is_read_up_to_it(tmp_path):
    _write(tmp_path, "journal.json", '[{"plan": "p", "code": "import os", "term_out": "ok"}, '
                                     '{"plan": "q", "code": "x = 1", "extra": ' + DEEP + "}]")
    units = expand_run(load_run(tmp_path))
    assert [u.text for u in units.code_units] == ["import os", "x = 1"]
    (reason,) = _reasons(units.skipped).values()
    assert reason.startswith("log partly read: JSON cut short or damaged at line 1") and "nested too deep" in reason


# --- 5. file names --------------------------------------------------------------------------------


def _hostile_names(root: Path) -> list[str]:
    names = ["[", "]", "[]", "a\nb.py", "\x1b[2J\x1b[31mred.py", "tab\there.log", "x" * 250 + ".py", " ", "-rf.py",
             "\u202eyp.exe.py", "\u00e9t\u00e9.py", "..."]
    made = []
    for name in names:
        try:
            _write(root, f"code/{name}", "import os\n")
        except OSError:
            continue
        made.append(name)
    return made


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX file names")
def test_odd_file_names_are_read_and_printable(tmp_path):
    made = _hostile_names(tmp_path)
    raw = os.fsencode(tmp_path / "code") + b"/bad\xff\xfe.py"
    with open(raw, "wb") as handle:
        handle.write(b"import requests\n")
    os.makedirs(os.fsencode(tmp_path) + b"/dir\xff/sub")
    with open(os.fsencode(tmp_path) + b"/dir\xff/sub/a.log", "wb") as handle:
        handle.write(b"$ ls /home/data\n")
    run = load_run(tmp_path)
    paths = [a.path for a in run.artifacts]
    for path in paths:
        path.encode("utf-8")
    assert {f"code/{n}" for n in made} <= set(paths)
    assert "code/bad\\xff\\xfe.py" in paths and "dir\\xff/sub/a.log" in paths
    assert _reasons(run.notes)["code/bad\\xff\\xfe.py"] == "file name is not valid UTF-8 (bytes shown as \\xNN escapes)"
    # The file behind an escaped name is still read.
    units = expand_run(run)
    assert any(u.path == "code/bad\\xff\\xfe.py" and "requests" in u.text for u in units.code_units)
    _encodable(units)


def test_an_escaped_name_that_collides_with_a_real_one_is_listed(tmp_path):
    _write(tmp_path, "code/bad\\xff.py", "x = 1\n")
    with open(os.fsencode(tmp_path / "code") + b"/bad\xff.py", "wb") as handle:
        handle.write(b"import openai\n")
    run = load_run(tmp_path)
    assert [a.path for a in run.artifacts] == ["code/bad\\xff.py"]
    assert _reasons(run.skipped) == {"code/bad\\xff.py": "file name is not valid UTF-8 and its escaped form names "
                                                         "another entry of the folder; not read"}


def test_a_run_whose_own_name_is_not_utf8(tmp_path):
    root = os.fsencode(tmp_path) + b"/run\xff"
    os.makedirs(root + b"/code")
    with open(root + b"/code/a.py", "wb") as handle:
        handle.write(b"x = 1\n")
    run = load_run(os.fsdecode(root))
    assert run.run_id == "run\\xff" and [a.path for a in run.artifacts] == ["code/a.py"]


# --- the whole audit on a run that combines them --------------------------------------------------


def _kitchen_sink(root: Path) -> None:
    outside = root.parent / "answers"
    _write(outside, "submission.csv", "id,label\n1,0\n")
    (root / "submission").parent.mkdir(parents=True, exist_ok=True)
    (root / "submission").symlink_to(outside, target_is_directory=True)
    (root / "logs").mkdir()
    (root / "code").mkdir()
    for kind, files in _surrogate_runs().items():
        for rel, text in files.items():
            _write(root, f"{kind}/{rel}", text)
    _write(root, "logs/deep.jsonl", DEEP + "\n")
    _write(root, "journal.json", DEEP)
    _write(root, "run.json", '{"run_id": "' + LONE + '", "events": [{"kind": "' + LONE + '"}]}')
    _write(root, "logs/run.eval", _damaged()["bad-crc"][0])
    _write(root, "logs/odd.eval", _archive({name: _sample(f"x = '{LONE}'") for name in ODD_NAMES}))
    _hostile_names(root)
    with open(os.fsencode(root / "code") + b"/bad\xff.py", "wb") as handle:
        handle.write(b"import os\n")
    (root / "code" / "linked").symlink_to(outside, target_is_directory=True)


@pytest.mark.parametrize("fmt", ["json", "text", "markdown", "sarif", "html"])
def test_the_audit_of_a_hostile_run_finishes_without_a_traceback(tmp_path, fmt):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    _kitchen_sink(run_dir)
    out = tmp_path / f"report.{fmt}"
    result = CliRunner().invoke(main, ["audit", str(run_dir), "--no-similarity", "--format", fmt, "-o", str(out)])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output[-3000:]
    # 0 clean, 1 findings, 3 incomplete; never a usage error (2) or an internal error (4).
    assert result.exit_code in (0, 1, 3), result.output[-3000:]
    assert "Traceback" not in result.output and "internal error" not in result.output
    if fmt == "json":
        report = json.loads(out.read_text())
        skipped = {item["path"] for item in report["skipped"]}
        assert {"submission", "submission/submission.csv", "journal.json", "logs/deep.jsonl",
                "logs/run.eval!/samples/a_epoch_1.json", "code/linked"} <= skipped
        assert report["verdict"]["kind"] != "clean"


@pytest.fixture(scope="module")
def prepared_data(tmp_path_factory):
    return tmp_path_factory.mktemp("data")


def test_answers_behind_a_symlinked_submission_folder_are_not_graded(tmp_path, prepared_data):
    honest = Path(__file__).resolve().parents[2] / "examples" / "runs" / "honest-digits"
    first = CliRunner().invoke(main, ["audit", str(honest), "--data-dir", str(prepared_data), "--no-similarity",
                                      "-o", str(tmp_path / "honest.json")])
    assert first.exit_code in (0, 1), first.output
    answers = prepared_data / "sklearn-digits" / "prepared" / "private" / "test.csv"
    folder = tmp_path / "answers"
    folder.mkdir()
    (folder / "submission.csv").write_bytes(answers.read_bytes())
    run_dir = tmp_path / "run"
    _write(run_dir, "code/train.py", "print('training')\n")
    (run_dir / "submission").symlink_to(folder, target_is_directory=True)
    out = tmp_path / "r.json"
    result = CliRunner().invoke(main, ["audit", str(run_dir), "-c", "sklearn-digits", "--data-dir", str(prepared_data),
                                       "--no-similarity", "-o", str(out)])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    report = json.loads(out.read_text())
    assert report["grade"] is None
    assert report["meta"]["grade_skipped"].startswith("submission/submission.csv not graded: its folder submission")
    assert report["verdict"]["kind"] != "clean"
