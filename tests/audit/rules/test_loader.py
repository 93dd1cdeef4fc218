"""Loading rules: discovery, schema and meaning checks collected into one error, digest, folder lookup."""

from __future__ import annotations

from pathlib import Path

import pytest

from mleaudit import audit
from mleaudit.audit.errors import ConfigError, RuleError
from mleaudit.audit.model import Confidence, Severity
from mleaudit.audit.rules.loader import RULES_ENV, RulesetError, find_rules_root, iter_rule_files, load_ruleset
from mleaudit.audit.rules.spec import DEFAULT_EVENTS, QuerySpec, RegexSpec, RuleSpec, RuleStatus, Target
from mleaudit.audit.units import LogEventKind

from .conftest import write_rule

REGEX_X = """\
languages: [python]
match:
  regex: '(?P<x>kaggle)'
focus: x
"""


def _causes(exc: RulesetError) -> list[tuple[str, str]]:
    return [(p.rule_id, p.cause) for p in exc.problems]


def test_loads_valid_rules_sorted_and_skips_test_files(rules_dir):
    write_rule(rules_dir, "ext-b", REGEX_X)
    write_rule(rules_dir, "ext-a", REGEX_X)
    (rules_dir / "external-resource" / "ext-a.test.yaml").write_text("id: ext-a\n")
    ruleset = load_ruleset(rules_dir)
    assert ruleset.ids() == ("ext-a", "ext-b")
    assert [p.name for p in iter_rule_files(rules_dir)] == ["ext-a.yaml", "ext-b.yaml"]
    spec = ruleset.get("ext-a").spec
    assert spec.severity is Severity.HIGH and spec.confidence is Confidence.MEDIUM
    assert spec.targets == (Target.CODE,) and spec.events == DEFAULT_EVENTS
    assert spec.source_path == rules_dir / "external-resource" / "ext-a.yaml"


def test_all_problems_are_reported_together(rules_dir):
    write_rule(rules_dir, "ext-bad-regex", "languages: [python]\nmatch:\n  regex: '(?P<x>unclosed'\n")
    write_rule(rules_dir, "ext-bad-query", "languages: [python]\nmatch:\n  query: '(call function: @x'\n")
    write_rule(rules_dir, "ext-other-name", REGEX_X, stem="ext-stem")
    write_rule(rules_dir, "ext-dup", REGEX_X, folder="one")
    write_rule(rules_dir, "ext-dup", REGEX_X, folder="two")
    write_rule(rules_dir, "ext-fine", REGEX_X)
    with pytest.raises(RulesetError) as info:
        load_ruleset(rules_dir)
    causes = _causes(info.value)
    assert len(causes) == 4
    by_rule = dict(causes)
    assert by_rule["ext-bad-regex"].startswith("regex does not compile: missing )")
    assert by_rule["ext-bad-query"].startswith("python query does not compile:")
    assert by_rule["ext-other-name"] == "id 'ext-other-name' differs from the file stem 'ext-stem'"
    assert by_rule["ext-dup"].startswith("duplicate id, first defined in ")
    assert str(rules_dir / "one" / "ext-dup.yaml") in by_rule["ext-dup"]
    message = str(info.value)
    assert message.startswith("4 problem(s) in the ruleset:\n")
    # each line names the rule, its file and the cause
    assert f"  - ext-bad-query ({rules_dir / 'external-resource' / 'ext-bad-query.yaml'}): python query" in message
    assert isinstance(info.value, RuleError)


def test_semantic_checks(rules_dir):
    write_rule(rules_dir, "ext-focus", "languages: [python]\nmatch:\n  regex: '(?P<x>a)'\nfocus: y\n")
    write_rule(rules_dir, "ext-placeholder", "languages: [python]\nmatch:\n  regex: 'a'\n")
    write_rule(rules_dir, "ext-language", "languages: [cobol]\nmatch:\n  regex: '(?P<x>a)'\n")
    write_rule(rules_dir, "llm-wrong-category", "languages: [python]\nmatch:\n  regex: '(?P<x>a)'\n")
    write_rule(rules_dir, "ext-builtin", "match:\n  builtin: no-such-check\n", target="run", message="x")
    write_rule(rules_dir, "ext-builtin-in-code", "languages: [python]\nmatch:\n  builtin: submission-equals-answers\n",
               message="x")
    write_rule(rules_dir, "ext-params", "match:\n  builtin: submission-equals-answers\n  params: {nope: 1}\n",
               target="run", message="x")
    write_rule(rules_dir, "ext-predicate", "languages: [python]\nmatch:\n  query: '((identifier) @x (#not-any-of? @x \"a\"))'\n")
    write_rule(rules_dir, "ext-detached", "languages: [python]\nmatch:\n  query: '[(identifier) @x] (#eq? @x \"a\")'\n")
    with pytest.raises(RulesetError) as info:
        load_ruleset(rules_dir)
    by_rule = dict(_causes(info.value))
    assert by_rule["ext-focus"] == "focus 'y' is not a capture of the matcher (captures: x)"
    assert by_rule["ext-placeholder"] == "message placeholder(s) ['x'] name no capture or field (available: file, line)"
    assert by_rule["ext-language"] == "unknown language(s) ['cobol'] (known: bash, python)"
    assert by_rule["llm-wrong-category"] == "id prefix 'llm'- does not fit category 'external-resource' (expected ext-)"
    assert by_rule["ext-builtin"].startswith("unknown built-in check 'no-such-check' (known: ")
    assert "submission-equals-answers" in by_rule["ext-builtin"]
    assert by_rule["ext-builtin-in-code"] == "`builtin` matchers are only valid in `run` rules"
    assert by_rule["ext-params"].startswith("bad params for built-in check 'submission-equals-answers':")
    assert by_rule["ext-predicate"].startswith("python query uses predicate(s) #not-any-of?, which tree-sitter ignores")
    assert by_rule["ext-detached"].startswith("python query pattern(s) [1] have no @capture")


def test_schema_errors_name_the_field(rules_dir):
    write_rule(rules_dir, "ext-severity", REGEX_X).write_text(
        (rules_dir / "external-resource" / "ext-severity.yaml").read_text().replace("severity: high", "severity: huge")
    )
    write_rule(rules_dir, "ext-not-top", "languages: [python]\nmatch:\n  not:\n    regex: a\n")
    path = rules_dir / "external-resource" / "ext-yaml.yaml"
    path.write_text("id: ext-yaml\ntitle: [unclosed\n")
    with pytest.raises(RulesetError) as info:
        load_ruleset(rules_dir)
    causes = _causes(info.value)
    assert ("ext-severity", "schema: $.severity: 'huge' is not one of ['info', 'low', 'medium', 'high', 'critical']") in causes
    assert any(rule == "ext-not-top" and cause.startswith("schema: $.match") for rule, cause in causes)
    assert any(rule == "ext-yaml" and cause.startswith("cannot read YAML:") for rule, cause in causes)


def test_digest_depends_on_content_only(rules_dir, tmp_path):
    write_rule(rules_dir, "ext-a", REGEX_X)
    first = load_ruleset(rules_dir).digest
    copy = tmp_path / "copy"
    write_rule(copy, "ext-a", REGEX_X)
    assert load_ruleset(copy).digest == first
    write_rule(rules_dir, "ext-a", REGEX_X.replace("kaggle", "kaggle2"))
    assert load_ruleset(rules_dir).digest != first


def test_find_rules_root_order(tmp_path, monkeypatch):
    option, env = tmp_path / "opt", tmp_path / "env"
    option.mkdir()
    env.mkdir()
    monkeypatch.setenv(RULES_ENV, str(env))
    assert find_rules_root(option) == option
    assert find_rules_root() == env
    monkeypatch.delenv(RULES_ENV)
    assert find_rules_root() == Path(audit.__file__).resolve().parents[1] / "rules"
    with pytest.raises(ConfigError, match="--rules .*missing: not a directory"):
        find_rules_root(tmp_path / "missing")


def test_find_rules_root_names_all_three_sources(tmp_path, monkeypatch):
    monkeypatch.delenv(RULES_ENV, raising=False)
    monkeypatch.setattr(audit, "__file__", str(tmp_path / "pkg" / "audit" / "__init__.py"))
    with pytest.raises(ConfigError) as info:
        find_rules_root()
    message = str(info.value)
    assert "--rules DIR" in message and RULES_ENV in message and str(tmp_path / "pkg" / "rules") in message


def test_rule_spec_from_dict_builds_matchers_and_thresholds():
    spec = RuleSpec.from_dict({
        "id": "ext-x", "title": "t", "message": "m", "severity": "low", "confidence": "high",
        "category": "external-resource", "target": ["log", "code"], "languages": ["python", "bash"],
        "events": ["command"], "status": "experimental",
        "match": {"any": [{"query": "(identifier) @x"}, {"regex": "a", "regex_flags": ["ignorecase"]}]},
        "metadata": {"rationale": "r", "references": ["https://example.org"], "since": "0.1.0"},
    })
    assert spec.targets == (Target.LOG, Target.CODE) and spec.target is Target.LOG
    assert spec.events == (LogEventKind.COMMAND,)
    assert spec.status is RuleStatus.EXPERIMENTAL
    query, regex = spec.match.children
    assert query == QuerySpec(queries=(("python", "(identifier) @x"), ("bash", "(identifier) @x")))
    assert regex == RegexSpec(pattern="a", flags=("ignorecase",))
    similarity = RuleSpec.from_dict({
        "id": "plag-x", "title": "t", "message": "m", "severity": "medium", "confidence": "medium",
        "category": "plagiarism", "target": "similarity", "metadata": {"rationale": "r"},
        "when": {"agent_containment": {"gte": 0.5}, "longest_fragment": {"gte": 20, "lt": 100}},
    })
    conditions = similarity.when.conditions
    assert [(c.field, c.op, c.value) for c in conditions] == [
        ("agent_containment", "gte", 0.5), ("longest_fragment", "gte", 20.0), ("longest_fragment", "lt", 100.0)]


def test_rule_spec_from_dict_needs_languages_for_a_plain_query():
    with pytest.raises(RuleError, match=r"ext-x \(r.yaml\): a query given as one string needs the rule's `languages`"):
        RuleSpec.from_dict({
            "id": "ext-x", "title": "t", "message": "m", "severity": "low", "confidence": "high",
            "category": "external-resource", "target": "code", "match": {"query": "(identifier) @x"},
            "metadata": {"rationale": "r"},
        }, source_path=Path("r.yaml"))


@pytest.mark.parametrize(("text", "cause"), [
    ("[" * 5000 + "]" * 5000, "nested deeper than 64 levels"),
    ("a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{c}: &{c} [{', '.join(['*' + p] * 10)}]\n" for p, c in zip("abcdefgh", "bcdefghi")),
     "values once its aliases are expanded"),
    ("id: ext-dup\nseverity: low\nseverity: critical\n", "the key 'severity' written twice"),
    ("id: !!python/object:os.system ls\n", "cannot read YAML"),
    ("n: 1" + "0" * 5000 + "\n", ""),
])
def test_hostile_rule_yaml_is_a_problem_of_its_file(rules_dir, text, cause):
    path = rules_dir / "external-resource" / "ext-dup.yaml"
    path.parent.mkdir(parents=True)
    path.write_text(text, encoding="utf-8")
    with pytest.raises(RulesetError) as info:
        load_ruleset(rules_dir)
    assert "ext-dup.yaml" in str(info.value) and cause in str(info.value)
