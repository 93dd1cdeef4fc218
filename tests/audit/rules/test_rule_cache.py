"""Rule documents kept on disk by their bytes: a hit is exactly a fresh read; anything else is read afresh."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from mleaudit.audit.rules.cache import RuleDocumentCache, rule_cache_root
from mleaudit.audit.rules.loader import RulesetError, find_rules_root, load_ruleset

RULE = """id: llm-test-cached-call
title: Test rule for the cache
category: llm-api
severity: high
confidence: high
target: code
languages: [python]
match:
  regex: 'invented_client\\.complete\\('
message: "calls the invented client"
metadata:
  rationale: A call of an invented client, for the cache tests.
"""


@pytest.fixture(autouse=True)
def _no_compiled_rulesets(monkeypatch):
    """These tests read rule documents through the cache on disk: no ruleset compiled before stands in."""
    from mleaudit.audit.rules import loader

    monkeypatch.setattr(loader, "_COMPILED", {})
    monkeypatch.setattr(loader, "_MAX_COMPILED", 0)


def _rules(tmp_path: Path, text: str = RULE) -> Path:
    root = tmp_path / "rules"
    (root / "llm-api").mkdir(parents=True)
    shutil.copy(find_rules_root() / "schema.json", root / "schema.json")
    (root / "llm-api" / "llm-test-cached-call.yaml").write_text(text, encoding="utf-8")
    return root


def _entries(cache: Path) -> list[Path]:
    return sorted((cache / "rules").glob("*.json")) if (cache / "rules").is_dir() else []


def test_a_cached_ruleset_equals_a_fresh_one(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("MLEAUDIT_CACHE_DIR", str(tmp_path / "cache"))
    first = load_ruleset()
    stored = _entries(tmp_path / "cache")
    assert len(stored) == len(first.rules)
    second = load_ruleset()
    monkeypatch.setenv("MLEAUDIT_CACHE_DIR", "off")
    fresh = load_ruleset()
    for ruleset in (second, fresh):
        assert ruleset.digest == first.digest
        assert [r.spec for r in ruleset.rules] == [r.spec for r in first.rules]


def test_off_keeps_nothing(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("MLEAUDIT_CACHE_DIR", "off")
    assert rule_cache_root() is None
    load_ruleset(_rules(tmp_path))
    assert not list(tmp_path.rglob("*.json.tmp")) and not (tmp_path / "cache").exists()


def test_a_changed_file_is_read_again_and_its_problems_reported(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("MLEAUDIT_CACHE_DIR", str(tmp_path / "cache"))
    root = _rules(tmp_path)
    assert [r.id for r in load_ruleset(root).rules] == ["llm-test-cached-call"]
    (root / "llm-api" / "llm-test-cached-call.yaml").write_text(RULE.replace("severity: high", "severity: loud"),
                                                                  encoding="utf-8")
    with pytest.raises(RulesetError, match="severity"):
        load_ruleset(root)
    # a document that failed the schema is never stored
    assert len(_entries(tmp_path / "cache")) == 1


@pytest.mark.parametrize("damage", ["", "{", "[]", '{"key": "other", "document": {}}', '{"document": {"id": 1}}'])
def test_a_damaged_entry_is_ignored_and_the_file_read(tmp_path: Path, monkeypatch, damage: str) -> None:
    monkeypatch.setenv("MLEAUDIT_CACHE_DIR", str(tmp_path / "cache"))
    root = _rules(tmp_path)
    expected = load_ruleset(root)
    (entry,) = _entries(tmp_path / "cache")
    entry.write_text(damage, encoding="utf-8")
    again = load_ruleset(root)
    assert [r.spec for r in again.rules] == [r.spec for r in expected.rules]


def test_an_entry_naming_its_own_key_is_what_a_hit_returns(tmp_path: Path) -> None:
    cache = RuleDocumentCache(tmp_path, b"{}")
    cache.put(b"id: x\n", {"id": "x", "n": [1, 2.5, True, None]})
    assert cache.get(b"id: x\n") == {"id": "x", "n": [1, 2.5, True, None]}
    assert cache.get(b"id: y\n") is None
    # another schema is another key
    assert RuleDocumentCache(tmp_path, b'{"type": "object"}').get(b"id: x\n") is None


@pytest.mark.parametrize("document", [{1: "a"}, {"when": __import__("datetime").date(2024, 1, 1)},
                                      {"x": float("nan")}, {"x": (1, 2)}, {True: 1}])
def test_documents_json_cannot_carry_exactly_are_not_stored(tmp_path: Path, document) -> None:
    cache = RuleDocumentCache(tmp_path, b"{}")
    cache.put(b"raw", document)
    assert cache.get(b"raw") is None and not list(tmp_path.glob("*.json"))


def test_an_unwritable_cache_is_not_an_error(tmp_path: Path, monkeypatch) -> None:
    blocker = tmp_path / "cache"
    blocker.write_text("a file where the folder would be", encoding="utf-8")
    monkeypatch.setenv("MLEAUDIT_CACHE_DIR", str(blocker))
    assert [r.id for r in load_ruleset(_rules(tmp_path)).rules] == ["llm-test-cached-call"]


def _entry_path(tmp_path: Path, root: Path) -> Path:
    load_ruleset(root)
    (entry,) = _entries(tmp_path / "cache")
    return entry


def test_a_hostile_entry_never_crashes_the_load_nor_passes_the_schema(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("MLEAUDIT_CACHE_DIR", str(tmp_path / "cache"))
    root = _rules(tmp_path)
    entry = _entry_path(tmp_path, root)
    key = json.loads(entry.read_text(encoding="utf-8"))["key"]
    expected = [r.spec for r in load_ruleset(root).rules]
    deep = "[" * 100_000 + "]" * 100_000
    for text in (json.dumps({"key": key, "document": [1, 2]}), json.dumps({"key": key, "document": "x"}),
                 '{"key": "%s", "document": %s}' % (key, deep), "\x00\xff", "{" * 10):
        entry.write_text(text, encoding="latin-1")
        assert [r.spec for r in load_ruleset(root).rules] == expected
    # a document that names its key but breaks the schema is refused as the file would be
    entry.write_text(json.dumps({"key": key, "document": {"id": "llm-test-cached-call", "severity": "loud"}}),
                     encoding="utf-8")
    with pytest.raises(RulesetError, match="schema"):
        load_ruleset(root)
    # a FIFO in the entry's place is not waited on
    entry.unlink()
    import os

    os.mkfifo(entry)
    assert [r.spec for r in load_ruleset(root).rules] == expected


def test_a_lone_surrogate_in_a_rule_is_cached_as_read(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("MLEAUDIT_CACHE_DIR", str(tmp_path / "cache"))
    root = _rules(tmp_path, RULE.replace("title: Test rule for the cache", 'title: "Test rule \\ud800 x"'))
    fresh = load_ruleset(root)
    assert "\ud800" in fresh.rules[0].spec.title
    assert [r.spec for r in load_ruleset(root).rules] == [r.spec for r in fresh.rules]


def test_a_cache_dir_of_no_user_turns_the_cache_off(monkeypatch) -> None:
    monkeypatch.setenv("MLEAUDIT_CACHE_DIR", "~no-such-user-of-this-machine/cache")
    assert rule_cache_root() is None


def test_a_ruleset_is_compiled_once_per_process_for_the_same_files(tmp_path, monkeypatch):
    from mleaudit.audit.rules import loader

    monkeypatch.setattr(loader, "_MAX_COMPILED", 8)
    root = _rules(tmp_path)
    compiled: list[object] = []
    real = loader.compile_matcher
    monkeypatch.setattr(loader, "compile_matcher", lambda *a, **k: compiled.append(1) or real(*a, **k))
    first = load_ruleset(root)
    assert load_ruleset(root) is first and len(compiled) == 1
    rule = next(root.rglob("*.yaml"))
    rule.write_text(rule.read_text(encoding="utf-8").replace("Test rule", "Test rule, edited"), encoding="utf-8")
    edited = load_ruleset(root)
    assert edited is not first and len(compiled) == 2 and edited.digest != first.digest
    (rule.parent / "extra.yaml").write_text("id: extra\n", encoding="utf-8")
    with pytest.raises(RulesetError):  # an added file is read, and a broken one still refused
        load_ruleset(root)
    (rule.parent / "extra.yaml").unlink()
    assert load_ruleset(root) is edited


def test_a_renamed_link_to_a_rule_file_is_compiled_again(tmp_path, monkeypatch):
    from mleaudit.audit.rules import loader

    monkeypatch.setattr(loader, "_MAX_COMPILED", 8)
    root = _rules(tmp_path)
    store = tmp_path / "store"
    store.mkdir()
    rule = root / "llm-api" / "llm-test-cached-call.yaml"
    rule.rename(store / rule.name)
    rule.symlink_to(store / rule.name)
    first = load_ruleset(root)
    assert [r.id for r in first.rules] == ["llm-test-cached-call"]
    rule.rename(rule.with_name("renamed.yaml"))  # the same target under another name
    with pytest.raises(RulesetError, match="differs from the file stem"):
        load_ruleset(root)
