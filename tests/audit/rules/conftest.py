"""Helpers for rules-engine tests: write small rule files into a temporary rules folder."""

from __future__ import annotations

import tempfile
from pathlib import Path
from textwrap import dedent

import pytest
import yaml

from mleaudit.audit.rules.loader import CompiledRule, load_ruleset

BASE_RULE = """\
id: {id}
title: Test rule
message: "{message}"
severity: high
confidence: medium
category: {category}
target: {target}
{extra}
metadata:
  rationale: For tests.
"""


def write_rule(root: Path, rule_id: str, body: str = "", *, folder: str = "external-resource",
               category: str = "external-resource", target: str = "code", message: str = "found {x}",
               stem: str | None = None) -> Path:
    """Write ``<root>/<folder>/<stem or id>.yaml`` from :data:`BASE_RULE` plus ``body`` (YAML)."""
    path = root / folder / f"{stem or rule_id}.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    extra = dedent(body).strip()
    text = BASE_RULE.format(id=rule_id, message=message, category=category, target=target, extra=extra)
    # A top-level key of the body replaces the default one (a key written twice is refused).
    overridden = {line.split(":", 1)[0] for line in extra.splitlines() if line and not line[0].isspace() and ":" in line}
    base_lines = text[: text.index(extra)] if extra else text
    kept = [line for line in base_lines.splitlines(keepends=True) if line.split(":", 1)[0] not in overridden]
    text = "".join(kept) + text[len(base_lines):]
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def rules_dir(tmp_path: Path) -> Path:
    root = tmp_path / "rules"
    root.mkdir()
    return root


def make_rule(data: dict) -> CompiledRule:
    """A compiled rule from a mapping (defaults fill the required keys), with the loader's checks."""
    full = {
        "id": "ext-test", "title": "Test rule", "message": "found {x}", "severity": "high",
        "confidence": "medium", "category": "external-resource", "target": "code", "languages": ["python"],
        "metadata": {"rationale": "For tests."},
    }
    full.update(data)
    full = {key: value for key, value in full.items() if value is not None}  # None removes a default
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / full["category"]
        folder.mkdir()
        (folder / f"{full['id']}.yaml").write_text(yaml.safe_dump(full), encoding="utf-8")
        return load_ruleset(Path(tmp)).get(full["id"])
