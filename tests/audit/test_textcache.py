"""The parse and fold caches are bounded by the size of the texts they hold, not by a count that a
run of many units exceeds (rule after rule over every unit re-parsed each one)."""

from __future__ import annotations

from mleaudit.audit import parsing
from mleaudit.audit.textcache import TextCache


def test_entries_go_least_recently_used_first_by_size() -> None:
    cache = TextCache(max_chars=10, max_entries=100)
    calls = []

    def compute(value):
        calls.append(value)
        return value

    assert cache.get_or_compute("a", 4, lambda: compute("A")) == "A"
    assert cache.get_or_compute("b", 4, lambda: compute("B")) == "B"
    assert cache.get_or_compute("a", 4, lambda: compute("A2")) == "A"  # a hit, a used last
    cache.get_or_compute("c", 4, lambda: compute("C"))  # 12 > 10: b goes
    assert cache.get_or_compute("b", 4, lambda: compute("B2")) == "B2"
    assert calls == ["A", "B", "C", "B2"]
    assert cache.get_or_compute("huge", 11, lambda: "H") == "H" and "huge" not in cache._entries


def test_a_run_of_more_units_than_the_old_count_is_parsed_once_per_unit(monkeypatch) -> None:
    parsing.clear_parse_cache()
    parses = []
    real = parsing._parse_uncached
    monkeypatch.setattr(parsing, "_parse_uncached", lambda text, language: parses.append(text) or real(text, language))
    texts = [f"value_{i} = {i}\n" for i in range(2000)]
    for _ in range(3):  # three rules, each over every unit
        for text in texts:
            parsing.parse(text, "python")
    assert len(parses) == 2000
