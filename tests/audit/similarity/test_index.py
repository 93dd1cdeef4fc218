"""Fingerprint index: roles, boilerplate, document-frequency filtering."""

from __future__ import annotations

import pytest

from mleaudit.audit.similarity.fingerprint_index import FingerprintIndex, Role
from mleaudit.audit.similarity.tokenize import tokenize_chars, tokenize_text
from mleaudit.audit.similarity.winnow import fingerprint_tokens

SHARED = "result = [value * 2 for value in range(10) if value % 3]\n"
ONLY_A = "with open('a.txt') as handle:\n    lines = handle.read().splitlines()\n"
ONLY_B = "class Point:\n    def __init__(self, x):\n        self.x = x\n"
ONLY_C = "while True:\n    try:\n        step()\n    except StopIteration:\n        break\n"


def tok(text: str, path: str):
    return tokenize_text(text, "python", path)


def test_boilerplate_hashes_are_ignored() -> None:
    index = FingerprintIndex(kgram_length=5, kgrams_in_window=3)
    boiler = index.add_boilerplate(tok(SHARED, "starter.py"))
    ref = index.add_reference(tok(SHARED + ONLY_A, "k.py"))
    assert boiler.hashes <= index.ignored_hashes
    assert ref.hashes - index.ignored_hashes  # the kernel's own code still counts
    assert index.files(Role.BOILERPLATE) == [boiler]


def test_max_doc_fraction_counts_references_only() -> None:
    index = FingerprintIndex(kgram_length=9, kgrams_in_window=3, max_doc_fraction=0.5)
    a = index.add_reference(tok(SHARED + ONLY_A, "a.py"))
    b = index.add_reference(tok(SHARED + ONLY_B, "b.py"))
    c = index.add_reference(tok(ONLY_C, "c.py"))
    ignored = index.ignored_hashes
    for entry in (a, b, c):
        for value in entry.hashes:
            # ignored exactly when in more than 0.5 * 3 references
            assert (value in ignored) == (index.document_frequency(value) >= 2)
    assert a.hashes & b.hashes and a.hashes & b.hashes <= ignored
    assert a.hashes - ignored and c.hashes - ignored
    # agents never change the ignored set
    index.add_agent(tok(ONLY_C, "agent.py"))
    index.add_agent(tok(ONLY_C, "agent2.py"))
    assert index.ignored_hashes == ignored


def test_without_fraction_nothing_is_ignored() -> None:
    index = FingerprintIndex(kgram_length=5, kgrams_in_window=3)
    index.add_reference(tok(SHARED, "a.py"))
    index.add_reference(tok(SHARED, "b.py"))
    assert index.ignored_hashes == frozenset()
    index.add_ignored_hashes([123])
    assert index.ignored_hashes == frozenset({123})


def test_indexed_file_occurrences_match_fingerprints() -> None:
    index = FingerprintIndex(kgram_length=5, kgrams_in_window=3)
    entry = index.add_agent(tok(SHARED + SHARED, "twice.py"))
    assert [f.index for f in entry.fingerprints] == list(range(len(entry.fingerprints)))
    for value, positions in entry.occurrences.items():
        assert all(entry.fingerprints[p].hash == value for p in positions)
    assert sum(len(p) for p in entry.occurrences.values()) == len(entry.fingerprints)
    assert entry.path == "twice.py" and entry.role is Role.AGENT


def test_occurrences_in_first_occurrence_order_with_ascending_positions() -> None:
    index = FingerprintIndex(kgram_length=5, kgrams_in_window=3)
    entry = index.add_reference(tok(SHARED + ONLY_A + SHARED + ONLY_B + SHARED, "three.py"))
    expected: dict[int, list[int]] = {}
    for fingerprint in entry.fingerprints:
        expected.setdefault(fingerprint.hash, []).append(fingerprint.index)
    assert list(entry.occurrences) == list(expected)  # same keys, same order
    assert {h: list(p) for h, p in entry.occurrences.items()} == expected
    assert any(len(p) >= 3 for p in entry.occurrences.values())
    assert all(type(p) is tuple for p in entry.occurrences.values())


def test_fingerprints_equal_fingerprint_tokens_with_and_without_recorded_hashes() -> None:
    text = SHARED + ONLY_C + SHARED
    index = FingerprintIndex(kgram_length=7, kgrams_in_window=4)
    tokenized = tok(text, "a.py")
    assert tokenized._hashes is not None
    from_code = index.add_agent(tokenized)
    chars = tokenize_chars(text, "a.txt")  # a tokenizer that records no hashes
    from_chars = index.add_agent(chars)
    assert list(from_code.fingerprints) == fingerprint_tokens(tokenized.tokens, 7, 4)
    assert list(from_chars.fingerprints) == fingerprint_tokens(chars.tokens, 7, 4)


def test_document_frequency_counts_reference_files() -> None:
    index = FingerprintIndex(kgram_length=5, kgrams_in_window=3)
    a = index.add_reference(tok(SHARED + ONLY_A, "a.py"))
    index.add_reference(tok(SHARED + ONLY_B, "b.py"))
    index.add_agent(tok(SHARED, "agent.py"))
    common = next(iter(tok_hashes(SHARED) & a.hashes))
    assert index.document_frequency(common) == 2
    assert index.document_frequency(-1) == 0


def tok_hashes(text: str) -> frozenset[int]:
    return FingerprintIndex(kgram_length=5, kgrams_in_window=3).add_agent(tok(text, "x.py")).hashes


def test_invalid_kgram_settings_raise_when_files_are_added() -> None:
    with pytest.raises(ValueError, match="k-gram length must be >= 1"):
        FingerprintIndex(kgram_length=0).add_agent(tok(SHARED, "a.py"))
    with pytest.raises(ValueError, match="window must be >= 1"):
        FingerprintIndex(kgrams_in_window=0).add_agent(tok(SHARED, "a.py"))
