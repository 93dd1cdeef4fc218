"""The rule self-test runner: case kinds, todo lists, malformed test files."""

from __future__ import annotations

from mleaudit.audit.rules.loader import load_ruleset
from mleaudit.audit.rules.testing import run_rule_tests

from .conftest import write_rule

RULE = """\
target: [code, log]
languages: [python, bash]
match:
  regex: '(?P<x>kaggle competitions download)'
focus: x
"""


def _results(rules_dir, test_yaml: str, rule_id: str = "ext-k", body: str = RULE, **kwargs):
    path = write_rule(rules_dir, rule_id, body, **kwargs)
    if test_yaml is not None:
        path.with_name(f"{rule_id}.test.yaml").write_text(test_yaml)
    return run_rule_tests(load_ruleset(rules_dir))


def _summary(results):
    return [(r.kind, r.index, r.passed, r.detail) for r in results]


def test_cases_pass_and_fail_with_reasons(rules_dir):
    results = _results(rules_dir, """\
id: ext-k
invalid:
  - "!kaggle competitions download -c x"
  - "print('nothing')"
  - log: "$ kaggle competitions download -c x"
valid:
  - "x = 1"
  - code: "kaggle competitions download -c x"
    language: bash
todo_invalid:
  - "kaggle  competitions  download"
  - "kaggle competitions download"
todo_valid:
  - "# kaggle competitions download"
""")
    assert _summary(results) == [
        ("invalid", 0, True, ""),
        ("invalid", 1, False, "expected a finding, got none"),
        ("invalid", 2, True, ""),
        ("valid", 0, True, ""),
        ("valid", 1, False, "expected no finding, got: found kaggle competitions download"),
        ("todo_invalid", 0, True, ""),
        ("todo_invalid", 1, True, "now behaves as wished: move it to invalid"),
        ("todo_valid", 0, True, ""),
    ]
    assert [r.is_todo for r in results] == [False] * 5 + [True] * 3


def test_missing_or_incomplete_test_files(rules_dir):
    [missing] = _results(rules_dir, None)
    assert (missing.kind, missing.passed) == ("file", False)
    assert missing.detail.endswith("test file ext-k.test.yaml is missing")

    [incomplete] = _results(rules_dir, "id: ext-other\ninvalid: ['x']\nextra: 1\n")
    assert incomplete.kind == "file" and not incomplete.passed
    assert incomplete.detail.endswith(
        "id 'ext-other' differs from the rule id; unknown keys ['extra'] (allowed: id, invalid, valid, todo_invalid, "
        "todo_valid); needs at least one 'valid' case"
    )


def test_malformed_cases_fail_with_a_message(rules_dir):
    results = _results(rules_dir, """\
id: ext-k
invalid:
  - {code: "x", log: "y"}
  - {run: some-run}
  - 42
valid: ["x"]
""")
    details = [r.detail for r in results if not r.passed]
    assert details == [
        "ext-k: a case mapping needs exactly one of code/log/file/run (plus language, path, policy); got keys ['code', 'log']",
        "ext-k: a run case for a rule that targets code, log",
        "ext-k: a case must be a string or a mapping, got int",
    ]


def test_similarity_and_run_cases(rules_dir, tmp_path):
    body = "when:\n  agent_containment: {gte: 0.5}\n"
    results = _results(rules_dir, """\
id: plag-k
invalid: [{agent_containment: 0.7}, {agent_containment: 0.9, bogus: 1}]
valid: [{agent_containment: 0.1}, "text"]
""", rule_id="plag-k", body=body, folder="plagiarism", category="plagiarism", target="similarity",
                       message="{agent_containment:.0%}")
    assert _summary(results)[0] == ("invalid", 0, True, "")
    assert results[1].detail.startswith("plag-k: unknown pair fields ['bogus']")
    assert results[3].detail == "plag-k: a similarity case is a mapping of pair fields, got 'text'"

    run_dir = tmp_path / "other"
    run_dir.mkdir()
    write_rule(run_dir, "sub-k", "match:\n  builtin: submission-equals-answers\n", folder="answers-access",
               category="answers-access", target="run", message="{match_fraction}")
    (run_dir / "answers-access" / "sub-k.test.yaml").write_text(
        "id: sub-k\ninvalid: [equals-answers]\nvalid: [{run: model-predictions}, {run: nowhere}]\n")
    results = run_rule_tests(load_ruleset(run_dir))
    assert [r.passed for r in results] == [True, True, False]
    assert results[2].detail.startswith("run fixture 'nowhere' not found under ")


TERMS_RULE = """\
target: code
languages: [python]
match:
  all:
    - regex: '(?P<x>use\\(\\w+\\))'
    - terms: {capture: x, policy: label_leak_columns}
focus: x
"""


def test_cases_can_run_under_a_competition_policy(rules_dir):
    results = _results(rules_dir, """\
id: leak-k
invalid:
  - code: "use(late_col)"
    policy: {label_leak_columns: [late_col]}
valid:
  - "use(late_col)"
  - code: "use(late_col)"
    policy: {label_leak_columns: [other_col], allow_urls: [example.org]}
  - code: "use(late_col)"
    policy: {leak_cols: [late_col]}
  - code: "use(late_col)"
    policy: {label_leak_columns: late_col}
""", rule_id="leak-k", body=TERMS_RULE, folder="label-leak", category="label-leak")
    summary = _summary(results)
    assert summary[:3] == [("invalid", 0, True, ""), ("valid", 0, True, ""), ("valid", 1, True, "")]
    assert summary[3][:3] == ("valid", 2, False)
    assert "unknown policy keys ['leak_cols']" in summary[3][3]
    assert summary[4][:3] == ("valid", 3, False)
    assert "a case's policy is a mapping of string lists" in summary[4][3]
