"""Docstrings and bare string statements are documentation: no rule reads them as code.

Every code rule that reads Python is run on each of its own must-fire Python cases embedded as a
module docstring, a function docstring, a class docstring and a bare string statement; the
text is then prose about the code, never the code, and the rule must stay silent.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from mleaudit.audit.rules.loader import load_ruleset
from mleaudit.audit.rules.spec import Target
from mleaudit.audit.rules.testing import load_rule_tests, run_case

RULES_ROOT = Path(__file__).resolve().parents[1] / "rules"
RULESET = load_ruleset(RULES_ROOT)


def _python_cases():
    for rule in RULESET:
        if Target.CODE not in rule.spec.targets or "python" not in (rule.spec.languages or ("python",)):
            continue
        for index, case in enumerate(load_rule_tests(rule)["invalid"]):
            if isinstance(case, str) and rule.spec.targets[0] is Target.CODE and (rule.spec.languages or ("python",))[0] == "python":
                source = case
            elif isinstance(case, dict) and "code" in case and case.get("language", "python") == "python":
                source = case["code"]
            else:
                continue
            if '"""' in source or "'''" in source:
                continue
            yield pytest.param(rule, source, id=f"{rule.id}-{index}")


def _as_documentation(source: str) -> dict[str, str]:
    escaped = source.replace("\\", "\\\\")
    return {
        "module docstring": f'"""{escaped}"""\nimport os\n',
        "function docstring": 'def helper():\n    """' + textwrap.indent(escaped, "    ").lstrip() + '"""\n    return None\n',
        "class docstring": "class Notes:\n    r'''" + textwrap.indent(source, "    ").lstrip() + "'''\n",
        "bare string": "x = 1\n'''" + escaped + "'''\n",
    }


@pytest.mark.parametrize("rule, source", list(_python_cases()))
def test_code_quoted_in_documentation_is_not_code(rule, source):
    for where, text in _as_documentation(source).items():
        findings = run_case(rule, {"code": text, "language": "python"})
        assert findings == [], f"{rule.id} fired on a {where}: {findings[0].message}"


def test_the_same_code_outside_documentation_still_fires():
    # The wrapping is what silences the rules: unwrapped, the first case of each rule fires.
    rule = next(r for r in RULESET if r.id == "llm-api-endpoint-url")
    code = 'import requests\nrequests.post("https://api.anthropic.com/v1/messages", json=body)\n'
    assert run_case(rule, {"code": code, "language": "python"})
    doc = '"""Talks to api.anthropic.com only in the hosted variant, which this module does not use."""\n'
    assert run_case(rule, {"code": doc + "import numpy as np\n", "language": "python"}) == []
