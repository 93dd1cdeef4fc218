"""A clean verdict means every file was read, every rule ran and nothing was found; anything less is incomplete.

Each test is a way an audit can come out clean without having checked the run (an empty folder,
a rule that raised, a tree too deep to query, a regex that never ends, no rules, no grading),
or a way the tool itself could fail open (a traceback, raw terminal escapes).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from mleaudit.audit.cli import main
from mleaudit.audit.formatters.terminal import terminal_safe
from mleaudit.audit.pipeline import AuditOptions, audit_run
from mleaudit.audit.report import (EXIT_INCOMPLETE, EXIT_INTERNAL_ERROR, Gap, GapKind, VerdictKind, decide_verdict,
                          exit_code)
from mleaudit.audit.rules.matchers import base as matcher_base
from mleaudit.audit.rules.matchers import query as query_matcher
from mleaudit.audit.rules.loader import find_rules_root, load_ruleset
from mleaudit.audit.rules.strings import fold_strings
from mleaudit.audit.run import load_run

LLM_CALL = "import openai\nclient = openai.OpenAI()\nr = client.chat.completions.create(model='m', messages=[])\n"


@pytest.fixture(scope="module")
def ruleset():
    return load_ruleset([find_rules_root(None)])


def _write(root: Path, files: dict[str, str | bytes]) -> Path:
    for name, content in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
    root.mkdir(parents=True, exist_ok=True)
    return root


def _audit(root: Path, ruleset, **options):
    return audit_run(load_run(root), ruleset=ruleset, options=AuditOptions(**options))


def _gap_kinds(report) -> set[str]:
    return {gap.kind.value for gap in report.verdict.gaps}


@pytest.mark.parametrize("files", [{}, {"submission/submission.csv": "id,label\n1,0\n"}, {"notes.py": "\n\n   \n"}],
                         ids=["empty folder", "bare submission", "blank code"])
def test_a_run_with_nothing_to_check_is_incomplete(tmp_path, ruleset, files):
    report = _audit(_write(tmp_path / "run", files), ruleset)
    assert report.verdict.kind is VerdictKind.INCOMPLETE
    assert GapKind.NO_AGENT_INPUT.value in _gap_kinds(report)


def test_grading_asked_for_and_not_run_is_a_gap(tmp_path, ruleset):
    root = _write(tmp_path / "run", {"solve.py": "print(1)\n"})
    asked = audit_run(load_run(root), ruleset=ruleset, options=AuditOptions(grade_requested=True),
                      grade_skipped="no competition id")
    assert asked.verdict.kind is VerdictKind.INCOMPLETE
    [gap] = asked.verdict.gaps
    assert gap.kind is GapKind.NOT_GRADED and "no competition id" in gap.reason
    assert _audit(root, ruleset).verdict.kind is VerdictKind.CLEAN  # grading not asked for


def test_an_empty_rules_folder_is_a_gap(tmp_path):
    (tmp_path / "rules").mkdir()
    root = _write(tmp_path / "run", {"solve.py": LLM_CALL})
    report = _audit(root, load_ruleset([tmp_path / "rules"]))
    assert report.verdict.kind is VerdictKind.INCOMPLETE
    assert _gap_kinds(report) == {GapKind.NO_RULES.value}


#: A zip archive's leading bytes: a file no reader opens, whatever its name.
ZIP_BYTES = b"PK\x03\x04\x14\x00\x00\x00\x08\x00" + bytes(range(40))


def test_files_of_unknown_type_are_gaps_and_data_files_are_listed_not_read(tmp_path, ruleset):
    # A name that says nothing is read by content: text is read (main_log), an archive is not.
    root = _write(tmp_path / "run", {"solve.py": "print(1)\n", "main_log": "Action: Execute Script\n",
                                     "bundle.bin2": ZIP_BYTES, "working/preds.csv": "a,b\n1,2\n"})
    report = _audit(root, ruleset)
    assert report.verdict.kind is VerdictKind.INCOMPLETE
    assert [(g.kind, g.path) for g in report.verdict.gaps] == [(GapKind.FILE_UNREAD, "bundle.bin2")]
    assert any(s.path == "working/preds.csv" and s.reason.startswith("data file, not read") for s in report.skipped)


@pytest.mark.parametrize("body", [
    r"C:\Users\me\data\train.csv", r"\x", r"\x4", r"\u12", r"\U0001", r"\N", r"\N{NO SUCH NAME}", r"\8\9",
    r"\ud800", r"\udfff\ud800", r"\U00110000", r"\777", "\\", "a\\\n", r"\N{", r"\N{BULLET",
])
def test_string_folding_is_total_on_malformed_escapes(body):
    for quote in ('"', "'"):
        folded = fold_strings(f"p = {quote}{body}{quote} + 'x'\n", "python")
        for item in folded:
            item.value.encode("utf-8")  # never a lone surrogate


def test_a_windows_path_does_not_switch_off_the_rules_of_its_file(tmp_path, ruleset):
    code = ('import requests\np = "C:\\Users\\me\\data\\train.csv"\n'
            'u = "https://api." + "openai" + ".com/v1/chat/completions"\nrequests.post(u, json={})\n')
    report = _audit(_write(tmp_path / "run", {"solve.py": code}), ruleset)
    assert "llm-assembled-endpoint" in {f.rule_id for f in report.findings}
    assert not [g for g in report.verdict.gaps if g.kind is GapKind.RULE_ERROR]
    assert report.verdict.kind is VerdictKind.FLAGGED


@pytest.mark.parametrize("padding", [
    "x = " + "(" * 1000 + "1" + ")" * 1000 + "\n",
    "y = " + " + ".join(["1"] * 2000) + "\n",
    "v = " + "(" * 40000 + "\n",
], ids=["1000 nested parentheses", "2000-term sum", "40000 unclosed parentheses"])
def test_a_tree_too_deep_to_query_cannot_hide_an_llm_call(tmp_path, ruleset, padding):
    code = padding + LLM_CALL + 'url = "https://api." + "openai.com" + "/v1/chat/completions"\n'
    report = _audit(_write(tmp_path / "run", {"solve.py": code}), ruleset)
    found = {f.rule_id: f for f in report.findings}
    assert "llm-external-api-call" in found
    assert found["llm-external-api-call"].metadata["text_match"].startswith("text match: ")
    assert "text match" in found["llm-external-api-call"].evidence[0].label
    assert "llm-assembled-endpoint" in found  # string folding falls back to the literals as text
    assert report.verdict.kind is VerdictKind.FLAGGED
    assert any("ran as text matches" in s.reason for s in report.skipped)


def test_a_tree_too_deep_to_query_is_never_clean(tmp_path, ruleset):
    report = _audit(_write(tmp_path / "run", {"solve.py": "y = " + " + ".join(["1"] * 2000) + "\n"}), ruleset)
    # Query patterns with no literal to search for, and the write-site analysis, cannot run.
    assert report.verdict.kind is VerdictKind.INCOMPLETE
    assert {g.kind for g in report.verdict.gaps} == {GapKind.RULE_ERROR}


def _rule_folder(tmp_path: Path, rule: dict) -> Path:
    folder = tmp_path / "rules" / rule["category"]
    folder.mkdir(parents=True)
    (folder / f"{rule['id']}.yaml").write_text(yaml.safe_dump(rule), encoding="utf-8")
    return tmp_path / "rules"


def test_a_regex_that_backtracks_for_ever_is_cut_and_reported(tmp_path, monkeypatch):
    rule = {"id": "ext-slow", "title": "Slow", "message": "x", "severity": "high", "confidence": "medium",
            "category": "external-resource", "target": "code", "languages": ["python"],
            "match": {"regex": r"(?:a|aa)+$"}, "metadata": {"rationale": "A catastrophic regex."}}
    rules = load_ruleset([_rule_folder(tmp_path, rule)])
    monkeypatch.setattr(matcher_base, "REGEX_TIMEOUT_SECONDS", 0.2)
    root = _write(tmp_path / "run", {"solve.py": "s = '" + "a" * 5000 + "b'\n"})
    report = _audit(root, rules)
    [gap] = report.verdict.gaps
    assert gap.kind is GapKind.RULE_ERROR and gap.rule_id == "ext-slow" and gap.error == "TimeoutError"
    assert report.verdict.kind is VerdictKind.INCOMPLETE


def test_a_query_predicate_regex_that_backtracks_is_cut_too(tmp_path, monkeypatch):
    rule = {"id": "ext-slow-query", "title": "Slow", "message": "x", "severity": "high", "confidence": "medium",
            "category": "external-resource", "target": "code", "languages": ["python"],
            "match": {"query": {"python": '((string_content) @s (#match? @s "(?:a|aa)+$"))'}},
            "metadata": {"rationale": "A catastrophic predicate."}}
    rules = load_ruleset([_rule_folder(tmp_path, rule)])
    monkeypatch.setattr(query_matcher, "REGEX_TIMEOUT_SECONDS", 0.2)
    report = _audit(_write(tmp_path / "run", {"solve.py": "s = '" + "a" * 5000 + "b'\n"}), rules)
    [gap] = report.verdict.gaps
    assert gap.rule_id == "ext-slow-query" and gap.error == "TimeoutError"
    quick = _audit(_write(tmp_path / "run2", {"solve.py": "s = 'aaaa'\n"}), rules)
    assert [f.rule_id for f in quick.findings] == ["ext-slow-query"] and not quick.verdict.gaps


def test_a_rule_that_raises_is_a_gap_and_a_dismissal_never_makes_it_clean(tmp_path, ruleset, monkeypatch):
    from mleaudit.audit.checks.provenance import assess, executed

    def broken(unit):
        raise ValueError("cannot walk")

    monkeypatch.setattr(assess, "find_write_sites", broken)
    monkeypatch.setattr(executed, "find_write_sites", broken)
    root = _write(tmp_path / "run", {"code/solve.py": "import pandas as pd\npd.DataFrame().to_csv('submission.csv')\n",
                                     "submission/submission.csv": "id,y\n1,0\n",
                                     "logs/agent.log": "$ python code/solve.py\n"})
    report = _audit(root, ruleset)
    errors = [g for g in report.verdict.gaps if g.kind is GapKind.RULE_ERROR]
    assert errors and all(g.error == "ValueError" and g.rule_id for g in errors)
    dismissed = [f.__class__(**{**{k: getattr(f, k) for k in f.__dataclass_fields__},
                                "review": {"decision": "dismissed", "note": ""}}) for f in report.findings]
    assert decide_verdict(dismissed, report.verdict.gaps).kind is VerdictKind.INCOMPLETE


def test_flagged_beats_incomplete_and_gaps_stay_listed(tmp_path, ruleset):
    report = _audit(_write(tmp_path / "run", {"solve.py": LLM_CALL, "blob.bin2": ZIP_BYTES}), ruleset)
    assert report.verdict.kind is VerdictKind.FLAGGED
    assert [g.path for g in report.verdict.gaps] == ["blob.bin2"]


def test_exit_codes_tell_clean_findings_and_incomplete_apart(tmp_path):
    clean = _write(tmp_path / "clean", {"solve.py": "print(1)\n"})
    llm = _write(tmp_path / "llm", {"solve.py": LLM_CALL})
    runner = CliRunner()
    assert runner.invoke(main, ["audit", str(clean), "--no-grade"]).exit_code == 0
    assert runner.invoke(main, ["audit", str(llm), "--no-grade"]).exit_code == 1
    result = runner.invoke(main, ["audit", str(tmp_path / "empty-typo"), "--no-grade"])
    assert result.exit_code in (2, EXIT_INCOMPLETE), result.output
    (tmp_path / "empty").mkdir()
    result = runner.invoke(main, ["audit", str(tmp_path / "empty"), "--no-grade", "--format", "json"])
    assert result.exit_code == EXIT_INCOMPLETE
    assert json.loads(result.stdout)["verdict"]["kind"] == "incomplete"


def test_fail_on_lower_than_high_keeps_a_low_finding_from_clean(tmp_path, ruleset):
    from mleaudit.audit.model import Severity

    report = _audit(_write(tmp_path / "run", {"solve.py": LLM_CALL}), ruleset, fail_on=Severity.INFO)
    assert exit_code(report, Severity.CRITICAL) in (0, 3) or report.verdict.kind is VerdictKind.FLAGGED


def test_an_internal_error_is_one_line_and_exit_4(tmp_path, monkeypatch):
    import mleaudit.audit.pipeline

    def explode(request, progress=None):
        raise KeyError("\x1b[2Jboom")

    monkeypatch.setattr(mleaudit.audit.pipeline, "run_audit", explode)
    result = CliRunner().invoke(main, ["audit", str(tmp_path)])
    assert result.exit_code == EXIT_INTERNAL_ERROR
    assert "internal error" in result.output and "Traceback" not in result.output and "\x1b" not in result.output


def test_names_and_texts_from_the_run_never_reach_the_terminal_raw(tmp_path):
    root = _write(tmp_path / "run", {"evil\x1b[2J\u202etxt.py": "import openai\nopenai.OpenAI().chat.completions.create(model='m')\n",
                                     "a.log": "$ curl https://api.openai.com/v1/x \x1b]8;;http://x\x07 \x9b31m\n"})
    result = CliRunner().invoke(main, ["audit", str(root), "--no-grade"])
    assert not any(ch in result.stdout for ch in ("\x1b", "\x07", "\x9b", "\u202e"))
    assert "\\x1b[2J" in result.stdout and "\\u202e" in result.stdout


@pytest.mark.parametrize("text", ["\x1b[31m", "a\nb\r", "\u202e\u2066\u200b\u2028", "\ud800", "\x00\x7f\x85\x9f"])
def test_terminal_safe_leaves_no_control_character(text):
    import unicodedata

    safe = terminal_safe(text)
    safe.encode("utf-8")
    assert not any(unicodedata.category(ch) in ("Cc", "Cf", "Zl", "Zp", "Cs") for ch in safe)


def test_hidden_folders_are_read_and_caches_are_listed(tmp_path, ruleset):
    root = _write(tmp_path / "run", {".x/solve.py": LLM_CALL, ".git/objects/ab": "blob", "__pycache__/a.pyc": b"\x00",
                                     ".ipynb_checkpoints/a-checkpoint.py": "print(1)\n"})
    report = _audit(root, ruleset)
    assert "llm-external-api-call" in {f.rule_id for f in report.findings}
    notes = {s.path: s.reason for s in report.skipped}
    assert notes[".git"].startswith("folder not entered") and notes["__pycache__"].startswith("folder not entered")
    assert ".ipynb_checkpoints" not in notes  # autosaves are read
    assert not report.verdict.gaps


def test_code_hidden_in_a_folder_not_entered_is_a_gap(tmp_path, ruleset):
    root = _write(tmp_path / "run", {"solve.py": "print(1)\n", ".git/hooks/x/solve.py": LLM_CALL})
    report = _audit(root, ruleset)
    assert report.verdict.kind is VerdictKind.INCOMPLETE
    [gap] = report.verdict.gaps
    assert gap.path == ".git" and "a file named as code: solve.py" in gap.reason


@pytest.mark.parametrize("source", [
    b'# -*- coding: unicode_escape -*-\n# x \\nimport openai\\nopenai.OpenAI().chat.completions.create(model="m")\n',
    b'# -*- coding: utf-7 -*-\n# x +AAo-import openai+AAo-openai.OpenAI().chat.completions.create(model=+ACI-m+ACI-)\n',
    b'# refine\rimport openai\ropenai.OpenAI().chat.completions.create(model="m")\nx = 1\n',
], ids=["unicode_escape cookie", "utf-7 cookie", "lone CR"])
def test_python_is_read_as_python_reads_it(tmp_path, ruleset, source):
    # A coding cookie or a lone CR changes what CPython runs; the audit must see the same code.
    report = _audit(_write(tmp_path / "run", {"refine.py": source}), ruleset)
    assert "llm-external-api-call" in {f.rule_id for f in report.findings}


def test_an_unknown_source_encoding_is_a_gap(tmp_path, ruleset):
    report = _audit(_write(tmp_path / "run", {"a.py": b"# coding: no-such-codec\nprint(1)\n",
                                              "b.py": b"print(2)\n"}), ruleset)
    assert [(g.kind, g.path) for g in report.verdict.gaps] == [(GapKind.FILE_UNREAD, "a.py")]


@pytest.mark.parametrize("fmt", ["markdown", "html"])
def test_reports_show_bidi_and_c1_characters_escaped(tmp_path, fmt):
    root = _write(tmp_path / "run", {"solve.py": "import openai  # \u202e\x9b31m\n" + LLM_CALL.split("\n", 1)[1]})
    result = CliRunner().invoke(main, ["audit", str(root), "--no-grade", "--format", fmt])
    assert "\u202e" not in result.stdout and "\x9b" not in result.stdout


@pytest.mark.parametrize("kind", list(GapKind))
def test_every_gap_kind_makes_an_incomplete_verdict_with_a_reason(kind: GapKind) -> None:
    verdict = decide_verdict([], [Gap(kind=kind, path="solution.py", reason="not checked")])
    assert verdict.kind is VerdictKind.INCOMPLETE and verdict.reasons and verdict.gaps[0].kind is kind
