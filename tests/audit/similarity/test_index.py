"""Fingerprint index: roles, boilerplate, document-frequency filtering."""

from __future__ import annotations

from audit.similarity.index import FingerprintIndex, Role
from audit.similarity.tokenize import tokenize_text

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
