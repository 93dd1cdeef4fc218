"""``mleaudit rules``: list, show, validate, test and docs, on the shipped rules and on small rule folders."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from mleaudit.audit.cli import main
from mleaudit.audit.rules.loader import iter_rule_files, load_ruleset

ROOT = Path(__file__).resolve().parents[1]
RULES = ROOT / "rules"

GOOD_RULE = """\
id: ext-toy-fetch
title: Toy fetch
message: "Fetches {url}."
severity: high
confidence: medium
category: external-resource
target: log
match:
  regex: '(?P<url>https://toy\\.example/\\S+)'
focus: url
metadata:
  rationale: For the command-line tests.
  references: [https://example.org/toy]
"""
GOOD_TESTS = """\
id: ext-toy-fetch
invalid:
  - "$ wget https://toy.example/labels.csv"
valid:
  - "$ wget https://other.example/labels.csv"
"""


def _invoke(*args: str):
    return CliRunner().invoke(main, ["rules", *args])


@pytest.fixture
def toy_rules(tmp_path: Path) -> Path:
    root = tmp_path / "rules"
    (root / "external-resource").mkdir(parents=True)
    (root / "schema.json").write_text((RULES / "schema.json").read_text())
    (root / "external-resource" / "ext-toy-fetch.yaml").write_text(GOOD_RULE)
    (root / "external-resource" / "ext-toy-fetch.test.yaml").write_text(GOOD_TESTS)
    return root


def test_rule_count_and_categories():
    ruleset = load_ruleset(RULES)
    assert len(ruleset) >= 20
    categories = {r.spec.category for r in ruleset}
    assert categories == {"llm-api", "manual-submission", "external-resource", "answers-access",
                          "validation-probing", "label-leak", "sandbox-tamper", "plagiarism", "grading"}


def test_list_shows_every_rule_as_a_table():
    result = _invoke("list")
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0].split()[:5] == ["id", "category", "severity", "confidence", "target"]
    ids = {line.split()[0] for line in lines[1:-1]}
    assert ids == {p.name[: -len(".yaml")] for p in iter_rule_files(RULES)}
    assert lines[-1] == f"{len(ids)} rule(s)"


def test_list_filters_by_category_as_json():
    result = _invoke("list", "--category", "llm-api", "--format", "json")
    assert result.exit_code == 0, result.output
    rules = json.loads(result.output)
    assert rules and {r["category"] for r in rules} == {"llm-api"}
    assert [r["id"] for r in rules] == sorted(r["id"] for r in rules)
    first = rules[0]
    assert set(first) == {"id", "title", "category", "severity", "confidence", "targets", "languages", "events",
                          "status", "message", "rationale", "references", "since", "source"}


def test_list_unknown_category_is_an_input_error():
    result = _invoke("list", "--category", "llm")
    assert result.exit_code == 2
    assert "no rule has category 'llm'" in result.output and "llm-api" in result.output


def test_show_prints_metadata_rationale_and_matcher():
    result = _invoke("show", "llm-external-api-call")
    assert result.exit_code == 0, result.output
    assert result.output.startswith("llm-external-api-call: Calls a hosted LLM API from agent code\n")
    for part in ("  category    llm-api", "  severity    high", "Rationale:", "References:", "Matcher:", "  match:\n    any:", "chat\\\\.completions"):
        assert part in result.output


def test_show_json_and_unknown_id():
    result = _invoke("show", "env-sudo-command", "--format", "json")
    assert json.loads(result.output)["id"] == "env-sudo-command"
    result = _invoke("show", "env-sudo")
    assert result.exit_code == 2
    assert "no rule 'env-sudo' (did you mean 'env-sudo-command'?)" in result.output


def test_test_one_shipped_rule_reports_each_case():
    result = _invoke("test", "ext-kaggle-cli-download")
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert any(line.startswith("ok    ext-kaggle-cli-download") and "invalid[0]" in line for line in lines)
    assert any("valid[0]" in line and "0 finding(s)" in line for line in lines)
    assert lines[-1].startswith("1 rule(s), ") and lines[-1].endswith(" 0 failed, 0 todo")


def test_test_exits_1_on_a_failing_case(toy_rules):
    tests = toy_rules / "external-resource" / "ext-toy-fetch.test.yaml"
    tests.write_text(GOOD_TESTS.replace("other.example", "toy.example"))
    result = _invoke("test", "--rules", str(toy_rules))
    assert result.exit_code == 1
    assert "FAIL  ext-toy-fetch" in result.output and "valid[0]" in result.output
    assert "expected no finding, got: Fetches https://toy.example/labels.csv." in result.output
    assert result.output.splitlines()[-1] == "1 rule(s), 2 case(s): 1 passed, 1 failed, 0 todo"
    quiet = _invoke("test", "--rules", str(toy_rules), "--failures-only")
    assert [line.split()[0] for line in quiet.output.splitlines()[:-1]] == ["FAIL"]


def test_test_reports_a_missing_test_file(toy_rules):
    (toy_rules / "external-resource" / "ext-toy-fetch.test.yaml").unlink()
    result = _invoke("test", "--rules", str(toy_rules))
    assert result.exit_code == 1
    assert "FAIL  ext-toy-fetch" in result.output and "test file" in result.output and "is missing" in result.output


def test_test_unknown_rule_is_an_input_error(toy_rules):
    result = _invoke("test", "ext-nope", "--rules", str(toy_rules))
    assert result.exit_code == 2 and "no rule 'ext-nope'" in result.output


def test_docs_is_a_deterministic_markdown_catalogue(toy_rules, tmp_path):
    result = _invoke("docs", "--rules", str(toy_rules))
    assert result.exit_code == 0, result.output
    text = result.output
    assert text.startswith("# mleaudit rule reference\n")
    assert "| [`ext-toy-fetch`](#ext-toy-fetch) | external-resource | high | medium | Toy fetch |" in text
    assert "## external-resource" in text and "### ext-toy-fetch" in text
    assert "- message: `Fetches {url}.`" in text and "For the command-line tests." in text
    assert "References: <https://example.org/toy>" in text
    assert "**Flagged** (1 case in `ext-toy-fetch.test.yaml`):" in text
    assert "$ wget https://toy.example/labels.csv" in text
    assert "**Not flagged** (1 case in `ext-toy-fetch.test.yaml`):" in text
    out = tmp_path / "rules.md"
    written = _invoke("docs", "--rules", str(toy_rules), "-o", str(out))
    assert written.exit_code == 0 and out.read_text() == text


def test_docs_of_the_shipped_rules_cover_every_rule():
    result = _invoke("docs")
    assert result.exit_code == 0, result.output
    for path in iter_rule_files(RULES):
        assert f"\n### {path.name[: -len('.yaml')]}\n" in result.output
    assert "under the competition policy" in result.output  # policy-driven examples are labelled


def test_docs_to_an_unwritable_path_is_an_input_error(toy_rules, tmp_path):
    result = _invoke("docs", "--rules", str(toy_rules), "-o", str(tmp_path / "missing" / "rules.md"))
    assert result.exit_code == 2 and "cannot write" in result.output


def test_validate_passes_and_lists_every_problem(toy_rules):
    ok = _invoke("validate", "--rules", str(toy_rules))
    assert ok.exit_code == 0 and "1 rules in" in ok.output
    (toy_rules / "external-resource" / "ext-toy-fetch.yaml").write_text(GOOD_RULE.replace("severity: high", "severity: huge"))
    (toy_rules / "external-resource" / "ext-other.yaml").write_text(GOOD_RULE.replace("ext-toy-fetch", "ext-other")
                                                                    .replace("{url}", "{nothing}"))
    bad = _invoke("validate", "--rules", str(toy_rules))
    assert bad.exit_code == 1
    assert "2 problem(s) in the ruleset" in bad.output
    assert "ext-toy-fetch (" in bad.output and "'huge' is not one of" in bad.output
    assert "ext-other (" in bad.output and "message placeholder(s) ['nothing']" in bad.output


def test_broken_or_missing_rules_folder_is_an_input_error(toy_rules, tmp_path):
    (toy_rules / "external-resource" / "ext-toy-fetch.yaml").write_text("id: [unclosed\n")
    for command in ("list", "show", "test", "docs"):
        args = [command, "ext-toy-fetch"] if command == "show" else [command]
        result = _invoke(*args, "--rules", str(toy_rules))
        assert result.exit_code == 2, (command, result.output)
        assert result.output.startswith("Error: 1 problem(s) in the ruleset")
        assert "Traceback" not in result.output
    missing = _invoke("list", "--rules", str(tmp_path / "nowhere"))
    assert missing.exit_code == 2 and "not a directory" in missing.output
