"""Every rule in rules/ is schema-valid, lives in its category folder and passes its self-tests."""

from __future__ import annotations

from pathlib import Path

import jsonschema
import pytest

from mleaudit.audit.rules.loader import iter_rule_files, load_rule_schema, load_ruleset, read_yaml
from mleaudit.audit.rules.testing import load_rule_tests, run_rule_tests, rule_test_path

RULES_ROOT = Path(__file__).resolve().parents[1] / "rules"
RULE_FILES = iter_rule_files(RULES_ROOT)
RULE_IDS = [p.name[: -len(".yaml")] for p in RULE_FILES]


@pytest.fixture(scope="module")
def ruleset():
    return load_ruleset(RULES_ROOT)


@pytest.fixture(scope="module")
def validator():
    return jsonschema.Draft202012Validator(load_rule_schema(RULES_ROOT / "schema.json"))


def test_rules_exist_for_every_category_folder():
    folders = sorted(p.name for p in RULES_ROOT.iterdir() if p.is_dir())
    assert folders == sorted({p.parent.name for p in RULE_FILES})
    assert len(RULE_FILES) >= 20


def test_ruleset_loads_with_a_stable_digest(ruleset):
    again = load_ruleset(RULES_ROOT)
    assert ruleset.ids() == tuple(sorted(RULE_IDS))
    assert again.digest == ruleset.digest
    assert len(ruleset.digest) == 64


@pytest.mark.parametrize("path", RULE_FILES, ids=RULE_IDS)
def test_rule_is_schema_valid(path, validator):
    errors = [e.message for e in validator.iter_errors(read_yaml(path))]
    assert errors == []


@pytest.mark.parametrize("path", RULE_FILES, ids=RULE_IDS)
def test_rule_sits_in_its_category_folder(path):
    assert read_yaml(path)["category"] == path.parent.name


@pytest.mark.parametrize("rule_id", RULE_IDS)
def test_rule_has_test_file_with_valid_and_invalid_cases(ruleset, rule_id):
    rule = ruleset.get(rule_id)
    assert rule_test_path(rule).is_file()
    cases = load_rule_tests(rule)
    assert len(cases["invalid"]) >= 1
    assert len(cases["valid"]) >= 1


@pytest.mark.parametrize("rule_id", RULE_IDS)
def test_rule_self_tests_pass(ruleset, rule_id):
    results = run_rule_tests([ruleset.get(rule_id)])
    failures = [f"{r.kind}[{r.index}]: {r.detail}" for r in results if not r.passed]
    assert failures == []
    assert any(r.kind == "invalid" for r in results)
    assert any(r.kind == "valid" for r in results)
