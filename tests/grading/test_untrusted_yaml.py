"""Bounded YAML loading gives the same data and the same refusals with libyaml and without it."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from mleaudit.grading import untrusted_yaml
from mleaudit.grading.untrusted_yaml import UntrustedYAMLError, safe_load

REPO = Path(__file__).resolve().parents[2]
LOADERS = [pytest.param(yaml.SafeLoader, id="python")]
if getattr(yaml, "CSafeLoader", None) is not None:
    LOADERS.append(pytest.param(yaml.CSafeLoader, id="libyaml"))

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


@pytest.fixture(params=LOADERS)
def loader(request, monkeypatch):
    monkeypatch.setattr(untrusted_yaml, "_LOADER", request.param)
    return request.param


@pytest.mark.parametrize(("text", "cause"), HOSTILE)
def test_hostile_yaml_is_refused_with_its_reason(loader, text, cause):
    with pytest.raises(UntrustedYAMLError) as info:
        safe_load(text)
    assert cause in str(info.value)


def test_plain_yaml_loads_as_plain_data(loader):
    text = "id: r\nlist: [1, 2.5, true, null, '3']\nnested: {a: &x [1], b: *x}\nwhen: 2024-01-02\n"
    data = safe_load(text)
    assert data == yaml.safe_load(text)
    assert safe_load("") is None


def test_shipped_yaml_reads_the_same_with_both_loaders(monkeypatch):
    if len(LOADERS) < 2:
        pytest.skip("PyYAML was built without libyaml")
    files = sorted([*(REPO / "rules").rglob("*.yaml"), *(REPO / "competitions").rglob("*.yaml")])
    assert len(files) > 50
    for path in files:
        text = path.read_text(encoding="utf-8")
        monkeypatch.setattr(untrusted_yaml, "_LOADER", yaml.SafeLoader)
        python = safe_load(text)
        monkeypatch.setattr(untrusted_yaml, "_LOADER", yaml.CSafeLoader)
        assert safe_load(text) == python, path
