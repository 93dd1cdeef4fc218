"""Bounded YAML loading: plain data, and a refusal that names its reason for hostile text."""

from __future__ import annotations

import pytest
import yaml

from mleaudit.grading.untrusted_yaml import UntrustedYAMLError, safe_load

HOSTILE = [
    ("[" * 5000 + "]" * 5000, "nested deeper than 64 levels"),
    ("a:\n" + "".join("  " * i + "- \n" for i in range(1, 80)), "nested deeper than 64 levels"),
    ("a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{c}: &{c} [{', '.join(['*' + p] * 10)}]\n" for p, c in zip("abcdefgh", "bcdefghi")),
     "values once its aliases are expanded"),
    ("id: x\nseverity: low\nseverity: critical\n", "the key 'severity' written twice"),
    ("id: !!python/object:os.system ls\n", ""),
    ("when: !!timestamp nope\n", ""),
    ("a: [1, 2\n", ""),
    ("a: b\n\x00", ""),
]


@pytest.mark.parametrize(("text", "cause"), HOSTILE)
def test_hostile_yaml_is_refused_with_its_reason(text, cause):
    with pytest.raises(UntrustedYAMLError) as info:
        safe_load(text)
    assert cause in str(info.value)


def test_plain_yaml_loads_as_plain_data():
    text = "id: r\nlist: [1, 2.5, true, null, '3']\nnested: {a: &x [1], b: *x}\nwhen: 2024-01-02\n"
    data = safe_load(text)
    assert data == yaml.safe_load(text)
    assert safe_load("") is None
